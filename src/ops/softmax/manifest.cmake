# Softmax kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. The kernel templates (one per
# algorithm: cuda/warp_rows.cuh, block_rows.cuh, split_rows.cuh,
# generic_rows.cuh) are gathered by cuda/softmax_kernels.cuh, whose
# launch_typed<T> is instantiated in one generated TU per dtype;
# cuda/softmax_launch.cu dispatches over the generated list.
baracuda_kernel_set(softmax
  INCLUDE ops/softmax/cuda/softmax_kernels.cuh
  NAMESPACE baracuda::softmax::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_typed<@CTYPE@>(const Launch&);")
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(softmax softmax_${dt} ${dt})
endforeach()
