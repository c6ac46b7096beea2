// CPU reference of IndexSelectPlan / IndexUpdatePlan: the oracle. Plain loops
// over any strides; every index is checked before anything is written
// (InvalidProblem naming the first bad position). The updates combine each
// destination's contributions in position order with the operations the CUDA
// kernels use (f32 accumulator, f64 for f64; Add as fma), so both backends
// agree bit for bit.
#pragma once
#include "baracuda/ops/indexing.hpp"

namespace baracuda::indexing::ref {

// Descriptors as validated by the plans (dim resolved to [0, rank)).
Status index_select(const char* plan, const IndexSelectDescriptor& d, const IndexSelectArgs& a);
Status index_update(const char* plan, const IndexUpdateDescriptor& d, const IndexUpdateArgs& a);

}  // namespace baracuda::indexing::ref
