// LinearBackwardPlan chained to the previous layer's activation
// (input_activation): dx is the gradient with respect to the previous layer's
// pre-activation, dbias_in that layer's bias gradient. Checked on the CPU in
// f64 against central finite differences of
//   loss(x_pre) = sum(dy * (act(x_pre) . W^T))
// with the activations written here independently of the library, and the
// new descriptor rules.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "baracuda/baracuda.hpp"

using namespace baracuda;

namespace {

double act_of(GemmActivation a, double x) {
  switch (a) {
    case GemmActivation::Relu: return x > 0 ? x : 0.0;
    case GemmActivation::GeluTanh: return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case GemmActivation::Gelu: return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0)));
    default: return x;
  }
}

TEST(GemmChain, InputActivationMatchesFiniteDifferences) {
  const int64_t M = 3, K = 5, N = 4;
  for (GemmActivation in_act : {GemmActivation::Relu, GemmActivation::GeluTanh, GemmActivation::Gelu}) {
    std::vector<double> xpre(M * K), w(N * K), dy(M * N);
    uint64_t state = 12345 + static_cast<uint64_t>(in_act);
    auto rnd = [&] {  // uniform in (-1.5, 1.5), away from relu's kink
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      double v = static_cast<double>(state >> 11) / 9007199254740992.0 * 3.0 - 1.5;
      return std::fabs(v) < 0.05 ? v + 0.2 : v;
    };
    for (double& v : xpre) v = rnd();
    for (double& v : w) v = rnd();
    for (double& v : dy) v = rnd();
    std::vector<double> x(M * K), xaux(M * K);
    for (int64_t i = 0; i < M * K; ++i) {
      x[i] = act_of(in_act, xpre[i]);
      xaux[i] = in_act == GemmActivation::Relu ? x[i] : xpre[i];  // relu: its output is the aux
    }
    auto loss = [&](const std::vector<double>& pre) {
      double l = 0;
      for (int64_t i = 0; i < M; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double y = 0;
          for (int64_t k = 0; k < K; ++k) y += act_of(in_act, pre[i * K + k]) * w[j * K + k];
          l += dy[i * N + j] * y;
        }
      return l;
    };
    LinearBackwardDescriptor d;
    d.forward.dtype = DType::F64;
    d.forward.x_shape = Dims{M, K};
    d.forward.out_features = N;
    d.forward.has_bias = false;
    d.need_dw = false;
    d.need_db = false;
    d.input_activation = in_act;
    d.need_input_bias_grad = true;
    auto plan = LinearBackwardPlan::select(Stream::cpu(), d);
    ASSERT_TRUE(plan) << plan.status().to_string();
    std::vector<double> dx(M * K, -7.0), din(K, -7.0);
    LinearBackwardArgs a;
    a.dy = TensorRef::contiguous(dy.data(), Device::cpu(), Dims{M, N}, M * N);
    a.weight = TensorRef::contiguous(w.data(), Device::cpu(), Dims{N, K}, N * K);
    a.x_aux = TensorRef::contiguous(xaux.data(), Device::cpu(), Dims{M, K}, M * K);
    a.dx = TensorMut::contiguous(dx.data(), Device::cpu(), Dims{M, K}, M * K);
    a.dbias_in = TensorMut::contiguous(din.data(), Device::cpu(), Dims{K}, K);
    ASSERT_TRUE(plan->run(Stream::cpu(), {}, a).is_ok());
    const double eps = 1e-6;
    for (int64_t i = 0; i < M * K; ++i) {
      std::vector<double> p = xpre, q = xpre;
      p[i] += eps;
      q[i] -= eps;
      const double fd = (loss(p) - loss(q)) / (2 * eps);
      EXPECT_NEAR(dx[i], fd, 1e-7 * (1 + std::fabs(fd))) << gemm_activation_name(in_act) << " element " << i;
    }
    for (int64_t k = 0; k < K; ++k) {
      double s = 0;
      for (int64_t i = 0; i < M; ++i) s += dx[i * K + k];
      EXPECT_NEAR(din[k], s, 1e-12 * (1 + std::fabs(s))) << gemm_activation_name(in_act) << " dbias_in " << k;
    }
  }
}

TEST(GemmChain, DescriptorRules) {
  LinearBackwardDescriptor d;
  d.forward.x_shape = Dims{2, 3};
  d.forward.out_features = 4;
  d.need_input_bias_grad = true;
  auto r = LinearBackwardPlan::select(Stream::cpu(), d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("need_input_bias_grad is set but input_activation is none"), std::string::npos)
      << r.status().message();
  d.need_input_bias_grad = false;
  d.input_activation = GemmActivation::GeluTanh;
  d.need_dx = false;
  r = LinearBackwardPlan::select(Stream::cpu(), d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("input_activation is set but need_dx is false"), std::string::npos);
  d.need_dx = true;
  d.input_activation = static_cast<GemmActivation>(9);
  r = LinearBackwardPlan::select(Stream::cpu(), d);
  ASSERT_FALSE(r);
  EXPECT_NE(r.status().message().find("unknown input_activation"), std::string::npos);
}

TEST(GemmChain, XAuxIsRequiredExactlyWhenChained) {
  std::vector<float> buf(64, 0.5f);
  LinearBackwardDescriptor d;
  d.forward.x_shape = Dims{2, 3};
  d.forward.out_features = 4;
  d.forward.has_bias = false;
  d.need_db = false;
  d.need_dw = false;
  auto plan = LinearBackwardPlan::select(Stream::cpu(), d);
  ASSERT_TRUE(plan);
  LinearBackwardArgs a;
  a.dy = TensorRef::contiguous(buf.data(), Device::cpu(), Dims{2, 4}, 8);
  a.weight = TensorRef::contiguous(buf.data() + 8, Device::cpu(), Dims{4, 3}, 12);
  a.dx = TensorMut::contiguous(buf.data() + 32, Device::cpu(), Dims{2, 3}, 6);
  EXPECT_TRUE(plan->can_implement(a).is_ok());
  a.x_aux = TensorRef::contiguous(buf.data() + 20, Device::cpu(), Dims{2, 3}, 6);
  EXPECT_NE(plan->can_implement(a).message().find("x_aux is given but input_activation is none"), std::string::npos);
  d.input_activation = GemmActivation::Gelu;
  auto chained = LinearBackwardPlan::select(Stream::cpu(), d);
  ASSERT_TRUE(chained);
  EXPECT_TRUE(chained->can_implement(a).is_ok());
  a.x_aux = {};
  EXPECT_NE(chained->can_implement(a).message().find("x_aux is missing"), std::string::npos);
  a.x_aux = TensorRef::contiguous(buf.data() + 20, Device::cpu(), Dims{2, 3}, 6);
  a.dbias_in = TensorMut::contiguous(buf.data() + 40, Device::cpu(), Dims{3}, 3);
  EXPECT_NE(chained->can_implement(a).message().find("dbias_in is given but need_input_bias_grad is false"),
            std::string::npos);
  // And the other way: asked for but not given.
  d.need_input_bias_grad = true;
  auto with_din = LinearBackwardPlan::select(Stream::cpu(), d);
  ASSERT_TRUE(with_din);
  EXPECT_TRUE(with_din->can_implement(a).is_ok());
  a.dbias_in = {};
  EXPECT_NE(with_din->can_implement(a).message().find("dbias_in is missing"), std::string::npos)
      << with_din->can_implement(a).message();
}

}  // namespace

namespace {
TEST(GemmChain, VariantKeysAreChecked) {
  LinearBackwardDescriptor d;
  d.forward.x_shape = Dims{2, 3};
  d.forward.out_features = 4;
  PlanPreference p;
  for (const char* ok : {"bgrad=0", "bgrad=1", "dgelu=0", "bgrad=1,dgelu=0", ""}) {
    p.variant = ok;
    EXPECT_TRUE(LinearBackwardPlan::select(Stream::cpu(), d, p).status().is_ok()) << ok;
  }
  for (const char* bad : {"bgrad=2", "tile=1", "dgelu", "bgrad=1,x=0"}) {
    p.variant = bad;
    const Status st = LinearBackwardPlan::select(Stream::cpu(), d, p).status();
    EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << bad;
    EXPECT_NE(st.message().find("variant hint"), std::string::npos) << st.message();
  }
}
}  // namespace
