// Materialized attention (CUDA): problem checks and dtype dispatch. The kernels
// and their drivers live in sdpa_kernels.cuh, instantiated per dtype in
// sdpa_<dtype>.cu.
#include <cuda_runtime.h>

#include <string>

#include "ops/attention/sdpa_cuda.hpp"

namespace baracuda::cuda_sdpa {

namespace detail_k {
Status forward_f32(const SdpaFwdParams&, cudaStream_t);
Status forward_f64(const SdpaFwdParams&, cudaStream_t);
Status forward_f16(const SdpaFwdParams&, cudaStream_t);
Status forward_bf16(const SdpaFwdParams&, cudaStream_t);
Status backward_f32(const SdpaBwdParams&, cudaStream_t);
Status backward_f64(const SdpaBwdParams&, cudaStream_t);
Status backward_f16(const SdpaBwdParams&, cudaStream_t);
Status backward_bf16(const SdpaBwdParams&, cudaStream_t);
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
    case DType::F32: return detail_k::forward_f32(p, s);
    case DType::F64: return detail_k::forward_f64(p, s);
    case DType::F16: return detail_k::forward_f16(p, s);
    case DType::BF16: return detail_k::forward_bf16(p, s);
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
    case DType::F32: return detail_k::backward_f32(p, s);
    case DType::F64: return detail_k::backward_f64(p, s);
    case DType::F16: return detail_k::backward_f16(p, s);
    case DType::BF16: return detail_k::backward_bf16(p, s);
    default: return Status(StatusCode::Unsupported, "SdpaBackwardPlan: CUDA path supports f32, f64, f16, bf16");
  }
}

}  // namespace baracuda::cuda_sdpa
