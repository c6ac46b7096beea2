// Stand-in for ScatterReduceBackwardPlan's CUDA entry point
// (scatter_backward_launch.hpp), built instead of the kernels when CUDA is on
// but BARACUDA_FAMILIES leaves indexing out (scatter_workspace() comes from
// gather_scatter_standins.cpp then).
#include "core/families.hpp"
#include "ops/indexing/scatter_backward_launch.hpp"

namespace baracuda::indexing::cuda {

Status launch_scatter_backward(const ScatterBackwardLaunch&) {
  return baracuda::detail::family_not_built("ScatterReduceBackwardPlan", "indexing");
}

}  // namespace baracuda::indexing::cuda
