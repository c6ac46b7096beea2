// Contract traits of the attention family: SdpaPlan, SdpaBackwardPlan,
// FlashSdpaPlan, FlashSdpaBackwardPlan. A new attention plan joins with a
// traits struct here and one INSTANTIATE line per suite in
// tests/contract/cpu_attention.cpp and cuda_attention.cpp.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/attention.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"

namespace contract {
namespace attention_contract {

using baracuda::AlibiMode;
using baracuda::DiagonalAlign;
using baracuda::FlashSdpaDescriptor;
using baracuda::SdpaDescriptor;

inline constexpr DType kFp[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

// batch, heads and a kv_heads dividing heads.
template <class Desc>
void random_heads(Fuzz& f, Desc& d) {
  d.batch = f.range(1, 2);
  d.heads = f.pick<int64_t>({1, 2, 4});
  do d.kv_heads = f.pick<int64_t>({1, 2, 4});
  while (d.heads % d.kv_heads != 0);
}

inline std::string opt(const std::optional<double>& s) { return s ? std::to_string(*s) : std::string("default"); }

inline std::string describe(const SdpaDescriptor& d) {
  std::ostringstream os;
  os << "SdpaDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", B " << d.batch << ", H " << d.heads << ", Hk "
     << d.kv_heads << ", Q " << d.q_len << ", K " << d.kv_len << ", Dk " << d.head_dim << ", Dv " << d.head_dim_v
     << ", scale " << opt(d.scale) << ", causal " << d.causal << ", align " << static_cast<int>(d.align) << ", has_mask "
     << d.has_mask << "}";
  return os.str();
}
inline std::string describe(const FlashSdpaDescriptor& d) {
  std::ostringstream os;
  os << "FlashSdpaDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", B " << d.batch << ", H " << d.heads
     << ", Hk " << d.kv_heads << ", Q " << d.q_len << ", K " << d.kv_len << ", D " << d.head_dim << ", scale "
     << opt(d.scale) << ", causal " << d.causal << ", align " << static_cast<int>(d.align) << ", window ["
     << d.window_left << ", " << d.window_right << "], softcap " << d.softcap << ", alibi "
     << static_cast<int>(d.alibi) << ", has_mask " << d.has_mask << ", varlen " << d.varlen << ", total_q "
     << d.total_q << ", total_kv " << d.total_kv << ", save_lse " << d.save_lse << "}";
  return os.str();
}

// ---- materialized --------------------------------------------------------------
inline SdpaDescriptor sdpa(DType t, int64_t b, int64_t h, int64_t hk, int64_t q, int64_t k, int64_t dk, int64_t dv = -1) {
  SdpaDescriptor d;
  d.dtype = t;
  d.batch = b;
  d.heads = h;
  d.kv_heads = hk;
  d.q_len = q;
  d.kv_len = k;
  d.head_dim = dk;
  d.head_dim_v = dv;
  return d;
}
inline SdpaDescriptor sdpa_valid(Rng& rng) {
  Fuzz f(rng);
  SdpaDescriptor d;
  d.dtype = kFp[f.range(0, 3)];
  random_heads(f, d);
  d.q_len = f.range(1, 7);
  d.kv_len = f.chance(0.1) ? 0 : f.range(1, 7);
  d.head_dim = f.range(1, 8);
  d.head_dim_v = f.chance(0.5) ? -1 : f.range(1, 8);
  if (f.chance(0.5)) d.scale = std::uniform_real_distribution<double>(0.1, 2.0)(rng);
  d.causal = f.chance(0.5);
  d.align = f.chance(0.5) ? DiagonalAlign::TopLeft : DiagonalAlign::BottomRight;
  d.has_mask = f.chance(0.5);
  return d;
}
inline std::vector<std::pair<const char*, SdpaDescriptor>> sdpa_invalid() {
  auto with = [](auto fn) {
    SdpaDescriptor d = sdpa(DType::F32, 1, 2, 1, 3, 4, 8);
    fn(d);
    return d;
  };
  return {{"heads_not_multiple", with([](SdpaDescriptor& d) { d.heads = 3, d.kv_heads = 2; })},
          {"heads_zero", with([](SdpaDescriptor& d) { d.heads = 0; })},
          {"head_dim_zero", with([](SdpaDescriptor& d) { d.head_dim = 0; })},
          {"head_dim_v_negative", with([](SdpaDescriptor& d) { d.head_dim_v = -2; })},
          {"batch_negative", with([](SdpaDescriptor& d) { d.batch = -1; })},
          {"q_len_negative", with([](SdpaDescriptor& d) { d.q_len = -3; })},
          {"scale_nan", with([](SdpaDescriptor& d) { d.scale = std::numeric_limits<double>::quiet_NaN(); })},
          {"scale_inf", with([](SdpaDescriptor& d) { d.scale = std::numeric_limits<double>::infinity(); })},
          {"integer_dtype", with([](SdpaDescriptor& d) { d.dtype = DType::I32; })},
          {"align_unknown", with([](SdpaDescriptor& d) { d.align = static_cast<DiagonalAlign>(5); })}};
}
inline std::vector<DescMutator<SdpaDescriptor>> sdpa_mutators() {
  using D = SdpaDescriptor;
  auto v = extent_mutators<D>({&D::batch, &D::heads, &D::kv_heads, &D::q_len, &D::kv_len, &D::head_dim, &D::head_dim_v});
  v.push_back({"desc.head_dim_v_any", [](D& d, Fuzz& f) { d.head_dim_v = f.any_int(); }});
  v.push_back({"desc.scale_any", [](D& d, Fuzz& f) { d.scale = f.any_double(); }});
  v.push_back({"desc.align_any", [](D& d, Fuzz& f) { d.align = static_cast<DiagonalAlign>(f.range(0, 255)); }});
  v.push_back({"desc.dtype_any", [](D& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  return v;
}

// ---- flash ------------------------------------------------------------------------
inline FlashSdpaDescriptor flash(DType t, int64_t b, int64_t h, int64_t hk, int64_t q, int64_t k, int64_t dim) {
  FlashSdpaDescriptor d;
  d.dtype = t;
  d.batch = b;
  d.heads = h;
  d.kv_heads = hk;
  d.q_len = q;
  d.kv_len = k;
  d.head_dim = dim;
  return d;
}
inline FlashSdpaDescriptor flash_valid(Rng& rng) {
  Fuzz f(rng);
  FlashSdpaDescriptor d;
  d.dtype = kFp[f.range(0, 3)];
  random_heads(f, d);
  d.q_len = f.range(1, 6);
  d.kv_len = f.chance(0.1) ? 0 : f.range(1, 6);
  d.head_dim = f.pick<int64_t>({32, 40, 48, 64});
  if (f.chance(0.3)) d.scale = std::uniform_real_distribution<double>(0.05, 1.0)(rng);
  d.causal = f.chance(0.4);
  d.align = f.chance(0.5) ? DiagonalAlign::TopLeft : DiagonalAlign::BottomRight;
  if (f.chance(0.3)) d.window_left = f.range(0, 3);
  if (f.chance(0.3)) d.window_right = f.range(0, 3);
  if (f.chance(0.3)) d.softcap = std::uniform_real_distribution<double>(0.5, 5.0)(rng);
  d.alibi = static_cast<AlibiMode>(f.range(0, 2));
  d.varlen = f.chance(0.3);
  if (d.varlen) {  // totals up to B * max length
    d.total_q = f.range(0, d.batch * d.q_len);
    d.total_kv = f.range(0, d.batch * d.kv_len);
  } else {
    d.has_mask = f.chance(0.4);
  }
  return d;
}
inline std::vector<std::pair<const char*, FlashSdpaDescriptor>> flash_invalid() {
  auto with = [](auto fn) {
    FlashSdpaDescriptor d = flash(DType::F32, 1, 2, 1, 3, 4, 32);
    fn(d);
    return d;
  };
  using D = FlashSdpaDescriptor;
  return {{"head_dim_33", with([](D& d) { d.head_dim = 33; })},
          {"head_dim_24", with([](D& d) { d.head_dim = 24; })},
          {"head_dim_264", with([](D& d) { d.head_dim = 264; })},
          {"window_left_minus2", with([](D& d) { d.window_left = -2; })},
          {"softcap_negative", with([](D& d) { d.softcap = -1; })},
          {"softcap_nan", with([](D& d) { d.softcap = std::numeric_limits<double>::quiet_NaN(); })},
          {"alibi_unknown", with([](D& d) { d.alibi = static_cast<AlibiMode>(9); })},
          {"varlen_with_mask", with([](D& d) { d.varlen = true, d.has_mask = true; })},
          {"total_q_negative", with([](D& d) { d.varlen = true, d.total_q = -1; })},
          {"heads_not_multiple", with([](D& d) { d.heads = 3, d.kv_heads = 2; })},
          {"scale_nan", with([](D& d) { d.scale = std::numeric_limits<double>::quiet_NaN(); })},
          {"int8_dtype", with([](D& d) { d.dtype = DType::I8; })}};
}
inline std::vector<DescMutator<FlashSdpaDescriptor>> flash_mutators() {
  using D = FlashSdpaDescriptor;
  auto v = extent_mutators<D>({&D::batch, &D::heads, &D::kv_heads, &D::q_len, &D::kv_len, &D::head_dim});
  v.push_back({"desc.head_dim_any", [](D& d, Fuzz& f) { d.head_dim = f.chance(0.5) ? f.range(0, 300) : f.any_int(); }});
  v.push_back({"desc.window_any", [](D& d, Fuzz& f) {
                 (f.chance(0.5) ? d.window_left : d.window_right) = f.chance(0.5) ? f.huge() : f.any_int();
               }});
  v.push_back({"desc.softcap_any", [](D& d, Fuzz& f) { d.softcap = f.any_double(); }});
  v.push_back({"desc.scale_any", [](D& d, Fuzz& f) { d.scale = f.any_double(); }});
  v.push_back({"desc.alibi_any", [](D& d, Fuzz& f) { d.alibi = static_cast<AlibiMode>(f.range(0, 255)); }});
  v.push_back({"desc.align_any", [](D& d, Fuzz& f) { d.align = static_cast<DiagonalAlign>(f.range(0, 255)); }});
  v.push_back({"desc.dtype_any", [](D& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  v.push_back({"desc.varlen_totals", [](D& d, Fuzz& f) {
                 d.varlen = true;
                 d.has_mask = false;
                 d.total_q = f.chance(0.5) ? f.any_int() : d.total_q;
                 d.total_kv = f.chance(0.5) ? f.any_int() : d.total_kv;
               }});
  v.push_back({"desc.varlen_extents_wrap", [](D& d, Fuzz& f) {  // [total, H, D] products of 2^64
                 d.varlen = true;
                 d.has_mask = false;
                 const int64_t h = f.range(8, 15);
                 d.heads = d.kv_heads = int64_t{1} << h;
                 d.head_dim = 256;
                 d.total_q = d.total_kv = int64_t{1} << (64 - 8 - h);
               }});
  return v;
}

// Offsets 0 = c[0] <= ... <= c[B] = total with every length <= max_len (any
// garbage after the first B + 1 values).
inline void fill_cu_seqlens(Rng& rng, std::vector<double>& v, int64_t batch, int64_t total, int64_t max_len) {
  Fuzz f(rng);
  int64_t at = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const int64_t b = static_cast<int64_t>(i);
    if (b == 0) {
      v[i] = 0;
    } else if (b <= batch) {
      const int64_t left = total - at, rest = batch - b;
      const int64_t lo = std::max<int64_t>(0, left - rest * max_len), hi = std::min(max_len, left);
      at += lo <= hi ? f.range(lo, hi) : left;
      v[i] = static_cast<double>(at);
    } else {
      v[i] = static_cast<double>(f.range(-5, total + 5));
    }
  }
}

struct FlashShapes {
  Dims q, kv, lse, mask, alibi, cu;
};
inline FlashShapes flash_shapes(const FlashSdpaDescriptor& d) {
  FlashShapes s;
  if (d.varlen) {
    s.q = {d.total_q, d.heads, d.head_dim};
    s.kv = {d.total_kv, d.kv_heads, d.head_dim};
    s.lse = {d.heads, d.total_q};
  } else {
    s.q = {d.batch, d.heads, d.q_len, d.head_dim};
    s.kv = {d.batch, d.kv_heads, d.kv_len, d.head_dim};
    s.lse = {d.batch, d.heads, d.q_len};
  }
  s.cu = {d.batch + 1};
  s.mask = {d.batch, d.heads, d.q_len, d.kv_len};
  s.alibi = d.alibi == AlibiMode::PerBatchHead ? Dims{d.batch, d.heads} : Dims{d.heads};
  return s;
}

// mask, alibi_slopes, cu_seqlens_q, cu_seqlens_kv of a flash plan's Args.
template <class Args>
void flash_extras(const FlashSdpaDescriptor& d, std::vector<Slot<Args>>& v) {
  const FlashShapes s = flash_shapes(d);
  v.push_back(optional_input<Args>(d.has_mask, "mask", DType::F32, s.mask, [](auto& a, const TensorMut& t) { a.mask = t; }));
  v.push_back(optional_input<Args>(d.alibi != AlibiMode::None, "alibi_slopes", DType::F32, s.alibi,
                                   [](auto& a, const TensorMut& t) { a.alibi_slopes = t; }));
  auto cq = optional_input<Args>(d.varlen, "cu_seqlens_q", DType::I32, s.cu,
                                 [](auto& a, const TensorMut& t) { a.cu_seqlens_q = t; });
  auto ck = optional_input<Args>(d.varlen, "cu_seqlens_kv", DType::I32, s.cu,
                                 [](auto& a, const TensorMut& t) { a.cu_seqlens_kv = t; });
  cq.values_checked = ck.values_checked = true;
  cq.values = [d](Rng& rng, std::vector<double>& x) { fill_cu_seqlens(rng, x, d.batch, d.total_q, d.q_len); };
  ck.values = [d](Rng& rng, std::vector<double>& x) { fill_cu_seqlens(rng, x, d.batch, d.total_kv, d.kv_len); };
  v.push_back(cq);
  v.push_back(ck);
}

inline std::vector<FlashSdpaDescriptor> flash_zero_size() {
  FlashSdpaDescriptor vl = flash(DType::F32, 1, 2, 1, 3, 4, 32);
  vl.varlen = true;
  vl.total_q = vl.total_kv = 0;
  return {flash(DType::F32, 0, 2, 1, 3, 4, 32), flash(DType::BF16, 2, 2, 2, 0, 0, 64), vl};
}

}  // namespace attention_contract

// ---------------------------------------------------------------------------
struct SdpaTraits {
  using Plan = baracuda::SdpaPlan;
  using Desc = baracuda::SdpaDescriptor;
  using Args = baracuda::SdpaArgs;
  static constexpr const char* kName = "SdpaPlan";

  static Desc valid_desc(Rng& rng) { return attention_contract::sdpa_valid(rng); }
  static std::vector<Desc> zero_size_descs() {
    using attention_contract::sdpa;
    return {sdpa(DType::F32, 0, 2, 1, 2, 3, 4), sdpa(DType::F64, 2, 2, 2, 0, 3, 4, 5)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return attention_contract::sdpa_invalid(); }
  static std::vector<Desc> workspace_descs() { return {}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const Dims scores{d.batch, d.heads, d.q_len, d.kv_len};
    return {input<Args>("q", d.dtype, {d.batch, d.heads, d.q_len, d.head_dim}, [](auto& a, const TensorMut& t) { a.q = t; }),
            input<Args>("k", d.dtype, {d.batch, d.kv_heads, d.kv_len, d.head_dim}, [](auto& a, const TensorMut& t) { a.k = t; }),
            input<Args>("v", d.dtype, {d.batch, d.kv_heads, d.kv_len, d.head_dim_v}, [](auto& a, const TensorMut& t) { a.v = t; }),
            optional_input<Args>(d.has_mask, "mask", DType::F32, scores, [](auto& a, const TensorMut& t) { a.mask = t; }),
            output<Args>("y", d.dtype, {d.batch, d.heads, d.q_len, d.head_dim_v}, [](auto& a, const TensorMut& t) { a.y = t; }),
            output<Args>("probs", p.probs_dtype(), scores, [](auto& a, const TensorMut& t) { a.probs = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return attention_contract::sdpa_mutators(); }
  static std::string describe(const Desc& d) { return attention_contract::describe(d); }
};

struct SdpaBackwardTraits {
  using Plan = baracuda::SdpaBackwardPlan;
  using Desc = baracuda::SdpaDescriptor;
  using Args = baracuda::SdpaBackwardArgs;
  static constexpr const char* kName = "SdpaBackwardPlan";

  static Desc valid_desc(Rng& rng) { return attention_contract::sdpa_valid(rng); }
  static std::vector<Desc> zero_size_descs() {
    using attention_contract::sdpa;
    return {sdpa(DType::F32, 0, 2, 1, 2, 3, 4), sdpa(DType::BF16, 1, 2, 2, 0, 0, 4, 6)};
  }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return attention_contract::sdpa_invalid(); }
  static std::vector<Desc> workspace_descs() { return {attention_contract::sdpa(DType::F32, 2, 4, 2, 33, 65, 16)}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const Dims qs{d.batch, d.heads, d.q_len, d.head_dim}, ks{d.batch, d.kv_heads, d.kv_len, d.head_dim},
        vs{d.batch, d.kv_heads, d.kv_len, d.head_dim_v}, ys{d.batch, d.heads, d.q_len, d.head_dim_v},
        scores{d.batch, d.heads, d.q_len, d.kv_len};
    return {input<Args>("dy", d.dtype, ys, [](auto& a, const TensorMut& t) { a.dy = t; }),
            input<Args>("q", d.dtype, qs, [](auto& a, const TensorMut& t) { a.q = t; }),
            input<Args>("k", d.dtype, ks, [](auto& a, const TensorMut& t) { a.k = t; }),
            input<Args>("v", d.dtype, vs, [](auto& a, const TensorMut& t) { a.v = t; }),
            input<Args>("probs", p.probs_dtype(), scores, [](auto& a, const TensorMut& t) { a.probs = t; }),
            output<Args>("dq", d.dtype, qs, [](auto& a, const TensorMut& t) { a.dq = t; }),
            output<Args>("dk", d.dtype, ks, [](auto& a, const TensorMut& t) { a.dk = t; }),
            output<Args>("dv", d.dtype, vs, [](auto& a, const TensorMut& t) { a.dv = t; })};
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return attention_contract::sdpa_mutators(); }
  static std::string describe(const Desc& d) { return attention_contract::describe(d); }
};

struct FlashSdpaTraits {
  using Plan = baracuda::FlashSdpaPlan;
  using Desc = baracuda::FlashSdpaDescriptor;
  using Args = baracuda::FlashSdpaArgs;
  static constexpr const char* kName = "FlashSdpaPlan";

  static Desc valid_desc(Rng& rng) {  // a quarter of them inference-only (no lse)
    Desc d = attention_contract::flash_valid(rng);
    d.save_lse = !Fuzz(rng).chance(0.25);
    return d;
  }
  static std::vector<Desc> zero_size_descs() { return attention_contract::flash_zero_size(); }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return attention_contract::flash_invalid(); }
  static std::vector<Desc> workspace_descs() {  // decode-shaped: the split-KV path
    return {attention_contract::flash(DType::BF16, 1, 8, 2, 1, 8192, 128)};
  }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const auto s = attention_contract::flash_shapes(d);
    std::vector<Slot<Args>> v = {input<Args>("q", d.dtype, s.q, [](auto& a, const TensorMut& t) { a.q = t; }),
                                 input<Args>("k", d.dtype, s.kv, [](auto& a, const TensorMut& t) { a.k = t; }),
                                 input<Args>("v", d.dtype, s.kv, [](auto& a, const TensorMut& t) { a.v = t; })};
    attention_contract::flash_extras(d, v);
    v.push_back(output<Args>("y", d.dtype, s.q, [](auto& a, const TensorMut& t) { a.y = t; }));
    auto lse = output<Args>("lse", DType::F32, s.lse, [](auto& a, const TensorMut& t) { a.lse = t; });
    lse.optional = true;  // written when save_lse
    if (!d.save_lse) lse.role = Role::Unused;
    v.push_back(lse);
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return attention_contract::flash_mutators(); }
  static std::string describe(const Desc& d) { return attention_contract::describe(d); }
};

struct FlashSdpaBackwardTraits {
  using Plan = baracuda::FlashSdpaBackwardPlan;
  using Desc = baracuda::FlashSdpaDescriptor;
  using Args = baracuda::FlashSdpaBackwardArgs;
  static constexpr const char* kName = "FlashSdpaBackwardPlan";

  static Desc valid_desc(Rng& rng) { return attention_contract::flash_valid(rng); }
  static std::vector<Desc> zero_size_descs() { return attention_contract::flash_zero_size(); }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() {
    auto v = attention_contract::flash_invalid();
    Desc no_lse = attention_contract::flash(DType::F32, 1, 2, 1, 3, 4, 32);
    no_lse.save_lse = false;  // the backward reads the forward's lse
    v.push_back({"save_lse_false", no_lse});
    return v;
  }
  static std::vector<Desc> workspace_descs() { return {attention_contract::flash(DType::F16, 2, 4, 2, 64, 128, 64)}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    const Desc& d = p.descriptor();
    const auto s = attention_contract::flash_shapes(d);
    std::vector<Slot<Args>> v = {input<Args>("dy", d.dtype, s.q, [](auto& a, const TensorMut& t) { a.dy = t; }),
                                 input<Args>("q", d.dtype, s.q, [](auto& a, const TensorMut& t) { a.q = t; }),
                                 input<Args>("k", d.dtype, s.kv, [](auto& a, const TensorMut& t) { a.k = t; }),
                                 input<Args>("v", d.dtype, s.kv, [](auto& a, const TensorMut& t) { a.v = t; }),
                                 input<Args>("y", d.dtype, s.q, [](auto& a, const TensorMut& t) { a.y = t; }),
                                 input<Args>("lse", DType::F32, s.lse, [](auto& a, const TensorMut& t) { a.lse = t; })};
    attention_contract::flash_extras(d, v);
    v.push_back(output<Args>("dq", d.dtype, s.q, [](auto& a, const TensorMut& t) { a.dq = t; }));
    v.push_back(output<Args>("dk", d.dtype, s.kv, [](auto& a, const TensorMut& t) { a.dk = t; }));
    v.push_back(output<Args>("dv", d.dtype, s.kv, [](auto& a, const TensorMut& t) { a.dv = t; }));
    return v;
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return attention_contract::flash_mutators(); }
  static std::string describe(const Desc& d) { return attention_contract::describe(d); }
};


}  // namespace contract
