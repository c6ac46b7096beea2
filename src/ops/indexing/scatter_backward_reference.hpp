// CPU reference of ScatterReduceBackwardPlan: the oracle. Plain loops over any
// strides; every index is checked before anything is written; each
// destination's members are visited in position order through the shared
// scatter_backward_run (scatter_backward_combine.hpp), as the CUDA kernel.
#pragma once
#include "baracuda/ops/indexing.hpp"

namespace baracuda::indexing::ref {

// The descriptor as validated by the plan (dim resolved).
Status scatter_backward(const char* plan, const ScatterReduceBackwardDescriptor& d,
                        const ScatterReduceBackwardArgs& a);

}  // namespace baracuda::indexing::ref
