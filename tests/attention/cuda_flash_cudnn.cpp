// cuDNN route of FlashSdpaPlan / FlashSdpaBackwardPlan (f16/bf16) against the
// CPU reference (FlashSdpaPlan on Stream::cpu(), double accumulation).
//
//  * Plan.*: through the public plans with PlanPreference{CuDnn, required};
//    skipped while the plan reports the cuDNN backend unsupported.
//  * Route.*: the attention::cudnn_sdpa functions directly (the plan layer's entry points),
//    so the graph, the strides, GQA, the causal masks, the stats (LSE) and
//    the deterministic backward are checked even where the plan routes around.
//  * Capture.*: a built plan replays bit-identically from a CUDA graph, and an
//    unbuilt one is refused (Unsupported) while capturing, leaving the capture intact.
// Everything skips without a GPU, without cuDNN, or when cuDNN reports the
// problem unsupported (the message says why).
#include <gtest/gtest.h>

#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/attention.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>

#include "../../src/ops/attention/cudnn_sdpa.hpp"

using namespace baracuda;
using bt::HostBuffer;
using bt::Layout;

namespace {

struct Case {
  const char* name;
  DType dtype;
  int64_t B, H, Hk, Q, K, D;
  bool causal;
  DiagonalAlign align;
  bool bshd;  // q/k/v/y stored [B,S,H,D] (a permuted view) instead of [B,H,S,D]
};

const Case kCases[] = {
    {"bf16_mha_noncausal_bhsd", DType::BF16, 2, 4, 4, 128, 128, 64, false, DiagonalAlign::TopLeft, false},
    {"f16_gqa_causal_topleft_bshd_odd", DType::F16, 1, 8, 2, 200, 333, 128, true, DiagonalAlign::TopLeft, true},
    {"bf16_mqa_causal_bottomright_bshd", DType::BF16, 2, 4, 1, 64, 192, 96, true, DiagonalAlign::BottomRight, true},
    {"f16_decode_d256", DType::F16, 3, 2, 2, 1, 257, 256, false, DiagonalAlign::TopLeft, false},
    {"bf16_causal_d40_square", DType::BF16, 1, 2, 2, 77, 77, 40, true, DiagonalAlign::TopLeft, false},
    {"bf16_gqa_causal_bottomright_bshd_k256", DType::BF16, 2, 8, 2, 200, 256, 128, true, DiagonalAlign::BottomRight, true},
};
constexpr size_t kCaptureCase = 5;  // kv_len % 128 == 0: its backward runs on every cuDNN 9 (see supports())

std::string case_name(const ::testing::TestParamInfo<Case>& i) { return i.param.name; }

FlashSdpaDescriptor descriptor_of(const Case& c) {
  FlashSdpaDescriptor d;
  d.dtype = c.dtype;
  d.batch = c.B;
  d.heads = c.H;
  d.kv_heads = c.Hk;
  d.q_len = c.Q;
  d.kv_len = c.K;
  d.head_dim = c.D;
  d.causal = c.causal;
  d.align = c.align;
  return d;
}

Layout layout_of(const Dims& shape, bool bshd) { return bshd ? bt::permuted(shape, {0, 2, 1, 3}) : bt::contiguous(shape); }

// A tensor on the host and a device copy of its storage.
struct Pair {
  Layout L;
  HostBuffer h;
  Buffer d;
  Pair(DType t, const Layout& layout) : L(layout), h(t, layout.storage), d(Device::cuda(0), std::max<size_t>(h.bytes(), 16)) {}
  DType dtype() const { return h.dtype(); }
  void upload() { ASSERT_TRUE(d.copy_from_host(h.data(), h.bytes()).is_ok()); }
  void poison() { ASSERT_TRUE(d.fill_bytes(0xff).is_ok()); }  // NaN in every FP dtype
  std::vector<double> download() {
    HostBuffer g(h.dtype(), L.storage);
    EXPECT_TRUE(d.copy_to_host(g.data(), g.bytes()).is_ok());
    return bt::gather(g, L);
  }
  std::vector<double> host_values() const { return bt::gather(h, L); }
  TensorRef host_ref() const { return bt::view(h, L); }
  TensorMut host_mut() { return bt::view_mut(h, L); }
  TensorRef dev_ref() const { return bt::view(d, h.dtype(), L); }
  TensorMut dev_mut() { return bt::view_mut(d, h.dtype(), L); }
  void strides(int64_t* sb, int64_t* sh, int64_t* ss) const {
    *sb = L.strides[0];
    *sh = L.strides[1];
    *ss = L.strides[2];
  }
};

// Inputs, CPU-reference outputs and device buffers of one case.
struct Problem {
  Case c;
  FlashSdpaDescriptor desc;
  Pair q, k, v, y, lse, dy, dq, dk, dv;
  std::vector<double> y_ref, lse_ref, dq_ref, dk_ref, dv_ref;

  explicit Problem(const Case& cs)
      : c(cs),
        desc(descriptor_of(cs)),
        q(cs.dtype, layout_of({cs.B, cs.H, cs.Q, cs.D}, cs.bshd)),
        k(cs.dtype, layout_of({cs.B, cs.Hk, cs.K, cs.D}, cs.bshd)),
        v(cs.dtype, layout_of({cs.B, cs.Hk, cs.K, cs.D}, cs.bshd)),
        y(cs.dtype, layout_of({cs.B, cs.H, cs.Q, cs.D}, cs.bshd)),
        lse(DType::F32, bt::contiguous({cs.B, cs.H, cs.Q})),
        dy(cs.dtype, layout_of({cs.B, cs.H, cs.Q, cs.D}, cs.bshd)),
        dq(cs.dtype, layout_of({cs.B, cs.H, cs.Q, cs.D}, cs.bshd)),
        dk(cs.dtype, layout_of({cs.B, cs.Hk, cs.K, cs.D}, cs.bshd)),
        dv(cs.dtype, layout_of({cs.B, cs.Hk, cs.K, cs.D}, cs.bshd)) {}

  // Random inputs, the CPU reference forward and backward, device copies of
  // the inputs (y and lse: the reference's, the backward's inputs).
  void setup() {
    auto rng = bt::make_rng(bt::fresh_seed(c.name));
    bt::fill_random(q.h, rng, -2.0, 2.0);
    bt::fill_random(k.h, rng, -1.0, 1.0);
    bt::fill_random(v.h, rng, -1.0, 1.0);
    bt::fill_random(dy.h, rng, -1.0, 1.0);
    auto fwd = FlashSdpaPlan::select(Stream::cpu(), desc);
    ASSERT_TRUE(fwd.is_ok()) << fwd.status().to_string();
    std::vector<unsigned char> ws(std::max<size_t>(fwd->workspace_size(), 1));
    FlashSdpaArgs a;
    a.q = q.host_ref();
    a.k = k.host_ref();
    a.v = v.host_ref();
    a.y = y.host_mut();
    a.lse = lse.host_mut();
    Status st = fwd->run(Stream::cpu(), Workspace(ws.data(), ws.size()), a);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    y_ref = y.host_values();
    lse_ref = lse.host_values();
    auto bwd = FlashSdpaBackwardPlan::select(Stream::cpu(), desc);
    ASSERT_TRUE(bwd.is_ok()) << bwd.status().to_string();
    std::vector<unsigned char> wsb(std::max<size_t>(bwd->workspace_size(), 1));
    FlashSdpaBackwardArgs b;
    b.dy = dy.host_ref();
    b.q = q.host_ref();
    b.k = k.host_ref();
    b.v = v.host_ref();
    b.y = y.host_ref();
    b.lse = lse.host_ref();
    b.dq = dq.host_mut();
    b.dk = dk.host_mut();
    b.dv = dv.host_mut();
    st = bwd->run(Stream::cpu(), Workspace(wsb.data(), wsb.size()), b);
    ASSERT_TRUE(st.is_ok()) << st.to_string();
    dq_ref = dq.host_values();
    dk_ref = dk.host_values();
    dv_ref = dv.host_values();
    for (Pair* p : {&q, &k, &v, &y, &lse, &dy}) p->upload();
  }

  attention::cuda::FlashFwdParams fwd_params() {
    attention::cuda::FlashFwdParams p;
    p.dtype = c.dtype;
    p.q = q.d.data();
    p.k = k.d.data();
    p.v = v.d.data();
    p.y = y.d.data();
    p.lse = static_cast<float*>(lse.d.data());
    q.strides(&p.q_sb, &p.q_sh, &p.q_ss);
    k.strides(&p.k_sb, &p.k_sh, &p.k_ss);
    v.strides(&p.v_sb, &p.v_sh, &p.v_ss);
    y.strides(&p.y_sb, &p.y_sh, &p.y_ss);
    lse.strides(&p.lse_sb, &p.lse_sh, &p.lse_ss);
    p.batch = static_cast<int>(c.B);
    p.heads = static_cast<int>(c.H);
    p.kv_heads = static_cast<int>(c.Hk);
    p.q_len = static_cast<int>(c.Q);
    p.kv_len = static_cast<int>(c.K);
    p.head_dim = static_cast<int>(c.D);
    p.scale = 1.0 / std::sqrt(static_cast<double>(c.D));
    p.causal = c.causal;
    p.bottom_right = c.align == DiagonalAlign::BottomRight;
    return p;
  }
  attention::cuda::FlashBwdParams bwd_params(void* ws, size_t ws_bytes) {
    attention::cuda::FlashBwdParams p;
    static_cast<attention::cuda::FlashFwdParams&>(p) = fwd_params();
    p.dy = dy.d.data();
    p.dq = dq.d.data();
    p.dk = dk.d.data();
    p.dv = dv.d.data();
    dy.strides(&p.dy_sb, &p.dy_sh, &p.dy_ss);
    dq.strides(&p.dq_sb, &p.dq_sh, &p.dq_ss);
    dk.strides(&p.dk_sb, &p.dk_sh, &p.dk_ss);
    dv.strides(&p.dv_sb, &p.dv_sh, &p.dv_ss);
    p.workspace = ws;
    p.workspace_bytes = ws_bytes;
    return p;
  }
};

// lse is f32 math on exact f16/bf16 products: f32 tolerance.
constexpr double kLseTol = 1e-5;

void expect_close(const char* what, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
  const double err = bt::rel_error(got, ref);
  EXPECT_LE(err, tol) << what << ": rel error " << err << " > " << tol << "; " << bt::describe_mismatch(got, ref);
  std::cout << "  [" << what << "] rel error " << err << " (tol " << tol << ")\n";
}

// Skips the test unless a GPU and a usable cuDNN are here.
#define REQUIRE_CUDNN()                                                                                   \
  do {                                                                                                    \
    BT_SKIP_WITHOUT_GPU();                                                                                \
    if (!attention::cudnn_sdpa::available())                                                                         \
      GTEST_SKIP() << "cuDNN route unavailable (cuDNN version " << attention::cudnn_sdpa::version() << ")";          \
  } while (0)

int device_arch() {
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) != cudaSuccess) return 0;
  return prop.major * 10 + prop.minor;
}

// ---------------------------------------------------------------------------
class Route : public ::testing::TestWithParam<Case> {};

TEST_P(Route, ForwardAndBackwardMatchReference) {
  REQUIRE_CUDNN();
  const Case& c = GetParam();
  std::string why;
  if (!attention::cudnn_sdpa::supports(descriptor_of(c), device_arch(), false, &why)) GTEST_SKIP() << "supports(): " << why;
  Problem pb(c);
  ASSERT_NO_FATAL_FAILURE(pb.setup());
  const double tol = bt::tolerance(c.dtype);

  // Forward.
  auto fp = pb.fwd_params();
  ASSERT_TRUE(attention::cudnn_sdpa::check_forward(fp).is_ok()) << attention::cudnn_sdpa::check_forward(fp).to_string();
  auto info = attention::cudnn_sdpa::prepare_forward(fp);
  if (!info && info.status().code() == StatusCode::Unsupported) GTEST_SKIP() << info.status().to_string();
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  std::cout << "  forward engine " << info->engine << ", workspace " << info->workspace_bytes << " B, deterministic "
            << info->deterministic << "\n";
  // The canonical [B,H,S,D] params give the workspace a plan's select() would reserve.
  auto canon = attention::cudnn_sdpa::prepare_forward(attention::cudnn_sdpa::canonical_forward(pb.desc));
  ASSERT_TRUE(canon.is_ok()) << canon.status().to_string();
  std::cout << "  canonical forward workspace " << canon->workspace_bytes << " B\n";
  Buffer ws = bt::device_workspace(info->workspace_bytes);
  pb.y.poison();
  pb.lse.poison();
  Status st = attention::cudnn_sdpa::forward(fp, nullptr, ws.data(), info->workspace_bytes);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  expect_close("y", pb.y.download(), pb.y_ref, tol);
  expect_close("lse", pb.lse.download(), pb.lse_ref, kLseTol);

  // Backward from the reference y and lse (uploaded in setup(); re-upload what the forward overwrote).
  if (!attention::cudnn_sdpa::supports(descriptor_of(c), device_arch(), true, &why)) {
    std::cout << "  backward not supported: " << why << "\n";
    return;
  }
  auto canon_b = attention::cudnn_sdpa::prepare_backward(attention::cudnn_sdpa::canonical_backward(pb.desc), true);
  ASSERT_TRUE(canon_b.is_ok()) << canon_b.status().to_string();
  std::cout << "  canonical backward workspace " << canon_b->workspace_bytes << " B\n";
  pb.y.upload();
  pb.lse.upload();
  for (bool deterministic : {true, false}) {
    SCOPED_TRACE(deterministic ? "deterministic backward" : "atomic-dQ backward");
    auto bp0 = pb.bwd_params(nullptr, 0);
    auto binfo = attention::cudnn_sdpa::prepare_backward(bp0, deterministic);
    if (!binfo) {
      std::cout << "  backward (deterministic=" << deterministic << ") not built: " << binfo.status().to_string() << "\n";
      if (binfo.status().code() == StatusCode::Unsupported) continue;
      FAIL() << binfo.status().to_string();
    }
    std::cout << "  backward (deterministic=" << deterministic << ") engine " << binfo->engine << ", workspace "
              << binfo->workspace_bytes << " B, deterministic " << binfo->deterministic << "\n";
    Buffer bws = bt::device_workspace(binfo->workspace_bytes);
    auto bp = pb.bwd_params(bws.data(), binfo->workspace_bytes);
    std::vector<std::vector<double>> first;
    for (int rep = 0; rep < 2; ++rep) {
      for (Pair* p : {&pb.dq, &pb.dk, &pb.dv}) p->poison();
      st = attention::cudnn_sdpa::backward(bp, nullptr, deterministic);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      std::vector<std::vector<double>> got{pb.dq.download(), pb.dk.download(), pb.dv.download()};
      if (rep == 0) {
        expect_close("dq", got[0], pb.dq_ref, tol);
        expect_close("dk", got[1], pb.dk_ref, tol);
        expect_close("dv", got[2], pb.dv_ref, tol);
        first = got;
      } else if (binfo->deterministic) {
        for (int i = 0; i < 3; ++i) {
          bool same = true;
          for (size_t j = 0; j < got[i].size() && same; ++j) same = bt::same_value(got[i][j], first[i][j]);
          EXPECT_TRUE(same) << "gradient " << i << " differs between two runs of a deterministic plan";
        }
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Cudnn, Route, ::testing::ValuesIn(kCases), case_name);

// Runs a built backward plan on the problem's device copies (y and lse: the
// reference's) and compares dq, dk, dv with the CPU reference.
void run_backward_and_check(Problem& pb, const Stream& s, const FlashSdpaBackwardPlan& bwd, double tol) {
  pb.y.upload();
  pb.lse.upload();
  for (Pair* p : {&pb.dq, &pb.dk, &pb.dv}) p->poison();
  Buffer bws = bt::device_workspace(bwd.workspace_size());
  FlashSdpaBackwardArgs b;
  b.dy = pb.dy.dev_ref();
  b.q = pb.q.dev_ref();
  b.k = pb.k.dev_ref();
  b.v = pb.v.dev_ref();
  b.y = pb.y.dev_ref();
  b.lse = pb.lse.dev_ref();
  b.dq = pb.dq.dev_mut();
  b.dk = pb.dk.dev_mut();
  b.dv = pb.dv.dev_mut();
  Status st = bwd.run(s, Workspace(bws.data(), bwd.workspace_size()), b);
  if (st.code() == StatusCode::Unsupported) GTEST_SKIP() << st.to_string();
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(synchronize(s).is_ok());
  expect_close("dq", pb.dq.download(), pb.dq_ref, tol);
  expect_close("dk", pb.dk.download(), pb.dk_ref, tol);
  expect_close("dv", pb.dv.download(), pb.dv_ref, tol);
}

// ---------------------------------------------------------------------------
class Plan : public ::testing::TestWithParam<Case> {};

TEST_P(Plan, CudnnBackendMatchesReference) {
  BT_SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  PlanPreference pref;
  pref.backend = Backend::CuDnn;
  pref.require_backend = true;
  const Stream s = Stream::cuda(0);
  auto fwd = FlashSdpaPlan::select(s, descriptor_of(c), pref);
  if (!fwd && fwd.status().code() == StatusCode::Unsupported) GTEST_SKIP() << fwd.status().to_string();
  ASSERT_TRUE(fwd.is_ok()) << fwd.status().to_string();
  EXPECT_EQ(fwd->sku().backend, Backend::CuDnn) << fwd->sku().to_string();
  Problem pb(c);
  ASSERT_NO_FATAL_FAILURE(pb.setup());
  const double tol = bt::tolerance(c.dtype);

  Buffer ws = bt::device_workspace(fwd->workspace_size());
  pb.y.poison();
  pb.lse.poison();
  FlashSdpaArgs a;
  a.q = pb.q.dev_ref();
  a.k = pb.k.dev_ref();
  a.v = pb.v.dev_ref();
  a.y = pb.y.dev_mut();
  a.lse = pb.lse.dev_mut();
  Status st = fwd->run(s, Workspace(ws.data(), fwd->workspace_size()), a);
  if (st.code() == StatusCode::Unsupported) GTEST_SKIP() << st.to_string();
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_TRUE(synchronize(s).is_ok());
  expect_close("y", pb.y.download(), pb.y_ref, tol);
  expect_close("lse", pb.lse.download(), pb.lse_ref, kLseTol);

  auto bwd = FlashSdpaBackwardPlan::select(s, descriptor_of(c), pref);
  if (!bwd && bwd.status().code() == StatusCode::Unsupported) GTEST_SKIP() << bwd.status().to_string();
  ASSERT_TRUE(bwd.is_ok()) << bwd.status().to_string();
  EXPECT_EQ(bwd->sku().backend, Backend::CuDnn) << bwd->sku().to_string();
  EXPECT_TRUE(bwd->sku().precision.deterministic) << bwd->sku().to_string();
  run_backward_and_check(pb, s, *bwd, tol);
}

// PlanPreference::require_deterministic = false: the backward may take
// cuDNN's atomic dQ accumulation (issue 17's opt-in route). The SKU says so
// and the gradients stay within the dtype's tolerance of the reference.
TEST_P(Plan, NonDeterministicBackwardMatchesReference) {
  BT_SKIP_WITHOUT_GPU();
  const Case& c = GetParam();
  PlanPreference pref;
  pref.require_deterministic = false;
  const Stream s = Stream::cuda(0);
  auto bwd = FlashSdpaBackwardPlan::select(s, descriptor_of(c), pref);
  if (!bwd && bwd.status().code() == StatusCode::Unsupported) GTEST_SKIP() << bwd.status().to_string();
  ASSERT_TRUE(bwd.is_ok()) << bwd.status().to_string();
  std::cout << "  " << bwd->sku().to_string() << "\n";
  if (bwd->sku().backend == Backend::CuDnn && attention::cudnn_sdpa::available()) {
    auto info = attention::cudnn_sdpa::prepare_backward(attention::cudnn_sdpa::canonical_backward(descriptor_of(c)), false);
    if (info) EXPECT_EQ(bwd->sku().precision.deterministic, info->deterministic) << bwd->sku().to_string();
  }
  Problem pb(c);
  ASSERT_NO_FATAL_FAILURE(pb.setup());
  run_backward_and_check(pb, s, *bwd, bt::tolerance(c.dtype));
}

INSTANTIATE_TEST_SUITE_P(Cudnn, Plan, ::testing::ValuesIn(kCases), case_name);

// ---------------------------------------------------------------------------
TEST(CudnnSupport, RejectsWhatTheGraphCannotExpress) {
  if (!attention::cudnn_sdpa::available()) {
    std::string why;
    EXPECT_FALSE(attention::cudnn_sdpa::supports(descriptor_of(kCases[0]), 90, false, &why));
    EXPECT_FALSE(why.empty());
    GTEST_SKIP() << "cuDNN route unavailable: " << why;
  }
  const FlashSdpaDescriptor base = descriptor_of(kCases[0]);
  std::string why;
  EXPECT_TRUE(attention::cudnn_sdpa::supports(base, 90, false, &why)) << why;
  EXPECT_TRUE(attention::cudnn_sdpa::supports(base, 90, true, &why)) << why;
  auto rejects = [&](FlashSdpaDescriptor d, int arch, bool backward, const char* expect) {
    std::string w;
    EXPECT_FALSE(attention::cudnn_sdpa::supports(d, arch, backward, &w)) << expect;
    EXPECT_NE(w.find(expect), std::string::npos) << "reason '" << w << "' should mention '" << expect << "'";
  };
  FlashSdpaDescriptor d = base;
  d.dtype = DType::F32;
  rejects(d, 90, false, "dtype");
  d = base;
  d.softcap = 30.0;
  rejects(d, 90, false, "softcap");
  d = base;
  d.has_mask = true;
  rejects(d, 90, false, "mask");
  d = base;
  d.alibi = AlibiMode::PerHead;
  rejects(d, 90, false, "ALiBi");
  d = base;
  d.window_left = 16;
  rejects(d, 90, false, "window");
  d = base;
  d.varlen = true;
  rejects(d, 90, false, "varlen");
  d = base;
  d.causal = true;
  d.align = DiagonalAlign::BottomRight;
  d.q_len = d.kv_len + 1;
  rejects(d, 90, false, "q_len <= kv_len");
  d = base;
  d.head_dim = 256;
  EXPECT_TRUE(attention::cudnn_sdpa::supports(d, 90, true, &why)) << why;
  rejects(d, 80, false, "head_dim");
  rejects(d, 100, true, "head_dim");
  rejects(base, 75, false, "sm_80");

  // Layout checks on the params.
  attention::cuda::FlashFwdParams p = attention::cudnn_sdpa::canonical_forward(base);
  EXPECT_TRUE(attention::cudnn_sdpa::check_forward(p).is_ok());
  p.lse_ss = 2;
  Status st = attention::cudnn_sdpa::check_forward(p);
  EXPECT_EQ(st.code(), StatusCode::Unsupported);
  EXPECT_NE(st.message().find("FlashSdpaPlan: cuDNN: lse must be a packed"), std::string::npos) << st.message();
  p = attention::cudnn_sdpa::canonical_forward(base);
  p.k_sb = 0;
  EXPECT_EQ(attention::cudnn_sdpa::check_forward(p).code(), StatusCode::Unsupported);
  p = attention::cudnn_sdpa::canonical_forward(base);
  p.q = reinterpret_cast<const void*>(uintptr_t{8});
  EXPECT_EQ(attention::cudnn_sdpa::check_forward(p).code(), StatusCode::Unsupported);
}

// ---------------------------------------------------------------------------
TEST(Capture, BuiltPlanReplaysBitIdentically) {
  REQUIRE_CUDNN();
  const Case c = kCases[kCaptureCase];
  std::string why;
  if (!attention::cudnn_sdpa::supports(descriptor_of(c), device_arch(), true, &why)) GTEST_SKIP() << why;
  Problem pb(c);
  ASSERT_NO_FATAL_FAILURE(pb.setup());
  bt::CapturedGraph g;
  ASSERT_EQ(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), cudaSuccess);
  auto fp = pb.fwd_params();
  auto info = attention::cudnn_sdpa::prepare_forward(fp);
  if (!info && info.status().code() == StatusCode::Unsupported) GTEST_SKIP() << info.status().to_string();
  ASSERT_TRUE(info.is_ok()) << info.status().to_string();
  auto bp0 = pb.bwd_params(nullptr, 0);
  auto binfo = attention::cudnn_sdpa::prepare_backward(bp0, true);
  ASSERT_TRUE(binfo.is_ok()) << binfo.status().to_string();
  Buffer ws = bt::device_workspace(info->workspace_bytes);
  Buffer bws = bt::device_workspace(binfo->workspace_bytes);
  auto bp = pb.bwd_params(bws.data(), binfo->workspace_bytes);
  bp.y = pb.y.d.data();
  auto launch = [&]() -> Status {
    BARACUDA_RETURN_IF_ERROR(attention::cudnn_sdpa::forward(fp, g.stream, ws.data(), info->workspace_bytes));
    return attention::cudnn_sdpa::backward(bp, g.stream, true);
  };
  auto outputs = [&]() {
    return std::vector<std::vector<double>>{pb.y.download(), pb.lse.download(), pb.dq.download(), pb.dk.download(),
                                            pb.dv.download()};
  };
  auto poison = [&]() {
    for (Pair* p : {&pb.y, &pb.lse, &pb.dq, &pb.dk, &pb.dv}) p->poison();
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  };
  poison();
  Status st = launch();
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaStreamSynchronize(g.stream), cudaSuccess);
  const auto direct = outputs();

  poison();
  ASSERT_EQ(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  st = launch();
  const cudaError_t end = cudaStreamEndCapture(g.stream, &g.graph);
  ASSERT_TRUE(st.is_ok()) << "run during capture: " << st.to_string();
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorString(end);
  ASSERT_EQ(cudaGraphInstantiate(&g.exec, g.graph, 0), cudaSuccess);
  for (int rep = 0; rep < 2; ++rep) ASSERT_EQ(cudaGraphLaunch(g.exec, g.stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(g.stream), cudaSuccess);
  const auto replay = outputs();
  const char* names[] = {"y", "lse", "dq", "dk", "dv"};
  for (size_t i = 0; i < direct.size(); ++i) {
    bool same = direct[i].size() == replay[i].size();
    for (size_t j = 0; j < direct[i].size() && same; ++j) same = bt::same_value(direct[i][j], replay[i][j]);
    EXPECT_TRUE(same) << names[i] << ": graph replay differs from the direct run";
  }
  expect_close("y (replayed)", replay[0], pb.y_ref, bt::tolerance(c.dtype));
}

TEST(Capture, UnbuiltPlanIsRefusedWhileCapturing) {
  REQUIRE_CUDNN();
  Case c = kCases[0];
  c.Q = 48;  // a shape no other test built
  c.K = 80;
  Problem pb(c);
  bt::CapturedGraph g;
  ASSERT_EQ(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), cudaSuccess);
  auto fp = pb.fwd_params();
  ASSERT_EQ(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  Status st = attention::cudnn_sdpa::forward(fp, g.stream, nullptr, 0);
  const cudaError_t end = cudaStreamEndCapture(g.stream, &g.graph);
  EXPECT_EQ(st.code(), StatusCode::Unsupported) << st.to_string();
  EXPECT_NE(st.message().find("capturing"), std::string::npos) << st.message();
  EXPECT_EQ(end, cudaSuccess) << "the refused call must leave the capture intact: " << cudaGetErrorString(end);
  size_t nodes = 1;
  if (g.graph) ASSERT_EQ(cudaGraphGetNodes(g.graph, nullptr, &nodes), cudaSuccess);
  EXPECT_EQ(nodes, 0u);
}

}  // namespace

#endif  // BARACUDA_WITH_CUDA
