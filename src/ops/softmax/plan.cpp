// SoftmaxPlan / SoftmaxBackwardPlan: descriptor validation, backend choice,
// argument checks, the row layout of the actual views and the CUDA path
// choice (plain C++, so sku() / sku_for() name what the kernels run), and
// dispatch to the CPU reference or the CUDA kernels.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/softmax/launch.hpp"
#include "ops/softmax/path.hpp"
#include "ops/softmax/reference.hpp"

namespace baracuda {

namespace softmax::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Softmax", "softmax", BARACUDA_KERNELS_SOFTMAX};

using baracuda::detail::invalid;

// The fields both descriptors share, validated (axis resolved).
struct Problem {
  DType dtype = DType::F32;
  Dims shape;
  int axis = 0;
  bool log = false;
  double scale = 1.0;
};

template <class D>
Status validate(const char* plan, const D& in, Problem* out) {
  if (!(in.dtype == DType::F32 || in.dtype == DType::F64 || in.dtype == DType::F16 || in.dtype == DType::BF16))
    return baracuda::detail::unsupported(plan, "dtype ", in.dtype, " is not supported (f32, f64, f16, bf16)");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "shape", in.shape));
  const int rank = in.shape.rank;
  const int lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;  // rank 0: axis 0 or -1, as PyTorch
  if (in.axis < lo || in.axis > hi)
    return invalid(plan, "axis ", in.axis, " is out of range for shape ", in.shape, " (expected [", lo, ", ", hi, "])");
  if (!std::isfinite(in.scale) || in.scale == 0.0) return invalid(plan, "scale ", in.scale, " must be finite and != 0");
  out->dtype = in.dtype;
  out->shape = in.shape;
  out->axis = rank == 0 ? 0 : (in.axis < 0 ? in.axis + rank : in.axis);
  out->log = in.log;
  out->scale = in.scale;
  return Status::ok();
}

// ---- arguments ----------------------------------------------------------------------
// The tensors of one call: out, in0 (x or y), in1 (dy; backward only).
struct Tensors {
  TensorMut out;
  TensorRef in0, in1;
};

baracuda::detail::ArgCheck check_args(const PlanBase& plan, const Problem& p, bool backward, const Tensors& t) {
  baracuda::detail::ArgCheck c(plan);
  if (!backward) {
    c.input("x", t.in0, p.dtype, p.shape).output("y", t.out, p.dtype, p.shape).allow_in_place("y", "x");
  } else {
    c.input("y", t.in0, p.dtype, p.shape)
        .input("dy", t.in1, p.dtype, p.shape)
        .output("dx", t.out, p.dtype, p.shape)
        .allow_in_place("dx", "dy");
  }
  return std::move(c.disjoint());
}

Status run_cpu(const Problem& p, bool backward, const Tensors& t) {
  softmax::ref::Problem r;
  r.dtype = p.dtype;
  r.shape = p.shape;
  r.axis = p.axis;
  r.log = p.log;
  r.scale = p.scale;
  r.backward = backward;
  r.in0 = t.in0;
  r.in1 = t.in1;
  r.out = t.out;
  return softmax::ref::run(r);
}

// The launch of these views (or, with t == nullptr, of contiguous views with
// aligned data: select()'s choice).
cuda::Launch make_launch(const PlanBase& plan, const Problem& p, bool backward, const Tensors* t) {
  cuda::Launch l;
  l.backward = backward;
  l.log = p.log;
  l.scale = p.scale;
  l.dtype = p.dtype;
  l.sm_count = baracuda::detail::PlanAccess::sm_count(plan);
  l.arch = plan.sku().arch;
  const int n_views = backward ? 3 : 2;
  const Dims contiguous = contiguous_strides(p.shape);
  const int64_t* views[cuda::kOperands] = {contiguous.begin(), contiguous.begin(), contiguous.begin()};
  static const char aligned[16] alignas(16) = {};
  const void* ptrs[cuda::kOperands] = {aligned, aligned, aligned};
  if (t) {
    views[0] = t->out.strides.begin();
    views[1] = t->in0.strides.begin();
    views[2] = t->in1.strides.begin();
    ptrs[0] = t->out.data;
    ptrs[1] = t->in0.data;
    ptrs[2] = t->in1.data;
    l.out = t->out.data;
    l.in[0] = t->in0.data;
    l.in[1] = backward ? t->in1.data : nullptr;
  }
  l.rows = make_rows(p.shape, p.axis, views, n_views);
  choose_path(l, n_views, ptrs);
  return l;
}

Status run_cuda(const PlanBase& plan, const Problem& p, bool backward, const Stream& stream, Workspace ws,
                const Tensors& t) {
#ifdef BARACUDA_WITH_CUDA
  cuda::Launch l = make_launch(plan, p, backward, &t);
  // The partials need 16-byte slots: align any workspace pointer up (workspace_of() has the pad).
  l.workspace = ws.ptr ? reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(ws.ptr) + 15) / 16 * 16) : nullptr;
  l.stream = stream.native_handle();
  return cuda::launch(l);
#else
  (void)p, (void)backward, (void)stream, (void)ws, (void)t;
  return baracuda::detail::no_cuda(plan.name());
#endif
}

// The select prologue of both plans (they differ in name and op).
Status setup(PlanBase& plan, const char* name, const char* op, const Stream& stream, const PlanPreference& pref,
             const Problem& p, bool backward) {
  auto be = baracuda::detail::setup_plan(plan, name, kFamily, stream, pref, p.dtype, op);
  if (!be) return be.status();
  if (shape_numel(p.shape) == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";  // run() launches nothing (the shell's sku_for says so too)
  } else if (be->backend != Backend::CpuReference) {
    const cuda::Launch l = make_launch(plan, p, backward, nullptr);
    baracuda::detail::PlanAccess::sku(plan).variant = variant_of(l);
    BARACUDA_RETURN_IF_ERROR(
        baracuda::detail::check_size(name, "split workspace", {l.rows.rows, l.chunks, cuda::kPartialBytes}));
    baracuda::detail::PlanAccess::set_workspace(plan, workspace_of(l));
  }
  return Status::ok();
}

Result<KernelSku> sku_of_run(const PlanBase& plan, const Problem& p, bool backward, const Tensors& t) {
  KernelSku s = plan.sku();
  if (s.backend != Backend::CpuReference) s.variant = variant_of(make_launch(plan, p, backward, &t));
  return s;
}

template <class D>
D to_descriptor(const Problem& p) {
  D d;
  d.dtype = p.dtype;
  d.shape = p.shape;
  d.axis = p.axis;
  d.log = p.log;
  d.scale = p.scale;
  return d;
}

}  // namespace
}  // namespace softmax::detail

using namespace softmax::detail;

// ---- SoftmaxPlan ---------------------------------------------------------------------------
namespace {
Tensors tensors_of(const SoftmaxArgs& a) { return {a.y, a.x, {}}; }
Tensors tensors_of(const SoftmaxBackwardArgs& a) { return {a.dx, a.y, a.dy}; }
template <class D>
Problem problem_of(const D& d) {
  return {d.dtype, d.shape, d.axis, d.log, d.scale};
}
}  // namespace

Result<SoftmaxPlan> SoftmaxPlan::select(const Stream& stream, const SoftmaxDescriptor& desc, const PlanPreference& pref) {
  SoftmaxPlan plan;
  Problem p;
  BARACUDA_RETURN_IF_ERROR(validate("SoftmaxPlan", desc, &p));
  plan.desc_ = to_descriptor<SoftmaxDescriptor>(p);
  BARACUDA_RETURN_IF_ERROR(setup(plan, "SoftmaxPlan", p.log ? "softmax.log_forward" : "softmax.forward", stream, pref, p, false));
  return plan;
}

Status SoftmaxPlan::can_implement(const SoftmaxArgs& a) const {
  return check_args(*this, problem_of(desc_), false, tensors_of(a)).status();
}

Result<KernelSku> SoftmaxPlan::sku_for(const Stream& stream, Workspace ws, const SoftmaxArgs& a) const {
  const Tensors t = tensors_of(a);
  const Problem p = problem_of(desc_);
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, p, false, t),
                                       [&]() -> Result<KernelSku> { return sku_of_run(*this, p, false, t); });
}

Status SoftmaxPlan::run(const Stream& stream, Workspace ws, const SoftmaxArgs& a) const {
  const Tensors t = tensors_of(a);
  const Problem p = problem_of(desc_);
  return baracuda::detail::run_plan(*this, stream, ws, check_args(*this, p, false, t), [&] { return run_cpu(p, false, t); },
                                    [&] { return run_cuda(*this, p, false, stream, ws, t); });
}

// ---- SoftmaxBackwardPlan ----------------------------------------------------------------------
Result<SoftmaxBackwardPlan> SoftmaxBackwardPlan::select(const Stream& stream, const SoftmaxBackwardDescriptor& desc,
                                                        const PlanPreference& pref) {
  SoftmaxBackwardPlan plan;
  Problem p;
  BARACUDA_RETURN_IF_ERROR(validate("SoftmaxBackwardPlan", desc, &p));
  plan.desc_ = to_descriptor<SoftmaxBackwardDescriptor>(p);
  BARACUDA_RETURN_IF_ERROR(
      setup(plan, "SoftmaxBackwardPlan", p.log ? "softmax.log_backward" : "softmax.backward", stream, pref, p, true));
  return plan;
}

Status SoftmaxBackwardPlan::can_implement(const SoftmaxBackwardArgs& a) const {
  return check_args(*this, problem_of(desc_), true, tensors_of(a)).status();
}

Result<KernelSku> SoftmaxBackwardPlan::sku_for(const Stream& stream, Workspace ws, const SoftmaxBackwardArgs& a) const {
  const Tensors t = tensors_of(a);
  const Problem p = problem_of(desc_);
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, p, true, t),
                                       [&]() -> Result<KernelSku> { return sku_of_run(*this, p, true, t); });
}

Status SoftmaxBackwardPlan::run(const Stream& stream, Workspace ws, const SoftmaxBackwardArgs& a) const {
  const Tensors t = tensors_of(a);
  const Problem p = problem_of(desc_);
  return baracuda::detail::run_plan(*this, stream, ws, check_args(*this, p, true, t), [&] { return run_cpu(p, true, t); },
                                    [&] { return run_cuda(*this, p, true, stream, ws, t); });
}

}  // namespace baracuda
