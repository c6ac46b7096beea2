// CPU reference of IndexGetPlan / IndexPutPlan: plain loops over the positions
// of R through the plan's map of the actual views (advanced_launch.hpp).
// Every index is checked before anything is written. index_put accumulates
// each destination's contributions in position order in the accumulator the
// CUDA kernel uses (f32 for f16 / bf16 / f32, f64, int64 wrap-around), so the
// two backends agree bit for bit.
#pragma once
#include "ops/indexing/advanced_launch.hpp"

namespace baracuda::indexing::ref {

Status index_get(const char* plan, const cuda::AdvancedLaunch& l);
Status index_put(const char* plan, const cuda::AdvancedLaunch& l);

}  // namespace baracuda::indexing::ref
