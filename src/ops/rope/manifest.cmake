# RoPE kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. One kernel template
# (cuda/rope_kernels.cuh, launch_typed<T>), one generated TU per dtype;
# cuda/rope_launch.cu dispatches over the generated list.
baracuda_kernel_set(rope
  INCLUDE ops/rope/cuda/rope_kernels.cuh
  NAMESPACE baracuda::rope::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_typed<@CTYPE@>(const Launch&);")
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(rope rope_${dt} ${dt})
endforeach()
