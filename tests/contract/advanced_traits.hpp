// Contract traits of advanced indexing: IndexGetPlan (x[i, :, j]) and
// IndexPutPlan (index_put_, accumulate). One index slot per indexed dim
// ("indices[d]"), the unindexed dims below the rank as unused optional slots
// (giving one is an error). Index values come from the slot's value
// generator, in [0, size) of their dim (a bad index is an error on the CPU).
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/indexing_advanced.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/indexing_traits.hpp"  // indices_below
#include "contract/reduce_traits.hpp"    // reduce_contract::add_dims_mutators

namespace contract {
namespace advanced_contract {

using baracuda::AdvancedIndex;

inline constexpr DType kTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64};
inline constexpr const char* kSlotNames[baracuda::kMaxRank] = {"indices[0]", "indices[1]", "indices[2]", "indices[3]",
                                                                "indices[4]", "indices[5]", "indices[6]", "indices[7]"};

inline AdvancedIndex make(DType it, Dims self, std::vector<std::pair<int, Dims>> idx) {
  AdvancedIndex ix;
  ix.index_dtype = it;
  ix.self_shape = self;
  for (auto& [d, s] : idx) ix.has_index[d] = true, ix.index_shape[d] = s;
  return ix;
}

// Self rank 1..3 (extents 1..5), a random non-empty set of indexed dims, a
// broadcast shape B of rank 0..2 and each index shape B with some extents 1
// or leading axes dropped.
inline AdvancedIndex valid_index(Fuzz& f) {
  AdvancedIndex ix;
  ix.index_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
  const int r = static_cast<int>(f.range(1, 3));
  for (int d = 0; d < r; ++d) ix.self_shape.push_back(f.range(1, 5));
  for (int d = 0; d < r; ++d) ix.has_index[d] = f.chance(0.5);
  ix.has_index[f.range(0, r - 1)] = true;
  Dims B;
  for (int b = static_cast<int>(f.range(0, 2)); b > 0; --b) B.push_back(f.range(1, 4));
  for (int d = 0; d < r; ++d) {
    if (!ix.has_index[d]) continue;
    Dims s;
    for (int a = static_cast<int>(f.range(0, B.rank)); a < B.rank; ++a) s.push_back(f.chance(0.3) ? 1 : B[a]);
    ix.index_shape[d] = s;
  }
  return ix;
}

template <class Args>
void add_index_slots(std::vector<Slot<Args>>& v, const AdvancedIndex& ix) {
  for (int d = 0; d < ix.self_shape.rank && d < baracuda::kMaxRank; ++d) {
    const bool used = ix.has_index[d];
    Slot<Args> s = optional_input<Args>(used, kSlotNames[d], ix.index_dtype, used ? ix.index_shape[d] : Dims{}, nullptr);
    s.bind = [d](Args& a, const TensorMut& t) { a.indices[d] = t; };
    s.values = indexing_contract::indices_below(ix.self_shape[d]);
    s.values_checked = true;
    v.push_back(std::move(s));
  }
}

// The standard extent mutations on the indexing expression's shapes.
template <class Desc>
void add_index_mutators(std::vector<DescMutator<Desc>>& m) {
  std::vector<DescMutator<AdvancedIndex>> inner;
  reduce_contract::add_dims_mutators<AdvancedIndex>(inner, &AdvancedIndex::self_shape, "index.self_shape");
  for (auto& mu : inner)
    m.push_back({mu.name, [apply = mu.apply](Desc& d, Fuzz& f) { apply(d.index, f); }});
  m.push_back({"desc.index.index_shape_extent", [](Desc& d, Fuzz& f) {
                 for (int k = 0; k < baracuda::kMaxRank; ++k)
                   if (d.index.has_index[k] && d.index.index_shape[k].rank > 0) d.index.index_shape[k][0] = f.any_int();
               }});
  m.push_back({"desc.index.index_shape_rank_corrupt", [](Desc& d, Fuzz& f) {
                 d.index.has_index[0] = true;
                 d.index.index_shape[0].rank = f.corrupt_rank();
               }});
  m.push_back({"desc.index.has_index_flip", [](Desc& d, Fuzz& f) {
                 const int k = static_cast<int>(f.range(0, baracuda::kMaxRank - 1));
                 d.index.has_index[k] = !d.index.has_index[k];
               }});
  m.push_back({"desc.index.index_dtype_any", [](Desc& d, Fuzz& f) { d.index.index_dtype = f.any_dtype(); }});
  m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
}

inline std::string describe_index(const AdvancedIndex& ix) {
  std::ostringstream os;
  os << "index_dtype " << baracuda::dtype_name(ix.index_dtype) << ", self_shape " << dims_str(ix.self_shape)
     << ", indices {";
  for (int d = 0; d < baracuda::kMaxRank; ++d)
    if (ix.has_index[d]) os << " " << d << ": " << dims_str(ix.index_shape[d]);
  os << " }";
  return os.str();
}

}  // namespace advanced_contract

struct IndexGetTraits {
  using Plan = baracuda::IndexGetPlan;
  using Desc = baracuda::IndexGetDescriptor;
  using Args = baracuda::IndexGetArgs;
  static constexpr const char* kName = "IndexGetPlan";
  static Desc make(DType t, baracuda::AdvancedIndex ix) {
    Desc d;
    d.dtype = t;
    d.index = ix;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return make(advanced_contract::kTypes[f.range(0, 5)], advanced_contract::valid_index(f));
  }
  static std::vector<Desc> zero_size_descs() {
    using advanced_contract::make;
    return {IndexGetTraits::make(DType::F32, make(DType::I64, {3, 4}, {{0, {0}}})),
            IndexGetTraits::make(DType::BF16, make(DType::I32, {3, 0}, {{0, {2}}})),
            IndexGetTraits::make(DType::I64, make(DType::I64, {2, 3, 4}, {{0, {0, 1}}, {2, {5}}}))};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, advanced_contract::make(DType::I64, {4, 5, 6}, {{0, {3}}, {2, {2, 1}}}));
      fn(d);
      return d;
    };
    return {{"index_dtype_float", with([](Desc& d) { d.index.index_dtype = DType::F32; })},
            {"rank_0", with([](Desc& d) { d.index.self_shape = Dims{}; })},
            {"nothing_indexed", with([](Desc& d) { d.index.has_index[0] = d.index.has_index[2] = false; })},
            {"index_past_rank", with([](Desc& d) { d.index.has_index[3] = true; })},
            {"not_broadcastable", with([](Desc& d) { d.index.index_shape[2] = Dims{2, 4}; })},
            {"index_shape_negative", with([](Desc& d) { d.index.index_shape[0] = Dims{-3}; })},
            {"result_rank_9", with([](Desc& d) { d.index.index_shape[0] = Dims{1, 1, 1, 1, 1, 1, 1, 3}; })}};
  }
  static std::vector<Desc> workspace_descs() {
    return {make(DType::F32, advanced_contract::make(DType::I64, {8, 16}, {{1, {4}}}))};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("x", d.dtype, d.index.self_shape, [](Args& a, const TensorMut& t) { a.x = t; }));
    advanced_contract::add_index_slots(v, d.index);
    v.push_back(output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    advanced_contract::add_index_mutators(m);
    return m;
  }
  static std::string describe(const Desc& d) {
    return "IndexGetDescriptor{dtype " + std::string(baracuda::dtype_name(d.dtype)) + ", " +
           advanced_contract::describe_index(d.index) + "}";
  }
};

struct IndexPutTraits {
  using Plan = baracuda::IndexPutPlan;
  using Desc = baracuda::IndexPutDescriptor;
  using Args = baracuda::IndexPutArgs;
  static constexpr const char* kName = "IndexPutPlan";
  static Desc make(DType t, baracuda::AdvancedIndex ix, Dims values, bool accumulate) {
    Desc d;
    d.dtype = t;
    d.index = ix;
    d.values_shape = values;
    d.accumulate = accumulate;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d = make(advanced_contract::kTypes[f.range(0, 5)], advanced_contract::valid_index(f), {}, f.chance(0.5));
    Dims B, R;
    (void)baracuda::advanced_index_shapes("IndexPutPlan", d.index, &B, &R);
    // values: R's trailing axes, some of them 1 (broadcast)
    for (int a = static_cast<int>(f.range(0, R.rank)); a < R.rank; ++a) d.values_shape.push_back(f.chance(0.3) ? 1 : R[a]);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using advanced_contract::make;
    return {IndexPutTraits::make(DType::F32, make(DType::I64, {0, 4}, {{0, {3}}}), {4}, true),
            IndexPutTraits::make(DType::BF16, make(DType::I32, {3, 0}, {{0, {2}}}), {}, false)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, advanced_contract::make(DType::I64, {4, 5}, {{0, {3}}}), {3, 5}, true);
      fn(d);
      return d;
    };
    return {{"accumulate_bool", with([](Desc& d) { d.dtype = DType::Bool; })},
            {"index_dtype_float", with([](Desc& d) { d.index.index_dtype = DType::F16; })},
            {"nothing_indexed", with([](Desc& d) { d.index.has_index[0] = false; })},
            {"values_not_broadcastable", with([](Desc& d) { d.values_shape = Dims{3, 4}; })},
            {"values_rank_past_result", with([](Desc& d) { d.values_shape = Dims{1, 3, 5}; })},
            {"values_shape_negative", with([](Desc& d) { d.values_shape = Dims{-1}; })}};
  }
  static std::vector<Desc> workspace_descs() {
    return {make(DType::F32, advanced_contract::make(DType::I64, {8, 16}, {{0, {4}}}), {16}, true),
            make(DType::BF16, advanced_contract::make(DType::I32, {30, 7}, {{0, {50, 1}}, {1, {7}}}), {}, false)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    std::vector<Slot<Args>> v;
    v.push_back(input<Args>("self", d.dtype, d.index.self_shape, [](Args& a, const TensorMut& t) { a.self = t; }));
    advanced_contract::add_index_slots(v, d.index);
    v.push_back(input<Args>("values", d.dtype, d.values_shape, [](Args& a, const TensorMut& t) { a.values = t; }));
    v.push_back(output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }, "self"));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    advanced_contract::add_index_mutators(m);
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::values_shape, "values_shape");
    m.push_back({"desc.accumulate_flip", [](Desc& d, Fuzz&) { d.accumulate = !d.accumulate; }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "IndexPutDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", " << advanced_contract::describe_index(d.index)
       << ", values_shape " << dims_str(d.values_shape) << ", accumulate " << d.accumulate << "}";
    return os.str();
  }
};

}  // namespace contract
