// PLACEHOLDER (being written): tensor-core flash attention forward for f16/bf16.
#include "ops/attention/flash_cuda.hpp"
namespace baracuda::cuda_flash {
Status forward_mma(const FlashFwdParams&, int, int, void*) { return Status(StatusCode::Unsupported, "FlashSdpaPlan: tensor-core path not built yet"); }
const char* forward_mma_variant(const FlashShape&, int) { return "mma-placeholder"; }
}  // namespace baracuda::cuda_flash
