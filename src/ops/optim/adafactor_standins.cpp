// Stand-in for the Adafactor CUDA entry point (adafactor_launch.hpp), built
// instead of the kernels when CUDA is on but BARACUDA_FAMILIES leaves optim out.
#include "core/families.hpp"
#include "ops/optim/adafactor_launch.hpp"

namespace baracuda::optim::adafactor {

Status launch(const Launch&) { return baracuda::detail::family_not_built("AdafactorPlan", "optim"); }

}  // namespace baracuda::optim::adafactor
