// RopePlan / RopeBackwardPlan on the CPU reference:
//   * values against hand computation (literal cases) and against a naive
//     model of the documented formula, for both pair styles, partial rotary,
//     every position source (none, i32/i64 [S] and [B,S], cos/sin cache with
//     clamping), every dtype, Hk != H, strided / permuted / in-place views
//     (including q and k rotated in place inside one fused qkv buffer);
//   * backward against central finite differences of the forward in f64, and
//     backward(forward(x)) == x;
//   * every validation rule: its StatusCode and message (naming the plan);
//   * the SKU each CPU plan reports.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();

int64_t rdim(const RopeDescriptor& d) { return d.rotary_dim == -1 ? d.head_dim : d.rotary_dim; }
Dims qshape(const RopeDescriptor& d) { return {d.batch, d.heads, d.seq_len, d.head_dim}; }
Dims kshape(const RopeDescriptor& d) { return {d.batch, d.kv_heads, d.seq_len, d.head_dim}; }
Dims pshape(const RopeDescriptor& d) {
  if (d.positions == RopePositions::PerSequence) return {d.seq_len};
  if (d.positions == RopePositions::PerBatch) return {d.batch, d.seq_len};
  return {};
}
DType cache_dtype(const RopeDescriptor& d) { return d.dtype == DType::F64 ? DType::F64 : DType::F32; }

RopeDescriptor make_desc(DType t, int64_t B, int64_t H, int64_t Hk, int64_t S, int64_t D, int64_t R = -1,
                         RopePairs pairs = RopePairs::HalfSplit) {
  RopeDescriptor d;
  d.dtype = t;
  d.batch = B;
  d.heads = H;
  d.kv_heads = Hk;
  d.seq_len = S;
  d.head_dim = D;
  d.rotary_dim = R;
  d.pairs = pairs;
  return d;
}

// Naive model of the documented semantics, in double: x is one tensor's
// logical values ([B, heads, S, D] row-major).
std::vector<double> model(const RopeDescriptor& d, bool backward, const std::vector<double>& x, int64_t heads,
                          const std::vector<int64_t>& pos, const std::vector<double>& cos_t,
                          const std::vector<double>& sin_t) {
  const int64_t B = d.batch, S = d.seq_len, D = d.head_dim, R = rdim(d), half = R / 2;
  std::vector<double> y = x;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t s = 0; s < S; ++s) {
        int64_t p = s;
        if (d.positions == RopePositions::PerSequence) p = pos[static_cast<size_t>(s)];
        if (d.positions == RopePositions::PerBatch) p = pos[static_cast<size_t>(b * S + s)];
        const size_t row = static_cast<size_t>(((b * heads + h) * S + s) * D);
        for (int64_t i = 0; i < half; ++i) {
          double c, sn;
          if (d.use_cache) {
            const int64_t r = std::min(std::max<int64_t>(p, 0), d.cache_len - 1);
            c = cos_t[static_cast<size_t>(r * half + i)];
            sn = sin_t[static_cast<size_t>(r * half + i)];
          } else {
            const double ang = static_cast<double>(p) * std::pow(d.theta, -2.0 * static_cast<double>(i) / static_cast<double>(R));
            c = std::cos(ang);
            sn = std::sin(ang);
          }
          if (backward) sn = -sn;
          const size_t ia = row + static_cast<size_t>(d.pairs == RopePairs::Interleaved ? 2 * i : i);
          const size_t ib = row + static_cast<size_t>(d.pairs == RopePairs::Interleaved ? 2 * i + 1 : i + half);
          y[ia] = x[ia] * c - x[ib] * sn;
          y[ib] = x[ia] * sn + x[ib] * c;
        }
      }
  return y;
}

// One CPU run: logical inputs are stored (rounded to the dtype) in the given
// layouts; outputs are poisoned buffers of their layouts (or the inputs
// themselves when in_place); gaps must keep their poison.
struct RopeCase {
  RopeDescriptor d;
  bool backward = false;
  std::optional<bt::Layout> lq, lk, lqo, lko;
  std::vector<double> q, k;
  std::vector<int64_t> pos;
  std::vector<double> cos, sin;
  bool in_place = false;
};
struct RopeOut {
  Status st;
  std::vector<double> q_in, k_in;  // inputs as stored (rounded)
  std::vector<double> q, k;        // outputs
  std::vector<double> cos, sin;    // cache as stored
  KernelSku sku;
};

RopeOut run_cpu(const RopeCase& c) {
  RopeOut r;
  const RopeDescriptor& d = c.d;
  const bt::Layout lq = c.lq.value_or(bt::contiguous(qshape(d)));
  const bt::Layout lk = c.lk.value_or(bt::contiguous(kshape(d)));
  const bt::Layout lqo = c.in_place ? lq : c.lqo.value_or(bt::contiguous(qshape(d)));
  const bt::Layout lko = c.in_place ? lk : c.lko.value_or(bt::contiguous(kshape(d)));
  bt::HostBuffer qb(d.dtype, lq.storage), kb(d.dtype, lk.storage);
  qb.poison();
  kb.poison();
  bt::scatter(qb, lq, c.q);
  if (d.has_k) bt::scatter(kb, lk, c.k);
  r.q_in = bt::gather(qb, lq);
  if (d.has_k) r.k_in = bt::gather(kb, lk);
  bt::HostBuffer qob(d.dtype, lqo.storage), kob(d.dtype, lko.storage);
  qob.poison();
  kob.poison();
  bt::HostBuffer pb = bt::host_from_i64(d.position_dtype, c.pos);
  const DType ct = cache_dtype(d);
  bt::HostBuffer cb = bt::host_from(ct, c.cos), sb = bt::host_from(ct, c.sin);
  r.cos = bt::all_values(cb);
  r.sin = bt::all_values(sb);

  const TensorRef qv = bt::view(qb, lq), kv = d.has_k ? bt::view(kb, lk) : TensorRef();
  const TensorMut qov = c.in_place ? bt::view_mut(qb, lq) : bt::view_mut(qob, lqo);
  const TensorMut kov = !d.has_k ? TensorMut() : c.in_place ? bt::view_mut(kb, lk) : bt::view_mut(kob, lko);
  const TensorRef pv = d.positions == RopePositions::None ? TensorRef() : bt::view(pb, bt::contiguous(pshape(d)));
  const Dims cs{d.cache_len, rdim(d) / 2};
  const TensorRef cv = d.use_cache ? bt::view(cb, bt::contiguous(cs)) : TensorRef();
  const TensorRef sv = d.use_cache ? bt::view(sb, bt::contiguous(cs)) : TensorRef();
  if (c.backward) {
    auto plan = RopeBackwardPlan::select(kCpu, d);
    if (!plan) {
      r.st = plan.status();
      return r;
    }
    r.sku = plan->sku();
    r.st = plan->run(kCpu, Workspace::none(), RopeBackwardArgs{qv, kv, pv, cv, sv, qov, kov});
  } else {
    auto plan = RopePlan::select(kCpu, d);
    if (!plan) {
      r.st = plan.status();
      return r;
    }
    r.sku = plan->sku();
    r.st = plan->run(kCpu, Workspace::none(), RopeArgs{qv, kv, pv, cv, sv, qov, kov});
  }
  if (!r.st) return r;
  const bt::HostBuffer& qo = c.in_place ? qb : qob;
  const bt::HostBuffer& ko = c.in_place ? kb : kob;
  if (!c.in_place) {
    EXPECT_EQ(bt::check_gaps(qob, lqo, bt::poison_byte(d.dtype)), "");
    if (d.has_k) {
      EXPECT_EQ(bt::check_gaps(kob, lko, bt::poison_byte(d.dtype)), "");
    }
  }
  r.q = bt::gather(qo, lqo);
  if (d.has_k) r.k = bt::gather(ko, lko);
  return r;
}

// Fills the case's inputs at random (positions in [0, max_pos], the cache
// with cos/sin of random angles).
void fill_case(RopeCase& c, bt::Rng& rng, int64_t max_pos = 60) {
  const RopeDescriptor& d = c.d;
  c.q = bt::random_values(d.dtype, bt::numel(qshape(d)), rng);
  if (d.has_k) c.k = bt::random_values(d.dtype, bt::numel(kshape(d)), rng);
  if (d.positions != RopePositions::None) {
    c.pos.resize(static_cast<size_t>(bt::numel(pshape(d))));
    for (auto& p : c.pos) p = bt::uniform_int(rng, 0, max_pos);
  }
  if (d.use_cache) {
    const int64_t n = d.cache_len * (rdim(d) / 2);
    c.cos.resize(static_cast<size_t>(n));
    c.sin.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) {
      const double a = bt::uniform(rng, -3.14, 3.14);
      c.cos[static_cast<size_t>(i)] = std::cos(a);
      c.sin[static_cast<size_t>(i)] = std::sin(a);
    }
  }
}

// Runs the case and compares both outputs with the model (relative to ||ref||).
void expect_model(const RopeCase& c, double tol, const std::string& what) {
  SCOPED_TRACE(what);
  const RopeOut r = run_cpu(c);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  RopeDescriptor d = c.d;
  const auto ref_q = model(d, c.backward, r.q_in, d.heads, c.pos, r.cos, r.sin);
  EXPECT_LE(bt::rel_error(r.q, ref_q), tol) << bt::describe_mismatch(r.q, ref_q);
  if (d.has_k) {
    const auto ref_k = model(d, c.backward, r.k_in, d.kv_heads, c.pos, r.cos, r.sin);
    EXPECT_LE(bt::rel_error(r.k, ref_k), tol) << bt::describe_mismatch(r.k, ref_k);
  }
}

}  // namespace

// ---------------------------------------------------------------------------
// Values
// ---------------------------------------------------------------------------
TEST(RopeValues, HandComputedInterleavedAndHalfSplit) {
  // One row of D = 6, R = 4 at position s = 2, theta = 100:
  // inv_freq = {1, 100^(-1/2) = 0.1}, angles {2, 0.2}; dims 4, 5 pass through.
  const std::vector<double> x = {1, 2, 3, 4, 5, 6};
  const double c0 = std::cos(2.0), s0 = std::sin(2.0), c1 = std::cos(0.2), s1 = std::sin(0.2);
  for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit}) {
    RopeCase c;
    c.d = make_desc(DType::F64, 1, 1, 1, 3, 6, 4, pairs);
    c.d.has_k = false;
    c.d.theta = 100;
    c.q.assign(18, 0.0);
    for (int j = 0; j < 6; ++j) c.q[12 + j] = x[j];  // s = 2
    for (int j = 0; j < 6; ++j) c.q[6 + j] = x[j];   // s = 1
    const RopeOut r = run_cpu(c);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    std::vector<double> e;
    if (pairs == RopePairs::Interleaved)  // pairs (0,1) and (2,3)
      e = {1 * c0 - 2 * s0, 1 * s0 + 2 * c0, 3 * c1 - 4 * s1, 3 * s1 + 4 * c1, 5, 6};
    else  // pairs (0,2) and (1,3)
      e = {1 * c0 - 3 * s0, 2 * c1 - 4 * s1, 1 * s0 + 3 * c0, 2 * s1 + 4 * c1, 5, 6};
    for (int j = 0; j < 6; ++j) EXPECT_NEAR(r.q[12 + j], e[j], 1e-15) << rope_pairs_name(pairs) << " dim " << j;
    // Position 1: angles {1, 0.1}; first pair only, spot check.
    if (pairs == RopePairs::Interleaved) EXPECT_NEAR(r.q[6], std::cos(1.0) - 2 * std::sin(1.0), 1e-15);
    else EXPECT_NEAR(r.q[6], std::cos(1.0) - 3 * std::sin(1.0), 1e-15);
    // Position 0 is the identity, bit for bit (rows of zeros stay zero).
    for (int j = 0; j < 6; ++j) EXPECT_EQ(r.q[j], 0.0);
  }
}

TEST(RopeValues, PositionZeroIsIdentityAndQuarterTurnCache) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    bt::Rng rng(bt::fresh_seed());
    // positions all 0 -> identity, exactly
    RopeCase c;
    c.d = make_desc(t, 2, 2, 1, 3, 8, -1, RopePairs::Interleaved);
    c.d.positions = RopePositions::PerBatch;
    c.d.position_dtype = DType::I64;
    fill_case(c, rng);
    std::fill(c.pos.begin(), c.pos.end(), 0);
    RopeOut r = run_cpu(c);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.q, r.q_in);
    EXPECT_EQ(r.k, r.k_in);
    // A cache of cos = 0, sin = 1 maps (a, b) to (-b, a) exactly.
    RopeCase q = c;
    q.d.use_cache = true;
    q.d.cache_len = 1;
    q.cos.assign(4, 0.0);
    q.sin.assign(4, 1.0);
    for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit}) {
      q.d.pairs = pairs;
      r = run_cpu(q);
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      for (size_t row = 0; row < r.q.size(); row += 8)
        for (size_t i = 0; i < 4; ++i) {
          const size_t a = row + (pairs == RopePairs::Interleaved ? 2 * i : i);
          const size_t b = row + (pairs == RopePairs::Interleaved ? 2 * i + 1 : i + 4);
          EXPECT_EQ(r.q[a], -r.q_in[b]);
          EXPECT_EQ(r.q[b], r.q_in[a]);
        }
    }
  }
}

TEST(RopeValues, EveryPositionSourceAndPairStyleMatchesTheModel) {
  for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit})
    for (RopePositions ps : {RopePositions::None, RopePositions::PerSequence, RopePositions::PerBatch})
      for (DType pt : {DType::I32, DType::I64})
        for (bool cache : {false, true})
          for (int64_t R : {int64_t{-1}, int64_t{6}}) {
            if (ps == RopePositions::None && pt == DType::I64) continue;
            bt::Rng rng(bt::fresh_seed());
            RopeCase c;
            c.d = make_desc(DType::F64, 2, 3, 2, 5, 10, R, pairs);
            c.d.positions = ps;
            c.d.position_dtype = pt;
            c.d.use_cache = cache;
            c.d.cache_len = 40;
            c.d.theta = 500.0;
            fill_case(c, rng, 50);  // some positions beyond the cache: clamped
            expect_model(c, 1e-15, std::string(rope_pairs_name(pairs)) + " " + rope_positions_name(ps) + " " +
                                       std::string(dtype_name(pt)) + (cache ? " cache" : "") + " R=" + std::to_string(R));
          }
}

TEST(RopeValues, CachePositionsAreClamped) {
  RopeCase c;
  c.d = make_desc(DType::F64, 1, 1, 1, 4, 2, -1, RopePairs::Interleaved);
  c.d.has_k = false;
  c.d.positions = RopePositions::PerSequence;
  c.d.position_dtype = DType::I64;
  c.d.use_cache = true;
  c.d.cache_len = 3;
  c.pos = {-5, 0, 2, 1000};
  c.cos = {0.0, 1.0, -1.0};  // rows 0, 1, 2
  c.sin = {1.0, 0.0, 0.0};
  c.q = {1, 2, 1, 2, 1, 2, 1, 2};
  const RopeOut r = run_cpu(c);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  // -5 -> row 0 (quarter turn), 0 -> row 0, 2 -> row 2 (half turn), 1000 -> row 2.
  EXPECT_EQ(r.q, (std::vector<double>{-2, 1, -2, 1, -1, -2, -1, -2}));
}

TEST(RopeValues, EveryDtypeWithinTolerance) {
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit})
      for (bool cache : {false, true}) {
        bt::Rng rng(bt::fresh_seed());
        RopeCase c;
        c.d = make_desc(t, 2, 4, 2, 9, 16, 12, pairs);
        c.d.positions = RopePositions::PerBatch;
        c.d.use_cache = cache;
        c.d.cache_len = 3000;
        fill_case(c, rng, 2999);
        // The reference rounds once from double: half an ulp of the dtype.
        expect_model(c, bt::ulp_rel(t), std::string(dtype_name(t)) + " " + rope_pairs_name(pairs) + (cache ? " cache" : ""));
      }
}

TEST(RopeValues, StridedPermutedAndInPlaceViewsMatchContiguous) {
  for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit}) {
    bt::Rng rng(bt::fresh_seed());
    RopeCase base;
    base.d = make_desc(DType::F32, 2, 3, 2, 4, 8, 6, pairs);
    base.d.positions = RopePositions::PerSequence;
    fill_case(base, rng);
    const RopeOut ref = run_cpu(base);
    ASSERT_TRUE(ref.st.is_ok()) << ref.st.to_string();
    const Dims qs = qshape(base.d), ks = kshape(base.d);
    // [B, S, H, D] storage passed as a permuted [B, H, S, D] view, padded and
    // every-other outputs, and in place.
    RopeCase c = base;
    c.lq = bt::permuted(qs, {0, 2, 1, 3});
    c.lk = bt::permuted(ks, {0, 2, 1, 3});
    c.lqo = bt::padded(qs);
    c.lko = bt::every_other(ks);
    RopeOut r = run_cpu(c);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.q, ref.q);
    EXPECT_EQ(r.k, ref.k);
    c = base;
    c.lq = bt::transposed(qs);
    c.lk = bt::padded(ks);
    c.in_place = true;
    r = run_cpu(c);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.q, ref.q);
    EXPECT_EQ(r.k, ref.k);
  }
}

// q and k rotated in place inside one fused [B, S, 3, H, D] qkv buffer: the
// views interleave in memory but never share an element, so the exact
// overlap check accepts them; v is untouched.
TEST(RopeValues, FusedQkvInPlace) {
  const int64_t B = 2, S = 5, H = 3, D = 8;
  RopeDescriptor d = make_desc(DType::F32, B, H, H, S, D, -1, RopePairs::HalfSplit);
  bt::Rng rng(bt::fresh_seed());
  const int64_t n = B * S * 3 * H * D;
  bt::HostBuffer qkv = bt::host_from(DType::F32, bt::random_values(DType::F32, n, rng));
  const std::vector<double> before = bt::all_values(qkv);
  const Dims shape{B, H, S, D}, strides{S * 3 * H * D, D, 3 * H * D, 1};
  auto* base = static_cast<float*>(qkv.data());
  TensorMut q(base, DType::F32, Device::cpu(), shape, strides, n);
  TensorMut k(base + H * D, DType::F32, Device::cpu(), shape, strides, n - H * D);
  auto plan = RopePlan::select(kCpu, d).value();
  ASSERT_TRUE(plan.run(kCpu, Workspace::none(), RopeArgs{q, k, {}, {}, {}, q, k}).is_ok());
  // Compare against the model applied to the gathered q / k.
  bt::Layout L;
  L.shape = shape;
  L.strides = strides;
  L.storage = n;
  bt::HostBuffer orig = bt::host_from(DType::F32, before);
  const auto q_in = bt::gather(orig, L);
  L.offset = H * D;
  const auto k_in = bt::gather(orig, L);
  const auto k_out = bt::gather(qkv, L);
  L.offset = 0;
  const auto q_out = bt::gather(qkv, L);
  EXPECT_LE(bt::rel_error(q_out, model(d, false, q_in, H, {}, {}, {})), 1.2e-7);
  EXPECT_LE(bt::rel_error(k_out, model(d, false, k_in, H, {}, {}, {})), 1.2e-7);
  L.offset = 2 * H * D;  // v
  EXPECT_EQ(bt::gather(qkv, L), bt::gather(orig, L));
}

TEST(RopeValues, ZeroSizeProblemsRunAndWriteNothing) {
  for (int which = 0; which < 4; ++which) {
    RopeDescriptor d = make_desc(DType::F32, which == 0 ? 0 : 2, which == 1 ? 0 : 2, which == 2 ? 0 : 1,
                                 which == 3 ? 0 : 3, 4);
    d.positions = RopePositions::PerBatch;
    auto plan = RopePlan::select(kCpu, d);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    std::vector<float> q(static_cast<size_t>(bt::numel(qshape(d))) + 1, 7.f), k(static_cast<size_t>(bt::numel(kshape(d))) + 1, 7.f);
    std::vector<int32_t> pos(static_cast<size_t>(d.batch * d.seq_len) + 1, 1);
    std::vector<float> qo(q.size(), -1.f), ko(k.size(), -1.f);
    RopeArgs a{TensorRef::contiguous(q.data(), DType::F32, Device::cpu(), qshape(d)),
               TensorRef::contiguous(k.data(), DType::F32, Device::cpu(), kshape(d)),
               TensorRef::contiguous(pos.data(), DType::I32, Device::cpu(), pshape(d)),
               {},
               {},
               TensorMut::contiguous(qo.data(), DType::F32, Device::cpu(), qshape(d)),
               TensorMut::contiguous(ko.data(), DType::F32, Device::cpu(), kshape(d))};
    EXPECT_TRUE(plan->run(kCpu, Workspace::none(), a).is_ok()) << which;
    if (which != 2) {
      EXPECT_EQ(qo.back(), -1.f);
    }
    if (which == 1) {  // H = 0: k still rotated
      EXPECT_NE(ko[0], -1.f);
    }
  }
  // Null pointers are fine for empty tensors.
  RopeDescriptor d = make_desc(DType::BF16, 0, 4, 4, 16, 8);
  auto plan = RopePlan::select(kCpu, d).value();
  RopeArgs a;
  a.q = TensorRef(nullptr, DType::BF16, Device::cpu(), qshape(d), contiguous_strides(qshape(d)), 0);
  a.k = a.q;
  a.q_out = TensorMut(nullptr, DType::BF16, Device::cpu(), qshape(d), contiguous_strides(qshape(d)), 0);
  a.k_out = a.q_out;
  EXPECT_TRUE(plan.run(kCpu, Workspace::none(), a).is_ok());
}

// ---------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------
TEST(RopeBackward, MatchesFiniteDifferencesInF64) {
  for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit})
    for (bool cache : {false, true}) {
      SCOPED_TRACE(std::string(rope_pairs_name(pairs)) + (cache ? " cache" : ""));
      bt::Rng rng(bt::fresh_seed());
      RopeCase c;
      c.d = make_desc(DType::F64, 2, 2, 1, 3, 8, 6, pairs);
      c.d.positions = RopePositions::PerBatch;
      c.d.position_dtype = DType::I64;
      c.d.use_cache = cache;
      c.d.cache_len = 50;
      fill_case(c, rng, 100);
      // Loss L = <wq, q_out> + <wk, k_out>; dL/dq = backward(wq), dL/dk = backward(wk).
      const auto wq = bt::random_values(DType::F64, bt::numel(qshape(c.d)), rng);
      const auto wk = bt::random_values(DType::F64, bt::numel(kshape(c.d)), rng);
      auto loss = [&](const RopeCase& x) {
        const RopeOut r = run_cpu(x);
        EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
        double l = 0;
        for (size_t i = 0; i < wq.size(); ++i) l += wq[i] * r.q[i];
        for (size_t i = 0; i < wk.size(); ++i) l += wk[i] * r.k[i];
        return l;
      };
      RopeCase g = c;
      g.backward = true;
      g.q = wq;
      g.k = wk;
      const RopeOut grad = run_cpu(g);
      ASSERT_TRUE(grad.st.is_ok()) << grad.st.to_string();
      const double h = 1e-3;
      for (int side = 0; side < 2; ++side) {
        const size_t n = side == 0 ? c.q.size() : c.k.size();
        for (size_t i = 0; i < n; ++i) {
          RopeCase p = c, m = c;
          (side == 0 ? p.q : p.k)[i] += h;
          (side == 0 ? m.q : m.k)[i] -= h;
          const double fd = (loss(p) - loss(m)) / (2 * h);
          const double an = (side == 0 ? grad.q : grad.k)[i];
          EXPECT_NEAR(an, fd, 1e-9) << (side == 0 ? "dq[" : "dk[") << i << "]";
        }
      }
    }
}

TEST(RopeBackward, UndoesTheForward) {
  for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit}) {
    bt::Rng rng(bt::fresh_seed());
    RopeCase c;
    c.d = make_desc(DType::F64, 2, 3, 3, 7, 12, 8, pairs);
    c.d.positions = RopePositions::PerSequence;
    fill_case(c, rng, 4000);
    const RopeOut f = run_cpu(c);
    ASSERT_TRUE(f.st.is_ok()) << f.st.to_string();
    RopeCase b = c;
    b.backward = true;
    b.q = f.q;
    b.k = f.k;
    const RopeOut r = run_cpu(b);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_LE(bt::rel_error(r.q, c.q), 1e-14);
    EXPECT_LE(bt::rel_error(r.k, c.k), 1e-14);
    expect_model(b, 1e-15, "backward vs model");
  }
}

// ---------------------------------------------------------------------------
// SKU
// ---------------------------------------------------------------------------
TEST(RopeSku, CpuPlansReportTheReference) {
  const RopeDescriptor d = make_desc(DType::BF16, 1, 2, 2, 3, 8);
  auto f = RopePlan::select(kCpu, d).value();
  EXPECT_EQ(f.sku().backend, Backend::CpuReference);
  EXPECT_EQ(f.sku().op, "rope.forward");
  EXPECT_EQ(f.sku().variant, "reference");
  EXPECT_EQ(f.sku().dtype, DType::BF16);
  EXPECT_EQ(f.sku().precision.math, DType::F64);
  EXPECT_TRUE(f.sku().precision.deterministic);
  EXPECT_EQ(f.workspace_size(), 0u);
  EXPECT_EQ(f.descriptor().rotary_dim, 8);  // -1 resolved to head_dim
  EXPECT_EQ(f.cache_dtype(), DType::F32);
  EXPECT_EQ(f.q_shape(), (Dims{1, 2, 3, 8}));
  auto b = RopeBackwardPlan::select(kCpu, d).value();
  EXPECT_EQ(b.sku().op, "rope.backward");
  RopeDescriptor d64 = d;
  d64.dtype = DType::F64;
  d64.use_cache = true;
  d64.cache_len = 5;
  d64.rotary_dim = 4;
  EXPECT_EQ(RopePlan::select(kCpu, d64)->cache_dtype(), DType::F64);
  EXPECT_EQ(RopePlan::select(kCpu, d64)->cache_shape(), (Dims{5, 2}));
}

// ---------------------------------------------------------------------------
// Validation: descriptor (select)
// ---------------------------------------------------------------------------
namespace {
Status sel(const RopeDescriptor& d, const PlanPreference& p = {}) {
  auto r = RopePlan::select(kCpu, d, p);
  return r ? Status::ok() : r.status();
}
Status sel_bw(const RopeDescriptor& d, const PlanPreference& p = {}) {
  auto r = RopeBackwardPlan::select(kCpu, d, p);
  return r ? Status::ok() : r.status();
}
}  // namespace

TEST(RopeValidation, DtypeMustBeFloating) {
  for (DType t : {DType::I32, DType::I64, DType::I8, DType::U8, DType::Bool}) {
    BT_EXPECT_STATUS(sel(make_desc(t, 1, 1, 1, 2, 4)), StatusCode::Unsupported,
                     "RopePlan: dtype " + std::string(dtype_name(t)) + " is not supported (f32, f64, f16, bf16)");
    BT_EXPECT_STATUS(sel_bw(make_desc(t, 1, 1, 1, 2, 4)), StatusCode::Unsupported, "RopeBackwardPlan: dtype");
  }
}

TEST(RopeValidation, RotaryDim) {
  BT_EXPECT_STATUS(sel(make_desc(DType::F32, 1, 1, 1, 2, 8, 7)), StatusCode::InvalidProblem,
                   "RopePlan: rotary_dim 7 must be even");
  BT_EXPECT_STATUS(sel(make_desc(DType::F32, 1, 1, 1, 2, 7)), StatusCode::InvalidProblem,
                   "RopePlan: rotary_dim 7 (= head_dim) must be even");
  BT_EXPECT_STATUS(sel(make_desc(DType::F32, 1, 1, 1, 2, 8, 0)), StatusCode::InvalidProblem,
                   "RopePlan: rotary_dim 0 must be >= 2");
  BT_EXPECT_STATUS(sel(make_desc(DType::F32, 1, 1, 1, 2, 0)), StatusCode::InvalidProblem,
                   "RopePlan: rotary_dim 0 (= head_dim) must be >= 2");
  BT_EXPECT_STATUS(sel(make_desc(DType::F32, 1, 1, 1, 2, 8, -2)), StatusCode::InvalidProblem,
                   "RopePlan: rotary_dim -2 must be -1 (= head_dim) or in [2, head_dim]");
  BT_EXPECT_STATUS(sel(make_desc(DType::F32, 1, 1, 1, 2, 8, 10)), StatusCode::InvalidProblem,
                   "RopePlan: rotary_dim 10 must be <= head_dim 8");
  BT_EXPECT_STATUS(sel_bw(make_desc(DType::F32, 1, 1, 1, 2, 8, 5)), StatusCode::InvalidProblem,
                   "RopeBackwardPlan: rotary_dim 5 must be even");
  EXPECT_TRUE(sel(make_desc(DType::F32, 1, 1, 1, 2, 8, 2)).is_ok());
  EXPECT_TRUE(sel(make_desc(DType::F32, 1, 1, 1, 2, 9, 8)).is_ok());  // odd head_dim, even rotary_dim
}

TEST(RopeValidation, Theta) {
  for (double th : {0.0, -1.0, bt::kNaN, bt::kInf, -bt::kInf}) {
    RopeDescriptor d = make_desc(DType::F32, 1, 1, 1, 2, 4);
    d.theta = th;
    BT_EXPECT_STATUS(sel(d), StatusCode::InvalidProblem, "must be finite and > 0");
    BT_EXPECT_STATUS(sel(d), StatusCode::InvalidProblem, "RopePlan: theta ");
  }
}

TEST(RopeValidation, NegativeExtents) {
  const std::pair<const char*, int> fields[] = {{"batch", 0}, {"heads", 1}, {"kv_heads", 2}, {"seq_len", 3}, {"head_dim", 4}};
  for (const auto& [name, f] : fields) {
    RopeDescriptor d = make_desc(DType::F32, 1, 1, 1, 2, 4, 2);
    int64_t* slot[] = {&d.batch, &d.heads, &d.kv_heads, &d.seq_len, &d.head_dim};
    *slot[f] = -3;
    BT_EXPECT_STATUS(sel(d), StatusCode::InvalidProblem, std::string("RopePlan: ") + name + " -3 must be >= 0");
  }
  // kv_heads is ignored without k.
  RopeDescriptor d = make_desc(DType::F32, 1, 1, -1, 2, 4);
  d.has_k = false;
  EXPECT_TRUE(sel(d).is_ok());
  // Too many elements.
  d = make_desc(DType::F32, int64_t{1} << 20, int64_t{1} << 20, 1, int64_t{1} << 21, 4);
  BT_EXPECT_STATUS(sel(d), StatusCode::InvalidProblem, "has too many elements");
}

TEST(RopeValidation, PositionsAndCacheDescriptor) {
  RopeDescriptor d = make_desc(DType::F32, 1, 1, 1, 2, 4);
  d.positions = RopePositions::PerSequence;
  for (DType t : {DType::F32, DType::I8, DType::U8, DType::Bool, DType::F16}) {
    d.position_dtype = t;
    BT_EXPECT_STATUS(sel(d), StatusCode::InvalidProblem,
                     "RopePlan: position_dtype " + std::string(dtype_name(t)) + " must be i32 or i64");
  }
  d.positions = RopePositions::None;  // dtype irrelevant without positions
  EXPECT_TRUE(sel(d).is_ok());
  d.position_dtype = DType::I32;
  d.use_cache = true;
  d.cache_len = 0;
  BT_EXPECT_STATUS(sel(d), StatusCode::InvalidProblem, "RopePlan: cache_len 0 must be >= 1 when use_cache is set");
  d.cache_len = 1;
  EXPECT_TRUE(sel(d).is_ok());
  d.pairs = static_cast<RopePairs>(7);
  BT_EXPECT_STATUS(sel(d), StatusCode::InvalidProblem, "RopePlan: unknown RopePairs 7");
  d.pairs = RopePairs::Interleaved;
  d.positions = static_cast<RopePositions>(9);
  BT_EXPECT_STATUS(sel(d), StatusCode::InvalidProblem, "RopePlan: unknown RopePositions 9");
}

TEST(RopeValidation, BackendPreferences) {
  const RopeDescriptor d = make_desc(DType::F32, 1, 1, 1, 2, 4);
  PlanPreference p;
  p.backend = Backend::CuDnn;
  p.require_backend = true;
  BT_EXPECT_STATUS(sel(d, p), StatusCode::Unsupported, "RopePlan: backend cudnn has no RoPE implementation");
  p.backend = Backend::Bespoke;
  BT_EXPECT_STATUS(sel(d, p), StatusCode::Unsupported, "required but the stream is on the CPU");
  p.require_backend = false;  // a hint: the CPU reference runs
  EXPECT_TRUE(sel(d, p).is_ok());
  if (!cuda_available()) {
    auto r = RopePlan::select(Stream::cuda(0), d);
    EXPECT_FALSE(r.is_ok());
    PlanPreference cpu;
    cpu.backend = Backend::CpuReference;
    cpu.require_backend = true;
    BT_EXPECT_STATUS(RopeBackwardPlan::select(Stream::cuda(0), d, cpu).status(), StatusCode::Unsupported,
                     "RopeBackwardPlan: backend cpu-reference required but the stream is on cuda:0");
  }
}

// ---------------------------------------------------------------------------
// Validation: arguments (can_implement and run report the same error)
// ---------------------------------------------------------------------------
namespace {
// B=2, H=2, Hk=1, S=3, D=8, R=4, positions [B,S] i32, f32 cache [P=10, 2].
struct Fixture {
  RopeDescriptor d;
  std::vector<float> q, k, qo, ko, cos, sin;
  std::vector<int32_t> pos;
  std::vector<double> q64;
  Fixture() {
    d = make_desc(DType::F32, 2, 2, 1, 3, 8, 4, RopePairs::Interleaved);
    d.positions = RopePositions::PerBatch;
    d.use_cache = true;
    d.cache_len = 10;
    q.assign(97, 0.5f);  // one spare element: room for a view shifted by one
    k.assign(48, 0.5f);
    qo.assign(96, 0.f);
    ko.assign(48, 0.f);
    cos.assign(20, 1.f);
    sin.assign(20, 0.f);
    pos.assign(6, 1);
    q64.assign(96, 0.5);
  }
  TensorRef cref(std::vector<float>& v, Dims s) { return TensorRef::contiguous(v.data(), DType::F32, Device::cpu(), s); }
  TensorMut cmut(std::vector<float>& v, Dims s) { return TensorMut::contiguous(v.data(), DType::F32, Device::cpu(), s); }
  RopeArgs args() {
    return {cref(q, {2, 2, 3, 8}), cref(k, {2, 1, 3, 8}),
            TensorRef::contiguous(pos.data(), DType::I32, Device::cpu(), {2, 3}),
            cref(cos, {10, 2}), cref(sin, {10, 2}), cmut(qo, {2, 2, 3, 8}), cmut(ko, {2, 1, 3, 8})};
  }
  RopeBackwardArgs bargs() {
    const RopeArgs a = args();
    return {a.q, a.k, a.positions, a.cos, a.sin, a.q_out, a.k_out};
  }
  void expect(const RopeArgs& a, StatusCode code, const std::string& substr) {
    auto plan = RopePlan::select(kCpu, d).value();
    BT_EXPECT_STATUS(plan.can_implement(a), code, substr);
    BT_EXPECT_STATUS(plan.run(kCpu, Workspace::none(), a), code, substr);
  }
  void expect_bw(const RopeBackwardArgs& a, StatusCode code, const std::string& substr) {
    auto plan = RopeBackwardPlan::select(kCpu, d).value();
    BT_EXPECT_STATUS(plan.can_implement(a), code, substr);
    BT_EXPECT_STATUS(plan.run(kCpu, Workspace::none(), a), code, substr);
  }
};
}  // namespace

TEST(RopeValidation, ValidArgumentsPass) {
  Fixture f;
  auto plan = RopePlan::select(kCpu, f.d).value();
  EXPECT_TRUE(plan.can_implement(f.args()).is_ok()) << plan.can_implement(f.args()).to_string();
  EXPECT_TRUE(plan.run(kCpu, Workspace::none(), f.args()).is_ok());
  auto bplan = RopeBackwardPlan::select(kCpu, f.d).value();
  EXPECT_TRUE(bplan.run(kCpu, Workspace::none(), f.bargs()).is_ok());
  // A workspace is not needed but may be given.
  char scratch[16];
  EXPECT_TRUE(plan.run(kCpu, Workspace(scratch, 16), f.args()).is_ok());
}

TEST(RopeValidation, TensorShapesDtypesDevicesBuffers) {
  Fixture f;
  RopeArgs a = f.args();
  a.q = f.cref(f.q, {2, 3, 2, 8});
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q shape [2,3,2,8] must be [2,2,3,8]");
  a = f.args();
  a.k = f.cref(f.k, {2, 2, 3, 4});
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: k shape [2,2,3,4] must be [2,1,3,8]");
  a = f.args();
  a.q = TensorRef::contiguous(f.q64.data(), DType::F64, Device::cpu(), {2, 2, 3, 8});
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q dtype f64 must be f32");
  a = f.args();
  a.q_out = f.cmut(f.qo, {2, 2, 3, 4});
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q_out shape [2,2,3,4] must be [2,2,3,8]");
  a = f.args();
  a.k_out = TensorMut();
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: k_out");
  a = f.args();
  a.k = TensorRef(nullptr, DType::F32, Device::cpu(), {2, 1, 3, 8}, contiguous_strides({2, 1, 3, 8}), 48);
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: k data pointer is null");
  a = f.args();
  a.q.capacity = 95;
  f.expect(a, StatusCode::BufferTooSmall, "RopePlan: q view reaches 96 elements but its buffer holds 95");
  a = f.args();
  a.q_out.device = Device::cuda(0);
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q_out is on cuda:0 but the plan runs on cpu");
  a = f.args();
  a.q_out.strides = Dims{48, 24, 0, 1};  // broadcast output
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q_out strides [48,24,0,1] for shape [2,2,3,8] make elements overlap");
  a = f.args();
  a.q.strides = Dims{48, 24, 8, -1};
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q stride -1 at axis 3 is negative");
}

TEST(RopeValidation, KWithoutHasK) {
  Fixture f;
  f.d.has_k = false;
  RopeArgs a = f.args();
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: k is given but the descriptor has has_k = false");
  a.k = TensorRef();
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: k_out is given but the descriptor has has_k = false");
  a.k_out = TensorMut();
  auto plan = RopePlan::select(kCpu, f.d).value();
  EXPECT_TRUE(plan.run(kCpu, Workspace::none(), a).is_ok());
}

TEST(RopeValidation, Positions) {
  Fixture f;
  RopeArgs a = f.args();
  a.positions = TensorRef();
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: positions tensor is missing (descriptor.positions = per-batch)");
  std::vector<int64_t> p64(6, 1);
  a.positions = TensorRef::contiguous(p64.data(), DType::I64, Device::cpu(), {2, 3});
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: positions dtype i64 must be i32");
  a.positions = TensorRef::contiguous(f.pos.data(), DType::I32, Device::cpu(), {3});
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: positions shape [3] must be [2,3]");
  f.d.positions = RopePositions::PerSequence;
  f.expect(f.args(), StatusCode::InvalidProblem, "RopePlan: positions shape [2,3] must be [3]");
  f.d.positions = RopePositions::None;
  f.expect(f.args(), StatusCode::InvalidProblem,
           "RopePlan: positions is given but descriptor.positions is none (position = s)");
  RopeBackwardArgs b = f.bargs();
  b.positions = TensorRef();
  auto plan = RopeBackwardPlan::select(kCpu, f.d).value();
  EXPECT_TRUE(plan.run(kCpu, Workspace::none(), b).is_ok());
}

TEST(RopeValidation, Cache) {
  Fixture f;
  RopeArgs a = f.args();
  a.cos = TensorRef();
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: cos tensor is missing (descriptor.use_cache is set)");
  a = f.args();
  a.sin = TensorRef();
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: sin tensor is missing (descriptor.use_cache is set)");
  a = f.args();
  a.cos = f.cref(f.cos, {5, 4});
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: cos shape [5,4] must be [10,2]");
  std::vector<uint16_t> c16(20, 0);
  a = f.args();
  a.sin = TensorRef::contiguous(c16.data(), DType::BF16, Device::cpu(), {10, 2});
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: sin dtype bf16 must be f32");
  f.d.use_cache = false;
  f.expect(f.args(), StatusCode::InvalidProblem, "RopePlan: cos is given but descriptor.use_cache is false");
  a = f.args();
  a.cos = TensorRef();
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: sin is given but descriptor.use_cache is false");
}

TEST(RopeValidation, Aliasing) {
  Fixture f;
  // Exactly in place: allowed.
  RopeArgs a = f.args();
  a.q_out = f.cmut(f.q, {2, 2, 3, 8});
  a.k_out = f.cmut(f.k, {2, 1, 3, 8});
  auto plan = RopePlan::select(kCpu, f.d).value();
  EXPECT_TRUE(plan.run(kCpu, Workspace::none(), a).is_ok());
  // Same buffer shifted by one element: partial overlap.
  a = f.args();
  a.q_out = TensorMut(f.q.data() + 1, DType::F32, Device::cpu(), {2, 2, 3, 8}, contiguous_strides({2, 2, 3, 8}), 96);
  f.expect(a, StatusCode::InvalidProblem,
           "RopePlan: q_out partially overlaps q (in place needs the same data pointer and strides)");
  // Same pointer, other strides.
  a = f.args();
  a.q_out = TensorMut(f.q.data(), DType::F32, Device::cpu(), {2, 2, 3, 8}, Dims{48, 8, 16, 1}, 96);
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q_out partially overlaps q");
  // An output over another input (k placed inside q_out's buffer).
  a = f.args();
  a.k = TensorRef(f.qo.data() + 8, DType::F32, Device::cpu(), {2, 1, 3, 8}, contiguous_strides({2, 1, 3, 8}), 88);
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q_out overlaps k in memory");
  a = f.args();
  a.k_out = TensorMut(f.qo.data() + 48, DType::F32, Device::cpu(), {2, 1, 3, 8}, contiguous_strides({2, 1, 3, 8}), 48);
  a.q_out = TensorMut(f.qo.data(), DType::F32, Device::cpu(), {2, 2, 3, 8}, contiguous_strides({2, 2, 3, 8}), 96);
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q_out overlaps k_out in memory");
  a = f.args();
  a.cos = TensorRef(f.ko.data(), DType::F32, Device::cpu(), {10, 2}, contiguous_strides({10, 2}), 48);
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: k_out overlaps cos in memory");
  // Positions inside an output.
  a = f.args();
  a.positions = TensorRef(f.qo.data(), DType::I32, Device::cpu(), {2, 3}, contiguous_strides({2, 3}), 96);
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q_out overlaps positions in memory");
  // q and k the same memory, rotated in place: q_out would overwrite k.
  a = f.args();
  f.d.kv_heads = 2;
  a.k = f.cref(f.q, {2, 2, 3, 8});
  a.q_out = f.cmut(f.q, {2, 2, 3, 8});
  a.k_out = TensorMut(f.qo.data(), DType::F32, Device::cpu(), {2, 2, 3, 8}, contiguous_strides({2, 2, 3, 8}), 96);
  f.expect(a, StatusCode::InvalidProblem, "RopePlan: q_out overlaps k in memory");
  // Backward names.
  f.d.kv_heads = 1;
  RopeBackwardArgs b = f.bargs();
  b.dq = TensorMut(f.q.data() + 1, DType::F32, Device::cpu(), {2, 2, 3, 8}, contiguous_strides({2, 2, 3, 8}), 96);
  f.expect_bw(b, StatusCode::InvalidProblem,
              "RopeBackwardPlan: dq partially overlaps dy_q (in place needs the same data pointer and strides)");
  b = f.bargs();
  b.dq = f.cmut(f.q, {2, 2, 3, 8});  // in place: fine
  b.dk = f.cmut(f.k, {2, 1, 3, 8});
  auto bplan = RopeBackwardPlan::select(kCpu, f.d).value();
  EXPECT_TRUE(bplan.run(kCpu, Workspace::none(), b).is_ok());
}

TEST(RopeValidation, StreamMustMatchThePlan) {
  Fixture f;
  auto plan = RopePlan::select(kCpu, f.d).value();
  BT_EXPECT_STATUS(plan.run(Stream::cuda(0), Workspace::none(), f.args()), StatusCode::InvalidProblem,
                   "RopePlan: stream is on cuda:0 but the plan was selected for cpu");
}
