// PLACEHOLDER (being written): materialized attention kernels.
#include "ops/attention/sdpa_cuda.hpp"
namespace baracuda::cuda_sdpa {
Status forward(const SdpaFwdParams&, int, void*) { return Status(StatusCode::Unsupported, "SdpaPlan: CUDA path not built yet"); }
Status backward(const SdpaBwdParams&, int, void*) { return Status(StatusCode::Unsupported, "SdpaBackwardPlan: CUDA path not built yet"); }
}  // namespace baracuda::cuda_sdpa
