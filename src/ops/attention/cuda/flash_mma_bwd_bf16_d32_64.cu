// Tensor-core flash-attention backward kernels: bf16, padded head dims 32 and 64.
#include "ops/attention/cuda/flash_mma_bwd_kernels.cuh"

BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__nv_bfloat16, 32)
BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__nv_bfloat16, 64)
