// CPU reference of the GEMM family: the Problem of problem.hpp executed with
// loops in double (any strides), the activations and their gradients in
// double, and LinearBackwardPlan's three gradients directly from their
// definitions (not through Problem: the oracle stays independent of the
// decomposition the CUDA route uses).
#pragma once
#include "baracuda/core/status.hpp"
#include "baracuda/ops/gemm.hpp"
#include "ops/gemm/problem.hpp"

namespace baracuda::gemm::ref {

double activation(GemmActivation a, double x);
// d act / d pre at pre = x (Relu: 1 for x > 0, else 0 — PyTorch's threshold_backward).
double activation_grad(GemmActivation a, double x);

Status run(const Problem& p);

struct LinearBackward {
  LinearBackwardDescriptor desc;
  int64_t rows = 0;  // M
  LinearBackwardArgs args;
};
Status run_linear_backward(const LinearBackward& p);

}  // namespace baracuda::gemm::ref
