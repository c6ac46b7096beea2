// Tensor-core flash-attention forward: f16, padded head dim 64 (tile configurations
// as listed in flash_mma_fwd.cu).
#include "ops/attention/cuda/flash_mma_fwd.cuh"

BARACUDA_FLASH_MMA_FWD_INSTANTIATE(__half, 64, 128, 128, 4, 1)
BARACUDA_FLASH_MMA_FWD_INSTANTIATE(__half, 64, 128, 64, 4, 1)
BARACUDA_FLASH_MMA_SPLIT_INSTANTIATE(__half, 64)
