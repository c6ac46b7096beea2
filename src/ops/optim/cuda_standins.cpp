// Stand-in for the CUDA entry point of launch.hpp, built instead of the
// kernels when CUDA is on but BARACUDA_FAMILIES leaves optim out: the plans
// then refuse CUDA streams at select() (family_not_built), and this keeps them
// linking (and refuses too, should anything reach it).
#include "core/families.hpp"
#include "ops/optim/launch.hpp"

namespace baracuda::optim::cuda {

Status launch(const ListLaunch&) { return baracuda::detail::family_not_built("optim plans", "optim"); }
void prepare(Op, DType) {}

}  // namespace baracuda::optim::cuda
