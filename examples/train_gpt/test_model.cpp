// The GPT-2 chain of plans (model.hpp) on the CPU in f64: every parameter
// tensor's gradient (a sample of its elements) against central finite
// differences of the loss, with ignored targets in the batch.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "model.hpp"

using namespace baracuda;
using namespace train_gpt;

namespace {

struct Fixture {
  GptConfig cfg;
  Stream s = Stream::cpu();
  std::vector<int32_t> tokens, targets;
  Fixture() {
    cfg.vocab = 11;
    cfg.layers = 2;
    cfg.heads = 4;
    cfg.channels = 128;  // head_dim 32: the flash plans need [32, 256]
    cfg.seq_len = 5;
    cfg.batch = 2;
    const int64_t n = cfg.batch * cfg.seq_len;
    for (int64_t i = 0; i < n; ++i) {
      tokens.push_back(static_cast<int32_t>((i * 7 + 3) % cfg.vocab));
      targets.push_back(i % 4 == 1 ? -100 : static_cast<int32_t>((i * 5 + 1) % cfg.vocab));
    }
  }
};

double loss_of(Model& m, const Fixture& f) {
  EXPECT_TRUE(m.set_batch(f.tokens, f.targets).is_ok());
  EXPECT_TRUE(m.forward().is_ok());
  const Status st = m.backward();
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  double loss = 0;
  EXPECT_TRUE(m.read_loss(&loss).is_ok());
  return loss;
}

}  // namespace

void check_gradients(GptConfig::Arch arch, int64_t kv_heads) {
  Fixture f;
  f.cfg.arch = arch;
  f.cfg.kv_heads = kv_heads;
  f.cfg.ffn_hidden = 96;
  std::unique_ptr<Model> model = Model::create(f.s, f.cfg, DType::F64);
  Model& m = *model;
  EXPECT_EQ(m.param_count(), f.cfg.parameter_count());
  EXPECT_EQ(m.params().size(), static_cast<size_t>(arch == GptConfig::Arch::Gpt2 ? 4 + 12 * f.cfg.layers : 3 + 6 * f.cfg.layers));
  std::vector<double> theta = m.initial_values(1234);
  // Larger than GPT-2's 0.02 and non-trivial norm parameters, so every path
  // carries a gradient well above the finite differences' noise.
  for (const ParamInfo& p : m.params())
    for (int64_t i = 0; i < p.numel; ++i) {
      double& v = theta[static_cast<size_t>(p.offset + i)];
      v = p.init_std > 0 ? v * 10 : (p.init_std < 0 ? 1.0 + 0.1 * std::sin(static_cast<double>(i)) : 0.05 * std::cos(static_cast<double>(i + p.offset)));
    }
  ASSERT_TRUE(m.upload_params(theta).is_ok());
  const double loss = loss_of(m, f);
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_GT(loss, 0.5);
  std::vector<double> g(theta.size());
  ASSERT_TRUE(m.grad_buffer().copy_to_host(g.data(), g.size() * 8).is_ok());
  const double h = 1e-5;
  int checked = 0;
  for (const ParamInfo& p : m.params()) {
    double gmax = 0;
    for (int64_t i = 0; i < p.numel; ++i) gmax = std::max(gmax, std::fabs(g[static_cast<size_t>(p.offset + i)]));
    EXPECT_GT(gmax, 1e-6) << p.name << " has no gradient at all";
    for (int64_t i = 0; i < p.numel; i += std::max<int64_t>(1, p.numel / 5)) {
      const size_t k = static_cast<size_t>(p.offset + i);
      const double keep = theta[k];
      theta[k] = keep + h;
      ASSERT_TRUE(m.upload_params(theta).is_ok());
      const double up = loss_of(m, f);
      theta[k] = keep - h;
      ASSERT_TRUE(m.upload_params(theta).is_ok());
      const double down = loss_of(m, f);
      theta[k] = keep;
      const double fd = (up - down) / (2 * h);
      EXPECT_NEAR(g[k], fd, 1e-7 + 1e-5 * std::fabs(fd)) << p.name << "[" << i << "]";
      ++checked;
    }
  }
  EXPECT_GE(checked, 5 * static_cast<int>(m.params().size()));  // at least five elements of every tensor
  // The gradient is a function of the parameters and the batch only: a second
  // backward on the same state gives the same bits (nothing accumulates).
  ASSERT_TRUE(m.upload_params(theta).is_ok());
  (void)loss_of(m, f);
  std::vector<double> g2(theta.size());
  ASSERT_TRUE(m.grad_buffer().copy_to_host(g2.data(), g2.size() * 8).is_ok());
  EXPECT_EQ(g, g2);
}

TEST(TrainGptModel, Gpt2GradientsMatchFiniteDifferences) { check_gradients(GptConfig::Arch::Gpt2, 0); }
// Grouped-query attention (4 query heads over 2 key / value heads), RoPE,
// RMSNorm, SwiGLU, untied head.
TEST(TrainGptModel, LlamaGradientsMatchFiniteDifferences) { check_gradients(GptConfig::Arch::Llama, 2); }
