// FlashSdpaBackwardPlan on the tensor-core path (f16 / bf16, Backend::Bespoke)
// against the CPU reference backward on the same inputs (rounded to the dtype).
// The CUDA backward is fed the CPU reference forward's y (rounded to the dtype)
// and lse (f32), uploaded, so this test does not depend on the CUDA forward.
//   head dims 32..256 (incl. 40, 72, 136, 200: padded inside the kernels);
//   Q != K, causal top-left / bottom-right (incl. rows with no key), GQA ratios
//   1, 2, 4 and MQA, sliding windows (left / right / both / with causal),
//   softcap, ALiBi [H] and [B,H], additive masks (full, [B,1,1,K] key padding
//   with -inf, [1,1,Q,K] broadcast, -inf entries and fully masked rows), varlen
//   batches with uneven and zero-length sequences, [B,S,H,D] storage, padded
//   (gapped, 16-byte aligned) outputs, zero-size problems, many key / query
//   tiles.
// Every output is poisoned before each run (NaN first, a finite pattern second)
// and every plan runs twice: both runs must write every element, leave the gaps
// of strided outputs alone and agree bit for bit (determinism).
// Tolerances relative to ||ref|| (DESIGN.md): f16 2e-3, bf16 1e-2.
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

// Substring the backward plan's variant must hold (null: any tensor-core variant).
const char* g_want_variant = nullptr;

// Worst errors seen, per dtype (0 = f16, 1 = bf16).
struct Worst {
  double dq = 0, dk = 0, dv = 0;
};
Worst g_worst[2];
int g_cases[2] = {0, 0};

std::string dtname(DType t) { return t == DType::F16 ? "f16" : "bf16"; }

// Row-major with 8 elements of padding after every axis (strides stay
// multiples of 8 elements, the start 16-byte aligned): gaps between rows,
// heads and batches that the kernels must not touch.
bt::Layout aligned_padded(const Dims& shape) {
  bt::Layout L;
  L.shape = shape;
  L.strides = Dims::of_rank(shape.rank);
  int64_t acc = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    L.strides[i] = acc;
    acc = acc * shape[i] + 8;
  }
  L.offset = 8;
  L.storage = acc + 16;
  L.name = "aligned-padded";
  return L;
}
bt::Layout out_layout(const Case& c, const Dims& shape) {
  if (c.padded_out) return aligned_padded(shape);
  return bt::seq_layout(c, shape);
}

// One case, one dtype. Returns an empty string on success.
std::string run_case(const Case& c, DType dt) {
  const int wi = dt == DType::BF16 ? 1 : 0;
  Worst& w = g_worst[wi];
  ++g_cases[wi];
  const double tol = bt::tolerance(dt);
  const FlashSdpaDescriptor d = bt::flash_desc(c, dt);

  bt::Rng rng = bt::make_rng(bt::fresh_seed(c.name + dtname(dt)));
  const Dims qs = bt::flash_q_shape(d), kvs = bt::flash_kv_shape(d), ls = bt::flash_lse_shape(d);
  const bt::FlashInputs in = bt::random_case_inputs(
      c, d, rng, c.qrange, [&](bt::Rng& r) { return bt::make_flash_mask(c.mask, Dims{d.batch, d.heads, d.q_len, d.kv_len}, r); });
  const bt::HostTensor dyh = random_in(dt, bt::seq_layout(c, qs), rng);

  // Reference forward (y rounded to the dtype, lse f32) and backward (exact, in double).
  const bt::FlashOutputs ref = bt::cpu_flash_forward(d, in);
  const bt::FlashGrads gref = bt::cpu_flash_backward(d, in, ref, dyh);
  // y in the case's storage layout.
  bt::HostTensor yh(dt, bt::seq_layout(c, qs));
  yh.set_values(ref.y.values());

  auto bplan = FlashSdpaBackwardPlan::select(kGpu, d, bespoke());
  if (!bplan) return "backward select: " + bplan.status().to_string();
  if (bplan->sku().backend != Backend::Bespoke) return "backward: not the bespoke backend";
  if (bplan->sku().variant.find("mma") == std::string::npos)
    return "backward: expected the tensor-core variant, got " + bplan->sku().variant;
  if (g_want_variant != nullptr && bplan->sku().variant.find(g_want_variant) == std::string::npos)
    return std::string("backward: expected a variant with ") + g_want_variant + ", got " + bplan->sku().variant;

  const bt::DeviceFlashInputs dev(d, in);
  Buffer by = bt::to_device(yh.buf, bt::kFlashMinBytes), bl = bt::to_device(ref.lse.buf, bt::kFlashMinBytes);
  Buffer bdy = bt::to_device(dyh.buf, bt::kFlashMinBytes);
  FlashSdpaBackwardArgs g;
  dev.bind(g);
  g.y = bt::view(by, dt, yh.L);
  g.lse = bt::view(bl, DType::F32, ref.lse.L);
  g.dy = bt::view(bdy, dt, dyh.L);
  const bt::Layout dqL = out_layout(c, qs), dkvL = out_layout(c, kvs);
  Buffer bdq = device_storage(dt, dqL), bdk = device_storage(dt, dkvL), bdv = device_storage(dt, dkvL);
  g.dq = bt::view_mut(bdq, dt, dqL);
  g.dk = bt::view_mut(bdk, dt, dkvL);
  g.dv = bt::view_mut(bdv, dt, dkvL);
  const Status ci = bplan->can_implement(g);
  if (!ci.is_ok()) return "can_implement: " + ci.to_string();
  Buffer ws = bt::device_workspace(bplan->workspace_size());
  std::vector<OutBuf> outs{{"dq", &bdq, dt, dqL}, {"dk", &bdk, dt, dkvL}, {"dv", &bdv, dt, dkvL}};
  std::vector<bt::HostBuffer> res;
  const std::string err =
      run_twice([&] { return bplan->run(kGpu, Workspace(ws.data(), bplan->workspace_size()), g); }, outs, &res);
  if (!err.empty()) return err;
  const auto dq = bt::gather(res[0], dqL), dk = bt::gather(res[1], dkvL), dv = bt::gather(res[2], dkvL);
  std::string msg;
  msg += check_close("dq", dq, gref.dq.values(), tol, &w.dq);
  msg += check_close("dk", dk, gref.dk.values(), tol, &w.dk);
  msg += check_close("dv", dv, gref.dv.values(), tol, &w.dv);
  if (!msg.empty()) return msg;
  std::printf("[flash-mma-bwd] %-46s %-4s dq %.1e dk %.1e dv %.1e  (%s)\n", c.name.c_str(), dtname(dt).c_str(),
              bt::rel_error(dq, gref.dq.values()), bt::rel_error(dk, gref.dk.values()),
              bt::rel_error(dv, gref.dv.values()), bplan->sku().variant.c_str());
  return "";
}

void run_all(const std::vector<Case>& cases) {
  for (const Case& c : cases)
    for (DType dt : {DType::F16, DType::BF16}) {
      SCOPED_TRACE(c.name + " " + dtname(dt));
      const std::string e = run_case(c, dt);
      EXPECT_TRUE(e.empty()) << c.name << " " << dtname(dt) << ": " << e;
    }
  for (int i = 0; i < 2; ++i)
    std::printf("[flash-mma-bwd] %s after %d cases, worst rel errors: dq %.2e dk %.2e dv %.2e\n", i ? "bf16" : "f16",
                g_cases[i], g_worst[i].dq, g_worst[i].dk, g_worst[i].dv);
}

}  // namespace

TEST(FlashMmaBwd, SkuAndWorkspace) {
  BT_SKIP_WITHOUT_GPU();
  for (DType dt : {DType::F16, DType::BF16}) {
    Case c;
    c.B = 2, c.H = 4, c.Hk = 2, c.Q = 10, c.K = 12, c.D = 64;
    auto b = FlashSdpaBackwardPlan::select(kGpu, bt::flash_desc(c, dt), bespoke());
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ(b->sku().backend, Backend::Bespoke);
    EXPECT_NE(b->sku().variant.find("mma"), std::string::npos) << b->sku().variant;
    EXPECT_GT(b->workspace_size(), 0u);
  }
}

TEST(FlashMmaBwd, HeadDims) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  for (int64_t D : {32, 40, 64, 72, 96, 128, 136, 160, 192, 200, 224, 256}) {
    Case c;
    c.name = "D" + std::to_string(D);
    c.B = 2, c.H = 2, c.Hk = 1, c.Q = 77, c.K = 150, c.D = D;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashMmaBwd, CausalAlignments) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  for (auto [Q, K] : {std::pair<int64_t, int64_t>{50, 77}, {77, 50}, {200, 200}, {1, 70}, {70, 1}, {130, 300}, {300, 130}})
    for (DiagonalAlign al : {DiagonalAlign::TopLeft, DiagonalAlign::BottomRight}) {
      Case c;
      c.name = "causal Q" + std::to_string(Q) + " K" + std::to_string(K) + (al == DiagonalAlign::TopLeft ? " TL" : " BR");
      c.B = 2, c.H = 2, c.Hk = 2, c.Q = Q, c.K = K, c.D = 64;
      c.causal = true;
      c.align = al;
      cs.push_back(c);
    }
  {
    Case c;
    c.name = "causal D256 Q190 K170 BR";
    c.B = 1, c.H = 2, c.Hk = 1, c.Q = 190, c.K = 170, c.D = 256, c.causal = true, c.align = DiagonalAlign::BottomRight;
    cs.push_back(c);
    c.name = "causal D160 Q150 K150 TL";
    c.Q = 150, c.K = 150, c.D = 160, c.align = DiagonalAlign::TopLeft;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashMmaBwd, GroupedQueryHeads) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  for (auto [H, Hk] : {std::pair<int64_t, int64_t>{4, 4}, {4, 2}, {8, 2}, {6, 1}}) {
    Case c;
    c.name = "H" + std::to_string(H) + " Hk" + std::to_string(Hk);
    c.B = 2, c.H = H, c.Hk = Hk, c.Q = 90, c.K = 140, c.D = 40;
    c.causal = Hk == 2;
    c.align = DiagonalAlign::BottomRight;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "MQA H4 Hk1 D192";
    c.B = 1, c.H = 4, c.Hk = 1, c.Q = 70, c.K = 100, c.D = 192;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashMmaBwd, SlidingWindows) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  struct W {
    int64_t wl, wr;
    bool causal;
    DiagonalAlign al;
    int64_t Q, K;
  };
  for (W x : {W{8, -1, false, DiagonalAlign::TopLeft, 190, 190}, W{-1, 5, false, DiagonalAlign::TopLeft, 190, 190},
              W{6, 3, false, DiagonalAlign::TopLeft, 70, 300}, W{40, -1, true, DiagonalAlign::TopLeft, 260, 260},
              W{0, 0, false, DiagonalAlign::TopLeft, 140, 140}, W{16, 4, false, DiagonalAlign::BottomRight, 40, 330},
              W{20, -1, true, DiagonalAlign::BottomRight, 330, 40}, W{0, -1, true, DiagonalAlign::BottomRight, 33, 290},
              W{100, 70, false, DiagonalAlign::TopLeft, 300, 300}}) {
    Case c;
    c.name = "window " + std::to_string(x.wl) + "," + std::to_string(x.wr) + (x.causal ? " causal" : "") +
             (x.al == DiagonalAlign::TopLeft ? " TL" : " BR") + " Q" + std::to_string(x.Q) + " K" + std::to_string(x.K);
    c.B = 1, c.H = 2, c.Hk = 1, c.Q = x.Q, c.K = x.K, c.D = 32;
    c.wl = x.wl, c.wr = x.wr, c.causal = x.causal, c.align = x.al;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashMmaBwd, SoftcapAndAlibi) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  {
    Case c;
    c.name = "softcap 2";
    c.B = 2, c.H = 2, c.Hk = 1, c.Q = 145, c.K = 160, c.D = 64, c.softcap = 2.0, c.scale = 0.5, c.qrange = 2.0;
    cs.push_back(c);
    c.name = "softcap 5 causal D128";
    c.softcap = 5.0, c.causal = true, c.scale = std::nullopt, c.D = 128;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "alibi [H]";
    c.B = 2, c.H = 4, c.Hk = 2, c.Q = 150, c.K = 150, c.D = 64, c.alibi = AlibiMode::PerHead;
    cs.push_back(c);
    c.name = "alibi [B,H] causal BR";
    c.alibi = AlibiMode::PerBatchHead, c.causal = true, c.align = DiagonalAlign::BottomRight, c.Q = 80, c.K = 175;
    cs.push_back(c);
    c.name = "alibi [H] + softcap + window D224";
    c.alibi = AlibiMode::PerHead, c.causal = false, c.softcap = 3.0, c.wl = 12, c.wr = 7, c.D = 224;
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

TEST(FlashMmaBwd, Masks) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  for (MaskKind k : {MaskKind::Full, MaskKind::KeyPad, MaskKind::QK, MaskKind::NegInf}) {
    Case c;
    c.name = std::string("mask ") + (k == MaskKind::Full     ? "full"
                                     : k == MaskKind::KeyPad ? "[B,1,1,K] key padding"
                                     : k == MaskKind::QK     ? "[1,1,Q,K]"
                                                             : "-inf rows");
    c.B = 3, c.H = 2, c.Hk = 1, c.Q = 80, c.K = 140, c.D = 64, c.mask = k;
    cs.push_back(c);
  }
  {
    Case c;
    c.name = "mask -inf rows + causal BR + alibi";
    c.B = 2, c.H = 2, c.Hk = 2, c.Q = 90, c.K = 150, c.D = 32, c.mask = MaskKind::NegInf, c.causal = true;
    c.align = DiagonalAlign::BottomRight, c.alibi = AlibiMode::PerBatchHead;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashMmaBwd, Varlen) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  {
    Case c;
    c.name = "varlen uneven + empty";
    c.H = 4, c.Hk = 2, c.D = 64;
    c.q_lens = {5, 0, 170, 33, 17, 130};
    c.kv_lens = {9, 12, 150, 0, 140, 260};
    cs.push_back(c);
    c.name = "varlen causal BR";
    c.causal = true, c.align = DiagonalAlign::BottomRight;
    cs.push_back(c);
    c.name = "varlen causal TL + window + alibi [B,H]";
    c.align = DiagonalAlign::TopLeft, c.wl = 9, c.alibi = AlibiMode::PerBatchHead, c.D = 40;
    cs.push_back(c);
    c.name = "varlen softcap MQA padded outputs D136";
    c.causal = false, c.wl = -1, c.alibi = AlibiMode::None, c.softcap = 4.0, c.H = 3, c.Hk = 1, c.padded_out = true;
    c.D = 136;
    cs.push_back(c);
  }
  run_all(cs);
}

TEST(FlashMmaBwd, StridedStorage) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  Case c;
  c.name = "[B,S,H,D]";
  c.B = 2, c.H = 4, c.Hk = 2, c.Q = 141, c.K = 153, c.D = 72, c.bshd = true, c.causal = true;
  cs.push_back(c);
  c.name = "[B,S,H,D] non-causal D128";
  c.causal = false, c.D = 128;
  cs.push_back(c);
  c.name = "padded outputs";
  c.bshd = false, c.padded_out = true, c.mask = MaskKind::KeyPad, c.B = 3, c.D = 72;
  cs.push_back(c);
  run_all(cs);
}

TEST(FlashMmaBwd, ZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Case> cs;
  Case c;
  c.name = "B0";
  c.B = 0, c.H = 2, c.Hk = 1, c.Q = 5, c.K = 7, c.D = 32;
  cs.push_back(c);
  c.name = "Q0 (dk = dv = 0)";
  c.B = 2, c.Q = 0, c.K = 7;
  cs.push_back(c);
  c.name = "K0 (dq = 0)";
  c.Q = 9, c.K = 0;
  cs.push_back(c);
  c.name = "varlen all empty";
  c.q_lens = {0, 0};
  c.kv_lens = {0, 0};
  cs.push_back(c);
  run_all(cs);
}

TEST(FlashMmaBwd, ManyTilesAndDeterminism) {
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
  c.name = "GQA Q512 K512 H8 Hk2 D128";
  c.B = 1, c.Q = 512, c.K = 512, c.D = 128, c.H = 8, c.Hk = 2, c.scale = std::nullopt;
  cs.push_back(c);
  run_all(cs);
}

// ---- Hopper path (wgmma + TMA, sm_90 with the sm_90a target built) ------------------
namespace {

// Problems the Hopper backward takes: head dims 64 / 128 and padded 56 / 96, dense, no mask,
// ALiBi or softcap.
std::vector<Case> hopper_cases() {
  std::vector<Case> cs;
  for (int64_t D : {64, 128, 56, 96}) {
    const std::string dn = " D" + std::to_string(D);
    Case c;
    c.D = D;
    c.name = "plain odd sizes" + dn;
    c.B = 2, c.H = 3, c.Hk = 3, c.Q = 150, c.K = 141;
    cs.push_back(c);
    c.name = "tile multiples" + dn;
    c.B = 1, c.H = 2, c.Hk = 2, c.Q = 256, c.K = 256;
    cs.push_back(c);
    for (auto al : {DiagonalAlign::TopLeft, DiagonalAlign::BottomRight})
      for (auto [Q, K] : {std::pair<int64_t, int64_t>{200, 200}, {100, 300}, {300, 100}, {129, 64}, {1, 333}}) {
        c = Case{};
        c.D = D;
        c.name = std::string("causal ") + (al == DiagonalAlign::TopLeft ? "tl" : "br") + " Q" + std::to_string(Q) + " K" +
                 std::to_string(K) + dn;
        c.B = 1, c.H = 2, c.Hk = 1, c.Q = Q, c.K = K, c.causal = true, c.align = al;
        cs.push_back(c);
      }
    c = Case{};
    c.D = D;
    c.name = "GQA 4 long keys" + dn;
    c.B = 1, c.H = 8, c.Hk = 2, c.Q = 300, c.K = 700;
    cs.push_back(c);
    c.name = "MQA" + dn;
    c.B = 2, c.H = 6, c.Hk = 1, c.Q = 200, c.K = 90;
    cs.push_back(c);
    c = Case{};
    c.D = D;
    c.name = "window both" + dn;
    c.B = 1, c.H = 3, c.Hk = 1, c.Q = 257, c.K = 400, c.wl = 37, c.wr = 5;
    cs.push_back(c);
    c.name = "window left causal br" + dn;
    c.wl = 100, c.wr = -1, c.causal = true, c.align = DiagonalAlign::BottomRight, c.Q = 300, c.K = 500;
    cs.push_back(c);
    c = Case{};
    c.D = D;
    c.name = "[B,S,H,D] causal" + dn;
    c.B = 2, c.H = 4, c.Hk = 2, c.Q = 150, c.K = 170, c.bshd = true, c.causal = true;
    cs.push_back(c);
    c.name = "padded outputs" + dn;
    c.bshd = false, c.padded_out = true, c.causal = false;
    cs.push_back(c);
    c = Case{};
    c.D = D;
    c.name = "Q0 (dk = dv = 0)" + dn;
    c.B = 2, c.H = 2, c.Hk = 1, c.Q = 0, c.K = 130;
    cs.push_back(c);
    c.name = "K0 (dq = 0)" + dn;
    c.Q = 140, c.K = 0;
    cs.push_back(c);
    c.name = "br causal rows without keys" + dn;
    c.Q = 300, c.K = 40, c.causal = true, c.align = DiagonalAlign::BottomRight;
    cs.push_back(c);
    c = Case{};
    c.D = D;
    c.name = "many tiles sharp scale" + dn;
    c.B = 1, c.H = 2, c.Hk = 1, c.Q = 700, c.K = 900, c.scale = 2.0 / std::sqrt(static_cast<double>(D)), c.qrange = 2.0;
    cs.push_back(c);
  }
  return cs;
}
}  // namespace

TEST(FlashMmaBwd, HopperWgmmaPath) {
  BT_SKIP_WITHOUT_GPU();
  if (!bt::device_is_sm90()) GTEST_SKIP() << "the wgmma path needs an sm_90 device";
  g_want_variant = "wgmma-tma-bwd";
  run_all(hopper_cases());
  g_want_variant = nullptr;
}

// The same problems on the mma.sync kernels (the path of other GPUs).
TEST(FlashMmaBwd, MmaPathWithWgmmaOff) {
  BT_SKIP_WITHOUT_GPU();
  setenv("BARACUDA_FLASH_BWD_WGMMA", "0", 1);
  g_want_variant = "mma16816-bwd";
  run_all(hopper_cases());
  g_want_variant = nullptr;
  unsetenv("BARACUDA_FLASH_BWD_WGMMA");
}
