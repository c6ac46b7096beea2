// SdpaPlan / SdpaBackwardPlan on CUDA (Backend::Bespoke, the materialized
// tiled kernels) against the CPU reference (Stream::cpu()), on random data:
//   every dtype (f32 f64 f16 bf16) x
//   shapes: odd sizes spanning several 64x64 tiles, Q != K, Dk != Dv, decode (Q = 1)
//   causal with TopLeft and BottomRight alignment (Q > K and Q < K, so some
//   rows see no key at all), grouped-query ratios 1 / 2 / 4 and MQA,
//   additive f32 masks (full, per-head, [B,1,1,K] key padding, [1,1,Q,K]
//   broadcast by stride 0) with -inf entries and fully masked rows,
//   non-contiguous views ([B,S,H,D] storage, padded slices, head dim with a
//   non-unit stride, every other element) for inputs, outputs and probs,
//   zero-size problems.
// Input storage outside a view holds NaN (a stray read poisons the result).
// Outputs (and the backward's workspace) are poisoned before each of two runs
// (NaN first, a finite pattern second): both runs must write every element,
// leave the gaps of strided outputs alone and agree bit for bit. The backward
// gets the reference's probabilities on both sides, so it is checked alone.
// Tolerances relative to ||ref||: y, dq, dk, dv f64 1e-12, f32 1e-5, f16 2e-3,
// bf16 1e-2; probs in the accumulator dtype: 1e-12 (f64) or 1e-5 (f32).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::bespoke, bt::kGpu, bt::to_device, bt::to_host;

DType acc_dtype(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

std::string tname(DType t) { return std::string(dtype_name(t)); }

// ---------------------------------------------------------------------------
// Layouts
// ---------------------------------------------------------------------------
enum class Lay { Contig, Bshd, Padded, HeadStrided, EveryOther };
enum class MaskKind { None, Full, PerHead, KeyPadding, BroadcastQK };

const char* lay_name(Lay l) {
  switch (l) {
    case Lay::Contig: return "contig";
    case Lay::Bshd: return "bshd";
    case Lay::Padded: return "padded";
    case Lay::HeadStrided: return "head-strided";
    case Lay::EveryOther: return "every-other";
  }
  return "?";
}

// A view of a [b, h, s, d] tensor in one of the storage layouts.
bt::Layout make_layout(Lay l, const Dims& shape) {
  switch (l) {
    case Lay::Contig: return bt::contiguous(shape);
    case Lay::Bshd: {  // [B,S,H,D] storage
      bt::Layout L = bt::permuted(shape, {0, 2, 1, 3});
      L.name = "bshd";
      return L;
    }
    case Lay::Padded: return bt::padded(shape, 2);
    case Lay::HeadStrided: {  // head dim outermost in memory: stride B*H*S for d
      bt::Layout L = bt::permuted(shape, {3, 0, 1, 2});
      L.name = "head-strided";
      return L;
    }
    case Lay::EveryOther: {
      bt::Layout L = bt::contiguous(shape);
      for (int i = 0; i < shape.rank; ++i) L.strides[i] *= 2;
      L.offset = 1;
      L.storage = 2 * std::max<int64_t>(bt::numel(shape), 1) + 1;
      L.name = "every-other";
      return L;
    }
  }
  return bt::contiguous(shape);
}

// Mask [B,H,Q,K] with stride-0 broadcast axes per kind.
bt::Layout mask_layout(MaskKind m, int64_t B, int64_t H, int64_t Q, int64_t K) {
  const Dims shape{B, H, Q, K};
  bt::Layout L;
  L.shape = shape;
  switch (m) {
    case MaskKind::None:
    case MaskKind::Full: return bt::contiguous(shape);
    case MaskKind::PerHead: L.strides = Dims{0, Q * K, K, 1}; L.storage = H * Q * K; L.name = "mask[1,H,Q,K]"; break;
    case MaskKind::KeyPadding: L.strides = Dims{K, 0, 0, 1}; L.storage = B * K; L.name = "mask[B,1,1,K]"; break;
    case MaskKind::BroadcastQK: L.strides = Dims{0, 0, K, 1}; L.storage = Q * K; L.name = "mask[1,1,Q,K]"; break;
  }
  return L;
}

// Storage of `L` holding `vals` (logical, row-major); NaN everywhere else.
bt::HostBuffer storage_with(DType t, const bt::Layout& L, const std::vector<double>& vals) {
  bt::HostBuffer h(t, L.storage);
  h.poison();
  bt::scatter(h, L, vals);
  return h;
}

// ---------------------------------------------------------------------------
// Running a CUDA plan twice into poisoned outputs
// ---------------------------------------------------------------------------
struct Out {
  const char* name;
  Buffer* buf;
  DType t;
  bt::Layout L;
};

// Poisons every output (and the workspace) with `pb`, runs, synchronizes and
// downloads. Run 1 uses the NaN pattern, run 2 a finite one; the gaps of every
// output must keep the poison and the covered elements must agree bit for bit
// between the runs. Returns run 1's storage per output.
template <class RunFn>
std::optional<std::vector<bt::HostBuffer>> run_twice(RunFn&& run, std::vector<Out>& outs, Buffer* ws, std::string* why) {
  std::vector<bt::HostBuffer> first;
  for (int pass = 0; pass < 2; ++pass) {
    for (Out& o : outs) {
      const uint8_t pb = pass == 0 ? bt::poison_byte(o.t) : bt::alt_poison_byte(o.t);
      const Status st = o.buf->fill_bytes(pb);
      if (!st.is_ok()) {
        *why = std::string("poison ") + o.name + ": " + st.to_string();
        return std::nullopt;
      }
    }
    if (ws && ws->bytes()) (void)ws->fill_bytes(pass == 0 ? 0xff : 0x5a);
    Status st = run();
    if (st.is_ok()) st = synchronize(kGpu);
    if (!st.is_ok()) {
      *why = "run " + std::to_string(pass + 1) + ": " + st.to_string();
      return std::nullopt;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const Out& o = outs[k];
      const uint8_t pb = pass == 0 ? bt::poison_byte(o.t) : bt::alt_poison_byte(o.t);
      bt::HostBuffer h = to_host(*o.buf, o.t, o.L.storage);
      const std::string gaps = bt::check_gaps(h, o.L, pb);
      if (!gaps.empty()) {
        *why = "run " + std::to_string(pass + 1) + ", " + o.name + ": " + gaps;
        return std::nullopt;
      }
      if (pass == 0) {
        first.push_back(std::move(h));
        continue;
      }
      const auto cov = bt::covered(o.L);
      const size_t esz = dtype_size(o.t);
      const auto* a = static_cast<const uint8_t*>(first[k].data());
      const auto* b = static_cast<const uint8_t*>(h.data());
      for (int64_t i = 0; i < o.L.storage; ++i) {
        if (!cov[static_cast<size_t>(i)]) continue;
        if (std::memcmp(a + static_cast<size_t>(i) * esz, b + static_cast<size_t>(i) * esz, esz) != 0) {
          *why = std::string(o.name) + ": storage element " + std::to_string(i) + " differs between two runs (" +
                 std::to_string(first[k].get(i)) + " vs " + std::to_string(h.get(i)) + "): unwritten or not deterministic";
          return std::nullopt;
        }
      }
    }
  }
  return first;
}

// ---------------------------------------------------------------------------
// One case: CPU reference vs CUDA, forward and backward
// ---------------------------------------------------------------------------
struct Case {
  std::string name;
  int64_t B = 1, H = 1, Hk = 1, Q = 1, K = 1, Dk = 8, Dv = -1;
  bool causal = false;
  DiagonalAlign align = DiagonalAlign::TopLeft;
  MaskKind mask = MaskKind::None;
  bool masked_row = false;   // one mask row entirely -inf
  Lay in = Lay::Contig;      // q, k, v, dy
  Lay out = Lay::Contig;     // y, dq, dk, dv
  Lay probs = Lay::Contig;   // probs (forward output, backward input)
  std::optional<double> scale;
  double range = 1.0;        // inputs uniform in [-range, range)
};

std::string describe(const Case& c, DType t) {
  std::string s = c.name + " " + tname(t) + " B" + std::to_string(c.B) + " H" + std::to_string(c.H) + " Hk" +
                  std::to_string(c.Hk) + " Q" + std::to_string(c.Q) + " K" + std::to_string(c.K) + " Dk" +
                  std::to_string(c.Dk) + " Dv" + std::to_string(c.Dv < 0 ? c.Dk : c.Dv);
  if (c.causal) s += c.align == DiagonalAlign::TopLeft ? " causal-topleft" : " causal-bottomright";
  if (c.mask != MaskKind::None) s += " mask" + std::to_string(static_cast<int>(c.mask)) + (c.masked_row ? "+row" : "");
  s += std::string(" in=") + lay_name(c.in) + " out=" + lay_name(c.out) + " probs=" + lay_name(c.probs);
  return s;
}

// Element-wise comparison of a result with the reference: rel_error and a
// message on failure.
void expect_close(const char* what, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
  const double e = bt::rel_error(got, ref);
  EXPECT_LE(e, tol) << what << ": relative error " << e << " > " << tol << "; " << bt::describe_mismatch(got, ref);
}

void run_case(const Case& c, DType t) {
  SCOPED_TRACE(describe(c, t));
  const int64_t Dv = c.Dv < 0 ? c.Dk : c.Dv;
  SdpaDescriptor d;
  d.dtype = t;
  d.batch = c.B;
  d.heads = c.H;
  d.kv_heads = c.Hk;
  d.q_len = c.Q;
  d.kv_len = c.K;
  d.head_dim = c.Dk;
  d.head_dim_v = Dv;
  d.scale = c.scale;
  d.causal = c.causal;
  d.align = c.align;
  d.has_mask = c.mask != MaskKind::None;
  const DType at = acc_dtype(t);

  const Dims sq{c.B, c.H, c.Q, c.Dk}, sk{c.B, c.Hk, c.K, c.Dk}, sv{c.B, c.Hk, c.K, Dv}, sy{c.B, c.H, c.Q, Dv},
      ss{c.B, c.H, c.Q, c.K};
  bt::Rng rng = bt::make_rng(bt::fresh_seed(c.name + tname(t)));
  const auto qv = bt::random_values(t, bt::numel(sq), rng, -c.range, c.range);
  const auto kv = bt::random_values(t, bt::numel(sk), rng, -c.range, c.range);
  const auto vv = bt::random_values(t, bt::numel(sv), rng, -c.range, c.range);
  const auto dyv = bt::random_values(t, bt::numel(sy), rng, -1.0, 1.0);

  // Mask storage: random values, ~15% -inf, optionally one fully masked row.
  const bt::Layout Lm = mask_layout(c.mask, c.B, c.H, c.Q, c.K);
  bt::HostBuffer hmask(DType::F32, d.has_mask ? std::max<int64_t>(Lm.storage, 1) : 1);
  if (d.has_mask) {
    for (int64_t i = 0; i < hmask.size(); ++i)
      hmask.set(i, bt::uniform(rng, 0, 1) < 0.15 ? -bt::kInf : bt::uniform(rng, -2.0, 2.0));
    if (c.masked_row && bt::numel(ss) > 0) {
      const int64_t row = c.Q / 2, b = c.B - 1, h = c.H - 1;
      for (int64_t j = 0; j < c.K; ++j)
        hmask.set(Lm.offset + b * Lm.strides[0] + h * Lm.strides[1] + row * Lm.strides[2] + j * Lm.strides[3], -bt::kInf);
    }
  }

  // ---- CPU reference (contiguous tensors) ----------------------------------
  const bt::Layout Cq = bt::contiguous(sq), Ck = bt::contiguous(sk), Cv = bt::contiguous(sv), Cy = bt::contiguous(sy),
                   Cs = bt::contiguous(ss);
  const bt::HostBuffer hq = storage_with(t, Cq, qv), hk = storage_with(t, Ck, kv), hv = storage_with(t, Cv, vv),
                       hdy = storage_with(t, Cy, dyv);
  bt::HostBuffer y_ref(t, Cy.storage), p_ref(at, Cs.storage), dq_ref(t, Cq.storage), dk_ref(t, Ck.storage),
      dv_ref(t, Cv.storage);
  {
    auto plan = SdpaPlan::select(Stream::cpu(), d);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    SdpaArgs a;
    a.q = bt::view(hq, Cq);
    a.k = bt::view(hk, Ck);
    a.v = bt::view(hv, Cv);
    if (d.has_mask) a.mask = bt::view(hmask, Lm);
    a.y = bt::view_mut(y_ref, Cy);
    a.probs = bt::view_mut(p_ref, Cs);
    const Status st = plan->run(Stream::cpu(), Workspace{}, a);
    ASSERT_TRUE(st.is_ok()) << st.to_string();

    auto bplan = SdpaBackwardPlan::select(Stream::cpu(), d);
    ASSERT_TRUE(bplan.is_ok()) << bplan.status().to_string();
    std::vector<uint8_t> cpu_ws(bplan->workspace_size() + 1);
    SdpaBackwardArgs b;
    b.dy = bt::view(hdy, Cy);
    b.q = a.q;
    b.k = a.k;
    b.v = a.v;
    b.probs = bt::view(p_ref, Cs);
    b.dq = bt::view_mut(dq_ref, Cq);
    b.dk = bt::view_mut(dk_ref, Ck);
    b.dv = bt::view_mut(dv_ref, Cv);
    const Status bst = bplan->run(Stream::cpu(), Workspace(cpu_ws.data(), bplan->workspace_size()), b);
    ASSERT_TRUE(bst.is_ok()) << bst.to_string();
  }
  const auto y_want = bt::all_values(y_ref), p_want = bt::all_values(p_ref), dq_want = bt::all_values(dq_ref),
             dk_want = bt::all_values(dk_ref), dv_want = bt::all_values(dv_ref);

  // ---- CUDA ------------------------------------------------------------------
  const bt::Layout Lq = make_layout(c.in, sq), Lk = make_layout(c.in, sk), Lv = make_layout(c.in, sv),
                   Ldy = make_layout(c.in, sy);
  const bt::Layout Ly = make_layout(c.out, sy), Ldq = make_layout(c.out, sq), Ldk = make_layout(c.out, sk),
                   Ldv = make_layout(c.out, sv);
  const bt::Layout Lp = make_layout(c.probs, ss);
  Buffer gq = to_device(storage_with(t, Lq, qv)), gk = to_device(storage_with(t, Lk, kv)),
         gv = to_device(storage_with(t, Lv, vv)), gdy = to_device(storage_with(t, Ldy, dyv));
  Buffer gmask = to_device(hmask);
  Buffer gy(Device::cuda(0), static_cast<size_t>(Ly.storage) * dtype_size(t));
  Buffer gp(Device::cuda(0), static_cast<size_t>(Lp.storage) * dtype_size(at));

  auto plan = SdpaPlan::select(kGpu, d, bespoke());
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->sku().backend, Backend::Bespoke);
  EXPECT_EQ(plan->probs_dtype(), at);
  Buffer fws(Device::cuda(0), plan->workspace_size());
  SdpaArgs a;
  a.q = bt::view(gq, t, Lq);
  a.k = bt::view(gk, t, Lk);
  a.v = bt::view(gv, t, Lv);
  if (d.has_mask) a.mask = bt::view(gmask, DType::F32, Lm);
  a.y = bt::view_mut(gy, t, Ly);
  a.probs = bt::view_mut(gp, at, Lp);
  {
    std::vector<Out> outs{{"y", &gy, t, Ly}, {"probs", &gp, at, Lp}};
    std::string why;
    auto got = run_twice([&] { return plan->run(kGpu, Workspace(fws.data(), fws.bytes()), a); }, outs, &fws, &why);
    ASSERT_TRUE(got.has_value()) << "forward: " << why;
    expect_close("y", bt::gather((*got)[0], Ly), y_want, bt::tolerance(t));
    expect_close("probs", bt::gather((*got)[1], Lp), p_want, bt::tolerance(at));
  }

  // Backward on the reference's probabilities.
  Buffer gpr = to_device(storage_with(at, Lp, p_want));
  Buffer gdq(Device::cuda(0), static_cast<size_t>(Ldq.storage) * dtype_size(t));
  Buffer gdk(Device::cuda(0), static_cast<size_t>(Ldk.storage) * dtype_size(t));
  Buffer gdv(Device::cuda(0), static_cast<size_t>(Ldv.storage) * dtype_size(t));
  auto bplan = SdpaBackwardPlan::select(kGpu, d, bespoke());
  ASSERT_TRUE(bplan.is_ok()) << bplan.status().to_string();
  EXPECT_EQ(bplan->sku().backend, Backend::Bespoke);
  EXPECT_TRUE(bplan->sku().precision.deterministic);
  Buffer bws(Device::cuda(0), bplan->workspace_size());
  SdpaBackwardArgs b;
  b.dy = bt::view(gdy, t, Ldy);
  b.q = a.q;
  b.k = a.k;
  b.v = a.v;
  b.probs = bt::view(gpr, at, Lp);
  b.dq = bt::view_mut(gdq, t, Ldq);
  b.dk = bt::view_mut(gdk, t, Ldk);
  b.dv = bt::view_mut(gdv, t, Ldv);
  {
    std::vector<Out> outs{{"dq", &gdq, t, Ldq}, {"dk", &gdk, t, Ldk}, {"dv", &gdv, t, Ldv}};
    std::string why;
    auto got = run_twice([&] { return bplan->run(kGpu, Workspace(bws.data(), bws.bytes()), b); }, outs, &bws, &why);
    ASSERT_TRUE(got.has_value()) << "backward: " << why;
    expect_close("dq", bt::gather((*got)[0], Ldq), dq_want, bt::tolerance(t));
    expect_close("dk", bt::gather((*got)[1], Ldk), dk_want, bt::tolerance(t));
    expect_close("dv", bt::gather((*got)[2], Ldv), dv_want, bt::tolerance(t));
  }
}

class SdpaCuda : public ::testing::TestWithParam<DType> {
 protected:
  void SetUp() override {
    BT_SKIP_WITHOUT_GPU();
  }
};

std::string dtype_param_name(const ::testing::TestParamInfo<DType>& i) { return tname(i.param); }

TEST_P(SdpaCuda, BasicShapes) {
  const DType t = GetParam();
  run_case({.name = "single", .Q = 1, .K = 1, .Dk = 1}, t);
  run_case({.name = "odd", .B = 2, .H = 3, .Hk = 3, .Q = 37, .K = 53, .Dk = 40}, t);
  run_case({.name = "multi-tile", .B = 1, .H = 2, .Hk = 2, .Q = 130, .K = 150, .Dk = 72, .Dv = 72}, t);
  run_case({.name = "decode", .B = 3, .H = 4, .Hk = 4, .Q = 1, .K = 300, .Dk = 64}, t);
  run_case({.name = "long-reduction", .B = 1, .H = 1, .Hk = 1, .Q = 20, .K = 700, .Dk = 130, .Dv = 33}, t);
  run_case({.name = "explicit-scale", .B = 2, .H = 2, .Hk = 2, .Q = 65, .K = 64, .Dk = 16, .scale = 0.9, .range = 1.5}, t);
}

TEST_P(SdpaCuda, HeadDimsDiffer) {
  const DType t = GetParam();
  run_case({.name = "dk<dv", .B = 2, .H = 2, .Hk = 1, .Q = 29, .K = 41, .Dk = 16, .Dv = 72}, t);
  run_case({.name = "dk>dv", .B = 1, .H = 3, .Hk = 3, .Q = 66, .K = 70, .Dk = 96, .Dv = 7}, t);
  run_case({.name = "dv=1", .B = 1, .H = 2, .Hk = 2, .Q = 9, .K = 17, .Dk = 5, .Dv = 1}, t);
}

TEST_P(SdpaCuda, CausalAlignments) {
  const DType t = GetParam();
  for (DiagonalAlign al : {DiagonalAlign::TopLeft, DiagonalAlign::BottomRight}) {
    run_case({.name = "causal-square", .B = 2, .H = 2, .Hk = 2, .Q = 97, .K = 97, .Dk = 32, .causal = true, .align = al}, t);
    // Q > K: bottom-right leaves the first Q - K rows without keys (y = 0, p = 0).
    run_case({.name = "causal-q>k", .B = 1, .H = 2, .Hk = 1, .Q = 150, .K = 45, .Dk = 24, .Dv = 40, .causal = true, .align = al}, t);
    // Q < K: the KV-cache shape.
    run_case({.name = "causal-q<k", .B = 2, .H = 4, .Hk = 1, .Q = 33, .K = 200, .Dk = 48, .causal = true, .align = al}, t);
    run_case({.name = "causal-decode", .B = 1, .H = 2, .Hk = 2, .Q = 1, .K = 77, .Dk = 32, .causal = true, .align = al}, t);
  }
}

TEST_P(SdpaCuda, GroupedQuery) {
  const DType t = GetParam();
  run_case({.name = "gqa1", .B = 2, .H = 3, .Hk = 3, .Q = 40, .K = 70, .Dk = 32}, t);
  run_case({.name = "gqa2", .B = 2, .H = 4, .Hk = 2, .Q = 70, .K = 45, .Dk = 32, .Dv = 20}, t);
  run_case({.name = "gqa4", .B = 1, .H = 8, .Hk = 2, .Q = 33, .K = 129, .Dk = 24, .causal = true,
            .align = DiagonalAlign::BottomRight}, t);
  run_case({.name = "mqa", .B = 2, .H = 6, .Hk = 1, .Q = 65, .K = 66, .Dk = 16, .causal = true}, t);
  run_case({.name = "gqa8-d256", .B = 1, .H = 8, .Hk = 1, .Q = 40, .K = 100, .Dk = 256, .causal = true}, t);
  run_case({.name = "gqa4-bshd", .B = 2, .H = 4, .Hk = 1, .Q = 31, .K = 90, .Dk = 40, .in = Lay::Bshd, .out = Lay::Bshd}, t);
}

TEST_P(SdpaCuda, Masks) {
  const DType t = GetParam();
  run_case({.name = "mask-full", .B = 2, .H = 2, .Hk = 1, .Q = 45, .K = 70, .Dk = 32, .mask = MaskKind::Full,
            .masked_row = true}, t);
  run_case({.name = "mask-per-head", .B = 2, .H = 3, .Hk = 3, .Q = 20, .K = 66, .Dk = 16, .mask = MaskKind::PerHead,
            .masked_row = true}, t);
  run_case({.name = "mask-key-padding", .B = 3, .H = 2, .Hk = 2, .Q = 17, .K = 40, .Dk = 24,
            .mask = MaskKind::KeyPadding, .masked_row = true}, t);
  run_case({.name = "mask-broadcast-qk", .B = 2, .H = 4, .Hk = 2, .Q = 70, .K = 70, .Dk = 32,
            .mask = MaskKind::BroadcastQK}, t);
  run_case({.name = "mask+causal", .B = 1, .H = 2, .Hk = 2, .Q = 80, .K = 50, .Dk = 32, .causal = true,
            .align = DiagonalAlign::BottomRight, .mask = MaskKind::Full, .masked_row = true}, t);
  run_case({.name = "mask+causal-tl", .B = 2, .H = 2, .Hk = 1, .Q = 50, .K = 90, .Dk = 16, .causal = true,
            .mask = MaskKind::PerHead, .masked_row = true, .probs = Lay::Padded}, t);
}

TEST_P(SdpaCuda, NonContiguousViews) {
  const DType t = GetParam();
  for (Lay l : {Lay::Bshd, Lay::Padded, Lay::HeadStrided, Lay::EveryOther}) {
    run_case({.name = std::string("views-") + lay_name(l), .B = 2, .H = 4, .Hk = 2, .Q = 35, .K = 67, .Dk = 24, .Dv = 17,
              .in = l, .out = l, .probs = l}, t);
  }
  run_case({.name = "views-mixed", .B = 2, .H = 2, .Hk = 1, .Q = 66, .K = 31, .Dk = 20, .causal = true,
            .align = DiagonalAlign::BottomRight, .mask = MaskKind::KeyPadding, .in = Lay::HeadStrided,
            .out = Lay::Bshd, .probs = Lay::HeadStrided}, t);
  run_case({.name = "views-mixed2", .B = 1, .H = 3, .Hk = 1, .Q = 70, .K = 70, .Dk = 33, .Dv = 8,
            .in = Lay::EveryOther, .out = Lay::Padded, .probs = Lay::EveryOther}, t);
}

TEST_P(SdpaCuda, ZeroSize) {
  const DType t = GetParam();
  run_case({.name = "q=0", .B = 2, .H = 2, .Hk = 1, .Q = 0, .K = 9, .Dk = 8}, t);          // dk = dv = 0
  run_case({.name = "k=0", .B = 2, .H = 2, .Hk = 1, .Q = 7, .K = 0, .Dk = 8, .Dv = 5}, t);  // y = 0, dq = 0
  run_case({.name = "k=0-causal", .B = 1, .H = 2, .Hk = 2, .Q = 7, .K = 0, .Dk = 8, .causal = true,
            .align = DiagonalAlign::BottomRight}, t);
  run_case({.name = "b=0", .B = 0, .H = 2, .Hk = 2, .Q = 5, .K = 6, .Dk = 8}, t);
}

TEST_P(SdpaCuda, Larger) {
  const DType t = GetParam();
  run_case({.name = "large-causal", .B = 2, .H = 4, .Hk = 2, .Q = 200, .K = 257, .Dk = 64, .causal = true,
            .align = DiagonalAlign::BottomRight, .in = Lay::Bshd, .out = Lay::Bshd}, t);
}

INSTANTIATE_TEST_SUITE_P(AllDtypes, SdpaCuda, ::testing::Values(DType::F32, DType::F64, DType::F16, DType::BF16),
                         dtype_param_name);

// A row whose keys are all masked gives exactly y = 0, p = 0 and zero gradients
// (checked directly, not only through the reference).
TEST(SdpaCudaSemantics, FullyMaskedRowIsZero) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t Q = 3, K = 5, D = 4;
  SdpaDescriptor d;
  d.dtype = DType::F32;
  d.q_len = Q;
  d.kv_len = K;
  d.head_dim = D;
  d.has_mask = true;
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  const auto qv = bt::random_values(DType::F32, Q * D, rng), kv = bt::random_values(DType::F32, K * D, rng),
             vv = bt::random_values(DType::F32, K * D, rng), dyv = bt::random_values(DType::F32, Q * D, rng);
  std::vector<double> mv(static_cast<size_t>(Q * K), 0.0);
  for (int64_t j = 0; j < K; ++j) mv[static_cast<size_t>(K + j)] = -bt::kInf;  // row 1 fully masked
  Buffer gq = to_device(bt::host_from(DType::F32, qv)), gk = to_device(bt::host_from(DType::F32, kv)),
         gv = to_device(bt::host_from(DType::F32, vv)), gdy = to_device(bt::host_from(DType::F32, dyv)),
         gm = to_device(bt::host_from(DType::F32, mv));
  Buffer gy(Device::cuda(0), Q * D * 4), gp(Device::cuda(0), Q * K * 4);
  auto plan = SdpaPlan::select(kGpu, d, bespoke());
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  SdpaArgs a;
  a.q = gq.view(DType::F32, {1, 1, Q, D});
  a.k = gk.view(DType::F32, {1, 1, K, D});
  a.v = gv.view(DType::F32, {1, 1, K, D});
  a.mask = gm.view(DType::F32, {1, 1, Q, K});
  a.y = gy.view_mut(DType::F32, {1, 1, Q, D});
  a.probs = gp.view_mut(DType::F32, {1, 1, Q, K});
  ASSERT_TRUE(gy.fill_bytes(0xff).is_ok());
  ASSERT_TRUE(gp.fill_bytes(0xff).is_ok());
  Status st = plan->run(kGpu, Workspace{}, a);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(synchronize(kGpu).is_ok());
  const auto y = to_host(gy, DType::F32, Q * D), p = to_host(gp, DType::F32, Q * K);
  for (int64_t e = 0; e < D; ++e) EXPECT_EQ(y.get(D + e), 0.0) << "y[1," << e << "]";
  for (int64_t j = 0; j < K; ++j) EXPECT_EQ(p.get(K + j), 0.0) << "p[1," << j << "]";
  double row0 = 0;
  for (int64_t j = 0; j < K; ++j) row0 += p.get(j);
  EXPECT_NEAR(row0, 1.0, 1e-6);

  auto bplan = SdpaBackwardPlan::select(kGpu, d, bespoke());
  ASSERT_TRUE(bplan.is_ok()) << bplan.status().to_string();
  Buffer ws(Device::cuda(0), bplan->workspace_size());
  Buffer gdq(Device::cuda(0), Q * D * 4), gdk(Device::cuda(0), K * D * 4), gdv(Device::cuda(0), K * D * 4);
  SdpaBackwardArgs b;
  b.dy = gdy.view(DType::F32, {1, 1, Q, D});
  b.q = a.q;
  b.k = a.k;
  b.v = a.v;
  b.probs = gp.view(DType::F32, {1, 1, Q, K});
  b.dq = gdq.view_mut(DType::F32, {1, 1, Q, D});
  b.dk = gdk.view_mut(DType::F32, {1, 1, K, D});
  b.dv = gdv.view_mut(DType::F32, {1, 1, K, D});
  ASSERT_TRUE(gdq.fill_bytes(0xff).is_ok());
  st = bplan->run(kGpu, Workspace(ws.data(), ws.bytes()), b);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(synchronize(kGpu).is_ok());
  const auto dq = to_host(gdq, DType::F32, Q * D);
  for (int64_t e = 0; e < D; ++e) EXPECT_EQ(dq.get(D + e), 0.0) << "dq[1," << e << "]";
  for (int64_t e = 0; e < D; ++e) EXPECT_TRUE(std::isfinite(dq.get(e))) << "dq[0," << e << "]";
}

// The backward's ds workspace: too small is an error before any launch.
TEST(SdpaCudaSemantics, BackwardWorkspaceTooSmall) {
  BT_SKIP_WITHOUT_GPU();
  SdpaDescriptor d;
  d.dtype = DType::BF16;
  d.q_len = 8;
  d.kv_len = 9;
  d.head_dim = 16;
  auto bplan = SdpaBackwardPlan::select(kGpu, d, bespoke());
  ASSERT_TRUE(bplan.is_ok()) << bplan.status().to_string();
  EXPECT_GE(bplan->workspace_size(), size_t{8 * 9 * 4});
  Buffer q(Device::cuda(0), 8 * 16 * 2), k(Device::cuda(0), 9 * 16 * 2), v(Device::cuda(0), 9 * 16 * 2),
      dy(Device::cuda(0), 8 * 16 * 2), p(Device::cuda(0), 8 * 9 * 4), dq(Device::cuda(0), 8 * 16 * 2),
      dk(Device::cuda(0), 9 * 16 * 2), dv(Device::cuda(0), 9 * 16 * 2), ws(Device::cuda(0), 8);
  SdpaBackwardArgs b;
  b.dy = dy.view(DType::BF16, {1, 1, 8, 16});
  b.q = q.view(DType::BF16, {1, 1, 8, 16});
  b.k = k.view(DType::BF16, {1, 1, 9, 16});
  b.v = v.view(DType::BF16, {1, 1, 9, 16});
  b.probs = p.view(DType::F32, {1, 1, 8, 9});
  b.dq = dq.view_mut(DType::BF16, {1, 1, 8, 16});
  b.dk = dk.view_mut(DType::BF16, {1, 1, 9, 16});
  b.dv = dv.view_mut(DType::BF16, {1, 1, 9, 16});
  const Status st = bplan->run(kGpu, Workspace(ws.data(), ws.bytes()), b);
  EXPECT_EQ(st.code(), StatusCode::WorkspaceTooSmall) << st.to_string();
}

}  // namespace
