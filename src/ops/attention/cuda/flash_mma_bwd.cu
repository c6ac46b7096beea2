// PLACEHOLDER (being written): tensor-core flash attention backward for f16/bf16.
#include "ops/attention/flash_cuda.hpp"
namespace baracuda::cuda_flash {
size_t backward_workspace_bytes_mma(const FlashShape&) { return 0; }
Status backward_mma(const FlashBwdParams&, int, int, void*) { return Status(StatusCode::Unsupported, "FlashSdpaBackwardPlan: tensor-core path not built yet"); }
const char* backward_mma_variant(const FlashShape&, int) { return "mma-placeholder"; }
}  // namespace baracuda::cuda_flash
