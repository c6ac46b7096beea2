// Stand-ins for the take / put_ / one_hot CUDA entry points (take_launch.hpp),
// built instead of the kernels when CUDA is on but BARACUDA_FAMILIES leaves
// indexing out (as cuda_standins.cpp for the embedding plans).
#include "core/families.hpp"
#include "ops/indexing/take_launch.hpp"

namespace baracuda::indexing::cuda {

Status launch_take(const TakeLaunch&) { return baracuda::detail::family_not_built("TakePlan", "indexing"); }

Status launch_put(const PutLaunch&) { return baracuda::detail::family_not_built("PutPlan", "indexing"); }

Status launch_one_hot(const OneHotLaunch&) { return baracuda::detail::family_not_built("OneHotPlan", "indexing"); }

}  // namespace baracuda::indexing::cuda
