// CrossEntropyPlan / CrossEntropyBackwardPlan: descriptor validation, backend
// choice, argument checks (with the CUDA kernels' layout rule), the CUDA path
// of the actual views (path.cpp), and dispatch to the CPU reference or the
// CUDA kernels.
#include <cmath>
#include <cstdint>
#include <string>

#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/loss/launch.hpp"
#include "ops/loss/path.hpp"
#include "ops/loss/reference.hpp"

namespace baracuda {

const char* loss_reduction_name(LossReduction r) {
  switch (r) {
    case LossReduction::None: return "none";
    case LossReduction::Mean: return "mean";
    case LossReduction::Sum: return "sum";
  }
  return "unknown";
}

namespace loss::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"CrossEntropy", "loss", BARACUDA_KERNELS_LOSS};

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

DType lse_dtype_of(const CrossEntropyDescriptor& d) { return d.dtype == DType::F64 ? DType::F64 : DType::F32; }
Dims loss_shape_of(const CrossEntropyDescriptor& d) { return d.reduction == LossReduction::None ? Dims{d.rows} : Dims{}; }
bool is_probs(const CrossEntropyDescriptor& d) { return d.target == CrossEntropyTarget::Probs; }
Dims target_shape_of(const CrossEntropyDescriptor& d) { return is_probs(d) ? Dims{d.rows, d.classes} : Dims{d.rows}; }
DType target_dtype_of(const CrossEntropyDescriptor& d) { return is_probs(d) ? d.dtype : d.index_dtype; }

// The forward descriptor's rules; `f` prefixes field names ("" or "forward.").
Status validate(const char* plan, const char* f, const CrossEntropyDescriptor& d) {
  if (!(d.dtype == DType::F32 || d.dtype == DType::F64 || d.dtype == DType::F16 || d.dtype == DType::BF16))
    return unsupported(plan, f, "dtype ", d.dtype, " is not supported (f32, f64, f16, bf16)");
  if (d.rows < 0) return invalid(plan, f, "rows ", d.rows, " must be >= 0");
  if (d.classes < 1)
    return invalid(plan, f, "classes ", d.classes, " must be >= 1 (a row needs at least one class, as in PyTorch)");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "logits [rows, classes]", {d.rows, d.classes}));
  if (d.target != CrossEntropyTarget::Index && d.target != CrossEntropyTarget::Probs)
    return invalid(plan, f, "target ", d.target, " is not a CrossEntropyTarget");
  if (d.reduction != LossReduction::None && d.reduction != LossReduction::Mean && d.reduction != LossReduction::Sum)
    return invalid(plan, f, "reduction ", d.reduction, " is not a LossReduction");
  if (!is_probs(d) && d.index_dtype != DType::I32 && d.index_dtype != DType::I64)
    return invalid(plan, f, "index_dtype ", d.index_dtype, " must be i32 or i64");
  if (is_probs(d) && d.ignore_index >= 0)
    return invalid(plan, f, "ignore_index ", d.ignore_index,
                   " must be negative with probability targets (they ignore no row, as in PyTorch)");
  if (!std::isfinite(d.label_smoothing) || d.label_smoothing < 0 || d.label_smoothing > 1)
    return invalid(plan, f, "label_smoothing ", d.label_smoothing, " must be in [0, 1]");
  if (!std::isfinite(d.z_loss) || d.z_loss < 0) return invalid(plan, f, "z_loss ", d.z_loss, " must be finite and >= 0");
  if (d.loss_dtype != DType::F32 && d.loss_dtype != d.dtype)
    return invalid(plan, f, "loss_dtype ", d.loss_dtype, " must be f32 or the logits' dtype ", d.dtype);
  return Status::ok();
}

Status validate_backward(const char* plan, const CrossEntropyBackwardDescriptor& d) {
  BARACUDA_RETURN_IF_ERROR(validate(plan, "forward.", d.forward));
  if (d.forward.with_grad)
    return invalid(plan, "forward.with_grad is true (the backward computes dlogits from the saved lse; with_grad is "
                         "the forward's fused gradient)");
  return Status::ok();
}

bool on_cuda(const PlanBase& plan) { return plan.sku().backend != Backend::CpuReference; }

// The CUDA kernels' layout rule: unit class stride (Unsupported, naming the tensor).
Status cuda_layout(const PlanBase& plan, const CrossEntropyDescriptor& d,
                   std::initializer_list<std::pair<const char*, TensorRef>> mats) {
  for (const auto& [name, t] : mats)
    if (t.data && t.shape.rank == 2 && d.classes > 1 && d.rows > 0 && t.strides[1] != 1)
      return unsupported(plan.name(), name, " strides ", t.strides, " for shape ", t.shape,
                         ": the CUDA kernels need the class axis unit-stride");
  return Status::ok();
}

baracuda::detail::ArgCheck check_forward(const PlanBase& plan, const CrossEntropyDescriptor& d, const CrossEntropyArgs& a) {
  baracuda::detail::ArgCheck c(plan);
  const Dims mat{d.rows, d.classes}, ls = loss_shape_of(d);
  c.input("logits", a.logits, d.dtype, mat)
      .input("target", a.target, target_dtype_of(d), target_shape_of(d))
      .optional_input("weight", a.weight, d.has_weight, d.dtype, Dims{d.classes},
                      "weight tensor is missing (descriptor.has_weight is true)",
                      "weight is given but descriptor.has_weight is false")
      .optional_input("dloss", a.dloss, d.with_grad, d.loss_dtype, ls, "dloss tensor is missing (descriptor.with_grad is true)",
                      "dloss is given but descriptor.with_grad is false")
      .output("loss", a.loss, d.loss_dtype, ls);
  // lse is optional: a view never filled in means "not wanted"; one given must match.
  if (a.lse.data != nullptr || a.lse.shape.rank != 0) c.output("lse", a.lse, lse_dtype_of(d), Dims{d.rows});
  if (d.with_grad) c.output("dlogits", a.dlogits, d.dtype, mat, "descriptor.with_grad is true");
  else c.optional_output("dlogits", a.dlogits, false, d.dtype, mat, "dlogits is given but descriptor.with_grad is false");
  c.allow_in_place("dlogits", "logits").disjoint();
  if (on_cuda(plan))
    c.rule([&] { return cuda_layout(plan, d, {{"logits", a.logits}, {"target", a.target}, {"dlogits", a.dlogits}}); });
  return c;
}

baracuda::detail::ArgCheck check_backward(const PlanBase& plan, const CrossEntropyBackwardDescriptor& bd,
                                          const CrossEntropyBackwardArgs& a) {
  const CrossEntropyDescriptor& d = bd.forward;
  baracuda::detail::ArgCheck c(plan);
  const Dims mat{d.rows, d.classes};
  c.input("logits", a.logits, d.dtype, mat)
      .input("target", a.target, target_dtype_of(d), target_shape_of(d))
      .optional_input("weight", a.weight, d.has_weight, d.dtype, Dims{d.classes},
                      "weight tensor is missing (forward.has_weight is true)",
                      "weight is given but forward.has_weight is false")
      .input("lse", a.lse, lse_dtype_of(d), Dims{d.rows}, "the forward's saved lse")
      .input("dloss", a.dloss, d.loss_dtype, loss_shape_of(d))
      .output("dlogits", a.dlogits, d.dtype, mat)
      .allow_in_place("dlogits", "logits")
      .disjoint();
  if (on_cuda(plan))
    c.rule([&] { return cuda_layout(plan, d, {{"logits", a.logits}, {"target", a.target}, {"dlogits", a.dlogits}}); });
  return c;
}

// ---- launches ----------------------------------------------------------------------------
// The launch of these tensors; without them (select()), of contiguous aligned views.
cuda::Launch make_launch(const PlanBase& plan, const CrossEntropyDescriptor& d, cuda::Mode mode) {
  cuda::Launch l;
  l.mode = mode;
  l.dtype = d.dtype;
  l.index_dtype = d.index_dtype;
  l.loss_f32 = d.loss_dtype == DType::F32;
  l.probs = is_probs(d);
  l.has_weight = d.has_weight;
  l.eps = d.label_smoothing;
  l.z = d.z_loss;
  l.ignore_index = d.ignore_index;
  l.reduction = d.reduction;
  l.rows = d.rows;
  l.classes = d.classes;
  l.sm_count = baracuda::detail::PlanAccess::sm_count(plan);
  l.arch = plan.sku().arch;
  static const char aligned[16] alignas(16) = {};
  l.logits = aligned;
  l.logits_rs = d.classes;
  l.target = aligned;
  l.target_s = l.probs ? d.classes : 1;
  if (mode != cuda::Mode::Forward) {
    l.dlogits = const_cast<char*>(aligned);
    l.dlogits_rs = d.classes;
  }
  return l;
}

int64_t stride0(const TensorRef& t) { return t.shape.rank >= 1 ? t.strides[0] : 0; }

void bind_common(cuda::Launch& l, const TensorRef& logits, const TensorRef& target, const TensorRef& weight) {
  l.logits = logits.data;
  l.logits_rs = stride0(logits);
  l.target = target.data;
  l.target_s = stride0(target);
  l.weight = weight.data;
  l.weight_s = stride0(weight);
}

cuda::Launch forward_launch(const PlanBase& plan, const CrossEntropyDescriptor& d, const CrossEntropyArgs* a) {
  cuda::Launch l = make_launch(plan, d, d.with_grad ? cuda::Mode::Fused : cuda::Mode::Forward);
  if (a) {
    bind_common(l, a->logits, a->target, a->weight);
    l.loss = a->loss.data;
    l.loss_s = stride0(a->loss);
    l.lse = a->lse.data;
    l.lse_s = stride0(a->lse);
    l.dloss = a->dloss.data;
    l.dloss_s = stride0(a->dloss);
    l.dlogits = a->dlogits.data;
    l.dlogits_rs = stride0(a->dlogits);
  }
  choose_path(l);
  return l;
}

cuda::Launch backward_launch(const PlanBase& plan, const CrossEntropyBackwardDescriptor& bd, const CrossEntropyBackwardArgs* a) {
  cuda::Launch l = make_launch(plan, bd.forward, cuda::Mode::Backward);
  if (a) {
    bind_common(l, a->logits, a->target, a->weight);
    l.lse = const_cast<void*>(a->lse.data);
    l.lse_s = stride0(a->lse);
    l.dloss = a->dloss.data;
    l.dloss_s = stride0(a->dloss);
    l.dlogits = a->dlogits.data;
    l.dlogits_rs = stride0(a->dlogits);
  }
  choose_path(l);
  return l;
}

Status launch_cuda(const PlanBase& plan, cuda::Launch l, const Stream& stream, Workspace ws) {
#ifdef BARACUDA_WITH_CUDA
  (void)plan;  // the kernels name their plan in their errors
  const WorkspaceLayout w = workspace_layout(l);
  // The scratch needs 8- and 16-byte slots: align any workspace pointer up (workspace_layout() has the pad).
  auto* base = ws.ptr ? reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(ws.ptr) + 15) / 16 * 16) : nullptr;
  l.divisor = w.divisor >= 0 ? base + w.divisor : nullptr;
  l.row_loss = w.row_loss >= 0 ? base + w.row_loss : nullptr;
  l.partials = w.partials >= 0 ? base + w.partials : nullptr;
  if (l.mode != cuda::Mode::Backward && l.reduction != LossReduction::None) l.scalar_loss = l.loss;
  l.stream = stream.native_handle();
  return cuda::launch(l);
#else
  (void)l, (void)stream, (void)ws;
  return baracuda::detail::no_cuda(plan.name());
#endif
}

// The select epilogue of both plans: variant and workspace of contiguous views.
Status finish_setup(PlanBase& plan, const char* name, const CrossEntropyDescriptor& d, Backend backend,
                    const cuda::Launch& l) {
  // Mean / Sum write a rank-0 loss even for zero rows (NaN / 0); the gradient
  // alone (backward) and None with zero rows write nothing.
  const bool nothing = d.rows == 0 && (l.mode == cuda::Mode::Backward || d.reduction == LossReduction::None);
  if (nothing) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";  // run() launches nothing
  } else if (backend != Backend::CpuReference) {
    baracuda::detail::PlanAccess::sku(plan).variant = variant_of(l);
    if (l.chunks > 0)
      BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(name, "split workspace", {d.rows, l.chunks, cuda::kPartialBytes}));
    baracuda::detail::PlanAccess::set_workspace(plan, workspace_layout(l).bytes);
  }
  return Status::ok();
}

}  // namespace
}  // namespace loss::detail

using namespace loss::detail;

// ---- CrossEntropyPlan ----------------------------------------------------------------------
Result<CrossEntropyPlan> CrossEntropyPlan::select(const Stream& stream, const CrossEntropyDescriptor& desc,
                                                  const PlanPreference& pref) {
  CrossEntropyPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate("CrossEntropyPlan", "", desc));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, "CrossEntropyPlan", kFamily, stream, pref, desc.dtype,
                                         desc.with_grad ? "cross_entropy.forward_backward" : "cross_entropy.forward");
  if (!be) return be.status();
  BARACUDA_RETURN_IF_ERROR(finish_setup(plan, "CrossEntropyPlan", desc, be->backend, forward_launch(plan, desc, nullptr)));
  return plan;
}

Dims CrossEntropyPlan::loss_shape() const { return loss_shape_of(desc_); }
DType CrossEntropyPlan::lse_dtype() const { return lse_dtype_of(desc_); }

Status CrossEntropyPlan::can_implement(const CrossEntropyArgs& a) const { return check_forward(*this, desc_, a).status(); }

Result<KernelSku> CrossEntropyPlan::sku_for(const Stream& stream, Workspace ws, const CrossEntropyArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_forward(*this, desc_, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    if (s.backend != Backend::CpuReference && s.variant != "empty") s.variant = variant_of(forward_launch(*this, desc_, &a));
    return s;
  });
}

Status CrossEntropyPlan::run(const Stream& stream, Workspace ws, const CrossEntropyArgs& a) const {
  auto cpu = [&] {
    loss::ref::Problem p;
    p.plan = name();
    p.d = desc_;
    p.logits = a.logits, p.target = a.target, p.weight = a.weight, p.dloss = a.dloss;
    p.loss = a.loss, p.lse = a.lse, p.dlogits = a.dlogits;
    return loss::ref::run(p);
  };
  return baracuda::detail::run_plan(*this, stream, ws, check_forward(*this, desc_, a), cpu,
                                    [&] { return launch_cuda(*this, forward_launch(*this, desc_, &a), stream, ws); });
}

// ---- CrossEntropyBackwardPlan --------------------------------------------------------------
Result<CrossEntropyBackwardPlan> CrossEntropyBackwardPlan::select(const Stream& stream,
                                                                  const CrossEntropyBackwardDescriptor& desc,
                                                                  const PlanPreference& pref) {
  CrossEntropyBackwardPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate_backward("CrossEntropyBackwardPlan", desc));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, "CrossEntropyBackwardPlan", kFamily, stream, pref, desc.forward.dtype,
                                         "cross_entropy.backward");
  if (!be) return be.status();
  BARACUDA_RETURN_IF_ERROR(
      finish_setup(plan, "CrossEntropyBackwardPlan", desc.forward, be->backend, backward_launch(plan, desc, nullptr)));
  return plan;
}

Dims CrossEntropyBackwardPlan::loss_shape() const { return loss_shape_of(desc_.forward); }
DType CrossEntropyBackwardPlan::lse_dtype() const { return lse_dtype_of(desc_.forward); }

Status CrossEntropyBackwardPlan::can_implement(const CrossEntropyBackwardArgs& a) const {
  return check_backward(*this, desc_, a).status();
}

Result<KernelSku> CrossEntropyBackwardPlan::sku_for(const Stream& stream, Workspace ws,
                                                    const CrossEntropyBackwardArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_backward(*this, desc_, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    if (s.backend != Backend::CpuReference && s.variant != "empty") s.variant = variant_of(backward_launch(*this, desc_, &a));
    return s;
  });
}

Status CrossEntropyBackwardPlan::run(const Stream& stream, Workspace ws, const CrossEntropyBackwardArgs& a) const {
  auto cpu = [&] {
    loss::ref::Problem p;
    p.plan = name();
    p.d = desc_.forward;
    p.backward = true;
    p.logits = a.logits, p.target = a.target, p.weight = a.weight, p.lse_in = a.lse, p.dloss = a.dloss;
    p.dlogits = a.dlogits;
    return loss::ref::run(p);
  };
  return baracuda::detail::run_plan(*this, stream, ws, check_backward(*this, desc_, a), cpu,
                                    [&] { return launch_cuda(*this, backward_launch(*this, desc_, &a), stream, ws); });
}

}  // namespace baracuda
