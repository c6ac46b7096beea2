// Stand-in for the CUDA entry point of factory_launch.hpp, built instead of
// cuda/factory.cu when CUDA is on but BARACUDA_FAMILIES leaves elementwise
// out (FactoryPlan then refuses CUDA streams at select(); this keeps it linking).
#include "core/families.hpp"
#include "ops/elementwise/factory_launch.hpp"

namespace baracuda::elementwise::factory::cuda {

Status launch(const Resolved&, const baracuda::detail::EwLayout&, void*, bool, void*) {
  return baracuda::detail::family_not_built("FactoryPlan", "elementwise");
}

}  // namespace baracuda::elementwise::factory::cuda
