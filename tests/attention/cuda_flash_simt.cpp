// FlashSdpaPlan / FlashSdpaBackwardPlan on the SIMT path (f32, f64;
// Backend::Bespoke) against the CPU reference plans on the same random inputs:
//   head dims 32, 40, 64, 72, 128, 200, 256; Q != K with causal top-left and
//   bottom-right (including rows with no key); GQA ratios 1, 2, 4 and MQA;
//   sliding windows left / right / both / with causal; softcap; ALiBi [H] and
//   [B,H]; additive masks (full, [B,1,1,K] key padding with -inf, [1,1,Q,K],
//   -inf entries and fully masked rows); varlen batches with uneven and
//   zero-length sequences; [B,S,H,D] storage; padded (gapped) outputs;
//   zero-size problems; long rows; many query / key tiles.
// The backward consumes the CUDA forward's y and lse (as a training step would)
// and is compared with the reference's exact gradients.
// Every output is poisoned before each run (NaN first, a finite pattern
// second) and every plan runs twice: both runs must write every element, leave
// the gaps of strided outputs alone and agree bit for bit (determinism).
// Tolerances relative to ||ref|| (DESIGN.md): f64 1e-12, f32 1e-5 for y, dq,
// dk, dv; lse is an f32 output for both dtypes: 1e-6. (Where every row sees
// exactly one key the exact dq / dk are 0 and rel_error is absolute: the
// kernel's dsum = rowsum(dy * y) and dp = dy . v differ by rounding only.)
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/attention_helpers.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/flash_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::bespoke, bt::check_close, bt::device_storage, bt::kGpu, bt::random_in, bt::run_twice;
using OutBuf = bt::DeviceOut;
using Case = bt::FlashCase;
using MaskKind = bt::FlashMask;

constexpr double kLseTol = 1e-6;

// Worst errors seen, per dtype (0 = f32, 1 = f64) and output.
struct Worst {
  double y = 0, lse = 0, dq = 0, dk = 0, dv = 0;
};
Worst g_worst[2];
int g_cases[2] = {0, 0};

bt::Layout out_layout(const Case& c, const Dims& shape) {
  if (c.padded_out) return bt::padded(shape, 1);  // the last axis keeps stride 1
  return bt::seq_layout(c, shape);
}

// One case, one dtype: forward and backward against the reference. Returns
// an empty string on success.
std::string run_case(const Case& c, DType dt) {
  const int wi = dt == DType::F64 ? 1 : 0;
  Worst& w = g_worst[wi];
  ++g_cases[wi];
  const double tol = bt::tolerance(dt);
  const FlashSdpaDescriptor d = bt::flash_desc(c, dt);

  bt::Rng rng = bt::make_rng(bt::fresh_seed(c.name));
  const Dims qs = bt::flash_q_shape(d), kvs = bt::flash_kv_shape(d), ls = bt::flash_lse_shape(d);
  const bt::FlashInputs in = bt::random_case_inputs(
      c, d, rng, c.qrange, [&](bt::Rng& r) { return bt::make_flash_mask(c.mask, Dims{d.batch, d.heads, d.q_len, d.kv_len}, r); });
  const bt::HostTensor dyh = random_in(dt, bt::seq_layout(c, qs), rng);

  // Reference.
  const bt::FlashOutputs ref = bt::cpu_flash_forward(d, in);
  const bt::FlashGrads gref = bt::cpu_flash_backward(d, in, ref, dyh);

  // ---- CUDA forward
  auto plan = FlashSdpaPlan::select(kGpu, d, bespoke());
  if (!plan) return "forward select: " + plan.status().to_string();
  if (plan->sku().backend != Backend::Bespoke) return "forward: not the bespoke backend";
  const bt::DeviceFlashInputs dev(d, in);
  FlashSdpaArgs a;
  dev.bind(a);
  const bt::Layout yL = out_layout(c, qs);
  const bt::Layout lL = c.padded_out ? bt::padded(ls, 1) : bt::contiguous(ls);
  Buffer by = device_storage(dt, yL), bl = device_storage(DType::F32, lL);
  a.y = bt::view_mut(by, dt, yL);
  a.lse = bt::view_mut(bl, DType::F32, lL);
  if (plan->workspace_size() != 0) return "forward: unexpected workspace";
  std::vector<OutBuf> fouts{{"y", &by, dt, yL}, {"lse", &bl, DType::F32, lL}};
  std::vector<bt::HostBuffer> fres;
  std::string err = run_twice([&] { return plan->run(kGpu, Workspace{}, a); }, fouts, &fres);
  if (!err.empty()) return "forward " + err;
  std::string msg;
  msg += check_close("y", bt::gather(fres[0], yL), ref.y.values(), tol, &w.y);
  msg += check_close("lse", bt::gather(fres[1], lL), ref.lse.values(), kLseTol, &w.lse);
  if (!msg.empty()) return "forward " + msg;

  // ---- CUDA backward on the CUDA forward's y and lse (run 2 left them in by / bl,
  // bit-identical to run 1).
  auto bplan = FlashSdpaBackwardPlan::select(kGpu, d, bespoke());
  if (!bplan) return "backward select: " + bplan.status().to_string();
  Buffer bdy = bt::to_device(dyh.buf, bt::kFlashMinBytes);
  const bt::Layout dqL = out_layout(c, qs), dkvL = out_layout(c, kvs);
  Buffer bdq = device_storage(dt, dqL), bdk = device_storage(dt, dkvL), bdv = device_storage(dt, dkvL);
  Buffer ws = bt::device_workspace(bplan->workspace_size());
  FlashSdpaBackwardArgs g;
  g.dy = bt::view(bdy, dt, dyh.L);
  dev.bind(g);
  g.y = bt::view(by, dt, yL);
  g.lse = bt::view(bl, DType::F32, lL);
  g.dq = bt::view_mut(bdq, dt, dqL);
  g.dk = bt::view_mut(bdk, dt, dkvL);
  g.dv = bt::view_mut(bdv, dt, dkvL);
  std::vector<OutBuf> bouts{{"dq", &bdq, dt, dqL}, {"dk", &bdk, dt, dkvL}, {"dv", &bdv, dt, dkvL}};
  std::vector<bt::HostBuffer> bres;
  err = run_twice([&] { return bplan->run(kGpu, Workspace(ws.data(), bplan->workspace_size()), g); }, bouts, &bres);
  if (!err.empty()) return "backward " + err;
  msg += check_close("dq", bt::gather(bres[0], dqL), gref.dq.values(), tol, &w.dq);
  msg += check_close("dk", bt::gather(bres[1], dkvL), gref.dk.values(), tol, &w.dk);
  msg += check_close("dv", bt::gather(bres[2], dkvL), gref.dv.values(), tol, &w.dv);
  if (!msg.empty()) return "backward " + msg;
  std::printf("[flash-simt] %-44s %s  y %.1e lse %.1e dq %.1e dk %.1e dv %.1e\n", c.name.c_str(),
              dt == DType::F64 ? "f64" : "f32", bt::rel_error(bt::gather(fres[0], yL), ref.y.values()),
              bt::rel_error(bt::gather(fres[1], lL), ref.lse.values()),
              bt::rel_error(bt::gather(bres[0], dqL), gref.dq.values()),
              bt::rel_error(bt::gather(bres[1], dkvL), gref.dk.values()),
              bt::rel_error(bt::gather(bres[2], dkvL), gref.dv.values()));
  return "";
}

void run_all(const std::vector<Case>& cases) {
  for (const Case& c : cases)
    for (DType dt : {DType::F32, DType::F64}) {
      SCOPED_TRACE(c.name + (dt == DType::F32 ? " f32" : " f64"));
      const std::string e = run_case(c, dt);
      EXPECT_TRUE(e.empty()) << c.name << (dt == DType::F32 ? " f32: " : " f64: ") << e;
    }
  for (int i = 0; i < 2; ++i)
    std::printf("[flash-simt] %s after %d cases, worst rel errors: y %.2e lse %.2e dq %.2e dk %.2e dv %.2e\n",
                i ? "f64" : "f32", g_cases[i], g_worst[i].y, g_worst[i].lse, g_worst[i].dq, g_worst[i].dk,
                g_worst[i].dv);
}

}  // namespace

TEST(FlashSimt, SkuAndWorkspace) {
  BT_SKIP_WITHOUT_GPU();
  for (DType dt : {DType::F32, DType::F64}) {
    Case c;
    c.B = 2, c.H = 4, c.Hk = 2, c.Q = 10, c.K = 12, c.D = 64;
    const FlashSdpaDescriptor d = bt::flash_desc(c, dt);
    auto f = FlashSdpaPlan::select(kGpu, d, bespoke());
    ASSERT_TRUE(f.is_ok()) << f.status().to_string();
    EXPECT_EQ(f->sku().backend, Backend::Bespoke);
    auto b = FlashSdpaBackwardPlan::select(kGpu, d, bespoke());
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_GT(b->workspace_size(), 0u);
  }
}

TEST(FlashSimt, HeadDims) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  for (int64_t D : {32, 40, 64, 72, 128, 136, 200, 256}) {
    Case c;
    c.name = "D" + std::to_string(D);
    c.B = 2, c.H = 2, c.Hk = 1, c.Q = 37, c.K = 45, c.D = D;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashSimt, CausalAlignments) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  for (auto [Q, K] : {std::pair<int64_t, int64_t>{50, 77}, {77, 50}, {64, 64}, {1, 70}, {70, 1}})
    for (DiagonalAlign al : {DiagonalAlign::TopLeft, DiagonalAlign::BottomRight}) {
      Case c;
      c.name = "causal Q" + std::to_string(Q) + " K" + std::to_string(K) + (al == DiagonalAlign::TopLeft ? " TL" : " BR");
      c.B = 2, c.H = 2, c.Hk = 2, c.Q = Q, c.K = K, c.D = 64;
      c.causal = true;
      c.align = al;
      cs.push_back(c);
    }
  run_all(cs);
}

TEST(FlashSimt, GroupedQueryHeads) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  for (auto [H, Hk] : {std::pair<int64_t, int64_t>{4, 4}, {4, 2}, {8, 2}, {6, 1}}) {
    Case c;
    c.name = "H" + std::to_string(H) + " Hk" + std::to_string(Hk);
    c.B = 2, c.H = H, c.Hk = Hk, c.Q = 33, c.K = 70, c.D = 40;
    c.causal = Hk == 2;
    c.align = DiagonalAlign::BottomRight;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashSimt, SlidingWindows) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  struct W {
    int64_t wl, wr;
    bool causal;
    DiagonalAlign al;
    int64_t Q, K;
  };
  for (W x : {W{8, -1, false, DiagonalAlign::TopLeft, 90, 90}, W{-1, 5, false, DiagonalAlign::TopLeft, 90, 90},
              W{6, 3, false, DiagonalAlign::TopLeft, 70, 100}, W{10, -1, true, DiagonalAlign::TopLeft, 100, 100},
              W{0, 0, false, DiagonalAlign::TopLeft, 40, 40}, W{16, 4, false, DiagonalAlign::BottomRight, 40, 130},
              W{20, -1, true, DiagonalAlign::BottomRight, 130, 40}, W{0, -1, true, DiagonalAlign::BottomRight, 33, 90}}) {
    Case c;
    c.name = "window " + std::to_string(x.wl) + "," + std::to_string(x.wr) + (x.causal ? " causal" : "") +
             (x.al == DiagonalAlign::TopLeft ? " TL" : " BR") + " Q" + std::to_string(x.Q) + " K" + std::to_string(x.K);
    c.B = 1, c.H = 2, c.Hk = 1, c.Q = x.Q, c.K = x.K, c.D = 32;
    c.wl = x.wl, c.wr = x.wr, c.causal = x.causal, c.align = x.al;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashSimt, SoftcapAndAlibi) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  {
    Case c;
    c.name = "softcap 2";
    c.B = 2, c.H = 2, c.Hk = 1, c.Q = 45, c.K = 60, c.D = 64, c.softcap = 2.0, c.scale = 0.5, c.qrange = 2.0;
    cs.push_back(c);
    c.name = "softcap 5 causal";
    c.softcap = 5.0, c.causal = true, c.scale = std::nullopt, c.D = 128;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "alibi [H]";
    c.B = 2, c.H = 4, c.Hk = 2, c.Q = 50, c.K = 50, c.D = 64, c.alibi = AlibiMode::PerHead;
    cs.push_back(c);
    c.name = "alibi [B,H] causal BR";
    c.alibi = AlibiMode::PerBatchHead, c.causal = true, c.align = DiagonalAlign::BottomRight, c.Q = 30, c.K = 75;
    cs.push_back(c);
    c.name = "alibi [H] + softcap + window";
    c.alibi = AlibiMode::PerHead, c.causal = false, c.softcap = 3.0, c.wl = 12, c.wr = 7;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "negative scale";
    c.B = 1, c.H = 2, c.Hk = 2, c.Q = 20, c.K = 36, c.D = 48, c.scale = -0.3;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashSimt, Masks) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  for (MaskKind k : {MaskKind::Full, MaskKind::KeyPad, MaskKind::QK, MaskKind::NegInf}) {
    Case c;
    c.name = std::string("mask ") + (k == MaskKind::Full     ? "full"
                                     : k == MaskKind::KeyPad ? "[B,1,1,K] key padding"
                                     : k == MaskKind::QK     ? "[1,1,Q,K]"
                                                             : "-inf rows");
    c.B = 3, c.H = 2, c.Hk = 1, c.Q = 40, c.K = 66, c.D = 64, c.mask = k;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "mask -inf rows + causal BR + alibi";
    c.B = 2, c.H = 2, c.Hk = 2, c.Q = 40, c.K = 50, c.D = 32, c.mask = MaskKind::NegInf, c.causal = true;
    c.align = DiagonalAlign::BottomRight, c.alibi = AlibiMode::PerBatchHead;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashSimt, Varlen) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  {
    Case c;
    c.name = "varlen uneven + empty";
    c.H = 4, c.Hk = 2, c.D = 64;
    c.q_lens = {5, 0, 70, 33, 17};
    c.kv_lens = {9, 12, 70, 0, 40};
    cs.push_back(c);
    c.name = "varlen causal BR";
    c.causal = true, c.align = DiagonalAlign::BottomRight;
    cs.push_back(c);
    c.name = "varlen causal TL + window + alibi [B,H]";
    c.align = DiagonalAlign::TopLeft, c.wl = 9, c.alibi = AlibiMode::PerBatchHead, c.D = 40;
    cs.push_back(c);
    c.name = "varlen softcap MQA padded outputs";
    c.causal = false, c.wl = -1, c.alibi = AlibiMode::None, c.softcap = 4.0, c.H = 3, c.Hk = 1, c.padded_out = true;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashSimt, StridedStorage) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  Case c;
  c.name = "[B,S,H,D]";
  c.B = 2, c.H = 4, c.Hk = 2, c.Q = 41, c.K = 53, c.D = 72, c.bshd = true, c.causal = true;
  cs.push_back(c);
  c.name = "padded outputs";
  c.bshd = false, c.padded_out = true, c.mask = MaskKind::KeyPad, c.B = 3;
  cs.push_back(c);
  run_all(cs);
}

TEST(FlashSimt, ZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  Case c;
  c.name = "B0";
  c.B = 0, c.H = 2, c.Hk = 1, c.Q = 5, c.K = 7, c.D = 32;
  cs.push_back(c);
  c.name = "Q0 (dk = dv = 0)";
  c.B = 2, c.Q = 0, c.K = 7;
  cs.push_back(c);
  c.name = "K0 (y = 0, lse = -inf, dq = 0)";
  c.Q = 9, c.K = 0;
  cs.push_back(c);
  c.name = "varlen all empty";
  c.q_lens = {0, 0};
  c.kv_lens = {0, 0};
  cs.push_back(c);
  run_all(cs);
}

TEST(FlashSimt, LongRowsAndManyTiles) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  Case c;
  c.name = "long rows K2048 D128";
  c.B = 1, c.H = 2, c.Hk = 1, c.Q = 70, c.K = 2048, c.D = 128, c.qrange = 2.0;
  cs.push_back(c);
  c.name = "many tiles Q300 K260 causal D256";
  c.Q = 300, c.K = 260, c.D = 256, c.causal = true, c.qrange = 1.0;
  cs.push_back(c);
  c.name = "many tiles Q257 K129 sharp scale";
  c.Q = 257, c.K = 129, c.D = 32, c.causal = false, c.scale = 2.0, c.H = 3, c.Hk = 3;
  cs.push_back(c);
  run_all(cs);
}
