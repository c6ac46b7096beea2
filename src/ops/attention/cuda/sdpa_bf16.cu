// Materialized attention kernels instantiated for __nv_bfloat16 (see sdpa_kernels.cuh).
#include "ops/attention/cuda/sdpa_kernels.cuh"

namespace baracuda::cuda_sdpa::detail_k {
Status forward_bf16(const SdpaFwdParams& p, cudaStream_t s) { return run_forward<__nv_bfloat16>(p, s); }
Status backward_bf16(const SdpaBwdParams& p, cudaStream_t s) { return run_backward<__nv_bfloat16>(p, s); }
}  // namespace baracuda::cuda_sdpa::detail_k
