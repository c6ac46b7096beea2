// Contract traits of the random family's RandomPlan, DropoutPlan and
// DropoutBackwardPlan (include/baracuda/ops/random.hpp). The Args' seed stays
// {0, 0}, so every run of a descriptor draws the same numbers; device_offset
// stays off (a run then changes its own input, the offset tensor, which the
// suite's repeat checks do not expect): its tensor is an unused optional slot
// the plans must refuse.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/random.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/reduce_traits.hpp"  // reduce_contract::add_dims_mutators

namespace contract {
namespace random_contract {

inline constexpr DType kFp[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

// Rank 0..3, extents 1..9 (rarely 0).
inline Dims any_shape(Fuzz& f) {
  Dims s;
  const int r = static_cast<int>(f.range(0, 3));
  for (int i = 0; i < r; ++i) s.push_back(f.chance(0.05) ? 0 : f.range(1, 9));
  return s;
}

template <class Args>
Slot<Args> unused_offset(void (*bind)(Args&, const TensorMut&)) {
  Slot<Args> s = input<Args>("offset", DType::I64, Dims{1}, bind);
  s.role = Role::Unused;
  s.optional = true;
  return s;
}

}  // namespace random_contract

struct RandomTraits {
  using Plan = baracuda::RandomPlan;
  using Desc = baracuda::RandomDescriptor;
  using Args = baracuda::RandomArgs;
  using RD = baracuda::RandomDistribution;
  static constexpr const char* kName = "RandomPlan";
  static Desc make(RD dist, DType t, Dims shape) {
    Desc d;
    d.distribution = dist;
    d.dtype = t;
    d.shape = shape;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d = make(static_cast<RD>(f.range(0, 4)), random_contract::kFp[f.range(0, 3)], random_contract::any_shape(f));
    if (d.distribution == RD::RandInt && f.chance(0.4)) d.dtype = f.chance(0.5) ? DType::I32 : DType::I64;
    if (d.distribution == RD::Uniform) d.low = -2, d.high = f.chance(0.5) ? 3 : -2;
    if (d.distribution == RD::Normal || d.distribution == RD::TruncatedNormal) d.mean = 0.5, d.std = 2;
    if (d.distribution == RD::Bernoulli) {
      d.p = 0.3;
      d.p_tensor = f.chance(0.5);
      d.p_dtype = random_contract::kFp[f.range(0, 3)];
    }
    if (d.distribution == RD::RandInt) d.int_low = -50, d.int_high = f.chance(0.5) ? 50 : -49;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(RD::Uniform, DType::F32, {0}), make(RD::Normal, DType::BF16, {3, 0}),
            make(RD::RandInt, DType::I64, {0, 2})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](RD dist, auto fn) {
      Desc d = make(dist, DType::F32, {4, 5});
      fn(d);
      return d;
    };
    return {{"dtype_unknown", with(RD::Uniform, [](Desc& d) { d.dtype = static_cast<DType>(200); })},
            {"dtype_integer_uniform", with(RD::Uniform, [](Desc& d) { d.dtype = DType::I32; })},
            {"dtype_u8_randint", with(RD::RandInt, [](Desc& d) { d.dtype = DType::U8; })},
            {"shape_negative", with(RD::Normal, [](Desc& d) { d.shape = Dims{3, -2}; })},
            {"distribution_unknown", with(RD::Normal, [](Desc& d) { d.distribution = static_cast<RD>(9); })},
            {"uniform_low_above_high", with(RD::Uniform, [](Desc& d) { d.low = 1, d.high = 0; })},
            {"normal_std_negative", with(RD::Normal, [](Desc& d) { d.std = -1; })},
            {"trunc_a_not_below_b", with(RD::TruncatedNormal, [](Desc& d) { d.a = 2, d.b = 2; })},
            {"bernoulli_p_above_one", with(RD::Bernoulli, [](Desc& d) { d.p = 1.5; })},
            {"bernoulli_p_dtype_int", with(RD::Bernoulli, [](Desc& d) { d.p_tensor = true, d.p_dtype = DType::I64; })},
            {"p_tensor_not_bernoulli", with(RD::Uniform, [](Desc& d) { d.p_tensor = true; })},
            {"randint_empty_range", with(RD::RandInt, [](Desc& d) { d.int_low = 5, d.int_high = 5; })},
            {"randint_f16_bounds", with(RD::RandInt, [](Desc& d) { d.dtype = DType::F16, d.int_high = 5000; })}};
  }
  static std::vector<Desc> workspace_descs() { return {}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const bool pt = d.distribution == RD::Bernoulli && d.p_tensor;
    auto ps = optional_input<Args>(pt, "p", pt ? d.p_dtype : DType::F32, d.shape,
                                   [](Args& a, const TensorMut& t) { a.p = t; });
    ps.values = [](Rng& rng, std::vector<double>& v) {
      for (double& x : v) x = std::uniform_real_distribution<double>(0, 1)(rng);
    };
    return {ps, output<Args>("out", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.out = t; }),
            random_contract::unused_offset<Args>([](Args& a, const TensorMut& t) { a.offset = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::shape, "shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.p_dtype_any", [](Desc& d, Fuzz& f) { d.p_tensor = true, d.p_dtype = f.any_dtype(); }});
    m.push_back({"desc.distribution_any", [](Desc& d, Fuzz& f) { d.distribution = static_cast<RD>(f.range(-2, 10)); }});
    m.push_back({"desc.doubles_any", [](Desc& d, Fuzz& f) {
                   d.low = f.any_double(), d.high = f.any_double(), d.mean = f.any_double(), d.std = f.any_double();
                   d.a = f.any_double(), d.b = f.any_double(), d.p = f.any_double();
                 }});
    m.push_back({"desc.int_bounds_any", [](Desc& d, Fuzz& f) {
                   d.distribution = RD::RandInt;
                   d.int_low = f.any_int(), d.int_high = f.any_int();
                 }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "RandomDescriptor{" << baracuda::random_distribution_name(d.distribution) << ", dtype "
       << baracuda::dtype_name(d.dtype) << ", shape " << dims_str(d.shape) << ", low " << d.low << ", high " << d.high
       << ", mean " << d.mean << ", std " << d.std << ", a " << d.a << ", b " << d.b << ", p " << d.p
       << ", p_tensor " << d.p_tensor << " (" << baracuda::dtype_name(d.p_dtype) << "), int [" << d.int_low << ", "
       << d.int_high << ")}";
    return os.str();
  }
};

struct DropoutTraits {
  using Plan = baracuda::DropoutPlan;
  using Desc = baracuda::DropoutDescriptor;
  using Args = baracuda::DropoutArgs;
  static constexpr const char* kName = "DropoutPlan";
  static Desc make(DType t, Dims shape, double p, bool save_mask) {
    Desc d;
    d.dtype = t, d.shape = shape, d.p = p, d.save_mask = save_mask;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return make(random_contract::kFp[f.range(0, 3)], random_contract::any_shape(f), f.pick<double>({0.0, 0.2, 0.5, 1.0}),
                f.chance(0.5));
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {0}, 0.5, true), make(DType::BF16, {4, 0}, 0.1, false)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    return {{"dtype_int", make(DType::I32, {4}, 0.5, false)},
            {"dtype_unknown", make(static_cast<DType>(200), {4}, 0.5, false)},
            {"p_negative", make(DType::F32, {4}, -0.5, false)},
            {"p_nan", make(DType::F32, {4}, std::numeric_limits<double>::quiet_NaN(), false)},
            {"shape_negative", make(DType::F32, {-4}, 0.5, false)}};
  }
  static std::vector<Desc> workspace_descs() { return {}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto mask = output<Args>("mask", DType::U8, p.mask_shape(), [](Args& a, const TensorMut& t) { a.mask = t; });
    if (!d.save_mask) mask.role = Role::Unused, mask.optional = true;
    return {input<Args>("x", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.x = t; }),
            output<Args>("out", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.out = t; }, "x"), mask,
            random_contract::unused_offset<Args>([](Args& a, const TensorMut& t) { a.offset = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::shape, "shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.p_any", [](Desc& d, Fuzz& f) { d.p = f.any_double(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "DropoutDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", shape " << dims_str(d.shape) << ", p "
       << d.p << ", save_mask " << d.save_mask << "}";
    return os.str();
  }
};

struct DropoutBackwardTraits {
  using Plan = baracuda::DropoutBackwardPlan;
  using Desc = baracuda::DropoutBackwardDescriptor;
  using Args = baracuda::DropoutBackwardArgs;
  static constexpr const char* kName = "DropoutBackwardPlan";
  static Desc make(DType t, Dims shape, double p, bool use_mask) {
    Desc d;
    d.dtype = t, d.shape = shape, d.p = p, d.use_mask = use_mask;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return make(random_contract::kFp[f.range(0, 3)], random_contract::any_shape(f), f.pick<double>({0.0, 0.2, 0.5, 1.0}),
                f.chance(0.5));
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {0}, 0.5, true), make(DType::F16, {0, 3}, 0.1, false)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    return {{"dtype_int", make(DType::I64, {4}, 0.5, false)},
            {"p_above_one", make(DType::F32, {4}, 2.0, true)},
            {"shape_negative", make(DType::F32, {2, -4}, 0.5, false)}};
  }
  static std::vector<Desc> workspace_descs() { return {}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto mask = optional_input<Args>(d.use_mask, "mask", DType::U8, p.mask_shape(),
                                     [](Args& a, const TensorMut& t) { a.mask = t; });
    mask.values = [](Rng& rng, std::vector<double>& v) {
      for (double& x : v) x = static_cast<double>(std::uniform_int_distribution<int>(0, 255)(rng));
    };
    return {input<Args>("dy", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.dy = t; }), mask,
            random_contract::unused_offset<Args>([](Args& a, const TensorMut& t) { a.offset = t; }),
            output<Args>("dx", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.dx = t; }, "dy")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::shape, "shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.p_any", [](Desc& d, Fuzz& f) { d.p = f.any_double(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "DropoutBackwardDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", shape " << dims_str(d.shape)
       << ", p " << d.p << ", use_mask " << d.use_mask << "}";
    return os.str();
  }
};

}  // namespace contract
