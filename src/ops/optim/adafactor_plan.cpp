// AdafactorPlan: descriptor rules, the argument list (per-parameter views,
// list lengths, the state each rank needs, overlaps between every written
// tensor and every other) and dispatch to the CPU reference or the kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/ops/optim_adafactor.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/overlap.hpp"
#include "core/plan_shell.hpp"
#include "ops/optim/adafactor_launch.hpp"
#include "ops/optim/adafactor_reference.hpp"

namespace baracuda {
namespace optim::adafactor_detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Optimizer", "optim", BARACUDA_KERNELS_OPTIM};
constexpr const char* kPlan = "AdafactorPlan";

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

std::string at(const char* list, size_t i) { return std::string(list) + "[" + std::to_string(i) + "]"; }

bool never_filled(const TensorRef& t) { return t.data == nullptr && t.shape.rank == 0; }

Status hyper(const char* what, double v, bool ok, const char* rule) {
  if (std::isfinite(v) && ok) return Status::ok();
  return invalid(kPlan, what, " ", v, " must be finite and ", rule);
}

// One view of the list: missing (never filled), then the shared view rules,
// then dense row-major.
Status check_list_view(const std::string& name, const TensorRef& v, bool written, DType t, const Dims& shape,
                       Device dev, bool dense) {
  if (never_filled(v)) return invalid(kPlan, name, " is missing: expected a ", t, " view of shape ", shape);
  BARACUDA_RETURN_IF_ERROR(written ? baracuda::detail::check_output(kPlan, name.c_str(), TensorMut(const_cast<void*>(v.data), v.dtype, v.device, v.shape, v.strides, v.capacity), t, shape, dev)
                                   : baracuda::detail::check_view(kPlan, name.c_str(), v, t, shape, dev));
  if (dense && shape_numel(shape) > 0 && !v.is_contiguous())
    return unsupported(kPlan, name, " strides ", v.strides, " for shape ", shape,
                       " are not supported on CUDA (dense row-major views only)");
  return Status::ok();
}

struct Named {
  std::string name;
  TensorRef view;
  bool written;
  uintptr_t lo, hi;      // byte range
  std::string may_be;    // an output: the input it may be exactly (out_of_place)
};

Status check_lists(const AdafactorPlan& p, const AdafactorArgs& a) {
  const AdafactorDescriptor& d = p.descriptor();
  const size_t n = d.shapes.size();
  const bool oop = d.out_of_place;
  const bool dense = p.sku().backend != Backend::CpuReference;
  bool any_factored = false, any_vector = false;
  for (size_t i = 0; i < n; ++i) (p.factored(i) ? any_factored : any_vector) = true;
  auto length = [&](const char* list, size_t got, bool may_be_empty) -> Status {
    if (got == n || (got == 0 && may_be_empty)) return Status::ok();
    return invalid(kPlan, list, " has ", got, " entries but the descriptor has ", n, " shapes",
                   may_be_empty ? " (or none: no parameter needs it)" : "");
  };
  BARACUDA_RETURN_IF_ERROR(length("params", a.params.size(), false));
  BARACUDA_RETURN_IF_ERROR(length("grads", a.grads.size(), false));
  BARACUDA_RETURN_IF_ERROR(length("row_vars", a.row_vars.size(), !any_factored));
  BARACUDA_RETURN_IF_ERROR(length("col_vars", a.col_vars.size(), !any_factored));
  BARACUDA_RETURN_IF_ERROR(length("variances", a.variances.size(), !any_vector));
  if (oop) {
    BARACUDA_RETURN_IF_ERROR(length("params_out", a.params_out.size(), false));
    BARACUDA_RETURN_IF_ERROR(length("row_vars_out", a.row_vars_out.size(), !any_factored));
    BARACUDA_RETURN_IF_ERROR(length("col_vars_out", a.col_vars_out.size(), !any_factored));
    BARACUDA_RETURN_IF_ERROR(length("variances_out", a.variances_out.size(), !any_vector));
  } else {
    for (const auto& [list, v] : {std::pair{"params_out", &a.params_out}, std::pair{"row_vars_out", &a.row_vars_out},
                                  std::pair{"col_vars_out", &a.col_vars_out},
                                  std::pair{"variances_out", &a.variances_out}})
      if (!v->empty())
        return invalid(kPlan, list, " is given but descriptor.out_of_place is false (the inputs are updated in place)");
  }

  std::vector<Named> views;
  auto add = [&](std::string name, const TensorRef& v, bool written, std::string may_be = {}) {
    if (v.data == nullptr || v.numel() == 0) return;
    const uintptr_t lo = reinterpret_cast<uintptr_t>(v.data);
    views.push_back({std::move(name), v, written, lo, lo + static_cast<uintptr_t>(v.span()) * dtype_size(v.dtype),
                     std::move(may_be)});
  };
  const Device dev = p.device();
  // One state or parameter tensor: the input (written unless out_of_place) and its output.
  auto one = [&](const char* list, const std::vector<TensorMut>& in, const std::vector<TensorMut>& out, size_t i,
                 DType t, const Dims& shape) -> Status {
    BARACUDA_RETURN_IF_ERROR(check_list_view(at(list, i), in[i], !oop, t, shape, dev, dense));
    add(at(list, i), in[i], !oop);
    if (!oop) return Status::ok();
    const std::string out_name = std::string(list) + "_out[" + std::to_string(i) + "]";
    BARACUDA_RETURN_IF_ERROR(check_list_view(out_name, out[i], true, t, shape, dev, dense));
    add(out_name, out[i], true, at(list, i));
    return Status::ok();
  };
  for (size_t i = 0; i < n; ++i) {
    const Dims& s = d.shapes[i];
    BARACUDA_RETURN_IF_ERROR(one("params", a.params, a.params_out, i, d.dtype, s));
    BARACUDA_RETURN_IF_ERROR(check_list_view(at("grads", i), a.grads[i], false, d.dtype, s, dev, dense));
    add(at("grads", i), a.grads[i], false);
    auto unused = [&](const char* list, const std::vector<TensorMut>& v) -> Status {
      if (v.empty() || v[i].data == nullptr) return Status::ok();
      return invalid(kPlan, at(list, i), " is given but parameter ", i, " of shape ", s, " has rank ", s.rank,
                     p.factored(i) ? " (rank >= 2 keeps row_vars / col_vars)" : " (rank < 2 keeps variances)");
    };
    if (p.factored(i)) {
      BARACUDA_RETURN_IF_ERROR(one("row_vars", a.row_vars, a.row_vars_out, i, DType::F32, p.row_var_shape(i)));
      BARACUDA_RETURN_IF_ERROR(one("col_vars", a.col_vars, a.col_vars_out, i, DType::F32, p.col_var_shape(i)));
      BARACUDA_RETURN_IF_ERROR(unused("variances", a.variances));
      if (oop) BARACUDA_RETURN_IF_ERROR(unused("variances_out", a.variances_out));
    } else {
      BARACUDA_RETURN_IF_ERROR(one("variances", a.variances, a.variances_out, i, DType::F32, s));
      BARACUDA_RETURN_IF_ERROR(unused("row_vars", a.row_vars));
      BARACUDA_RETURN_IF_ERROR(unused("col_vars", a.col_vars));
      if (oop) BARACUDA_RETURN_IF_ERROR(unused("row_vars_out", a.row_vars_out));
      if (oop) BARACUDA_RETURN_IF_ERROR(unused("col_vars_out", a.col_vars_out));
    }
  }
  if (d.device_scalars) {
    add("step_tensor", a.step_tensor, !oop);
    if (oop) add("step_out", a.step_out, true, "step_tensor");
    add("lr_tensor", a.lr_tensor, false);
  }
  // Overlaps: a written view against every other view (grads may share memory);
  // an output may be exactly its own input.
  std::sort(views.begin(), views.end(), [](const Named& x, const Named& y) { return x.lo < y.lo; });
  for (size_t x = 0; x < views.size(); ++x)
    for (size_t y = x + 1; y < views.size() && views[y].lo < views[x].hi; ++y) {
      if (!views[x].written && !views[y].written) continue;
      if (!baracuda::detail::views_overlap_exact(views[x].view, views[y].view)) continue;
      const Named& w = views[x].written ? views[x] : views[y];
      const Named& o = &w == &views[x] ? views[y] : views[x];
      const bool pair = (!w.may_be.empty() && w.may_be == o.name) || (!o.may_be.empty() && o.may_be == w.name);
      if (pair && baracuda::detail::same_view(w.view, o.view)) continue;
      if (pair)
        return invalid(kPlan, w.name, " partially overlaps ", o.name,
                       " (in place needs the same data pointer and strides)");
      return invalid(kPlan, w.name, " overlaps ", o.name, " in memory");
    }
  return Status::ok();
}

baracuda::detail::ArgCheck check_args(const AdafactorPlan& p, const AdafactorArgs& a) {
  const AdafactorDescriptor& d = p.descriptor();
  const bool oop = d.out_of_place;
  baracuda::detail::ArgCheck c(p);
  if (oop)
    c.optional_input("step_tensor", a.step_tensor, d.device_scalars, DType::F32, Dims{},
                     "AdafactorPlan: step_tensor is missing (descriptor.device_scalars is true)",
                     "AdafactorPlan: step_tensor is given but descriptor.device_scalars is false (the step is Args::step)");
  else
    c.optional_output("step_tensor", a.step_tensor, d.device_scalars, DType::F32, Dims{},
                      "AdafactorPlan: step_tensor is given but descriptor.device_scalars is false (the step is "
                      "Args::step)");
  c.optional_output("step_out", a.step_out, oop && d.device_scalars, DType::F32, Dims{},
                    "AdafactorPlan: step_out is given but descriptor.out_of_place and device_scalars are not both true")
      .optional_input("lr_tensor", a.lr_tensor, d.device_scalars, DType::F32, Dims{},
                      "AdafactorPlan: lr_tensor is missing (descriptor.device_scalars is true)",
                      "AdafactorPlan: lr_tensor is given but descriptor.device_scalars is false (the learning rate is "
                      "descriptor.lr)");
  c.rule([&]() -> Status {
    if (!d.device_scalars && a.step < 1)
      return invalid(kPlan, "step ", a.step, " must be >= 1 (the step number of this update, torch's state[\"step\"] after its increment)");
    if (d.device_scalars && a.step != 0)
      return invalid(kPlan, "step ", a.step, " is given but descriptor.device_scalars is true (the step is step_tensor's)");
    return Status::ok();
  });
  c.rule([&] { return check_lists(p, a); });
  // The shell returns early when every declared output is empty: declare the
  // first parameter with elements (already checked above).
  // first written tensor with elements (already checked above; out of place,
  // the state of an empty parameter may still have elements to carry over).
  if (c.ok()) {
    bool declared = false;
    const std::vector<const std::vector<TensorMut>*> lists =
        oop ? std::vector<const std::vector<TensorMut>*>{&a.params_out, &a.row_vars_out, &a.col_vars_out}
            : std::vector<const std::vector<TensorMut>*>{&a.params};
    for (const auto* list : lists)
      for (const TensorMut& v : *list)
        if (!declared && v.data != nullptr && v.numel() > 0) {
          c.output(oop ? "params_out" : "params", v, v.dtype, v.shape);
          declared = true;
        }
  }
  return c;
}

[[maybe_unused]] adafactor::Launch make_launch(const AdafactorPlan& p, const AdafactorArgs& a) {
  const AdafactorDescriptor& d = p.descriptor();
  const bool oop = d.out_of_place;
  adafactor::Launch l;
  l.dtype = d.dtype;
  l.maximize = d.maximize;
  l.eps1 = static_cast<float>(p.eps1());
  l.eps1sq = static_cast<float>(p.eps1() * p.eps1());
  l.eps2 = d.eps2, l.d = d.d, l.beta2_decay = d.beta2_decay, l.weight_decay = d.weight_decay;
  l.device_scalars = d.device_scalars;
  if (d.device_scalars) {
    l.step_in = static_cast<const float*>(a.step_tensor.data);
    l.step_out = static_cast<float*>(oop ? a.step_out.data : a.step_tensor.data);
    l.lr_tensor = static_cast<const float*>(a.lr_tensor.data);
  } else {
    l.host = adafactor::make_scalars(static_cast<double>(a.step), d.lr, d.beta2_decay, d.weight_decay);
  }
  auto f32 = [](const TensorMut& v) { return static_cast<float*>(v.data); };
  for (size_t i = 0; i < d.shapes.size(); ++i) {
    adafactor::TensorLaunch t;
    t.shape = d.shapes[i];
    t.n = shape_numel(t.shape);
    if (t.n == 0) {
      // Out of place, a state with elements ([R, 0]'s row_var) is carried over.
      if (oop && p.factored(i))
        for (const auto& [in, out] : {std::pair{&a.row_vars[i], &a.row_vars_out[i]},
                                      std::pair{&a.col_vars[i], &a.col_vars_out[i]}})
          if (in->numel() > 0 && in->data != out->data)
            l.copies.push_back({out->data, in->data, static_cast<size_t>(in->numel()) * 4});
      continue;
    }
    t.param_in = a.params[i].data;
    t.param_out = oop ? a.params_out[i].data : a.params[i].data;
    t.grad = a.grads[i].data;
    t.factored = p.factored(i);
    if (t.factored) {
      t.R = t.shape[t.shape.rank - 2], t.C = t.shape[t.shape.rank - 1], t.B = t.n / (t.R * t.C);
      t.row_var_in = f32(a.row_vars[i]), t.col_var_in = f32(a.col_vars[i]);
      t.row_var = f32(oop ? a.row_vars_out[i] : a.row_vars[i]);
      t.col_var = f32(oop ? a.col_vars_out[i] : a.col_vars[i]);
    } else {
      t.B = 1, t.R = 1, t.C = t.n;
      t.variance_in = f32(a.variances[i]);
      t.variance = f32(oop ? a.variances_out[i] : a.variances[i]);
    }
    l.tensors.push_back(t);
  }
  return l;
}

}  // namespace
}  // namespace optim::adafactor_detail

using namespace optim::adafactor_detail;

double AdafactorPlan::eps1() const {
  if (desc_.eps1) return *desc_.eps1;
  switch (desc_.dtype) {
    case DType::BF16: return 0.0078125;             // torch.finfo(torch.bfloat16).eps = 2^-7
    case DType::F16: return 0.0009765625;           // 2^-10
    default: return 1.1920928955078125e-07;         // f32: 2^-23
  }
}

Dims AdafactorPlan::row_var_shape(size_t i) const {
  Dims s = desc_.shapes[i];
  if (s.rank >= 2) s[s.rank - 1] = 1;
  return s;
}

Dims AdafactorPlan::col_var_shape(size_t i) const {
  Dims s = desc_.shapes[i];
  if (s.rank >= 2) s[s.rank - 2] = 1;
  return s;
}

Result<AdafactorPlan> AdafactorPlan::select(const Stream& stream, const AdafactorDescriptor& d,
                                            const PlanPreference& pref) {
  if (!(d.dtype == DType::F32 || d.dtype == DType::BF16 || d.dtype == DType::F16))
    return unsupported(kPlan, "dtype ", d.dtype, " is not supported (f32, bf16, f16)");
  for (size_t i = 0; i < d.shapes.size(); ++i)
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPlan, at("shapes", i).c_str(), d.shapes[i]));
  BARACUDA_RETURN_IF_ERROR(hyper("lr", d.lr, d.lr >= 0, ">= 0"));
  BARACUDA_RETURN_IF_ERROR(hyper("beta2_decay", d.beta2_decay, d.beta2_decay <= 0, "<= 0"));
  if (d.eps1) BARACUDA_RETURN_IF_ERROR(hyper("eps1", *d.eps1, *d.eps1 >= 0, ">= 0 (or none: finfo(dtype).eps)"));
  BARACUDA_RETURN_IF_ERROR(hyper("eps2", d.eps2, d.eps2 >= 0, ">= 0"));
  BARACUDA_RETURN_IF_ERROR(hyper("d", d.d, d.d >= 1, ">= 1"));
  BARACUDA_RETURN_IF_ERROR(hyper("weight_decay", d.weight_decay, d.weight_decay >= 0, ">= 0"));
  AdafactorPlan plan;
  plan.desc_ = d;
  auto be = baracuda::detail::setup_plan(plan, kPlan, kFamily, stream, pref, d.dtype, "optim.adafactor");
  if (!be) return be.status();
  bool any = false;
  for (const Dims& s : d.shapes) any = any || shape_numel(s) > 0;
  if (!any && !d.device_scalars) {  // device_scalars still increments step_tensor
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  baracuda::detail::PlanAccess::sku(plan).variant = "factored";
  baracuda::detail::PlanAccess::set_workspace(plan, optim::adafactor::workspace_bytes(d.shapes));
  return plan;
}

Status AdafactorPlan::can_implement(const AdafactorArgs& a) const { return check_args(*this, a).status(); }

Result<KernelSku> AdafactorPlan::sku_for(const Stream& stream, Workspace ws, const AdafactorArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, a));
}

Status AdafactorPlan::run(const Stream& stream, Workspace ws, const AdafactorArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, a), [&] { return optim::ref::adafactor(desc_, eps1(), a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        optim::adafactor::Launch l = make_launch(*this, a);
        l.workspace = ws.ptr;
        l.stream = stream.native_handle();
        return optim::adafactor::launch(l);
#else
        return baracuda::detail::no_cuda(kPlan);
#endif
      });
}

}  // namespace baracuda
