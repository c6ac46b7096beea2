// CPU reference of the attention family: hand-computed values, flash vs
// materialized agreement, backward vs central finite differences in f64 for
// every feature, and every validation rule with its error.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>

#include "support/attention_helpers.hpp"

namespace {

using namespace bt;
using baracuda::Backend;
using baracuda::PlanPreference;
using baracuda::StatusCode;


FlashSdpaDescriptor flash_desc(int64_t B, int64_t H, int64_t Hk, int64_t Q, int64_t K, int64_t D, DType t = DType::F64) {
  FlashSdpaDescriptor d;
  d.dtype = t;
  d.batch = B;
  d.heads = H;
  d.kv_heads = Hk;
  d.q_len = Q;
  d.kv_len = K;
  d.head_dim = D;
  return d;
}

// q = (1, 0, ...), k0 = (1, 0, ...), k1 = 0, v0 = e0, v1 = e1 with scale 1:
// scores (1, 0) plus whatever the feature adds.
FlashInputs two_key_inputs(const FlashSdpaDescriptor& d) {
  FlashInputs in;
  in.q = zeros_tensor(d.dtype, Dims{1, 1, 1, 32});
  in.k = zeros_tensor(d.dtype, Dims{1, 1, 2, 32});
  in.v = zeros_tensor(d.dtype, Dims{1, 1, 2, 32});
  in.q.buf.set(0, 1.0);
  in.k.buf.set(0, 1.0);
  in.v.buf.set(0, 1.0);
  in.v.buf.set(32 + 1, 1.0);
  return in;
}

void expect_two_key(const FlashOutputs& o, double s0, double s1) {
  const double m = std::max(s0, s1);
  const double e0 = std::exp(s0 - m), e1 = std::exp(s1 - m);
  EXPECT_NEAR(o.y.buf.get(0), e0 / (e0 + e1), 1e-14);
  EXPECT_NEAR(o.y.buf.get(1), e1 / (e0 + e1), 1e-14);
  for (int e = 2; e < 32; ++e) EXPECT_EQ(o.y.buf.get(e), 0.0);
  EXPECT_NEAR(o.lse.buf.get(0), m + std::log(e0 + e1), 1e-6);  // lse is f32
}

TEST(AttentionCpu, FlashHandComputedScores) {
  auto d = flash_desc(1, 1, 1, 1, 2, 32);
  d.scale = 1.0;
  const auto in = two_key_inputs(d);
  expect_two_key(cpu_flash_forward(d, in), 1.0, 0.0);

  auto dc = d;
  dc.softcap = 0.5;  // 0.5 tanh(1 / 0.5), 0.5 tanh(0)
  expect_two_key(cpu_flash_forward(dc, in), 0.5 * std::tanh(2.0), 0.0);

  auto da = d;  // ALiBi, top-left: key 1 is at distance 1 from row 0
  da.alibi = AlibiMode::PerHead;
  auto ina = in;
  ina.alibi = HostTensor(DType::F32, contiguous(Dims{1}));
  ina.alibi.buf.set(0, 0.75);
  expect_two_key(cpu_flash_forward(da, ina), 1.0, -0.75);

  auto dm = d;  // additive mask
  dm.has_mask = true;
  auto inm = in;
  inm.mask = HostTensor(DType::F32, contiguous(Dims{1, 1, 1, 2}));
  inm.mask.buf.set(0, -0.25);
  inm.mask.buf.set(1, 0.5);
  expect_two_key(cpu_flash_forward(dm, inm), 0.75, 0.5);

  auto ds = d;  // default scale 1/sqrt(32)
  ds.scale.reset();
  expect_two_key(cpu_flash_forward(ds, in), 1.0 / std::sqrt(32.0), 0.0);
  EXPECT_NEAR(FlashSdpaPlan::select(Stream::cpu(), ds).value().scale(), 1.0 / std::sqrt(32.0), 1e-16);
}

TEST(AttentionCpu, FlashCausalAlignmentAndFullyMaskedRows) {
  // Q = 2 rows, K = 2 keys. Top-left causal: row 0 sees key 0 only.
  // Bottom-right with Q = 3 > K = 2: offset -1, row 0 sees nothing.
  auto d = flash_desc(1, 1, 1, 3, 2, 32);
  d.scale = 1.0;
  Rng rng = make_rng(fresh_seed());
  auto in = random_flash_inputs(d, rng);
  d.causal = true;
  d.align = DiagonalAlign::TopLeft;
  auto tl = cpu_flash_forward(d, in);
  for (int e = 0; e < 32; ++e) EXPECT_DOUBLE_EQ(tl.y.buf.get(e), in.v.buf.get(e)) << "row 0 copies v0";
  d.align = DiagonalAlign::BottomRight;
  auto br = cpu_flash_forward(d, in);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(br.y.buf.get(e), 0.0) << "row 0 has no key";
  EXPECT_EQ(br.lse.buf.get(0), -kInf);
  for (int e = 0; e < 32; ++e) EXPECT_DOUBLE_EQ(br.y.buf.get(32 + e), in.v.buf.get(e)) << "row 1 sees key 0 only";
  // Gradients of the empty row are zero.
  auto dy = random_tensor(DType::F64, Dims{1, 1, 3, 32}, rng);
  auto g = cpu_flash_backward(d, in, br, dy);
  for (int e = 0; e < 32; ++e) EXPECT_EQ(g.dq.buf.get(e), 0.0);
}

TEST(AttentionCpu, FlashWindowLimitsKeys) {
  // Window (1, 0) top-left without causal: row i sees keys i-1 and i.
  auto d = flash_desc(1, 1, 1, 4, 4, 32);
  d.window_left = 1;
  d.window_right = 0;
  Rng rng = make_rng(fresh_seed());
  auto in = random_flash_inputs(d, rng);
  auto w = cpu_flash_forward(d, in);
  // Same as an additive mask with -inf outside the band.
  auto dm = flash_desc(1, 1, 1, 4, 4, 32);
  dm.has_mask = true;
  auto inm = in;
  inm.mask = HostTensor(DType::F32, contiguous(Dims{1, 1, 4, 4}));
  for (int i = 0; i < 4; ++i)
    for (int j = 0; j < 4; ++j) inm.mask.buf.set(i * 4 + j, (j == i || j == i - 1) ? 0.0 : -kInf);
  auto m = cpu_flash_forward(dm, inm);
  EXPECT_LE(rel_error(w.y.values(), m.y.values()), 1e-15);
  EXPECT_LE(rel_error(w.lse.values(), m.lse.values()), 1e-7);
}

// Flash and materialized attention agree on the features both have.
TEST(AttentionCpu, FlashMatchesMaterialized) {
  for (int variant = 0; variant < 4; ++variant) {
    SCOPED_TRACE("variant " + std::to_string(variant));
    auto d = flash_desc(2, 4, variant == 3 ? 1 : 2, 5, 7, 40);
    d.causal = variant == 1 || variant == 2;
    d.align = variant == 2 ? DiagonalAlign::BottomRight : DiagonalAlign::TopLeft;
    d.has_mask = variant == 3;
    Rng rng = make_rng(fresh_seed());
    auto in = random_flash_inputs(d, rng);
    auto fo = cpu_flash_forward(d, in);

    SdpaDescriptor s;
    s.dtype = d.dtype;
    s.batch = d.batch;
    s.heads = d.heads;
    s.kv_heads = d.kv_heads;
    s.q_len = d.q_len;
    s.kv_len = d.kv_len;
    s.head_dim = d.head_dim;
    s.causal = d.causal;
    s.align = d.align;
    s.has_mask = d.has_mask;
    auto sp = SdpaPlan::select(Stream::cpu(), s).value();
    HostTensor y = poisoned_tensor(d.dtype, Dims{2, 4, 5, 40}), p = poisoned_tensor(sp.probs_dtype(), Dims{2, 4, 5, 7});
    SdpaArgs a;
    a.q = in.q.ref();
    a.k = in.k.ref();
    a.v = in.v.ref();
    if (d.has_mask) a.mask = in.mask.ref();
    a.y = y.mut();
    a.probs = p.mut();
    ASSERT_TRUE(sp.run(Stream::cpu(), Workspace{}, a).is_ok());
    EXPECT_LE(rel_error(y.values(), fo.y.values()), 1e-14);

    auto dy = random_tensor(d.dtype, Dims{2, 4, 5, 40}, rng);
    auto fg = cpu_flash_backward(d, in, fo, dy);
    auto bp = SdpaBackwardPlan::select(Stream::cpu(), s).value();
    HostTensor dq = poisoned_tensor(d.dtype, in.q.L.shape), dk = poisoned_tensor(d.dtype, in.k.L.shape),
               dv = poisoned_tensor(d.dtype, in.v.L.shape);
    SdpaBackwardArgs b;
    b.dy = dy.ref();
    b.q = in.q.ref();
    b.k = in.k.ref();
    b.v = in.v.ref();
    b.probs = p.ref();
    b.dq = dq.mut();
    b.dk = dk.mut();
    b.dv = dv.mut();
    ASSERT_TRUE(bp.run(Stream::cpu(), Workspace{}, b).is_ok());
    EXPECT_LE(rel_error(dq.values(), fg.dq.values()), 1e-13);
    EXPECT_LE(rel_error(dk.values(), fg.dk.values()), 1e-13);
    EXPECT_LE(rel_error(dv.values(), fg.dv.values()), 1e-13);
  }
}

// ---------------------------------------------------------------------------
// Finite differences. loss = sum(dy * y); d loss / d x by central differences.
std::vector<double> numeric_grad(HostTensor& x, const std::function<double()>& loss, double h = 1e-6) {
  std::vector<double> g(static_cast<size_t>(x.L.numel()));
  std::vector<double> v = x.values();
  for (size_t i = 0; i < v.size(); ++i) {
    const double keep = v[i];
    v[i] = keep + h;
    x.set_values(v);
    const double lp = loss();
    v[i] = keep - h;
    x.set_values(v);
    const double lm = loss();
    v[i] = keep;
    x.set_values(v);
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

struct FlashCase {
  std::string name;
  std::function<void(FlashSdpaDescriptor&)> tweak;
  int64_t B = 2, H = 2, Hk = 1, Q = 5, K = 7;
  std::vector<int64_t> q_lens = {}, kv_lens = {};  // varlen when non-empty
};

void check_flash_fd(const FlashCase& c) {
  SCOPED_TRACE(c.name);
  auto d = flash_desc(c.B, c.H, c.Hk, c.Q, c.K, 32);
  if (!c.q_lens.empty()) {
    d.varlen = true;
    d.batch = static_cast<int64_t>(c.q_lens.size());
    d.total_q = d.total_kv = 0;
    for (size_t b = 0; b < c.q_lens.size(); ++b) {
      d.total_q += c.q_lens[b];
      d.total_kv += c.kv_lens[b];
    }
  }
  c.tweak(d);
  Rng rng = make_rng(fresh_seed(c.name));
  auto in = random_flash_inputs(d, rng, c.q_lens, c.kv_lens);
  if (d.has_mask) {  // a few -inf entries, including one whole row of head 0
    for (int64_t j = 0; j < d.kv_len; ++j) in.mask.buf.set(j, -kInf);
    in.mask.buf.set(d.kv_len + 1, -kInf);
  }
  auto dy = random_tensor(d.dtype, flash_q_shape(d), rng);
  const auto fw = cpu_flash_forward(d, in);
  const auto g = cpu_flash_backward(d, in, fw, dy);
  auto loss = [&] { return dot(cpu_flash_forward(d, in).y.values(), dy.values()); };
  const auto nq = numeric_grad(in.q, loss), nk = numeric_grad(in.k, loss), nv = numeric_grad(in.v, loss);
  EXPECT_LE(rel_error(g.dq.values(), nq), 1e-7) << describe_mismatch(g.dq.values(), nq);
  EXPECT_LE(rel_error(g.dk.values(), nk), 1e-7) << describe_mismatch(g.dk.values(), nk);
  EXPECT_LE(rel_error(g.dv.values(), nv), 1e-7) << describe_mismatch(g.dv.values(), nv);
}

TEST(AttentionCpu, FlashBackwardFiniteDifferences) {
  const std::vector<FlashCase> cases = {
      {"plain", [](FlashSdpaDescriptor&) {}},
      {"causal top-left Q<K", [](FlashSdpaDescriptor& d) { d.causal = true; }},
      {"causal bottom-right Q<K", [](FlashSdpaDescriptor& d) { d.causal = true; d.align = DiagonalAlign::BottomRight; }},
      {"causal bottom-right Q>K (empty rows)", [](FlashSdpaDescriptor& d) { d.causal = true; d.align = DiagonalAlign::BottomRight; }, 2, 2, 1, 7, 4},
      {"window 2/1", [](FlashSdpaDescriptor& d) { d.window_left = 2; d.window_right = 1; }},
      {"window left 1 + causal bottom-right", [](FlashSdpaDescriptor& d) { d.window_left = 1; d.causal = true; d.align = DiagonalAlign::BottomRight; }},
      {"softcap", [](FlashSdpaDescriptor& d) { d.softcap = 0.3; d.scale = 2.0; }},
      {"alibi per head", [](FlashSdpaDescriptor& d) { d.alibi = AlibiMode::PerHead; }},
      {"alibi per batch-head bottom-right", [](FlashSdpaDescriptor& d) { d.alibi = AlibiMode::PerBatchHead; d.align = DiagonalAlign::BottomRight; }},
      {"mask", [](FlashSdpaDescriptor& d) { d.has_mask = true; }},
      {"GQA 4/2 + causal", [](FlashSdpaDescriptor& d) { d.causal = true; }, 1, 4, 2, 4, 6},
      {"MQA 3/1 + softcap + alibi", [](FlashSdpaDescriptor& d) { d.softcap = 1.5; d.alibi = AlibiMode::PerHead; }, 1, 3, 1, 4, 5},
      {"varlen uneven + empty", [](FlashSdpaDescriptor& d) { d.causal = true; d.align = DiagonalAlign::BottomRight; }, 0, 2, 1, 4, 5, {3, 0, 4, 2}, {5, 2, 0, 2}},
  };
  for (const auto& c : cases) check_flash_fd(c);
}

TEST(AttentionCpu, SdpaBackwardFiniteDifferences) {
  struct Case {
    std::string name;
    int64_t H, Hk, Q, K, Dk, Dv;
    bool causal, mask;
    DiagonalAlign align;
  };
  for (const Case& c : {Case{"plain Dk!=Dv", 2, 2, 4, 6, 5, 3, false, false, DiagonalAlign::TopLeft},
                        Case{"GQA causal bottom-right", 4, 2, 5, 3, 4, 4, true, false, DiagonalAlign::BottomRight},
                        Case{"MQA masked", 3, 1, 3, 4, 2, 5, false, true, DiagonalAlign::TopLeft}}) {
    SCOPED_TRACE(c.name);
    SdpaDescriptor d;
    d.dtype = DType::F64;
    d.batch = 2;
    d.heads = c.H;
    d.kv_heads = c.Hk;
    d.q_len = c.Q;
    d.kv_len = c.K;
    d.head_dim = c.Dk;
    d.head_dim_v = c.Dv;
    d.causal = c.causal;
    d.align = c.align;
    d.has_mask = c.mask;
    d.scale = 0.7;
    Rng rng = make_rng(fresh_seed(c.name));
    auto q = random_tensor(DType::F64, Dims{2, c.H, c.Q, c.Dk}, rng);
    auto k = random_tensor(DType::F64, Dims{2, c.Hk, c.K, c.Dk}, rng);
    auto v = random_tensor(DType::F64, Dims{2, c.Hk, c.K, c.Dv}, rng);
    // Broadcast key-padding mask [B,1,1,K] through 0-strides.
    HostTensor m(DType::F32, contiguous(Dims{2, 1, 1, c.K}));
    m.set_values(random_values(DType::F32, 2 * c.K, rng, -1, 1));
    m.buf.set(1, -kInf);
    Layout ml = m.L;
    ml.shape = Dims{2, c.H, c.Q, c.K};
    ml.strides = Dims{c.K, 0, 0, 1};
    const TensorRef mask = view(m.buf, ml);
    auto dy = random_tensor(DType::F64, Dims{2, c.H, c.Q, c.Dv}, rng);
    auto fwd = SdpaPlan::select(Stream::cpu(), d).value();
    auto run_fwd = [&](HostTensor& y, HostTensor& p) {
      SdpaArgs a;
      a.q = q.ref();
      a.k = k.ref();
      a.v = v.ref();
      if (c.mask) a.mask = mask;
      a.y = y.mut();
      a.probs = p.mut();
      EXPECT_TRUE(fwd.run(Stream::cpu(), Workspace{}, a).is_ok());
    };
    HostTensor y = poisoned_tensor(DType::F64, Dims{2, c.H, c.Q, c.Dv}), p = poisoned_tensor(DType::F64, Dims{2, c.H, c.Q, c.K});
    run_fwd(y, p);
    auto bwd = SdpaBackwardPlan::select(Stream::cpu(), d).value();
    HostTensor dq = poisoned_tensor(DType::F64, q.L.shape), dk = poisoned_tensor(DType::F64, k.L.shape),
               dv = poisoned_tensor(DType::F64, v.L.shape);
    SdpaBackwardArgs b;
    b.dy = dy.ref();
    b.q = q.ref();
    b.k = k.ref();
    b.v = v.ref();
    b.probs = p.ref();
    b.dq = dq.mut();
    b.dk = dk.mut();
    b.dv = dv.mut();
    ASSERT_TRUE(bwd.run(Stream::cpu(), Workspace{}, b).is_ok());
    auto loss = [&] {
      HostTensor y2 = poisoned_tensor(DType::F64, y.L.shape), p2 = poisoned_tensor(DType::F64, p.L.shape);
      run_fwd(y2, p2);
      return dot(y2.values(), dy.values());
    };
    const auto nq = numeric_grad(q, loss), nk = numeric_grad(k, loss), nv = numeric_grad(v, loss);
    EXPECT_LE(rel_error(dq.values(), nq), 1e-7) << describe_mismatch(dq.values(), nq);
    EXPECT_LE(rel_error(dk.values(), nk), 1e-7) << describe_mismatch(dk.values(), nk);
    EXPECT_LE(rel_error(dv.values(), nv), 1e-7) << describe_mismatch(dv.values(), nv);
  }
}

TEST(AttentionCpu, SkuReportsReference) {
  auto p = FlashSdpaPlan::select(Stream::cpu(), flash_desc(1, 1, 1, 4, 4, 64, DType::BF16)).value();
  EXPECT_EQ(p.sku().backend, Backend::CpuReference);
  EXPECT_EQ(p.sku().op, "flash_sdpa.forward");
  EXPECT_TRUE(p.sku().precision.deterministic);
  EXPECT_EQ(p.workspace_size(), 0u);
}

// ---------------------------------------------------------------------------
// Validation: every rule, its code and message.
void expect_error(const baracuda::Status& st, StatusCode code, const std::string& needle) {
  EXPECT_EQ(st.code(), code) << st.message();
  EXPECT_NE(st.message().find(needle), std::string::npos) << "message: " << st.message() << "\nexpected to contain: " << needle;
}
template <class R>
void expect_select_error(const R& r, StatusCode code, const std::string& needle) {
  ASSERT_FALSE(r.is_ok());
  expect_error(r.status(), code, needle);
}

TEST(AttentionValidation, FlashDescriptorRules) {
  auto sel = [](auto tweak) {
    auto d = flash_desc(1, 2, 1, 4, 4, 64, DType::F32);
    tweak(d);
    return FlashSdpaPlan::select(Stream::cpu(), d);
  };
  expect_select_error(sel([](auto& d) { d.dtype = DType::I32; }), StatusCode::Unsupported, "FlashSdpaPlan: dtype i32");
  expect_select_error(sel([](auto& d) { d.batch = -1; }), StatusCode::InvalidProblem, "batch -1 must be >= 0");
  expect_select_error(sel([](auto& d) { d.kv_heads = 0; }), StatusCode::InvalidProblem, "must be >= 1");
  expect_select_error(sel([](auto& d) { d.heads = 3; d.kv_heads = 2; }), StatusCode::InvalidProblem, "heads 3 must be a multiple of kv_heads 2");
  expect_select_error(sel([](auto& d) { d.q_len = -2; }), StatusCode::InvalidProblem, "q_len (-2)");
  expect_select_error(sel([](auto& d) { d.head_dim = 24; }), StatusCode::Unsupported, "head_dim 24 must be in [32, 256]");
  expect_select_error(sel([](auto& d) { d.head_dim = 264; }), StatusCode::Unsupported, "head_dim 264");
  expect_select_error(sel([](auto& d) { d.head_dim = 36; }), StatusCode::Unsupported, "multiple of 8");
  expect_select_error(sel([](auto& d) { d.scale = kInf; }), StatusCode::InvalidProblem, "scale must be finite");
  expect_select_error(sel([](auto& d) { d.window_left = -3; }), StatusCode::InvalidProblem, "window_left (-3)");
  expect_select_error(sel([](auto& d) { d.softcap = -1; }), StatusCode::InvalidProblem, "softcap");
  expect_select_error(sel([](auto& d) { d.softcap = kNaN; }), StatusCode::InvalidProblem, "softcap");
  expect_select_error(sel([](auto& d) { d.varlen = true; d.has_mask = true; }), StatusCode::Unsupported, "not supported with varlen");
  expect_select_error(sel([](auto& d) { d.varlen = true; d.total_q = -1; }), StatusCode::InvalidProblem, "total_q (-1)");
  expect_select_error(sel([](auto& d) { d.alibi = static_cast<AlibiMode>(9); }), StatusCode::InvalidProblem, "unknown AlibiMode");
  PlanPreference need_cudnn;
  need_cudnn.backend = Backend::CuDnn;
  need_cudnn.require_backend = true;
  expect_select_error(FlashSdpaPlan::select(Stream::cpu(), flash_desc(1, 1, 1, 4, 4, 64), need_cudnn), StatusCode::Unsupported, "cudnn");
  PlanPreference need_bespoke;
  need_bespoke.backend = Backend::Bespoke;
  need_bespoke.require_backend = true;
  expect_select_error(FlashSdpaBackwardPlan::select(Stream::cpu(), flash_desc(1, 1, 1, 4, 4, 64), need_bespoke), StatusCode::Unsupported,
                      "FlashSdpaBackwardPlan: backend bespoke-cuda required but the stream is on the CPU");
}

TEST(AttentionValidation, FlashArgumentRules) {
  auto d = flash_desc(2, 2, 1, 3, 5, 32, DType::F32);
  d.has_mask = true;
  d.alibi = AlibiMode::PerBatchHead;
  Rng rng = make_rng(fresh_seed());
  auto in = random_flash_inputs(d, rng);
  auto plan = FlashSdpaPlan::select(Stream::cpu(), d).value();
  auto y = poisoned_tensor(DType::F32, Dims{2, 2, 3, 32});
  auto lse = poisoned_tensor(DType::F32, Dims{2, 2, 3});
  auto base = [&] {
    FlashSdpaArgs a;
    a.q = in.q.ref();
    a.k = in.k.ref();
    a.v = in.v.ref();
    a.mask = in.mask.ref();
    a.alibi_slopes = in.alibi.ref();
    a.y = y.mut();
    a.lse = lse.mut();
    return a;
  };
  EXPECT_TRUE(plan.can_implement(base()).is_ok());
  auto a = base();
  a.k = in.q.ref();
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "FlashSdpaPlan: k shape [2,2,3,32] must be [2,1,5,32]");
  a = base();
  a.mask = TensorRef();
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "FlashSdpaPlan: mask");
  a = base();
  a.alibi_slopes = in.mask.ref();
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "alibi_slopes shape");
  auto lse64 = poisoned_tensor(DType::F64, Dims{2, 2, 3});
  a = base();
  a.lse = lse64.mut();
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "lse dtype f64 must be f32");
  a = base();  // y written over q
  a.y = TensorMut(const_cast<void*>(in.q.ref().data), DType::F32, Device::cpu(), Dims{2, 2, 3, 32}, baracuda::contiguous_strides(Dims{2, 2, 3, 32}), 2 * 2 * 3 * 32);
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "y overlaps q in memory");
  a = base();  // lse inside y
  a.lse = TensorMut(y.mut().data, DType::F32, Device::cpu(), Dims{2, 2, 3}, baracuda::contiguous_strides(Dims{2, 2, 3}), 12);
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "y overlaps lse in memory");
  a = base();  // buffer too small
  a.v.capacity = 10;
  expect_error(plan.can_implement(a), StatusCode::BufferTooSmall, "v view reaches");
  a = base();  // broadcast output
  a.lse.strides = Dims{0, 0, 1};
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "lse strides");
}

TEST(AttentionValidation, FlashVarlenOffsets) {
  auto d = flash_desc(2, 1, 1, 4, 4, 32);
  d.varlen = true;
  d.total_q = 5;
  d.total_kv = 6;
  Rng rng = make_rng(fresh_seed());
  auto in = random_flash_inputs(d, rng, {2, 3}, {3, 3});
  auto plan = FlashSdpaPlan::select(Stream::cpu(), d).value();
  auto y = poisoned_tensor(DType::F64, Dims{5, 1, 32});
  auto lse = poisoned_tensor(DType::F32, Dims{1, 5});
  auto run_with = [&](const std::vector<int64_t>& cq, const std::vector<int64_t>& ck) {
    auto tq = i32_tensor(cq), tk = i32_tensor(ck);
    FlashSdpaArgs a;
    a.q = in.q.ref();
    a.k = in.k.ref();
    a.v = in.v.ref();
    a.cu_seqlens_q = tq.ref();
    a.cu_seqlens_kv = tk.ref();
    a.y = y.mut();
    a.lse = lse.mut();
    return plan.run(Stream::cpu(), Workspace{}, a);
  };
  EXPECT_TRUE(run_with({0, 2, 5}, {0, 3, 6}).is_ok());
  expect_error(run_with({1, 2, 5}, {0, 3, 6}), StatusCode::InvalidProblem, "cu_seqlens_q[0] and cu_seqlens_kv[0] must be 0");
  expect_error(run_with({0, 3, 2}, {0, 3, 6}), StatusCode::InvalidProblem, "non-decreasing");
  expect_error(run_with({0, 0, 5}, {0, 3, 6}), StatusCode::InvalidProblem, "above the descriptor's q_len/kv_len maxima");
  expect_error(run_with({0, 2, 4}, {0, 3, 6}), StatusCode::InvalidProblem, "cu_seqlens_q[B] must equal total_q (5)");
  auto bad = i32_tensor({0, 2, 5, 7});
  FlashSdpaArgs a;
  a.q = in.q.ref();
  a.k = in.k.ref();
  a.v = in.v.ref();
  a.cu_seqlens_q = bad.ref();
  a.cu_seqlens_kv = in.cu_kv.ref();
  a.y = y.mut();
  a.lse = lse.mut();
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "cu_seqlens_q shape [4] must be [3]");
}

TEST(AttentionValidation, FlashBackwardArgumentRules) {
  auto d = flash_desc(1, 2, 2, 3, 4, 32, DType::F32);
  Rng rng = make_rng(fresh_seed());
  auto in = random_flash_inputs(d, rng);
  auto fw = cpu_flash_forward(d, in);
  auto dy = random_tensor(DType::F32, Dims{1, 2, 3, 32}, rng);
  auto plan = FlashSdpaBackwardPlan::select(Stream::cpu(), d).value();
  auto dq = poisoned_tensor(DType::F32, Dims{1, 2, 3, 32});
  auto dk = poisoned_tensor(DType::F32, Dims{1, 2, 4, 32});
  auto dv = poisoned_tensor(DType::F32, Dims{1, 2, 4, 32});
  auto base = [&] {
    FlashSdpaBackwardArgs a;
    a.dy = dy.ref();
    a.q = in.q.ref();
    a.k = in.k.ref();
    a.v = in.v.ref();
    a.y = fw.y.ref();
    a.lse = fw.lse.ref();
    a.dq = dq.mut();
    a.dk = dk.mut();
    a.dv = dv.mut();
    return a;
  };
  EXPECT_TRUE(plan.can_implement(base()).is_ok());
  auto a = base();
  a.dv = dk.mut();
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "dk overlaps dv in memory");
  a = base();
  a.dq = TensorMut(const_cast<void*>(dy.ref().data), DType::F32, Device::cpu(), dy.L.shape, dy.L.strides, dy.L.storage);
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "dq overlaps dy in memory");
  a = base();
  a.lse = TensorRef();
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "FlashSdpaBackwardPlan: lse");
  a = base();
  a.dy = in.q.ref();
  a.dy.dtype = DType::F16;
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "dy dtype f16 must be f32");
}

TEST(AttentionValidation, SdpaRules) {
  SdpaDescriptor d;
  d.dtype = DType::F16;
  d.batch = 1;
  d.heads = 2;
  d.kv_heads = 1;
  d.q_len = 3;
  d.kv_len = 4;
  d.head_dim = 8;
  auto sel = [&](auto tweak) {
    auto e = d;
    tweak(e);
    return SdpaPlan::select(Stream::cpu(), e);
  };
  expect_select_error(sel([](auto& e) { e.dtype = DType::I64; }), StatusCode::Unsupported, "SdpaPlan: dtype i64");
  expect_select_error(sel([](auto& e) { e.kv_heads = 3; }), StatusCode::InvalidProblem, "heads 2 must be a multiple of kv_heads 3");
  expect_select_error(sel([](auto& e) { e.head_dim = 0; }), StatusCode::InvalidProblem, "head_dim (0)");
  expect_select_error(sel([](auto& e) { e.head_dim_v = 0; }), StatusCode::InvalidProblem, "head_dim_v (0)");
  expect_select_error(sel([](auto& e) { e.scale = kNaN; }), StatusCode::InvalidProblem, "scale must be finite");
  expect_select_error(sel([](auto& e) { e.kv_len = -1; }), StatusCode::InvalidProblem, "kv_len (-1)");
  auto plan = sel([](auto&) {}).value();
  EXPECT_EQ(plan.probs_dtype(), DType::F32);
  EXPECT_EQ(plan.descriptor().head_dim_v, 8);
  Rng rng = make_rng(fresh_seed());
  auto q = random_tensor(DType::F16, Dims{1, 2, 3, 8}, rng), k = random_tensor(DType::F16, Dims{1, 1, 4, 8}, rng);
  auto v = random_tensor(DType::F16, Dims{1, 1, 4, 8}, rng);
  auto y = poisoned_tensor(DType::F16, Dims{1, 2, 3, 8});
  auto p16 = poisoned_tensor(DType::F16, Dims{1, 2, 3, 4}), p32 = poisoned_tensor(DType::F32, Dims{1, 2, 3, 4});
  SdpaArgs a;
  a.q = q.ref();
  a.k = k.ref();
  a.v = v.ref();
  a.y = y.mut();
  a.probs = p16.mut();
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "SdpaPlan: probs dtype f16 must be f32");
  a.probs = p32.mut();
  EXPECT_TRUE(plan.can_implement(a).is_ok());
  EXPECT_TRUE(plan.run(Stream::cpu(), Workspace{}, a).is_ok());
  auto dm = d;
  dm.has_mask = true;
  auto mplan = SdpaPlan::select(Stream::cpu(), dm).value();
  expect_error(mplan.can_implement(a), StatusCode::InvalidProblem, "SdpaPlan: mask");
  // Backward: probs must be the accumulator dtype too.
  auto bplan = SdpaBackwardPlan::select(Stream::cpu(), d).value();
  auto dy = random_tensor(DType::F16, Dims{1, 2, 3, 8}, rng);
  auto dq = poisoned_tensor(DType::F16, Dims{1, 2, 3, 8}), dk = poisoned_tensor(DType::F16, Dims{1, 1, 4, 8}),
       dv = poisoned_tensor(DType::F16, Dims{1, 1, 4, 8});
  SdpaBackwardArgs b;
  b.dy = dy.ref();
  b.q = q.ref();
  b.k = k.ref();
  b.v = v.ref();
  b.probs = p16.ref();
  b.dq = dq.mut();
  b.dk = dk.mut();
  b.dv = dv.mut();
  expect_error(bplan.can_implement(b), StatusCode::InvalidProblem, "SdpaBackwardPlan: probs dtype f16 must be f32");
  b.probs = p32.ref();
  EXPECT_TRUE(bplan.run(Stream::cpu(), Workspace{}, b).is_ok());
  b.dk = TensorMut(dq.mut().data, DType::F16, Device::cpu(), Dims{1, 1, 4, 8}, baracuda::contiguous_strides(Dims{1, 1, 4, 8}), 32);
  expect_error(bplan.can_implement(b), StatusCode::InvalidProblem, "dq overlaps dk in memory");
}

TEST(AttentionCpu, ZeroSizeProblems) {
  // Empty batch, empty query, empty keys (rows of zeros, lse -inf).
  for (auto [B, Q, K] : {std::tuple<int64_t, int64_t, int64_t>{0, 3, 3}, {1, 0, 3}, {1, 3, 0}}) {
    auto d = flash_desc(B, 1, 1, Q, K, 32);
    Rng rng = make_rng(fresh_seed());
    auto in = random_flash_inputs(d, rng);
    auto o = cpu_flash_forward(d, in);
    for (double x : o.y.values()) EXPECT_EQ(x, 0.0);
    for (double x : o.lse.values()) EXPECT_EQ(x, -kInf);
    auto dy = random_tensor(DType::F64, flash_q_shape(d), rng);
    auto g = cpu_flash_backward(d, in, o, dy);
    for (double x : g.dq.values()) EXPECT_EQ(x, 0.0);
    for (double x : g.dk.values()) EXPECT_EQ(x, 0.0) << "keys no query sees get zero gradients";
    for (double x : g.dv.values()) EXPECT_EQ(x, 0.0);
  }
}

}  // namespace
