// Tensor-core flash-attention backward kernels: f16, padded head dims 96 and 128.
#include "ops/attention/cuda/flash_mma_bwd_kernels.cuh"

BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__half, 96)
BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__half, 128)
