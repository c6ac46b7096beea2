// CPU reference for softmax / log-softmax and their backward: the oracle.
// Plain loops over any strides, all math in double, one rounding to the
// output dtype. The special values are the header's (baracuda/ops/softmax.hpp).
#pragma once
#include "baracuda/ops/softmax.hpp"

namespace baracuda::softmax::ref {

// One call, validated by the plan; axis resolved to [0, rank) (0 for rank 0).
// Forward: in0 = x, out = y. Backward: in0 = y, in1 = dy, out = dx.
struct Problem {
  DType dtype = DType::F32;
  Dims shape;
  int axis = 0;
  bool log = false;
  double scale = 1.0;
  bool backward = false;
  TensorRef in0, in1;
  TensorMut out;
};

Status run(const Problem& p);

}  // namespace baracuda::softmax::ref
