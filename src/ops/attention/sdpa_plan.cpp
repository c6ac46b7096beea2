// SdpaPlan / SdpaBackwardPlan (materialized attention): validation, argument
// checks, backend choice and dispatch to the CPU reference or the CUDA kernels.
#include <algorithm>
#include <cmath>

#include "core/plan_shell.hpp"
#include "ops/attention/common.hpp"
#include "ops/attention/reference.hpp"
#ifdef BARACUDA_WITH_CUDA
#include "ops/attention/sdpa_launch.hpp"
#endif

namespace baracuda {

using namespace attention::detail;

namespace {

constexpr const char* kFwd = "SdpaPlan";
constexpr const char* kBwd = "SdpaBackwardPlan";

Status validate(const char* plan, const SdpaDescriptor& d, SdpaDescriptor* out) {
  const std::string p = std::string(plan) + ": ";
  auto bad = [&](const std::string& m) { return Status(StatusCode::InvalidProblem, p + m); };
  BARACUDA_RETURN_IF_ERROR(validate_problem(plan, d.dtype, d.batch, d.heads, d.kv_heads, d.q_len, d.kv_len, d.scale));
  if (d.head_dim_v < -1)
    return bad("head_dim_v " + std::to_string(d.head_dim_v) + " must be -1 (= head_dim) or >= 1");
  const int64_t dv = d.head_dim_v < 0 ? d.head_dim : d.head_dim_v;
  if (d.head_dim < 1 || dv < 1)
    return bad("head_dim (" + std::to_string(d.head_dim) + ") and head_dim_v (" + std::to_string(dv) + ") must be >= 1");
  if (d.batch > INT32_MAX || d.heads > INT32_MAX)
    return Status(StatusCode::Unsupported, p + "batch and heads must fit in int32");
  if (static_cast<int>(d.align) > static_cast<int>(DiagonalAlign::BottomRight))
    return bad("unknown DiagonalAlign " + std::to_string(static_cast<int>(d.align)));
  for (const auto& [what, shape] : {std::pair<const char*, Dims>{"q shape", {d.batch, d.heads, d.q_len, d.head_dim}},
                                   {"k shape", {d.batch, d.kv_heads, d.kv_len, d.head_dim}},
                                   {"v shape", {d.batch, d.kv_heads, d.kv_len, dv}},
                                   {"y shape", {d.batch, d.heads, d.q_len, dv}}})
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, what, shape));
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
void fill_common(const SdpaDescriptor& d, attention::cuda::sdpa::SdpaFwdParams& p, const TensorRef& q, const TensorRef& k,
                 const TensorRef& v) {
  p.dtype = d.dtype;
  p.q = baracuda::detail::view_of<4>(q);
  p.k = baracuda::detail::view_of<4>(k);
  p.v = baracuda::detail::view_of<4>(v);
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
Dims SdpaPlan::q_shape() const { return shapes_of(desc_).q; }
Dims SdpaPlan::k_shape() const { return shapes_of(desc_).k; }
Dims SdpaPlan::v_shape() const { return shapes_of(desc_).v; }
Dims SdpaPlan::y_shape() const { return shapes_of(desc_).y; }
Dims SdpaPlan::probs_shape() const { return shapes_of(desc_).scores; }
Dims SdpaPlan::mask_shape() const { return shapes_of(desc_).scores; }
Dims SdpaBackwardPlan::q_shape() const { return shapes_of(desc_).q; }
Dims SdpaBackwardPlan::k_shape() const { return shapes_of(desc_).k; }
Dims SdpaBackwardPlan::v_shape() const { return shapes_of(desc_).v; }
Dims SdpaBackwardPlan::y_shape() const { return shapes_of(desc_).y; }
Dims SdpaBackwardPlan::probs_shape() const { return shapes_of(desc_).scores; }

Result<SdpaPlan> SdpaPlan::select(const Stream& stream, const SdpaDescriptor& desc, const PlanPreference& pref) {
  SdpaPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate(kFwd, desc, &plan.desc_));
  auto be = baracuda::detail::setup_plan(plan, kFwd, kFamily, stream, pref, desc.dtype, "sdpa.forward");
  if (!be) return be.status();
  if (be->backend == Backend::Bespoke) plan.sku_.variant = "materialized-tiled";
  return plan;
}

namespace {
baracuda::detail::ArgCheck check_args(const SdpaPlan& p, const SdpaArgs& a) {
  const SdpaDescriptor& d = p.descriptor();
  const Shapes s = shapes_of(d);
  baracuda::detail::ArgCheck c(p);
  c.input("q", a.q, d.dtype, s.q)
      .input("k", a.k, d.dtype, s.k)
      .input("v", a.v, d.dtype, s.v)
      .optional_input("mask", a.mask, d.has_mask, DType::F32, s.scores, "mask tensor is missing (descriptor.has_mask is set)",
                      "mask is given but descriptor.has_mask is false")
      .output("y", a.y, d.dtype, s.y)
      .output("probs", a.probs, p.probs_dtype(), s.scores);
  return std::move(c.disjoint());
}
}  // namespace

Status SdpaPlan::can_implement(const SdpaArgs& a) const { return check_args(*this, a).status(); }

Result<KernelSku> SdpaPlan::sku_for(const Stream& stream, Workspace ws, const SdpaArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, a));
}

Status SdpaPlan::run(const Stream& stream, Workspace ws, const SdpaArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, a), [&] { return attention::ref::sdpa_forward(desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        attention::cuda::sdpa::SdpaFwdParams p;
        fill_common(desc_, p, a.q, a.k, a.v);
        if (desc_.has_mask) p.mask = baracuda::detail::view_of<4>(a.mask).typed<const float>();
        p.y = baracuda::detail::view_of<4>(a.y);
        p.probs = baracuda::detail::view_of<4>(a.probs);
        return attention::cuda::sdpa::forward(p, 0, stream.native_handle());
#else
        return baracuda::detail::no_cuda(kFwd);
#endif
      });
}

// ---------------------------------------------------------------------------
Result<SdpaBackwardPlan> SdpaBackwardPlan::select(const Stream& stream, const SdpaDescriptor& desc, const PlanPreference& pref) {
  SdpaBackwardPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate(kBwd, desc, &plan.desc_));
  const SdpaDescriptor& d = plan.desc_;
  auto be = baracuda::detail::setup_plan(plan, kBwd, kFamily, stream, pref, d.dtype, "sdpa.backward");
  if (!be) return be.status();
  // ds [B,H,Q,K] in the accumulator dtype: the CUDA plan's workspace, which a
  // CPU plan in strict workspace mode needs too (the host knows it exactly).
  if (be->backend == Backend::Bespoke || baracuda::detail::PlanAccess::strict_workspace(plan)) {
    int64_t bytes = 0;
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(
        kBwd, "workspace bytes B*H*Q*K*element", {d.batch, d.heads, d.q_len, d.kv_len,
                                                   static_cast<int64_t>(dtype_size(accumulator_dtype(d.dtype)))}, &bytes));
    plan.workspace_bytes_ = std::max(plan.workspace_bytes_, static_cast<size_t>(bytes));
  }
  if (be->backend == Backend::Bespoke) plan.sku_.variant = "materialized-tiled";
  return plan;
}

namespace {
baracuda::detail::ArgCheck check_args(const SdpaBackwardPlan& p, const SdpaBackwardArgs& a) {
  const SdpaDescriptor& d = p.descriptor();
  const Shapes s = shapes_of(d);
  baracuda::detail::ArgCheck c(p);
  c.input("dy", a.dy, d.dtype, s.y)
      .input("q", a.q, d.dtype, s.q)
      .input("k", a.k, d.dtype, s.k)
      .input("v", a.v, d.dtype, s.v)
      .input("probs", a.probs, p.probs_dtype(), s.scores)
      .output("dq", a.dq, d.dtype, s.q)
      .output("dk", a.dk, d.dtype, s.k)
      .output("dv", a.dv, d.dtype, s.v);
  return std::move(c.disjoint());
}
}  // namespace

Status SdpaBackwardPlan::can_implement(const SdpaBackwardArgs& a) const { return check_args(*this, a).status(); }

Result<KernelSku> SdpaBackwardPlan::sku_for(const Stream& stream, Workspace ws, const SdpaBackwardArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, a));
}

Status SdpaBackwardPlan::run(const Stream& stream, Workspace ws, const SdpaBackwardArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, a), [&] { return attention::ref::sdpa_backward(desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        attention::cuda::sdpa::SdpaBwdParams p;
        fill_common(desc_, p, a.q, a.k, a.v);
        p.probs = baracuda::detail::view_of<4>(a.probs).with_data(const_cast<void*>(a.probs.data));  // read only in the backward
        p.dy = baracuda::detail::view_of<4>(a.dy);
        p.dq = baracuda::detail::view_of<4>(a.dq);
        p.dk = baracuda::detail::view_of<4>(a.dk);
        p.dv = baracuda::detail::view_of<4>(a.dv);
        p.ds = ws.ptr;
        return attention::cuda::sdpa::backward(p, 0, stream.native_handle());
#else
        return baracuda::detail::no_cuda(kBwd);
#endif
      });
}

}  // namespace baracuda
