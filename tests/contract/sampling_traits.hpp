// Contract traits of RandpermPlan and MultinomialPlan (include/baracuda/ops/random_sampling.hpp).
// The suite runs every plan twice on the same arguments and expects the same
// bits, and never changes an input: so valid_desc() keeps device_offset false
// (the offset tensor is an unused optional slot, which must be refused when
// given); device_offset is tested in tests/random/*sampling*.cpp. The seed is
// Args' default {0, 0}. Multinomial weights come from (0.05, 1): every row valid.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/random_sampling.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/reduce_traits.hpp"  // reduce_contract::add_dims_mutators

namespace contract {

struct RandpermTraits {
  using Plan = baracuda::RandpermPlan;
  using Desc = baracuda::RandpermDescriptor;
  using Args = baracuda::RandpermArgs;
  static constexpr const char* kName = "RandpermPlan";
  static Desc make(int64_t n, DType t) {
    Desc d;
    d.n = n;
    d.dtype = t;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    static constexpr DType kTypes[] = {DType::I64, DType::I32, DType::F64, DType::F32, DType::F16, DType::BF16};
    const DType t = kTypes[f.range(0, 5)];
    return make(f.range(1, t == DType::BF16 ? 256 : 300), t);  // bf16 holds integers exactly up to 256
  }
  static std::vector<Desc> zero_size_descs() { return {make(0, DType::I64), make(0, DType::F16)}; }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    return {{"dtype_u8", make(4, DType::U8)},
            {"dtype_unknown", make(4, static_cast<DType>(203))},
            {"n_negative", make(-1, DType::I64)},
            {"n_too_large_bf16", make(257, DType::BF16)}};
  }
  static std::vector<Desc> workspace_descs() { return {make(1000, DType::I64)}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    return {output<Args>("out", p.descriptor().dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }),
            optional_input<Args>(p.descriptor().device_offset, "offset", DType::I64, Dims{1},
                                 [](Args& a, const TensorMut& t) { a.offset = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m = extent_mutators<Desc>({&Desc::n});
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "RandpermDescriptor{n " << d.n << ", dtype " << baracuda::dtype_name(d.dtype) << ", device_offset "
       << d.device_offset << "}";
    return os.str();
  }
};

struct MultinomialTraits {
  using Plan = baracuda::MultinomialPlan;
  using Desc = baracuda::MultinomialDescriptor;
  using Args = baracuda::MultinomialArgs;
  static constexpr const char* kName = "MultinomialPlan";
  static Desc make(DType t, Dims probs, int64_t S, bool replacement, DType out = DType::I64) {
    Desc d;
    d.dtype = t;
    d.probs_shape = probs;
    d.num_samples = S;
    d.replacement = replacement;
    d.out_dtype = out;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    static constexpr DType kTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
    const int64_t C = f.range(1, 8);
    const bool repl = f.chance(0.5);
    const Dims probs = f.chance(0.3) ? Dims{C} : Dims{f.range(1, 4), C};
    return make(kTypes[f.range(0, 3)], probs, repl ? f.range(1, 9) : f.range(1, C), repl,
                f.chance(0.5) ? DType::I64 : DType::I32);
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {3, 4}, 0, false), make(DType::BF16, {0, 4}, 2, true), make(DType::F64, {0}, 0, true)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    return {{"probs_dtype_int", make(DType::I32, {3, 4}, 2, true)},
            {"out_dtype_float", make(DType::F32, {3, 4}, 2, true, DType::F32)},
            {"probs_rank_3", make(DType::F32, {2, 3, 4}, 2, true)},
            {"probs_rank_0", make(DType::F32, {}, 1, true)},
            {"num_samples_negative", make(DType::F32, {3, 4}, -1, true)},
            {"num_samples_above_C", make(DType::F32, {3, 4}, 5, false)},
            {"no_category", make(DType::F32, {3, 0}, 1, true)}};
  }
  static std::vector<Desc> workspace_descs() {
    return {make(DType::F32, {4, 100}, 7, true), make(DType::F16, {4, 100}, 7, false)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto probs = input<Args>("probs", d.dtype, d.probs_shape, [](Args& a, const TensorMut& t) { a.probs = t; });
    probs.values = [](Rng& rng, std::vector<double>& v) {
      for (double& x : v) x = bt::uniform(rng, 0.05, 1.0);
    };
    probs.values_checked = true;
    return {probs, output<Args>("out", d.out_dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }),
            optional_input<Args>(d.device_offset, "offset", DType::I64, Dims{1},
                                 [](Args& a, const TensorMut& t) { a.offset = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m = extent_mutators<Desc>({&Desc::num_samples});
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::probs_shape, "probs_shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.out_dtype_any", [](Desc& d, Fuzz& f) { d.out_dtype = f.any_dtype(); }});
    m.push_back({"desc.replacement_flip", [](Desc& d, Fuzz&) { d.replacement = !d.replacement; }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "MultinomialDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", probs_shape "
       << dims_str(d.probs_shape) << ", num_samples " << d.num_samples << ", replacement " << d.replacement
       << ", out_dtype " << baracuda::dtype_name(d.out_dtype) << ", device_offset " << d.device_offset << "}";
    return os.str();
  }
};

}  // namespace contract
