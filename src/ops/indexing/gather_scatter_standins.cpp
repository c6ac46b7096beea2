// Stand-ins for the gather / scatter CUDA entry points (gather_scatter_launch.hpp),
// built instead of the kernels when CUDA is on but BARACUDA_FAMILIES leaves
// indexing out (as cuda_standins.cpp for the embedding plans).
#include "core/families.hpp"
#include "ops/indexing/gather_scatter_launch.hpp"

namespace baracuda::indexing::cuda {

ScatterWorkspace scatter_workspace(int64_t, int64_t, size_t, int64_t, int64_t) { return {}; }

Status launch_gather(const GatherLaunch&) { return baracuda::detail::family_not_built("GatherPlan", "indexing"); }

Status launch_scatter(const ScatterLaunch&) { return baracuda::detail::family_not_built("ScatterPlan", "indexing"); }

}  // namespace baracuda::indexing::cuda
