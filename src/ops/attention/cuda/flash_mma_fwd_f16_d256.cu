// Tensor-core flash-attention forward: f16, padded head dim 256 (tile configurations
// as listed in flash_mma_fwd.cu).
#include "ops/attention/cuda/flash_mma_fwd.cuh"

BARACUDA_FLASH_MMA_FWD_INSTANTIATE(__half, 256, 64, 64, 4, 1)
BARACUDA_FLASH_MMA_SPLIT_INSTANTIATE(__half, 256)
