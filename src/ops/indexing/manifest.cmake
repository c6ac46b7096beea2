# Embedding kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. The kernel templates
# (cuda/embedding_forward.cuh: the row copy; cuda/embedding_backward.cuh: the
# sums over the sorted runs) are gathered by cuda/embedding_kernels.cuh, whose
# launch_*_typed<T> (T = the table's dtype) are instantiated in one generated
# TU per dtype; cuda/embedding_launch.cu dispatches over the generated list and
# cuda/embedding_sort.cu holds the dtype-independent index preparation and the
# CUB radix sort / scan.
baracuda_kernel_set(embedding
  INCLUDE ops/indexing/cuda/embedding_kernels.cuh
  NAMESPACE baracuda::indexing::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_forward_typed<@CTYPE@>(const ForwardLaunch&);"
              "template Status launch_backward_typed<@CTYPE@>(const BackwardLaunch&);")
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(embedding embedding_${dt} ${dt})
endforeach()

# IndexSelectPlan / IndexUpdatePlan kernels (cuda/index_dim_kernels.cuh), one
# generated TU per dtype; cuda/index_dim_launch.cu dispatches over the list and
# prepares the update's sorted (slice, position) pairs.
baracuda_kernel_set(index_dim
  INCLUDE ops/indexing/cuda/index_dim_kernels.cuh
  NAMESPACE baracuda::indexing::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_index_select_typed<@CTYPE@>(const SelectLaunch&);"
              "template Status launch_index_update_typed<@CTYPE@>(const UpdateLaunch&);")
foreach(dt F32 F64 F16 BF16 I32 I64)
  baracuda_kernels(index_dim index_dim_${dt} ${dt})
endforeach()
