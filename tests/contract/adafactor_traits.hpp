// Contract traits of AdafactorPlan (include/baracuda/ops/optim_adafactor.hpp).
// The suite's checks read outputs as functions of inputs (poisoned outputs
// fully written, reruns bit-identical), so the descriptors here are
// out_of_place: params / states / step_tensor are inputs, the *_out lists and
// step_out outputs, each of which may be exactly its input (in place). One
// slot per list entry ("params[0]", "row_vars_out[1]", ...); the state of a
// rank < 2 parameter's row_vars / col_vars entries (and a matrix's variances
// entry) are optional slots the descriptor never uses. Outputs keep their
// whole view dense in the gapped layout (the CUDA plan takes dense views only).
#pragma once

#include <set>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/optim_adafactor.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"

namespace contract {
namespace adafactor_contract {

// Slot names live as long as the process (Slot::name is a const char*).
inline const char* intern(const std::string& s) {
  static std::set<std::string> pool;
  return pool.insert(s).first->c_str();
}

inline Dims any_shape(Fuzz& f) {
  Dims s;
  const int r = static_cast<int>(f.range(0, 3));
  for (int i = 0; i < r; ++i) s.push_back(f.chance(0.05) ? 0 : f.range(1, 5));
  return s;
}

inline std::function<void(Rng&, std::vector<double>&)> uniform(double lo, double hi) {
  return [lo, hi](Rng& rng, std::vector<double>& v) {
    for (double& x : v) x = std::uniform_real_distribution<double>(lo, hi)(rng);
  };
}

}  // namespace adafactor_contract

struct AdafactorTraits {
  using Plan = baracuda::AdafactorPlan;
  using Desc = baracuda::AdafactorDescriptor;
  using Args = baracuda::AdafactorArgs;
  static constexpr const char* kName = "AdafactorPlan";

  static Desc make(DType t, std::vector<Dims> shapes, bool device_scalars = false) {
    Desc d;
    d.dtype = t;
    d.shapes = std::move(shapes);
    d.device_scalars = device_scalars;
    d.out_of_place = true;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    const DType types[] = {DType::F32, DType::BF16, DType::F16};
    std::vector<Dims> shapes;
    const int n = static_cast<int>(f.range(1, 3));
    for (int i = 0; i < n; ++i) shapes.push_back(adafactor_contract::any_shape(f));
    Desc d = make(types[f.range(0, 2)], shapes, f.chance(0.5));
    d.maximize = f.chance(0.3);
    if (f.chance(0.5)) d.weight_decay = 0.1;
    if (f.chance(0.3)) d.eps1 = 1e-3;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {{0}}), make(DType::BF16, {{0, 0}, {0}}), make(DType::F16, {{3, 0, 0}})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, {{4, 5}, {3}});
      fn(d);
      return d;
    };
    return {{"dtype_f64", with([](Desc& d) { d.dtype = DType::F64; })},
            {"dtype_unknown", with([](Desc& d) { d.dtype = static_cast<DType>(200); })},
            {"shape_negative", with([](Desc& d) { d.shapes[1] = Dims{-3}; })},
            {"lr_negative", with([](Desc& d) { d.lr = -1; })},
            {"beta2_decay_positive", with([](Desc& d) { d.beta2_decay = 0.1; })},
            {"eps1_negative", with([](Desc& d) { d.eps1 = -1e-3; })},
            {"eps2_nan", with([](Desc& d) { d.eps2 = std::nan(""); })},
            {"d_below_one", with([](Desc& d) { d.d = 0.5; })},
            {"weight_decay_inf", with([](Desc& d) { d.weight_decay = INFINITY; })}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::F32, {{8, 16}, {5}}, true)}; }

  static std::vector<Slot<Args>> slots(const Plan& p) {
    using adafactor_contract::intern;
    const Desc& d = p.descriptor();
    const size_t n = d.shapes.size();
    const int64_t step = d.device_scalars ? 0 : 3;
    std::vector<Slot<Args>> v;
    auto add = [&](const std::string& name, Role role, DType t, Dims shape, std::vector<TensorMut> Args::*list, size_t i,
                   const char* in_place_of, bool optional) {
      Slot<Args> s;
      s.name = intern(name);
      s.role = role;
      s.dtype = t;
      s.shape = shape;
      s.optional = optional;
      s.in_place_of = in_place_of;
      s.gap_block = std::max(shape.rank, 1);
      s.bind = [list, i, n, step](Args& a, const TensorMut& t) {
        (a.*list).resize(n);
        (a.*list)[i] = t;
        a.step = step;
      };
      if (role != Role::Output && t == DType::F32) s.values = adafactor_contract::uniform(0.0, 1.0);  // states >= 0
      v.push_back(std::move(s));
      return s.name;
    };
    for (size_t i = 0; i < n; ++i) {
      const std::string k = "[" + std::to_string(i) + "]";
      const Dims& s = d.shapes[i];
      const char* pin = intern("params" + k);
      add("params" + k, Role::Input, d.dtype, s, &Args::params, i, nullptr, false);
      {
        Slot<Args> g;
        g.name = intern("grads" + k);
        g.role = Role::Input;
        g.dtype = d.dtype;
        g.shape = s;
        g.bind = [i, n, step](Args& a, const TensorMut& t) {
          a.grads.resize(n);
          a.grads[i] = t;
          a.step = step;
        };
        v.push_back(std::move(g));
      }
      add("params_out" + k, Role::Output, d.dtype, s, &Args::params_out, i, pin, false);
      const bool f = p.factored(i);
      const Dims rs = f ? p.row_var_shape(i) : s, cs = f ? p.col_var_shape(i) : s;
      const Role st = f ? Role::Input : Role::Unused, so = f ? Role::Output : Role::Unused;
      add("row_vars" + k, st, DType::F32, rs, &Args::row_vars, i, nullptr, true);
      add("row_vars_out" + k, so, DType::F32, rs, &Args::row_vars_out, i, intern("row_vars" + k), true);
      add("col_vars" + k, st, DType::F32, cs, &Args::col_vars, i, nullptr, true);
      add("col_vars_out" + k, so, DType::F32, cs, &Args::col_vars_out, i, intern("col_vars" + k), true);
      const Role vi = f ? Role::Unused : Role::Input, vo = f ? Role::Unused : Role::Output;
      add("variances" + k, vi, DType::F32, s, &Args::variances, i, nullptr, true);
      add("variances_out" + k, vo, DType::F32, s, &Args::variances_out, i, intern("variances" + k), true);
    }
    const bool ds = d.device_scalars;
    auto st = input<Args>("step_tensor", DType::F32, Dims{}, [](Args& a, const TensorMut& t) { a.step_tensor = t; });
    st.role = ds ? Role::Input : Role::Unused;
    st.optional = true;
    st.values = [](Rng& rng, std::vector<double>& x) {
      for (double& e : x) e = static_cast<double>(std::uniform_int_distribution<int>(0, 9)(rng));
    };
    auto so = output<Args>("step_out", DType::F32, Dims{}, [](Args& a, const TensorMut& t) { a.step_out = t; },
                           "step_tensor");
    so.role = ds ? Role::Output : Role::Unused;
    so.optional = true;
    auto lr = input<Args>("lr_tensor", DType::F32, Dims{}, [](Args& a, const TensorMut& t) { a.lr_tensor = t; });
    lr.role = ds ? Role::Input : Role::Unused;
    lr.optional = true;
    lr.values = adafactor_contract::uniform(0.0, 0.1);
    v.push_back(st);
    v.push_back(so);
    v.push_back(lr);
    return v;
  }

  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    m.push_back({"desc.negative_extent", [](Desc& d, Fuzz& f) {
                   Dims& s = d.shapes[static_cast<size_t>(f.range(0, static_cast<int64_t>(d.shapes.size()) - 1))];
                   if (s.rank > 0) s[static_cast<int>(f.range(0, s.rank - 1))] = f.negative();
                   else s = Dims{f.negative()};
                 }});
    m.push_back({"desc.huge_extent", [](Desc& d, Fuzz& f) {
                   Dims& s = d.shapes[static_cast<size_t>(f.range(0, static_cast<int64_t>(d.shapes.size()) - 1))];
                   if (s.rank > 0) s[static_cast<int>(f.range(0, s.rank - 1))] = f.huge();
                   else s = Dims{f.huge()};
                 }});
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.hyper_nonfinite", [](Desc& d, Fuzz& f) {
                   const double x = f.pick<double>({NAN, INFINITY, -INFINITY});
                   switch (f.range(0, 4)) {
                     case 0: d.lr = x; break;
                     case 1: d.beta2_decay = x; break;
                     case 2: d.eps2 = x; break;
                     case 3: d.d = x; break;
                     default: d.weight_decay = x; break;
                   }
                 }});
    m.push_back({"desc.hyper_out_of_range", [](Desc& d, Fuzz& f) {
                   switch (f.range(0, 4)) {
                     case 0: d.lr = -0.5; break;
                     case 1: d.beta2_decay = 0.5; break;
                     case 2: d.eps1 = -1.0; break;
                     case 3: d.d = 0.0; break;
                     default: d.weight_decay = -1.0; break;
                   }
                 }});
    return m;
  }

  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "AdafactorDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", shapes";
    for (const Dims& s : d.shapes) os << " " << dims_str(s);
    os << ", lr " << d.lr << ", wd " << d.weight_decay << ", maximize " << d.maximize << ", device_scalars "
       << d.device_scalars << ", out_of_place " << d.out_of_place << "}";
    return os.str();
  }
};

}  // namespace contract
