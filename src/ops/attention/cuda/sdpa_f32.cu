// Materialized attention kernels instantiated for float (see sdpa_kernels.cuh).
#include "ops/attention/cuda/sdpa_kernels.cuh"

namespace baracuda::cuda_sdpa::detail_k {
Status forward_f32(const SdpaFwdParams& p, cudaStream_t s) { return run_forward<float>(p, s); }
Status backward_f32(const SdpaBwdParams& p, cudaStream_t s) { return run_backward<float>(p, s); }
}  // namespace baracuda::cuda_sdpa::detail_k
