// Contract traits of the norm family: NormPlan, NormBackwardPlan. A new norm
// plan joins with a traits struct here and one INSTANTIATE line per suite in
// tests/contract/cpu_norm.cpp and cuda_norm.cpp.
#pragma once

#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/norm.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/reduce_traits.hpp"  // reduce_contract::small_shape, add_dims_mutators

namespace contract {
namespace norm_contract {

using baracuda::NormBackwardDescriptor;
using baracuda::NormDescriptor;
using baracuda::NormKind;

inline constexpr DType kFp[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

inline NormDescriptor make(NormKind kind, DType t, Dims shape, int k = 1) {
  NormDescriptor d;
  d.kind = kind;
  d.dtype = t;
  d.shape = shape;
  d.normalized_dims = k;
  return d;
}
inline NormBackwardDescriptor backward_of(const NormDescriptor& f) {
  NormBackwardDescriptor d;
  d.forward = f;
  return d;
}

inline NormDescriptor valid_forward(Fuzz& f) {
  NormDescriptor d;
  d.kind = f.chance(0.5) ? NormKind::LayerNorm : NormKind::RMSNorm;
  d.dtype = kFp[f.range(0, 3)];
  d.shape = reduce_contract::small_shape(f, false);
  if (d.shape.rank == 0) d.shape.push_back(f.range(1, 5));
  d.normalized_dims = static_cast<int>(f.range(1, d.shape.rank));
  for (int i = d.shape.rank - d.normalized_dims; i < d.shape.rank; ++i)
    if (d.shape[i] == 0) d.shape[i] = 3;  // the normalized block is never empty
  d.has_weight = f.chance(0.7);
  d.has_bias = d.kind == NormKind::LayerNorm && f.chance(0.5);
  d.zero_centered_weight = d.has_weight && f.chance(0.3);
  d.residual = f.chance(0.4);
  d.save_stats = f.chance(0.8);
  if (f.chance(0.3)) d.eps = std::uniform_real_distribution<double>(0.0, 0.1)(f.rng);
  return d;
}

inline std::string describe_forward(const NormDescriptor& d) {
  std::ostringstream os;
  os << "{kind " << baracuda::norm_kind_name(d.kind) << ", dtype " << baracuda::dtype_name(d.dtype) << ", shape "
     << dims_str(d.shape) << ", normalized_dims " << d.normalized_dims << ", has_weight " << d.has_weight << ", has_bias "
     << d.has_bias << ", eps " << d.eps << ", zero_centered_weight " << d.zero_centered_weight << ", residual "
     << d.residual << ", save_stats " << d.save_stats << "}";
  return os.str();
}

inline std::vector<std::pair<const char*, NormDescriptor>> invalid_forward() {
  auto with = [](auto fn) {
    NormDescriptor d = make(NormKind::LayerNorm, DType::F32, {3, 5});
    fn(d);
    return d;
  };
  NormDescriptor rank9 = make(NormKind::LayerNorm, DType::F32, {1, 1, 1, 1, 1, 1, 1, 1});
  rank9.shape.rank = 9;
  return {{"normalized_dims_zero", with([](NormDescriptor& d) { d.normalized_dims = 0; })},
          {"normalized_dims_past_rank", with([](NormDescriptor& d) { d.normalized_dims = 3; })},
          {"rank_zero", with([](NormDescriptor& d) { d.shape = Dims{}; })},
          {"empty_normalized_block", with([](NormDescriptor& d) { d.shape = Dims{3, 0}; })},
          {"eps_negative", with([](NormDescriptor& d) { d.eps = -1.0; })},
          {"eps_nan", with([](NormDescriptor& d) { d.eps = std::numeric_limits<double>::quiet_NaN(); })},
          {"rms_with_bias", with([](NormDescriptor& d) { d.kind = NormKind::RMSNorm, d.has_bias = true; })},
          {"zero_centered_without_weight", with([](NormDescriptor& d) { d.has_weight = false, d.zero_centered_weight = true; })},
          {"extent_negative", with([](NormDescriptor& d) { d.shape = Dims{3, -5}; })},
          {"integer_dtype", with([](NormDescriptor& d) { d.dtype = DType::I64; })},
          {"shape_rank_9", rank9}};
}

inline std::vector<DescMutator<NormDescriptor>> forward_mutators() {
  std::vector<DescMutator<NormDescriptor>> v;
  reduce_contract::add_dims_mutators<NormDescriptor>(v, &NormDescriptor::shape, "shape");
  v.push_back({"desc.normalized_dims_any", [](NormDescriptor& d, Fuzz& f) {
                 d.normalized_dims = f.chance(0.5) ? static_cast<int>(f.range(-3, 10)) : static_cast<int>(f.any_int());
               }});
  v.push_back({"desc.eps_any", [](NormDescriptor& d, Fuzz& f) { d.eps = f.any_double(); }});
  v.push_back({"desc.dtype_any", [](NormDescriptor& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  v.push_back({"desc.flags_any", [](NormDescriptor& d, Fuzz& f) {
                 d.has_bias = f.chance(0.5), d.has_weight = f.chance(0.5), d.zero_centered_weight = f.chance(0.5);
               }});
  return v;
}

inline Dims weight_shape(const NormDescriptor& d) {
  Dims w;
  for (int i = d.shape.rank - d.normalized_dims; i < d.shape.rank; ++i) w.push_back(d.shape[i]);
  return w;
}
inline Dims stats_shape(const NormDescriptor& d) {
  int64_t r = 1;
  for (int i = 0; i < d.shape.rank - d.normalized_dims; ++i) r *= d.shape[i];
  return Dims{r};
}
inline DType stats_dtype(const NormDescriptor& d) { return d.dtype == DType::F64 ? DType::F64 : DType::F32; }

template <class Args>
Slot<Args> optional_output(bool used, const char* name, DType t, Dims shape, void (*bind)(Args&, const TensorMut&),
                           const char* in_place_of = nullptr) {
  Slot<Args> s = output<Args>(name, t, shape, bind, in_place_of);
  s.optional = true;
  if (!used) s.role = Role::Unused;
  return s;
}

// The CUDA kernels need the normalized block (the last k axes) of every row
// tensor, and the whole of dweight / dbias, contiguous (norm.hpp): the CUDA
// suite's gapped outputs put their gaps after that block, not inside it.
template <class Args>
std::vector<Slot<Args>> with_gap_block(std::vector<Slot<Args>> v, int normalized_dims) {
  for (Slot<Args>& s : v) s.gap_block = normalized_dims;
  return v;
}

}  // namespace norm_contract

// ---------------------------------------------------------------------------
struct NormTraits {
  using Plan = baracuda::NormPlan;
  using Desc = baracuda::NormDescriptor;
  using Args = baracuda::NormArgs;
  static constexpr const char* kName = "NormPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return norm_contract::valid_forward(f);
  }
  static std::vector<Desc> zero_size_descs() {
    using norm_contract::make;
    Desc fused = make(baracuda::NormKind::RMSNorm, DType::BF16, {0, 3, 8}, 1);
    fused.residual = true;
    return {make(baracuda::NormKind::LayerNorm, DType::F32, {0, 5}), fused,
            make(baracuda::NormKind::LayerNorm, DType::F64, {2, 0, 3}, 1)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return norm_contract::invalid_forward(); }
  static std::vector<Desc> workspace_descs() { return {}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace norm_contract;
    const Desc& d = p.descriptor();
    const bool rms = d.kind == baracuda::NormKind::RMSNorm;
    const Dims w = weight_shape(d), s = stats_shape(d);
    const DType st = stats_dtype(d);
    std::vector<Slot<Args>> v = {input<Args>("x", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.x = t; }),
            optional_input<Args>(d.residual, "residual", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.residual = t; }),
            optional_input<Args>(d.has_weight, "weight", d.dtype, w, [](Args& a, const TensorMut& t) { a.weight = t; }),
            optional_input<Args>(d.has_bias, "bias", d.dtype, w, [](Args& a, const TensorMut& t) { a.bias = t; }),
            output<Args>("y", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.y = t; }, "x"),
            norm_contract::optional_output<Args>(d.residual, "h", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.h = t; },
                                                 "residual"),
            norm_contract::optional_output<Args>(d.save_stats && !rms, "mean", st, s, [](Args& a, const TensorMut& t) { a.mean = t; }),
            norm_contract::optional_output<Args>(d.save_stats, "rstd", st, s, [](Args& a, const TensorMut& t) { a.rstd = t; })};
    return with_gap_block(std::move(v), d.normalized_dims);
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return norm_contract::forward_mutators(); }
  static std::string describe(const Desc& d) { return "NormDescriptor" + norm_contract::describe_forward(d); }
};

struct NormBackwardTraits {
  using Plan = baracuda::NormBackwardPlan;
  using Desc = baracuda::NormBackwardDescriptor;
  using Args = baracuda::NormBackwardArgs;
  static constexpr const char* kName = "NormBackwardPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d = norm_contract::backward_of(norm_contract::valid_forward(f));
    d.forward.save_stats = true;
    d.need_dx = f.chance(0.8);
    d.need_dweight = f.chance(0.7);
    d.need_dbias = f.chance(0.7);
    d.residual_grad = d.need_dx && f.chance(0.4);
    if (!d.need_dx && !(d.need_dweight && d.forward.has_weight) && !(d.need_dbias && d.forward.has_bias)) d.need_dx = true;
    return d;
  }
  static std::vector<Desc> zero_size_descs() {
    using namespace norm_contract;
    // Zero rows with dweight / dbias would write zeros there (not an empty output): left out here.
    Desc a = backward_of(make(baracuda::NormKind::LayerNorm, DType::F32, {0, 5}));
    a.need_dweight = a.need_dbias = false;
    Desc b = backward_of(make(baracuda::NormKind::RMSNorm, DType::BF16, {0, 3, 8}, 1));
    b.forward.has_weight = false;
    b.residual_grad = true;
    return {a, b};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    std::vector<std::pair<const char*, Desc>> v;
    for (const auto& [label, f] : norm_contract::invalid_forward()) v.push_back({label, norm_contract::backward_of(f)});
    Desc no_stats = norm_contract::backward_of(norm_contract::make(baracuda::NormKind::LayerNorm, DType::F32, {3, 5}));
    no_stats.forward.save_stats = false;
    Desc rg = norm_contract::backward_of(norm_contract::make(baracuda::NormKind::LayerNorm, DType::F32, {3, 5}));
    rg.need_dx = false;
    rg.residual_grad = true;
    Desc nothing = norm_contract::backward_of(norm_contract::make(baracuda::NormKind::RMSNorm, DType::F32, {3, 5}));
    nothing.forward.has_weight = false;
    nothing.need_dx = false;
    v.push_back({"save_stats_false", no_stats});
    v.push_back({"residual_grad_without_dx", rg});
    v.push_back({"nothing_to_compute", nothing});
    return v;
  }
  // dweight / dbias take the column partials' workspace.
  static std::vector<Desc> workspace_descs() {
    Desc d = norm_contract::backward_of(norm_contract::make(baracuda::NormKind::LayerNorm, DType::F32, {64, 1000}));
    d.forward.has_bias = true;
    return {d, norm_contract::backward_of(norm_contract::make(baracuda::NormKind::RMSNorm, DType::BF16, {256, 768}))};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace norm_contract;
    const Desc& bd = p.descriptor();
    const baracuda::NormDescriptor& d = bd.forward;
    const bool rms = d.kind == baracuda::NormKind::RMSNorm;
    const Dims w = weight_shape(d), s = stats_shape(d);
    const DType st = stats_dtype(d);
    std::vector<Slot<Args>> v = {input<Args>("dy", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.dy = t; }),
            input<Args>("x", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.x = t; }),
            optional_input<Args>(d.has_weight && bd.need_dx, "weight", d.dtype, w, [](Args& a, const TensorMut& t) { a.weight = t; }),
            optional_input<Args>(!rms, "mean", st, s, [](Args& a, const TensorMut& t) { a.mean = t; }),
            input<Args>("rstd", st, s, [](Args& a, const TensorMut& t) { a.rstd = t; }),
            optional_input<Args>(bd.residual_grad, "dh_in", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.dh_in = t; }),
            norm_contract::optional_output<Args>(bd.need_dx, "dx", d.dtype, d.shape, [](Args& a, const TensorMut& t) { a.dx = t; },
                                                 "dy,dh_in"),
            norm_contract::optional_output<Args>(p.computes_dweight(), "dweight", d.dtype, w,
                                                 [](Args& a, const TensorMut& t) { a.dweight = t; }),
            norm_contract::optional_output<Args>(p.computes_dbias(), "dbias", d.dtype, w,
                                                 [](Args& a, const TensorMut& t) { a.dbias = t; })};
    return with_gap_block(std::move(v), d.normalized_dims);
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> v;
    for (const auto& m : norm_contract::forward_mutators())
      v.push_back({m.name, [apply = m.apply](Desc& d, Fuzz& f) { apply(d.forward, f); }});
    v.push_back({"desc.needs_any", [](Desc& d, Fuzz& f) {
                   d.need_dx = f.chance(0.5), d.need_dweight = f.chance(0.5), d.need_dbias = f.chance(0.5);
                   d.residual_grad = f.chance(0.5), d.forward.save_stats = f.chance(0.8);
                 }});
    return v;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "NormBackwardDescriptor{forward " << norm_contract::describe_forward(d.forward) << ", need_dx " << d.need_dx
       << ", need_dweight " << d.need_dweight << ", need_dbias " << d.need_dbias << ", residual_grad " << d.residual_grad
       << "}";
    return os.str();
  }
};

}  // namespace contract
