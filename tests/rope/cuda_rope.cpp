// RopePlan / RopeBackwardPlan on CUDA (PlanPreference requiring Backend::Bespoke)
// against the CPU reference on random data:
//   every dtype (f32 f64 f16 bf16) x both pair styles x full / partial rotary x
//   position source (none, i32 [S], i64 [B,S], f32/f64 cos/sin cache indexed
//   by positions that include out-of-range values, which both backends clamp)
//   x forward / backward x layouts ([B,H,S,D] contiguous, [B,S,H,D] permuted,
//   padded slices (misaligned: strided path), every-other element, transposed)
//   x out of place / in place; plus realistic sizes on the vector path,
//   decoding shapes (S = 1 and 3: one block's tokens span sequences), odd
//   head dims (strided path), rotary dims too long for the shared-memory table
//   (direct path), q and k rotated in place inside one fused qkv buffer, large
//   positions in f32, zero-size problems, and the SKU.
// Outputs are poisoned before each run (NaN bytes first, a finite pattern
// second); both runs must succeed, leave the gaps of strided outputs alone and
// agree bit for bit. Tolerances relative to ||ref||: f64 1e-12, f32 1e-5,
// f16 2e-3, bf16 1e-2 (bt::tolerance). Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::bespoke, bt::kGpu, bt::to_device, bt::to_host;

enum Lay { kContig, kBshd, kPadded, kEveryOther, kTransposed, kNumLay };
const char* lay_name(int l) {
  static const char* n[] = {"bhsd", "bshd", "padded", "every_other", "transposed"};
  return n[l];
}
bt::Layout make_layout(int l, const Dims& s) {
  switch (l) {
    case kBshd: return bt::permuted(s, {0, 2, 1, 3});
    case kPadded: return bt::padded(s);
    case kEveryOther: return bt::every_other(s);
    case kTransposed: return bt::transposed(s);
    default: return bt::contiguous(s);
  }
}

struct Spec {
  DType t = DType::F32;
  RopePairs pairs = RopePairs::HalfSplit;
  int64_t B = 2, H = 3, Hk = 2, S = 17, D = 64, R = -1;
  bool has_k = true;
  RopePositions pos = RopePositions::None;
  DType pos_t = DType::I32;
  bool cache = false;
  int64_t P = 64;
  int64_t pos_lo = 0, pos_hi = 100;
  double theta = 10000.0;
  bool backward = false;
  int lay_in = kContig, lay_out = kContig;
  bool in_place = false;
};

std::string name(const Spec& s) {
  std::string n = std::string(dtype_name(s.t)) + "." + rope_pairs_name(s.pairs) + (s.backward ? ".bwd" : ".fwd") +
                  " B" + std::to_string(s.B) + " H" + std::to_string(s.H) + " Hk" + (s.has_k ? std::to_string(s.Hk) : "-") +
                  " S" + std::to_string(s.S) + " D" + std::to_string(s.D) + " R" + std::to_string(s.R) + " pos=" +
                  rope_positions_name(s.pos);
  if (s.pos != RopePositions::None) n += "/" + std::string(dtype_name(s.pos_t));
  n += " [" + std::to_string(s.pos_lo) + "," + std::to_string(s.pos_hi) + "]";
  if (s.cache) n += " cache P" + std::to_string(s.P);
  n += std::string(" in=") + lay_name(s.lay_in) + (s.in_place ? " in-place" : std::string(" out=") + lay_name(s.lay_out));
  return n;
}

RopeDescriptor desc_of(const Spec& s) {
  RopeDescriptor d;
  d.dtype = s.t;
  d.batch = s.B;
  d.heads = s.H;
  d.kv_heads = s.Hk;
  d.seq_len = s.S;
  d.head_dim = s.D;
  d.rotary_dim = s.R;
  d.has_k = s.has_k;
  d.pairs = s.pairs;
  d.theta = s.theta;
  d.positions = s.pos;
  d.position_dtype = s.pos_t;
  d.use_cache = s.cache;
  d.cache_len = s.P;
  return d;
}

Status run_plan(const Stream& st, const RopeDescriptor& d, bool backward, const PlanPreference& pref, TensorRef q,
                TensorRef k, TensorRef pos, TensorRef cos, TensorRef sin, TensorMut qo, TensorMut ko,
                KernelSku* sku = nullptr) {
  if (backward) {
    auto plan = RopeBackwardPlan::select(st, d, pref);
    if (!plan) return plan.status();
    if (sku) *sku = plan->sku();
    return plan->run(st, Workspace::none(), RopeBackwardArgs{q, k, pos, cos, sin, qo, ko});
  }
  auto plan = RopePlan::select(st, d, pref);
  if (!plan) return plan.status();
  if (sku) *sku = plan->sku();
  return plan->run(st, Workspace::none(), RopeArgs{q, k, pos, cos, sin, qo, ko});
}

// One case: CUDA (twice, poisoned outputs) vs the CPU reference.
::testing::AssertionResult check(const Spec& s, KernelSku* sku_out = nullptr) {
  const RopeDescriptor d = desc_of(s);
  const int64_t R = s.R == -1 ? s.D : s.R;
  const Dims qs{s.B, s.H, s.S, s.D}, ks{s.B, s.has_k ? s.Hk : 0, s.S, s.D};
  bt::Rng rng(bt::fresh_seed(name(s)));
  const auto qv = bt::random_values(s.t, bt::numel(qs), rng);
  const auto kv = bt::random_values(s.t, bt::numel(ks), rng);
  Dims ps;
  if (s.pos == RopePositions::PerSequence) ps = Dims{s.S};
  if (s.pos == RopePositions::PerBatch) ps = Dims{s.B, s.S};
  std::vector<int64_t> pv(static_cast<size_t>(s.pos == RopePositions::None ? 0 : bt::numel(ps)));
  for (auto& p : pv) p = bt::uniform_int(rng, s.pos_lo, s.pos_hi);
  const DType ct = s.t == DType::F64 ? DType::F64 : DType::F32;
  const int64_t nc = s.cache ? s.P * (R / 2) : 0;
  std::vector<double> cv(static_cast<size_t>(nc)), sv(static_cast<size_t>(nc));
  for (int64_t i = 0; i < nc; ++i) {
    const double a = bt::uniform(rng, -20.0, 20.0);
    cv[static_cast<size_t>(i)] = std::cos(a);
    sv[static_cast<size_t>(i)] = std::sin(a);
  }
  const bt::HostBuffer qh = bt::host_from(s.t, qv), kh = bt::host_from(s.t, kv);
  const bt::HostBuffer ph = bt::host_from_i64(s.pos_t, pv), ch = bt::host_from(ct, cv), sh = bt::host_from(ct, sv);
  const Dims cs{s.P, R / 2};

  // CPU reference (contiguous).
  bt::HostBuffer qr(s.t, bt::numel(qs)), kr(s.t, bt::numel(ks));
  {
    const auto c = [](const bt::HostBuffer& b, const Dims& sh_) { return bt::view(b, bt::contiguous(sh_)); };
    const Status st = run_plan(Stream::cpu(), d, s.backward, {}, c(qh, qs), s.has_k ? c(kh, ks) : TensorRef(),
                               s.pos != RopePositions::None ? c(ph, ps) : TensorRef(), s.cache ? c(ch, cs) : TensorRef(),
                               s.cache ? c(sh, cs) : TensorRef(), bt::view_mut(qr, bt::contiguous(qs)),
                               s.has_k ? bt::view_mut(kr, bt::contiguous(ks)) : TensorMut());
    if (!st) return ::testing::AssertionFailure() << name(s) << ": CPU reference failed: " << st.to_string();
  }
  const auto ref_q = bt::all_values(qr), ref_k = bt::all_values(kr);

  // Device inputs in their layouts.
  const bt::Layout Lq = make_layout(s.lay_in, qs), Lk = make_layout(s.lay_in, ks);
  const bt::Layout Lqo = s.in_place ? Lq : make_layout(s.lay_out, qs), Lko = s.in_place ? Lk : make_layout(s.lay_out, ks);
  bt::HostBuffer qin(s.t, Lq.storage), kin(s.t, Lk.storage);
  qin.poison();
  kin.poison();
  bt::scatter(qin, Lq, qv);
  bt::scatter(kin, Lk, kv);
  Buffer dq = to_device(qin), dk = to_device(kin), dp = to_device(ph), dc = to_device(ch), ds = to_device(sh);
  Buffer dqo(Device::cuda(0), static_cast<size_t>(Lqo.storage) * dtype_size(s.t));
  Buffer dko(Device::cuda(0), static_cast<size_t>(Lko.storage) * dtype_size(s.t));
  Buffer& oq = s.in_place ? dq : dqo;
  Buffer& ok = s.in_place ? dk : dko;

  bt::HostBuffer first_q, first_k;
  for (int pass = 0; pass < 2; ++pass) {
    const uint8_t pb = pass == 0 ? bt::poison_byte(s.t) : bt::alt_poison_byte(s.t);
    if (s.in_place) {  // fresh inputs for every run
      if (qin.bytes()) EXPECT_TRUE(dq.copy_from_host(qin.data(), qin.bytes()).is_ok());
      if (kin.bytes()) EXPECT_TRUE(dk.copy_from_host(kin.data(), kin.bytes()).is_ok());
    } else {
      EXPECT_TRUE(dqo.fill_bytes(pb).is_ok());
      EXPECT_TRUE(dko.fill_bytes(pb).is_ok());
    }
    KernelSku sku;
    Status st = run_plan(kGpu, d, s.backward, bespoke(), bt::view(dq, s.t, Lq), s.has_k ? bt::view(dk, s.t, Lk) : TensorRef(),
                         s.pos != RopePositions::None ? bt::view(dp, s.pos_t, bt::contiguous(ps)) : TensorRef(),
                         s.cache ? bt::view(dc, ct, bt::contiguous(cs)) : TensorRef(),
                         s.cache ? bt::view(ds, ct, bt::contiguous(cs)) : TensorRef(), bt::view_mut(oq, s.t, Lqo),
                         s.has_k ? bt::view_mut(ok, s.t, Lko) : TensorMut(), &sku);
    if (st) st = synchronize(kGpu);
    if (!st) return ::testing::AssertionFailure() << name(s) << ": run " << pass + 1 << ": " << st.to_string();
    if (sku_out) *sku_out = sku;
    bt::HostBuffer hq = to_host(oq, s.t, Lqo.storage), hk = to_host(ok, s.t, Lko.storage);
    const uint8_t gap_byte = s.in_place ? bt::poison_byte(s.t) : pb;
    std::string gaps = bt::check_gaps(hq, Lqo, gap_byte);
    if (s.has_k) gaps += bt::check_gaps(hk, Lko, gap_byte);
    if (!gaps.empty()) return ::testing::AssertionFailure() << name(s) << ": run " << pass + 1 << ": " << gaps;
    if (pass == 0) {
      first_q = std::move(hq);
      first_k = std::move(hk);
      continue;
    }
    if (bt::materialize(first_q, Lqo).raw() != bt::materialize(hq, Lqo).raw() ||
        (s.has_k && bt::materialize(first_k, Lko).raw() != bt::materialize(hk, Lko).raw()))
      return ::testing::AssertionFailure() << name(s) << ": the two runs differ (unwritten elements or not deterministic)";
  }
  const double tol = bt::tolerance(s.t);
  const auto got_q = bt::gather(first_q, Lqo);
  const double eq = bt::rel_error(got_q, ref_q);
  if (!(eq <= tol))
    return ::testing::AssertionFailure() << name(s) << ": q rel error " << eq << " > " << tol << "; "
                                         << bt::describe_mismatch(got_q, ref_q);
  if (s.has_k) {
    const auto got_k = bt::gather(first_k, Lko);
    const double ek = bt::rel_error(got_k, ref_k);
    if (!(ek <= tol))
      return ::testing::AssertionFailure() << name(s) << ": k rel error " << ek << " > " << tol << "; "
                                           << bt::describe_mismatch(got_k, ref_k);
  }
  return ::testing::AssertionSuccess();
}

constexpr DType kTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

}  // namespace

// The main sweep: dtype x pairs x rotary x position source x direction, with
// the layouts rotating through the cases so each combination meets several.
TEST(RopeCuda, SweepMatchesCpuReference) {
  BT_SKIP_WITHOUT_GPU();
  int idx = 0, failures = 0;
  for (DType t : kTypes)
    for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit})
      for (int64_t R : {int64_t{-1}, int64_t{32}})
        for (int src = 0; src < 4; ++src)
          for (bool bwd : {false, true}) {
            Spec s;
            s.t = t;
            s.pairs = pairs;
            s.R = R;
            s.backward = bwd;
            if (src == 1) {
              s.pos = RopePositions::PerSequence;
              s.pos_t = DType::I32;
              s.pos_hi = 4000;
            } else if (src == 2) {
              s.pos = RopePositions::PerBatch;
              s.pos_t = DType::I64;
              s.pos_hi = 4000;
            } else if (src == 3) {
              s.cache = true;
              s.P = 50;
              s.pos = (idx & 1) ? RopePositions::PerBatch : RopePositions::PerSequence;
              s.pos_t = (idx & 2) ? DType::I64 : DType::I32;
              s.pos_lo = -10;  // out of range on both sides: clamped
              s.pos_hi = 70;
            }
            s.lay_in = idx % kNumLay;
            s.lay_out = (idx / kNumLay + idx) % kNumLay;
            s.in_place = idx % 7 == 3;
            ++idx;
            const auto r = check(s);
            EXPECT_TRUE(r);
            if (!r && ++failures >= 6) return;
          }
}

// Realistic shapes on the vector path (and the same problem as a [B,S,H,D]
// view), long sequences with large positions.
TEST(RopeCuda, RealisticShapes) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::BF16, DType::F16, DType::F32})
    for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit})
      for (bool bwd : {false, true}) {
        Spec s;
        s.t = t;
        s.pairs = pairs;
        s.backward = bwd;
        s.B = 2;
        s.H = 8;
        s.Hk = 2;
        s.S = 300;
        s.D = 128;
        s.pos = RopePositions::PerBatch;
        s.pos_t = DType::I64;
        s.pos_hi = 8191;
        s.lay_in = bwd ? kBshd : kContig;
        s.lay_out = bwd ? kContig : kBshd;
        EXPECT_TRUE(check(s));
      }
}

// Decoding shapes: one (or a few) tokens per sequence, many sequences, so a
// block's group of tokens spans several sequences.
TEST(RopeCuda, DecodeShapes) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::BF16, DType::F32})
    for (int64_t S : {int64_t{1}, int64_t{3}})
      for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit}) {
        Spec s;
        s.t = t;
        s.pairs = pairs;
        s.B = S == 1 ? 64 : 40;
        s.S = S;
        s.H = 8;
        s.Hk = 2;
        s.D = 128;
        s.pos = RopePositions::PerBatch;
        s.pos_t = DType::I64;
        s.pos_hi = 5000;
        s.backward = S == 3;
        s.in_place = pairs == RopePairs::HalfSplit;
        EXPECT_TRUE(check(s));
        s.cache = true;
        s.P = 4096;
        EXPECT_TRUE(check(s));
      }
}

// Odd head dims and rotary dims that do not split into 16-byte pieces: the
// strided path; head_dim 2 (one pair); no k.
TEST(RopeCuda, OddSizesTakeTheStridedPath) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t dims[][2] = {{10, 6}, {7, 4}, {2, 2}, {34, 34}, {96, 20}};
  int i = 0;
  for (DType t : kTypes)
    for (const auto& dr : dims)
      for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit}) {
        Spec s;
        s.t = t;
        s.pairs = pairs;
        s.D = dr[0];
        s.R = dr[1];
        s.S = 13;
        s.H = 4;
        s.Hk = 1;
        s.has_k = i % 3 != 1;
        s.backward = i % 2 == 1;
        s.pos = RopePositions::PerSequence;
        s.pos_hi = 3000;
        s.in_place = i % 4 == 2;
        ++i;
        EXPECT_TRUE(check(s));
      }
}

// Rotary dims whose cos/sin row exceeds the 16 KiB shared-memory table: cos/sin
// computed per pair ("*.strided.direct").
TEST(RopeCuda, LongRotaryDimsComputeCosSinPerPair) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::F32, DType::F64, DType::BF16})
    for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit}) {
      Spec s;
      s.t = t;
      s.pairs = pairs;
      s.B = 1;
      s.H = 2;
      s.Hk = 1;
      s.S = 3;
      s.D = t == DType::F64 ? 2056 : 4104;
      s.R = t == DType::F64 ? 2052 : 4100;
      s.pos = RopePositions::PerSequence;
      s.pos_hi = 2000;
      s.backward = pairs == RopePairs::HalfSplit;
      KernelSku sku;
      EXPECT_TRUE(check(s, &sku));
      EXPECT_EQ(sku.variant, std::string(rope_pairs_name(pairs)) + ".strided.direct");
      s.cache = true;  // the direct path with a cache
      s.P = 7;
      s.pos_lo = -3;
      s.pos_hi = 10;
      EXPECT_TRUE(check(s));
    }
}

// f32 keeps 1e-5 at large positions: the angle is reduced in double.
TEST(RopeCuda, LargePositionsKeepF32Accuracy) {
  BT_SKIP_WITHOUT_GPU();
  for (RopePairs pairs : {RopePairs::Interleaved, RopePairs::HalfSplit}) {
    Spec s;
    s.t = DType::F32;
    s.pairs = pairs;
    s.S = 64;
    s.D = 128;
    s.pos = RopePositions::PerBatch;
    s.pos_t = DType::I64;
    s.pos_lo = 0;
    s.pos_hi = int64_t{1} << 20;
    EXPECT_TRUE(check(s));
    s.theta = 500000.0;  // llama-3 base
    s.pos_lo = -(int64_t{1} << 17);
    EXPECT_TRUE(check(s));
  }
}

TEST(RopeCuda, ZeroSizeProblems) {
  BT_SKIP_WITHOUT_GPU();
  for (int which = 0; which < 4; ++which) {
    Spec s;
    s.B = which == 0 ? 0 : 2;
    s.S = which == 1 ? 0 : 5;
    s.H = which == 2 ? 0 : 3;  // H = 0: k is still rotated
    s.Hk = which == 3 ? 0 : 2;
    s.pos = RopePositions::PerBatch;
    EXPECT_TRUE(check(s));
  }
}

// q and k rotated in place inside one fused [B, S, 3, H, D] qkv buffer (the
// exact overlap check accepts the interleaved views); v stays untouched.
TEST(RopeCuda, FusedQkvInPlace) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::BF16, DType::F32}) {
    const int64_t B = 2, S = 33, H = 4, D = 64, n = B * S * 3 * H * D;
    RopeDescriptor d;
    d.dtype = t;
    d.batch = B;
    d.heads = d.kv_heads = H;
    d.seq_len = S;
    d.head_dim = D;
    d.pairs = RopePairs::HalfSplit;
    bt::Rng rng(bt::fresh_seed());
    bt::HostBuffer h = bt::host_from(t, bt::random_values(t, n, rng));
    const Dims shape{B, H, S, D}, strides{S * 3 * H * D, D, 3 * H * D, 1};
    const size_t es = dtype_size(t);
    // CPU in place on a host copy: the reference.
    bt::HostBuffer ref = h;
    auto* hb = static_cast<char*>(ref.data());
    TensorMut cq(hb, t, Device::cpu(), shape, strides, n), ck(hb + H * D * es, t, Device::cpu(), shape, strides, n - H * D);
    ASSERT_TRUE(RopePlan::select(Stream::cpu(), d)->run(Stream::cpu(), Workspace::none(), RopeArgs{cq, ck, {}, {}, {}, cq, ck}).is_ok());
    Buffer dbuf = to_device(h);
    auto* db = static_cast<char*>(dbuf.data());
    TensorMut gq(db, t, Device::cuda(0), shape, strides, n), gk(db + H * D * es, t, Device::cuda(0), shape, strides, n - H * D);
    auto plan = RopePlan::select(kGpu, d, bespoke());
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    ASSERT_TRUE(plan->run(kGpu, Workspace::none(), RopeArgs{gq, gk, {}, {}, {}, gq, gk}).is_ok());
    ASSERT_TRUE(synchronize(kGpu).is_ok());
    const bt::HostBuffer got = to_host(dbuf, t, n);
    bt::Layout L;
    L.shape = shape;
    L.strides = strides;
    L.storage = n;
    for (int part = 0; part < 3; ++part) {
      L.offset = part * H * D;
      const auto g = bt::gather(got, L), r = bt::gather(ref, L);
      if (part == 2) EXPECT_EQ(g, bt::gather(h, L)) << "v was modified";
      else EXPECT_LE(bt::rel_error(g, r), bt::tolerance(t)) << (part ? "k" : "q") << " " << bt::describe_mismatch(g, r);
    }
  }
}

TEST(RopeCuda, SkuAndVariants) {
  BT_SKIP_WITHOUT_GPU();
  Spec s;
  s.t = DType::BF16;
  s.D = 128;
  RopeDescriptor d = desc_of(s);
  auto f = RopePlan::select(kGpu, d);
  ASSERT_TRUE(f.is_ok()) << f.status().to_string();
  EXPECT_EQ(f->sku().backend, Backend::Bespoke);
  EXPECT_EQ(f->sku().op, "rope.forward");
  EXPECT_EQ(f->sku().variant, "halfsplit.vec16");
  EXPECT_EQ(f->sku().precision.math, DType::F32);
  EXPECT_TRUE(f->sku().precision.deterministic);
  EXPECT_GT(f->sku().arch, 0);
  EXPECT_EQ(f->workspace_size(), 0u);
  d.pairs = RopePairs::Interleaved;
  d.rotary_dim = 6;
  auto b = RopeBackwardPlan::select(kGpu, d);
  ASSERT_TRUE(b.is_ok());
  EXPECT_EQ(b->sku().op, "rope.backward");
  EXPECT_EQ(b->sku().variant, "interleaved.strided");
  d.dtype = DType::F64;
  EXPECT_EQ(RopePlan::select(kGpu, d)->sku().precision.math, DType::F64);
  // Host memory on a CUDA plan is rejected before any launch.
  std::vector<float> q(2 * 3 * 17 * 128);
  d = desc_of(s);
  d.dtype = DType::F32;
  d.has_k = false;
  auto p32 = RopePlan::select(kGpu, d).value();
  const Status st = p32.run(kGpu, Workspace::none(),
                            RopeArgs{TensorRef::contiguous(q.data(), DType::F32, Device::cpu(), p32.q_shape()), {}, {}, {}, {},
                                     TensorMut::contiguous(q.data(), DType::F32, Device::cpu(), p32.q_shape()), {}});
  EXPECT_EQ(st.code(), StatusCode::InvalidProblem);
  EXPECT_NE(st.message().find("RopePlan: q is on cpu but the plan runs on cuda:0"), std::string::npos) << st.message();
}

// sku() names the path of contiguous, aligned views; sku_for() the path run()
// takes for the actual views: rows that are not 16-byte pieces (padded
// strides, a pointer off by one element) take the strided kernel.
TEST(RopeCuda, SkuForNamesThePathOfTheActualViews) {
  BT_SKIP_WITHOUT_GPU();
  Spec s;
  s.t = DType::BF16;
  s.D = 128;
  s.has_k = false;
  const RopeDescriptor d = desc_of(s);
  auto plan = RopePlan::select(kGpu, d).value();
  ASSERT_EQ(plan.sku().variant, "halfsplit.vec16");
  const Dims qs = plan.q_shape();
  const bt::Layout contig = bt::contiguous(qs), padded = bt::padded(qs);
  Buffer in(Device::cuda(0), static_cast<size_t>(padded.storage + 8) * 2);
  Buffer out(Device::cuda(0), static_cast<size_t>(padded.storage + 8) * 2);
  ASSERT_TRUE(in.fill_bytes(0).is_ok());
  auto args = [&](const bt::Layout& L, int64_t offset) {
    TensorRef q = bt::view(in, s.t, L);
    q.data = static_cast<const char*>(q.data) + offset * 2;
    return RopeArgs{q, {}, {}, {}, {}, bt::view_mut(out, s.t, contig), {}};
  };
  struct Want {
    const bt::Layout* layout;
    int64_t offset;
    const char* variant;
  };
  for (const Want w : {Want{&contig, 0, "halfsplit.vec16"}, Want{&padded, 0, "halfsplit.strided"},
                       Want{&contig, 1, "halfsplit.strided"}}) {
    const RopeArgs a = args(*w.layout, w.offset);
    auto sku = plan.sku_for(kGpu, Workspace::none(), a);
    ASSERT_TRUE(sku.is_ok()) << sku.status().to_string();
    EXPECT_EQ(sku->variant, w.variant) << "offset " << w.offset;
    EXPECT_EQ(sku->backend, Backend::Bespoke);
    const Status st = plan.run(kGpu, Workspace::none(), a);
    EXPECT_TRUE(st.is_ok() && synchronize(kGpu).is_ok()) << st.to_string();
  }
  // run()'s errors, e.g. a CPU stream.
  EXPECT_EQ(plan.sku_for(Stream::cpu(), Workspace::none(), args(contig, 0)).status().code(), StatusCode::InvalidProblem);
}
