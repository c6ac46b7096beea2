# Norm kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. The kernel templates (one per
# algorithm: cuda/warp_rows.cuh, block_rows.cuh (also the "long" path),
# colsum.cuh) are gathered by cuda/forward_kernels.cuh and
# cuda/backward_kernels.cuh, whose launch_*_typed<T> are instantiated in one
# generated TU per dtype and direction; cuda/norm_launch.cu dispatches over
# the generated lists.
baracuda_kernel_set(norm_forward
  INCLUDE ops/norm/cuda/forward_kernels.cuh
  NAMESPACE baracuda::norm::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_forward_typed<@CTYPE@>(const Launch&);")
baracuda_kernel_set(norm_backward
  INCLUDE ops/norm/cuda/backward_kernels.cuh
  NAMESPACE baracuda::norm::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_backward_typed<@CTYPE@>(const Launch&);")
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(norm_forward norm_forward_${dt} ${dt})
  baracuda_kernels(norm_backward norm_backward_${dt} ${dt})
endforeach()
