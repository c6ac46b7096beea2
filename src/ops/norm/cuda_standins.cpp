// Stand-ins for the CUDA entry points of launch.hpp, built instead of the
// kernels when CUDA is on but BARACUDA_FAMILIES leaves norm out: the plans
// then refuse CUDA streams at select() (family_not_built), and these keep them
// linking (and refuse too, should anything reach them).
#include "core/families.hpp"
#include "ops/norm/launch.hpp"

namespace baracuda::norm::cuda {

Status launch_forward(const Launch&) { return baracuda::detail::family_not_built("NormPlan", "norm"); }
Status launch_backward(const Launch&) { return baracuda::detail::family_not_built("NormBackwardPlan", "norm"); }

}  // namespace baracuda::norm::cuda
