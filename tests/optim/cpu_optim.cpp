// The optim family on the CPU reference:
//   * AdamW / Adam against hand-computed torch steps (the literal numbers of
//     torch.optim.AdamW / Adam's first step) and against an independent f64
//     model of torch.optim's formulas over several steps (weight-decay
//     variants, amsgrad, maximize, grad_scale); SGD (momentum, dampening,
//     nesterov, weight decay, maximize, the first step's buf = g) and Lion
//     the same way;
//   * master weights (the master follows the f32 run bit for bit, the params
//     are its rounding), stochastic rounding (deterministic, unbiased on
//     average, floor or ceil only), device scalars (same bits as host ones,
//     the step incremented), found_inf (nothing written, step not advanced);
//   * sizes 0, 1, odd, 10^5 in one list;
//   * the gradient utilities: norms against an f64 sum, clip, unscale +
//     found_inf, scale, zero;
//   * every error rule.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/ops/optim.hpp"
#include "support/optim_helpers.hpp"

using namespace baracuda;
using namespace bt::optim;

namespace {

const Stream kCpu = Stream::cpu();

bool close(double got, double want, double atol, double rtol) { return std::fabs(got - want) <= atol + rtol * std::fabs(want); }

// f64 model of torch.optim.AdamW / Adam, element by element.
std::vector<double> adam_model(const AdamDescriptor& d, const Problem& pb, float gs = 1.0f) {
  std::vector<double> p, m, v, vm;
  for (size_t k = 0; k < pb.shapes.size(); ++k)
    for (size_t i = 0; i < pb.p0[k].size(); ++i)
      p.push_back(pb.p0[k][i]), m.push_back(pb.s0[k][i]), v.push_back(pb.s1[k][i]), vm.push_back(pb.s2[k][i]);
  for (size_t s = 0; s < pb.grads.size(); ++s) {
    const double lr = pb.lrs[s];
    const double t = static_cast<double>(s + 1);
    size_t e = 0;
    for (size_t k = 0; k < pb.shapes.size(); ++k)
      for (size_t i = 0; i < pb.grads[s][k].size(); ++i, ++e) {
        double g = pb.grads[s][k][i] / static_cast<double>(gs);
        if (d.maximize) g = -g;
        if (d.weight_decay != 0) {
          if (d.decoupled_weight_decay) p[e] *= 1 - lr * d.weight_decay;
          else g += d.weight_decay * p[e];
        }
        m[e] = d.beta1 * m[e] + (1 - d.beta1) * g;
        v[e] = d.beta2 * v[e] + (1 - d.beta2) * g * g;
        double vv = v[e];
        if (d.amsgrad) vv = vm[e] = std::max(vm[e], v[e]);
        const double bc1 = 1 - std::pow(d.beta1, t), bc2 = 1 - std::pow(d.beta2, t);
        p[e] -= lr / bc1 * m[e] / (std::sqrt(vv) / std::sqrt(bc2) + d.eps);
      }
  }
  return p;
}

std::vector<double> sgd_model(const SgdDescriptor& d, const Problem& pb) {
  std::vector<double> p, b;
  for (size_t k = 0; k < pb.shapes.size(); ++k)
    for (float x : pb.p0[k]) p.push_back(x), b.push_back(0);
  for (size_t s = 0; s < pb.grads.size(); ++s) {
    size_t e = 0;
    for (size_t k = 0; k < pb.shapes.size(); ++k)
      for (float gf : pb.grads[s][k]) {
        double g = d.maximize ? -static_cast<double>(gf) : gf;
        if (d.weight_decay != 0) g += d.weight_decay * p[e];
        if (d.momentum != 0) {
          b[e] = s == 0 ? g : d.momentum * b[e] + (1 - d.dampening) * g;
          g = d.nesterov ? g + d.momentum * b[e] : b[e];
        }
        p[e] -= pb.lrs[s] * g;
        ++e;
      }
  }
  return p;
}

std::vector<double> lion_model(const LionDescriptor& d, const Problem& pb) {
  std::vector<double> p, m;
  for (size_t k = 0; k < pb.shapes.size(); ++k)
    for (size_t i = 0; i < pb.p0[k].size(); ++i) p.push_back(pb.p0[k][i]), m.push_back(pb.s0[k][i]);
  for (size_t s = 0; s < pb.grads.size(); ++s) {
    size_t e = 0;
    for (size_t k = 0; k < pb.shapes.size(); ++k)
      for (float gf : pb.grads[s][k]) {
        const double g = d.maximize ? -static_cast<double>(gf) : gf;
        const double c = d.beta1 * m[e] + (1 - d.beta1) * g;
        p[e] *= 1 - pb.lrs[s] * d.weight_decay;
        p[e] -= pb.lrs[s] * (c > 0 ? 1 : (c < 0 ? -1 : 0));
        m[e] = d.beta2 * m[e] + (1 - d.beta2) * g;
        ++e;
      }
  }
  return p;
}

std::string compare(const std::vector<float>& got, const std::vector<double>& want, double atol, double rtol) {
  if (got.size() != want.size()) return "size " + std::to_string(got.size()) + " vs " + std::to_string(want.size());
  for (size_t i = 0; i < got.size(); ++i)
    if (!close(got[i], want[i], atol, rtol))
      return "element " + std::to_string(i) + ": " + std::to_string(got[i]) + " vs " + std::to_string(want[i]);
  return "";
}

Problem one_element(float p, const std::vector<float>& grads, double lr) {
  Problem pb;
  pb.shapes = {Dims{1}};
  pb.p0 = {{p}};
  pb.s0 = pb.s1 = pb.s2 = {{0.0f}};
  for (float g : grads) pb.grads.push_back({{g}}), pb.lrs.push_back(lr);
  return pb;
}

// ---- Adam ------------------------------------------------------------------------------
TEST(OptimCpu, AdamHandComputedSteps) {
  // AdamW, p = 1, g = 0.5, lr = 0.1, wd = 0.01, fresh state: p *= 0.999;
  // m = 0.05, v = 0.00025, bc1 = 0.1, bc2 = 0.001: step_size 1, denom
  // sqrt(0.25) + 1e-8 = 0.5 + 1e-8: p = 0.999 - 0.05 / 0.5 = 0.899.
  AdamDescriptor d;
  d.shapes = {Dims{1}};
  d.weight_decay = 0.01;
  Outcome o = run_adam(kCpu, d, one_element(1.0f, {0.5f}, 0.1));
  ASSERT_TRUE(o.st.is_ok()) << o.st.to_string();
  EXPECT_NEAR(decode(DType::F32, o.lists[0])[0], 0.899, 1e-6);
  EXPECT_NEAR(decode(DType::F32, o.lists[2])[0], 0.05, 1e-8);
  EXPECT_NEAR(decode(DType::F32, o.lists[3])[0], 0.00025, 1e-10);
  // Second step g = -0.25: p = 0.899 * 0.999 = 0.898101; m = 0.045 - 0.025 =
  // 0.02; v = 0.00024975 + 0.0000625 = 0.00031225; bc1 = 0.19, bc2 =
  // 0.001999; p -= 0.1 / 0.19 * 0.02 / (sqrt(0.00031225 / 0.001999) + 1e-8).
  o = run_adam(kCpu, d, one_element(1.0f, {0.5f, -0.25f}, 0.1));
  ASSERT_TRUE(o.st.is_ok());
  const double want = 0.898101 - 0.1 / 0.19 * 0.02 / (std::sqrt(0.00031225 / 0.001999) + 1e-8);
  EXPECT_NEAR(decode(DType::F32, o.lists[0])[0], want, 2e-6);
  // Adam (L2), wd = 0.1: g = 0.5 + 0.1 = 0.6, m = 0.06, v = 0.00036, the
  // first step moves by lr exactly: p = 1 - 0.1 = 0.9.
  d.decoupled_weight_decay = false;
  d.weight_decay = 0.1;
  o = run_adam(kCpu, d, one_element(1.0f, {0.5f}, 0.1));
  ASSERT_TRUE(o.st.is_ok());
  EXPECT_NEAR(decode(DType::F32, o.lists[0])[0], 0.9, 1e-6);
  EXPECT_NEAR(decode(DType::F32, o.lists[2])[0], 0.06, 1e-8);
  // maximize: the step goes the other way (p = 1 + 0.1).
  d.weight_decay = 0;
  d.maximize = true;
  o = run_adam(kCpu, d, one_element(1.0f, {0.5f}, 0.1));
  ASSERT_TRUE(o.st.is_ok());
  EXPECT_NEAR(decode(DType::F32, o.lists[0])[0], 1.1, 1e-6);
}

TEST(OptimCpu, AdamMatchesTorchModelOverSteps) {
  struct V {
    bool decoupled, amsgrad, maximize;
    double wd;
  };
  const V vs[] = {{true, false, false, 0.01}, {false, false, false, 0.05}, {true, true, false, 0.1},
                  {false, true, true, 0.0},   {true, false, true, 0.0}};
  for (const V& v : vs) {
    AdamDescriptor d;
    d.shapes = mixed_shapes(true);
    d.decoupled_weight_decay = v.decoupled, d.amsgrad = v.amsgrad, d.maximize = v.maximize, d.weight_decay = v.wd;
    const Problem pb = make_problem(d.shapes, DType::F32, 4, 7);
    const Outcome o = run_adam(kCpu, d, pb);
    ASSERT_TRUE(o.st.is_ok()) << o.st.to_string();
    EXPECT_EQ(compare(decode(DType::F32, o.lists[0]), adam_model(d, pb), 2e-6, 1e-5), "")
        << "decoupled " << v.decoupled << " amsgrad " << v.amsgrad << " maximize " << v.maximize;
  }
}

TEST(OptimCpu, AdamGradScaleDividesTheGradients) {
  AdamDescriptor d;
  d.shapes = mixed_shapes(false);
  const Problem pb = make_problem(d.shapes, DType::F32, 3, 11);
  Problem scaled = pb;
  for (auto& s : scaled.grads)
    for (auto& v : s)
      for (float& x : v) x *= 4.0f;  // exact
  d.has_grad_scale = true;
  Extras x;
  x.grad_scale = 4.0f;
  const Outcome a = run_adam(kCpu, d, scaled, x);
  d.has_grad_scale = false;
  const Outcome b = run_adam(kCpu, d, pb);
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok()) << a.st.to_string();
  EXPECT_EQ(a.lists, b.lists);
}

TEST(OptimCpu, AdamMasterWeightsFollowTheF32Run) {
  for (DType t : {DType::BF16, DType::F16}) {
    AdamDescriptor d;
    d.shapes = mixed_shapes(true);
    const Problem pb = make_problem(d.shapes, t, 3, 5);  // p0 and grads representable in t
    const Outcome ref = run_adam(kCpu, d, pb);           // F32 params
    d.param_dtype = t;
    d.master_weights = true;
    const Outcome o = run_adam(kCpu, d, pb);
    ASSERT_TRUE(o.st.is_ok() && ref.st.is_ok()) << o.st.to_string();
    EXPECT_EQ(o.lists[1], ref.lists[0]) << "the master is the f32 run's params";
    EXPECT_EQ(o.lists[2], ref.lists[2]);
    const std::vector<float> master = decode(DType::F32, o.lists[1]);
    std::vector<float> rounded(master.size());
    for (size_t i = 0; i < master.size(); ++i) rounded[i] = round_to_dtype(t, master[i]);
    EXPECT_EQ(encode(t, rounded), o.lists[0]) << "params = round(master)";
  }
}

TEST(OptimCpu, LowPrecisionParamsWithoutMaster) {
  for (DType t : {DType::BF16, DType::F16}) {
    AdamDescriptor d;
    d.shapes = mixed_shapes(false);
    d.param_dtype = t;
    const Problem pb = make_problem(d.shapes, t, 3, 9);
    const Outcome o = run_adam(kCpu, d, pb);
    ASSERT_TRUE(o.st.is_ok()) << o.st.to_string();
    // Within a few ulps of the low-precision type of the f64 model.
    EXPECT_EQ(compare(decode(t, o.lists[0]), adam_model(d, pb), 1e-3, t == DType::BF16 ? 2e-2 : 3e-3), "");
  }
}

TEST(OptimCpu, StochasticRoundingIsDeterministicAndUnbiased) {
  // SGD with lr 0: params = SR(master) for a master between two bf16 values.
  const float x = 1.0f + 0.3f * 0.0078125f;  // 1 + 0.3 ulp
  SgdDescriptor d;
  d.shapes = {Dims{100000}, Dims{37}};
  d.param_dtype = DType::BF16;
  d.master_weights = true;
  d.stochastic_rounding = true;
  Problem pb;
  pb.shapes = d.shapes;
  pb.p0 = {std::vector<float>(100000, x), std::vector<float>(37, x)};
  pb.s0 = zeros(d.shapes);
  pb.grads = {zeros(d.shapes)};
  pb.lrs = {0.0};
  const Outcome a = run_sgd(kCpu, d, pb), b = run_sgd(kCpu, d, pb);
  ASSERT_TRUE(a.st.is_ok()) << a.st.to_string();
  EXPECT_EQ(a.lists[0], b.lists[0]) << "same seed, same bits";
  Extras other;
  other.seed.offset = 99;
  EXPECT_NE(run_sgd(kCpu, d, pb, other).lists[0], a.lists[0]) << "another offset, other bits";
  const std::vector<float> v = decode(DType::BF16, a.lists[0]);
  double sum = 0;
  int ups = 0;
  for (float e : v) {
    ASSERT_TRUE(e == 1.0f || e == 1.0078125f) << e;
    sum += e;
    ups += e != 1.0f;
  }
  EXPECT_NEAR(sum / v.size(), x, 5e-5);
  EXPECT_NEAR(static_cast<double>(ups) / v.size(), 0.3, 0.01);
  // The word of element e is Philox block e / 4, word e % 4 (the documented layout).
  for (uint64_t e : {0ull, 5ull, 100000ull, 100036ull}) {
    const uint32_t w = baracuda::philox_block(1234, 0, e / 4).w[e % 4];
    const uint32_t bits = (bt::optim::encode(DType::F32, {x})[0]) | 0;  // unused, keeps types obvious
    (void)bits;
    uint32_t xb;
    std::memcpy(&xb, &x, 4);
    const uint16_t want = static_cast<uint16_t>((xb + (w & 0xffffu)) >> 16);
    uint16_t got;
    std::memcpy(&got, &a.lists[0][e * 2], 2);
    EXPECT_EQ(got, want) << "element " << e;
  }
}

TEST(OptimCpu, DeviceScalarsMatchHostScalarsAndAdvanceTheStep) {
  AdamDescriptor d;
  d.shapes = mixed_shapes(false);
  const Problem pb = make_problem(d.shapes, DType::F32, 3, 3);
  Problem f32_lrs = pb;  // the device lr is an f32: use f32-exact host lrs
  for (double& lr : f32_lrs.lrs) lr = static_cast<float>(lr);
  const Outcome host = run_adam(kCpu, d, f32_lrs);
  d.device_scalars = true;
  const Outcome dev = run_adam(kCpu, d, f32_lrs);
  ASSERT_TRUE(dev.st.is_ok()) << dev.st.to_string();
  EXPECT_EQ(host.lists, dev.lists);
  EXPECT_EQ(dev.step, 3.0f);
  SgdDescriptor s;
  s.shapes = d.shapes, s.momentum = 0.9;
  const Outcome sh = run_sgd(kCpu, s, f32_lrs);
  s.device_scalars = true;
  EXPECT_EQ(sh.lists, run_sgd(kCpu, s, f32_lrs).lists);
  LionDescriptor l;
  l.shapes = d.shapes, l.weight_decay = 0.1;
  const Outcome lh = run_lion(kCpu, l, f32_lrs);
  l.device_scalars = true;
  EXPECT_EQ(lh.lists, run_lion(kCpu, l, f32_lrs).lists);
}

TEST(OptimCpu, FoundInfSkipsTheWholeStep) {
  AdamDescriptor d;
  d.shapes = mixed_shapes(false);
  d.device_scalars = true;
  d.has_found_inf = true;
  d.amsgrad = true;
  const Problem pb = make_problem(d.shapes, DType::F32, 2, 3);
  Extras x;
  x.found_inf = 1.0f;
  const Outcome o = run_adam(kCpu, d, pb, x);
  ASSERT_TRUE(o.st.is_ok()) << o.st.to_string();
  EXPECT_EQ(o.step, 0.0f) << "the step count does not advance";
  std::vector<float> p0;
  for (auto& v : pb.p0) p0.insert(p0.end(), v.begin(), v.end());
  EXPECT_EQ(o.lists[0], encode(DType::F32, p0));
  x.found_inf = 0.0f;
  const Outcome ok = run_adam(kCpu, d, pb, x);
  EXPECT_EQ(ok.step, 2.0f);
  EXPECT_NE(ok.lists[0], o.lists[0]);
  // SGD and Lion skip too.
  SgdDescriptor s;
  s.shapes = d.shapes, s.has_found_inf = true, s.momentum = 0.9;
  x.found_inf = 2.0f;
  EXPECT_EQ(run_sgd(kCpu, s, pb, x).lists[0], encode(DType::F32, p0));
  LionDescriptor l;
  l.shapes = d.shapes, l.has_found_inf = true;
  EXPECT_EQ(run_lion(kCpu, l, pb, x).lists[0], encode(DType::F32, p0));
}

// ---- SGD / Lion ------------------------------------------------------------------------
TEST(OptimCpu, SgdMatchesTorchModel) {
  struct V {
    double momentum, dampening, wd;
    bool nesterov, maximize;
  };
  const V vs[] = {{0, 0, 0, false, false},   {0.9, 0, 0, false, false}, {0.9, 0.1, 0.01, false, false},
                  {0.9, 0, 0.01, true, false}, {0.5, 0, 0, true, true},   {0, 0, 0.1, false, true}};
  for (const V& v : vs) {
    SgdDescriptor d;
    d.shapes = mixed_shapes(true);
    d.momentum = v.momentum, d.dampening = v.dampening, d.weight_decay = v.wd, d.nesterov = v.nesterov;
    d.maximize = v.maximize;
    const Problem pb = make_problem(d.shapes, DType::F32, 3, 13);
    const Outcome o = run_sgd(kCpu, d, pb);
    ASSERT_TRUE(o.st.is_ok()) << o.st.to_string();
    EXPECT_EQ(compare(decode(DType::F32, o.lists[0]), sgd_model(d, pb), 1e-6, 1e-5), "")
        << "momentum " << v.momentum << " nesterov " << v.nesterov;
  }
  // Hand-computed: p = 1, g = 0.5, lr 0.1, momentum 0.9: step 1 buf = 0.5,
  // p = 0.95; step 2 g = 0.5: buf = 0.95, p = 0.95 - 0.095 = 0.855.
  SgdDescriptor d;
  d.shapes = {Dims{1}};
  d.momentum = 0.9;
  const Outcome o = run_sgd(kCpu, d, one_element(1.0f, {0.5f, 0.5f}, 0.1));
  EXPECT_NEAR(decode(DType::F32, o.lists[0])[0], 0.855, 1e-6);
  EXPECT_NEAR(decode(DType::F32, o.lists[2])[0], 0.95, 1e-6);
}

TEST(OptimCpu, LionMatchesPaperFormula) {
  for (double wd : {0.0, 0.1}) {
    LionDescriptor d;
    d.shapes = mixed_shapes(true);
    d.weight_decay = wd;
    const Problem pb = make_problem(d.shapes, DType::F32, 3, 17);
    const Outcome o = run_lion(kCpu, d, pb);
    ASSERT_TRUE(o.st.is_ok()) << o.st.to_string();
    EXPECT_EQ(compare(decode(DType::F32, o.lists[0]), lion_model(d, pb), 1e-6, 1e-6), "");
  }
  // sign(0) = 0: m = 0 and g = 0 leave p alone.
  LionDescriptor d;
  d.shapes = {Dims{1}};
  const Outcome o = run_lion(kCpu, d, one_element(0.5f, {0.0f}, 0.1));
  EXPECT_EQ(decode(DType::F32, o.lists[0])[0], 0.5f);
}

// ---- gradient utilities ----------------------------------------------------------------
struct NormRun {
  Status st;
  float norm = 0;
};

NormRun run_norm(DType t, NormType nt, const std::vector<Dims>& shapes, const Values& v) {
  List l(Device::cpu(), t, shapes, v);
  ScalarBuf out(Device::cpu(), -1);
  GlobalNormDescriptor d;
  d.shapes = shapes, d.dtype = t, d.norm_type = nt;
  NormRun r;
  auto plan = GlobalNormPlan::select(kCpu, d);
  if (!plan) return {plan.status(), 0};
  r.st = plan->run(kCpu, {}, GlobalNormArgs{l.refs(), out.mut()});
  r.norm = out.get();
  return r;
}

TEST(OptimCpu, GlobalNormAgainstF64) {
  const auto shapes = mixed_shapes(true);
  bt::Rng rng(3);
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Values v = random_values(shapes, rng, -2, 2);
    for (auto& x : v)
      for (float& e : x) e = round_to_dtype(t, e);
    double sq = 0, mx = 0;
    for (auto& x : v)
      for (float e : x) sq += static_cast<double>(e) * e, mx = std::max(mx, std::fabs(static_cast<double>(e)));
    const NormRun l2 = run_norm(t, NormType::L2, shapes, v), li = run_norm(t, NormType::Inf, shapes, v);
    ASSERT_TRUE(l2.st.is_ok() && li.st.is_ok()) << l2.st.to_string();
    EXPECT_NEAR(l2.norm, std::sqrt(sq), 1e-6 * std::sqrt(sq));
    EXPECT_EQ(li.norm, static_cast<float>(mx));
  }
  // Empty list / all-empty tensors: 0. A NaN: NaN. An inf: inf.
  EXPECT_EQ(run_norm(DType::F32, NormType::L2, {}, {}).norm, 0.0f);
  EXPECT_EQ(run_norm(DType::F32, NormType::Inf, {Dims{0}}, {{}}).norm, 0.0f);
  EXPECT_TRUE(std::isnan(run_norm(DType::F32, NormType::L2, {Dims{3}}, {{1, NAN, 2}}).norm));
  EXPECT_TRUE(std::isnan(run_norm(DType::F32, NormType::Inf, {Dims{3}}, {{1, NAN, 2}}).norm));
  EXPECT_EQ(run_norm(DType::F32, NormType::Inf, {Dims{2}}, {{-INFINITY, 2}}).norm, INFINITY);
}

TEST(OptimCpu, ClipGradNorm) {
  // grads (3, 4): norm 5; max_norm 1: coef = 1 / (5 + 1e-6); max_norm 10: no change.
  for (double max_norm : {1.0, 10.0}) {
    List g(Device::cpu(), DType::F32, {Dims{1}, Dims{1}}, {{3}, {4}});
    ScalarBuf total(Device::cpu(), 0), inf(Device::cpu(), 0);
    ClipGradNormDescriptor d;
    d.shapes = g.shapes, d.max_norm = max_norm, d.has_found_inf = true;
    auto plan = ClipGradNormPlan::select(kCpu, d);
    ASSERT_TRUE(plan.is_ok());
    ASSERT_TRUE(plan->run(kCpu, {}, ClipGradNormArgs{g.muts(), total.mut(), inf.mut()}).is_ok());
    EXPECT_EQ(total.get(), 5.0f);
    const float coef = max_norm == 1.0 ? 1.0f / (5.0f + 1e-6f) : 1.0f;
    EXPECT_EQ(g.values(), (std::vector<float>{3 * coef, 4 * coef}));
    EXPECT_EQ(inf.get(), 0.0f);
  }
  List g(Device::cpu(), DType::F32, {Dims{2}}, {{INFINITY, 1}});
  ScalarBuf total(Device::cpu(), 0), inf(Device::cpu(), 0);
  ClipGradNormDescriptor d;
  d.shapes = g.shapes, d.has_found_inf = true;
  auto plan = ClipGradNormPlan::select(kCpu, d);
  ASSERT_TRUE(plan->run(kCpu, {}, ClipGradNormArgs{g.muts(), total.mut(), inf.mut()}).is_ok());
  EXPECT_EQ(inf.get(), 1.0f) << "a non-finite norm sets found_inf";
  EXPECT_EQ(g.values()[1], 0.0f) << "coef = 1 / inf = 0, as torch";
}

TEST(OptimCpu, UnscaleScaleZero) {
  const std::vector<Dims> shapes = {Dims{3}, Dims{0}, Dims{2}};
  List g(Device::cpu(), DType::BF16, shapes, {{1, 2, 4}, {}, {8, -16}});
  ScalarBuf inv(Device::cpu(), 0.5f), found(Device::cpu(), 0);
  TensorListDescriptor d;
  d.shapes = shapes, d.dtype = DType::BF16;
  auto un = NonFiniteCheckUnscalePlan::select(kCpu, d);
  ASSERT_TRUE(un.is_ok());
  ASSERT_TRUE(un->run(kCpu, {}, NonFiniteCheckUnscaleArgs{g.muts(), inv.ref(), found.mut()}).is_ok());
  EXPECT_EQ(g.values(), (std::vector<float>{0.5f, 1, 2, 4, -8}));
  EXPECT_EQ(found.get(), 0.0f);
  List bad(Device::cpu(), DType::BF16, shapes, {{1, NAN, 4}, {}, {8, -16}});
  ASSERT_TRUE(un->run(kCpu, {}, NonFiniteCheckUnscaleArgs{bad.muts(), inv.ref(), found.mut()}).is_ok());
  EXPECT_EQ(found.get(), 1.0f);

  MultiTensorScaleDescriptor sd;
  sd.shapes = shapes, sd.dtype = DType::BF16;
  auto sc = MultiTensorScalePlan::select(kCpu, sd);
  MultiTensorScaleArgs sa;
  sa.tensors = g.muts(), sa.scale = 3;
  ASSERT_TRUE(sc->run(kCpu, {}, sa).is_ok());
  EXPECT_EQ(g.values(), (std::vector<float>{1.5f, 3, 6, 12, -24}));
  sd.device_scalar = true;
  auto sc2 = MultiTensorScalePlan::select(kCpu, sd);
  sa.scale_tensor = inv.ref();
  ASSERT_TRUE(sc2->run(kCpu, {}, sa).is_ok());
  EXPECT_EQ(g.values(), (std::vector<float>{0.75f, 1.5f, 3, 6, -12}));

  auto z = MultiTensorZeroPlan::select(kCpu, d);
  ASSERT_TRUE(z->run(kCpu, {}, MultiTensorZeroArgs{g.muts()}).is_ok());
  EXPECT_EQ(g.values(), (std::vector<float>(5, 0.0f)));
}

// ---- errors ------------------------------------------------------------------------------
void expect_error(const Status& st, const char* plan, const std::string& part) {
  ASSERT_FALSE(st.is_ok()) << "expected an error containing '" << part << "'";
  EXPECT_EQ(st.message().rfind(plan, 0), 0u) << st.message();
  EXPECT_NE(st.message().find(part), std::string::npos) << st.message();
}

TEST(OptimCpu, DescriptorErrors) {
  AdamDescriptor a;
  a.shapes = {Dims{2}};
  a.master_weights = true;
  expect_error(AdamPlan::select(kCpu, a).status(), "AdamPlan", "master_weights");
  a.master_weights = false;
  a.param_dtype = DType::F16;
  a.stochastic_rounding = true;
  expect_error(AdamPlan::select(kCpu, a).status(), "AdamPlan", "stochastic_rounding");
  a.stochastic_rounding = false;
  a.param_dtype = DType::F64;
  expect_error(AdamPlan::select(kCpu, a).status(), "AdamPlan", "param_dtype");
  a.param_dtype = DType::F32;
  a.beta1 = 1.0;
  expect_error(AdamPlan::select(kCpu, a).status(), "AdamPlan", "beta1");
  a.beta1 = 0.9;
  a.weight_decay = -1;
  expect_error(AdamPlan::select(kCpu, a).status(), "AdamPlan", "weight_decay");
  a.weight_decay = 0;
  a.eps = -1;
  expect_error(AdamPlan::select(kCpu, a).status(), "AdamPlan", "eps");
  a.eps = 1e-8;
  a.shapes = {Dims{-1}};
  expect_error(AdamPlan::select(kCpu, a).status(), "AdamPlan", "shapes[0]");
  SgdDescriptor s;
  s.nesterov = true;
  expect_error(SgdPlan::select(kCpu, s).status(), "SgdPlan", "nesterov");
  LionDescriptor l;
  l.beta2 = -0.5;
  expect_error(LionPlan::select(kCpu, l).status(), "LionPlan", "beta2");
  ClipGradNormDescriptor c;
  c.max_norm = 0;
  expect_error(ClipGradNormPlan::select(kCpu, c).status(), "ClipGradNormPlan", "max_norm");
  GlobalNormDescriptor g;
  g.dtype = DType::I32;
  expect_error(GlobalNormPlan::select(kCpu, g).status(), "GlobalNormPlan", "dtype");
  g.dtype = DType::F32;
  g.norm_type = static_cast<NormType>(7);
  expect_error(GlobalNormPlan::select(kCpu, g).status(), "GlobalNormPlan", "norm_type");
}

TEST(OptimCpu, ArgumentErrors) {
  const std::vector<Dims> shapes = {Dims{4}, Dims{2, 3}};
  AdamDescriptor d;
  d.shapes = shapes;
  auto plan = AdamPlan::select(kCpu, d);
  ASSERT_TRUE(plan.is_ok());
  const Device cpu = Device::cpu();
  List p(cpu, DType::F32, shapes, zeros(shapes)), g(cpu, DType::F32, shapes, zeros(shapes)),
      m(cpu, DType::F32, shapes, zeros(shapes)), v(cpu, DType::F32, shapes, zeros(shapes));
  auto good = [&] {
    AdamArgs a;
    a.params = p.muts(), a.grads = g.refs(), a.exp_avg = m.muts(), a.exp_avg_sq = v.muts();
    return a;
  };
  EXPECT_TRUE(plan->can_implement(good()).is_ok()) << plan->can_implement(good()).to_string();
  AdamArgs a = good();
  a.grads.pop_back();
  expect_error(plan->can_implement(a), "AdamPlan", "grads has 1 views");
  a = good();
  a.exp_avg[1].dtype = DType::BF16;
  expect_error(plan->can_implement(a), "AdamPlan", "exp_avg[1] dtype");
  a = good();
  a.params[1].strides = Dims{1, 2};
  expect_error(plan->can_implement(a), "AdamPlan", "params[1] strides");
  a = good();
  a.params[0].shape = Dims{5};
  expect_error(plan->can_implement(a), "AdamPlan", "params[0] shape");
  a = good();
  a.exp_avg[1] = a.params[1];
  expect_error(plan->can_implement(a), "AdamPlan", "overlaps");
  a = good();
  a.grads[0] = TensorRef(a.exp_avg_sq[0]);
  expect_error(plan->can_implement(a), "AdamPlan", "overlaps");
  a = good();
  a.max_exp_avg_sq = v.muts();
  expect_error(plan->can_implement(a), "AdamPlan", "max_exp_avg_sq is given");
  a = good();
  a.lr_tensor = a.grads[0];
  expect_error(plan->can_implement(a), "AdamPlan", "lr_tensor is given but unused");
  a = good();
  a.step = 0;
  expect_error(plan->can_implement(a), "AdamPlan", "step 0");
  a = good();
  a.lr = -1;
  expect_error(plan->can_implement(a), "AdamPlan", "lr -1");
  a = good();
  a.params[0].device = Device::cuda(0);
  expect_error(plan->can_implement(a), "AdamPlan", "params[0] is on");
  // device scalars: missing step_tensor.
  d.device_scalars = true;
  auto dplan = AdamPlan::select(kCpu, d);
  ScalarBuf lr(cpu, 0.1f);
  a = good();
  a.lr_tensor = lr.ref();
  expect_error(dplan->can_implement(a), "AdamPlan", "step_tensor is missing");
  // Read-only lists may overlap each other: grads passed twice is fine for SGD's grads + ... (no second read list);
  // two written lists sharing memory is not.
  expect_error(AdamPlan().run(kCpu, {}, good()), "AdamPlan", "empty");
  // Utilities.
  GlobalNormDescriptor nd;
  nd.shapes = shapes;
  auto np = GlobalNormPlan::select(kCpu, nd);
  expect_error(np->can_implement(GlobalNormArgs{g.refs(), TensorMut{}}), "GlobalNormPlan", "out is missing");
  ScalarBuf out(cpu, 0);
  EXPECT_TRUE(np->can_implement(GlobalNormArgs{g.refs(), out.mut()}).is_ok());
  TensorMut in_list = TensorMut::contiguous(p.ptr(0), DType::F32, cpu, Dims{});
  ClipGradNormDescriptor cd;
  cd.shapes = shapes;
  auto cp = ClipGradNormPlan::select(kCpu, cd);
  expect_error(cp->can_implement(ClipGradNormArgs{p.muts(), in_list, TensorMut{}}), "ClipGradNormPlan", "overlaps");
  expect_error(cp->can_implement(ClipGradNormArgs{p.muts(), out.mut(), out.mut()}), "ClipGradNormPlan",
               "found_inf is given but unused");
}

}  // namespace

namespace {

TEST(OptimCpu, EmptyListsWriteNothing) {
  const std::vector<Dims> shapes = {Dims{0}, Dims{3, 0}};
  AdamDescriptor d;
  d.shapes = shapes;
  auto plan = AdamPlan::select(kCpu, d);
  ASSERT_TRUE(plan.is_ok());
  List p(Device::cpu(), DType::F32, shapes, zeros(shapes));
  AdamArgs a;
  a.params = p.muts(), a.grads = p.refs(), a.exp_avg = p.muts(), a.exp_avg_sq = p.muts();
  // Empty views never overlap anything.
  auto s = plan->sku_for(kCpu, {}, a);
  ASSERT_TRUE(s.is_ok()) << s.status().to_string();
  EXPECT_EQ(s->variant, "empty");
  EXPECT_TRUE(plan->run(kCpu, {}, a).is_ok());
  // An empty descriptor list: every list empty.
  d.shapes = {};
  d.device_scalars = true;  // the step tensor is still incremented
  auto dp = AdamPlan::select(kCpu, d);
  ScalarBuf lr(Device::cpu(), 0.1f), step(Device::cpu(), 4);
  AdamArgs e;
  e.lr_tensor = lr.ref(), e.step_tensor = step.mut();
  ASSERT_TRUE(dp->run(kCpu, {}, e).is_ok());
  EXPECT_EQ(step.get(), 5.0f);
  EXPECT_EQ(dp->sku_for(kCpu, {}, e)->variant, "reference");
  // The norm of nothing is written (0).
  GlobalNormDescriptor nd;
  nd.shapes = shapes;
  auto np = GlobalNormPlan::select(kCpu, nd);
  ScalarBuf out(Device::cpu(), 7);
  ASSERT_TRUE(np->run(kCpu, {}, GlobalNormArgs{p.refs(), out.mut()}).is_ok());
  EXPECT_EQ(out.get(), 0.0f);
}

}  // namespace

namespace {

TEST(OptimCpu, MoreErrorRules) {
  AdamDescriptor a;
  a.beta2 = -0.1;
  expect_error(AdamPlan::select(kCpu, a).status(), "AdamPlan", "beta2");
  SgdDescriptor s;
  s.momentum = -1;
  expect_error(SgdPlan::select(kCpu, s).status(), "SgdPlan", "momentum");
  s.momentum = 0.9;
  s.dampening = INFINITY;
  expect_error(SgdPlan::select(kCpu, s).status(), "SgdPlan", "dampening");
  s.dampening = 0.1;
  s.nesterov = true;
  expect_error(SgdPlan::select(kCpu, s).status(), "SgdPlan", "nesterov");
  LionDescriptor l;
  l.param_dtype = DType::F16;
  l.stochastic_rounding = true;
  expect_error(LionPlan::select(kCpu, l).status(), "LionPlan", "stochastic_rounding");

  const std::vector<Dims> shapes = {Dims{4}, Dims{3}};
  const Device cpu = Device::cpu();
  List p(cpu, DType::BF16, shapes, zeros(shapes)), g(cpu, DType::BF16, shapes, zeros(shapes)),
      b(cpu, DType::F32, shapes, zeros(shapes)), m(cpu, DType::F32, {Dims{4}}, zeros({Dims{4}}));
  SgdDescriptor sd;
  sd.shapes = shapes, sd.param_dtype = DType::BF16, sd.master_weights = true;
  auto sp = SgdPlan::select(kCpu, sd);
  ASSERT_TRUE(sp.is_ok());
  SgdArgs sa;
  sa.params = p.muts(), sa.grads = g.refs(), sa.master = b.muts();
  EXPECT_TRUE(sp->can_implement(sa).is_ok()) << sp->can_implement(sa).to_string();
  sa.momentum_buffer = b.muts();
  expect_error(sp->can_implement(sa), "SgdPlan", "momentum_buffer is given");
  sa.momentum_buffer.clear();
  sa.master = m.muts();
  expect_error(sp->can_implement(sa), "SgdPlan", "master has 1 views");
  sa.master = b.muts();
  ScalarBuf one(cpu, 1.0f);
  sa.grad_scale = one.ref();
  expect_error(sp->can_implement(sa), "SgdPlan", "grad_scale is given but unused");
  sa.grad_scale = TensorRef{};
  sd.has_found_inf = true;
  auto sp2 = SgdPlan::select(kCpu, sd);
  expect_error(sp2->can_implement(sa), "SgdPlan", "found_inf is missing");

  TensorListDescriptor td;
  td.shapes = shapes, td.dtype = DType::BF16;
  auto un = NonFiniteCheckUnscalePlan::select(kCpu, td);
  ScalarBuf found(cpu, 0);
  expect_error(un->can_implement(NonFiniteCheckUnscaleArgs{p.muts(), TensorRef{}, found.mut()}),
               "NonFiniteCheckUnscalePlan", "inv_scale is missing");
  expect_error(un->can_implement(NonFiniteCheckUnscaleArgs{p.muts(), one.ref(), one.mut()}), "NonFiniteCheckUnscalePlan",
               "overlaps");
  auto z = MultiTensorZeroPlan::select(kCpu, td);
  expect_error(z->can_implement(MultiTensorZeroArgs{b.muts()}), "MultiTensorZeroPlan", "tensors[0] dtype");
  MultiTensorScaleDescriptor scd;
  scd.shapes = shapes, scd.dtype = DType::BF16;
  auto sc = MultiTensorScalePlan::select(kCpu, scd);
  MultiTensorScaleArgs sca;
  sca.tensors = p.muts(), sca.scale = NAN;
  expect_error(sc->can_implement(sca), "MultiTensorScalePlan", "NaN");
  sca.scale = 2, sca.scale_tensor = one.ref();
  expect_error(sc->can_implement(sca), "MultiTensorScalePlan", "scale_tensor is given but unused");
}

}  // namespace
