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
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kGpu = Stream::cuda(0);

PlanPreference bespoke() {
  PlanPreference p;
  p.backend = Backend::Bespoke;
  p.require_backend = true;
  return p;
}

Buffer to_device(const bt::HostBuffer& h) {
  Buffer b(Device::cuda(0), std::max<size_t>(h.bytes(), 16));
  if (h.bytes()) {
    const Status st = b.copy_from_host(h.data(), h.bytes());
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return b;
}
Buffer device_storage(DType t, const bt::Layout& L) {
  return Buffer(Device::cuda(0),
                std::max<size_t>(static_cast<size_t>(std::max<int64_t>(L.storage, 1)) * dtype_size(t), 16));
}
bt::HostBuffer to_host(const Buffer& b, DType t, int64_t n) {
  bt::HostBuffer h(t, n);
  if (h.bytes()) {
    const Status st = b.copy_to_host(h.data(), h.bytes());
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return h;
}

enum class MaskKind { None, Full, KeyPad, QK, NegInf };

struct Case {
  std::string name;
  int64_t B = 1, H = 1, Hk = 1, Q = 0, K = 0, D = 64;
  bool causal = false;
  DiagonalAlign align = DiagonalAlign::TopLeft;
  int64_t wl = -1, wr = -1;
  double softcap = 0;
  std::optional<double> scale;
  AlibiMode alibi = AlibiMode::None;
  MaskKind mask = MaskKind::None;
  bool bshd = false;        // q, k, v, y, dy (and dq, dk, dv) stored [B,S,H,D]
  bool padded_out = false;  // dq, dk, dv are slices of bigger buffers (gaps must survive)
  std::vector<int64_t> q_lens, kv_lens;  // varlen when non-empty
  double qrange = 1.0;      // q ~ U(-qrange, qrange): larger = peakier softmax
};

// Worst errors seen, per dtype (0 = f16, 1 = bf16).
struct Worst {
  double dq = 0, dk = 0, dv = 0;
};
Worst g_worst[2];
int g_cases[2] = {0, 0};

std::string dtname(DType t) { return t == DType::F16 ? "f16" : "bf16"; }

bt::Layout seq_layout(const Case& c, const Dims& shape) {
  if (c.bshd && shape.rank == 4) return bt::permuted(shape, {0, 2, 1, 3});
  return bt::contiguous(shape);
}
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
  return seq_layout(c, shape);
}

bt::HostTensor random_in(DType t, const bt::Layout& L, bt::Rng& rng, double lo = -1, double hi = 1) {
  bt::HostTensor x(t, L);
  x.set_values(bt::random_values(t, L.numel(), rng, lo, hi));
  return x;
}

// Mask storage and values per kind. The -inf patterns only depend on the axes
// a broadcast kind keeps, so every logical element agrees with its storage.
bt::HostTensor make_mask(MaskKind kind, const Dims& ms, bt::Rng& rng) {
  bt::Layout L = bt::contiguous(ms);
  if (kind == MaskKind::KeyPad || kind == MaskKind::QK) {
    Dims inner = ms;
    std::vector<int> zero_axes = kind == MaskKind::KeyPad ? std::vector<int>{1, 2} : std::vector<int>{0, 1};
    for (int a : zero_axes) inner[a] = 1;
    L = bt::contiguous(inner);
    L.shape = ms;
    for (int a : zero_axes) L.strides[a] = 0;
    L.name = "broadcast";
  }
  bt::HostTensor m(DType::F32, L);
  const std::vector<double> sv = bt::random_values(DType::F32, std::max<int64_t>(L.storage, 1), rng, -2.0, 2.0);
  for (int64_t s = 0; s < L.storage; ++s) m.buf.set(s, sv[static_cast<size_t>(s)]);
  const int64_t B = ms[0], Q = ms[2], K = ms[3];
  for (int64_t idx = 0; idx < L.numel(); ++idx) {
    const int64_t j = idx % K, i = (idx / K) % Q, b = idx / (K * Q * ms[1]);
    bool neg = false;
    if (kind == MaskKind::KeyPad) {
      // Sequence b keeps its first K - pad_b keys; the last batch entry (when
      // B >= 3) has none: all its rows are fully masked.
      const int64_t pad = (b * 5) % std::max<int64_t>(K / 2, 1);
      neg = j >= K - pad || (B >= 3 && b == B - 1);
    } else if (kind == MaskKind::QK) {
      neg = (i * 3 + j * 5) % 13 == 0 || i == Q / 2;  // row Q/2 fully masked in every (b, h)
    } else if (kind == MaskKind::NegInf) {
      neg = i % 7 == 3 || (idx * 2654435761ull) % 11 == 0;
    }
    if (neg) m.buf.set(L.offset_of(idx), -bt::kInf);
  }
  return m;
}

struct OutBuf {
  const char* name;
  Buffer* buf;
  DType t;
  bt::Layout L;
};

// Runs `run` twice (NaN poison, then the finite 0x5a.. poison); both runs must
// succeed, keep the gaps and agree bit for bit on every covered element.
// `first` receives each output's storage after run 1.
std::string run_twice(const std::function<Status()>& run, std::vector<OutBuf>& outs, std::vector<bt::HostBuffer>* first) {
  first->clear();
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& o : outs) {
      const Status st = o.buf->fill_bytes(pass == 0 ? bt::poison_byte(o.t) : bt::alt_poison_byte(o.t));
      if (!st.is_ok()) return "fill: " + st.to_string();
    }
    Status st = run();
    if (st.is_ok()) st = synchronize(kGpu);
    if (!st.is_ok()) return "run " + std::to_string(pass + 1) + ": " + st.to_string();
    for (size_t n = 0; n < outs.size(); ++n) {
      const OutBuf& o = outs[n];
      const int64_t elems = static_cast<int64_t>(o.buf->bytes() / dtype_size(o.t));
      bt::HostBuffer h = to_host(*o.buf, o.t, elems);
      const uint8_t pb = pass == 0 ? bt::poison_byte(o.t) : bt::alt_poison_byte(o.t);
      bt::Layout Lst = o.L;
      Lst.storage = elems;  // the buffer may be larger than the layout's storage
      const std::string gaps = bt::check_gaps(h, Lst, pb);
      if (!gaps.empty()) return std::string(o.name) + " run " + std::to_string(pass + 1) + ": " + gaps;
      if (pass == 0) {
        first->push_back(std::move(h));
      } else {
        const auto cov = bt::covered(o.L);
        const size_t esz = dtype_size(o.t);
        int64_t bad = 0, first_bad = -1;
        for (int64_t s = 0; s < o.L.storage; ++s) {
          if (!cov[static_cast<size_t>(s)]) continue;
          if (std::memcmp(static_cast<const uint8_t*>(h.data()) + s * esz,
                          static_cast<const uint8_t*>((*first)[n].data()) + s * esz, esz) != 0) {
            if (bad++ == 0) first_bad = s;
          }
        }
        if (bad)
          return std::string(o.name) + ": " + std::to_string(bad) +
                 " element(s) differ between two runs (unwritten or non-deterministic), first at storage " +
                 std::to_string(first_bad) + ": " + std::to_string((*first)[n].get(first_bad)) + " vs " +
                 std::to_string(h.get(first_bad));
      }
    }
  }
  return "";
}

std::string check_close(const char* what, const std::vector<double>& got, const std::vector<double>& ref, double tol,
                        double* worst) {
  const double e = bt::rel_error(got, ref);
  *worst = std::max(*worst, e);
  if (!(e <= tol)) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s: rel error %.3e > %.1e; ", what, e, tol);
    return buf + bt::describe_mismatch(got, ref);
  }
  return "";
}

FlashSdpaDescriptor make_desc(const Case& c, DType dt) {
  FlashSdpaDescriptor d;
  const bool varlen = !c.q_lens.empty();
  d.dtype = dt;
  d.batch = varlen ? static_cast<int64_t>(c.q_lens.size()) : c.B;
  d.heads = c.H;
  d.kv_heads = c.Hk;
  d.head_dim = c.D;
  d.scale = c.scale;
  d.causal = c.causal;
  d.align = c.align;
  d.window_left = c.wl;
  d.window_right = c.wr;
  d.softcap = c.softcap;
  d.alibi = c.alibi;
  d.has_mask = c.mask != MaskKind::None;
  if (varlen) {
    d.varlen = true;
    for (size_t b = 0; b < c.q_lens.size(); ++b) {
      d.q_len = std::max(d.q_len, c.q_lens[b]);
      d.kv_len = std::max(d.kv_len, c.kv_lens[b]);
      d.total_q += c.q_lens[b];
      d.total_kv += c.kv_lens[b];
    }
  } else {
    d.q_len = c.Q;
    d.kv_len = c.K;
  }
  return d;
}

// One case, one dtype. Returns an empty string on success.
std::string run_case(const Case& c, DType dt) {
  const int wi = dt == DType::BF16 ? 1 : 0;
  Worst& w = g_worst[wi];
  ++g_cases[wi];
  const double tol = bt::tolerance(dt);
  const FlashSdpaDescriptor d = make_desc(c, dt);

  bt::Rng rng = bt::make_rng(bt::fresh_seed(c.name + dtname(dt)));
  const Dims qs = bt::flash_q_shape(d), kvs = bt::flash_kv_shape(d), ls = bt::flash_lse_shape(d);
  bt::FlashInputs in;
  in.q = random_in(dt, seq_layout(c, qs), rng, -c.qrange, c.qrange);
  in.k = random_in(dt, seq_layout(c, kvs), rng);
  in.v = random_in(dt, seq_layout(c, kvs), rng);
  if (d.has_mask) in.mask = make_mask(c.mask, Dims{d.batch, d.heads, d.q_len, d.kv_len}, rng);
  if (d.alibi == AlibiMode::PerHead) in.alibi = bt::random_tensor(DType::F32, Dims{d.heads}, rng, 0.05, 1.0);
  if (d.alibi == AlibiMode::PerBatchHead) in.alibi = bt::random_tensor(DType::F32, Dims{d.batch, d.heads}, rng, 0.05, 1.0);
  if (d.varlen) {
    std::vector<int64_t> cq{0}, ck{0};
    for (size_t b = 0; b < c.q_lens.size(); ++b) {
      cq.push_back(cq.back() + c.q_lens[b]);
      ck.push_back(ck.back() + c.kv_lens[b]);
    }
    in.cu_q = bt::i32_tensor(cq);
    in.cu_kv = bt::i32_tensor(ck);
  }
  const bt::HostTensor dyh = random_in(dt, seq_layout(c, qs), rng);

  // Reference forward (y rounded to the dtype, lse f32) and backward (exact, in double).
  const bt::FlashOutputs ref = bt::cpu_flash_forward(d, in);
  const bt::FlashGrads gref = bt::cpu_flash_backward(d, in, ref, dyh);
  // y in the case's storage layout.
  bt::HostTensor yh(dt, seq_layout(c, qs));
  yh.set_values(ref.y.values());

  auto bplan = FlashSdpaBackwardPlan::select(kGpu, d, bespoke());
  if (!bplan) return "backward select: " + bplan.status().to_string();
  if (bplan->sku().backend != Backend::Bespoke) return "backward: not the bespoke backend";
  if (bplan->sku().variant.find("mma") == std::string::npos)
    return "backward: expected the tensor-core variant, got " + bplan->sku().variant;

  Buffer bq = to_device(in.q.buf), bk = to_device(in.k.buf), bv = to_device(in.v.buf);
  Buffer by = to_device(yh.buf), bl = to_device(ref.lse.buf), bdy = to_device(dyh.buf);
  Buffer bmask, balibi, bcq, bck;
  FlashSdpaBackwardArgs g;
  g.q = bt::view(bq, dt, in.q.L);
  g.k = bt::view(bk, dt, in.k.L);
  g.v = bt::view(bv, dt, in.v.L);
  g.y = bt::view(by, dt, yh.L);
  g.lse = bt::view(bl, DType::F32, ref.lse.L);
  g.dy = bt::view(bdy, dt, dyh.L);
  if (d.has_mask) {
    bmask = to_device(in.mask.buf);
    g.mask = bt::view(bmask, DType::F32, in.mask.L);
  }
  if (d.alibi != AlibiMode::None) {
    balibi = to_device(in.alibi.buf);
    g.alibi_slopes = bt::view(balibi, DType::F32, in.alibi.L);
  }
  if (d.varlen) {
    bcq = to_device(in.cu_q.buf);
    bck = to_device(in.cu_kv.buf);
    g.cu_seqlens_q = bt::view(bcq, DType::I32, in.cu_q.L);
    g.cu_seqlens_kv = bt::view(bck, DType::I32, in.cu_kv.L);
  }
  const bt::Layout dqL = out_layout(c, qs), dkvL = out_layout(c, kvs);
  Buffer bdq = device_storage(dt, dqL), bdk = device_storage(dt, dkvL), bdv = device_storage(dt, dkvL);
  g.dq = bt::view_mut(bdq, dt, dqL);
  g.dk = bt::view_mut(bdk, dt, dkvL);
  g.dv = bt::view_mut(bdv, dt, dkvL);
  const Status ci = bplan->can_implement(g);
  if (!ci.is_ok()) return "can_implement: " + ci.to_string();
  Buffer ws(Device::cuda(0), std::max<size_t>(bplan->workspace_size(), 16));
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

#define SKIP_WITHOUT_GPU() \
  if (!baracuda::cuda_available()) GTEST_SKIP() << "no CUDA device"

}  // namespace

TEST(FlashMmaBwd, SkuAndWorkspace) {
  SKIP_WITHOUT_GPU();
  for (DType dt : {DType::F16, DType::BF16}) {
    Case c;
    c.B = 2, c.H = 4, c.Hk = 2, c.Q = 10, c.K = 12, c.D = 64;
    auto b = FlashSdpaBackwardPlan::select(kGpu, make_desc(c, dt), bespoke());
    ASSERT_TRUE(b.is_ok()) << b.status().to_string();
    EXPECT_EQ(b->sku().backend, Backend::Bespoke);
    EXPECT_NE(b->sku().variant.find("mma"), std::string::npos) << b->sku().variant;
    EXPECT_GT(b->workspace_size(), 0u);
  }
}

TEST(FlashMmaBwd, HeadDims) {
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
  SKIP_WITHOUT_GPU();
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
