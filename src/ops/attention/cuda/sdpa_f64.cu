// Materialized attention kernels instantiated for double (see sdpa_kernels.cuh).
#include "ops/attention/cuda/sdpa_kernels.cuh"

namespace baracuda::cuda_sdpa::detail_k {
Status forward_f64(const SdpaFwdParams& p, cudaStream_t s) { return run_forward<double>(p, s); }
Status backward_f64(const SdpaBwdParams& p, cudaStream_t s) { return run_backward<double>(p, s); }
}  // namespace baracuda::cuda_sdpa::detail_k
