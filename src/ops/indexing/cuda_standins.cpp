// Stand-ins for the CUDA entry points of launch.hpp, built instead of the
// kernels when CUDA is on but BARACUDA_FAMILIES leaves indexing out: the plans
// then refuse CUDA streams at select() (family_not_built), and these keep them
// linking (and refuse too, should anything reach them).
#include "core/families.hpp"
#include "ops/indexing/index_dim_launch.hpp"
#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::cuda {

BackwardWorkspace backward_workspace(int64_t, int64_t, bool) { return {}; }

Status launch_forward(const ForwardLaunch&) { return baracuda::detail::family_not_built("EmbeddingPlan", "indexing"); }

Status launch_backward(const BackwardLaunch&) {
  return baracuda::detail::family_not_built("EmbeddingBackwardPlan", "indexing");
}

Status read_error_word(const char* plan, void*, const void*, int64_t*) {
  return baracuda::detail::family_not_built(plan, "indexing");
}

UpdateWorkspace update_workspace(int64_t, int64_t) { return {}; }

PutWorkspace put_workspace(int64_t, int64_t) { return {}; }

Status launch_index_select(const SelectLaunch&) {
  return baracuda::detail::family_not_built("IndexSelectPlan", "indexing");
}

Status launch_index_update(const UpdateLaunch&) {
  return baracuda::detail::family_not_built("IndexUpdatePlan", "indexing");
}

}  // namespace baracuda::indexing::cuda
