// PLACEHOLDER (being written): SIMT flash attention for f32/f64.
#include "ops/attention/flash_cuda.hpp"
namespace baracuda::cuda_flash {
Status forward_simt(const FlashFwdParams&, int, int, void*) { return Status(StatusCode::Unsupported, "FlashSdpaPlan: SIMT path not built yet"); }
size_t backward_workspace_bytes_simt(const FlashShape&) { return 0; }
Status backward_simt(const FlashBwdParams&, int, int, void*) { return Status(StatusCode::Unsupported, "FlashSdpaBackwardPlan: SIMT path not built yet"); }
}  // namespace baracuda::cuda_flash
