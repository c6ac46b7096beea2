// Stand-ins for the masked plans' CUDA entry points (masked_launch.hpp), built
// instead of cuda/masked_launch.cu when CUDA is on but BARACUDA_FAMILIES leaves
// indexing out (as gather_scatter_standins.cpp).
#include "core/families.hpp"
#include "ops/indexing/masked_launch.hpp"

namespace baracuda::indexing::cuda {

MaskedWorkspace masked_workspace(int64_t, int) { return {}; }

Status launch_masked(const MaskedLaunch& l) {
  const char* plan = l.op == MaskedOp::Nonzero ? "NonzeroPlan"
                     : l.op == MaskedOp::Select ? "MaskedSelectPlan"
                                                 : "MaskedScatterPlan";
  return baracuda::detail::family_not_built(plan, "indexing");
}

}  // namespace baracuda::indexing::cuda
