// Attention and RoPE plans inside CUDA graph capture (DESIGN §1): each run is
// captured, replayed twice and must give the same bits as a direct run on the
// same stream. Covers the default f16/bf16 route (cuDNN, built at select()),
// the bespoke tensor-core forward (incl. the split-KV decode path with its
// workspace) and backward, the SIMT path, materialized attention and RoPE; and
// select() while the stream captures, which must stay off cuDNN (building a
// cuDNN plan is not capture-safe) without breaking the capture.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>

using namespace baracuda;

namespace {

// A device buffer of n elements of `t` with uniform random values in [-1, 1].
Buffer random_device(DType t, size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(-1.f, 1.f);
  std::vector<unsigned char> h(n * dtype_size(t));
  for (size_t i = 0; i < n; ++i) {
    const float v = d(rng);
    if (t == DType::F32) std::memcpy(&h[i * 4], &v, 4);
    else if (t == DType::BF16) { const bfloat16 b(v); std::memcpy(&h[i * 2], &b, 2); }
    else if (t == DType::F16) { const half b(v); std::memcpy(&h[i * 2], &b, 2); }
  }
  Buffer b(Device::cuda(0), std::max<size_t>(h.size(), 16));
  EXPECT_TRUE(b.copy_from_host(h.data(), h.size()).is_ok());
  return b;
}

// Runs `launch` directly, then captured and replayed twice; every buffer in
// `outs` must hold the same bytes after both.
template <class Launch>
void expect_capture_matches(const std::vector<Buffer*>& outs, Launch launch) {
  bt::CapturedGraph c;
  ASSERT_EQ(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), cudaSuccess);
  const Stream s = Stream::cuda(0, c.stream);
  auto poison = [&] {
    for (Buffer* o : outs) ASSERT_TRUE(o->fill_bytes(0xff).is_ok());
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  };
  auto grab = [&] {
    std::vector<std::vector<unsigned char>> r;
    for (Buffer* o : outs) {
      r.emplace_back(o->bytes());
      EXPECT_TRUE(o->copy_to_host(r.back().data(), r.back().size()).is_ok());
    }
    return r;
  };
  poison();
  Status st = launch(s);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaStreamSynchronize(c.stream), cudaSuccess);
  const auto direct = grab();
  poison();
  ASSERT_EQ(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  st = launch(s);
  const cudaError_t end = cudaStreamEndCapture(c.stream, &c.graph);
  ASSERT_TRUE(st.is_ok()) << "run() failed during capture: " << st.to_string();
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorString(end);
  ASSERT_EQ(cudaGraphInstantiate(&c.exec, c.graph, 0), cudaSuccess);
  for (int rep = 0; rep < 2; ++rep) ASSERT_EQ(cudaGraphLaunch(c.exec, c.stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(c.stream), cudaSuccess);
  const auto replay = grab();
  for (size_t i = 0; i < outs.size(); ++i)
    EXPECT_EQ(0, std::memcmp(direct[i].data(), replay[i].data(), direct[i].size())) << "output " << i << " differs after replay";
}

struct FlashCaseC {
  const char* name;
  DType dtype;
  int64_t B, H, Hk, Q, K, D;
  bool causal;
  bool bespoke;  // require the bespoke kernels (else the default route)
};

void run_flash_capture(const FlashCaseC& c) {
  SCOPED_TRACE(c.name);
  FlashSdpaDescriptor d;
  d.dtype = c.dtype;
  d.batch = c.B;
  d.heads = c.H;
  d.kv_heads = c.Hk;
  d.q_len = c.Q;
  d.kv_len = c.K;
  d.head_dim = c.D;
  d.causal = c.causal;
  d.align = DiagonalAlign::BottomRight;
  const PlanPreference pref = c.bespoke ? bt::bespoke() : PlanPreference{};
  auto fw = FlashSdpaPlan::select(bt::kGpu, d, pref);
  ASSERT_TRUE(fw.is_ok()) << fw.status().to_string();
  auto bw = FlashSdpaBackwardPlan::select(bt::kGpu, d, pref);
  ASSERT_TRUE(bw.is_ok()) << bw.status().to_string();
  const Dims qs{c.B, c.H, c.Q, c.D}, ks{c.B, c.Hk, c.K, c.D}, ls{c.B, c.H, c.Q};
  const size_t qn = static_cast<size_t>(shape_numel(qs)), kn = static_cast<size_t>(shape_numel(ks));
  Buffer q = random_device(c.dtype, qn, 1), k = random_device(c.dtype, kn, 2), v = random_device(c.dtype, kn, 3);
  Buffer dy = random_device(c.dtype, qn, 4);
  const size_t es = dtype_size(c.dtype);
  Buffer y(Device::cuda(0), qn * es), lse(Device::cuda(0), static_cast<size_t>(shape_numel(ls)) * 4);
  Buffer dq(Device::cuda(0), qn * es), dk(Device::cuda(0), kn * es), dv(Device::cuda(0), kn * es);
  Buffer fws(Device::cuda(0), std::max<size_t>(fw->workspace_size(), 16)), bws(Device::cuda(0), std::max<size_t>(bw->workspace_size(), 16));
  FlashSdpaArgs fa;
  fa.q = q.view(c.dtype, qs);
  fa.k = k.view(c.dtype, ks);
  fa.v = v.view(c.dtype, ks);
  fa.y = y.view_mut(c.dtype, qs);
  fa.lse = lse.view_mut(DType::F32, ls);
  const Workspace fw_ws(fws.data(), fw->workspace_size());
  expect_capture_matches({&y, &lse}, [&](const Stream& s) { return fw->run(s, fw_ws, fa); });
  FlashSdpaBackwardArgs ba;
  ba.dy = dy.view(c.dtype, qs);
  ba.q = fa.q;
  ba.k = fa.k;
  ba.v = fa.v;
  ba.y = y.view(c.dtype, qs);
  ba.lse = lse.view(DType::F32, ls);
  ba.dq = dq.view_mut(c.dtype, qs);
  ba.dk = dk.view_mut(c.dtype, ks);
  ba.dv = dv.view_mut(c.dtype, ks);
  const Workspace bw_ws(bws.data(), bw->workspace_size());
  expect_capture_matches({&dq, &dk, &dv}, [&](const Stream& s) { return bw->run(s, bw_ws, ba); });
}

}  // namespace

TEST(AttentionCapture, FlashPlansReplayMatchDirectRuns) {
  BT_SKIP_WITHOUT_GPU();
  const FlashCaseC cases[] = {
      {"bf16 default route (cuDNN where supported)", DType::BF16, 2, 4, 2, 256, 256, 64, true, false},
      {"bf16 bespoke tensor cores", DType::BF16, 2, 4, 2, 200, 300, 128, true, true},
      {"f16 bespoke split-KV decode (workspace)", DType::F16, 4, 8, 2, 1, 2048, 128, true, true},
      {"f32 SIMT", DType::F32, 1, 2, 1, 70, 90, 64, false, true},
  };
  for (const auto& c : cases) run_flash_capture(c);
}

TEST(AttentionCapture, SelectWhileCapturingStaysOffCudnnAndKeepsTheCapture) {
  BT_SKIP_WITHOUT_GPU();
  bt::CapturedGraph c;
  ASSERT_EQ(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), cudaSuccess);
  const Stream s = Stream::cuda(0, c.stream);
  FlashSdpaDescriptor d;
  d.dtype = DType::BF16;
  d.batch = 1;
  d.heads = 2;
  d.kv_heads = 2;
  d.q_len = d.kv_len = 384;  // a shape no other test selects, so no cuDNN plan is cached for it
  d.head_dim = 96;
  ASSERT_EQ(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  auto p = FlashSdpaPlan::select(s, d);
  auto b = FlashSdpaBackwardPlan::select(s, d);
  const cudaError_t end = cudaStreamEndCapture(c.stream, &c.graph);
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorString(end);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  ASSERT_TRUE(b.is_ok()) << b.status().to_string();
  EXPECT_EQ(p->sku().backend, Backend::Bespoke) << p->sku().to_string();
  EXPECT_EQ(b->sku().backend, Backend::Bespoke) << b->sku().to_string();
  // Required cuDNN while capturing is an error naming the reason, not a broken capture.
  PlanPreference need;
  need.backend = Backend::CuDnn;
  need.require_backend = true;
  bt::CapturedGraph c2;
  ASSERT_EQ(cudaStreamCreateWithFlags(&c2.stream, cudaStreamNonBlocking), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(c2.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  auto r = FlashSdpaPlan::select(Stream::cuda(0, c2.stream), d, need);
  const cudaError_t end2 = cudaStreamEndCapture(c2.stream, &c2.graph);
  ASSERT_EQ(end2, cudaSuccess) << cudaGetErrorString(end2);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("capturing"), std::string::npos) << r.status().message();
}

TEST(AttentionCapture, MaterializedAndRopeReplayMatchDirectRuns) {
  BT_SKIP_WITHOUT_GPU();
  // Materialized attention, GQA + causal, forward and backward (ds workspace).
  SdpaDescriptor d;
  d.dtype = DType::F32;
  d.batch = 2;
  d.heads = 4;
  d.kv_heads = 2;
  d.q_len = 70;
  d.kv_len = 90;
  d.head_dim = 40;
  d.head_dim_v = 24;
  d.causal = true;
  auto fw = SdpaPlan::select(bt::kGpu, d);
  auto bw = SdpaBackwardPlan::select(bt::kGpu, d);
  ASSERT_TRUE(fw.is_ok() && bw.is_ok());
  const Dims qs{2, 4, 70, 40}, ks{2, 2, 90, 40}, vs{2, 2, 90, 24}, ys{2, 4, 70, 24}, ps{2, 4, 70, 90};
  auto n = [](const Dims& s) { return static_cast<size_t>(shape_numel(s)); };
  Buffer q = random_device(DType::F32, n(qs), 5), k = random_device(DType::F32, n(ks), 6), v = random_device(DType::F32, n(vs), 7);
  Buffer dy = random_device(DType::F32, n(ys), 8);
  Buffer y(Device::cuda(0), n(ys) * 4), p(Device::cuda(0), n(ps) * 4);
  Buffer dq(Device::cuda(0), n(qs) * 4), dk(Device::cuda(0), n(ks) * 4), dv(Device::cuda(0), n(vs) * 4);
  Buffer ws(Device::cuda(0), std::max<size_t>(bw->workspace_size(), 16));
  SdpaArgs a;
  a.q = q.view(DType::F32, qs);
  a.k = k.view(DType::F32, ks);
  a.v = v.view(DType::F32, vs);
  a.y = y.view_mut(DType::F32, ys);
  a.probs = p.view_mut(DType::F32, ps);
  expect_capture_matches({&y, &p}, [&](const Stream& s) { return fw->run(s, Workspace{}, a); });
  SdpaBackwardArgs b;
  b.dy = dy.view(DType::F32, ys);
  b.q = a.q;
  b.k = a.k;
  b.v = a.v;
  b.probs = p.view(DType::F32, ps);
  b.dq = dq.view_mut(DType::F32, qs);
  b.dk = dk.view_mut(DType::F32, ks);
  b.dv = dv.view_mut(DType::F32, vs);
  const Workspace w(ws.data(), bw->workspace_size());
  expect_capture_matches({&dq, &dk, &dv}, [&](const Stream& s) { return bw->run(s, w, b); });

  // RoPE, q and k in one launch, out of place.
  RopeDescriptor r;
  r.dtype = DType::BF16;
  r.batch = 2;
  r.heads = 4;
  r.kv_heads = 2;
  r.seq_len = 33;
  r.head_dim = 64;
  auto rp = RopePlan::select(bt::kGpu, r);
  ASSERT_TRUE(rp.is_ok()) << rp.status().to_string();
  Buffer rq = random_device(DType::BF16, n(rp->q_shape()), 9), rk = random_device(DType::BF16, n(rp->k_shape()), 10);
  Buffer oq(Device::cuda(0), n(rp->q_shape()) * 2), ok(Device::cuda(0), n(rp->k_shape()) * 2);
  RopeArgs ra;
  ra.q = rq.view(DType::BF16, rp->q_shape());
  ra.k = rk.view(DType::BF16, rp->k_shape());
  ra.q_out = oq.view_mut(DType::BF16, rp->q_shape());
  ra.k_out = ok.view_mut(DType::BF16, rp->k_shape());
  expect_capture_matches({&oq, &ok}, [&](const Stream& s) { return rp->run(s, Workspace{}, ra); });
}

#else
TEST(AttentionCapture, FlashPlansReplayMatchDirectRuns) { GTEST_SKIP() << "built without CUDA"; }
#endif
