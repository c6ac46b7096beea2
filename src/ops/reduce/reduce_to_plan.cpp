// ReduceToPlan = a keepdim Sum over the axes where the target is 1 (or
// missing), run through ReducePlan with the target viewed in the input's rank.
#include "core/plan_shell.hpp"
#include "ops/reduce/common.hpp"

namespace baracuda {

static constexpr const char* kPlan = "ReduceToPlan";

Result<ReduceToPlan> ReduceToPlan::select(const Stream& stream, const ReduceToDescriptor& d, const PlanPreference& pref) {
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPlan, "input shape", d.shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPlan, "target shape", d.target));
  if (!reduce::detail::is_gradient_dtype(d.dtype)) return baracuda::detail::unsupported(kPlan, "dtype ", d.dtype, " not supported (f32, f64, f16, bf16)");
  if (d.target.rank > d.shape.rank)
    return baracuda::detail::invalid(kPlan, "target ", d.target, " has more axes than the input ", d.shape);
  const int lead = d.shape.rank - d.target.rank;
  ReduceDescriptor rd;
  rd.kind = ReduceKind::Sum;
  rd.dtype = d.dtype;
  rd.shape = d.shape;
  rd.keepdim = true;
  for (int i = 0; i < d.shape.rank; ++i) {
    if (i < lead) { rd.axes.push_back(i); continue; }
    const int64_t t = d.target[i - lead];
    if (t == d.shape[i]) continue;
    if (t != 1)
      return baracuda::detail::invalid(kPlan, "target ", d.target, " is not broadcast-compatible with input ", d.shape, " (axis ", i,
                             ": ", t, " is neither ", d.shape[i], " nor 1)");
    rd.axes.push_back(i);
  }
  if (rd.axes.rank == 0) {
    // Nothing to sum: reduce over a prepended extent-1 axis (an empty axis
    // list would mean "all axes").
    if (d.shape.rank >= kMaxRank)
      return baracuda::detail::unsupported(kPlan, "identity reduction of a rank-8 tensor is not supported (copy it instead)");
    Dims s;
    s.push_back(1);
    for (int i = 0; i < d.shape.rank; ++i) s.push_back(d.shape[i]);
    rd.shape = s;
    rd.axes.push_back(0);
  }
  auto inner = ReducePlan::select(stream, rd, pref);
  if (!inner) return Status(inner.status().code(), std::string(kPlan) + ": " + inner.status().message());
  ReduceToPlan plan(d, std::move(*inner));
  // The shell's fields mirror the inner plan's (same device, workspace, kernel).
  baracuda::detail::PlanAccess::set_name(plan, kPlan);
  baracuda::detail::PlanAccess::set_selected(plan);
  baracuda::detail::PlanAccess::set_device(plan, plan.inner_.device(), baracuda::detail::PlanAccess::sm_count(plan.inner_));
  baracuda::detail::PlanAccess::set_workspace(plan, plan.inner_.workspace_size());
  plan.sku_ = plan.inner_.sku();
  plan.sku_.op = "reduce_to.sum";
  return plan;
}

Result<ReduceArgs> ReduceToPlan::to_inner(const ReduceToArgs& a) const {
  const ReduceDescriptor& rd = inner_.descriptor();
  const int extra = rd.shape.rank - desc_.shape.rank;  // 1 when an axis was prepended
  const int lead = desc_.shape.rank - desc_.target.rank;
  ReduceArgs r;
  r.x = a.x;
  if (extra) {
    r.x.shape = rd.shape;
    r.x.strides = Dims();
    r.x.strides.push_back(0);
    for (int i = 0; i < a.x.strides.rank; ++i) r.x.strides.push_back(a.x.strides[i]);
  }
  r.y = a.y;
  r.y.shape = inner_.output_shape();
  r.y.strides = Dims::of_rank(rd.shape.rank, 0);
  for (int i = extra + lead; i < rd.shape.rank; ++i) r.y.strides[i] = a.y.strides[i - extra - lead];
  return r;
}

Status ReduceToPlan::can_implement(const ReduceToArgs& a) const {
  // Check the caller's views against this plan's own shapes first, so errors
  // name x / y as given.
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::ArgCheck(*this)
                               .input("x", a.x, desc_.dtype, desc_.shape)
                               .output("y", a.y, desc_.dtype, desc_.target)
                               .status());
  auto r = to_inner(a);
  if (!r) return r.status();
  Status st = inner_.can_implement(*r);
  if (!st) return Status(st.code(), std::string(kPlan) + " -> " + st.message(), st.needed(), st.got());
  return Status::ok();
}

Status ReduceToPlan::run(const Stream& stream, Workspace ws, const ReduceToArgs& a) const {
  if (empty()) return baracuda::detail::empty_plan(kPlan);
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_stream(kPlan, stream, device()));
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  auto r = to_inner(a);
  if (!r) return r.status();
  Status st = inner_.run(stream, ws, *r);
  if (!st) return Status(st.code(), std::string(kPlan) + " -> " + st.message(), st.needed(), st.got());
  return Status::ok();
}

Result<KernelSku> ReduceToPlan::sku_for(const Stream& stream, Workspace ws, const ReduceToArgs& a) const {
  if (empty()) return baracuda::detail::empty_plan(kPlan);
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_stream(kPlan, stream, device()));
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  auto r = to_inner(a);
  if (!r) return r.status();
  auto s = inner_.sku_for(stream, ws, *r);
  if (!s) return Status(s.status().code(), std::string(kPlan) + " -> " + s.status().message(), s.status().needed(),
                        s.status().got());
  KernelSku k = *s;
  k.op = sku_.op;
  return k;
}

}  // namespace baracuda
