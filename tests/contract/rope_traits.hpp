// Contract traits of the RoPE family: RopePlan, RopeBackwardPlan. A new RoPE
// plan joins with a traits struct here and one INSTANTIATE line per suite in
// tests/contract/cpu_rope.cpp and cuda_rope.cpp.
#pragma once

#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/ops/rope.hpp"
#include "contract/fuzz.hpp"
#include "contract/harness.hpp"

namespace contract {
namespace rope_contract {

using baracuda::RopeDescriptor;
using baracuda::RopePairs;
using baracuda::RopePositions;

inline constexpr DType kFp[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

inline RopeDescriptor make(DType t, int64_t b, int64_t h, int64_t hk, int64_t s, int64_t d) {
  RopeDescriptor r;
  r.dtype = t;
  r.batch = b;
  r.heads = h;
  r.kv_heads = hk;
  r.seq_len = s;
  r.head_dim = d;
  return r;
}

inline RopeDescriptor valid(Rng& rng) {
  Fuzz f(rng);
  RopeDescriptor d = make(kFp[f.range(0, 3)], f.range(1, 2), f.range(1, 3), f.range(1, 3), f.range(1, 5), 2 * f.range(1, 6));
  if (f.chance(0.5)) d.rotary_dim = 2 * f.range(1, d.head_dim / 2);
  d.has_k = f.chance(0.7);
  d.pairs = f.chance(0.5) ? RopePairs::Interleaved : RopePairs::HalfSplit;
  if (f.chance(0.5)) d.theta = std::uniform_real_distribution<double>(2.0, 1e5)(rng);
  d.positions = static_cast<RopePositions>(f.range(0, 2));
  d.position_dtype = f.chance(0.5) ? DType::I32 : DType::I64;
  d.use_cache = f.chance(0.4);
  if (d.use_cache) d.cache_len = f.range(1, 8);
  return d;
}

inline std::string describe(const RopeDescriptor& d) {
  std::ostringstream os;
  os << "RopeDescriptor{dtype " << baracuda::dtype_name(d.dtype) << ", B " << d.batch << ", H " << d.heads << ", Hk "
     << d.kv_heads << ", S " << d.seq_len << ", D " << d.head_dim << ", R " << d.rotary_dim << ", has_k " << d.has_k
     << ", pairs " << static_cast<int>(d.pairs) << ", theta " << d.theta << ", positions "
     << static_cast<int>(d.positions) << " (" << baracuda::dtype_name(d.position_dtype) << "), use_cache "
     << d.use_cache << ", cache_len " << d.cache_len << "}";
  return os.str();
}

inline std::vector<std::pair<const char*, RopeDescriptor>> invalid() {
  auto with = [](auto fn) {
    RopeDescriptor d = make(DType::F32, 2, 2, 1, 3, 8);
    fn(d);
    return d;
  };
  using D = RopeDescriptor;
  return {{"rotary_odd", with([](D& d) { d.rotary_dim = 3; })},
          {"rotary_above_head_dim", with([](D& d) { d.rotary_dim = 10; })},
          {"rotary_minus2", with([](D& d) { d.rotary_dim = -2; })},
          {"theta_zero", with([](D& d) { d.theta = 0; })},
          {"theta_nan", with([](D& d) { d.theta = std::numeric_limits<double>::quiet_NaN(); })},
          {"position_dtype_f32", with([](D& d) { d.positions = RopePositions::PerSequence, d.position_dtype = DType::F32; })},
          {"cache_len_zero", with([](D& d) { d.use_cache = true, d.cache_len = 0; })},
          {"heads_negative", with([](D& d) { d.heads = -1; })},
          {"integer_dtype", with([](D& d) { d.dtype = DType::I32; })},
          {"pairs_unknown", with([](D& d) { d.pairs = static_cast<RopePairs>(7); })},
          {"positions_unknown", with([](D& d) { d.positions = static_cast<RopePositions>(9); })},
          {"too_many_elements", with([](D& d) { d.batch = int64_t{1} << 40, d.seq_len = int64_t{1} << 30; })}};
}

inline std::vector<DescMutator<RopeDescriptor>> mutators() {
  using D = RopeDescriptor;
  auto v = extent_mutators<D>({&D::batch, &D::heads, &D::kv_heads, &D::seq_len, &D::head_dim, &D::rotary_dim, &D::cache_len});
  v.push_back({"desc.rotary_any", [](D& d, Fuzz& f) { d.rotary_dim = f.chance(0.5) ? f.range(-3, 20) : f.any_int(); }});
  v.push_back({"desc.theta_any", [](D& d, Fuzz& f) { d.theta = f.any_double(); }});
  v.push_back({"desc.cache_huge", [](D& d, Fuzz& f) {  // [P, R/2] past 2^63 while q and k stay small
                 d.use_cache = true;
                 d.cache_len = f.chance(0.5) ? f.huge() : (int64_t{1} << 62);
               }});
  v.push_back({"desc.position_dtype_any", [](D& d, Fuzz& f) {
                 d.positions = RopePositions::PerBatch;
                 d.position_dtype = f.any_dtype();
               }});
  v.push_back({"desc.enums_any", [](D& d, Fuzz& f) {
                 if (f.chance(0.5)) d.pairs = static_cast<RopePairs>(f.range(0, 255));
                 else d.positions = static_cast<RopePositions>(f.range(0, 255));
               }});
  v.push_back({"desc.dtype_any", [](D& d, Fuzz& f) { d.dtype = f.any_dtype(); }});
  return v;
}

// Positions: mostly in [-3, 2S + 3]; now and then far outside.
inline void fill_positions(Rng& rng, DType t, int64_t seq_len, std::vector<double>& v) {
  Fuzz f(rng);
  for (double& x : v) {
    if (f.chance(0.9)) x = static_cast<double>(f.range(-3, 2 * seq_len + 3));
    else if (t == DType::I64) x = static_cast<double>(f.pick<int64_t>({-(int64_t{1} << 62), int64_t{1} << 62, -(int64_t{1} << 40), int64_t{1} << 40}));
    else x = static_cast<double>(f.pick<int64_t>({INT32_MIN, INT32_MAX, -100000, 100000}));
  }
}

// Slots of both plans; `names` = {x_q, x_k, y_q, y_k}.
template <class Plan, class Args>
std::vector<Slot<Args>> slots(const Plan& p, const char* const (&names)[4], void (*bx0)(Args&, const TensorMut&),
                              void (*bx1)(Args&, const TensorMut&), void (*by0)(Args&, const TensorMut&),
                              void (*by1)(Args&, const TensorMut&)) {
  const RopeDescriptor& d = p.descriptor();
  const Dims ks = d.has_k ? p.k_shape() : Dims{d.batch, 1, d.seq_len, d.head_dim};  // plausible when unused
  std::vector<Slot<Args>> v;
  v.push_back(input<Args>(names[0], d.dtype, p.q_shape(), bx0));
  v.push_back(optional_input<Args>(d.has_k, names[1], d.dtype, ks, bx1));
  auto pos = optional_input<Args>(d.positions != RopePositions::None, "positions",
                                  d.positions == RopePositions::None ? DType::I32 : d.position_dtype,
                                  d.positions == RopePositions::None ? Dims{d.seq_len} : p.positions_shape(),
                                  [](Args& a, const TensorMut& t) { a.positions = t; });
  const DType pt = pos.dtype;
  const int64_t s = d.seq_len;
  pos.values = [pt, s](Rng& rng, std::vector<double>& x) { fill_positions(rng, pt, s, x); };
  v.push_back(pos);
  v.push_back(optional_input<Args>(d.use_cache, "cos", p.cache_dtype(), Dims{std::max<int64_t>(d.cache_len, 1), d.rotary_dim / 2},
                                   [](Args& a, const TensorMut& t) { a.cos = t; }));
  v.push_back(optional_input<Args>(d.use_cache, "sin", p.cache_dtype(), Dims{std::max<int64_t>(d.cache_len, 1), d.rotary_dim / 2},
                                   [](Args& a, const TensorMut& t) { a.sin = t; }));
  v.push_back(output<Args>(names[2], d.dtype, p.q_shape(), by0, names[0]));
  auto ko = output<Args>(names[3], d.dtype, ks, by1, names[1]);
  if (!d.has_k) {
    ko.role = Role::Unused;
    ko.optional = true;
  }
  v.push_back(ko);
  return v;
}

}  // namespace rope_contract

// ---------------------------------------------------------------------------
struct RopeTraits {
  using Plan = baracuda::RopePlan;
  using Desc = baracuda::RopeDescriptor;
  using Args = baracuda::RopeArgs;
  static constexpr const char* kName = "RopePlan";

  static Desc valid_desc(Rng& rng) { return rope_contract::valid(rng); }
  static std::vector<Desc> zero_size_descs() { return zero_size(); }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return rope_contract::invalid(); }
  static std::vector<Desc> workspace_descs() { return {}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    static constexpr const char* names[4] = {"q", "k", "q_out", "k_out"};
    return rope_contract::slots<Plan, Args>(
        p, names, [](Args& a, const TensorMut& t) { a.q = t; }, [](Args& a, const TensorMut& t) { a.k = t; },
        [](Args& a, const TensorMut& t) { a.q_out = t; }, [](Args& a, const TensorMut& t) { a.k_out = t; });
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return rope_contract::mutators(); }
  static std::string describe(const Desc& d) { return rope_contract::describe(d); }

  static std::vector<Desc> zero_size() {  // shared with RopeBackwardTraits
    using rope_contract::make;
    Desc pos = make(DType::F32, 2, 2, 1, 0, 8);
    pos.positions = baracuda::RopePositions::PerBatch;
    pos.use_cache = true;
    pos.cache_len = 4;
    Desc noheads = make(DType::BF16, 2, 0, 1, 3, 4);
    noheads.has_k = false;
    return {pos, make(DType::F64, 0, 2, 2, 3, 6), noheads};
  }
};

struct RopeBackwardTraits {
  using Plan = baracuda::RopeBackwardPlan;
  using Desc = baracuda::RopeDescriptor;
  using Args = baracuda::RopeBackwardArgs;
  static constexpr const char* kName = "RopeBackwardPlan";

  static Desc valid_desc(Rng& rng) { return rope_contract::valid(rng); }
  static std::vector<Desc> zero_size_descs() { return RopeTraits::zero_size(); }
  static std::vector<std::pair<const char*, Desc>> invalid_descs() { return rope_contract::invalid(); }
  static std::vector<Desc> workspace_descs() { return {}; }
  static std::vector<Slot<Args>> slots(const Plan& p) {
    static constexpr const char* names[4] = {"dy_q", "dy_k", "dq", "dk"};
    return rope_contract::slots<Plan, Args>(
        p, names, [](Args& a, const TensorMut& t) { a.dy_q = t; }, [](Args& a, const TensorMut& t) { a.dy_k = t; },
        [](Args& a, const TensorMut& t) { a.dq = t; }, [](Args& a, const TensorMut& t) { a.dk = t; });
  }
  static std::vector<DescMutator<Desc>> desc_mutators() { return rope_contract::mutators(); }
  static std::string describe(const Desc& d) { return rope_contract::describe(d); }
};

}  // namespace contract
