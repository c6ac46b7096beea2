// A first CPU check of the GEMM family (the full suites live in cpu_gemm.cpp):
// a 2 x 3 . 3 x 2 product with bias and relu against hand-computed values.
#include <gtest/gtest.h>

#include <vector>

#include "baracuda/baracuda.hpp"

using namespace baracuda;

TEST(GemmSmoke, MatmulBiasRelu) {
  const std::vector<float> a = {1, 2, 3, 4, 5, 6};        // [2, 3]
  const std::vector<float> b = {1, -1, 0, 1, -1, 0};      // [3, 2]
  const std::vector<float> bias = {3.0f, -1.5f};
  std::vector<float> out(4, -99.0f);
  MatmulDescriptor d;
  d.a_shape = Dims{2, 3};
  d.b_shape = Dims{3, 2};
  d.has_bias = true;
  d.activation = GemmActivation::Relu;
  auto plan = MatmulPlan::select(Stream::cpu(), d);
  ASSERT_TRUE(plan.is_ok()) << plan.status().message();
  MatmulArgs args;
  args.a = TensorRef::contiguous(a.data(), Device::cpu(), Dims{2, 3}, 6);
  args.b = TensorRef::contiguous(b.data(), Device::cpu(), Dims{3, 2}, 6);
  args.bias = TensorRef::contiguous(bias.data(), Device::cpu(), Dims{2}, 2);
  args.out = TensorMut::contiguous(out.data(), Device::cpu(), Dims{2, 2}, 4);
  ASSERT_TRUE(plan->run(Stream::cpu(), {}, args).is_ok());
  // a.b = [[1*1 + 2*0 + 3*-1, 1*-1 + 2*1 + 0], [4 - 6, -4 + 5]] = [[-2, 1], [-2, 1]]
  EXPECT_FLOAT_EQ(out[0], 1.0f);  // relu(-2 + 3)
  EXPECT_FLOAT_EQ(out[1], 0.0f);  // relu(1 - 1.5)
  EXPECT_FLOAT_EQ(out[2], 1.0f);
  EXPECT_FLOAT_EQ(out[3], 0.0f);
}
