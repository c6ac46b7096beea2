// Tensor-core flash-attention forward: bf16, padded head dim 64 (tile configurations
// as listed in flash_mma_fwd.cu).
#include "ops/attention/cuda/flash_mma_fwd.cuh"

BARACUDA_FLASH_MMA_FWD_INSTANTIATE(__nv_bfloat16, 64, 128, 128, 4, 1)
BARACUDA_FLASH_MMA_FWD_INSTANTIATE(__nv_bfloat16, 64, 128, 64, 4, 1)
BARACUDA_FLASH_MMA_FWD_INSTANTIATE(__nv_bfloat16, 64, 128, 64, 4, 2)
BARACUDA_FLASH_MMA_FWD_INSTANTIATE(__nv_bfloat16, 64, 128, 128, 4, 2)
BARACUDA_FLASH_MMA_SPLIT_INSTANTIATE(__nv_bfloat16, 64)
