// CPU reference of GatherPlan / ScatterPlan: the oracle. Plain loops over any
// strides; every index is checked before anything is written. Scatter
// reductions combine in position order in the accumulator the CUDA kernels use
// (f32 for f16 / bf16 / f32, f64 for f64), so the two backends agree bit for bit.
#pragma once
#include "baracuda/ops/indexing.hpp"

namespace baracuda::indexing::ref {

// Descriptors as validated by the plans (dim resolved; a scatter value already
// rounded to dtype).
Status gather(const char* plan, const GatherDescriptor& d, const GatherArgs& a);
Status scatter(const char* plan, const ScatterDescriptor& d, const ScatterArgs& a);

}  // namespace baracuda::indexing::ref
