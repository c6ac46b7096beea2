#include "core/checks.hpp"
#include "core/cuda_device.hpp"
#include "ops/reduce/common.hpp"
#include "ops/reduce/cpu.hpp"
#ifdef BARACUDA_WITH_CUDA
#include "ops/reduce/reduce_cuda.hpp"
#endif

namespace baracuda {

using namespace reduce_detail;
static constexpr const char* kPlan = "ReduceBackwardPlan";

namespace {
bool kind_needs_x(ReduceKind k) { return k != ReduceKind::Sum && k != ReduceKind::Mean; }
bool kind_needs_y(ReduceKind k) {
  return k == ReduceKind::Max || k == ReduceKind::Min || k == ReduceKind::Norm2 || k == ReduceKind::LogSumExp ||
         k == ReduceKind::Std;
}
bool missing(const TensorRef& t) { return t.data == nullptr && shape_numel(t.shape) != 0; }
}  // namespace

bool ReduceBackwardPlan::needs_x() const { return kind_needs_x(desc_.kind); }
bool ReduceBackwardPlan::needs_y() const { return kind_needs_y(desc_.kind); }

Result<ReduceBackwardPlan> ReduceBackwardPlan::select(const Stream& stream, const ReduceDescriptor& desc,
                                                      const PlanPreference& pref) {
  if (desc.kind == ReduceKind::ArgMax || desc.kind == ReduceKind::ArgMin)
    return Status(StatusCode::InvalidProblem, std::string(kPlan) + ": " + reduce_kind_name(desc.kind) +
                                                  " has no gradient (its output is an index)");
  if (!dtype_in(desc.dtype, {DType::F32, DType::F64, DType::F16, DType::BF16}))
    return Status(StatusCode::Unsupported, std::string(kPlan) + ": dtype " + std::string(dtype_name(desc.dtype)) +
                                               " has no gradient (f32, f64, f16, bf16 only)");
  Validated v;
  BARACUDA_RETURN_IF_ERROR(validate(kPlan, desc, &v));
  auto be = choose_backend(kPlan, stream, pref);
  if (!be) return be.status();
  ReduceBackwardPlan plan;
  plan.desc_ = v.desc;
  plan.out_shape_ = v.out_shape;
  plan.axis_mask_ = v.mask;
  plan.device_ = stream.device();
  plan.sm_count_ = be->sm_count;
  plan.sku_ = make_sku(*be, desc.dtype, std::string("reduce_backward.") + reduce_kind_name(desc.kind));
  // Sum/Mean/Norm2/LogSumExp are one elementwise pass; the other kinds need a
  // per-slice auxiliary (tie count, mean, partial products) first, fused into
  // one block per slice where the slice fits on chip.
  const bool one_pass = desc.kind == ReduceKind::Sum || desc.kind == ReduceKind::Mean ||
                        desc.kind == ReduceKind::Norm2 || desc.kind == ReduceKind::LogSumExp;
  plan.sku_.variant = be->backend == Backend::CpuReference ? "reference" : one_pass ? "elementwise" : "slice-aux+elementwise";
#ifdef BARACUDA_WITH_CUDA
  if (be->backend == Backend::Bespoke && shape_numel(desc.shape) > 0)
    plan.workspace_bytes_ = cuda_reduce::backward_workspace_bytes(desc.kind, desc.dtype, desc.shape, v.mask, be->sm_count);
#endif
  return plan;
}

Status ReduceBackwardPlan::can_implement(const ReduceBackwardArgs& a) const {
  const std::string p = std::string(kPlan) + ": ";
  BARACUDA_RETURN_IF_ERROR(detail::check_view(kPlan, "dy", a.dy, desc_.dtype, out_shape_, device_));
  if (needs_x()) {
    if (missing(a.x) || (a.x.data == nullptr && a.x.shape.rank == 0 && desc_.shape.rank > 0))
      return Status(StatusCode::InvalidProblem, p + "backward of " + reduce_kind_name(desc_.kind) + " needs the saved forward input x, which is missing");
    BARACUDA_RETURN_IF_ERROR(detail::check_view(kPlan, "x", a.x, desc_.dtype, desc_.shape, device_));
  }
  if (needs_y()) {
    if (missing(a.y) || (a.y.data == nullptr && a.y.shape.rank == 0 && out_shape_.rank > 0))
      return Status(StatusCode::InvalidProblem, p + "backward of " + reduce_kind_name(desc_.kind) + " needs the saved forward output y, which is missing");
    BARACUDA_RETURN_IF_ERROR(detail::check_view(kPlan, "y", a.y, desc_.dtype, out_shape_, device_));
  }
  BARACUDA_RETURN_IF_ERROR(detail::check_output(kPlan, "dx", a.dx, desc_.dtype, desc_.shape, device_));
  if (detail::views_overlap(a.dx, a.dy)) return Status(StatusCode::InvalidProblem, p + "dx overlaps dy in memory");
  if (needs_x() && detail::views_overlap(a.dx, a.x)) return Status(StatusCode::InvalidProblem, p + "dx overlaps x in memory");
  if (needs_y() && detail::views_overlap(a.dx, a.y)) return Status(StatusCode::InvalidProblem, p + "dx overlaps y in memory");
  return Status::ok();
}

Status ReduceBackwardPlan::run(const Stream& stream, Workspace ws, const ReduceBackwardArgs& a) const {
  BARACUDA_RETURN_IF_ERROR(detail::check_stream(kPlan, stream, device_));
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  BARACUDA_RETURN_IF_ERROR(detail::check_workspace(kPlan, workspace_bytes_, ws.bytes, ws.ptr));
  if (a.dx.numel() == 0) return Status::ok();
  const bool keep = desc_.keepdim;
  const TensorRef dy = to_input_rank(a.dy, desc_.shape, axis_mask_, keep);
  TensorRef x = needs_x() ? a.x : TensorRef();
  TensorRef y = needs_y() ? to_input_rank(a.y, desc_.shape, axis_mask_, keep) : TensorRef();
  if (sku_.backend == Backend::CpuReference)
    return cpu_reduce::backward(desc_.kind, dy, x, y, a.dx, axis_mask_, desc_.correction);
#ifdef BARACUDA_WITH_CUDA
  detail::DeviceGuard guard(device_.ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  cuda_reduce::BackwardLaunch p{};
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
  return cuda_reduce::launch_backward(p);
#else
  return Status(StatusCode::Unsupported, std::string(kPlan) + ": CUDA backend not built");
#endif
}

}  // namespace baracuda
