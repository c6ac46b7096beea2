// AdafactorPlan on the CPU reference:
//   * hand-computed steps (a 2x3 matrix: factored; a vector), with weight
//     decay and maximize, the second step's lerp (w = 2^-0.8 >= 0.5);
//   * every descriptor and argument rule: code and message;
//   * device scalars (step_tensor / lr_tensor) equal host steps bit for bit;
//   * zero-size parameters are skipped; batched matrices keep per-matrix state;
//   * bf16 / f16 parameters follow the f32 algorithm.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "baracuda/ops/optim_adafactor.hpp"
#include "support/adafactor_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();

void expect_near_rel(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * std::max(1.0, std::fabs(want[i]))) << what << "[" << i << "]";
}

// One step (t = 1) of a [2, 3] parameter, by hand in double:
//   g = [[3, 0, 4], [4, 0, 3]]: row sums of g^2 = 25, 25 -> row_var = 25/3;
//   column sums 25, 0, 25 -> col_var = 12.5, 0, 12.5; mean(row_var) = 25/3, so
//   v = col_var per column; v = 0 is clamped to eps1^2 (u = 0 there);
//   u = g / sqrt(12.5); RMS(u) = sqrt(4/6) < 1 (denom 1); alpha = RMS(p) * min(lr, 1).
TEST(AdafactorCpu, HandComputedFactoredAndVector) {
  AdafactorDescriptor d = bt::af_desc(DType::F32, {{2, 3}, {3}});
  d.lr = 0.01;
  bt::AfProblem p;
  p.d = d;
  p.params = {bt::host_from(DType::F32, {1, 2, 3, 4, 5, 6}), bt::host_from(DType::F32, {1, -2, 2})};
  p.grads = {{bt::host_from(DType::F32, {3, 0, 4, 4, 0, 3}), bt::host_from(DType::F32, {0.5, 1, -2})}};
  p.lrs = {0.01f};
  const auto r = bt::af_run(kCpu, p);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.variant, "reference");
  const double s = std::sqrt(12.5);
  const double alpha = std::sqrt(91.0 / 6.0) * 0.01;
  const std::vector<double> u = {3 / s, 0, 4 / s, 4 / s, 0, 3 / s};
  std::vector<double> want(6);
  for (int i = 0; i < 6; ++i) want[i] = (i + 1) - alpha * u[i];
  expect_near_rel(r.params[0], want, 1e-6, "params[0]");
  expect_near_rel(r.row_vars[0], {25.0 / 3, 25.0 / 3}, 1e-6, "row_vars[0]");
  expect_near_rel(r.col_vars[0], {12.5, 0, 12.5}, 1e-6, "col_vars[0]");
  // vector: v = g^2, u = sign(g), RMS(u) = 1, alpha = sqrt(3) * 0.01
  const double a1 = std::sqrt(3.0) * 0.01;
  expect_near_rel(r.params[1], {1 - a1, -2 - a1, 2 + a1}, 1e-6, "params[1]");
  expect_near_rel(r.variances[1], {0.25, 1, 4}, 0, "variances[1]");
}

// Weight decay, maximize and a clipped update (RMS(u) > d) on a vector.
TEST(AdafactorCpu, HandComputedWeightDecayMaximizeClip) {
  AdafactorDescriptor d = bt::af_desc(DType::F32, {{4}});
  d.lr = 0.5, d.weight_decay = 0.1, d.maximize = true, d.d = 1.0;
  bt::AfProblem p;
  p.d = d;
  p.params = {bt::host_from(DType::F32, {1, -1, 2, 0.5})};
  // Step 1: w = 1, v = g^2; u = -g / |g| (maximize); RMS(u) = 1 -> denom 1.
  // Step 2: w = 2^-0.8 (lerp's large-weight branch), rho = min(0.5, 1/sqrt 2).
  p.grads = {{bt::host_from(DType::F32, {1, 2, -4, 0.5})}, {bt::host_from(DType::F32, {2, -2, 1, 1})}};
  p.lrs = {0.5f, 0.5f};
  const auto r = bt::af_run(kCpu, p);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  std::vector<double> x = {1, -1, 2, 0.5}, g1 = {1, 2, -4, 0.5}, g2 = {2, -2, 1, 1}, v(4);
  auto rms = [](const std::vector<double>& a) {
    double s = 0;
    for (double e : a) s += e * e;
    return std::sqrt(s / a.size());
  };
  for (int t = 1; t <= 2; ++t) {
    const auto& g = t == 1 ? g1 : g2;
    const double w = std::pow(t, -0.8), rho = std::min(0.5, 1 / std::sqrt(t));
    const double alpha = std::max(1e-3, rms(x)) * rho;
    std::vector<double> u(4);
    for (int i = 0; i < 4; ++i) {
      x[i] *= 1 - 0.5 * 0.1;
      v[i] = v[i] + w * (g[i] * g[i] - v[i]);
      u[i] = -g[i] / std::sqrt(v[i]);
    }
    const double denom = std::max(1.0, rms(u) / 1.0);
    for (int i = 0; i < 4; ++i) x[i] -= alpha / denom * u[i];
  }
  expect_near_rel(r.params[0], x, 1e-6, "params[0]");
  expect_near_rel(r.variances[0], v, 1e-6, "variances[0]");
}

TEST(AdafactorCpu, DescriptorRules) {
  const AdafactorDescriptor ok = bt::af_desc(DType::F32, {{4, 5}, {3}});
  auto expect = [](const AdafactorDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(AdafactorPlan::select(kCpu, d).status(), code, "AdafactorPlan: " + what);
  };
  AdafactorDescriptor d = ok;
  d.dtype = DType::F64;
  expect(d, StatusCode::Unsupported, "dtype f64 is not supported (f32, bf16, f16)");
  d = ok, d.shapes[1] = Dims{-2};
  expect(d, StatusCode::InvalidProblem, "shapes[1]");
  d = ok, d.lr = -1;
  expect(d, StatusCode::InvalidProblem, "lr -1 must be finite and >= 0");
  d = ok, d.lr = std::nan("");
  expect(d, StatusCode::InvalidProblem, "lr nan must be finite");
  d = ok, d.beta2_decay = 0.5;
  expect(d, StatusCode::InvalidProblem, "beta2_decay 0.5 must be finite and <= 0");
  d = ok, d.eps1 = -1e-3;
  expect(d, StatusCode::InvalidProblem, "eps1 -0.001 must be finite and >= 0");
  d = ok, d.eps2 = -1;
  expect(d, StatusCode::InvalidProblem, "eps2 -1 must be finite and >= 0");
  d = ok, d.d = 0.5;
  expect(d, StatusCode::InvalidProblem, "d 0.5 must be finite and >= 1");
  d = ok, d.weight_decay = -0.1;
  expect(d, StatusCode::InvalidProblem, "weight_decay -0.1 must be finite and >= 0");
  auto p = AdafactorPlan::select(kCpu, ok);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->sku().op, "optim.adafactor");
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_EQ(p->row_var_shape(0), (Dims{4, 1}));
  EXPECT_EQ(p->col_var_shape(0), (Dims{1, 5}));
  EXPECT_DOUBLE_EQ(p->eps1(), std::ldexp(1.0, -23));
  for (auto [t, e] : {std::pair{DType::BF16, -7}, std::pair{DType::F16, -10}}) {
    AdafactorDescriptor dd = ok;
    dd.dtype = t;
    EXPECT_DOUBLE_EQ(AdafactorPlan::select(kCpu, dd)->eps1(), std::ldexp(1.0, e));
  }
  d = ok, d.eps1 = 1e-30;
  EXPECT_DOUBLE_EQ(AdafactorPlan::select(kCpu, d)->eps1(), 1e-30);
  EXPECT_EQ(AdafactorPlan::select(kCpu, bt::af_desc(DType::F32, {{0}, {2, 0, 3}}))->sku().variant, "empty");
}

// A valid argument set for shapes {[4, 5], [3]} on the CPU, owning its storage.
struct Fixture {
  AdafactorPlan plan;
  std::vector<float> p0 = std::vector<float>(20, 0.5f), g0 = std::vector<float>(20, 0.25f), rv = std::vector<float>(4),
                     cv = std::vector<float>(5), p1 = std::vector<float>(3, 1.f), g1 = std::vector<float>(3, 1.f),
                     v1 = std::vector<float>(3);
  float step = 0, lr = 0.01f;
  AdafactorArgs a;
  explicit Fixture(bool device_scalars = false) {
    AdafactorDescriptor d = bt::af_desc(DType::F32, {{4, 5}, {3}});
    d.device_scalars = device_scalars;
    plan = AdafactorPlan::select(kCpu, d).value();
    const Device c = Device::cpu();
    a.params = {TensorMut::contiguous(p0.data(), c, {4, 5}, 20), TensorMut::contiguous(p1.data(), c, {3}, 3)};
    a.grads = {TensorRef::contiguous(g0.data(), c, {4, 5}, 20), TensorRef::contiguous(g1.data(), c, {3}, 3)};
    a.row_vars = {TensorMut::contiguous(rv.data(), c, {4, 1}, 4), TensorMut()};
    a.col_vars = {TensorMut::contiguous(cv.data(), c, {1, 5}, 5), TensorMut()};
    a.variances = {TensorMut(), TensorMut::contiguous(v1.data(), c, {3}, 3)};
    if (device_scalars) {
      a.step_tensor = TensorMut::contiguous(&step, c, Dims{}, 1);
      a.lr_tensor = TensorRef::contiguous(&lr, c, Dims{}, 1);
    } else {
      a.step = 1;
    }
  }
};

TEST(AdafactorCpu, ArgumentRules) {
  auto expect = [](const Fixture& f, const std::string& what) {
    BT_EXPECT_STATUS(f.plan.can_implement(f.a), StatusCode::InvalidProblem, "AdafactorPlan: " + what);
    BT_EXPECT_STATUS(f.plan.run(kCpu, Workspace::none(), f.a), StatusCode::InvalidProblem, "AdafactorPlan: " + what);
  };
  {
    Fixture f;
    EXPECT_TRUE(f.plan.can_implement(f.a).is_ok()) << f.plan.can_implement(f.a).to_string();
  }
  { Fixture f; f.a.params.pop_back(); expect(f, "params has 1 entries but the descriptor has 2 shapes"); }
  { Fixture f; f.a.grads.push_back(f.a.grads[0]); expect(f, "grads has 3 entries"); }
  { Fixture f; f.a.variances.clear(); expect(f, "variances has 0 entries but the descriptor has 2 shapes"); }
  { Fixture f; f.a.params[1] = TensorMut(); expect(f, "params[1] is missing: expected a f32 view of shape [3]"); }
  { Fixture f; f.a.grads[0].dtype = DType::BF16; expect(f, "grads[0] dtype bf16 must be f32"); }
  { Fixture f; f.a.row_vars[0].shape = Dims{4}; f.a.row_vars[0].strides = Dims{1}; expect(f, "row_vars[0] shape [4] must be [4,1]"); }
  { Fixture f; f.a.col_vars[0].shape = Dims{5, 1}; expect(f, "col_vars[0] shape [5,1] must be [1,5]"); }
  { Fixture f; f.a.variances[0] = f.a.variances[1]; expect(f, "variances[0] is given but parameter 0 of shape [4,5] has rank 2"); }
  { Fixture f; f.a.row_vars[1] = f.a.row_vars[0]; expect(f, "row_vars[1] is given but parameter 1 of shape [3] has rank 1"); }
  {
    Fixture f;  // any strides on the CPU (CUDA: dense only, Unsupported)
    f.a.params[0].strides = Dims{1, 4};
    EXPECT_TRUE(f.plan.can_implement(f.a).is_ok()) << f.plan.can_implement(f.a).to_string();
  }
  {
    Fixture f;
    f.a.params_out = f.a.params;
    expect(f, "params_out is given but descriptor.out_of_place is false");
  }
  {
    Fixture f;
    float s = 0;
    f.a.step_out = TensorMut::contiguous(&s, Device::cpu(), Dims{}, 1);
    expect(f, "step_out is given but descriptor.out_of_place and device_scalars are not both true");
  }
  { Fixture f; f.a.params[1].data = f.p0.data() + 2; expect(f, "params[0] overlaps params[1] in memory"); }
  { Fixture f; f.a.variances[1].data = f.g1.data(); expect(f, "variances[1] overlaps grads[1] in memory"); }
  {
    Fixture f;  // grads may share memory: both are read
    f.a.grads[1].data = f.g0.data();
    EXPECT_TRUE(f.plan.can_implement(f.a).is_ok()) << f.plan.can_implement(f.a).to_string();
  }
  { Fixture f; f.a.step = 0; expect(f, "step 0 must be >= 1"); }
  {
    Fixture f;
    float s = 0;
    f.a.step_tensor = TensorMut::contiguous(&s, Device::cpu(), Dims{}, 1);
    expect(f, "step_tensor is given but descriptor.device_scalars is false");
  }
  {
    Fixture f;
    float lr = 0;
    f.a.lr_tensor = TensorRef::contiguous(&lr, Device::cpu(), Dims{}, 1);
    expect(f, "lr_tensor is given but descriptor.device_scalars is false");
  }
  { Fixture f(true); EXPECT_TRUE(f.plan.can_implement(f.a).is_ok()) << f.plan.can_implement(f.a).to_string(); }
  { Fixture f(true); f.a.step = 3; expect(f, "step 3 is given but descriptor.device_scalars is true"); }
  { Fixture f(true); f.a.step_tensor = TensorMut(); expect(f, "step_tensor is missing"); }
  { Fixture f(true); f.a.lr_tensor = TensorRef(); expect(f, "lr_tensor is missing"); }
  { Fixture f(true); f.a.step_tensor.data = f.rv.data(); expect(f, "row_vars[0] overlaps step_tensor in memory"); }
  {
    Fixture f(true);
    f.a.lr_tensor.dtype = DType::F64;
    BT_EXPECT_STATUS(f.plan.can_implement(f.a), StatusCode::InvalidProblem, "lr_tensor dtype f64 must be f32");
  }
  {
    Fixture f;
    EXPECT_EQ(f.plan.run(Stream::cuda(0), Workspace::none(), f.a).code(), StatusCode::InvalidProblem);
    EXPECT_EQ(f.p0[0], 0.5f);  // nothing written by a refused run
  }
}

TEST(AdafactorCpu, DeviceScalarsEqualHostSteps) {
  for (const DType t : {DType::F32, DType::BF16}) {
    AdafactorDescriptor d = bt::af_desc(t, {{6, 5}, {7}, {}, {2, 3, 4}});
    d.lr = 0.25;  // exact in f32: lr_tensor holds the same value
    d.weight_decay = 0.1;
    const bt::AfProblem host = bt::af_problem(d, 4, bt::fresh_seed());
    bt::AfProblem dev = host;
    dev.d.device_scalars = true;
    const auto a = bt::af_run(kCpu, host), b = bt::af_run(kCpu, dev);
    ASSERT_TRUE(a.st.is_ok()) << a.st.to_string();
    ASSERT_TRUE(b.st.is_ok()) << b.st.to_string();
    EXPECT_EQ(a.params, b.params);
    EXPECT_EQ(a.row_vars, b.row_vars);
    EXPECT_EQ(a.col_vars, b.col_vars);
    EXPECT_EQ(a.variances, b.variances);
    EXPECT_EQ(b.step, 4.0);
  }
}

TEST(AdafactorCpu, LearningRateTensorIsReadEveryRun) {
  AdafactorDescriptor d = bt::af_desc(DType::F32, {{3, 4}});
  d.device_scalars = true;
  bt::AfProblem p = bt::af_problem(d, 3, bt::fresh_seed());
  p.lrs = {0.001f, 0.5f, 0.02f};
  bt::AfProblem q = p;
  q.lrs = {0.001f, 0.001f, 0.001f};
  const auto a = bt::af_run(kCpu, p), b = bt::af_run(kCpu, q);
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
  EXPECT_NE(a.params, b.params);
}

TEST(AdafactorCpu, ZeroSizeParametersAreSkipped) {
  AdafactorDescriptor d = bt::af_desc(DType::F32, {{0}, {5}, {2, 0, 3}, {0, 4}});
  const bt::AfProblem p = bt::af_problem(d, 2, bt::fresh_seed());
  const auto r = bt::af_run(kCpu, p);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_TRUE(r.params[0].empty());
  for (int64_t e = 0; e < 5; ++e) EXPECT_NE(r.params[1][e], p.params[1].get(e));
  EXPECT_EQ(r.params[2].size(), 0u);
  // Only empty parameters: nothing to do (variant "empty"), but device scalars still count the step.
  AdafactorDescriptor e = bt::af_desc(DType::F32, {{0}, {3, 0}});
  e.device_scalars = true;
  const auto re = bt::af_run(kCpu, bt::af_problem(e, 3, 1));
  ASSERT_TRUE(re.st.is_ok()) << re.st.to_string();
  EXPECT_EQ(re.step, 3.0);
}

// Leading dims are batches: each [R, C] matrix keeps its own row / column state
// (the norms of p and u stay over the whole tensor).
TEST(AdafactorCpu, BatchedMatricesKeepTheirOwnState) {
  const bt::AfProblem whole = bt::af_problem(bt::af_desc(DType::F32, {{2, 7, 3}}), 3, bt::fresh_seed());
  const auto r = bt::af_run(kCpu, whole);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  for (int b = 0; b < 2; ++b) {
    bt::AfProblem one;
    one.d = bt::af_desc(DType::F32, {{7, 3}});
    one.params = {bt::HostBuffer(DType::F32, 21)};
    for (const auto& gs : whole.grads) {
      bt::HostBuffer g(DType::F32, 21);
      for (int i = 0; i < 21; ++i) g.set(i, gs[0].get(b * 21 + i));
      one.grads.push_back({g});
      one.lrs.push_back(0.01f);
    }
    const auto s = bt::af_run(kCpu, one);
    ASSERT_TRUE(s.st.is_ok());
    EXPECT_EQ(std::vector<double>(r.row_vars[0].begin() + b * 7, r.row_vars[0].begin() + (b + 1) * 7), s.row_vars[0]);
    EXPECT_EQ(std::vector<double>(r.col_vars[0].begin() + b * 3, r.col_vars[0].begin() + (b + 1) * 3), s.col_vars[0]);
  }
}

// bf16 / f16 parameters: the f32 algorithm on the upcast values, rounded once.
TEST(AdafactorCpu, HalfPrecisionFollowsF32) {
  for (const DType t : {DType::BF16, DType::F16}) {
    AdafactorDescriptor d = bt::af_desc(t, {{16, 8}, {9}});
    d.eps1 = 1e-3;  // the same eps1 for both dtypes
    const bt::AfProblem p = bt::af_problem(d, 1, bt::fresh_seed());
    bt::AfProblem f = p;
    f.d.dtype = DType::F32;
    for (auto& h : f.params) {
      bt::HostBuffer x(DType::F32, h.size());
      for (int64_t i = 0; i < h.size(); ++i) x.set(i, h.get(i));
      h = x;
    }
    for (auto& gs : f.grads)
      for (auto& h : gs) {
        bt::HostBuffer x(DType::F32, h.size());
        for (int64_t i = 0; i < h.size(); ++i) x.set(i, h.get(i));
        h = x;
      }
    const auto a = bt::af_run(kCpu, p), b = bt::af_run(kCpu, f);
    ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
    for (size_t i = 0; i < a.params.size(); ++i)
      for (size_t e = 0; e < a.params[i].size(); ++e) EXPECT_EQ(a.params[i][e], bt::round_to(t, b.params[i][e]));
    EXPECT_EQ(a.row_vars, b.row_vars);
    EXPECT_EQ(a.variances, b.variances);
  }
}

}  // namespace

namespace {

// torch 2.11's torch.optim.Adafactor (CPU, f32, its default single-tensor path)
// on exactly representable inputs: p[j] = ((37 j) % 11 - 5) / 4, the gradient of
// parameter i at step k (0-based) ((13 j + 7 k + 3 i) % 9 - 4) / 8; the values
// below are torch's results printed to 9 digits (script: the case names A, B, C).
struct TorchCase {
  const char* name;
  std::vector<Dims> shapes;
  int steps;
  double lr = 1e-2, wd = 0, beta2_decay = -0.8, d = 1;
  std::optional<double> eps1;
  double eps2 = 1e-3;
  bool maximize = false;
  std::vector<std::vector<double>> params, row_vars, col_vars, variances;
};

void expect_torch(const TorchCase& c) {
  AdafactorDescriptor d = bt::af_desc(DType::F32, c.shapes);
  d.lr = c.lr, d.weight_decay = c.wd, d.beta2_decay = c.beta2_decay, d.d = c.d, d.eps1 = c.eps1, d.eps2 = c.eps2;
  d.maximize = c.maximize;
  bt::AfProblem p;
  p.d = d;
  for (const Dims& s : c.shapes) {
    bt::HostBuffer h(DType::F32, bt::numel(s));
    for (int64_t j = 0; j < h.size(); ++j) h.set(j, ((j * 37) % 11 - 5) / 4.0);
    p.params.push_back(h);
  }
  for (int k = 0; k < c.steps; ++k) {
    std::vector<bt::HostBuffer> gs;
    for (size_t i = 0; i < c.shapes.size(); ++i) {
      bt::HostBuffer h(DType::F32, bt::numel(c.shapes[i]));
      for (int64_t j = 0; j < h.size(); ++j) h.set(j, ((j * 13 + 7 * k + 3 * static_cast<int64_t>(i)) % 9 - 4) / 8.0);
      gs.push_back(h);
    }
    p.grads.push_back(gs);
    p.lrs.push_back(static_cast<float>(c.lr));
  }
  const auto r = bt::af_run(kCpu, p);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  for (size_t i = 0; i < c.shapes.size(); ++i) {
    const std::string w = std::string(c.name) + " parameter " + std::to_string(i);
    expect_near_rel(r.params[i], c.params[i], 2e-6, (w + " p").c_str());
    if (!c.row_vars[i].empty()) expect_near_rel(r.row_vars[i], c.row_vars[i], 2e-6, (w + " row_var").c_str());
    if (!c.col_vars[i].empty()) expect_near_rel(r.col_vars[i], c.col_vars[i], 2e-6, (w + " col_var").c_str());
    if (!c.variances[i].empty()) expect_near_rel(r.variances[i], c.variances[i], 2e-6, (w + " variance").c_str());
  }
}

TEST(AdafactorCpu, MatchesTorchAdafactor) {
  TorchCase a{"A", {{2, 3}, {3}, {}}, 3};
  a.params = {{-1.25181353, -0.226805583, 0.73636055, -0.99867183, -0.0156727936, 1.00866401},
              {-1.24196756, -0.257488787, 0.76035583},
              {-1.24987507}};
  a.row_vars = {{0.107987136, 0.119860291}, {}, {}};
  a.col_vars = {{0.135436356, 0.08576978, 0.120564997}, {}, {}};
  a.variances = {{}, {0.154929519, 0.0467377529, 0.157913595}, {0.0415091068}};
  expect_torch(a);

  TorchCase b{"B", {{2, 3, 4}, {5}}, 4, 0.05, 0.2};
  b.maximize = true;
  b.params = {{-1.20261121, -0.272316337, 0.784659207, -0.929896772, -0.00732527301, 0.932676315, -0.782916188,
               0.274889678, 1.20339942, -0.495322585, 0.415334761, -1.15347242, -0.211079672, 0.753058195,
               -0.984037817, -0.031197086, 0.998800099, -0.711319864, 0.228692502, 1.15058541, -0.440409213,
               0.497931898, -1.21911311, -0.290888458},
              {-1.21137559, -0.257880867, 0.686338961, -1.02802932, 0.0293101855}};
  b.row_vars = {{0.103423432, 0.0990208238, 0.104244389, 0.105852373, 0.109427005, 0.0973766372}, {}};
  b.col_vars = {{0.0960941687, 0.107949309, 0.105563171, 0.0993115678, 0.0993115678, 0.109957039, 0.0905117989,
                 0.117094278},
                {}};
  b.variances = {{}, {0.12443915, 0.0777089968, 0.110975862, 0.110285453, 0.0971129909}};
  expect_torch(b);

  TorchCase c{"C", {{4, 6}}, 3, 0.3, 0, -0.5, 1.0, 1e-3, 0.1};
  c.params = {{-1.32617772, 0.328772217, 0.267923206, -0.977388501, -0.253647834, 1.23589909, -0.670520961,
               -0.0815937519, 1.63927424, -0.532192528, 1.20330894, -1.79611242, -0.290271521, 0.326099455,
               -0.753475428, -0.0590134449, 0.676266015, -0.481622875, 0.173822209, 1.82877219, -0.982076764,
               0.522611499, -1.5036478, -0.0141010378}};
  c.row_vars = {{0.112946279, 0.0924101323, 0.107143559, 0.112946279}};
  c.col_vars = {{0.0990279764, 0.121334635, 0.0876720399, 0.125603706, 0.0883552954, 0.116175786}};
  c.variances = {{}};
  expect_torch(c);
}

}  // namespace

namespace {

// out_of_place: the results land in the *_out lists, bit for bit those of the
// in-place step; the inputs are untouched; an output may be exactly its input;
// strided views (CPU) give the contiguous results.
TEST(AdafactorCpu, OutOfPlaceAndStridedViews) {
  for (const bool ds : {false, true}) {
    Fixture in_place(ds), f(ds);
    AdafactorDescriptor d = f.plan.descriptor();
    d.out_of_place = true;
    f.plan = AdafactorPlan::select(kCpu, d).value();
    for (size_t e = 0; e < f.g0.size(); ++e) f.g0[e] = in_place.g0[e] = 0.01f * static_cast<float>(e) - 0.07f;
    std::vector<float> p0o(20, -1.f), rvo(4, -1.f), cvo(5, -1.f), p1o(3, -1.f), v1o(3, -1.f);
    float step_o = -1.f;
    const Device c = Device::cpu();
    f.a.params_out = {TensorMut::contiguous(p0o.data(), c, {4, 5}, 20), TensorMut::contiguous(p1o.data(), c, {3}, 3)};
    f.a.row_vars_out = {TensorMut::contiguous(rvo.data(), c, {4, 1}, 4), TensorMut()};
    f.a.col_vars_out = {TensorMut::contiguous(cvo.data(), c, {1, 5}, 5), TensorMut()};
    f.a.variances_out = {TensorMut(), TensorMut::contiguous(v1o.data(), c, {3}, 3)};
    if (ds) {
      BT_EXPECT_STATUS(f.plan.can_implement(f.a), StatusCode::InvalidProblem, "AdafactorPlan: step_out is missing");
      f.a.step_out = TensorMut::contiguous(&step_o, c, Dims{}, 1);
    }
    const std::vector<float> p0_before = f.p0, rv_before = f.rv;
    ASSERT_TRUE(f.plan.run(kCpu, Workspace::none(), f.a).is_ok());
    ASSERT_TRUE(in_place.plan.run(kCpu, Workspace::none(), in_place.a).is_ok());
    EXPECT_EQ(p0o, in_place.p0);
    EXPECT_EQ(p1o, in_place.p1);
    EXPECT_EQ(rvo, in_place.rv);
    EXPECT_EQ(cvo, in_place.cv);
    EXPECT_EQ(v1o, in_place.v1);
    EXPECT_EQ(f.p0, p0_before);
    EXPECT_EQ(f.rv, rv_before);
    if (ds) {
      EXPECT_EQ(step_o, 1.f);
      EXPECT_EQ(f.step, 0.f);
    }
    // An output exactly its input: in place for that tensor.
    f.a.params_out[1] = f.a.params[1];
    EXPECT_TRUE(f.plan.can_implement(f.a).is_ok()) << f.plan.can_implement(f.a).to_string();
    // Shifted by one element: refused.
    f.a.params_out[1].data = f.p1.data() + 1;
    f.a.params_out[1].capacity = 2;
    f.a.params_out[1].shape = Dims{2};
    BT_EXPECT_STATUS(f.plan.can_implement(f.a), StatusCode::InvalidProblem, "params_out[1] shape [2] must be [3]");
    std::vector<float> big(4, 0.f);
    f.a.params_out[1] = TensorMut::contiguous(big.data(), c, {3}, 4);
    f.a.params[1] = TensorMut::contiguous(big.data() + 1, c, {3}, 3);
    BT_EXPECT_STATUS(f.plan.can_implement(f.a), StatusCode::InvalidProblem,
                     "params_out[1] partially overlaps params[1] (in place needs the same data pointer and strides)");
  }
  // Transposed parameter and gradient views give the contiguous results.
  Fixture a, b;
  std::vector<float> pt(20), gt(20);
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 5; ++col) {
      a.p0[r * 5 + col] = b.p0[r * 5 + col] = 0.1f * static_cast<float>(r) - 0.03f * static_cast<float>(col);
      a.g0[r * 5 + col] = b.g0[r * 5 + col] = 0.05f * static_cast<float>(r * col) - 0.2f;
      pt[col * 4 + r] = b.p0[r * 5 + col];
      gt[col * 4 + r] = b.g0[r * 5 + col];
    }
  b.a.params[0] = TensorMut(pt.data(), DType::F32, Device::cpu(), {4, 5}, {1, 4}, 20);
  b.a.grads[0] = TensorRef(gt.data(), DType::F32, Device::cpu(), {4, 5}, {1, 4}, 20);
  ASSERT_TRUE(a.plan.run(kCpu, Workspace::none(), a.a).is_ok());
  ASSERT_TRUE(b.plan.run(kCpu, Workspace::none(), b.a).is_ok());
  for (int r = 0; r < 4; ++r)
    for (int col = 0; col < 5; ++col) EXPECT_EQ(pt[col * 4 + r], a.p0[r * 5 + col]);
  EXPECT_EQ(a.rv, b.rv);
  EXPECT_EQ(a.cv, b.cv);
}

}  // namespace
