// SdpaPlan / SdpaBackwardPlan (materialized attention): validation, argument
// checks, backend choice and dispatch to the CPU reference or the CUDA kernels.
#include <cmath>

#include "core/checks.hpp"
#include "core/cuda_device.hpp"
#include "ops/attention/common.hpp"
#include "ops/attention/cpu.hpp"
#ifdef BARACUDA_WITH_CUDA
#include "ops/attention/sdpa_cuda.hpp"
#endif

namespace baracuda {

using namespace attention_detail;

namespace {

constexpr const char* kFwd = "SdpaPlan";
constexpr const char* kBwd = "SdpaBackwardPlan";

Status validate(const char* plan, const SdpaDescriptor& d, SdpaDescriptor* out) {
  const std::string p = std::string(plan) + ": ";
  auto bad = [&](const std::string& m) { return Status(StatusCode::InvalidProblem, p + m); };
  BARACUDA_RETURN_IF_ERROR(validate_problem(plan, d.dtype, d.batch, d.heads, d.kv_heads, d.q_len, d.kv_len, d.scale));
  const int64_t dv = d.head_dim_v < 0 ? d.head_dim : d.head_dim_v;
  if (d.head_dim < 1 || dv < 1)
    return bad("head_dim (" + std::to_string(d.head_dim) + ") and head_dim_v (" + std::to_string(dv) + ") must be >= 1");
  if (d.batch > INT32_MAX || d.heads > INT32_MAX)
    return Status(StatusCode::Unsupported, p + "batch and heads must fit in int32");
  if (static_cast<int>(d.align) > static_cast<int>(DiagonalAlign::BottomRight))
    return bad("unknown DiagonalAlign " + std::to_string(static_cast<int>(d.align)));
  *out = d;
  out->head_dim_v = dv;
  if (!out->scale) out->scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim));
  return Status::ok();
}

struct Shapes {
  Dims q, k, v, y, scores;
};
Shapes shapes_of(const SdpaDescriptor& d) {
  return {{d.batch, d.heads, d.q_len, d.head_dim},
          {d.batch, d.kv_heads, d.kv_len, d.head_dim},
          {d.batch, d.kv_heads, d.kv_len, d.head_dim_v},
          {d.batch, d.heads, d.q_len, d.head_dim_v},
          {d.batch, d.heads, d.q_len, d.kv_len}};
}

#ifdef BARACUDA_WITH_CUDA
void fill_common(const SdpaDescriptor& d, cuda_sdpa::SdpaFwdParams& p, const TensorRef& q, const TensorRef& k,
                 const TensorRef& v) {
  p.dtype = d.dtype;
  p.q = detail::view_of<4>(q);
  p.k = detail::view_of<4>(k);
  p.v = detail::view_of<4>(v);
  p.batch = static_cast<int>(d.batch);
  p.heads = static_cast<int>(d.heads);
  p.kv_heads = static_cast<int>(d.kv_heads);
  p.q_len = d.q_len;
  p.kv_len = d.kv_len;
  p.head_dim = d.head_dim;
  p.head_dim_v = d.head_dim_v;
  p.scale = *d.scale;
  p.causal = d.causal;
  p.bottom_right = d.align == DiagonalAlign::BottomRight;
}
#endif

}  // namespace

DType SdpaPlan::probs_dtype() const { return accumulator_dtype(desc_.dtype); }
DType SdpaBackwardPlan::probs_dtype() const { return accumulator_dtype(desc_.dtype); }

Result<SdpaPlan> SdpaPlan::select(const Stream& stream, const SdpaDescriptor& desc, const PlanPreference& pref) {
  SdpaDescriptor d;
  BARACUDA_RETURN_IF_ERROR(validate(kFwd, desc, &d));
  auto be = choose_backend(kFwd, stream, pref);
  if (!be) return be.status();
  SdpaPlan plan;
  plan.desc_ = d;
  plan.device_ = stream.device();
  plan.sku_ = make_sku(*be, d.dtype, "sdpa.forward", be->backend == Backend::Bespoke ? "materialized-tiled" : "reference");
  return plan;
}

Status SdpaPlan::can_implement(const SdpaArgs& a) const {
  const Shapes s = shapes_of(desc_);
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kFwd, "q", a.q, desc_.dtype, s.q, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kFwd, "k", a.k, desc_.dtype, s.k, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kFwd, "v", a.v, desc_.dtype, s.v, device_));
  if (desc_.has_mask) BARACUDA_RETURN_IF_ERROR(detail::check_view(kFwd, "mask", a.mask, DType::F32, s.scores, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_output(kFwd, "y", a.y, desc_.dtype, s.y, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_output(kFwd, "probs", a.probs, probs_dtype(), s.scores, device_));
  return check_no_overlap(kFwd, {{"y", a.y}, {"probs", a.probs}},
                          {{"q", a.q}, {"k", a.k}, {"v", a.v}, {"mask", desc_.has_mask ? a.mask : TensorRef()}});
}

Status SdpaPlan::run(const Stream& stream, Workspace ws, const SdpaArgs& a) const {
  BARACUDA_RETURN_IF_ERROR(detail::check_stream(kFwd, stream, device_));
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  BARACUDA_RETURN_IF_ERROR(detail::check_workspace(kFwd, workspace_bytes_, ws.bytes, ws.ptr));
  if (a.y.numel() == 0 && a.probs.numel() == 0) return Status::ok();
  if (sku_.backend == Backend::CpuReference) return cpu_attention::sdpa_forward(desc_, a);
#ifdef BARACUDA_WITH_CUDA
  detail::DeviceGuard guard(device_.ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  cuda_sdpa::SdpaFwdParams p;
  fill_common(desc_, p, a.q, a.k, a.v);
  if (desc_.has_mask) {
    p.mask = detail::view_of<4>(a.mask).typed<const float>();
  }
  p.y = detail::view_of<4>(a.y);
  p.probs = detail::view_of<4>(a.probs);
  return cuda_sdpa::forward(p, 0, stream.native_handle());
#else
  return Status(StatusCode::Unsupported, std::string(kFwd) + ": no CUDA support in this build");
#endif
}

// ---------------------------------------------------------------------------
Result<SdpaBackwardPlan> SdpaBackwardPlan::select(const Stream& stream, const SdpaDescriptor& desc, const PlanPreference& pref) {
  SdpaDescriptor d;
  BARACUDA_RETURN_IF_ERROR(validate(kBwd, desc, &d));
  auto be = choose_backend(kBwd, stream, pref);
  if (!be) return be.status();
  SdpaBackwardPlan plan;
  plan.desc_ = d;
  plan.device_ = stream.device();
  if (be->backend == Backend::Bespoke)
    plan.workspace_bytes_ = static_cast<size_t>(d.batch * d.heads * d.q_len * d.kv_len) * dtype_size(accumulator_dtype(d.dtype));
  plan.sku_ = make_sku(*be, d.dtype, "sdpa.backward", be->backend == Backend::Bespoke ? "materialized-tiled" : "reference");
  return plan;
}

Status SdpaBackwardPlan::can_implement(const SdpaBackwardArgs& a) const {
  const Shapes s = shapes_of(desc_);
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kBwd, "dy", a.dy, desc_.dtype, s.y, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kBwd, "q", a.q, desc_.dtype, s.q, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kBwd, "k", a.k, desc_.dtype, s.k, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kBwd, "v", a.v, desc_.dtype, s.v, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kBwd, "probs", a.probs, probs_dtype(), s.scores, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_output(kBwd, "dq", a.dq, desc_.dtype, s.q, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_output(kBwd, "dk", a.dk, desc_.dtype, s.k, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_output(kBwd, "dv", a.dv, desc_.dtype, s.v, device_));
  return check_no_overlap(kBwd, {{"dq", a.dq}, {"dk", a.dk}, {"dv", a.dv}},
                          {{"dy", a.dy}, {"q", a.q}, {"k", a.k}, {"v", a.v}, {"probs", a.probs}});
}

Status SdpaBackwardPlan::run(const Stream& stream, Workspace ws, const SdpaBackwardArgs& a) const {
  BARACUDA_RETURN_IF_ERROR(detail::check_stream(kBwd, stream, device_));
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  BARACUDA_RETURN_IF_ERROR(detail::check_workspace(kBwd, workspace_bytes_, ws.bytes, ws.ptr));
  if (a.dq.numel() == 0 && a.dk.numel() == 0 && a.dv.numel() == 0) return Status::ok();
  if (sku_.backend == Backend::CpuReference) return cpu_attention::sdpa_backward(desc_, a);
#ifdef BARACUDA_WITH_CUDA
  detail::DeviceGuard guard(device_.ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  cuda_sdpa::SdpaBwdParams p;
  fill_common(desc_, p, a.q, a.k, a.v);
  p.probs = detail::view_of<4>(a.probs).with_data(const_cast<void*>(a.probs.data));  // read only in the backward
  p.dy = detail::view_of<4>(a.dy);
  p.dq = detail::view_of<4>(a.dq);
  p.dk = detail::view_of<4>(a.dk);
  p.dv = detail::view_of<4>(a.dv);
  p.ds = ws.ptr;
  return cuda_sdpa::backward(p, 0, stream.native_handle());
#else
  return Status(StatusCode::Unsupported, std::string(kBwd) + ": no CUDA support in this build");
#endif
}

}  // namespace baracuda
