// Contract traits of ScatterReduceBackwardPlan (include/baracuda/ops/indexing.hpp).
// Index values come from the slot's generator, in [0, self.size(dim)) (a bad
// index is an error on the CPU); the fuzz's broadcast index views make
// duplicates. self / src / result are used for prod / amax / amin (result
// for prod only with grad_src); either output may be switched off.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/indexing.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/indexing_traits.hpp"  // indexing_contract::gather_scatter_shapes, indices_below, kFp
#include "contract/reduce_traits.hpp"    // reduce_contract::add_dims_mutators

namespace contract {

struct ScatterReduceBackwardTraits {
  using Plan = baracuda::ScatterReduceBackwardPlan;
  using Desc = baracuda::ScatterReduceBackwardDescriptor;
  using Args = baracuda::ScatterReduceBackwardArgs;
  static constexpr const char* kName = "ScatterReduceBackwardPlan";
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
    d.dtype = indexing_contract::kFp[f.range(0, 3)];
    d.index_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
    indexing_contract::gather_scatter_shapes(f, &d.self_shape, &d.index_shape, &d.dim);
    d.src_shape = d.index_shape;
    for (int i = 0; i < d.src_shape.rank; ++i)
      if (f.chance(0.3)) d.src_shape[i] += f.range(1, 2);
    d.reduce = static_cast<baracuda::ScatterReduce>(f.range(0, 5));
    d.include_self = f.chance(0.5);
    const int64_t outputs = f.range(0, 3);  // mostly both
    d.compute_grad_self = outputs != 2;
    d.compute_grad_src = outputs != 1;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using baracuda::ScatterReduce;
    return {make(DType::F32, {0, 4}, {0, 2}, 1, ScatterReduce::Prod),
            make(DType::BF16, {3, 0}, {2, 0}, 0, ScatterReduce::Mean)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = make(DType::F32, {4, 5}, {3, 2}, 0, baracuda::ScatterReduce::Amax);
      fn(d);
      return d;
    };
    return {{"dtype_int", with([](Desc& d) { d.dtype = DType::I32; })},
            {"index_dtype_float", with([](Desc& d) { d.index_dtype = DType::F16; })},
            {"reduce_unknown", with([](Desc& d) { d.reduce = static_cast<baracuda::ScatterReduce>(7); })},
            {"no_output", with([](Desc& d) { d.compute_grad_self = d.compute_grad_src = false; })},
            {"rank_0", with([](Desc& d) { d.self_shape = d.index_shape = d.src_shape = Dims{}; })},
            {"dim_past_rank", with([](Desc& d) { d.dim = 2; })},
            {"index_larger_than_self_off_dim", with([](Desc& d) { d.index_shape = Dims{3, 6}, d.src_shape = Dims{3, 6}; })},
            {"index_larger_than_src", with([](Desc& d) { d.src_shape = Dims{2, 2}; })},
            {"src_rank_mismatch", with([](Desc& d) { d.src_shape = Dims{3}; })}};
  }
  static std::vector<Desc> workspace_descs() {
    return {make(DType::F32, {8, 16}, {8, 4}, 1, baracuda::ScatterReduce::Prod),
            make(DType::BF16, {30, 7}, {50, 7}, 0, baracuda::ScatterReduce::Mean)};
  }
  static Slot<Args> optional_output(bool used, const char* name, DType t, Dims shape,
                                    void (*bind)(Args&, const TensorMut&)) {
    Slot<Args> s = output<Args>(name, t, shape, bind);
    s.role = used ? Role::Output : Role::Unused;
    s.optional = true;
    return s;
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    auto idx = input<Args>("index", d.index_dtype, d.index_shape, [](Args& a, const TensorMut& t) { a.index = t; });
    idx.values = indexing_contract::indices_below(indexing_contract::size_along(d.self_shape, d.dim));
    idx.values_checked = true;
    return {input<Args>("grad", d.dtype, d.self_shape, [](Args& a, const TensorMut& t) { a.grad = t; }), idx,
            contract::optional_input<Args>(p.needs_self(), "self", d.dtype, d.self_shape,
                                           [](Args& a, const TensorMut& t) { a.self = t; }),
            contract::optional_input<Args>(p.needs_self(), "src", d.dtype, d.src_shape,
                                           [](Args& a, const TensorMut& t) { a.src = t; }),
            contract::optional_input<Args>(p.needs_result(), "result", d.dtype, d.self_shape,
                                           [](Args& a, const TensorMut& t) { a.result = t; }),
            optional_output(d.compute_grad_self, "grad_self", d.dtype, d.self_shape,
                            [](Args& a, const TensorMut& t) { a.grad_self = t; }),
            optional_output(d.compute_grad_src, "grad_src", d.dtype, d.src_shape,
                            [](Args& a, const TensorMut& t) { a.grad_src = t; })};
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
    m.push_back({"desc.grad_self_flip", [](Desc& d, Fuzz&) { d.compute_grad_self = !d.compute_grad_self; }});
    m.push_back({"desc.grad_src_flip", [](Desc& d, Fuzz&) { d.compute_grad_src = !d.compute_grad_src; }});
    return m;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "ScatterReduceBackwardDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", index_dtype "
       << baracuda::dtype_name(d.index_dtype) << ", self_shape " << dims_str(d.self_shape) << ", index_shape "
       << dims_str(d.index_shape) << ", src_shape " << dims_str(d.src_shape) << ", dim " << d.dim << ", reduce "
       << baracuda::scatter_reduce_name(d.reduce) << ", include_self " << d.include_self << ", compute_grad_self "
       << d.compute_grad_self << ", compute_grad_src " << d.compute_grad_src << "}";
    return os.str();
  }
};

}  // namespace contract
