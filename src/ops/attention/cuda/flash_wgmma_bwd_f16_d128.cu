// Hopper (wgmma + TMA) flash-attention backward: f16, head dim 128.
#include "ops/attention/cuda/flash_wgmma_bwd.cuh"

BARACUDA_FLASH_WGMMA_BWD_INSTANTIATE(__half, 128)
