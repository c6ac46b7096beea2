// NormPlan / NormBackwardPlan: descriptor validation, backend choice,
// argument checks (with the CUDA kernels' layout rule), the row layout and
// path choice of the actual views (path.cpp), and dispatch to the CPU
// reference or the CUDA kernels.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/norm/launch.hpp"
#include "ops/norm/path.hpp"
#include "ops/norm/reference.hpp"

namespace baracuda {

const char* norm_kind_name(NormKind k) { return k == NormKind::RMSNorm ? "rms_norm" : "layer_norm"; }

namespace norm::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Norm", "norm", BARACUDA_KERNELS_NORM};

using baracuda::detail::invalid;

DType stats_dtype_of(const NormDescriptor& d) { return d.dtype == DType::F64 ? DType::F64 : DType::F32; }

Dims weight_shape_of(const NormDescriptor& d) {
  Dims w;
  w.rank = d.normalized_dims;
  for (int i = 0; i < w.rank; ++i) w[i] = d.shape[d.shape.rank - w.rank + i];
  return w;
}

int64_t rows_of(const NormDescriptor& d) {
  int64_t r = 1;
  for (int i = 0; i < d.shape.rank - d.normalized_dims; ++i) r *= d.shape[i];
  return r;
}

Dims stats_shape_of(const NormDescriptor& d) { return Dims{rows_of(d)}; }

// The forward descriptor's rules; `f` prefixes field names ("" or "forward.").
Status validate(const char* plan, const char* f, const NormDescriptor& d) {
  if (!(d.dtype == DType::F32 || d.dtype == DType::F64 || d.dtype == DType::F16 || d.dtype == DType::BF16))
    return baracuda::detail::unsupported(plan, f, "dtype ", d.dtype, " is not supported (f32, f64, f16, bf16)");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "shape", d.shape));
  const int rank = d.shape.rank;
  if (rank == 0) return invalid(plan, f, "shape [] has rank 0 (a norm needs at least one axis)");
  if (d.normalized_dims < 1 || d.normalized_dims > rank)
    return invalid(plan, f, "normalized_dims ", d.normalized_dims, " is out of range for shape ", d.shape, " (expected [1, ",
                   rank, "])");
  if (shape_numel(weight_shape_of(d)) == 0)
    return invalid(plan, f, "shape ", d.shape, " has an empty normalized block ", weight_shape_of(d),
                   " (mean and variance need at least one element)");
  if (!std::isfinite(d.eps) || d.eps < 0) return invalid(plan, f, "eps ", d.eps, " must be finite and >= 0");
  if (d.has_bias && d.kind == NormKind::RMSNorm)
    return invalid(plan, f, "has_bias is true but rms_norm has no bias (use layer_norm, or add the bias separately)");
  if (d.zero_centered_weight && !d.has_weight)
    return invalid(plan, f, "zero_centered_weight is true but has_weight is false (y = x_hat * (1 + w) needs w)");
  return Status::ok();
}

Status validate_backward(const char* plan, const NormBackwardDescriptor& d) {
  BARACUDA_RETURN_IF_ERROR(validate(plan, "forward.", d.forward));
  if (!d.forward.save_stats)
    return invalid(plan, "forward.save_stats is false: the backward needs the saved mean / rstd");
  if (d.residual_grad && !d.need_dx) return invalid(plan, "residual_grad is true but need_dx is false (dh_in is added to dx)");
  const bool dw = d.need_dweight && d.forward.has_weight, db = d.need_dbias && d.forward.has_bias;
  if (!d.need_dx && !dw && !db)
    return invalid(plan, "nothing to compute: need_dx is false and no dweight / dbias (need_dweight with has_weight, "
                         "need_dbias with has_bias)");
  return Status::ok();
}

bool on_cuda(const PlanBase& plan) { return plan.sku().backend != Backend::CpuReference; }

// The CUDA kernels' layout rule (Unsupported, naming the tensor).
Status cuda_layout(const PlanBase& plan, const NormDescriptor& d, std::initializer_list<std::pair<const char*, TensorRef>> rows,
                   std::initializer_list<std::pair<const char*, TensorRef>> cols) {
  const int k = d.normalized_dims;
  for (const auto& [name, t] : rows)
    if (t.data && !block_contiguous(d.shape, k, t.strides.begin()))
      return baracuda::detail::unsupported(plan.name(), name, " strides ", t.strides, " for shape ", d.shape,
                                           ": the CUDA kernels need the normalized block (the last ", k,
                                           " axes) contiguous");
  const Dims w = weight_shape_of(d);
  for (const auto& [name, t] : cols)
    if (t.data && !block_contiguous(w, k, t.strides.begin()))
      return baracuda::detail::unsupported(plan.name(), name, " strides ", t.strides, " for shape ", w,
                                           ": the CUDA kernels need it contiguous");
  return Status::ok();
}

baracuda::detail::ArgCheck check_forward(const PlanBase& plan, const NormDescriptor& d, const NormArgs& a) {
  baracuda::detail::ArgCheck c(plan);
  const Dims w = weight_shape_of(d), s = stats_shape_of(d);
  const DType st = stats_dtype_of(d);
  const bool rms = d.kind == NormKind::RMSNorm;
  c.input("x", a.x, d.dtype, d.shape)
      .optional_input("residual", a.residual, d.residual, d.dtype, d.shape, "residual tensor is missing (descriptor.residual is true)",
                      "residual is given but descriptor.residual is false")
      .optional_input("weight", a.weight, d.has_weight, d.dtype, w, "weight tensor is missing (descriptor.has_weight is true)",
                      "weight is given but descriptor.has_weight is false")
      .optional_input("bias", a.bias, d.has_bias, d.dtype, w, "bias tensor is missing (descriptor.has_bias is true)",
                      "bias is given but descriptor.has_bias is false")
      .output("y", a.y, d.dtype, d.shape)
      .optional_output("h", a.h, d.residual, d.dtype, d.shape, "h is given but descriptor.residual is false")
      .optional_output("mean", a.mean, d.save_stats && !rms, st, s,
                       rms ? "mean is given but rms_norm has no mean" : "mean is given but descriptor.save_stats is false")
      .optional_output("rstd", a.rstd, d.save_stats, st, s, "rstd is given but descriptor.save_stats is false")
      .allow_in_place("y", "x")
      .allow_in_place("h", "residual")
      .disjoint();
  if (on_cuda(plan))
    c.rule([&] { return cuda_layout(plan, d, {{"x", a.x}, {"residual", a.residual}, {"y", a.y}, {"h", a.h}},
                                    {{"weight", a.weight}, {"bias", a.bias}}); });
  return c;
}

baracuda::detail::ArgCheck check_backward(const PlanBase& plan, const NormBackwardDescriptor& bd, const NormBackwardArgs& a) {
  const NormDescriptor& d = bd.forward;
  baracuda::detail::ArgCheck c(plan);
  const Dims w = weight_shape_of(d), s = stats_shape_of(d);
  const DType st = stats_dtype_of(d);
  const bool rms = d.kind == NormKind::RMSNorm;
  const bool dw = bd.need_dweight && d.has_weight, db = bd.need_dbias && d.has_bias;
  const bool needs_w = d.has_weight && bd.need_dx;
  c.input("dy", a.dy, d.dtype, d.shape)
      .input("x", a.x, d.dtype, d.shape)
      .optional_input("weight", a.weight, needs_w, d.dtype, w, "weight tensor is missing (forward.has_weight is true and dx is computed)",
                      d.has_weight ? "weight is given but need_dx is false (only dx reads it)"
                                   : "weight is given but forward.has_weight is false")
      .optional_input("mean", a.mean, !rms, st, s, "mean tensor is missing (the saved forward mean)",
                      "mean is given but rms_norm has no mean")
      .input("rstd", a.rstd, st, s, "the saved forward rstd")
      .optional_input("dh_in", a.dh_in, bd.residual_grad, d.dtype, d.shape, "dh_in tensor is missing (residual_grad is true)",
                      "dh_in is given but residual_grad is false")
      .optional_output("dx", a.dx, bd.need_dx, d.dtype, d.shape, "dx is given but need_dx is false")
      .optional_output("dweight", a.dweight, dw, d.dtype, w,
                       d.has_weight ? "dweight is given but need_dweight is false" : "dweight is given but forward.has_weight is false")
      .optional_output("dbias", a.dbias, db, d.dtype, w,
                       d.has_bias ? "dbias is given but need_dbias is false" : "dbias is given but forward.has_bias is false")
      .allow_in_place("dx", "dy")
      .allow_in_place("dx", "dh_in")
      .disjoint();
  if (on_cuda(plan))
    c.rule([&] { return cuda_layout(plan, d, {{"dy", a.dy}, {"x", a.x}, {"dh_in", a.dh_in}, {"dx", a.dx}},
                                    {{"weight", a.weight}, {"dweight", a.dweight}, {"dbias", a.dbias}}); });
  return c;
}

// ---- launches ----------------------------------------------------------------------------
// Strides over the leading axes of a row tensor (null when absent).
const int64_t* lead_of(const TensorRef& t) { return t.data ? t.strides.begin() : nullptr; }

// The launch of these views; without views (select()), of contiguous aligned ones.
cuda::Launch make_launch(const PlanBase& plan, const NormDescriptor& d, bool backward, const void* const* ptrs,
                         const int64_t* const* row_strides, const int64_t* stat_strides) {
  cuda::Launch l;
  l.backward = backward;
  l.rms = d.kind == NormKind::RMSNorm;
  l.eps = d.eps;
  l.zero_centered = d.zero_centered_weight;
  l.dtype = d.dtype;
  l.sm_count = baracuda::detail::PlanAccess::sm_count(plan);
  l.arch = plan.sku().arch;
  int64_t stats_lead[2][kMaxRank] = {};
  const int64_t* lead[cuda::kOperands] = {};
  for (int o = 0; o < cuda::kRowTensors; ++o) lead[o] = row_strides[o];
  for (int i = 0; i < 2; ++i)
    if (stat_strides[i] >= 0) {
      stats_lead_strides(d.shape, d.normalized_dims, stat_strides[i], stats_lead[i]);
      lead[cuda::kMean + i] = stats_lead[i];
    }
  l.rows = make_rows(d.shape, d.normalized_dims, lead);
  for (int o = 0; o < cuda::kOperands; ++o) l.op[o] = const_cast<void*>(ptrs[o]);
  return l;
}

struct Views {
  const void* ptrs[cuda::kOperands] = {};
  const int64_t* rows[cuda::kRowTensors] = {};
  int64_t stats[2] = {-1, -1};  // strides of mean / rstd (-1: absent)
};

// select()'s choice: contiguous views with aligned data (`used` operands only).
Views contiguous_views(const NormDescriptor& d, const bool (&used)[cuda::kOperands], const Dims& strides) {
  static const char aligned[16] alignas(16) = {};
  Views v;
  for (int o = 0; o < cuda::kOperands; ++o) v.ptrs[o] = used[o] ? aligned : nullptr;
  for (int o = 0; o < cuda::kRowTensors; ++o) v.rows[o] = used[o] ? strides.begin() : nullptr;
  for (int i = 0; i < 2; ++i) v.stats[i] = used[cuda::kMean + i] ? 1 : -1;
  (void)d;
  return v;
}

Views forward_views(const NormArgs& a) {
  Views v;
  const TensorRef t[cuda::kRowTensors] = {a.y, a.h, a.x, a.residual};
  for (int o = 0; o < cuda::kRowTensors; ++o) {
    v.ptrs[o] = t[o].data;
    v.rows[o] = lead_of(t[o]);
  }
  v.ptrs[cuda::kMean] = a.mean.data;
  v.ptrs[cuda::kRstd] = a.rstd.data;
  v.stats[0] = a.mean.data ? a.mean.strides[0] : -1;
  v.stats[1] = a.rstd.data ? a.rstd.strides[0] : -1;
  return v;
}

Views backward_views(const NormBackwardArgs& a) {
  Views v;
  const TensorRef t[cuda::kRowTensors] = {a.dx, a.dy, a.x, a.dh_in};
  for (int o = 0; o < cuda::kRowTensors; ++o) {
    v.ptrs[o] = t[o].data;
    v.rows[o] = lead_of(t[o]);
  }
  v.ptrs[cuda::kMean] = a.mean.data;
  v.ptrs[cuda::kRstd] = a.rstd.data;
  v.stats[0] = a.mean.data ? a.mean.strides[0] : -1;
  v.stats[1] = a.rstd.data ? a.rstd.strides[0] : -1;
  return v;
}

cuda::Launch forward_launch(const PlanBase& plan, const NormDescriptor& d, const NormArgs* a) {
  const bool rms = d.kind == NormKind::RMSNorm;
  const bool used[cuda::kOperands] = {true, d.residual, true, d.residual, d.save_stats && !rms, d.save_stats};
  const Dims contiguous = contiguous_strides(d.shape);
  const Views v = a ? forward_views(*a) : contiguous_views(d, used, contiguous);
  cuda::Launch l = make_launch(plan, d, false, v.ptrs, v.rows, v.stats);
  static const char aligned[16] alignas(16) = {};
  l.weight = a ? a->weight.data : (d.has_weight ? aligned : nullptr);
  l.bias = a ? a->bias.data : (d.has_bias ? aligned : nullptr);
  choose_path(l);
  return l;
}

cuda::Launch backward_launch(const PlanBase& plan, const NormBackwardDescriptor& bd, const NormBackwardArgs* a) {
  const NormDescriptor& d = bd.forward;
  const bool rms = d.kind == NormKind::RMSNorm;
  const bool used[cuda::kOperands] = {bd.need_dx, true, true, bd.residual_grad, !rms, true};
  const Dims contiguous = contiguous_strides(d.shape);
  const Views v = a ? backward_views(*a) : contiguous_views(d, used, contiguous);
  cuda::Launch l = make_launch(plan, d, true, v.ptrs, v.rows, v.stats);
  static const char aligned[16] alignas(16) = {};
  l.need_dx = bd.need_dx;
  l.need_dweight = bd.need_dweight && d.has_weight;
  l.need_dbias = bd.need_dbias && d.has_bias;
  l.weight = a ? a->weight.data : (d.has_weight && bd.need_dx ? aligned : nullptr);
  if (a) {
    l.dweight = a->dweight.data;
    l.dbias = a->dbias.data;
  }
  choose_path(l);
  return l;
}

Status launch_cuda(const PlanBase& plan, cuda::Launch l, const Stream& stream, Workspace ws) {
#ifdef BARACUDA_WITH_CUDA
  // The actual views' launch may never need more than select() reported
  // (workspace_size() comes from contiguous, aligned views); a guard, so a
  // drift between the two rules is an error, never a write out of bounds.
  if (workspace_of(l) > ws.bytes)
    return Status(StatusCode::WorkspaceTooSmall, std::string(plan.name()) + ": the views need " +
                                            std::to_string(workspace_of(l)) + " workspace bytes, more than the " +
                                            std::to_string(ws.bytes) + " given");
  // The column partials need 16-byte slots: align any workspace pointer up (workspace_of() has the pad).
  l.workspace = ws.ptr ? reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.ptr) + 15) / 16 * 16) : nullptr;
  l.stream = stream.native_handle();
  return l.backward ? cuda::launch_backward(l) : cuda::launch_forward(l);
#else
  (void)l, (void)stream, (void)ws;
  return baracuda::detail::no_cuda(plan.name());
#endif
}

// The select epilogue of both plans: variant and workspace of contiguous views.
// Zero rows launch nothing, except a backward's dweight / dbias (then zeros).
void finish_setup(PlanBase& plan, const NormDescriptor& d, Backend backend, const cuda::Launch& l) {
  if (rows_of(d) == 0 && !(l.backward && (l.need_dweight || l.need_dbias))) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";  // run() launches nothing
  } else if (backend != Backend::CpuReference) {
    baracuda::detail::PlanAccess::sku(plan).variant = variant_of(l);
    baracuda::detail::PlanAccess::set_workspace(plan, workspace_of(l));
  }
}

}  // namespace
}  // namespace norm::detail

using namespace norm::detail;

// ---- NormPlan ----------------------------------------------------------------------------
Result<NormPlan> NormPlan::select(const Stream& stream, const NormDescriptor& desc, const PlanPreference& pref) {
  NormPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate("NormPlan", "", desc));
  plan.desc_ = desc;
  const bool rms = desc.kind == NormKind::RMSNorm;
  auto be = baracuda::detail::setup_plan(plan, "NormPlan", kFamily, stream, pref, desc.dtype,
                                         rms ? "rms_norm.forward" : "layer_norm.forward");
  if (!be) return be.status();
  finish_setup(plan, desc, be->backend, forward_launch(plan, desc, nullptr));
  return plan;
}

Dims NormPlan::weight_shape() const { return weight_shape_of(desc_); }
Dims NormPlan::stats_shape() const { return stats_shape_of(desc_); }
DType NormPlan::stats_dtype() const { return stats_dtype_of(desc_); }

Status NormPlan::can_implement(const NormArgs& a) const { return check_forward(*this, desc_, a).status(); }

Result<KernelSku> NormPlan::sku_for(const Stream& stream, Workspace ws, const NormArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_forward(*this, desc_, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    if (s.backend != Backend::CpuReference) s.variant = variant_of(forward_launch(*this, desc_, &a));
    return s;
  });
}

Status NormPlan::run(const Stream& stream, Workspace ws, const NormArgs& a) const {
  return baracuda::detail::run_plan(*this, stream, ws, check_forward(*this, desc_, a), [&] { return norm::ref::forward(desc_, a); },
                                    [&] { return launch_cuda(*this, forward_launch(*this, desc_, &a), stream, ws); });
}

// ---- NormBackwardPlan --------------------------------------------------------------------
Result<NormBackwardPlan> NormBackwardPlan::select(const Stream& stream, const NormBackwardDescriptor& desc,
                                                  const PlanPreference& pref) {
  NormBackwardPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate_backward("NormBackwardPlan", desc));
  plan.desc_ = desc;
  const bool rms = desc.forward.kind == NormKind::RMSNorm;
  auto be = baracuda::detail::setup_plan(plan, "NormBackwardPlan", kFamily, stream, pref, desc.forward.dtype,
                                         rms ? "rms_norm.backward" : "layer_norm.backward");
  if (!be) return be.status();
  const norm::cuda::Launch l = backward_launch(plan, desc, nullptr);
  if (be->backend != Backend::CpuReference && l.chunks > 0)
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size("NormBackwardPlan", "column-partial workspace",
                                                          {l.chunks, l.rows.len, 2, 8}));
  finish_setup(plan, desc.forward, be->backend, l);
  return plan;
}

Dims NormBackwardPlan::weight_shape() const { return weight_shape_of(desc_.forward); }
Dims NormBackwardPlan::stats_shape() const { return stats_shape_of(desc_.forward); }
DType NormBackwardPlan::stats_dtype() const { return stats_dtype_of(desc_.forward); }

Status NormBackwardPlan::can_implement(const NormBackwardArgs& a) const { return check_backward(*this, desc_, a).status(); }

Result<KernelSku> NormBackwardPlan::sku_for(const Stream& stream, Workspace ws, const NormBackwardArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_backward(*this, desc_, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    if (s.backend != Backend::CpuReference) s.variant = variant_of(backward_launch(*this, desc_, &a));
    return s;
  });
}

Status NormBackwardPlan::run(const Stream& stream, Workspace ws, const NormBackwardArgs& a) const {
  return baracuda::detail::run_plan(*this, stream, ws, check_backward(*this, desc_, a), [&] { return norm::ref::backward(desc_, a); },
                                    [&] { return launch_cuda(*this, backward_launch(*this, desc_, &a), stream, ws); });
}

}  // namespace baracuda
