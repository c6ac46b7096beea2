// Stand-ins for the CUDA entry points of launch.hpp, built instead of the
// kernels when CUDA is on but BARACUDA_FAMILIES leaves attention_paged out: the
// plans then refuse CUDA streams at select() (family_not_built), and this
// keeps them linking (and refuses too, should anything reach it).
#include "core/families.hpp"
#include "ops/attention_paged/launch.hpp"

namespace baracuda::attention_paged::cuda {

Status launch_attention(const AttnLaunch&) {
  return baracuda::detail::family_not_built("PagedAttentionPlan", "attention_paged");
}
Status launch_append(const AppendLaunch&) {
  return baracuda::detail::family_not_built("PagedKvAppendPlan", "attention_paged");
}

}  // namespace baracuda::attention_paged::cuda
