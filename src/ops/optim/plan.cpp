// The optim plans: descriptor rules, the tensor-list argument checks, and the
// dispatch of one ListLaunch (launch.hpp) to the CPU reference or the CUDA
// multi-tensor kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/ops/optim.hpp"
#include "core/checks.hpp"
#include "core/error.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/optim/launch.hpp"
#include "ops/optim/reference.hpp"

namespace baracuda {
namespace optim::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"optimizer", "optim", BARACUDA_KERNELS_OPTIM};
using baracuda::detail::invalid;
using baracuda::detail::unsupported;
using baracuda::detail::PlanAccess;

bool given(const TensorRef& v) { return v.data != nullptr || v.shape.rank != 0; }

// ---- descriptor rules ----
Status check_shapes(const char* plan, const std::vector<Dims>& shapes) {
  for (size_t k = 0; k < shapes.size(); ++k) {
    const std::string what = "shapes[" + std::to_string(k) + "]";
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, what.c_str(), shapes[k]));
  }
  return Status::ok();
}

Status check_float_dtype(const char* plan, const char* what, DType t) {
  if (t == DType::F32 || t == DType::BF16 || t == DType::F16) return Status::ok();
  return unsupported(plan, what, " ", t, " is not supported (f32, bf16, f16)");
}

Status check_beta(const char* plan, const char* what, double b) {
  if (b >= 0.0 && b < 1.0) return Status::ok();
  return invalid(plan, what, " ", b, " must be in [0, 1)");
}

Status check_common(const char* plan, const OptimizerCommon& d) {
  BARACUDA_RETURN_IF_ERROR(check_float_dtype(plan, "param_dtype", d.param_dtype));
  BARACUDA_RETURN_IF_ERROR(check_shapes(plan, d.shapes));
  if (d.master_weights && d.param_dtype == DType::F32)
    return invalid(plan, "master_weights needs BF16 or F16 params (param_dtype is F32: the params are the master)");
  if (d.stochastic_rounding && d.param_dtype != DType::BF16)
    return invalid(plan, "stochastic_rounding needs BF16 params (param_dtype is ", d.param_dtype, ")");
  if (!(d.weight_decay >= 0.0) || !std::isfinite(d.weight_decay))
    return invalid(plan, "weight_decay ", d.weight_decay, " must be finite and >= 0");
  return Status::ok();
}

// ---- the tensor-list argument checks ----
class ListCheck {
 public:
  ListCheck(const PlanBase& p, const std::vector<Dims>& shapes) : plan_(p.name()), dev_(p.device()), shapes_(shapes) {
    if (p.empty()) st_ = baracuda::detail::empty_plan(p.name());
  }

  template <class View>
  ListCheck& list(const char* role, const std::vector<View>& views, DType dt, bool written, bool used = true,
                  const char* why = "") {
    if (!st_.is_ok()) return *this;
    const size_t n = shapes_.size();
    if (!used) {
      if (!views.empty())
        st_ = invalid(plan_, role, " is given (", views.size(), " views) but unused (", why, "): pass an empty list");
      return *this;
    }
    if (views.size() != n) {
      st_ = invalid(plan_, role, " has ", views.size(), " views but the descriptor lists ", n, " tensors");
      return *this;
    }
    spans_.reserve(spans_.size() + n);
    for (size_t k = 0; k < n && st_.is_ok(); ++k) {
      if (!given(views[k])) {  // left default-constructed: named as missing (the contract's MissingTensorsAreNamed)
        st_ = invalid(plan_, Span::label(role, k), " is missing: expected a ", dt, " view of shape ", shapes_[k]);
        break;
      }
      // The indexed name is built only for a message (no allocation per tensor otherwise).
      if (!baracuda::detail::check_view(plan_, role, views[k], dt, shapes_[k], dev_).is_ok()) {
        st_ = baracuda::detail::check_view(plan_, Span::label(role, k).c_str(), views[k], dt, shapes_[k], dev_);
        break;
      }
      const int64_t numel = shape_numel(shapes_[k]);
      if (numel > 0 && !views[k].is_contiguous())
        st_ = invalid(plan_, Span::label(role, k), " strides ", views[k].strides, " for shape ", views[k].shape,
                      " are not dense row-major (every tensor of a list must be contiguous)");
      else if (numel > 0)
        add_span(role, static_cast<int64_t>(k), views[k].data, numel * static_cast<int64_t>(dtype_size(dt)), written);
    }
    return *this;
  }

  // An F32 [] scalar tensor: required when `used`, not given otherwise.
  template <class View>
  ListCheck& scalar(const char* name, const View& v, bool used, bool written, const char* flag) {
    if (!st_.is_ok()) return *this;
    if (!used) {
      if (given(v)) st_ = invalid(plan_, name, " is given but unused (", flag, " is false)");  // flag: never empty here
      return *this;
    }
    if (!given(v)) {
      st_ = flag[0] ? invalid(plan_, name, " is missing (", flag, " is true): expected an F32 view of shape []")
                    : invalid(plan_, name, " is missing: expected an F32 view of shape []");
      return *this;
    }
    st_ = baracuda::detail::check_view(plan_, name, v, DType::F32, Dims{}, dev_);
    if (st_.is_ok()) add_span(name, -1, v.data, 4, written);
    return *this;
  }

  // Written bytes overlap nothing else (sort + sweep).
  Status finish() {
    if (!st_.is_ok()) return st_;
    std::sort(spans_.begin(), spans_.end(), [](const Span& a, const Span& b) { return a.lo < b.lo; });
    const Span* far_all = nullptr;  // the span reaching furthest so far
    const Span* far_w = nullptr;    // ... among written spans
    for (const Span& s : spans_) {
      const Span* other = nullptr;
      if (far_w && s.lo < far_w->hi) other = far_w;
      else if (s.written && far_all && s.lo < far_all->hi) other = far_all;
      if (other)
        return invalid(plan_, s.name(), " overlaps ", other->name(),
                       " (a tensor that is written must not share memory with any other tensor)");
      if (!far_all || s.hi > far_all->hi) far_all = &s;
      if (s.written && (!far_w || s.hi > far_w->hi)) far_w = &s;
    }
    return Status::ok();
  }

 private:
  struct Span {
    uintptr_t lo, hi;
    bool written;
    const char* role;
    int64_t k;  // -1: a scalar tensor
    static std::string label(const char* role, size_t k) { return std::string(role) + "[" + std::to_string(k) + "]"; }
    std::string name() const { return k < 0 ? std::string(role) : label(role, static_cast<size_t>(k)); }
  };
  void add_span(const char* role, int64_t k, const void* p, int64_t bytes, bool written) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
    spans_.push_back(Span{lo, lo + static_cast<uintptr_t>(bytes), written, role, k});
  }
  const char* plan_;
  Device dev_;
  const std::vector<Dims>& shapes_;
  Status st_;
  std::vector<Span> spans_;
};

// ---- run skeleton ----
bool all_empty(const std::vector<Dims>& shapes) {
  for (const Dims& d : shapes)
    if (shape_numel(d) != 0) return false;
  return true;
}

// `nothing_written`: every output is empty (no launch; sku_for's variant "empty").
template <class Checks>
Status run_list(const PlanBase& plan, const Stream& stream, Workspace ws, Checks&& checks,
                cuda::ListLaunch& l, bool nothing_written) {
  if (plan.empty()) return baracuda::detail::empty_plan(plan.name());
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_stream(plan.name(), stream, plan.device()));
  BARACUDA_RETURN_IF_ERROR(checks());
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_workspace(plan.name(), plan.workspace_size(), ws.bytes, ws.ptr));
  if (nothing_written) return Status::ok();
  if (plan.sku().backend == Backend::CpuReference) {
    baracuda::detail::scribble_workspace(plan, ws);
    return ref::run(l);
  }
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(plan.device().ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  const uintptr_t w = reinterpret_cast<uintptr_t>(ws.ptr);
  l.workspace = ws.ptr ? reinterpret_cast<void*>((w + 15) & ~uintptr_t{15}) : nullptr;  // norm_workspace_bytes' pad
  l.sm_count = PlanAccess::sm_count(plan);
  l.stream = stream.native_handle();
  return cuda::launch(l);
#else
  return baracuda::detail::no_cuda(plan.name());
#endif
}

template <class Checks>
Result<KernelSku> sku_list(const PlanBase& plan, const Stream& stream, Workspace ws, Checks&& checks,
                           bool nothing_written) {
  if (plan.empty()) return baracuda::detail::empty_plan(plan.name());
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_stream(plan.name(), stream, plan.device()));
  BARACUDA_RETURN_IF_ERROR(checks());
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_workspace(plan.name(), plan.workspace_size(), ws.bytes, ws.ptr));
  KernelSku s = plan.sku();
  if (nothing_written) s.variant = "empty";
  return s;
}

// select()'s common tail: backend, SKU, variant, workspace. `nothing_written`:
// the descriptor's problem writes nothing (run()'s no-op): variant "empty", as
// sku_for() names it (the contract's SkuForMatchesRun: on the CPU exactly sku()).
template <class P>
Status setup(P& plan, const char* name, const Stream& stream, const PlanPreference& pref, DType dtype, const char* op,
             const std::vector<Dims>& shapes, int per_launch, bool norm, cuda::Op kind, bool nothing_written) {
  auto be = baracuda::detail::setup_plan(plan, name, kFamily, stream, pref, dtype, op);
  if (!be) return be.status();
  if (nothing_written) {
    PlanAccess::sku(plan).variant = "empty";
    return Status::ok();
  }
  if (be->backend == Backend::CpuReference) return Status::ok();
#ifdef BARACUDA_WITH_CUDA
  {
    baracuda::detail::DeviceGuard guard(stream.device().ordinal);
    BARACUDA_RETURN_IF_ERROR(guard.status());
    cuda::prepare(kind, dtype);
  }
#else
  (void)kind;
#endif
  const int launches = cuda::launches_for(shapes, per_launch);
  PlanAccess::sku(plan).variant =
      launches > 1 ? "multi_tensor.split" + std::to_string(launches) : std::string("multi_tensor");
  if (norm) PlanAccess::set_workspace(plan, cuda::norm_workspace_bytes(launches));
  return Status::ok();
}

cuda::RoleList mut_list(const std::vector<TensorMut>& v) {
  cuda::RoleList r;
  r.mut = v.empty() ? nullptr : v.data();
  return r;
}
cuda::RoleList ref_list(const std::vector<TensorRef>& v) {
  cuda::RoleList r;
  r.ref = v.empty() ? nullptr : v.data();
  return r;
}
const float* f32p(const TensorRef& v) { return static_cast<const float*>(v.data); }

// Fills the optimizer options every plan shares.
template <class Args>
void common_launch(cuda::ListLaunch& l, const OptimizerCommon& d, const Args& a) {
  l.dtype = d.param_dtype;
  l.n = static_cast<int>(d.shapes.size());
  l.shapes = d.shapes.data();
  l.lists[0] = mut_list(a.params);
  l.lists[1] = ref_list(a.grads);
  if (d.master_weights) l.lists[cuda::ListLaunch::kMaster] = mut_list(a.master);
  l.master = d.master_weights;
  l.stochastic = d.stochastic_rounding;
  l.seed = a.seed.seed, l.offset = a.seed.offset;
  l.lr = a.lr;
  l.lr_ptr = d.device_scalars ? f32p(a.lr_tensor) : nullptr;
  l.grad_scale = d.has_grad_scale ? f32p(a.grad_scale) : nullptr;
  l.found_inf_in = d.has_found_inf ? f32p(a.found_inf) : nullptr;
}

template <class Args>
ListCheck& common_checks(ListCheck& c, const OptimizerCommon& d, const Args& a) {
  c.list("params", a.params, d.param_dtype, true)
      .list("grads", a.grads, d.param_dtype, false)
      .list("master", a.master, DType::F32, true, d.master_weights, "descriptor.master_weights is false")
      .scalar("lr_tensor", a.lr_tensor, d.device_scalars, false, "descriptor.device_scalars")
      .scalar("grad_scale", a.grad_scale, d.has_grad_scale, false, "descriptor.has_grad_scale")
      .scalar("found_inf", a.found_inf, d.has_found_inf, false, "descriptor.has_found_inf");
  return c;
}

Status check_host_lr(const char* plan, const OptimizerCommon& d, double lr) {
  if (d.device_scalars || (lr >= 0.0 && std::isfinite(lr))) return Status::ok();
  return invalid(plan, "lr ", lr, " must be finite and >= 0");
}

}  // namespace
}  // namespace optim::detail

using namespace optim::detail;
namespace oc = optim::cuda;

// ---- AdamPlan ----------------------------------------------------------------------------
namespace {
constexpr const char* kAdam = "AdamPlan";
Status adam_checks(const AdamPlan& p, const AdamArgs& a) {
  const AdamDescriptor& d = p.descriptor();
  ListCheck c(p, d.shapes);
  common_checks(c, d, a)
      .list("exp_avg", a.exp_avg, DType::F32, true)
      .list("exp_avg_sq", a.exp_avg_sq, DType::F32, true)
      .list("max_exp_avg_sq", a.max_exp_avg_sq, DType::F32, true, d.amsgrad, "descriptor.amsgrad is false")
      .scalar("step_tensor", a.step_tensor, d.device_scalars, true, "descriptor.device_scalars");
  BARACUDA_RETURN_IF_ERROR(c.finish());
  BARACUDA_RETURN_IF_ERROR(check_host_lr(kAdam, d, a.lr));
  if (!d.device_scalars && a.step < 1) return baracuda::detail::invalid(kAdam, "step ", a.step, " must be >= 1 (the step after the increment)");
  return Status::ok();
}
oc::ListLaunch adam_launch(const AdamDescriptor& d, const AdamArgs& a) {
  oc::ListLaunch l;
  l.op = oc::Op::Adam;
  common_launch(l, d, a);
  l.lists[2] = mut_list(a.exp_avg);
  l.lists[3] = mut_list(a.exp_avg_sq);
  if (d.amsgrad) l.lists[4] = mut_list(a.max_exp_avg_sq);
  l.step = a.step;
  l.step_ptr = d.device_scalars ? static_cast<float*>(a.step_tensor.data) : nullptr;
  l.adam.beta1 = d.beta1, l.adam.beta2 = d.beta2, l.adam.eps = d.eps, l.adam.wd = d.weight_decay;
  l.adam.decoupled = d.decoupled_weight_decay, l.adam.amsgrad = d.amsgrad, l.adam.maximize = d.maximize;
  return l;
}
}  // namespace

Result<AdamPlan> AdamPlan::select(const Stream& stream, const AdamDescriptor& desc, const PlanPreference& pref) {
  AdamPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_common(kAdam, desc));
  BARACUDA_RETURN_IF_ERROR(check_beta(kAdam, "beta1", desc.beta1));
  BARACUDA_RETURN_IF_ERROR(check_beta(kAdam, "beta2", desc.beta2));
  if (!(desc.eps >= 0.0) || !std::isfinite(desc.eps))
    return baracuda::detail::invalid(kAdam, "eps ", desc.eps, " must be finite and >= 0");
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(setup(plan, kAdam, stream, pref, desc.param_dtype,
                                 desc.decoupled_weight_decay ? "optim.adamw" : "optim.adam", desc.shapes,
                                 oc::kTableTensors6, false, oc::Op::Adam,
                                 all_empty(desc.shapes) && !desc.device_scalars));
  return plan;
}
Status AdamPlan::can_implement(const AdamArgs& a) const { return adam_checks(*this, a); }
Status AdamPlan::run(const Stream& stream, Workspace ws, const AdamArgs& a) const {
  oc::ListLaunch l = adam_launch(desc_, a);
  return run_list(*this, stream, ws, [&] { return adam_checks(*this, a); }, l, all_empty(desc_.shapes) && !desc_.device_scalars);
}
Result<KernelSku> AdamPlan::sku_for(const Stream& stream, Workspace ws, const AdamArgs& a) const {
  return sku_list(*this, stream, ws, [&] { return adam_checks(*this, a); }, all_empty(desc_.shapes) && !desc_.device_scalars);
}

// ---- SgdPlan -----------------------------------------------------------------------------
namespace {
constexpr const char* kSgd = "SgdPlan";
Status sgd_checks(const SgdPlan& p, const SgdArgs& a) {
  const SgdDescriptor& d = p.descriptor();
  ListCheck c(p, d.shapes);
  common_checks(c, d, a).list("momentum_buffer", a.momentum_buffer, DType::F32, true, d.momentum != 0.0,
                              "descriptor.momentum is 0");
  BARACUDA_RETURN_IF_ERROR(c.finish());
  return check_host_lr(kSgd, d, a.lr);
}
oc::ListLaunch sgd_launch(const SgdDescriptor& d, const SgdArgs& a) {
  oc::ListLaunch l;
  l.op = oc::Op::Sgd;
  common_launch(l, d, a);
  if (d.momentum != 0.0) l.lists[2] = mut_list(a.momentum_buffer);
  l.sgd.momentum = d.momentum, l.sgd.dampening = d.dampening, l.sgd.wd = d.weight_decay;
  l.sgd.nesterov = d.nesterov, l.sgd.maximize = d.maximize, l.sgd.first = !a.buffers_initialized;
  return l;
}
}  // namespace

Result<SgdPlan> SgdPlan::select(const Stream& stream, const SgdDescriptor& desc, const PlanPreference& pref) {
  SgdPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_common(kSgd, desc));
  if (!(desc.momentum >= 0.0) || !std::isfinite(desc.momentum))
    return baracuda::detail::invalid(kSgd, "momentum ", desc.momentum, " must be finite and >= 0");
  if (!std::isfinite(desc.dampening)) return baracuda::detail::invalid(kSgd, "dampening ", desc.dampening, " must be finite");
  if (desc.nesterov && (desc.momentum <= 0.0 || desc.dampening != 0.0))
    return baracuda::detail::invalid(kSgd, "nesterov needs momentum > 0 and dampening 0 (got momentum ", desc.momentum,
                                     ", dampening ", desc.dampening, ")");
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(
      setup(plan, kSgd, stream, pref, desc.param_dtype, "optim.sgd", desc.shapes, oc::kTableTensors6, false, oc::Op::Sgd,
            all_empty(desc.shapes)));
  return plan;
}
Status SgdPlan::can_implement(const SgdArgs& a) const { return sgd_checks(*this, a); }
Status SgdPlan::run(const Stream& stream, Workspace ws, const SgdArgs& a) const {
  oc::ListLaunch l = sgd_launch(desc_, a);
  return run_list(*this, stream, ws, [&] { return sgd_checks(*this, a); }, l, all_empty(desc_.shapes));
}
Result<KernelSku> SgdPlan::sku_for(const Stream& stream, Workspace ws, const SgdArgs& a) const {
  return sku_list(*this, stream, ws, [&] { return sgd_checks(*this, a); }, all_empty(desc_.shapes));
}

// ---- LionPlan ----------------------------------------------------------------------------
namespace {
constexpr const char* kLion = "LionPlan";
Status lion_checks(const LionPlan& p, const LionArgs& a) {
  const LionDescriptor& d = p.descriptor();
  ListCheck c(p, d.shapes);
  common_checks(c, d, a).list("exp_avg", a.exp_avg, DType::F32, true);
  BARACUDA_RETURN_IF_ERROR(c.finish());
  return check_host_lr(kLion, d, a.lr);
}
oc::ListLaunch lion_launch(const LionDescriptor& d, const LionArgs& a) {
  oc::ListLaunch l;
  l.op = oc::Op::Lion;
  common_launch(l, d, a);
  l.lists[2] = mut_list(a.exp_avg);
  l.lion.beta1 = d.beta1, l.lion.beta2 = d.beta2, l.lion.wd = d.weight_decay, l.lion.maximize = d.maximize;
  return l;
}
}  // namespace

Result<LionPlan> LionPlan::select(const Stream& stream, const LionDescriptor& desc, const PlanPreference& pref) {
  LionPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_common(kLion, desc));
  BARACUDA_RETURN_IF_ERROR(check_beta(kLion, "beta1", desc.beta1));
  BARACUDA_RETURN_IF_ERROR(check_beta(kLion, "beta2", desc.beta2));
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(
      setup(plan, kLion, stream, pref, desc.param_dtype, "optim.lion", desc.shapes, oc::kTableTensors6, false, oc::Op::Lion,
            all_empty(desc.shapes)));
  return plan;
}
Status LionPlan::can_implement(const LionArgs& a) const { return lion_checks(*this, a); }
Status LionPlan::run(const Stream& stream, Workspace ws, const LionArgs& a) const {
  oc::ListLaunch l = lion_launch(desc_, a);
  return run_list(*this, stream, ws, [&] { return lion_checks(*this, a); }, l, all_empty(desc_.shapes));
}
Result<KernelSku> LionPlan::sku_for(const Stream& stream, Workspace ws, const LionArgs& a) const {
  return sku_list(*this, stream, ws, [&] { return lion_checks(*this, a); }, all_empty(desc_.shapes));
}

// ---- utilities ---------------------------------------------------------------------------
namespace {
Status check_list_desc(const char* plan, const TensorListDescriptor& d) {
  BARACUDA_RETURN_IF_ERROR(check_float_dtype(plan, "dtype", d.dtype));
  return check_shapes(plan, d.shapes);
}
oc::ListLaunch util_launch(oc::Op op, const TensorListDescriptor& d, oc::RoleList list) {
  oc::ListLaunch l;
  l.op = op;
  l.dtype = d.dtype;
  l.n = static_cast<int>(d.shapes.size());
  l.shapes = d.shapes.data();
  l.lists[0] = list;
  return l;
}
Status check_norm_type(const char* plan, NormType t) {
  if (t == NormType::L2 || t == NormType::Inf) return Status::ok();
  return baracuda::detail::invalid(plan, "norm_type ", static_cast<int>(t), " is not L2 or Inf");
}

constexpr const char* kNorm = "GlobalNormPlan";
constexpr const char* kClip = "ClipGradNormPlan";
constexpr const char* kUnscale = "NonFiniteCheckUnscalePlan";
constexpr const char* kScale = "MultiTensorScalePlan";
constexpr const char* kZero = "MultiTensorZeroPlan";

Status norm_checks(const GlobalNormPlan& p, const GlobalNormArgs& a) {
  ListCheck c(p, p.descriptor().shapes);
  c.list("tensors", a.tensors, p.descriptor().dtype, false).scalar("out", a.out, true, true, "");
  return c.finish();
}
Status clip_checks(const ClipGradNormPlan& p, const ClipGradNormArgs& a) {
  const ClipGradNormDescriptor& d = p.descriptor();
  ListCheck c(p, d.shapes);
  c.list("grads", a.grads, d.dtype, true)
      .scalar("total_norm", a.total_norm, true, true, "")
      .scalar("found_inf", a.found_inf, d.has_found_inf, true, "descriptor.has_found_inf");
  return c.finish();
}
Status unscale_checks(const NonFiniteCheckUnscalePlan& p, const NonFiniteCheckUnscaleArgs& a) {
  ListCheck c(p, p.descriptor().shapes);
  c.list("grads", a.grads, p.descriptor().dtype, true)
      .scalar("inv_scale", a.inv_scale, true, false, "")
      .scalar("found_inf", a.found_inf, true, true, "");
  return c.finish();
}
Status scale_checks(const MultiTensorScalePlan& p, const MultiTensorScaleArgs& a) {
  const MultiTensorScaleDescriptor& d = p.descriptor();
  ListCheck c(p, d.shapes);
  c.list("tensors", a.tensors, d.dtype, true)
      .scalar("scale_tensor", a.scale_tensor, d.device_scalar, false, "descriptor.device_scalar");
  BARACUDA_RETURN_IF_ERROR(c.finish());
  if (!d.device_scalar && std::isnan(a.scale)) return baracuda::detail::invalid(kScale, "scale is NaN");
  return Status::ok();
}
Status zero_checks(const MultiTensorZeroPlan& p, const MultiTensorZeroArgs& a) {
  ListCheck c(p, p.descriptor().shapes);
  c.list("tensors", a.tensors, p.descriptor().dtype, true);
  return c.finish();
}
}  // namespace

Result<GlobalNormPlan> GlobalNormPlan::select(const Stream& stream, const GlobalNormDescriptor& desc,
                                              const PlanPreference& pref) {
  GlobalNormPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_list_desc(kNorm, desc));
  BARACUDA_RETURN_IF_ERROR(check_norm_type(kNorm, desc.norm_type));
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(setup(plan, kNorm, stream, pref, desc.dtype,
                                 desc.norm_type == NormType::L2 ? "optim.global_norm_l2" : "optim.global_norm_inf",
                                 desc.shapes, oc::kTableTensors1, true, oc::Op::Norm, false));
  return plan;
}
Status GlobalNormPlan::can_implement(const GlobalNormArgs& a) const { return norm_checks(*this, a); }
Status GlobalNormPlan::run(const Stream& stream, Workspace ws, const GlobalNormArgs& a) const {
  oc::ListLaunch l = util_launch(oc::Op::Norm, desc_, ref_list(a.tensors));
  l.inf_norm = desc_.norm_type == NormType::Inf;
  l.norm_out = static_cast<float*>(a.out.data);
  return run_list(*this, stream, ws, [&] { return norm_checks(*this, a); }, l, false);
}
Result<KernelSku> GlobalNormPlan::sku_for(const Stream& stream, Workspace ws, const GlobalNormArgs& a) const {
  return sku_list(*this, stream, ws, [&] { return norm_checks(*this, a); }, false);
}

Result<ClipGradNormPlan> ClipGradNormPlan::select(const Stream& stream, const ClipGradNormDescriptor& desc,
                                                  const PlanPreference& pref) {
  ClipGradNormPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_list_desc(kClip, desc));
  BARACUDA_RETURN_IF_ERROR(check_norm_type(kClip, desc.norm_type));
  if (!(desc.max_norm > 0.0) || !std::isfinite(desc.max_norm))
    return baracuda::detail::invalid(kClip, "max_norm ", desc.max_norm, " must be finite and > 0");
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(setup(plan, kClip, stream, pref, desc.dtype, "optim.clip_grad_norm", desc.shapes,
                                 oc::kTableTensors1, true, oc::Op::Clip, false));
  return plan;
}
Status ClipGradNormPlan::can_implement(const ClipGradNormArgs& a) const { return clip_checks(*this, a); }
Status ClipGradNormPlan::run(const Stream& stream, Workspace ws, const ClipGradNormArgs& a) const {
  oc::ListLaunch l = util_launch(oc::Op::Clip, desc_, mut_list(a.grads));
  l.inf_norm = desc_.norm_type == NormType::Inf;
  l.max_norm = static_cast<float>(desc_.max_norm);
  l.norm_out = static_cast<float*>(a.total_norm.data);
  l.found_inf_out = desc_.has_found_inf ? static_cast<float*>(a.found_inf.data) : nullptr;
  return run_list(*this, stream, ws, [&] { return clip_checks(*this, a); }, l, false);
}
Result<KernelSku> ClipGradNormPlan::sku_for(const Stream& stream, Workspace ws, const ClipGradNormArgs& a) const {
  return sku_list(*this, stream, ws, [&] { return clip_checks(*this, a); }, false);
}

Result<NonFiniteCheckUnscalePlan> NonFiniteCheckUnscalePlan::select(const Stream& stream,
                                                                    const TensorListDescriptor& desc,
                                                                    const PlanPreference& pref) {
  NonFiniteCheckUnscalePlan plan;
  BARACUDA_RETURN_IF_ERROR(check_list_desc(kUnscale, desc));
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(setup(plan, kUnscale, stream, pref, desc.dtype, "optim.non_finite_check_unscale",
                                 desc.shapes, oc::kTableTensors1, false, oc::Op::Unscale,
                                 all_empty(desc.shapes)));
  return plan;
}
Status NonFiniteCheckUnscalePlan::can_implement(const NonFiniteCheckUnscaleArgs& a) const {
  return unscale_checks(*this, a);
}
Status NonFiniteCheckUnscalePlan::run(const Stream& stream, Workspace ws, const NonFiniteCheckUnscaleArgs& a) const {
  oc::ListLaunch l = util_launch(oc::Op::Unscale, desc_, mut_list(a.grads));
  l.scale_ptr = f32p(a.inv_scale);
  l.found_inf_out = static_cast<float*>(a.found_inf.data);
  return run_list(*this, stream, ws, [&] { return unscale_checks(*this, a); }, l, all_empty(desc_.shapes));
}
Result<KernelSku> NonFiniteCheckUnscalePlan::sku_for(const Stream& stream, Workspace ws,
                                                     const NonFiniteCheckUnscaleArgs& a) const {
  return sku_list(*this, stream, ws, [&] { return unscale_checks(*this, a); }, all_empty(desc_.shapes));
}

Result<MultiTensorScalePlan> MultiTensorScalePlan::select(const Stream& stream, const MultiTensorScaleDescriptor& desc,
                                                          const PlanPreference& pref) {
  MultiTensorScalePlan plan;
  BARACUDA_RETURN_IF_ERROR(check_list_desc(kScale, desc));
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(
      setup(plan, kScale, stream, pref, desc.dtype, "optim.scale", desc.shapes, oc::kTableTensors1, false, oc::Op::Scale,
            all_empty(desc.shapes)));
  return plan;
}
Status MultiTensorScalePlan::can_implement(const MultiTensorScaleArgs& a) const { return scale_checks(*this, a); }
Status MultiTensorScalePlan::run(const Stream& stream, Workspace ws, const MultiTensorScaleArgs& a) const {
  oc::ListLaunch l = util_launch(oc::Op::Scale, desc_, mut_list(a.tensors));
  l.scale = static_cast<float>(a.scale);
  l.scale_ptr = desc_.device_scalar ? f32p(a.scale_tensor) : nullptr;
  return run_list(*this, stream, ws, [&] { return scale_checks(*this, a); }, l, all_empty(desc_.shapes));
}
Result<KernelSku> MultiTensorScalePlan::sku_for(const Stream& stream, Workspace ws,
                                                const MultiTensorScaleArgs& a) const {
  return sku_list(*this, stream, ws, [&] { return scale_checks(*this, a); }, all_empty(desc_.shapes));
}

Result<MultiTensorZeroPlan> MultiTensorZeroPlan::select(const Stream& stream, const TensorListDescriptor& desc,
                                                        const PlanPreference& pref) {
  MultiTensorZeroPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_list_desc(kZero, desc));
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(
      setup(plan, kZero, stream, pref, desc.dtype, "optim.zero", desc.shapes, oc::kTableTensors1, false, oc::Op::Zero,
            all_empty(desc.shapes)));
  return plan;
}
Status MultiTensorZeroPlan::can_implement(const MultiTensorZeroArgs& a) const { return zero_checks(*this, a); }
Status MultiTensorZeroPlan::run(const Stream& stream, Workspace ws, const MultiTensorZeroArgs& a) const {
  oc::ListLaunch l = util_launch(oc::Op::Zero, desc_, mut_list(a.tensors));
  return run_list(*this, stream, ws, [&] { return zero_checks(*this, a); }, l, all_empty(desc_.shapes));
}
Result<KernelSku> MultiTensorZeroPlan::sku_for(const Stream& stream, Workspace ws, const MultiTensorZeroArgs& a) const {
  return sku_list(*this, stream, ws, [&] { return zero_checks(*this, a); }, all_empty(desc_.shapes));
}

}  // namespace baracuda
