// Contract traits of the loss family: CrossEntropyPlan, CrossEntropyBackwardPlan,
// FusedLinearCrossEntropyPlan.
// A new loss plan joins with a traits struct here and one INSTANTIATE line per
// suite in tests/contract/cpu_loss.cpp and cuda_loss.cpp.
//
// The forward's lse is truly optional (an empty view means "not wanted"), a
// kind of tensor the suite's slots cannot express (a used slot must be
// required): the forward's slots leave it out; tests/loss/ covers it.
#pragma once

#include <limits>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/loss.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"

namespace contract {
namespace loss_contract {

using baracuda::CrossEntropyBackwardDescriptor;
using baracuda::CrossEntropyDescriptor;
using baracuda::CrossEntropyTarget;
using baracuda::LossReduction;

inline constexpr DType kFp[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

inline CrossEntropyDescriptor make(DType t, int64_t rows, int64_t classes, LossReduction r = LossReduction::Mean) {
  CrossEntropyDescriptor d;
  d.dtype = t;
  d.rows = rows;
  d.classes = classes;
  d.reduction = r;
  return d;
}

inline CrossEntropyDescriptor valid(Fuzz& f) {
  CrossEntropyDescriptor d;
  d.dtype = kFp[f.range(0, 3)];
  d.rows = f.range(0, 6);
  d.classes = f.range(1, 40);
  d.target = f.chance(0.3) ? CrossEntropyTarget::Probs : CrossEntropyTarget::Index;
  d.index_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
  if (d.target == CrossEntropyTarget::Index && f.chance(0.3)) d.ignore_index = f.range(0, d.classes - 1);
  if (f.chance(0.4)) d.label_smoothing = std::uniform_real_distribution<double>(0.0, 1.0)(f.rng);
  d.has_weight = f.chance(0.4);
  d.reduction = static_cast<LossReduction>(f.range(0, 2));
  if (f.chance(0.3)) d.z_loss = std::uniform_real_distribution<double>(0.0, 0.1)(f.rng);
  d.loss_dtype = f.chance(0.5) ? DType::F32 : d.dtype;
  return d;
}

inline std::string describe(const CrossEntropyDescriptor& d) {
  std::ostringstream os;
  os << "{dtype " << baracuda::dtype_name(d.dtype) << ", rows " << d.rows << ", classes " << d.classes << ", target "
     << (d.target == CrossEntropyTarget::Probs ? "probs" : "index") << ", index_dtype " << baracuda::dtype_name(d.index_dtype)
     << ", ignore_index " << d.ignore_index << ", label_smoothing " << d.label_smoothing << ", has_weight " << d.has_weight
     << ", reduction " << baracuda::loss_reduction_name(d.reduction) << ", z_loss " << d.z_loss << ", loss_dtype "
     << baracuda::dtype_name(d.loss_dtype) << ", with_grad " << d.with_grad << "}";
  return os.str();
}

inline std::vector<std::pair<const char*, CrossEntropyDescriptor>> invalid() {
  auto with = [](auto fn) {
    CrossEntropyDescriptor d = make(DType::F32, 3, 5);
    fn(d);
    return d;
  };
  return {{"rows_negative", with([](CrossEntropyDescriptor& d) { d.rows = -1; })},
          {"classes_zero", with([](CrossEntropyDescriptor& d) { d.classes = 0; })},
          {"shape_overflow", with([](CrossEntropyDescriptor& d) { d.rows = d.classes = int64_t{1} << 40; })},
          {"integer_dtype", with([](CrossEntropyDescriptor& d) { d.dtype = DType::I64; })},
          {"index_dtype_float", with([](CrossEntropyDescriptor& d) { d.index_dtype = DType::F32; })},
          {"probs_ignore_index", with([](CrossEntropyDescriptor& d) {
             d.target = CrossEntropyTarget::Probs;
             d.ignore_index = 2;
           })},
          {"smoothing_above_one", with([](CrossEntropyDescriptor& d) { d.label_smoothing = 1.5; })},
          {"smoothing_nan", with([](CrossEntropyDescriptor& d) { d.label_smoothing = std::numeric_limits<double>::quiet_NaN(); })},
          {"z_loss_negative", with([](CrossEntropyDescriptor& d) { d.z_loss = -0.1; })},
          {"loss_dtype_other", with([](CrossEntropyDescriptor& d) { d.loss_dtype = DType::F16; })},
          {"reduction_unknown", with([](CrossEntropyDescriptor& d) { d.reduction = static_cast<LossReduction>(5); })}};
}

inline std::vector<DescMutator<CrossEntropyDescriptor>> mutators() {
  using D = CrossEntropyDescriptor;
  std::vector<DescMutator<D>> v;
  v.push_back({"desc.rows_any", [](D& d, Fuzz& f) { d.rows = f.chance(0.5) ? f.range(-3, 8) : f.any_int(); }});
  v.push_back({"desc.classes_any", [](D& d, Fuzz& f) { d.classes = f.chance(0.5) ? f.range(-3, 8) : f.any_int(); }});
  v.push_back({"desc.dtype_any", [](D& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  v.push_back({"desc.index_dtype_any", [](D& d, Fuzz& f) { d.index_dtype = f.any_dtype(); }});
  v.push_back({"desc.loss_dtype_any", [](D& d, Fuzz& f) { d.loss_dtype = f.any_dtype(); }});
  v.push_back({"desc.smoothing_any", [](D& d, Fuzz& f) { d.label_smoothing = f.any_double(); }});
  v.push_back({"desc.z_loss_any", [](D& d, Fuzz& f) { d.z_loss = f.any_double(); }});
  v.push_back({"desc.ignore_index_any", [](D& d, Fuzz& f) { d.ignore_index = f.any_int(); }});
  return v;
}

// Index target ids: in [0, classes), some rows ignore_index.
inline void fill_targets(Rng& rng, std::vector<double>& x, const CrossEntropyDescriptor& d) {
  for (double& v : x) {
    const bool ignore = std::uniform_real_distribution<double>(0, 1)(rng) < 0.2;
    v = ignore ? static_cast<double>(d.ignore_index)
               : static_cast<double>(std::uniform_int_distribution<int64_t>(0, d.classes - 1)(rng));
  }
}

template <class Args>
Slot<Args> target_slot(const CrossEntropyDescriptor& d, void (*bind)(Args&, const TensorMut&)) {
  const bool probs = d.target == CrossEntropyTarget::Probs;
  Slot<Args> s = input<Args>("target", probs ? d.dtype : d.index_dtype, probs ? Dims{d.rows, d.classes} : Dims{d.rows}, bind);
  if (!probs) {
    s.values = [d](Rng& rng, std::vector<double>& x) { fill_targets(rng, x, d); };
    s.values_checked = true;  // out-of-range ids are refused (CPU)
  }
  return s;
}

inline Dims loss_shape(const CrossEntropyDescriptor& d) { return d.reduction == LossReduction::None ? Dims{d.rows} : Dims{}; }
inline DType lse_dtype(const CrossEntropyDescriptor& d) { return d.dtype == DType::F64 ? DType::F64 : DType::F32; }

template <class Args>
Slot<Args> optional_output(bool used, const char* name, DType t, Dims shape, void (*bind)(Args&, const TensorMut&),
                           const char* in_place_of = nullptr) {
  Slot<Args> s = output<Args>(name, t, shape, bind, in_place_of);
  s.optional = true;
  if (!used) s.role = Role::Unused;
  return s;
}

}  // namespace loss_contract

// ---------------------------------------------------------------------------
struct CrossEntropyTraits {
  using Plan = baracuda::CrossEntropyPlan;
  using Desc = baracuda::CrossEntropyDescriptor;
  using Args = baracuda::CrossEntropyArgs;
  static constexpr const char* kName = "CrossEntropyPlan";

  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    Desc d = loss_contract::valid(f);
    d.with_grad = f.chance(0.5);
    return d;
  }
  // Outputs all empty: reduction None over zero rows (Mean / Sum write a rank-0 loss).
  static std::vector<Desc> zero_size_descs() {
    using loss_contract::make;
    Desc a = make(DType::F32, 0, 5, baracuda::LossReduction::None);
    Desc b = make(DType::BF16, 0, 70000, baracuda::LossReduction::None);
    b.with_grad = true;
    b.target = baracuda::CrossEntropyTarget::Probs;
    return {a, b};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return loss_contract::invalid(); }
  // Mean / Sum keep per-row losses (and Mean its divisor) in the workspace;
  // few long rows take the split path's partials.
  static std::vector<Desc> workspace_descs() {
    using loss_contract::make;
    Desc split = make(DType::BF16, 2, 70000);
    split.with_grad = true;
    return {make(DType::F32, 64, 1000), make(DType::F64, 5, 9, baracuda::LossReduction::Sum), split};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace loss_contract;
    const Desc& d = p.descriptor();
    const Dims mat{d.rows, d.classes}, ls = loss_shape(d);
    return {input<Args>("logits", d.dtype, mat, [](Args& a, const TensorMut& t) { a.logits = t; }),
            target_slot<Args>(d, [](Args& a, const TensorMut& t) { a.target = t; }),
            optional_input<Args>(d.has_weight, "weight", d.dtype, Dims{d.classes}, [](Args& a, const TensorMut& t) { a.weight = t; }),
            optional_input<Args>(d.with_grad, "dloss", d.loss_dtype, ls, [](Args& a, const TensorMut& t) { a.dloss = t; }),
            output<Args>("loss", d.loss_dtype, ls, [](Args& a, const TensorMut& t) { a.loss = t; }),
            loss_contract::optional_output<Args>(d.with_grad, "dlogits", d.dtype, mat,
                                                 [](Args& a, const TensorMut& t) { a.dlogits = t; }, "logits")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    auto v = loss_contract::mutators();
    v.push_back({"desc.with_grad_any", [](Desc& d, Fuzz& f) { d.with_grad = f.chance(0.5); }});
    return v;
  }
  static std::string describe(const Desc& d) { return "CrossEntropyDescriptor" + loss_contract::describe(d); }
};

struct CrossEntropyBackwardTraits {
  using Plan = baracuda::CrossEntropyBackwardPlan;
  using Desc = baracuda::CrossEntropyBackwardDescriptor;
  using Args = baracuda::CrossEntropyBackwardArgs;
  static constexpr const char* kName = "CrossEntropyBackwardPlan";

  static Desc of(const baracuda::CrossEntropyDescriptor& f) {
    Desc d;
    d.forward = f;
    return d;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    return of(loss_contract::valid(f));
  }
  static std::vector<Desc> zero_size_descs() {
    using loss_contract::make;
    return {of(make(DType::F32, 0, 5)), of(make(DType::F16, 0, 3, baracuda::LossReduction::None))};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    std::vector<std::pair<const char*, Desc>> v;
    for (const auto& [label, f] : loss_contract::invalid()) v.push_back({label, of(f)});
    Desc g = of(loss_contract::make(DType::F32, 3, 5));
    g.forward.with_grad = true;
    v.push_back({"forward_with_grad", g});
    return v;
  }
  static std::vector<Desc> workspace_descs() {
    using loss_contract::make;
    return {of(make(DType::F32, 64, 1000)), of(make(DType::BF16, 3, 70000))};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace loss_contract;
    const baracuda::CrossEntropyDescriptor& d = p.descriptor().forward;
    const Dims mat{d.rows, d.classes};
    Slot<Args> lse = input<Args>("lse", lse_dtype(d), Dims{d.rows}, [](Args& a, const TensorMut& t) { a.lse = t; });
    lse.values = [](Rng& rng, std::vector<double>& x) {  // a plausible lse: logits are in [-1, 1)
      for (double& v : x) v = std::uniform_real_distribution<double>(1.0, 4.0)(rng);
    };
    return {input<Args>("logits", d.dtype, mat, [](Args& a, const TensorMut& t) { a.logits = t; }),
            target_slot<Args>(d, [](Args& a, const TensorMut& t) { a.target = t; }),
            optional_input<Args>(d.has_weight, "weight", d.dtype, Dims{d.classes}, [](Args& a, const TensorMut& t) { a.weight = t; }),
            lse,
            input<Args>("dloss", d.loss_dtype, loss_shape(d), [](Args& a, const TensorMut& t) { a.dloss = t; }),
            output<Args>("dlogits", d.dtype, mat, [](Args& a, const TensorMut& t) { a.dlogits = t; }, "logits")};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> v;
    for (const auto& m : loss_contract::mutators())
      v.push_back({m.name, [apply = m.apply](Desc& d, Fuzz& f) { apply(d.forward, f); }});
    v.push_back({"desc.with_grad_any", [](Desc& d, Fuzz& f) { d.forward.with_grad = f.chance(0.5); }});
    return v;
  }
  static std::string describe(const Desc& d) { return "CrossEntropyBackwardDescriptor{forward " + loss_contract::describe(d.forward) + "}"; }
};

// The fused linear + cross-entropy: the CE options of loss_contract::valid()
// (index targets only), H [N, D], W [V, D], b, and the need_* flags.
struct FusedLinearCrossEntropyTraits {
  using Plan = baracuda::FusedLinearCrossEntropyPlan;
  using Desc = baracuda::FusedLinearCrossEntropyDescriptor;
  using Args = baracuda::FusedLinearCrossEntropyArgs;
  static constexpr const char* kName = "FusedLinearCrossEntropyPlan";

  static Desc of(const baracuda::CrossEntropyDescriptor& c, int64_t in_features, bool bias) {
    Desc d;
    d.dtype = c.dtype;
    d.rows = c.rows;
    d.in_features = in_features;
    d.classes = c.classes;
    d.has_bias = bias;
    d.need_db = bias;
    d.target = c.target;
    d.index_dtype = c.index_dtype;
    d.ignore_index = c.ignore_index;
    d.label_smoothing = c.label_smoothing;
    d.has_weight = c.has_weight;
    d.reduction = c.reduction;
    d.z_loss = c.z_loss;
    d.loss_dtype = c.loss_dtype;
    return d;
  }
  static baracuda::CrossEntropyDescriptor ce_of(const Desc& d) {
    baracuda::CrossEntropyDescriptor c;
    c.dtype = d.dtype;
    c.rows = d.rows;
    c.classes = d.classes;
    c.ignore_index = d.ignore_index;
    return c;
  }
  static Desc valid_desc(Rng& rng) {
    Fuzz f(rng);
    baracuda::CrossEntropyDescriptor c = loss_contract::valid(f);
    c.target = baracuda::CrossEntropyTarget::Index;
    Desc d = of(c, f.range(0, 9), f.chance(0.5));
    d.need_dh = f.chance(0.7);
    d.need_dw = f.chance(0.7);
    d.need_db = d.has_bias && f.chance(0.7);
    if (f.chance(0.3)) d.chunk_rows = f.range(1, 4);
    return d;
  }
  // Outputs all empty: reduction None over zero rows, with no dW / db (or D = 0 and no db).
  static std::vector<Desc> zero_size_descs() {
    using loss_contract::make;
    Desc a = of(make(DType::F32, 0, 5, baracuda::LossReduction::None), 3, false);
    a.need_dw = false;
    Desc b = of(make(DType::BF16, 0, 7, baracuda::LossReduction::None), 0, true);
    b.need_db = false;
    return {a, b};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto with = [](auto fn) {
      Desc d = of(loss_contract::make(DType::F32, 3, 5), 4, true);
      fn(d);
      return d;
    };
    std::vector<std::pair<const char*, Desc>> v;
    for (const auto& [label, c] : loss_contract::invalid())
      if (std::string(label) != "probs_ignore_index") v.push_back({label, of(c, 4, true)});
    v.push_back({"in_features_negative", with([](Desc& d) { d.in_features = -1; })});
    v.push_back({"probability_targets", with([](Desc& d) { d.target = baracuda::CrossEntropyTarget::Probs; })});
    v.push_back({"need_db_without_bias", with([](Desc& d) { d.has_bias = false; })});
    v.push_back({"chunk_rows_negative", with([](Desc& d) { d.chunk_rows = -1; })});
    return v;
  }
  // CUDA: the chunk buffer, the CE scratch, the inner GEMMs' workspace.
  static std::vector<Desc> workspace_descs() {
    using loss_contract::make;
    Desc chunked = of(make(DType::BF16, 9, 300), 16, true);
    chunked.chunk_rows = 4;
    return {of(make(DType::F32, 8, 40), 8, false), chunked};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    using namespace loss_contract;
    const Desc& d = p.descriptor();
    const bool grad = d.need_dh || d.need_dw || d.need_db;
    const Dims hs{d.rows, d.in_features}, ws{d.classes, d.in_features}, vs{d.classes};
    const Dims ls = d.reduction == baracuda::LossReduction::None ? Dims{d.rows} : Dims{};
    Slot<Args> target = input<Args>("target", d.index_dtype, Dims{d.rows}, [](Args& a, const TensorMut& t) { a.target = t; });
    target.values = [c = ce_of(d)](Rng& rng, std::vector<double>& x) { fill_targets(rng, x, c); };
    target.values_checked = true;  // out-of-range ids are refused (CPU)
    return {input<Args>("hidden", d.dtype, hs, [](Args& a, const TensorMut& t) { a.hidden = t; }),
            input<Args>("weight", d.dtype, ws, [](Args& a, const TensorMut& t) { a.weight = t; }),
            optional_input<Args>(d.has_bias, "bias", d.dtype, vs, [](Args& a, const TensorMut& t) { a.bias = t; }),
            target,
            optional_input<Args>(d.has_weight, "class_weight", d.dtype, vs, [](Args& a, const TensorMut& t) { a.class_weight = t; }),
            optional_input<Args>(grad, "dloss", d.loss_dtype, ls, [](Args& a, const TensorMut& t) { a.dloss = t; }),
            output<Args>("loss", d.loss_dtype, ls, [](Args& a, const TensorMut& t) { a.loss = t; }),
            loss_contract::optional_output<Args>(d.need_dh, "dhidden", d.dtype, hs, [](Args& a, const TensorMut& t) { a.dhidden = t; }),
            loss_contract::optional_output<Args>(d.need_dw, "dweight", d.dtype, ws, [](Args& a, const TensorMut& t) { a.dweight = t; }),
            loss_contract::optional_output<Args>(d.need_db, "dbias", d.dtype, vs, [](Args& a, const TensorMut& t) { a.dbias = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() {
    std::vector<DescMutator<Desc>> v;
    v.push_back({"desc.rows_any", [](Desc& d, Fuzz& f) { d.rows = f.chance(0.5) ? f.range(-3, 8) : f.any_int(); }});
    v.push_back({"desc.in_features_any", [](Desc& d, Fuzz& f) { d.in_features = f.chance(0.5) ? f.range(-3, 8) : f.any_int(); }});
    v.push_back({"desc.classes_any", [](Desc& d, Fuzz& f) { d.classes = f.chance(0.5) ? f.range(-3, 8) : f.any_int(); }});
    v.push_back({"desc.dtype_any", [](Desc& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
    v.push_back({"desc.index_dtype_any", [](Desc& d, Fuzz& f) { d.index_dtype = f.any_dtype(); }});
    v.push_back({"desc.loss_dtype_any", [](Desc& d, Fuzz& f) { d.loss_dtype = f.any_dtype(); }});
    v.push_back({"desc.smoothing_any", [](Desc& d, Fuzz& f) { d.label_smoothing = f.any_double(); }});
    v.push_back({"desc.z_loss_any", [](Desc& d, Fuzz& f) { d.z_loss = f.any_double(); }});
    v.push_back({"desc.need_any", [](Desc& d, Fuzz& f) {
                   d.need_dh = f.chance(0.5);
                   d.need_dw = f.chance(0.5);
                   d.need_db = f.chance(0.5);
                 }});
    v.push_back({"desc.chunk_rows_any", [](Desc& d, Fuzz& f) { d.chunk_rows = f.chance(0.5) ? f.range(-3, 8) : f.any_int(); }});
    return v;
  }
  static std::string describe(const Desc& d) {
    std::ostringstream os;
    os << "FusedLinearCrossEntropyDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", rows " << d.rows
       << ", in_features " << d.in_features << ", classes " << d.classes << ", has_bias " << d.has_bias << ", target "
       << (d.target == baracuda::CrossEntropyTarget::Probs ? "probs" : "index") << ", index_dtype "
       << baracuda::dtype_name(d.index_dtype) << ", ignore_index " << d.ignore_index << ", label_smoothing "
       << d.label_smoothing << ", has_weight " << d.has_weight << ", reduction " << baracuda::loss_reduction_name(d.reduction)
       << ", z_loss " << d.z_loss << ", loss_dtype " << baracuda::dtype_name(d.loss_dtype) << ", need_dh " << d.need_dh
       << ", need_dw " << d.need_dw << ", need_db " << d.need_db << ", workspace_limit " << d.workspace_limit
       << ", chunk_rows " << d.chunk_rows << "}";
    return os.str();
  }
};

}  // namespace contract
