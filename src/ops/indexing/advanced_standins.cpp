// Stand-ins for the advanced indexing CUDA entry points (advanced_launch.hpp),
// built instead of the kernels when CUDA is on but BARACUDA_FAMILIES leaves
// indexing out (as gather_scatter_standins.cpp).
#include "core/families.hpp"
#include "ops/indexing/advanced_launch.hpp"

namespace baracuda::indexing::cuda {

Status launch_index_get(const AdvancedLaunch&) { return baracuda::detail::family_not_built("IndexGetPlan", "indexing"); }

Status launch_index_put(const AdvancedLaunch&) { return baracuda::detail::family_not_built("IndexPutPlan", "indexing"); }

}  // namespace baracuda::indexing::cuda
