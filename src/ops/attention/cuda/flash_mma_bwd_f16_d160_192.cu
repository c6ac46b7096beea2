// Tensor-core flash-attention backward kernels: f16, padded head dims 160 and 192.
#include "ops/attention/cuda/flash_mma_bwd_kernels.cuh"

BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__half, 160)
BARACUDA_FLASH_MMA_BWD_INSTANTIATE(__half, 192)
