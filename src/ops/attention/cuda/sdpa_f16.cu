// Materialized attention kernels instantiated for __half (see sdpa_kernels.cuh).
#include "ops/attention/cuda/sdpa_kernels.cuh"

namespace baracuda::cuda_sdpa::detail_k {
Status forward_f16(const SdpaFwdParams& p, cudaStream_t s) { return run_forward<__half>(p, s); }
Status backward_f16(const SdpaBwdParams& p, cudaStream_t s) { return run_backward<__half>(p, s); }
}  // namespace baracuda::cuda_sdpa::detail_k
