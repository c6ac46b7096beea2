// Contract traits of the grouped linear plans (GroupedLinearPlan,
// GroupedLinearBackwardPlan: gemm.hpp "Grouped linear"), instantiated in
// tests/contract/cpu_gemm.cpp and cuda_gemm.cpp beside the other GEMM plans.
//
// Valid descriptors are drawn directly from the header's rules: G 1..5
// experts, K 0..9 (mostly >= 1), N 1..7, capacity T 1..12 (the backward now
// and then 0 while dw or db is asked for: zeros),
// per-group or shared weights, bias and activation (save_aux with the GELUs)
// as LinearPlan's draw. The backward draws every need_* combination the
// header allows.
//
// The offsets are not a tensor slot (they are a host tensor on every
// device): x's (forward) or dy's (backward) bind sets them beside the view, a
// split fixed per descriptor (a hash of its description): uneven, often with
// empty groups, and always ending at offsets[G] = T, so every row of the
// outputs is written (the suite's poisoned-output check needs that; rows past
// offsets[G] are covered by tests/gemm/cpu_grouped.cpp).
#pragma once

#include <algorithm>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "contract/gemm_traits.hpp"

namespace contract {
namespace grouped_contract {

using baracuda::GemmActivation;
using baracuda::GroupedLinearBackwardDescriptor;
using baracuda::GroupedLinearDescriptor;

inline GroupedLinearDescriptor draw_grouped(Fuzz& f) {
  GroupedLinearDescriptor d;
  d.dtype = gemm_contract::any_dtype(f);
  d.groups = f.range(1, 5);
  d.in_features = f.chance(0.06) ? 0 : f.range(1, 9);
  d.out_features = f.range(1, 7);
  d.capacity = f.range(1, 12);  // T = 0 empties every output: zero_size_descs()
  d.shared_weight = f.chance(0.3);
  const bool bias_act = f.chance(0.4);
  d.has_bias = bias_act || f.chance(0.5);
  d.activation = bias_act ? static_cast<GemmActivation>(f.range(1, 3)) : gemm_contract::any_activation(f);
  d.save_aux = gemm_contract::saves_aux(d.activation) && f.chance(0.5);
  return d;
}

inline GroupedLinearDescriptor grouped(DType t, int64_t G, int64_t K, int64_t N, int64_t T, bool shared = false,
                                       bool bias = true, GemmActivation act = GemmActivation::None,
                                       bool save_aux = false) {
  GroupedLinearDescriptor d;
  d.dtype = t;
  d.groups = G;
  d.in_features = K;
  d.out_features = N;
  d.capacity = T;
  d.shared_weight = shared;
  d.has_bias = bias;
  d.activation = act;
  d.save_aux = save_aux;
  return d;
}

inline std::string describe(const GroupedLinearDescriptor& d) {
  std::ostringstream os;
  os << "GroupedLinearDescriptor{dtype " << gemm_contract::dtype_str(d.dtype) << ", groups " << d.groups
     << ", in_features " << d.in_features << ", out_features " << d.out_features << ", capacity " << d.capacity
     << ", shared_weight " << d.shared_weight << ", has_bias " << d.has_bias << ", activation "
     << gemm_contract::act_str(d.activation) << ", save_aux " << d.save_aux << "}";
  return os.str();
}

// The descriptor's split: G - 1 cut points drawn from a hash of its
// description, sorted (equal cuts are empty groups), offsets[G] = T.
inline std::vector<int64_t> split_of(const GroupedLinearDescriptor& d) {
  const int64_t G = d.groups, T = d.capacity;
  std::vector<int64_t> o(static_cast<size_t>(G + 1), 0);
  uint64_t h = bt::fnv1a(describe(d));
  for (int64_t g = 1; g < G; ++g) {
    h = bt::splitmix64(h);
    // every fourth group or so left empty by repeating the previous cut
    o[static_cast<size_t>(g)] = (h & 3) == 0 ? -1 : static_cast<int64_t>((h >> 8) % static_cast<uint64_t>(T + 1));
  }
  std::sort(o.begin() + 1, o.end() - 1);
  for (int64_t g = 1; g < G; ++g)
    if (o[static_cast<size_t>(g)] < 0) o[static_cast<size_t>(g)] = 0;
  std::sort(o.begin() + 1, o.end() - 1);
  o[static_cast<size_t>(G)] = T;
  return o;
}

// A slot whose bind also sets args.offsets to the descriptor's split.
template <class Args, class Member>
Slot<Args> with_offsets(const char* name, DType t, Dims shape, const GroupedLinearDescriptor& d, Member m) {
  auto offs = std::make_shared<std::vector<int64_t>>(split_of(d));
  Slot<Args> s = input<Args>(name, t, shape, nullptr);
  s.bind = [offs, m](Args& a, const TensorMut& v) {
    a.*m = v;
    const int64_t n = static_cast<int64_t>(offs->size());
    a.offsets = TensorRef::contiguous(offs->data(), Device::cpu(), Dims{n}, n);
  };
  return s;
}

inline GroupedLinearBackwardDescriptor draw_grouped_backward(Fuzz& f) {
  GroupedLinearBackwardDescriptor d;
  d.forward = draw_grouped(f);
  GroupedLinearDescriptor& fw = d.forward;
  if (f.chance(0.3)) {  // the MoE MLP's backward: GeluTanh with bias and every gradient
    fw.has_bias = true;
    fw.activation = GemmActivation::GeluTanh;
  } else {
    d.need_dx = f.chance(0.75);
    d.need_dw = f.chance(0.75);
    d.need_db = f.chance(0.75);
    if (!d.need_dx && !d.need_dw && !d.need_db) d.need_dw = true;
  }
  if (!fw.has_bias) d.need_db = false;
  // Now and then no rows at all while dw or db is asked for: sums over
  // nothing, zeros. K = 0 empties dx and dw: without db every output would be
  // empty (a zero-size problem, zero_size_descs()), so K is redrawn then.
  if ((d.need_dw || d.need_db) && f.chance(0.06)) fw.capacity = 0;
  if (!d.need_db && fw.in_features == 0) fw.in_features = f.range(1, 9);
  if (fw.capacity == 0 && !d.need_dw && !d.need_db) fw.capacity = f.range(1, 12);
  fw.save_aux = false;
  return d;
}

inline GroupedLinearBackwardDescriptor grouped_backward(GroupedLinearDescriptor fw, bool dx = true, bool dw = true,
                                                        bool db = true) {
  GroupedLinearBackwardDescriptor d;
  fw.save_aux = false;
  d.forward = fw;
  d.need_dx = dx;
  d.need_dw = dw;
  d.need_db = db && fw.has_bias;
  return d;
}

inline std::string describe(const GroupedLinearBackwardDescriptor& d) {
  std::ostringstream os;
  os << "GroupedLinearBackwardDescriptor{forward " << describe(d.forward) << ", need_dx " << d.need_dx << ", need_dw "
     << d.need_dw << ", need_db " << d.need_db << "}";
  return os.str();
}

template <class D>
GroupedLinearDescriptor& forward_of(D& d) {
  if constexpr (std::is_same_v<D, GroupedLinearDescriptor>) return d;
  else return d.forward;
}

// Extent mutations over G, K, N and T, the flags, the enums and the dtype.
template <class D>
std::vector<DescMutator<D>> grouped_mutators() {
  auto fields = [](D& d) {
    GroupedLinearDescriptor& f = forward_of(d);
    return std::vector<int64_t*>{&f.groups, &f.in_features, &f.out_features, &f.capacity};
  };
  auto one = [fields](D& d, Fuzz& f) {
    auto v = fields(d);
    return v[static_cast<size_t>(f.range(0, static_cast<int64_t>(v.size()) - 1))];
  };
  std::vector<DescMutator<D>> v{
      {"desc.negative_extent", [one](D& d, Fuzz& f) { *one(d, f) = f.negative(); }},
      {"desc.huge_extent", [one](D& d, Fuzz& f) { *one(d, f) = f.huge(); }},
      {"desc.extents_overflow",
       [fields](D& d, Fuzz& f) {
         for (int64_t* e : fields(d))
           if (f.chance(0.7)) *e = int64_t{1} << f.range(8, 40);
       }},
      {"desc.extents_wrap",
       [fields](D& d, Fuzz& f) {
         auto all = fields(d);
         const auto p = f.pow2_split(static_cast<int>(all.size()), f.chance(0.7) ? 64 : 63);
         for (size_t i = 0; i < all.size(); ++i) *all[i] = p[i];
       }},
      {"desc.groups_any", [](D& d, Fuzz& f) { forward_of(d).groups = f.chance(0.5) ? f.range(0, 3) : f.any_int(); }},
      {"desc.flags_flipped",
       [](D& d, Fuzz& f) {
         GroupedLinearDescriptor& fw = forward_of(d);
         switch (f.range(0, 2)) {
           case 0: fw.shared_weight = !fw.shared_weight; break;
           case 1: fw.has_bias = !fw.has_bias; break;
           default: fw.save_aux = !fw.save_aux; break;
         }
       }},
      {"desc.activation_any",
       [](D& d, Fuzz& f) {
         GroupedLinearDescriptor& fw = forward_of(d);
         fw.activation = static_cast<GemmActivation>(f.chance(0.5) ? f.range(0, 3) : f.range(0, 255));
         if (f.chance(0.5)) fw.save_aux = gemm_contract::saves_aux(fw.activation) || f.chance(0.3);
       }},
      {"desc.dtype_any", [](D& d, Fuzz& f) { forward_of(d).dtype = f.any_dtype(); }},
  };
  if constexpr (std::is_same_v<D, GroupedLinearBackwardDescriptor>) {
    v.push_back({"desc.needs_any", [](D& d, Fuzz& f) {
                   d.need_dx = f.chance(0.5);
                   d.need_dw = f.chance(0.5);
                   d.need_db = f.chance(0.5);
                 }});
  }
  return v;
}

inline std::vector<std::pair<const char*, GroupedLinearDescriptor>> grouped_invalid() {
  using D = GroupedLinearDescriptor;
  auto with = [](auto fn) {
    D d = grouped(DType::F32, 3, 4, 5, 6);
    fn(d);
    return d;
  };
  return {{"groups_zero", with([](D& d) { d.groups = 0; })},
          {"groups_negative", with([](D& d) { d.groups = -2; })},
          {"groups_too_many", with([](D& d) { d.groups = (int64_t{1} << 20) + 1; })},
          {"in_features_negative", with([](D& d) { d.in_features = -1; })},
          {"out_features_negative", with([](D& d) { d.out_features = -4; })},
          {"capacity_negative", with([](D& d) { d.capacity = -6; })},
          {"save_aux_relu", with([](D& d) { d.activation = GemmActivation::Relu, d.save_aux = true; })},
          {"save_aux_no_activation", with([](D& d) { d.save_aux = true; })},
          {"activation_unknown", with([](D& d) { d.activation = static_cast<GemmActivation>(200); })},
          {"dtype_i8", with([](D& d) { d.dtype = DType::I8; })},
          {"dtype_unknown", with([](D& d) { d.dtype = static_cast<DType>(77); })},
          {"x_too_many_elements", with([](D& d) { d.capacity = int64_t{1} << 40, d.in_features = int64_t{1} << 30; })},
          {"weight_too_many_elements",
           with([](D& d) { d.groups = 1 << 16, d.in_features = int64_t{1} << 24, d.out_features = int64_t{1} << 24; })}};
}

inline std::vector<std::pair<const char*, GroupedLinearBackwardDescriptor>> grouped_backward_invalid() {
  std::vector<std::pair<const char*, GroupedLinearBackwardDescriptor>> v;
  for (const auto& [label, fw] : grouped_invalid()) {
    GroupedLinearBackwardDescriptor d;
    d.forward = fw;
    d.need_db = d.forward.has_bias;
    v.push_back({label, d});
  }
  GroupedLinearBackwardDescriptor no_bias;
  no_bias.forward = grouped(DType::F32, 2, 3, 4, 5, false, false);
  no_bias.need_db = true;
  v.push_back({"need_db_without_bias", no_bias});
  return v;
}

}  // namespace grouped_contract

// ---------------------------------------------------------------------------
struct GroupedLinearTraits {
  using Plan = baracuda::GroupedLinearPlan;
  using Desc = baracuda::GroupedLinearDescriptor;
  using Args = baracuda::GroupedLinearArgs;
  static constexpr const char* kName = "GroupedLinearPlan";
  using GemmActivation = baracuda::GemmActivation;

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return grouped_contract::draw_grouped(f);
  }
  static std::vector<Desc> zero_size_descs() {
    using grouped_contract::grouped;
    return {grouped(DType::F32, 3, 4, 5, 0),                                          // no rows
            grouped(DType::BF16, 2, 3, 0, 6, false, true, GemmActivation::GeluTanh, true),  // no output features
            grouped(DType::F64, 4, 0, 3, 0, true, true, GemmActivation::Relu),         // no rows, K = 0
            grouped(DType::F16, 1, 0, 0, 5, false, true, GemmActivation::Gelu, true)};   // K = N = 0
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return grouped_contract::grouped_invalid(); }
  // CUDA: problems large enough that cuBLASLt's heuristics want scratch.
  static std::vector<Desc> workspace_descs() {
    using grouped_contract::grouped;
    return {grouped(DType::BF16, 4, 128, 96, 256, false, true, GemmActivation::Gelu, true),
            grouped(DType::F32, 3, 256, 128, 192, true, true, GemmActivation::GeluTanh, true)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    std::vector<Slot<Args>> v;
    v.push_back(grouped_contract::with_offsets<Args>("x", d.dtype, p.x_shape(), d, &Args::x));
    v.push_back(input<Args>("weight", d.dtype, p.weight_shape(), [](Args& a, const TensorMut& t) { a.weight = t; }));
    v.push_back(optional_input<Args>(d.has_bias, "bias", d.dtype, p.bias_shape(),
                                     [](Args& a, const TensorMut& t) { a.bias = t; }));
    v.push_back(output<Args>("y", d.dtype, p.y_shape(), [](Args& a, const TensorMut& t) { a.y = t; }));
    v.push_back(gemm_contract::optional_output<Args>(d.save_aux, "aux", d.dtype, p.y_shape(),
                                                     [](Args& a, const TensorMut& t) { a.aux = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return grouped_contract::grouped_mutators<Desc>(); }
  static std::string describe(const Desc& d) { return grouped_contract::describe(d); }
};

struct GroupedLinearBackwardTraits {
  using Plan = baracuda::GroupedLinearBackwardPlan;
  using Desc = baracuda::GroupedLinearBackwardDescriptor;
  using Args = baracuda::GroupedLinearBackwardArgs;
  static constexpr const char* kName = "GroupedLinearBackwardPlan";
  using GemmActivation = baracuda::GemmActivation;

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return grouped_contract::draw_grouped_backward(f);
  }
  static std::vector<Desc> zero_size_descs() {
    using grouped_contract::grouped;
    using grouped_contract::grouped_backward;
    return {grouped_backward(grouped(DType::F32, 3, 0, 0, 4, false, true, GemmActivation::GeluTanh)),  // K = N = 0
            grouped_backward(grouped(DType::BF16, 2, 4, 5, 0, false, true, GemmActivation::Gelu), true, false, false),  // no rows, dx only
            grouped_backward(grouped(DType::F64, 2, 0, 3, 5, true, false), true, true, false),  // K = 0, no bias
            grouped_backward(grouped(DType::F16, 1, 3, 0, 2, false, true, GemmActivation::Relu), false, true, true)};  // N = 0, no dx
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    return grouped_contract::grouped_backward_invalid();
  }
  // CUDA: g = dy * act'(pre) and the ones vector live in the workspace.
  static std::vector<Desc> workspace_descs() {
    using grouped_contract::grouped;
    using grouped_contract::grouped_backward;
    return {grouped_backward(grouped(DType::BF16, 4, 64, 48, 128, false, true, GemmActivation::GeluTanh)),
            grouped_backward(grouped(DType::F32, 3, 80, 64, 96, true, true, GemmActivation::None), false, true, true)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const baracuda::GroupedLinearDescriptor& fw = d.forward;
    const bool act = fw.activation != GemmActivation::None;
    const bool db = d.need_db && fw.has_bias;
    std::vector<Slot<Args>> v;
    v.push_back(grouped_contract::with_offsets<Args>("dy", fw.dtype, p.y_shape(), fw, &Args::dy));
    v.push_back(optional_input<Args>(d.need_dw, "x", fw.dtype, p.x_shape(), [](Args& a, const TensorMut& t) { a.x = t; }));
    v.push_back(optional_input<Args>(d.need_dx, "weight", fw.dtype, p.weight_shape(),
                                     [](Args& a, const TensorMut& t) { a.weight = t; }));
    v.push_back(optional_input<Args>(act, "aux", fw.dtype, p.y_shape(), [](Args& a, const TensorMut& t) { a.aux = t; }));
    using gemm_contract::optional_output;
    v.push_back(optional_output<Args>(d.need_dx, "dx", fw.dtype, p.x_shape(), [](Args& a, const TensorMut& t) { a.dx = t; }));
    v.push_back(optional_output<Args>(d.need_dw, "dw", fw.dtype, p.weight_shape(), [](Args& a, const TensorMut& t) { a.dw = t; }));
    v.push_back(optional_output<Args>(db, "db", fw.dtype, p.bias_shape(), [](Args& a, const TensorMut& t) { a.db = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return grouped_contract::grouped_mutators<Desc>(); }
  static std::string describe(const Desc& d) { return grouped_contract::describe(d); }
};

}  // namespace contract
