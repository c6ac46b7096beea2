// Hopper (wgmma + TMA) flash-attention forward: f16, head dim 256.
#include "ops/attention/cuda/flash_wgmma_fwd.cuh"

BARACUDA_FLASH_WGMMA_FWD_INSTANTIATE(__half, 256)
