// Contract traits of the indexing family: EmbeddingPlan, EmbeddingBackwardPlan, GatherPlan, ScatterPlan,
// IndexSelectPlan, IndexUpdatePlan.
// A new indexing plan joins with a traits struct here and one INSTANTIATE line
// per suite in tests/contract/cpu_indexing.cpp and cuda_indexing.cpp.
//
// Index values come from the slot's value generator, in range [0, V) (a bad
// index is an error on the CPU). The compact backward's problems mostly use
// distinct indices (V >= 256, a cycled permutation: count = n) and sometimes
// the dense problems' duplicates (the fuzz's broadcast views, layout_any):
// both write every element (the rows past count: -1 and zeros).
#pragma once

#include <algorithm>
#include <limits>
#include <numeric>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/indexing.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/reduce_traits.hpp"  // reduce_contract::add_dims_mutators

namespace contract {
namespace indexing_contract {

using baracuda::EmbeddingBackwardDescriptor;
using baracuda::EmbeddingDescriptor;
using baracuda::EmbeddingGradLayout;

inline constexpr DType kFp[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

inline EmbeddingDescriptor make(DType t, DType it, int64_t V, int64_t D, Dims shape) {
  EmbeddingDescriptor d;
  d.dtype = t;
  d.index_dtype = it;
  d.num_embeddings = V;
  d.embedding_dim = D;
  d.index_shape = shape;
  return d;
}

// Rank 0..3, extents 1..4 (rarely 0).
inline Dims index_shape(Fuzz& f) {
  Dims s;
  const int r = static_cast<int>(f.range(0, 3));
  for (int i = 0; i < r; ++i) s.push_back(f.chance(0.05) ? 0 : f.range(1, 4));
  return s;
}

inline EmbeddingDescriptor valid_forward(Fuzz& f) {
  EmbeddingDescriptor d = make(kFp[f.range(0, 3)], f.chance(0.5) ? DType::I32 : DType::I64, f.range(1, 12),
                               f.range(1, 9), index_shape(f));
  if (f.chance(0.1)) d.embedding_dim = 0;
  d.has_padding_idx = f.chance(0.4);
  if (d.has_padding_idx) d.padding_idx = f.range(-d.num_embeddings, d.num_embeddings - 1);
  return d;
}

// Index values in [0, V): random (duplicates) or, for `distinct`, a cycled permutation.
inline std::function<void(Rng&, std::vector<double>&)> index_values(int64_t V, bool distinct) {
  return [V, distinct](Rng& rng, std::vector<double>& v) {
    if (V <= 0) return;
    if (!distinct) {
      for (double& x : v) x = static_cast<double>(std::uniform_int_distribution<int64_t>(0, V - 1)(rng));
      return;
    }
    std::vector<int64_t> perm(static_cast<size_t>(std::min<int64_t>(V, int64_t{1} << 16)));  // fuzzed V may be huge
    std::iota(perm.begin(), perm.end(), int64_t{0});
    std::shuffle(perm.begin(), perm.end(), rng);
    for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<double>(perm[i % perm.size()]);
  };
}

inline std::string describe_forward(const EmbeddingDescriptor& d) {
  std::ostringstream os;
  os << "{dtype " << baracuda::dtype_name(d.dtype) << ", index_dtype " << baracuda::dtype_name(d.index_dtype)
     << ", num_embeddings " << d.num_embeddings << ", embedding_dim " << d.embedding_dim << ", index_shape "
     << dims_str(d.index_shape) << ", padding_idx " << (d.has_padding_idx ? std::to_string(d.padding_idx) : "none")
     << "}";
  return os.str();
}

inline std::vector<std::pair<const char*, EmbeddingDescriptor>> invalid_forward() {
  auto with = [](auto fn) {
    EmbeddingDescriptor d = make(DType::F32, DType::I64, 5, 3, {4});
    fn(d);
    return d;
  };
  return {{"dtype_int", with([](EmbeddingDescriptor& d) { d.dtype = DType::I32; })},
          {"index_dtype_float", with([](EmbeddingDescriptor& d) { d.index_dtype = DType::F32; })},
          {"num_embeddings_negative", with([](EmbeddingDescriptor& d) { d.num_embeddings = -1; })},
          {"embedding_dim_negative", with([](EmbeddingDescriptor& d) { d.embedding_dim = -1; })},
          {"index_shape_negative", with([](EmbeddingDescriptor& d) { d.index_shape = Dims{2, -3}; })},
          {"index_shape_rank_8", with([](EmbeddingDescriptor& d) { d.index_shape = Dims{1, 1, 1, 1, 1, 1, 1, 1}; })},
          {"weight_overflow", with([](EmbeddingDescriptor& d) { d.num_embeddings = d.embedding_dim = int64_t{1} << 40; })},
          {"padding_idx_past_v", with([](EmbeddingDescriptor& d) { d.has_padding_idx = true, d.padding_idx = 5; })},
          {"padding_idx_below_minus_v", with([](EmbeddingDescriptor& d) { d.has_padding_idx = true, d.padding_idx = -6; })}};
}

inline std::vector<DescMutator<EmbeddingDescriptor>> forward_mutators(bool padding) {
  std::vector<DescMutator<EmbeddingDescriptor>> m;
  reduce_contract::add_dims_mutators<EmbeddingDescriptor>(m, &EmbeddingDescriptor::index_shape, "index_shape");
  m.push_back({"desc.dtype_any", [](EmbeddingDescriptor& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  m.push_back({"desc.index_dtype_any", [](EmbeddingDescriptor& d, Fuzz& f) { d.index_dtype = f.any_dtype(); }});
  m.push_back({"desc.num_embeddings_any", [](EmbeddingDescriptor& d, Fuzz& f) { d.num_embeddings = f.any_int(); }});
  m.push_back({"desc.embedding_dim_any", [](EmbeddingDescriptor& d, Fuzz& f) { d.embedding_dim = f.any_int(); }});
  if (padding)
    m.push_back({"desc.padding_idx_any", [](EmbeddingDescriptor& d, Fuzz& f) {
                   d.has_padding_idx = true;
                   d.padding_idx = f.any_int();
                 }});
  return m;
}

}  // namespace indexing_contract

// ---------------------------------------------------------------------------
struct EmbeddingTraits {
  using Plan = baracuda::EmbeddingPlan;
  using Desc = baracuda::EmbeddingDescriptor;
  using Args = baracuda::EmbeddingArgs;
  static constexpr const char* kName = "EmbeddingPlan";
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return indexing_contract::valid_forward(f);
  }
  static std::vector<Desc> zero_size_descs() {
    using indexing_contract::make;
    return {make(DType::F32, DType::I64, 5, 3, {0}), make(DType::BF16, DType::I32, 4, 0, {3, 2}),
            make(DType::F64, DType::I64, 0, 4, {2, 0})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return indexing_contract::invalid_forward(); }
  static std::vector<Desc> workspace_descs() {
    return {indexing_contract::make(DType::F32, DType::I64, 100, 64, {8, 16})};  // the error word
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("indices", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.indices = t; });
    idx.values = indexing_contract::index_values(d.num_embeddings, false);
    idx.values_checked = true;
    return {input<Args>("weight", d.dtype, {d.num_embeddings, d.embedding_dim}, [](Args& a, const TensorMut& t) { a.weight = t; }),
            idx, output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return indexing_contract::forward_mutators(true); }
  static std::string describe(const Desc& d) { return "EmbeddingDescriptor" + indexing_contract::describe_forward(d); }
};

struct EmbeddingBackwardTraits {
  using Plan = baracuda::EmbeddingBackwardPlan;
  using Desc = baracuda::EmbeddingBackwardDescriptor;
  using Args = baracuda::EmbeddingBackwardArgs;
  static constexpr const char* kName = "EmbeddingBackwardPlan";

  static Desc backward_of(const baracuda::EmbeddingDescriptor& f, baracuda::EmbeddingGradLayout layout =
                                                                        baracuda::EmbeddingGradLayout::Dense) {
    Desc d;
    d.forward = f;
    d.grad_dtype = f.dtype;
    d.layout = layout;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d = backward_of(indexing_contract::valid_forward(f));
    if ((d.forward.dtype == DType::F16 || d.forward.dtype == DType::BF16) && f.chance(0.5)) d.grad_dtype = DType::F32;
    if (f.chance(0.4)) {  // compact: distinct indices, no padding (see the header comment)
      d.layout = baracuda::EmbeddingGradLayout::Compact;
      d.forward.num_embeddings = f.range(256, 300);
      d.forward.has_padding_idx = false;
      d.forward.padding_idx = 0;
    }
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using indexing_contract::make;
    // Dense dweight rows are written even without indices (zeros), and compact
    // always writes count: only an empty dweight is a zero-size problem.
    return {backward_of(make(DType::F32, DType::I64, 5, 0, {3})), backward_of(make(DType::BF16, DType::I32, 0, 4, {0, 2}))};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    std::vector<std::pair<const char*, Desc>> v;
    for (const auto& [label, f] : indexing_contract::invalid_forward()) v.push_back({label, backward_of(f)});
    Desc g = backward_of(indexing_contract::make(DType::F32, DType::I64, 5, 3, {4}));
    g.grad_dtype = DType::F64;
    Desc l = g;
    l.grad_dtype = DType::F32;
    l.layout = static_cast<baracuda::EmbeddingGradLayout>(9);
    v.push_back({"grad_dtype_f64_for_f32", g});
    v.push_back({"layout_unknown", l});
    return v;
  }
  static std::vector<Desc> workspace_descs() {
    using indexing_contract::make;
    return {backward_of(make(DType::F32, DType::I64, 100, 64, {8, 16})),
            backward_of(make(DType::BF16, DType::I32, 1000, 32, {300}), baracuda::EmbeddingGradLayout::Compact)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& bd = p.descriptor();
    const baracuda::EmbeddingDescriptor& d = bd.forward;
    const bool compact = bd.layout == baracuda::EmbeddingGradLayout::Compact;
    const int64_t n = baracuda::shape_numel(d.index_shape);
    auto idx = input<Args>("indices", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.indices = t; });
    idx.values = indexing_contract::index_values(d.num_embeddings, compact);
    idx.values_checked = true;
    auto opt_out = [](bool used, const char* name, DType t, Dims shape, void (*bind)(Args&, const TensorMut&)) {
      Slot<Args> s = output<Args>(name, t, shape, bind);
      s.optional = true;
      if (!used) s.role = Role::Unused;
      return s;
    };
    return {idx,
            input<Args>("dout", d.dtype, p.dout_shape(), [](Args& a, const TensorMut& t) { a.dout = t; }),
            opt_out(!compact, "dweight", bd.grad_dtype, {d.num_embeddings, d.embedding_dim},
                    [](Args& a, const TensorMut& t) { a.dweight = t; }),
            opt_out(compact, "unique_rows", d.index_dtype, {n}, [](Args& a, const TensorMut& t) { a.unique_rows = t; }),
            opt_out(compact, "dweight_compact", bd.grad_dtype, {n, d.embedding_dim},
                    [](Args& a, const TensorMut& t) { a.dweight_compact = t; }),
            opt_out(compact, "count", DType::I64, {}, [](Args& a, const TensorMut& t) { a.count = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> v;
    // padding_idx only for dense problems: the compact ones rely on every index contributing.
    for (const auto& m : indexing_contract::forward_mutators(false))
      v.push_back({m.name, [apply = m.apply](Desc& d, Fuzz& f) { apply(d.forward, f); }});
    v.push_back({"desc.padding_idx_dense", [](Desc& d, Fuzz& f) {
                   if (d.layout != baracuda::EmbeddingGradLayout::Dense) return;
                   d.forward.has_padding_idx = true;
                   d.forward.padding_idx = f.any_int();
                 }});
    v.push_back({"desc.grad_dtype_any", [](Desc& d, Fuzz& f) { d.grad_dtype = f.any_dtype(); }});
    v.push_back({"desc.layout_any", [](Desc& d, Fuzz& f) {
                   d.layout = static_cast<baracuda::EmbeddingGradLayout>(f.range(0, 3));
                   if (d.layout == baracuda::EmbeddingGradLayout::Compact) d.forward.has_padding_idx = false;
                 }});
    return v;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "EmbeddingBackwardDescriptor{forward " << indexing_contract::describe_forward(d.forward) << ", grad_dtype "
       << baracuda::dtype_name(d.grad_dtype) << ", layout " << static_cast<int>(d.layout) << "}";
    return os.str();
  }
};

// ---------------------------------------------------------------------------
// GatherPlan / ScatterPlan. Index values come from the slot's generator, in
// [0, size(dim)) (a bad index is an error on the CPU); the fuzz's broadcast
// index views make duplicates.
namespace indexing_contract {

inline constexpr DType kGatherTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64};

// x / self of rank 1..3, extents 1..5; index no larger on the other axes,
// 1..6 along dim.
inline void gather_scatter_shapes(Fuzz& f, Dims* a, Dims* index, int64_t* dim) {
  const int r = static_cast<int>(f.range(1, 3));
  *a = Dims();
  *index = Dims();
  *dim = f.range(-r, r - 1);
  const int64_t rd = *dim < 0 ? *dim + r : *dim;
  for (int i = 0; i < r; ++i) {
    a->push_back(f.range(1, 5));
    index->push_back(i == rd ? f.range(1, 6) : f.range(1, (*a)[i]));
  }
}

inline std::function<void(Rng&, std::vector<double>&)> indices_below(int64_t size) {
  return [size](Rng& rng, std::vector<double>& v) {
    for (double& x : v) x = size > 0 ? static_cast<double>(std::uniform_int_distribution<int64_t>(0, size - 1)(rng)) : 0.0;
  };
}

inline int64_t size_along(const Dims& s, int64_t dim) {
  const int64_t rd = dim < 0 ? dim + s.rank : dim;
  return rd >= 0 && rd < s.rank ? s[static_cast<int>(rd)] : 0;
}

}  // namespace indexing_contract

struct GatherTraits {
  using Plan = baracuda::GatherPlan;
  using Desc = baracuda::GatherDescriptor;
  using Args = baracuda::GatherArgs;
  static constexpr const char* kName = "GatherPlan";
  static Desc make(DType t, DType it, Dims x, Dims index, int64_t dim) {
    Desc d;
    d.dtype = t;
    d.index_dtype = it;
    d.x_shape = x;
    d.index_shape = index;
    d.dim = dim;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    d.dtype = indexing_contract::kGatherTypes[f.range(0, 5)];
    d.index_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
    indexing_contract::gather_scatter_shapes(f, &d.x_shape, &d.index_shape, &d.dim);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, DType::I64, {3, 4}, {0, 4}, 0), make(DType::BF16, DType::I32, {0, 2}, {0, 5}, 1),
            make(DType::I64, DType::I64, {2, 3}, {2, 0}, -1)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, DType::I64, {4, 5}, {3, 2}, 1);
      fn(d);
      return d;
    };
    return {{"dtype_complex", with([](Desc& d) { d.dtype = DType::C64; })},
            {"index_dtype_float", with([](Desc& d) { d.index_dtype = DType::F32; })},
            {"rank_0", with([](Desc& d) { d.x_shape = Dims{}, d.index_shape = Dims{}; })},
            {"rank_mismatch", with([](Desc& d) { d.index_shape = Dims{3}; })},
            {"dim_past_rank", with([](Desc& d) { d.dim = 2; })},
            {"dim_below_minus_rank", with([](Desc& d) { d.dim = -3; })},
            {"index_larger_off_dim", with([](Desc& d) { d.index_shape = Dims{5, 2}; })},
            {"index_shape_negative", with([](Desc& d) { d.index_shape = Dims{3, -2}; })}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::F32, DType::I64, {8, 16}, {8, 4}, 1)}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("index", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.index = t; });
    idx.values = indexing_contract::indices_below(indexing_contract::size_along(d.x_shape, d.dim));
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
    m.push_back({"desc.dim_any", [](Desc& d, Fuzz& f) { d.dim = f.any_int(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "GatherDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", index_dtype "
       << baracuda::dtype_name(d.index_dtype) << ", x_shape " << dims_str(d.x_shape) << ", index_shape "
       << dims_str(d.index_shape) << ", dim " << d.dim << "}";
    return os.str();
  }
};

struct ScatterTraits {
  using Plan = baracuda::ScatterPlan;
  using Desc = baracuda::ScatterDescriptor;
  using Args = baracuda::ScatterArgs;
  static constexpr const char* kName = "ScatterPlan";
  static Desc make(DType t, Dims self, Dims index, int64_t dim, baracuda::ScatterReduce r) {
    Desc d;
    d.dtype = t;
    d.index_dtype = DType::I64;
    d.self_shape = self;
    d.index_shape = index;
    d.src_shape = index;
    d.dim = dim;
    d.reduce = r;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d;
    constexpr DType kInts[] = {DType::I8, DType::U8, DType::I16, DType::I32, DType::I64};
    d.dtype = f.chance(0.3) ? kInts[f.range(0, 4)] : indexing_contract::kFp[f.range(0, 3)];
    d.index_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
    indexing_contract::gather_scatter_shapes(f, &d.self_shape, &d.index_shape, &d.dim);
    d.src_shape = d.index_shape;
    for (int i = 0; i < d.src_shape.rank; ++i)
      if (f.chance(0.3)) d.src_shape[i] += f.range(1, 2);
    d.reduce = static_cast<baracuda::ScatterReduce>(f.range(0, 5));
    d.include_self = f.chance(0.5);
    d.use_value = f.chance(0.3);
    d.value = 0.75;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using baracuda::ScatterReduce;
    return {make(DType::F32, {0, 4}, {0, 2}, 1, ScatterReduce::Sum), make(DType::BF16, {3, 0}, {2, 0}, 0, ScatterReduce::None)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, {4, 5}, {3, 2}, 0, baracuda::ScatterReduce::Sum);
      fn(d);
      return d;
    };
    return {{"dtype_bool", with([](Desc& d) { d.dtype = DType::Bool; })},
            {"index_dtype_float", with([](Desc& d) { d.index_dtype = DType::F16; })},
            {"int_value_out_of_range", with([](Desc& d) { d.dtype = DType::I8, d.use_value = true, d.value = 300.0; })},
            {"reduce_unknown", with([](Desc& d) { d.reduce = static_cast<baracuda::ScatterReduce>(7); })},
            {"rank_0", with([](Desc& d) { d.self_shape = d.index_shape = d.src_shape = Dims{}; })},
            {"dim_past_rank", with([](Desc& d) { d.dim = 2; })},
            {"index_larger_than_self_off_dim", with([](Desc& d) { d.index_shape = Dims{3, 6}, d.src_shape = Dims{3, 6}; })},
            {"index_larger_than_src", with([](Desc& d) { d.src_shape = Dims{2, 2}; })},
            {"src_rank_mismatch", with([](Desc& d) { d.src_shape = Dims{3}; })}};
  }
  static std::vector<Desc> workspace_descs() {
    return {make(DType::F32, {8, 16}, {8, 4}, 1, baracuda::ScatterReduce::Sum),
            make(DType::BF16, {30, 7}, {50, 7}, 0, baracuda::ScatterReduce::None),
            make(DType::I8, {30, 7}, {50, 7}, 0, baracuda::ScatterReduce::Mean),
            make(DType::I32, {30, 7}, {50, 7}, 0, baracuda::ScatterReduce::Amax)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("index", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.index = t; });
    idx.values = indexing_contract::indices_below(indexing_contract::size_along(d.self_shape, d.dim));
    idx.values_checked = true;
    return {input<Args>("self", d.dtype, d.self_shape, [](Args& a, const TensorMut& t) { a.self = t; }), idx,
            optional_input<Args>(!d.use_value, "src", d.dtype, d.src_shape, [](Args& a, const TensorMut& t) { a.src = t; }),
            output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; }, "self")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::self_shape, "self_shape");
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::index_shape, "index_shape");
    reduce_contract::add_dims_mutators<Desc>(m, &Desc::src_shape, "src_shape");
    m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    m.push_back({"desc.index_dtype_any", [](Desc& d, Fuzz& f) { d.index_dtype = f.any_dtype(); }});
    m.push_back({"desc.dim_any", [](Desc& d, Fuzz& f) { d.dim = f.any_int(); }});
    m.push_back({"desc.reduce_any", [](Desc& d, Fuzz& f) { d.reduce = static_cast<baracuda::ScatterReduce>(f.range(0, 9)); }});
    m.push_back({"desc.use_value_flip", [](Desc& d, Fuzz&) { d.use_value = !d.use_value; }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "ScatterDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", index_dtype "
       << baracuda::dtype_name(d.index_dtype) << ", self_shape " << dims_str(d.self_shape) << ", index_shape "
       << dims_str(d.index_shape) << ", src_shape " << dims_str(d.src_shape) << ", dim " << d.dim << ", reduce "
       << baracuda::scatter_reduce_name(d.reduce) << ", include_self " << d.include_self << ", use_value "
       << d.use_value << ", value " << d.value << "}";
    return os.str();
  }
};

// ---------------------------------------------------------------------------
// IndexSelectPlan / IndexUpdatePlan: index values in [0, S) from the slot's
// value generator (a bad index is an error on the CPU).
namespace indexing_contract {

inline Dims dim_self_shape(Fuzz& f) {
  Dims s;
  const int r = static_cast<int>(f.range(1, 3));
  for (int i = 0; i < r; ++i) s.push_back(f.chance(0.05) ? 0 : f.range(1, 5));
  return s;
}
inline Dims dim_index_shape(Fuzz& f) { return f.chance(0.15) ? Dims{} : Dims{f.chance(0.05) ? 0 : f.range(1, 6)}; }
inline int64_t dim_extent(const Dims& self, int64_t dim) {
  const int r = self.rank;
  return self[static_cast<int>(dim < 0 ? dim + r : dim)];
}

inline std::string describe_dim(baracuda::DType t, baracuda::DType it, const Dims& self, int64_t dim, const Dims& index) {
  std::ostringstream os;
  os << "dtype " << baracuda::dtype_name(t) << ", index_dtype " << baracuda::dtype_name(it) << ", self_shape "
     << dims_str(self) << ", dim " << dim << ", index_shape " << dims_str(index);
  return os.str();
}

template <class Desc>
void add_dim_mutators(std::vector<DescMutator<Desc>>& m) {
  reduce_contract::add_dims_mutators<Desc>(m, &Desc::self_shape, "self_shape");
  reduce_contract::add_dims_mutators<Desc>(m, &Desc::index_shape, "index_shape");
  m.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  m.push_back({"desc.index_dtype_any", [](Desc& d, Fuzz& f) { d.index_dtype = f.any_dtype(); }});
  m.push_back({"desc.dim_any", [](Desc& d, Fuzz& f) { d.dim = f.any_int(); }});
}

}  // namespace indexing_contract

struct IndexSelectTraits {
  using Plan = baracuda::IndexSelectPlan;
  using Desc = baracuda::IndexSelectDescriptor;
  using Args = baracuda::IndexSelectArgs;
  static constexpr const char* kName = "IndexSelectPlan";
  static Desc make(DType t, Dims self, int64_t dim, Dims index, DType it = DType::I64) {
    Desc d;
    d.dtype = t;
    d.index_dtype = it;
    d.self_shape = self;
    d.dim = dim;
    d.index_shape = index;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    const Dims self = indexing_contract::dim_self_shape(f);
    Desc d = make(f.pick<DType>({DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64}), self,
                  f.range(-self.rank, self.rank - 1), indexing_contract::dim_index_shape(f),
                  f.chance(0.5) ? DType::I32 : DType::I64);
    if (indexing_contract::dim_extent(d.self_shape, d.dim) == 0) d.index_shape = Dims{0};  // no valid index exists
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(DType::F32, {4, 3}, 0, {0}), make(DType::BF16, {0, 3}, 1, {2}, DType::I32),
            make(DType::I64, {4, 0}, -2, {3})};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, {4, 5}, 1, {3});
      fn(d);
      return d;
    };
    return {{"dtype_bool", with([](Desc& d) { d.dtype = DType::Bool; })},
            {"index_dtype_float", with([](Desc& d) { d.index_dtype = DType::F32; })},
            {"self_rank_0", with([](Desc& d) { d.self_shape = Dims{}; })},
            {"dim_past_rank", with([](Desc& d) { d.dim = 2; })},
            {"dim_below_minus_rank", with([](Desc& d) { d.dim = -3; })},
            {"index_rank_2", with([](Desc& d) { d.index_shape = Dims{2, 2}; })},
            {"self_extent_negative", with([](Desc& d) { d.self_shape = Dims{4, -5}; })}};
  }
  static std::vector<Desc> workspace_descs() { return {make(DType::F32, {100, 64}, 0, {50})}; }  // the error word
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("index", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.index = t; });
    idx.values = indexing_contract::index_values(d.self_shape[static_cast<int>(d.dim)], false);
    idx.values_checked = true;
    return {input<Args>("self", d.dtype, d.self_shape, [](Args& a, const TensorMut& t) { a.self = t; }), idx,
            output<Args>("out", d.dtype, p.out_shape(), [](Args& a, const TensorMut& t) { a.out = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    indexing_contract::add_dim_mutators<Desc>(m);
    return m;
  }
  static std::string describe(const Desc& d) {
    return "IndexSelectDescriptor{" + indexing_contract::describe_dim(d.dtype, d.index_dtype, d.self_shape, d.dim, d.index_shape) + "}";
  }
};

struct IndexUpdateTraits {
  using Plan = baracuda::IndexUpdatePlan;
  using Desc = baracuda::IndexUpdateDescriptor;
  using Args = baracuda::IndexUpdateArgs;
  using Mode = baracuda::IndexUpdateMode;
  static constexpr const char* kName = "IndexUpdatePlan";
  static Desc make(Mode m, DType t, Dims self, int64_t dim, Dims index, DType it = DType::I64) {
    Desc d;
    d.mode = m;
    d.dtype = t;
    d.index_dtype = it;
    d.self_shape = self;
    d.dim = dim;
    d.index_shape = index;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    const Dims self = indexing_contract::dim_self_shape(f);
    const Mode m = static_cast<Mode>(f.range(0, 6));
    const bool ints = (m == Mode::Copy || m == Mode::Fill) && f.chance(0.3);
    Desc d = make(m, ints ? f.pick<DType>({DType::I32, DType::I64}) : indexing_contract::kFp[f.range(0, 3)], self,
                  f.range(-self.rank, self.rank - 1), indexing_contract::dim_index_shape(f),
                  f.chance(0.5) ? DType::I32 : DType::I64);
    if (indexing_contract::dim_extent(d.self_shape, d.dim) == 0) d.index_shape = Dims{0};
    d.alpha = f.chance(0.5) ? 1.0 : -0.5;
    d.value = 2.0;
    d.include_self = f.chance(0.5);
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    return {make(Mode::Add, DType::F32, {0, 3}, 1, {2}), make(Mode::Fill, DType::I32, {4, 0}, 0, {3}),
            make(Mode::Amax, DType::BF16, {2, 0, 3}, -1, {}, DType::I32)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(Mode::Add, DType::F32, {4, 5}, 0, {3});
      fn(d);
      return d;
    };
    return {{"mode_unknown", with([](Desc& d) { d.mode = static_cast<Mode>(9); })},
            {"dtype_int_for_add", with([](Desc& d) { d.dtype = DType::I32; })},
            {"index_dtype_float", with([](Desc& d) { d.index_dtype = DType::F16; })},
            {"self_rank_0", with([](Desc& d) { d.self_shape = Dims{}; })},
            {"dim_past_rank", with([](Desc& d) { d.dim = 2; })},
            {"index_rank_2", with([](Desc& d) { d.index_shape = Dims{1, 3}; })},
            {"alpha_inf", with([](Desc& d) { d.alpha = std::numeric_limits<double>::infinity(); })}};
  }
  static std::vector<Desc> workspace_descs() { return {make(Mode::Add, DType::F32, {100, 64}, 0, {50})}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("index", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.index = t; });
    idx.values = indexing_contract::index_values(d.self_shape[static_cast<int>(d.dim)], false);
    idx.values_checked = true;
    Slot<Args> src = input<Args>("source", d.dtype, p.source_shape(), [](Args& a, const TensorMut& t) { a.source = t; });
    src.optional = true;
    if (d.mode == Mode::Fill) src.role = Role::Unused;
    return {input<Args>("self", d.dtype, d.self_shape, [](Args& a, const TensorMut& t) { a.self = t; }), idx, src,
            output<Args>("out", d.dtype, d.self_shape, [](Args& a, const TensorMut& t) { a.out = t; }, "self")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> m;
    indexing_contract::add_dim_mutators<Desc>(m);
    m.push_back({"desc.mode_any", [](Desc& d, Fuzz& f) { d.mode = static_cast<Mode>(f.range(0, 9)); }});
    m.push_back({"desc.alpha_any", [](Desc& d, Fuzz& f) { d.alpha = f.any_double(); }});
    m.push_back({"desc.value_any", [](Desc& d, Fuzz& f) { d.value = f.any_double(); }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "IndexUpdateDescriptor{mode " << static_cast<int>(d.mode) << ", "
       << indexing_contract::describe_dim(d.dtype, d.index_dtype, d.self_shape, d.dim, d.index_shape) << ", alpha "
       << d.alpha << ", value " << d.value << ", include_self " << d.include_self << "}";
    return os.str();
  }
};

}  // namespace contract
