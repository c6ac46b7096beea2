// Contract traits of TakePlan, PutPlan and OneHotPlan (include/baracuda/ops/indexing_take.hpp).
// Index values come from the slot's value generator and are valid (a bad
// index is an error on the CPU): take / put_ draw from [-N, N) (negatives
// wrap), one_hot from [0, C). The fuzz's broadcast index views make duplicates.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/indexing_take.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/indexing_traits.hpp"  // indexing_contract::kGatherTypes
#include "contract/reduce_traits.hpp"    // reduce_contract::add_dims_mutators

namespace contract {
namespace take_contract {

// Rank 0..3, extents 1..5 (rarely 0).
inline Dims any_shape(Fuzz& f, int max_rank = 3) {
  Dims s;
  const int r = static_cast<int>(f.range(0, max_rank));
  for (int i = 0; i < r; ++i) s.push_back(f.chance(0.05) ? 0 : f.range(1, 5));
  return s;
}

// Valid flat indices of an N-element tensor: [-N, N).
inline std::function<void(Rng&, std::vector<double>&)> flat_indices(int64_t N) {
  return [N](Rng& rng, std::vector<double>& v) {
    for (double& x : v) x = N > 0 ? static_cast<double>(std::uniform_int_distribution<int64_t>(-N, N - 1)(rng)) : 0.0;
  };
}

}  // namespace take_contract

struct TakeTraits {
  using Plan = baracuda::TakePlan;
  using Desc = baracuda::TakeDescriptor;
  using Args = baracuda::TakeArgs;
  static constexpr const char* kName = "TakePlan";
  static Desc make(DType t, DType it, Dims x, Dims index) {
    Desc d;
    d.dtype = t;
    d.index_dtype = it;
    d.x_shape = x;
    d.index_shape = index;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    d.dtype = indexing_contract::kGatherTypes[f.range(0, 5)];
    d.index_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
    do d.x_shape = take_contract::any_shape(f);
    while (baracuda::shape_numel(d.x_shape) == 0);  // an empty x has no valid index
    d.index_shape = take_contract::any_shape(f);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, DType::I64, {3, 4}, {0, 4}), make(DType::BF16, DType::I32, {0, 2}, {0}),
            make(DType::I64, DType::I64, {}, {2, 0})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, DType::I64, {4, 5}, {3, 2});
      fn(d);
      return d;
    };
    return {{"dtype_unknown", with([](Desc& d) { d.dtype = static_cast<DType>(200); })},
            {"index_dtype_float", with([](Desc& d) { d.index_dtype = DType::F32; })},
            {"x_shape_negative", with([](Desc& d) { d.x_shape = Dims{3, -2}; })},
            {"index_shape_negative", with([](Desc& d) { d.index_shape = Dims{-1}; })}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::F32, DType::I64, {8, 16}, {40})}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("index", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.index = t; });
    idx.values = take_contract::flat_indices(baracuda::shape_numel(d.x_shape));
    idx.values_checked = true;
    return {input<Args>("x", d.dtype, d.x_shape, [](Args& a, const TensorMut& t) { a.x = t; }), idx,
            output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::x_shape, "x_shape");
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::index_shape, "index_shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.index_dtype_any", [](Desc& d, Fuzz& f) { d.index_dtype = f.any_dtype(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "TakeDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", index_dtype "
       << baracuda::dtype_name(d.index_dtype) << ", x_shape " << dims_str(d.x_shape) << ", index_shape "
       << dims_str(d.index_shape) << "}";
    return os.str();
  }
};

struct PutTraits {
  using Plan = baracuda::PutPlan;
  using Desc = baracuda::PutDescriptor;
  using Args = baracuda::PutArgs;
  static constexpr const char* kName = "PutPlan";
  static Desc make(DType t, Dims self, Dims index, Dims source, bool accumulate) {
    Desc d;
    d.dtype = t;
    d.index_dtype = DType::I64;
    d.self_shape = self;
    d.index_shape = index;
    d.source_shape = source;
    d.accumulate = accumulate;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    d.dtype = indexing_contract::kGatherTypes[f.range(0, 5)];
    d.index_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
    d.accumulate = f.chance(0.5);
    do d.self_shape = take_contract::any_shape(f);
    while (baracuda::shape_numel(d.self_shape) == 0);
    d.index_shape = take_contract::any_shape(f);
    // source: index's shape, or its elements in one axis (torch only needs equal counts)
    d.source_shape = f.chance(0.5) ? d.index_shape : Dims{baracuda::shape_numel(d.index_shape)};
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {0, 4}, {0}, {0}, true), make(DType::BF16, {3, 0}, {2, 0}, {0}, false)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, {4, 5}, {3, 2}, {6}, true);
      fn(d);
      return d;
    };
    return {{"dtype_bool_accumulate", with([](Desc& d) { d.dtype = DType::Bool; })},
            {"dtype_unknown", with([](Desc& d) { d.dtype = static_cast<DType>(201), d.accumulate = false; })},
            {"index_dtype_float", with([](Desc& d) { d.index_dtype = DType::F16; })},
            {"source_count_mismatch", with([](Desc& d) { d.source_shape = Dims{5}; })},
            {"self_shape_negative", with([](Desc& d) { d.self_shape = Dims{-4}; })}};
  }
  static std::vector<Desc> workspace_descs() {
    return {make(DType::F32, {8, 16}, {40}, {40}, true), make(DType::BF16, {30, 7}, {50, 7}, {350}, false)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("index", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.index = t; });
    idx.values = take_contract::flat_indices(baracuda::shape_numel(d.self_shape));
    idx.values_checked = true;
    return {input<Args>("self", d.dtype, d.self_shape, [](Args& a, const TensorMut& t) { a.self = t; }), idx,
            input<Args>("source", d.dtype, d.source_shape, [](Args& a, const TensorMut& t) { a.source = t; }),
            output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }, "self")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::self_shape, "self_shape");
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::index_shape, "index_shape");
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::source_shape, "source_shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.index_dtype_any", [](Desc& d, Fuzz& f) { d.index_dtype = f.any_dtype(); }});
    m.push_back({"desc.accumulate_flip", [](Desc& d, Fuzz&) { d.accumulate = !d.accumulate; }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "PutDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", index_dtype "
       << baracuda::dtype_name(d.index_dtype) << ", self_shape " << dims_str(d.self_shape) << ", index_shape "
       << dims_str(d.index_shape) << ", source_shape " << dims_str(d.source_shape) << ", accumulate " << d.accumulate
       << "}";
    return os.str();
  }
};

struct OneHotTraits {
  using Plan = baracuda::OneHotPlan;
  using Desc = baracuda::OneHotDescriptor;
  using Args = baracuda::OneHotArgs;
  static constexpr const char* kName = "OneHotPlan";
  static Desc make(DType t, DType it, Dims index, int64_t C) {
    Desc d;
    d.dtype = t;
    d.index_dtype = it;
    d.index_shape = index;
    d.num_classes = C;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    d.dtype = indexing_contract::kGatherTypes[f.range(0, 5)];
    d.index_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
    d.index_shape = take_contract::any_shape(f);
    d.num_classes = f.range(1, 9);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::I64, DType::I64, {0}, 4), make(DType::F32, DType::I32, {3, 0}, 2)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::I64, DType::I64, {4, 3}, 5);
      fn(d);
      return d;
    };
    return {{"num_classes_infer", with([](Desc& d) { d.num_classes = -1; })},
            {"num_classes_zero", with([](Desc& d) { d.num_classes = 0; })},
            {"dtype_unknown", with([](Desc& d) { d.dtype = static_cast<DType>(202); })},
            {"index_dtype_float", with([](Desc& d) { d.index_dtype = DType::F32; })},
            {"index_rank_8", with([](Desc& d) { d.index_shape = Dims{1, 1, 1, 1, 1, 1, 1, 1}; })},
            {"index_shape_negative", with([](Desc& d) { d.index_shape = Dims{2, -3}; })}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::BF16, DType::I64, {64}, 40)}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("indices", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.indices = t; });
    idx.values = indexing_contract::indices_below(d.num_classes);
    idx.values_checked = true;
    return {idx, output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::index_shape, "index_shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.index_dtype_any", [](Desc& d, Fuzz& f) { d.index_dtype = f.any_dtype(); }});
    m.push_back({"desc.num_classes_any", [](Desc& d, Fuzz& f) { d.num_classes = f.any_int(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "OneHotDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", index_dtype "
       << baracuda::dtype_name(d.index_dtype) << ", index_shape " << dims_str(d.index_shape) << ", num_classes "
       << d.num_classes << "}";
    return os.str();
  }
};

}  // namespace contract
