#include <algorithm>

#include "core/checks.hpp"
#include "core/cuda_device.hpp"
#include "core/families.hpp"
#include "core/layout.hpp"
#include "ops/reduce/common.hpp"
#include "ops/reduce/cpu.hpp"
#ifdef BARACUDA_WITH_CUDA
#include "ops/reduce/reduce_cuda.hpp"
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

namespace reduce_detail {

namespace {
bool integer_kind_ok(ReduceKind k) {
  return k == ReduceKind::Sum || k == ReduceKind::Prod || k == ReduceKind::Max || k == ReduceKind::Min ||
         k == ReduceKind::ArgMax || k == ReduceKind::ArgMin;
}
}  // namespace

Status validate(const char* plan, const ReduceDescriptor& d, Validated* v) {
  const std::string p = std::string(plan) + ": ";
  if (static_cast<int>(d.kind) > static_cast<int>(ReduceKind::ArgMin))
    return Status(StatusCode::InvalidProblem, p + "unknown ReduceKind " + std::to_string(static_cast<int>(d.kind)));
  BARACUDA_RETURN_IF_ERROR(detail::check_shape(plan, "input shape", d.shape));
  const bool fp = is_floating(d.dtype);
  const bool int_ok = d.dtype == DType::I32 || d.dtype == DType::I64;
  if (!fp && !(int_ok && integer_kind_ok(d.kind)))
    return Status(StatusCode::Unsupported, p + "kind " + reduce_kind_name(d.kind) + " does not support dtype " +
                                               std::string(dtype_name(d.dtype)) +
                                               " (f32/f64/f16/bf16 for every kind; i32/i64 for sum, prod, max, min, argmax, argmin)");
  if (d.correction < 0)
    return Status(StatusCode::InvalidProblem, p + "correction " + std::to_string(d.correction) + " must be >= 0");
  BARACUDA_RETURN_IF_ERROR(detail::normalize_axes(plan, d.axes, d.shape.rank, &v->mask));
  v->desc = d;
  v->desc.axes = Dims();
  v->out_shape = Dims();
  v->red_numel = 1;
  for (int i = 0; i < d.shape.rank; ++i) {
    if (v->mask & (1u << i)) {
      v->desc.axes.push_back(i);
      v->red_numel *= d.shape[i];
      if (d.keepdim) v->out_shape.push_back(1);
    } else {
      v->out_shape.push_back(d.shape[i]);
    }
  }
  const bool needs_element = d.kind == ReduceKind::Max || d.kind == ReduceKind::Min || d.kind == ReduceKind::ArgMax ||
                             d.kind == ReduceKind::ArgMin;
  if (needs_element && v->red_numel == 0)
    return Status(StatusCode::InvalidProblem, p + reduce_kind_name(d.kind) + " over an empty axis of shape " +
                                                  d.shape.to_string() + " has no identity (reduced extent is 0)");
  return Status::ok();
}

Result<BackendChoice> choose_backend(const char* plan, const Stream& stream, const PlanPreference& pref) {
  auto be = detail::choose_backend(plan, "reduction", stream, pref);
  if (be && be->backend == Backend::Bespoke && !BARACUDA_KERNELS_REDUCE) return detail::family_not_built(plan, "reduce");
  return be;
}


KernelSku make_sku(const BackendChoice& be, DType dtype, std::string op) {
  KernelSku sku;
  sku.backend = be.backend;
  sku.arch = be.arch;
  sku.dtype = dtype;
  sku.op = std::move(op);
  sku.precision = detail::default_precision(dtype, be.backend);
  sku.variant = "reference";
  return sku;
}

}  // namespace reduce_detail

using namespace reduce_detail;

static constexpr const char* kPlan = "ReducePlan";

Result<ReducePlan> ReducePlan::select(const Stream& stream, const ReduceDescriptor& desc, const PlanPreference& pref) {
  Validated v;
  BARACUDA_RETURN_IF_ERROR(validate(kPlan, desc, &v));
  auto be = choose_backend(kPlan, stream, pref);
  if (!be) return be.status();
  ReducePlan plan;
  plan.desc_ = v.desc;
  plan.out_shape_ = v.out_shape;
  plan.axis_mask_ = v.mask;
  plan.device_ = stream.device();
  plan.sm_count_ = be->sm_count;
  const ReduceKind k = desc.kind;
  if (k == ReduceKind::ArgMax || k == ReduceKind::ArgMin) plan.out_dtype_ = DType::I64;
  else if (is_integral(desc.dtype) && (k == ReduceKind::Sum || k == ReduceKind::Prod)) plan.out_dtype_ = DType::I64;
  else plan.out_dtype_ = desc.dtype;
  plan.sku_ = make_sku(*be, desc.dtype, std::string("reduce.") + reduce_kind_name(k));
#ifdef BARACUDA_WITH_CUDA
  if (be->backend == Backend::Bespoke) {
    const Dims in_strides = contiguous_strides(desc.shape);
    const Dims out_strides = to_input_rank(TensorRef::contiguous(nullptr, plan.out_dtype_, plan.device_, plan.out_shape_),
                                           desc.shape, v.mask, desc.keepdim).strides;
    const auto layout = detail::make_reduce_layout(desc.shape, in_strides, v.mask, out_strides);
    if (layout.num_out > 0) {
      plan.workspace_bytes_ = cuda_reduce::forward_workspace_bytes(k, desc.dtype, layout, be->sm_count);
      plan.sku_.variant = cuda_reduce::forward_variant(k, desc.dtype, layout, be->sm_count);
    } else {
      plan.sku_.variant = "empty";
    }
  }
#endif
  return plan;
}

Status ReducePlan::can_implement(const ReduceArgs& a) const {
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kPlan, "x", a.x, desc_.dtype, desc_.shape, device_));
  BARACUDA_RETURN_IF_ERROR(detail::check_output(kPlan, "y", a.y, out_dtype_, out_shape_, device_));
  if (detail::views_overlap(a.x, a.y))
    return Status(StatusCode::InvalidProblem, std::string(kPlan) + ": y overlaps x in memory (in-place reduction is not supported)");
  return Status::ok();
}

Status ReducePlan::run(const Stream& stream, Workspace ws, const ReduceArgs& a) const {
  BARACUDA_RETURN_IF_ERROR(detail::check_stream(kPlan, stream, device_));
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  BARACUDA_RETURN_IF_ERROR(detail::check_workspace(kPlan, workspace_bytes_, ws.bytes, ws.ptr));
  if (a.y.numel() == 0) return Status::ok();
  const TensorMut y = to_input_rank(a.y, desc_.shape, axis_mask_, desc_.keepdim);
  if (sku_.backend == Backend::CpuReference) return cpu_reduce::forward(desc_.kind, a.x, y, axis_mask_, desc_.correction);
#ifdef BARACUDA_WITH_CUDA
  detail::DeviceGuard guard(device_.ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  cuda_reduce::ForwardLaunch p{};
  p.kind = desc_.kind;
  p.in_dtype = desc_.dtype;
  p.out_dtype = out_dtype_;
  p.x = a.x.data;
  p.y = a.y.data;
  p.layout = detail::make_reduce_layout(a.x.shape, a.x.strides, axis_mask_, y.strides);
  p.correction = desc_.correction;
  p.ws = ws.ptr;
  p.ws_bytes = workspace_bytes_;
  p.stream = stream.native_handle();
  p.sm_count = sm_count_;
  p.arch = sku_.arch;
  return cuda_reduce::launch_forward(p);
#else
  return Status(StatusCode::Unsupported, std::string(kPlan) + ": CUDA backend not built");
#endif
}

}  // namespace baracuda
