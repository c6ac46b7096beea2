// ReduceToPlan = a keepdim Sum over the axes where the target is 1 (or
// missing), run through ReducePlan with the target viewed in the input's rank.
#include "core/checks.hpp"
#include "ops/reduce/common.hpp"

namespace baracuda {

static constexpr const char* kPlan = "ReduceToPlan";

Result<ReduceToPlan> ReduceToPlan::select(const Stream& stream, const ReduceToDescriptor& d, const PlanPreference& pref) {
  const std::string p = std::string(kPlan) + ": ";
  BARACUDA_RETURN_IF_ERROR(detail::check_shape(kPlan, "input shape", d.shape));
  BARACUDA_RETURN_IF_ERROR(detail::check_shape(kPlan, "target shape", d.target));
  if (!dtype_in(d.dtype, {DType::F32, DType::F64, DType::F16, DType::BF16}))
    return Status(StatusCode::Unsupported, p + "dtype " + std::string(dtype_name(d.dtype)) + " not supported (f32, f64, f16, bf16)");
  if (d.target.rank > d.shape.rank)
    return Status(StatusCode::InvalidProblem, p + "target " + d.target.to_string() + " has more axes than the input " + d.shape.to_string());
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
      return Status(StatusCode::InvalidProblem, p + "target " + d.target.to_string() + " is not broadcast-compatible with input " +
                                                    d.shape.to_string() + " (axis " + std::to_string(i) + ": " + std::to_string(t) +
                                                    " is neither " + std::to_string(d.shape[i]) + " nor 1)");
    rd.axes.push_back(i);
  }
  if (rd.axes.rank == 0) {
    // Nothing to sum: reduce over a prepended extent-1 axis (an empty axis
    // list would mean "all axes").
    if (d.shape.rank >= kMaxRank)
      return Status(StatusCode::Unsupported, p + "identity reduction of a rank-8 tensor is not supported (copy it instead)");
    Dims s;
    s.push_back(1);
    for (int i = 0; i < d.shape.rank; ++i) s.push_back(d.shape[i]);
    rd.shape = s;
    rd.axes.push_back(0);
  }
  auto inner = ReducePlan::select(stream, rd, pref);
  if (!inner) return Status(inner.status().code(), p + inner.status().message());
  ReduceToPlan plan(d, std::move(*inner));
  plan.sku_ = plan.inner_.sku();
  plan.sku_.op = "reduce_to.sum";
  return plan;
}

Result<ReduceArgs> ReduceToPlan::to_inner(const ReduceToArgs& a) const {
  const Device dev = a.x.device;
  (void)dev;
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
  const KernelSku& s = inner_.sku();
  const Device dev = s.backend == Backend::CpuReference ? Device::cpu() : a.x.device;
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kPlan, "x", a.x, desc_.dtype, desc_.shape, a.x.device));
  BARACUDA_RETURN_IF_ERROR(detail::check_output(kPlan, "y", a.y, desc_.dtype, desc_.target, dev));
  if (a.x.strides.rank != desc_.shape.rank || a.y.strides.rank != desc_.target.rank)
    return Status(StatusCode::InvalidProblem, std::string(kPlan) + ": stride ranks do not match shapes");
  auto r = to_inner(a);
  if (!r) return r.status();
  Status st = inner_.can_implement(*r);
  if (!st) return Status(st.code(), std::string(kPlan) + " -> " + st.message(), st.needed(), st.got());
  return Status::ok();
}

Status ReduceToPlan::run(const Stream& stream, Workspace ws, const ReduceToArgs& a) const {
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  auto r = to_inner(a);
  if (!r) return r.status();
  Status st = inner_.run(stream, ws, *r);
  if (!st) return Status(st.code(), std::string(kPlan) + " -> " + st.message(), st.needed(), st.got());
  return Status::ok();
}

}  // namespace baracuda
