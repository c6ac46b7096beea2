# Cross-entropy kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. Two TUs per logits dtype, to keep
# each nvcc run short: the block path (cuda/block_rows.cuh, three modes x two
# thread counts) and the rest (cuda/split_rows.cuh and the row-sum kernels of
# cuda/row_sums.cuh), gathered by cuda/loss_kernels.cuh; cuda/loss_launch.cu
# dispatches over the generated lists.
baracuda_kernel_set(loss_block
  INCLUDE ops/loss/cuda/loss_kernels.cuh
  NAMESPACE baracuda::loss::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status block_typed<@CTYPE@>(const Launch&);")
baracuda_kernel_set(loss_aux
  INCLUDE ops/loss/cuda/loss_kernels.cuh
  NAMESPACE baracuda::loss::cuda::kern
  COLUMNS DTYPE
  INSTANTIATE "template Status split_typed<@CTYPE@>(const Launch&);"
              "template Status divisor_typed<@CTYPE@>(const Launch&);"
              "template Status reduce_typed<@CTYPE@>(const Launch&);")
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(loss_block loss_block_${dt} ${dt})
  baracuda_kernels(loss_aux loss_aux_${dt} ${dt})
endforeach()
