// CPU reference for RoPE: the oracle. Plain loops over any strides, all math
// in double (inv_freq = pow(theta, -2i/R), angle = pos * inv_freq, std::cos /
// std::sin), one rounding to the output dtype.
#pragma once
#include "baracuda/ops/rope.hpp"

namespace baracuda::rope::ref {

// Operands of one forward or backward call, already validated by the plan.
// x[0] / y[0]: q (or dy_q) and q_out (or dq); x[1] / y[1]: k side (numel 0
// or unused when !desc.has_k). y[i] may be x[i] itself (in place).
struct Problem {
  RopeDescriptor desc;  // rotary_dim resolved
  bool backward = false;
  TensorRef x[2];
  TensorMut y[2];
  TensorRef positions, cos, sin;
};

Status run(const Problem& p);

}  // namespace baracuda::rope::ref
