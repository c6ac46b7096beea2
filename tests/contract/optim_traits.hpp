// Contract traits of the optim plans (include/baracuda/ops/optim.hpp): AdamPlan,
// SgdPlan, LionPlan, GlobalNormPlan, ClipGradNormPlan, NonFiniteCheckUnscalePlan,
// MultiTensorScalePlan, MultiTensorZeroPlan.
//
// These plans update their tensors IN PLACE over tensor LISTS of dense views:
//   * one slot per list entry ("params[0]", "exp_avg[2]", ...), bound by a
//     capturing lambda that sizes the list to the descriptor's length; a list
//     the descriptor does not use (master without master_weights,
//     max_exp_avg_sq without amsgrad, momentum_buffer without momentum) has
//     Unused slots and stays EMPTY unless a check gives one of its entries;
//   * a tensor read and updated (params, states, grads of the utilities,
//     found_inf of the norm / unscale plans, Adam's step_tensor) is an InOut
//     slot (harness.hpp: restored before every run); a tensor only written is
//     an Output: the norms, MultiTensorZero's tensors, and the params of a
//     master-weights update without found_inf (params = round(master); with
//     found_inf a skipped step leaves them, so they are InOut then);
//   * every slot is `dense` (the plans refuse strided views);
//   * the norm outputs (and Adam's step_tensor, incremented even for an empty
//     list) are written for zero-size problems: `written_when_empty`.
// Host scalars (lr, step, buffers_initialized, scale, seed) are fixed per
// descriptor and set by every bind. Lists hold 1-4 tensors of small random
// shapes (rank 0-3, now and then an empty one or a few hundred elements).
#pragma once

#include <cmath>
#include <functional>
#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/optim.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"

namespace contract {
namespace optim_contract {

using baracuda::NormType;
using baracuda::OptimizerCommon;
using Values = std::function<void(Rng&, std::vector<double>&)>;

// Slot names live as long as the process (Slot::name is a const char*).
inline const char* intern(const std::string& s) {
  static std::set<std::string> pool;
  return pool.insert(s).first->c_str();
}

inline Values uniform(double lo, double hi) {
  return [lo, hi](Rng& rng, std::vector<double>& v) {
    for (double& x : v) x = std::uniform_real_distribution<double>(lo, hi)(rng);
  };
}
// 1 with probability p, else 0 (found_inf flags).
inline Values flag(double p) {
  return [p](Rng& rng, std::vector<double>& v) {
    for (double& x : v) x = std::uniform_real_distribution<double>(0, 1)(rng) < p ? 1.0 : 0.0;
  };
}
inline Values integers(int lo, int hi) {
  return [lo, hi](Rng& rng, std::vector<double>& v) {
    for (double& x : v) x = static_cast<double>(std::uniform_int_distribution<int>(lo, hi)(rng));
  };
}

inline Dims any_shape(Fuzz& f) {
  if (f.chance(0.08)) return Dims{f.range(100, 700)};  // a few hundred elements (several 16-byte vectors)
  Dims s;
  const int r = static_cast<int>(f.range(0, 3));
  for (int i = 0; i < r; ++i) s.push_back(f.chance(0.05) ? 0 : f.range(1, 5));
  return s;
}
inline std::vector<Dims> any_shapes(Fuzz& f) {
  std::vector<Dims> v;
  const int n = static_cast<int>(f.range(1, 4));
  for (int i = 0; i < n; ++i) v.push_back(any_shape(f));
  return v;
}
inline DType any_float(Fuzz& f) { return f.pick<DType>({DType::F32, DType::BF16, DType::F16}); }

template <class Args>
using Host = std::function<void(Args&)>;

// Slot i of the list `member` (n entries).
template <class Args, class View>
Slot<Args> list_slot(const char* role_name, size_t i, size_t n, Role role, DType t, const Dims& shape,
                     std::vector<View> Args::*member, bool optional, const Host<Args>& host, Values values = {}) {
  Slot<Args> s;
  s.name = intern(std::string(role_name) + "[" + std::to_string(i) + "]");
  s.role = role;
  s.dtype = t;
  s.shape = shape;
  s.optional = optional;
  s.dense = true;
  s.values = std::move(values);
  const bool unused = role == Role::Unused;
  s.bind = [member, i, n, unused, host](Args& a, const TensorMut& v) {
    if (host) host(a);
    if (unused && v.data == nullptr) return;  // not given: the list stays empty
    (a.*member).resize(n);
    (a.*member)[i] = v;
  };
  return s;
}

// An F32 [] scalar tensor: `role` when used, else Unused.
template <class Args, class View>
Slot<Args> scalar_slot(const char* name, bool used, Role role, View Args::*member, bool optional, const Host<Args>& host,
                       Values values = {}) {
  Slot<Args> s;
  s.name = name;
  s.role = used ? role : Role::Unused;
  s.dtype = DType::F32;
  s.shape = Dims{};
  s.optional = optional;
  s.dense = true;
  s.values = std::move(values);
  s.bind = [member, host](Args& a, const TensorMut& v) {
    if (host) host(a);
    a.*member = v;
  };
  return s;
}

// params / grads / master and the scalars every optimizer shares; `states`
// adds the optimizer's own F32 lists for tensor i.
template <class Args>
std::vector<Slot<Args>> optimizer_slots(const OptimizerCommon& d, const Host<Args>& host,
                                        const std::function<void(std::vector<Slot<Args>>&, size_t)>& states) {
  std::vector<Slot<Args>> v;
  const size_t n = d.shapes.size();
  // With master weights the params are only written (round(master)), unless
  // found_inf may skip the step (then they keep their values).
  const Role param_role = d.master_weights && !d.has_found_inf ? Role::Output : Role::InOut;
  for (size_t i = 0; i < n; ++i) {
    const Dims& s = d.shapes[i];
    v.push_back(list_slot<Args>("params", i, n, param_role, d.param_dtype, s, &Args::params, false, host));
    v.push_back(list_slot<Args>("grads", i, n, Role::Input, d.param_dtype, s, &Args::grads, false, host));
    v.push_back(list_slot<Args>("master", i, n, d.master_weights ? Role::InOut : Role::Unused, DType::F32, s,
                                &Args::master, true, host));
    states(v, i);
  }
  v.push_back(scalar_slot<Args>("lr_tensor", d.device_scalars, Role::Input, &Args::lr_tensor, true, host, uniform(0.0, 0.1)));
  v.push_back(scalar_slot<Args>("grad_scale", d.has_grad_scale, Role::Input, &Args::grad_scale, true, host,
                                uniform(0.5, 4.0)));
  v.push_back(scalar_slot<Args>("found_inf", d.has_found_inf, Role::Input, &Args::found_inf, true, host, flag(0.3)));
  return v;
}

// The options every optimizer shares, as the fuzz chooses them.
inline void any_common(OptimizerCommon& d, Fuzz& f) {
  d.shapes = any_shapes(f);
  d.param_dtype = any_float(f);
  d.master_weights = d.param_dtype != DType::F32 && f.chance(0.5);
  d.stochastic_rounding = d.param_dtype == DType::BF16 && f.chance(0.3);
  d.maximize = f.chance(0.3);
  d.device_scalars = f.chance(0.5);
  d.has_grad_scale = f.chance(0.3);
  d.has_found_inf = f.chance(0.3);
  d.weight_decay = f.pick<double>({0.0, 0.01, 0.1});
}

inline std::string shapes_str(const std::vector<Dims>& shapes) {
  std::string s = "[";
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? " " : "") + dims_str(shapes[i]);
  return s + "]";
}
inline std::string common_str(const OptimizerCommon& d) {
  std::ostringstream os;
  os << "shapes " << shapes_str(d.shapes) << ", dtype " << baracuda::dtype_name(d.param_dtype) << ", master "
     << d.master_weights << ", stochastic " << d.stochastic_rounding << ", maximize " << d.maximize
     << ", device_scalars " << d.device_scalars << ", grad_scale " << d.has_grad_scale << ", found_inf "
     << d.has_found_inf << ", wd " << d.weight_decay;
  return os.str();
}

// Mutations of the shape list and the dtype (any Desc with `shapes`; `dtype`
// is the member holding the list's dtype).
template <class Desc>
std::vector<DescMutator<Desc>> list_mutators(DType Desc::*dtype) {
  auto pick = [](Desc& d, Fuzz& f) -> Dims& {
    return d.shapes[static_cast<size_t>(f.range(0, static_cast<int64_t>(d.shapes.size()) - 1))];
  };
  std::vector<DescMutator<Desc>> m;
  m.push_back({"desc.negative_extent", [pick](Desc& d, Fuzz& f) {
                 Dims& s = pick(d, f);
                 if (s.rank > 0) s[static_cast<int>(f.range(0, s.rank - 1))] = f.negative();
                 else s = Dims{f.negative()};
               }});
  m.push_back({"desc.huge_extent", [pick](Desc& d, Fuzz& f) {
                 Dims& s = pick(d, f);
                 if (s.rank > 0) s[static_cast<int>(f.range(0, s.rank - 1))] = f.huge();
                 else s = Dims{f.huge()};
               }});
  m.push_back({"desc.extents_overflow", [pick](Desc& d, Fuzz& f) {
                 Dims& s = pick(d, f);
                 s = Dims{int64_t{1} << f.range(20, 40), int64_t{1} << f.range(20, 40), int64_t{1} << f.range(10, 40)};
               }});
  m.push_back({"desc.dtype_any", [dtype](Desc& d, Fuzz& f) { d.*dtype = f.any_dtype(); }});
  return m;
}

// Mutations of the options every optimizer shares.
template <class Desc>
void common_mutators(std::vector<DescMutator<Desc>>& m) {
  m.push_back({"desc.weight_decay_bad", [](Desc& d, Fuzz& f) { d.weight_decay = f.pick<double>({-0.1, NAN, INFINITY}); }});
  m.push_back({"desc.master_any", [](Desc& d, Fuzz& f) {  // master weights / stochastic rounding on any dtype
                 d.master_weights = f.chance(0.5);
                 d.stochastic_rounding = f.chance(0.5);
                 d.param_dtype = any_float(f);
               }});
}

}  // namespace optim_contract

// ---- AdamPlan ------------------------------------------------------------------------------
struct AdamTraits {
  using Plan = baracuda::AdamPlan;
  using Desc = baracuda::AdamDescriptor;
  using Args = baracuda::AdamArgs;
  static constexpr const char* kName = "AdamPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    optim_contract::any_common(d, f);
    d.decoupled_weight_decay = f.chance(0.5);
    d.amsgrad = f.chance(0.5);
    d.beta1 = f.pick<double>({0.9, 0.5, 0.0});
    d.beta2 = f.pick<double>({0.999, 0.9});
    d.eps = f.pick<double>({1e-8, 1e-3});
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    auto make = [](DType t, std::vector<Dims> s, bool master, bool ds, bool ams) {
      Desc d;
      d.param_dtype = t;
      d.shapes = std::move(s);
      d.master_weights = master;
      d.device_scalars = ds;
      d.amsgrad = ams;
      return d;
    };
    return {make(DType::F32, {{0}}, false, false, false), make(DType::BF16, {{0, 3}, {0}}, true, false, true),
            make(DType::F16, {}, false, false, false), make(DType::F32, {{2, 0}}, false, true, true)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d;
      d.shapes = {{4, 5}, {3}};
      fn(d);
      return d;
    };
    return {{"dtype_f64", with([](Desc& d) { d.param_dtype = DType::F64; })},
            {"dtype_unknown", with([](Desc& d) { d.param_dtype = static_cast<DType>(200); })},
            {"shape_negative", with([](Desc& d) { d.shapes[1] = Dims{-3}; })},
            {"master_on_f32", with([](Desc& d) { d.master_weights = true; })},
            {"stochastic_on_f16", with([](Desc& d) {
               d.param_dtype = DType::F16;
               d.stochastic_rounding = true;
             })},
            {"weight_decay_negative", with([](Desc& d) { d.weight_decay = -0.1; })},
            {"beta1_one", with([](Desc& d) { d.beta1 = 1.0; })},
            {"beta2_nan", with([](Desc& d) { d.beta2 = std::nan(""); })},
            {"eps_negative", with([](Desc& d) { d.eps = -1e-8; })}};
  }
  static std::vector<Desc> workspace_descs() { return {}; }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace optim_contract;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    const Host<Args> host = [](Args& a) {
      a.lr = 1e-2;
      a.step = 3;
      a.seed = baracuda::RandomSeed{0x5eed, 7};
    };
    auto v = optimizer_slots<Args>(d, host, [&](std::vector<Slot<Args>>& s, size_t i) {
      const Dims& sh = d.shapes[i];
      s.push_back(list_slot<Args>("exp_avg", i, n, Role::InOut, DType::F32, sh, &Args::exp_avg, false, host));
      s.push_back(list_slot<Args>("exp_avg_sq", i, n, Role::InOut, DType::F32, sh, &Args::exp_avg_sq, false, host,
                                  uniform(0.0, 1.0)));
      s.push_back(list_slot<Args>("max_exp_avg_sq", i, n, d.amsgrad ? Role::InOut : Role::Unused, DType::F32, sh,
                                  &Args::max_exp_avg_sq, true, host, uniform(0.0, 1.0)));
    });
    auto st = scalar_slot<Args>("step_tensor", d.device_scalars, Role::InOut, &Args::step_tensor, true, host, integers(0, 9));
    st.written_when_empty = true;  // incremented whatever the list holds
    v.push_back(st);
    return v;
  }

  static std::vector<DescMutator<Desc>> desc_mutators() {
    auto m = optim_contract::list_mutators<Desc>(&Desc::param_dtype);
    optim_contract::common_mutators(m);
    m.push_back({"desc.hyper_bad", [](Desc& d, Fuzz& f) {
                   const double x = f.pick<double>({NAN, INFINITY, -INFINITY, -0.5, 1.0, 1.5});
                   switch (f.range(0, 2)) {
                     case 0: d.beta1 = x; break;
                     case 1: d.beta2 = x; break;
                     default: d.eps = x; break;
                   }
                 }});
    return m;
  }

  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "AdamDescriptor{" << optim_contract::common_str(d) << ", decoupled " << d.decoupled_weight_decay
       << ", amsgrad " << d.amsgrad << ", beta1 " << d.beta1 << ", beta2 " << d.beta2 << ", eps " << d.eps << "}";
    return os.str();
  }
};

// ---- SgdPlan -------------------------------------------------------------------------------
struct SgdTraits {
  using Plan = baracuda::SgdPlan;
  using Desc = baracuda::SgdDescriptor;
  using Args = baracuda::SgdArgs;
  static constexpr const char* kName = "SgdPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    optim_contract::any_common(d, f);
    d.momentum = f.pick<double>({0.0, 0.9, 0.5});
    d.nesterov = d.momentum > 0 && f.chance(0.3);
    d.dampening = d.nesterov ? 0.0 : f.pick<double>({0.0, 0.1});
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    Desc a, b, c;
    a.shapes = {{0}};
    b.shapes = {{0, 2}, {0}};
    b.momentum = 0.9;
    b.param_dtype = DType::BF16;
    b.master_weights = true;
    c.shapes = {};
    c.device_scalars = true;
    return {a, b, c};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d;
      d.shapes = {{4, 5}, {3}};
      fn(d);
      return d;
    };
    return {{"dtype_f64", with([](Desc& d) { d.param_dtype = DType::F64; })},
            {"shape_negative", with([](Desc& d) { d.shapes[0] = Dims{2, -1}; })},
            {"master_on_f32", with([](Desc& d) { d.master_weights = true; })},
            {"stochastic_on_f32", with([](Desc& d) { d.stochastic_rounding = true; })},
            {"weight_decay_inf", with([](Desc& d) { d.weight_decay = INFINITY; })},
            {"momentum_negative", with([](Desc& d) { d.momentum = -0.9; })},
            {"dampening_nan", with([](Desc& d) { d.dampening = std::nan(""); })},
            {"nesterov_without_momentum", with([](Desc& d) { d.nesterov = true; })},
            {"nesterov_with_dampening", with([](Desc& d) {
               d.nesterov = true;
               d.momentum = 0.9;
               d.dampening = 0.1;
             })}};
  }
  static std::vector<Desc> workspace_descs() { return {}; }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace optim_contract;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    const bool initialized = (n + (d.nesterov ? 1 : 0)) % 2 == 0;  // both of torch's first and later steps
    const Host<Args> host = [initialized](Args& a) {
      a.lr = 0.05;
      a.buffers_initialized = initialized;
      a.seed = baracuda::RandomSeed{0x5eed, 8};
    };
    return optimizer_slots<Args>(d, host, [&](std::vector<Slot<Args>>& s, size_t i) {
      s.push_back(list_slot<Args>("momentum_buffer", i, n, d.momentum != 0.0 ? Role::InOut : Role::Unused, DType::F32,
                                  d.shapes[i], &Args::momentum_buffer, true, host));
    });
  }

  static std::vector<DescMutator<Desc>> desc_mutators() {
    auto m = optim_contract::list_mutators<Desc>(&Desc::param_dtype);
    optim_contract::common_mutators(m);
    m.push_back({"desc.hyper_bad", [](Desc& d, Fuzz& f) {
                   const double x = f.pick<double>({NAN, INFINITY, -INFINITY, -0.5, 0.0, 1.5});
                   switch (f.range(0, 2)) {
                     case 0: d.momentum = x; break;
                     case 1: d.dampening = x; break;
                     default: d.nesterov = !d.nesterov; break;
                   }
                 }});
    return m;
  }

  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "SgdDescriptor{" << optim_contract::common_str(d) << ", momentum " << d.momentum << ", dampening "
       << d.dampening << ", nesterov " << d.nesterov << "}";
    return os.str();
  }
};

// ---- LionPlan ------------------------------------------------------------------------------
struct LionTraits {
  using Plan = baracuda::LionPlan;
  using Desc = baracuda::LionDescriptor;
  using Args = baracuda::LionArgs;
  static constexpr const char* kName = "LionPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    optim_contract::any_common(d, f);
    d.beta1 = f.pick<double>({0.9, 0.0});
    d.beta2 = f.pick<double>({0.99, 0.5});
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    Desc a, b;
    a.shapes = {{0}};
    b.shapes = {{3, 0}, {0}};
    b.param_dtype = DType::F16;
    b.master_weights = true;
    b.device_scalars = true;
    return {a, b};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d;
      d.shapes = {{4, 5}, {3}};
      fn(d);
      return d;
    };
    return {{"dtype_i32", with([](Desc& d) { d.param_dtype = DType::I32; })},
            {"shape_negative", with([](Desc& d) { d.shapes[1] = Dims{-1}; })},
            {"master_on_f32", with([](Desc& d) { d.master_weights = true; })},
            {"weight_decay_nan", with([](Desc& d) { d.weight_decay = std::nan(""); })},
            {"beta1_negative", with([](Desc& d) { d.beta1 = -0.1; })},
            {"beta2_one", with([](Desc& d) { d.beta2 = 1.0; })}};
  }
  static std::vector<Desc> workspace_descs() { return {}; }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace optim_contract;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    const Host<Args> host = [](Args& a) {
      a.lr = 1e-2;
      a.seed = baracuda::RandomSeed{0x5eed, 9};
    };
    return optimizer_slots<Args>(d, host, [&](std::vector<Slot<Args>>& s, size_t i) {
      s.push_back(list_slot<Args>("exp_avg", i, n, Role::InOut, DType::F32, d.shapes[i], &Args::exp_avg, false, host));
    });
  }

  static std::vector<DescMutator<Desc>> desc_mutators() {
    auto m = optim_contract::list_mutators<Desc>(&Desc::param_dtype);
    optim_contract::common_mutators(m);
    m.push_back({"desc.hyper_bad", [](Desc& d, Fuzz& f) {
                   const double x = f.pick<double>({NAN, INFINITY, -0.5, 1.0});
                   if (f.chance(0.5)) d.beta1 = x;
                   else d.beta2 = x;
                 }});
    return m;
  }

  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "LionDescriptor{" << optim_contract::common_str(d) << ", beta1 " << d.beta1 << ", beta2 " << d.beta2 << "}";
    return os.str();
  }
};

// ---- gradient utilities -----------------------------------------------------------------------
namespace optim_contract {
inline std::string list_str(const char* what, const baracuda::TensorListDescriptor& d) {
  return std::string(what) + "{shapes " + shapes_str(d.shapes) + ", dtype " + std::string(baracuda::dtype_name(d.dtype));
}
template <class Desc>
std::vector<std::pair<const char*, Desc>> list_invalid_descs() {
  Desc a, b, c;
  a.shapes = b.shapes = c.shapes = {{4, 5}, {3}};
  a.dtype = DType::F64;
  b.dtype = DType::I32;
  c.shapes[1] = Dims{3, -2};
  return {{"dtype_f64", a}, {"dtype_i32", b}, {"shape_negative", c}};
}
template <class Desc>
Desc any_list(Fuzz& f) {
  Desc d;
  d.shapes = any_shapes(f);
  d.dtype = any_float(f);
  return d;
}
}  // namespace optim_contract

struct GlobalNormTraits {
  using Plan = baracuda::GlobalNormPlan;
  using Desc = baracuda::GlobalNormDescriptor;
  using Args = baracuda::GlobalNormArgs;
  static constexpr const char* kName = "GlobalNormPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d = optim_contract::any_list<Desc>(f);
    d.norm_type = f.chance(0.5) ? baracuda::NormType::L2 : baracuda::NormType::Inf;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    Desc a, b, c;
    a.shapes = {{0}};
    b.shapes = {{0, 4}, {0}};
    b.dtype = DType::BF16;
    b.norm_type = baracuda::NormType::Inf;
    c.shapes = {};
    return {a, b, c};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto v = optim_contract::list_invalid_descs<Desc>();
    Desc d;
    d.shapes = {{3}};
    d.norm_type = static_cast<baracuda::NormType>(7);
    v.push_back({"norm_type_unknown", d});
    return v;
  }
  static std::vector<Desc> workspace_descs() {
    Desc d;
    d.shapes = {{64, 33}, {5}};
    return {d};
  }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace optim_contract;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    std::vector<Slot<Args>> v;
    for (size_t i = 0; i < n; ++i)
      v.push_back(list_slot<Args>("tensors", i, n, Role::Input, d.dtype, d.shapes[i], &Args::tensors, false, {}));
    auto out = scalar_slot<Args>("out", true, Role::Output, &Args::out, false, {});
    out.written_when_empty = true;  // the norm of an empty list: 0
    v.push_back(out);
    return v;
  }

  static std::vector<DescMutator<Desc>> desc_mutators() {
    auto m = optim_contract::list_mutators<Desc>(&Desc::dtype);
    m.push_back({"desc.norm_type_bad", [](Desc& d, Fuzz& f) {
                   d.norm_type = static_cast<baracuda::NormType>(f.pick<int>({-1, 2, 100}));
                 }});
    return m;
  }
  static std::string describe(const Desc& d) {
    return optim_contract::list_str("GlobalNormDescriptor", d) + ", norm " + std::to_string(static_cast<int>(d.norm_type)) + "}";
  }
};

struct ClipGradNormTraits {
  using Plan = baracuda::ClipGradNormPlan;
  using Desc = baracuda::ClipGradNormDescriptor;
  using Args = baracuda::ClipGradNormArgs;
  static constexpr const char* kName = "ClipGradNormPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d = optim_contract::any_list<Desc>(f);
    d.norm_type = f.chance(0.5) ? baracuda::NormType::L2 : baracuda::NormType::Inf;
    d.max_norm = f.pick<double>({0.25, 1.0, 100.0});  // clips, or not
    d.has_found_inf = f.chance(0.5);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    Desc a, b;
    a.shapes = {{0}};
    b.shapes = {{0, 2}, {0}};
    b.has_found_inf = true;
    b.dtype = DType::F16;
    return {a, b};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto v = optim_contract::list_invalid_descs<Desc>();
    Desc a, b, c;
    a.shapes = b.shapes = c.shapes = {{3}};
    a.max_norm = 0.0;
    b.max_norm = INFINITY;
    c.norm_type = static_cast<baracuda::NormType>(3);
    v.push_back({"max_norm_zero", a});
    v.push_back({"max_norm_inf", b});
    v.push_back({"norm_type_unknown", c});
    return v;
  }
  static std::vector<Desc> workspace_descs() {
    Desc d;
    d.shapes = {{64, 33}, {5}};
    return {d};
  }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace optim_contract;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    std::vector<Slot<Args>> v;
    for (size_t i = 0; i < n; ++i)
      v.push_back(list_slot<Args>("grads", i, n, Role::InOut, d.dtype, d.shapes[i], &Args::grads, false, {}));
    auto total = scalar_slot<Args>("total_norm", true, Role::Output, &Args::total_norm, false, {});
    total.written_when_empty = true;
    v.push_back(total);
    v.push_back(scalar_slot<Args>("found_inf", d.has_found_inf, Role::InOut, &Args::found_inf, true, {}, flag(0.3)));
    return v;
  }

  static std::vector<DescMutator<Desc>> desc_mutators() {
    auto m = optim_contract::list_mutators<Desc>(&Desc::dtype);
    m.push_back({"desc.max_norm_bad", [](Desc& d, Fuzz& f) { d.max_norm = f.pick<double>({0.0, -1.0, NAN, INFINITY}); }});
    m.push_back({"desc.norm_type_bad", [](Desc& d, Fuzz& f) {
                   d.norm_type = static_cast<baracuda::NormType>(f.pick<int>({-1, 2, 100}));
                 }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << optim_contract::list_str("ClipGradNormDescriptor", d) << ", norm " << static_cast<int>(d.norm_type)
       << ", max_norm " << d.max_norm << ", found_inf " << d.has_found_inf << "}";
    return os.str();
  }
};

struct NonFiniteCheckUnscaleTraits {
  using Plan = baracuda::NonFiniteCheckUnscalePlan;
  using Desc = baracuda::TensorListDescriptor;
  using Args = baracuda::NonFiniteCheckUnscaleArgs;
  static constexpr const char* kName = "NonFiniteCheckUnscalePlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return optim_contract::any_list<Desc>(f);
  }
  static std::vector<Desc> zero_size_descs() {
    Desc a, b;
    a.shapes = {{0}};
    b.shapes = {{0, 7}, {0}};
    b.dtype = DType::BF16;
    return {a, b};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return optim_contract::list_invalid_descs<Desc>(); }
  static std::vector<Desc> workspace_descs() { return {}; }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace optim_contract;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    std::vector<Slot<Args>> v;
    for (size_t i = 0; i < n; ++i)
      v.push_back(list_slot<Args>("grads", i, n, Role::InOut, d.dtype, d.shapes[i], &Args::grads, false, {}));
    v.push_back(scalar_slot<Args>("inv_scale", true, Role::Input, &Args::inv_scale, false, {}, uniform(0.25, 2.0)));
    v.push_back(scalar_slot<Args>("found_inf", true, Role::InOut, &Args::found_inf, false, {}, flag(0.2)));
    return v;
  }

  static std::vector<DescMutator<Desc>> desc_mutators() { return optim_contract::list_mutators<Desc>(&Desc::dtype); }
  static std::string describe(const Desc& d) { return optim_contract::list_str("TensorListDescriptor", d) + "}"; }
};

struct MultiTensorScaleTraits {
  using Plan = baracuda::MultiTensorScalePlan;
  using Desc = baracuda::MultiTensorScaleDescriptor;
  using Args = baracuda::MultiTensorScaleArgs;
  static constexpr const char* kName = "MultiTensorScalePlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d = optim_contract::any_list<Desc>(f);
    d.device_scalar = f.chance(0.5);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    Desc a, b;
    a.shapes = {{0}};
    b.shapes = {{0, 3}, {0}};
    b.dtype = DType::F16;
    b.device_scalar = true;
    return {a, b};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return optim_contract::list_invalid_descs<Desc>(); }
  static std::vector<Desc> workspace_descs() { return {}; }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace optim_contract;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    const double scale = 0.25 * static_cast<double>(n + 1);  // fixed per descriptor (never NaN)
    const Host<Args> host = [scale](Args& a) { a.scale = scale; };
    std::vector<Slot<Args>> v;
    for (size_t i = 0; i < n; ++i)
      v.push_back(list_slot<Args>("tensors", i, n, Role::InOut, d.dtype, d.shapes[i], &Args::tensors, false, host));
    v.push_back(scalar_slot<Args>("scale_tensor", d.device_scalar, Role::Input, &Args::scale_tensor, true, host,
                                  uniform(-2.0, 2.0)));
    return v;
  }

  static std::vector<DescMutator<Desc>> desc_mutators() { return optim_contract::list_mutators<Desc>(&Desc::dtype); }
  static std::string describe(const Desc& d) {
    return optim_contract::list_str("MultiTensorScaleDescriptor", d) + ", device_scalar " +
           std::to_string(d.device_scalar) + "}";
  }
};

struct MultiTensorZeroTraits {
  using Plan = baracuda::MultiTensorZeroPlan;
  using Desc = baracuda::TensorListDescriptor;
  using Args = baracuda::MultiTensorZeroArgs;
  static constexpr const char* kName = "MultiTensorZeroPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return optim_contract::any_list<Desc>(f);
  }
  static std::vector<Desc> zero_size_descs() {
    Desc a, b, c;
    a.shapes = {{0}};
    b.shapes = {{0, 3}, {5, 0}};
    b.dtype = DType::BF16;
    c.shapes = {};
    return {a, b, c};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return optim_contract::list_invalid_descs<Desc>(); }
  static std::vector<Desc> workspace_descs() { return {}; }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace optim_contract;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    std::vector<Slot<Args>> v;
    for (size_t i = 0; i < n; ++i)  // only written: an output (the poison checks apply)
      v.push_back(list_slot<Args>("tensors", i, n, Role::Output, d.dtype, d.shapes[i], &Args::tensors, false, {}));
    return v;
  }

  static std::vector<DescMutator<Desc>> desc_mutators() { return optim_contract::list_mutators<Desc>(&Desc::dtype); }
  static std::string describe(const Desc& d) { return optim_contract::list_str("TensorListDescriptor", d) + "}"; }
};

}  // namespace contract
