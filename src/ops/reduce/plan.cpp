#include <algorithm>

#include "core/checked_math.hpp"
#include "core/layout.hpp"
#include "core/plan_shell.hpp"
#include "ops/reduce/common.hpp"
#include "ops/reduce/reference.hpp"
#ifdef BARACUDA_WITH_CUDA
#include "ops/reduce/launch.hpp"
#endif

namespace baracuda {

const char* reduce_kind_name(ReduceKind k) {
  switch (k) {
    case ReduceKind::Sum: return "sum";
    case ReduceKind::Mean: return "mean";
    case ReduceKind::Max: return "max";
    case ReduceKind::Min: return "min";
    case ReduceKind::Prod: return "prod";
    case ReduceKind::Norm2: return "norm2";
    case ReduceKind::LogSumExp: return "logsumexp";
    case ReduceKind::Var: return "var";
    case ReduceKind::Std: return "std";
    case ReduceKind::ArgMax: return "argmax";
    case ReduceKind::ArgMin: return "argmin";
  }
  return "?";
}

namespace reduce::detail {

namespace {
bool integer_kind_ok(ReduceKind k) {
  return k == ReduceKind::Sum || k == ReduceKind::Prod || k == ReduceKind::Max || k == ReduceKind::Min ||
         k == ReduceKind::ArgMax || k == ReduceKind::ArgMin;
}
}  // namespace

Status validate(const char* plan, const ReduceDescriptor& d, Validated* v) {
  if (static_cast<int>(d.kind) > static_cast<int>(ReduceKind::ArgMin))
    return baracuda::detail::invalid(plan, "unknown ReduceKind ", d.kind);
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "input shape", d.shape));
  const bool int_ok = d.dtype == DType::I32 || d.dtype == DType::I64;
  if (!is_gradient_dtype(d.dtype) && !(int_ok && integer_kind_ok(d.kind)))
    return baracuda::detail::unsupported(plan, "kind ", reduce_kind_name(d.kind), " does not support dtype ", d.dtype,
                               " (f32/f64/f16/bf16 for every kind; i32/i64 for sum, prod, max, min, argmax, argmin)");
  if (d.correction < 0) return baracuda::detail::invalid(plan, "correction ", d.correction, " must be >= 0");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::normalize_axes(plan, d.axes, d.shape.rank, &v->mask));
  v->desc = d;
  v->desc.axes = Dims();
  v->out_shape = Dims();
  v->red_numel = 1;
  for (int i = 0; i < d.shape.rank; ++i) {
    if (v->mask & (1u << i)) {
      v->desc.axes.push_back(i);
      // Cannot overflow: check_shape bounded the product of every extent,
      // and a zero extent elsewhere does not reach this product.
      if (!baracuda::detail::mul_ok(v->red_numel, d.shape[i], &v->red_numel))
        return baracuda::detail::invalid(plan, "reduced extent of shape ", d.shape, " overflows int64");
      if (d.keepdim) v->out_shape.push_back(1);
    } else {
      v->out_shape.push_back(d.shape[i]);
    }
  }
  const bool needs_element = d.kind == ReduceKind::Max || d.kind == ReduceKind::Min || d.kind == ReduceKind::ArgMax ||
                             d.kind == ReduceKind::ArgMin;
  if (needs_element && v->red_numel == 0)
    return baracuda::detail::invalid(plan, reduce_kind_name(d.kind), " over an empty axis of shape ", d.shape,
                           " has no identity (reduced extent is 0)");
  return Status::ok();
}

}  // namespace reduce::detail

using namespace reduce::detail;

static constexpr const char* kPlan = "ReducePlan";

Result<ReducePlan> ReducePlan::select(const Stream& stream, const ReduceDescriptor& desc, const PlanPreference& pref) {
  Validated v;
  BARACUDA_RETURN_IF_ERROR(validate(kPlan, desc, &v));
  const ReduceKind k = desc.kind;
  ReducePlan plan;
  auto be = baracuda::detail::setup_plan(plan, kPlan, kFamily, stream, pref, desc.dtype, std::string("reduce.") + reduce_kind_name(k));
  if (!be) return be.status();
  plan.desc_ = v.desc;
  plan.out_shape_ = v.out_shape;
  plan.axis_mask_ = v.mask;
  if (k == ReduceKind::ArgMax || k == ReduceKind::ArgMin) plan.out_dtype_ = DType::I64;
  else if (is_integral(desc.dtype) && (k == ReduceKind::Sum || k == ReduceKind::Prod)) plan.out_dtype_ = DType::I64;
  else plan.out_dtype_ = desc.dtype;
  plan.sku_.variant = "reference";
#ifdef BARACUDA_WITH_CUDA
  if (be->backend == Backend::Bespoke) {
    const Dims in_strides = contiguous_strides(desc.shape);
    const Dims out_strides = to_input_rank(TensorRef::contiguous(nullptr, plan.out_dtype_, plan.device_, plan.out_shape_),
                                           desc.shape, v.mask, desc.keepdim).strides;
    const auto layout = baracuda::detail::make_reduce_layout(desc.shape, in_strides, v.mask, out_strides);
    if (layout.num_out > 0) {
      plan.workspace_bytes_ = reduce::cuda::forward_workspace_bytes(k, desc.dtype, layout, be->sm_count);
      plan.sku_.variant = reduce::cuda::forward_variant(k, desc.dtype, layout, be->sm_count);
    } else {
      plan.sku_.variant = "empty";
    }
  }
#endif
  return plan;
}

namespace {
baracuda::detail::ArgCheck check_args(const ReducePlan& p, const ReduceArgs& a) {
  baracuda::detail::ArgCheck c(p);
  c.input("x", a.x, p.descriptor().dtype, p.descriptor().shape).output("y", a.y, p.output_dtype(), p.output_shape());
  return std::move(c.disjoint("in-place reduction is not supported"));
}
}  // namespace

Status ReducePlan::can_implement(const ReduceArgs& a) const { return check_args(*this, a).status(); }

#ifdef BARACUDA_WITH_CUDA
// The kernel launch of run(): the layout re-derived from the actual strides.
namespace {
reduce::cuda::ForwardLaunch launch_of(const ReducePlan& plan, const Stream& stream, Workspace ws, const ReduceArgs& a) {
  const ReduceDescriptor& d = plan.descriptor();
  const TensorMut y = to_input_rank(a.y, d.shape, plan.axis_mask(), d.keepdim);
  reduce::cuda::ForwardLaunch p{};
  p.kind = d.kind;
  p.in_dtype = d.dtype;
  p.out_dtype = plan.output_dtype();
  p.x = a.x.data;
  p.y = a.y.data;
  p.layout = baracuda::detail::make_reduce_layout(a.x.shape, a.x.strides, plan.axis_mask(), y.strides);
  p.correction = d.correction;
  p.ws = ws.ptr;
  p.ws_bytes = plan.workspace_size();
  p.stream = stream.native_handle();
  p.sm_count = baracuda::detail::PlanAccess::sm_count(plan);
  p.arch = plan.sku().arch;
  return p;
}
}  // namespace
#endif

Result<KernelSku> ReducePlan::sku_for(const Stream& stream, Workspace ws, const ReduceArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, a), [&]() -> Result<KernelSku> {
#ifdef BARACUDA_WITH_CUDA
    KernelSku s = sku_;
    s.variant = reduce::cuda::forward_variant_for(launch_of(*this, stream, ws, a));
    return s;
#else
    return baracuda::detail::no_cuda(kPlan);
#endif
  });
}

Status ReducePlan::run(const Stream& stream, Workspace ws, const ReduceArgs& a) const {
  // y viewed in the input's rank (extent 1, stride 0 on reduced axes).
  auto y_in = [&] { return to_input_rank(a.y, desc_.shape, axis_mask_, desc_.keepdim); };
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, a),
      [&] { return reduce::ref::forward(desc_.kind, a.x, y_in(), axis_mask_, desc_.correction); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        return reduce::cuda::launch_forward(launch_of(*this, stream, ws, a));
#else
        return baracuda::detail::no_cuda(kPlan);
#endif
      });
}

}  // namespace baracuda
