// Stand-ins for the randperm / multinomial CUDA entry points (sampling_launch.hpp),
// built instead of the kernels when CUDA is on but BARACUDA_FAMILIES leaves
// random out.
#include "core/families.hpp"
#include "ops/random/sampling_launch.hpp"

namespace baracuda::random::cuda {

RandpermWorkspace randperm_workspace(int64_t) { return {}; }
MultinomialWorkspace multinomial_workspace(int64_t, int64_t, int64_t, bool) { return {}; }
Status launch_randperm(const RandpermLaunch&) { return baracuda::detail::family_not_built("RandpermPlan", "random"); }
Status launch_multinomial(const MultinomialLaunch&) {
  return baracuda::detail::family_not_built("MultinomialPlan", "random");
}
Status read_sampling_error_word(const char*, void*, const void*, int64_t*) {
  return baracuda::detail::family_not_built("MultinomialPlan", "random");
}

}  // namespace baracuda::random::cuda
