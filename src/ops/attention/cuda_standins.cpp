// Stand-ins for the CUDA entry points of flash_launch.hpp and sdpa_launch.hpp that
// the plans call, built instead of the kernels when CUDA is on but
// BARACUDA_FAMILIES leaves attention out: the plans then refuse CUDA streams at
// select() (family_not_built), and these keep them linking (and refuse too,
// should anything reach them).
#include "core/families.hpp"
#include "ops/attention/flash_launch.hpp"
#include "ops/attention/sdpa_launch.hpp"

namespace baracuda {
namespace attention::cuda {

namespace {
Status refuse(const char* plan) { return baracuda::detail::family_not_built(plan, "attention"); }
}  // namespace

Status forward_simt(const FlashFwdParams&, int, int, void*) { return refuse("FlashSdpaPlan"); }
size_t backward_workspace_bytes_simt(const FlashShape&) { return 0; }
Status backward_simt(const FlashBwdParams&, int, int, void*) { return refuse("FlashSdpaBackwardPlan"); }
Status forward_mma(const FlashFwdParams&, int, int, void*) { return refuse("FlashSdpaPlan"); }
const char* forward_mma_variant(const FlashShape&, int, int) { return "not-built"; }
size_t forward_workspace_bytes_mma(const FlashShape&, int, int) { return 0; }
size_t backward_workspace_bytes_mma(const FlashShape&) { return 0; }
Status backward_mma(const FlashBwdParams&, int, int, void*) { return refuse("FlashSdpaBackwardPlan"); }
const char* backward_mma_variant(const FlashShape&, int) { return "not-built"; }
const char* forward_mma_variant_for(const FlashFwdParams&, int, int) { return "not-built"; }
const char* backward_mma_variant_for(const FlashBwdParams&, int) { return "not-built"; }

}  // namespace attention::cuda

namespace attention::cuda::sdpa {
Status forward(const SdpaFwdParams&, int, void*) { return baracuda::detail::family_not_built("SdpaPlan", "attention"); }
Status backward(const SdpaBwdParams&, int, void*) { return baracuda::detail::family_not_built("SdpaBackwardPlan", "attention"); }
}  // namespace attention::cuda::sdpa

}  // namespace baracuda
