// Contract traits of the masked indexing plans: NonzeroPlan, MaskedSelectPlan,
// MaskedScatterPlan (include/baracuda/ops/indexing_masked.hpp). Instantiated at
// the end of tests/contract/cpu_indexing.cpp and cuda_indexing.cpp.
//
// count is an optional output (descriptor.has_count): valid problems use it
// or leave it out across seeds, and the zero-size problems leave it out (it is
// the only output that is never empty). MaskedScatter's source is at least as
// long as self, so every mask (the suite's default values make most of it
// true) has a source element for each true position; the mask's values decide
// whether run() succeeds, so the slot is values_checked.
#pragma once
#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/indexing_masked.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/reduce_traits.hpp"  // reduce_contract::add_dims_mutators

namespace contract {
namespace masked_contract {

inline constexpr DType kTypes[] = {DType::Bool, DType::U8,   DType::I8,  DType::I16, DType::I32,
                                   DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};

// Rank 0..3, extents 1..4 (rarely 0).
inline Dims shape(Fuzz& f) {
  Dims s;
  const int r = static_cast<int>(f.range(0, 3));
  for (int i = 0; i < r; ++i) s.push_back(f.chance(0.05) ? 0 : f.range(1, 4));
  return s;
}

// A shape that broadcasts to s: some leading axes dropped, some extents 1.
inline Dims broadcastable_to(const Dims& s, Fuzz& f) {
  Dims m;
  const int drop = static_cast<int>(f.range(0, s.rank));
  for (int i = drop; i < s.rank; ++i) m.push_back(f.chance(0.3) ? 1 : s[i]);
  return m;
}

template <class Args>
Slot<Args> count_slot(bool used, void (*bind)(Args&, const TensorMut&)) {
  Slot<Args> s = output<Args>("count", DType::I64, {}, bind);
  s.optional = true;
  if (!used) s.role = Role::Unused;
  return s;
}

inline std::string str(const Dims& d) { return dims_str(d); }

}  // namespace masked_contract

// ---------------------------------------------------------------------------
struct NonzeroTraits {
  using Plan = baracuda::NonzeroPlan;
  using Desc = baracuda::NonzeroDescriptor;
  using Args = baracuda::NonzeroArgs;
  static constexpr const char* kName = "NonzeroPlan";
  static Desc make(DType t, Dims s, int64_t m, bool has_count = true) {
    Desc d;
    d.dtype = t;
    d.shape = s;
    d.capacity = m;
    d.has_count = has_count;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    const Dims s = masked_contract::shape(f);
    const int64_t n = baracuda::shape_numel(s);
    Desc d = make(masked_contract::kTypes[f.range(0, 9)], s, f.chance(0.5) ? n : f.range(0, n + 2), f.chance(0.8));
    d.fill_value = f.chance(0.5) ? 0 : -1;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {3, 4}, 0, false), make(DType::Bool, {0, 2}, 0, false), make(DType::I64, {}, 3, false) /* out [3, 0] */};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    return {{"dtype_c64", make(DType::C64, {3}, 3)},
            {"dtype_f8", make(DType::F8E5M2, {3}, 3)},
            {"shape_negative", make(DType::F32, {3, -1}, 3)},
            {"capacity_negative", make(DType::F32, {3}, -1)}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::F32, {8, 16}, 128)}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    return {input<Args>("x", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.x = t; }),
            output<Args>("out", DType::I64, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }),
            masked_contract::count_slot<Args>(d.has_count, [](Args& a, const TensorMut& t) { a.count = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::shape, "shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.capacity_any", [](Desc& d, Fuzz& f) { d.capacity = f.any_int(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "NonzeroDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", shape " << masked_contract::str(d.shape)
       << ", capacity " << d.capacity << ", fill_value " << d.fill_value << ", has_count " << d.has_count << "}";
    return os.str();
  }
};

// ---------------------------------------------------------------------------
struct MaskedSelectTraits {
  using Plan = baracuda::MaskedSelectPlan;
  using Desc = baracuda::MaskedSelectDescriptor;
  using Args = baracuda::MaskedSelectArgs;
  static constexpr const char* kName = "MaskedSelectPlan";
  static Desc make(DType t, Dims x, Dims mask, int64_t m, bool has_count = true) {
    Desc d;
    d.dtype = t;
    d.x_shape = x;
    d.mask_shape = mask;
    d.capacity = m;
    d.has_count = has_count;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    const Dims b = masked_contract::shape(f);
    const bool x_full = f.chance(0.5);
    const Dims x = x_full ? b : masked_contract::broadcastable_to(b, f);
    const Dims mask = x_full ? masked_contract::broadcastable_to(b, f) : b;
    const int64_t n = baracuda::shape_numel(b);
    Desc d = make(masked_contract::kTypes[f.range(0, 9)], x, mask, f.chance(0.5) ? n : f.range(0, n + 2),
                  f.chance(0.8));
    d.fill_value = f.chance(0.5) ? 0.0 : 1.0;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {3, 4}, {4}, 0, false), make(DType::BF16, {0, 2}, {2}, 0, false),
            make(DType::U8, {}, {5}, 0, false)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    Desc nan_fill = make(DType::I32, {3}, {3}, 3);
    nan_fill.fill_value = std::numeric_limits<double>::quiet_NaN();
    return {{"dtype_c128", make(DType::C128, {3}, {3}, 3)},
            {"no_broadcast", make(DType::F32, {3, 4}, {2, 1}, 3)},
            {"mask_negative", make(DType::F32, {3}, {-2}, 3)},
            {"capacity_negative", make(DType::F32, {3}, {3}, -1)},
            {"int_fill_nan", nan_fill}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::F32, {8, 16}, {16}, 128)}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    return {input<Args>("x", d.dtype, d.x_shape, [](Args& a, const TensorMut& t) { a.x = t; }),
            input<Args>("mask", DType::Bool, d.mask_shape, [](Args& a, const TensorMut& t) { a.mask = t; }),
            output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }),
            masked_contract::count_slot<Args>(d.has_count, [](Args& a, const TensorMut& t) { a.count = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::x_shape, "x_shape");
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::mask_shape, "mask_shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.capacity_any", [](Desc& d, Fuzz& f) { d.capacity = f.any_int(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "MaskedSelectDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", x_shape "
       << masked_contract::str(d.x_shape) << ", mask_shape " << masked_contract::str(d.mask_shape) << ", capacity "
       << d.capacity << ", fill_value " << d.fill_value << ", has_count " << d.has_count << "}";
    return os.str();
  }
};

// ---------------------------------------------------------------------------
struct MaskedScatterTraits {
  using Plan = baracuda::MaskedScatterPlan;
  using Desc = baracuda::MaskedScatterDescriptor;
  using Args = baracuda::MaskedScatterArgs;
  static constexpr const char* kName = "MaskedScatterPlan";
  static Desc make(DType t, Dims self, Dims mask, Dims source) {
    Desc d;
    d.dtype = t;
    d.self_shape = self;
    d.mask_shape = mask;
    d.source_shape = source;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    const Dims s = masked_contract::shape(f);
    const int64_t n = baracuda::shape_numel(s);
    // source: at least numel(self) elements, flat or 2-D.
    const int64_t extra = f.range(0, 3);
    const Dims src = f.chance(0.5) ? Dims{n + extra} : Dims{n + extra, 1};
    return make(masked_contract::kTypes[f.range(0, 9)], s, masked_contract::broadcastable_to(s, f), src);
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {0, 4}, {4}, {3}), make(DType::BF16, {2, 0}, {1, 0}, {0}),
            make(DType::I8, {0}, {}, {0})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    return {{"dtype_c64", make(DType::C64, {3}, {3}, {3})},
            {"mask_more_axes", make(DType::F32, {3}, {2, 3}, {3})},
            {"mask_not_broadcastable", make(DType::F32, {4, 3}, {2}, {12})},
            {"self_would_broadcast", make(DType::F32, {1, 3}, {2, 3}, {6})},
            {"source_negative", make(DType::F32, {3}, {3}, {-3})}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::F32, {8, 16}, {16}, {128})}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto mask = input<Args>("mask", DType::Bool, d.mask_shape, [](Args& a, const TensorMut& t) { a.mask = t; });
    mask.values_checked = true;  // more true positions than source elements: an error
    return {input<Args>("self", d.dtype, d.self_shape, [](Args& a, const TensorMut& t) { a.self = t; }), mask,
            input<Args>("source", d.dtype, d.source_shape, [](Args& a, const TensorMut& t) { a.source = t; }),
            output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }, "self")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::self_shape, "self_shape");
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::mask_shape, "mask_shape");
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::source_shape, "source_shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "MaskedScatterDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", self_shape "
       << masked_contract::str(d.self_shape) << ", mask_shape " << masked_contract::str(d.mask_shape)
       << ", source_shape " << masked_contract::str(d.source_shape) << "}";
    return os.str();
  }
};

}  // namespace contract
