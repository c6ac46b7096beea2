// Stand-ins for the CUDA entry points of launch.hpp, built instead of the
// kernels when CUDA is on but BARACUDA_FAMILIES leaves reduce out: the plans
// then refuse CUDA streams at select() (family_not_built), and these keep them
// linking (and refuse too, should anything reach them).
#include "core/families.hpp"
#include "ops/reduce/launch.hpp"

namespace baracuda::reduce::cuda {

size_t forward_workspace_bytes(ReduceKind, DType, const baracuda::detail::ReduceLayout&, int) { return 0; }
std::string forward_variant(ReduceKind, DType, const baracuda::detail::ReduceLayout&, int) { return "not-built"; }
std::string forward_variant_for(const ForwardLaunch&) { return "not-built"; }
Status launch_forward(const ForwardLaunch&) { return baracuda::detail::family_not_built("ReducePlan", "reduce"); }
size_t backward_workspace_bytes(ReduceKind, DType, const Dims&, uint32_t, int) { return 0; }
Status launch_backward(const BackwardLaunch&) { return baracuda::detail::family_not_built("ReduceBackwardPlan", "reduce"); }

}  // namespace baracuda::reduce::cuda
