// Tensor-core flash-attention backward kernels: f16, padded head dims 32 and 64.
#include "ops/attention/cuda/flash_mma_bwd_kernels.cuh"

BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__half, 32)
BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__half, 64)
