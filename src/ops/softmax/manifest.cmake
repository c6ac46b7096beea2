# Softmax kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. The kernel templates (one per
# algorithm: cuda/warp_rows.cuh, block_rows.cuh, split_rows.cuh,
# generic_rows.cuh) are gathered by cuda/softmax_kernels.cuh, whose
# launch_forward_typed<T> and launch_backward_typed<T> are instantiated in one
# generated TU per dtype and direction (both directions in one TU were over
# the per-TU build-time guideline, docs/ARCHITECTURE.md); cuda/softmax_launch.cu
# dispatches over the generated lists. f64 instantiates fewer kernels (no
# warp path, blocks of 1024 threads only: launch.hpp, has_short_row_kernels).
baracuda_kernel_set(softmax_forward
  INCLUDE ops/softmax/cuda/softmax_kernels.cuh
  NAMESPACE baracuda::softmax::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_forward_typed<@CTYPE@>(const Launch&);")
baracuda_kernel_set(softmax_backward
  INCLUDE ops/softmax/cuda/softmax_kernels.cuh
  NAMESPACE baracuda::softmax::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_backward_typed<@CTYPE@>(const Launch&);")
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(softmax_forward softmax_forward_${dt} ${dt})
  baracuda_kernels(softmax_backward softmax_backward_${dt} ${dt})
endforeach()
