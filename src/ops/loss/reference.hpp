// CPU reference for cross-entropy and its gradient: the oracle. Plain loops
// over any strides, all math in double, one rounding per output element. The
// semantics are the header's (baracuda/ops/loss.hpp).
#pragma once
#include "baracuda/ops/loss.hpp"

namespace baracuda::loss::ref {

// One call, validated by the plan. Forward (backward = false): loss, lse
// (optional) and, with d.with_grad, dlogits from dloss. Backward: dlogits
// from the given lse and dloss.
struct Problem {
  const char* plan = "";
  CrossEntropyDescriptor d;
  bool backward = false;
  TensorRef logits, target, weight, lse_in, dloss;
  TensorMut loss, lse, dlogits;
};

// InvalidProblem naming the row when an index target is out of [0, classes)
// and not ignore_index (nothing is written then).
Status run(const Problem& p);

}  // namespace baracuda::loss::ref
