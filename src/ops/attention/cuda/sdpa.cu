// Materialized attention (CUDA): problem checks and dtype dispatch. The kernels
// and their drivers run_forward<T> / run_backward<T> live in sdpa_kernels.cuh,
// instantiated for the dtypes listed in ../manifest.cmake (one generated TU each).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <string>

#include "ops/attention/manifest.hpp"  // generated from ops/attention/manifest.cmake
#include "ops/attention/sdpa_launch.hpp"

namespace baracuda::attention::cuda::sdpa {

namespace detail_k {
template <class T>
Status run_forward(const SdpaFwdParams& p, cudaStream_t stream);
template <class T>
Status run_backward(const SdpaBwdParams& p, cudaStream_t stream);
}  // namespace detail_k

namespace {

// Shape checks shared by both directions; `empty` is set when nothing is to be done.
Status check_problem(const SdpaFwdParams& p, const char* plan, bool* empty) {
  if (p.batch < 0 || p.heads < 0 || p.kv_heads < 0 || p.q_len < 0 || p.kv_len < 0 || p.head_dim < 0 ||
      p.head_dim_v < 0)
    return Status(StatusCode::InvalidProblem, std::string(plan) + ": negative extent");
  if (p.heads > 0 && (p.kv_heads == 0 || p.heads % p.kv_heads != 0))
    return Status(StatusCode::InvalidProblem, std::string(plan) + ": heads must be a multiple of kv_heads");
  *empty = p.batch == 0 || p.heads == 0 || (p.q_len == 0 && p.kv_len == 0);
  return Status::ok();
}

}  // namespace

Status forward(const SdpaFwdParams& p, int /*sm_count*/, void* stream) {
  bool empty = false;
  if (Status st = check_problem(p, "SdpaPlan", &empty); !st.is_ok()) return st;
  if (empty) return Status::ok();
  const auto s = static_cast<cudaStream_t>(stream);
  switch (p.dtype) {
#define CASE(DT, T) \
  case DType::DT: return detail_k::run_forward<T>(p, s);
    BARACUDA_SDPA_KERNELS(CASE)
#undef CASE
    default: return Status(StatusCode::Unsupported, "SdpaPlan: CUDA path supports f32, f64, f16, bf16");
  }
}

Status backward(const SdpaBwdParams& p, int /*sm_count*/, void* stream) {
  bool empty = false;
  if (Status st = check_problem(p, "SdpaBackwardPlan", &empty); !st.is_ok()) return st;
  if (empty) return Status::ok();
  if (p.q_len > 0 && p.kv_len > 0 && p.ds == nullptr)
    return Status(StatusCode::InvalidProblem, "SdpaBackwardPlan: CUDA backward needs the ds workspace");
  const auto s = static_cast<cudaStream_t>(stream);
  switch (p.dtype) {
#define CASE(DT, T) \
  case DType::DT: return detail_k::run_backward<T>(p, s);
    BARACUDA_SDPA_KERNELS(CASE)
#undef CASE
    default: return Status(StatusCode::Unsupported, "SdpaBackwardPlan: CUDA path supports f32, f64, f16, bf16");
  }
}

}  // namespace baracuda::attention::cuda::sdpa
