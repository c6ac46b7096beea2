// CPU reference of NonzeroPlan / MaskedSelectPlan / MaskedScatterPlan: the
// oracle. Plain loops over the row-major walked shape through any strides;
// elements move as raw bits (as the CUDA kernels move them). MaskedScatter
// checks that the source is long enough before anything is written.
#pragma once
#include "baracuda/ops/indexing_masked.hpp"

namespace baracuda::indexing::ref {

// Strides that read a view of `shape` (strides `strides`) broadcast to `to`
// (torch's rules, already checked): 0 on the leading axes it lacks and on its
// extent-1 axes.
Dims broadcast_strides(const Dims& shape, const Dims& strides, const Dims& to);

// Descriptors as validated by the plans (MaskedSelect's fill_value rounded;
// `shape` its broadcast shape).
Status nonzero(const char* plan, const NonzeroDescriptor& d, const NonzeroArgs& a);
Status masked_select(const char* plan, const MaskedSelectDescriptor& d, const Dims& shape, const MaskedSelectArgs& a);
Status masked_scatter(const char* plan, const MaskedScatterDescriptor& d, const MaskedScatterArgs& a);

}  // namespace baracuda::indexing::ref
