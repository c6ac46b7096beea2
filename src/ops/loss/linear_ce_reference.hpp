// CPU reference of FusedLinearCrossEntropyPlan: the unfused composition's
// math (LinearPlan, then the cross-entropy reference with a gradient, then
// LinearBackwardPlan) row block by row block, with the same double sums in
// the same order and the same stored roundings (the logits and dlogits in
// the dtype), so it does not depend on any chunking: dW and db accumulate in
// double over all rows and are rounded once. Any strides.
#pragma once
#include "baracuda/ops/loss.hpp"

namespace baracuda::loss::ref {

struct LinearCe {
  const char* plan = "";
  FusedLinearCrossEntropyDescriptor d;
  FusedLinearCrossEntropyArgs a;
};

// InvalidProblem naming the row when a target is out of [0, classes) and not
// ignore_index (nothing is written then).
Status run_linear_ce(const LinearCe& p);

}  // namespace baracuda::loss::ref
