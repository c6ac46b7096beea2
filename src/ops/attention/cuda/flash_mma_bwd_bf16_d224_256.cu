// Tensor-core flash-attention backward kernels: bf16, padded head dims 224 and 256.
#include "ops/attention/cuda/flash_mma_bwd_kernels.cuh"

BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__nv_bfloat16, 224)
BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__nv_bfloat16, 256)
