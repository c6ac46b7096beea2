// ReduceBackwardPlan: dx from dy (and the saved x / y the kind needs).
#include "core/plan_shell.hpp"
#include "ops/reduce/common.hpp"
#include "ops/reduce/reference.hpp"
#ifdef BARACUDA_WITH_CUDA
#include "ops/reduce/launch.hpp"
#endif

namespace baracuda {

using namespace reduce::detail;
static constexpr const char* kPlan = "ReduceBackwardPlan";

namespace {
bool kind_needs_x(ReduceKind k) { return k != ReduceKind::Sum && k != ReduceKind::Mean; }
bool kind_needs_y(ReduceKind k) {
  return k == ReduceKind::Max || k == ReduceKind::Min || k == ReduceKind::Norm2 || k == ReduceKind::LogSumExp ||
         k == ReduceKind::Std;
}
}  // namespace

bool ReduceBackwardPlan::needs_x() const { return kind_needs_x(desc_.kind); }
bool ReduceBackwardPlan::needs_y() const { return kind_needs_y(desc_.kind); }

Result<ReduceBackwardPlan> ReduceBackwardPlan::select(const Stream& stream, const ReduceDescriptor& desc,
                                                      const PlanPreference& pref) {
  if (desc.kind == ReduceKind::ArgMax || desc.kind == ReduceKind::ArgMin)
    return baracuda::detail::invalid(kPlan, reduce_kind_name(desc.kind), " has no gradient (its output is an index)");
  if (!is_gradient_dtype(desc.dtype))
    return baracuda::detail::unsupported(kPlan, "dtype ", desc.dtype, " has no gradient (f32, f64, f16, bf16 only)");
  Validated v;
  BARACUDA_RETURN_IF_ERROR(validate(kPlan, desc, &v));
  ReduceBackwardPlan plan;
  auto be = baracuda::detail::setup_plan(plan, kPlan, kFamily, stream, pref, desc.dtype,
                               std::string("reduce_backward.") + reduce_kind_name(desc.kind));
  if (!be) return be.status();
  plan.desc_ = v.desc;
  plan.out_shape_ = v.out_shape;
  plan.axis_mask_ = v.mask;
  // Sum/Mean/Norm2/LogSumExp are one elementwise pass; the other kinds need a
  // per-slice auxiliary (tie count, mean, partial products) first, fused into
  // one block per slice where the slice fits on chip.
  const bool one_pass = desc.kind == ReduceKind::Sum || desc.kind == ReduceKind::Mean ||
                        desc.kind == ReduceKind::Norm2 || desc.kind == ReduceKind::LogSumExp;
  if (be->backend != Backend::CpuReference) plan.sku_.variant = one_pass ? "elementwise" : "slice-aux+elementwise";
#ifdef BARACUDA_WITH_CUDA
  if (be->backend == Backend::Bespoke && shape_numel(desc.shape) > 0)
    plan.workspace_bytes_ = reduce::cuda::backward_workspace_bytes(desc.kind, desc.dtype, desc.shape, v.mask, be->sm_count);
#endif
  return plan;
}

namespace {
baracuda::detail::ArgCheck check_args(const ReduceBackwardPlan& p, const ReduceBackwardArgs& a) {
  const ReduceDescriptor& d = p.descriptor();
  const std::string kind = std::string("backward of ") + reduce_kind_name(d.kind);
  const std::string needs = kind + " needs the saved forward ";
  const std::string unread = " is given but the " + kind + " does not read it (";
  baracuda::detail::ArgCheck c(p);
  c.input("dy", a.dy, d.dtype, p.output_shape());
  // x and y are read by some kinds only (needs_x() / needs_y()); like every
  // optional tensor, one given to a kind that does not read it is an error.
  c.optional_input("x", a.x, p.needs_x(), d.dtype, d.shape, needs + "input x, which is missing",
                   "x" + unread + "needs_x() is false: leave it empty)")
      .optional_input("y", a.y, p.needs_y(), d.dtype, p.output_shape(), needs + "output y, which is missing",
                      "y" + unread + "needs_y() is false: leave it empty)");
  c.output("dx", a.dx, d.dtype, d.shape);
  return std::move(c.disjoint());
}
}  // namespace

Status ReduceBackwardPlan::can_implement(const ReduceBackwardArgs& a) const { return check_args(*this, a).status(); }

Result<KernelSku> ReduceBackwardPlan::sku_for(const Stream& stream, Workspace ws, const ReduceBackwardArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, a));
}

Status ReduceBackwardPlan::run(const Stream& stream, Workspace ws, const ReduceBackwardArgs& a) const {
  // dy and y viewed in the input's rank (stride 0 on reduced axes).
  const bool keep = desc_.keepdim;
  auto in_rank = [&](const TensorRef& t) { return to_input_rank(t, desc_.shape, axis_mask_, keep); };
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, a),
      [&] {
        return reduce::ref::backward(desc_.kind, in_rank(a.dy), needs_x() ? a.x : TensorRef(),
                                    needs_y() ? in_rank(a.y) : TensorRef(), a.dx, axis_mask_, desc_.correction);
      },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        const TensorRef dy = in_rank(a.dy);
        const TensorRef x = needs_x() ? a.x : TensorRef();
        const TensorRef y = needs_y() ? in_rank(a.y) : TensorRef();
        reduce::cuda::BackwardLaunch p{};
        p.kind = desc_.kind;
        p.dtype = desc_.dtype;
        p.rank = desc_.shape.rank;
        p.axis_mask = axis_mask_;
        p.red_numel = 1;
        for (int i = 0; i < p.rank; ++i) {
          p.shape[i] = desc_.shape[i];
          if (axis_mask_ & (1u << i)) p.red_numel *= desc_.shape[i];
          p.dy_stride[i] = dy.strides[i];
          p.x_stride[i] = needs_x() ? x.strides[i] : 0;
          p.y_stride[i] = needs_y() ? y.strides[i] : 0;
          p.dx_stride[i] = a.dx.strides[i];
        }
        p.dy = dy.data;
        p.x = needs_x() ? x.data : nullptr;
        p.y = needs_y() ? y.data : nullptr;
        p.dx = a.dx.data;
        p.correction = desc_.correction;
        p.ws = ws.ptr;
        p.ws_bytes = workspace_bytes_;
        p.stream = stream.native_handle();
        p.sm_count = sm_count_;
        return reduce::cuda::launch_backward(p);
#else
        return baracuda::detail::no_cuda(kPlan);
#endif
      });
}

}  // namespace baracuda
