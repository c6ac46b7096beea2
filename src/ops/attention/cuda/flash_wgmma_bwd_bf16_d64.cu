// Hopper (wgmma + TMA) flash-attention backward: bf16, head dim 64.
#include "ops/attention/cuda/flash_wgmma_bwd.cuh"

BARACUDA_FLASH_WGMMA_BWD_INSTANTIATE(__nv_bfloat16, 64)
