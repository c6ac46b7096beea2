// Stand-ins for the random family's CUDA entry points (launch.hpp), built
// instead of the kernels when CUDA is on but BARACUDA_FAMILIES leaves random
// out: the plans then refuse CUDA streams at select() (family_not_built).
#include "core/families.hpp"
#include "ops/random/launch.hpp"

namespace baracuda::random::cuda {

Status launch_fill(const FillLaunch&) { return baracuda::detail::family_not_built("RandomPlan", "random"); }

Status launch_dropout(const DropoutLaunch& l) {
  return baracuda::detail::family_not_built(l.backward ? "DropoutBackwardPlan" : "DropoutPlan", "random");
}

}  // namespace baracuda::random::cuda
