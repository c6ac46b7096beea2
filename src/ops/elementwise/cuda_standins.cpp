// Stand-in for the CUDA entry point of launch.hpp, built instead of the
// kernels when CUDA is on but BARACUDA_FAMILIES leaves elementwise out (the
// plans then refuse CUDA streams at select(); this keeps them linking).
#include "core/families.hpp"
#include "ops/elementwise/launch.hpp"

namespace baracuda::elementwise::cuda {

Status launch(const Problem&, const Call&, Path, void*) {
  return baracuda::detail::family_not_built("elementwise plan", "elementwise");
}

}  // namespace baracuda::elementwise::cuda
