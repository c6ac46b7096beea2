// Contract traits of the reduction family: ReducePlan, ReduceBackwardPlan,
// ReduceToPlan. A new reduction plan joins with a traits struct here and one
// INSTANTIATE line per suite in tests/contract/cpu_reduce.cpp and cuda_reduce.cpp.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/reduce.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"

namespace contract {
namespace reduce_contract {

using baracuda::ReduceKind;

inline constexpr ReduceKind kAllKinds[] = {ReduceKind::Sum,  ReduceKind::Mean,  ReduceKind::Max,       ReduceKind::Min,
                                           ReduceKind::Prod, ReduceKind::Norm2, ReduceKind::LogSumExp, ReduceKind::Var,
                                           ReduceKind::Std,  ReduceKind::ArgMax, ReduceKind::ArgMin};
inline constexpr ReduceKind kGradKinds[] = {ReduceKind::Sum,   ReduceKind::Mean,      ReduceKind::Max,
                                            ReduceKind::Min,   ReduceKind::Prod,      ReduceKind::Norm2,
                                            ReduceKind::LogSumExp, ReduceKind::Var,   ReduceKind::Std};
inline constexpr DType kFp[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

inline bool needs_element(ReduceKind k) {
  return k == ReduceKind::Max || k == ReduceKind::Min || k == ReduceKind::ArgMax || k == ReduceKind::ArgMin;
}
inline bool int_capable(ReduceKind k) {
  return k == ReduceKind::Sum || k == ReduceKind::Prod || needs_element(k);
}

// Rank 0..4 with extents 0..5 (no zeros when `no_zero`), or now and then rank
// 5..8 with extents 1..2.
inline Dims small_shape(Fuzz& f, bool no_zero) {
  Dims s;
  if (f.chance(0.15)) {
    const int r = static_cast<int>(f.range(5, baracuda::kMaxRank));
    for (int i = 0; i < r; ++i) s.push_back(f.range(1, 2));
    return s;
  }
  const int r = static_cast<int>(f.range(0, 4));
  for (int i = 0; i < r; ++i) s.push_back(f.chance(0.1) && !no_zero ? 0 : f.range(1, 5));
  return s;
}
// A random subset of the axes (empty = all), some written as negative indices.
inline Dims random_axes(Fuzz& f, int rank) {
  Dims a;
  if (rank == 0 || f.chance(0.2)) return a;
  for (int i = 0; i < rank; ++i)
    if (f.chance(0.5)) a.push_back(f.chance(0.3) ? i - rank : i);
  if (a.rank == 0) a.push_back(f.range(0, rank - 1));
  return a;
}

inline baracuda::ReduceDescriptor make(ReduceKind k, DType t, Dims shape, Dims axes, bool keepdim = false) {
  baracuda::ReduceDescriptor d;
  d.kind = k;
  d.dtype = t;
  d.shape = shape;
  d.axes = axes;
  d.keepdim = keepdim;
  return d;
}

inline std::string describe(const baracuda::ReduceDescriptor& d) {
  return std::string("ReduceDescriptor{kind ") + baracuda::reduce_kind_name(d.kind) + " (" +
         std::to_string(static_cast<int>(d.kind)) + "), dtype " + std::string(baracuda::dtype_name(d.dtype)) +
         ", shape " + dims_str(d.shape) + ", axes " + dims_str(d.axes) + ", keepdim " + std::to_string(d.keepdim) +
         ", correction " + std::to_string(d.correction) + "}";
}

// Mutations of a Dims field of a descriptor.
template <class Desc>
void add_dims_mutators(std::vector<DescMutator<Desc>>& v, Dims Desc::*field, const std::string& what) {
  auto name = [what](const char* m) { return "desc." + what + "_" + m; };
  v.push_back({name("extent_negative"), [field](Desc& d, Fuzz& f) {
                 Dims& s = d.*field;
                 if (s.rank == 0) s.push_back(1);
                 s[static_cast<int>(f.range(0, s.rank - 1))] = f.negative();
               }});
  v.push_back({name("extent_huge"), [field](Desc& d, Fuzz& f) {
                 Dims& s = d.*field;
                 if (s.rank == 0) s.push_back(1);
                 s[static_cast<int>(f.range(0, s.rank - 1))] = f.huge();
               }});
  v.push_back({name("overflow"), [field](Desc& d, Fuzz& f) {  // product far past 2^63
                 Dims& s = d.*field;
                 s = Dims();
                 const int r = static_cast<int>(f.range(2, baracuda::kMaxRank));
                 for (int i = 0; i < r; ++i) s.push_back(int64_t{1} << f.range(64 / r, 62 / 2 + 2));
               }});
  v.push_back({name("wraps"), [field](Desc& d, Fuzz& f) {  // product exactly 2^64 (wraps to 0) or 2^63
                 Dims& s = d.*field;
                 s = Dims();
                 const int r = static_cast<int>(f.range(2, baracuda::kMaxRank));
                 for (int64_t x : f.pow2_split(r, f.chance(0.7) ? 64 : 63)) s.push_back(x);
               }});
  v.push_back({name("rank_corrupt"), [field](Desc& d, Fuzz& f) { (d.*field).rank = f.corrupt_rank(); }});
}

}  // namespace reduce_contract

// ---------------------------------------------------------------------------
struct ReduceTraits {
  using Plan = baracuda::ReducePlan;
  using Desc = baracuda::ReduceDescriptor;
  using Args = baracuda::ReduceArgs;
  static constexpr const char* kName = "ReducePlan";

  static Desc valid_desc(Rng& rng) {
    using namespace reduce_contract;
    Fuzz f(rng);
    const ReduceKind k = kAllKinds[f.range(0, 10)];
    DType t = kFp[f.range(0, 3)];
    if (int_capable(k) && f.chance(0.3)) t = f.chance(0.5) ? DType::I32 : DType::I64;
    Desc d = make(k, t, small_shape(f, needs_element(k)), {}, f.chance(0.5));
    d.axes = random_axes(f, d.shape.rank);
    d.correction = f.range(0, 2);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using namespace reduce_contract;
    return {make(ReduceKind::Sum, DType::F32, {0, 3}, {1}), make(ReduceKind::Mean, DType::F64, {2, 0, 3}, {0}, true),
            make(ReduceKind::ArgMax, DType::F32, {0, 4}, {1}), make(ReduceKind::Var, DType::BF16, {3, 0}, {0}),
            make(ReduceKind::Max, DType::I32, {0, 2, 2}, {-1})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    using namespace reduce_contract;
    Desc rank9 = make(ReduceKind::Sum, DType::F32, {1, 1}, {});
    rank9.shape.rank = 9;
    Desc axes_rank9 = make(ReduceKind::Sum, DType::F32, {2, 3}, {0});
    axes_rank9.axes.rank = 9;
    Desc axes_rank_neg = make(ReduceKind::Sum, DType::F32, {2, 3}, {0});
    axes_rank_neg.axes.rank = -1;
    Desc corr = make(ReduceKind::Var, DType::F32, {2, 3}, {1});
    corr.correction = -1;
    return {{"axis_out_of_range", make(ReduceKind::Sum, DType::F32, {2, 3}, {2})},
            {"axis_repeated", make(ReduceKind::Sum, DType::F32, {2, 3}, {1, -1})},
            {"negative_extent", make(ReduceKind::Sum, DType::F32, {2, -1}, {0})},
            {"shape_rank_9", rank9},
            {"axes_rank_9", axes_rank9},
            {"axes_rank_negative", axes_rank_neg},
            {"max_over_empty_axis", make(ReduceKind::Max, DType::F32, {3, 0}, {1})},
            {"var_of_integers", make(ReduceKind::Var, DType::I32, {3}, {0})},
            {"bool_dtype", make(ReduceKind::Sum, DType::Bool, {3}, {0})},
            {"correction_negative", corr},
            {"unknown_kind", make(static_cast<baracuda::ReduceKind>(77), DType::F32, {3}, {0})}};
  }
  static std::vector<Desc> workspace_descs() {
    using namespace reduce_contract;
    return {make(ReduceKind::Sum, DType::F32, {2, 1 << 20}, {1}), make(ReduceKind::Var, DType::F32, {4096, 256}, {0})};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    return {input<Args>("x", p.descriptor().dtype, p.descriptor().shape, [](auto& a, const TensorMut& v) { a.x = v; }),
            output<Args>("y", p.output_dtype(), p.output_shape(), [](auto& a, const TensorMut& v) { a.y = v; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return mutators(); }
  static std::string describe(const Desc& d) { return reduce_contract::describe(d); }

  // Shared with ReduceBackwardTraits.
  static std::vector<DescMutator<Desc>> mutators() {
    std::vector<DescMutator<Desc>> v;
    reduce_contract::add_dims_mutators<Desc>(v, &Desc::shape, "shape");
    v.push_back({"desc.axes_values", [](Desc& d, Fuzz& f) {
                   d.axes = Dims();
                   for (int i = static_cast<int>(f.range(1, 3)); i > 0; --i) d.axes.push_back(f.any_int());
                 }});
    v.push_back({"desc.axes_rank_corrupt", [](Desc& d, Fuzz& f) { d.axes.rank = f.corrupt_rank(); }});
    v.push_back({"desc.kind_any", [](Desc& d, Fuzz& f) { d.kind = static_cast<baracuda::ReduceKind>(f.range(0, 255)); }});
    v.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    v.push_back({"desc.correction_any", [](Desc& d, Fuzz& f) { d.correction = f.any_int(); }});
    return v;
  }
};

// ---------------------------------------------------------------------------
struct ReduceBackwardTraits {
  using Plan = baracuda::ReduceBackwardPlan;
  using Desc = baracuda::ReduceDescriptor;
  using Args = baracuda::ReduceBackwardArgs;
  static constexpr const char* kName = "ReduceBackwardPlan";

  static Desc valid_desc(Rng& rng) {
    using namespace reduce_contract;
    Fuzz f(rng);
    const ReduceKind k = kGradKinds[f.range(0, 8)];
    Desc d = make(k, kFp[f.range(0, 3)], small_shape(f, needs_element(k)), {}, f.chance(0.5));
    d.axes = random_axes(f, d.shape.rank);
    d.correction = f.range(0, 2);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using namespace reduce_contract;
    return {make(ReduceKind::Sum, DType::F32, {0, 3}, {1}), make(ReduceKind::Max, DType::F64, {0, 4}, {1}),
            make(ReduceKind::Var, DType::F16, {2, 0}, {0}, true), make(ReduceKind::Prod, DType::F64, {0}, {})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    using namespace reduce_contract;
    Desc corr = make(ReduceKind::Std, DType::F32, {2, 3}, {1});
    corr.correction = -1;
    Desc axes_rank9 = make(ReduceKind::Sum, DType::F32, {2, 3}, {0});
    axes_rank9.axes.rank = 9;
    Desc axes_rank_neg = make(ReduceKind::Sum, DType::F32, {2, 3}, {0});
    axes_rank_neg.axes.rank = -1;
    return {{"argmax_has_no_gradient", make(ReduceKind::ArgMax, DType::F32, {2, 3}, {1})},
            {"axes_rank_negative", axes_rank_neg},
            {"integer_dtype", make(ReduceKind::Sum, DType::I32, {2, 3}, {1})},
            {"axis_out_of_range", make(ReduceKind::Mean, DType::F32, {2, 3}, {-3})},
            {"max_over_empty_axis", make(ReduceKind::Max, DType::F32, {3, 0}, {1})},
            {"negative_extent", make(ReduceKind::Sum, DType::F32, {-2}, {})},
            {"axes_rank_9", axes_rank9},
            {"correction_negative", corr},
            {"unknown_kind", make(static_cast<baracuda::ReduceKind>(200), DType::F32, {3}, {0})}};
  }
  static std::vector<Desc> workspace_descs() {
    using namespace reduce_contract;
    return {make(ReduceKind::Max, DType::F32, {4096, 512}, {0}), make(ReduceKind::Prod, DType::F32, {2000, 96}, {0}),
            make(ReduceKind::Std, DType::F32, {8, 70000}, {1})};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    return {input<Args>("dy", d.dtype, p.output_shape(), [](auto& a, const TensorMut& v) { a.dy = v; }),
            optional_input<Args>(p.needs_x(), "x", d.dtype, d.shape, [](auto& a, const TensorMut& v) { a.x = v; }),
            optional_input<Args>(p.needs_y(), "y", d.dtype, p.output_shape(), [](auto& a, const TensorMut& v) { a.y = v; }),
            output<Args>("dx", d.dtype, d.shape, [](auto& a, const TensorMut& v) { a.dx = v; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return ReduceTraits::mutators(); }
  static std::string describe(const Desc& d) { return reduce_contract::describe(d); }
};

// ---------------------------------------------------------------------------
struct ReduceToTraits {
  using Plan = baracuda::ReduceToPlan;
  using Desc = baracuda::ReduceToDescriptor;
  using Args = baracuda::ReduceToArgs;
  static constexpr const char* kName = "ReduceToPlan";

  static Desc make(DType t, Dims shape, Dims target) {
    Desc d;
    d.dtype = t;
    d.shape = shape;
    d.target = target;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    d.dtype = reduce_contract::kFp[f.range(0, 3)];
    do d.shape = reduce_contract::small_shape(f, false);
    while (d.shape.rank == baracuda::kMaxRank);  // an identity reduction of rank 8 is Unsupported
    const int lead = static_cast<int>(f.range(0, d.shape.rank));
    for (int i = lead; i < d.shape.rank; ++i) d.target.push_back(f.chance(0.5) ? 1 : d.shape[i]);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {2, 0}, {1, 0}), make(DType::F64, {0, 3}, {0, 3}), make(DType::BF16, {4, 0, 2}, {0, 1})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    Desc rank9 = make(DType::F32, {2}, {1});
    rank9.shape.rank = 9;
    Desc target_rank = make(DType::F32, {2}, {1});
    target_rank.target.rank = -1;
    return {{"target_not_broadcastable", make(DType::F32, {2, 3}, {3, 3})},
            {"target_rank_larger", make(DType::F32, {3}, {1, 3})},
            {"integer_dtype", make(DType::I32, {2, 3}, {3})},
            {"negative_extent", make(DType::F32, {-1, 3}, {3})},
            {"negative_target", make(DType::F32, {2, 3}, {-1})},
            {"shape_rank_9", rank9},
            {"target_rank_negative", target_rank}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::F32, {1 << 21, 2}, {1, 2})}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    return {input<Args>("x", d.dtype, d.shape, [](auto& a, const TensorMut& v) { a.x = v; }),
            output<Args>("y", d.dtype, d.target, [](auto& a, const TensorMut& v) { a.y = v; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> v;
    reduce_contract::add_dims_mutators<Desc>(v, &Desc::shape, "shape");
    reduce_contract::add_dims_mutators<Desc>(v, &Desc::target, "target");
    v.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    return v;
  }
  static std::string describe(const Desc& d) {
    return "ReduceToDescriptor{dtype " + std::string(baracuda::dtype_name(d.dtype)) + ", shape " + dims_str(d.shape) +
           ", target " + dims_str(d.target) + "}";
  }
};


}  // namespace contract
