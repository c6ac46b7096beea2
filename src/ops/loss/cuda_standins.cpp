// Stand-ins for the CUDA entry points of launch.hpp, built instead of the
// kernels when CUDA is on but BARACUDA_FAMILIES leaves loss out: the plans
// then refuse CUDA streams at select() (family_not_built), and this keeps them
// linking (and refuses too, should anything reach it).
#include "core/families.hpp"
#include "ops/loss/launch.hpp"

namespace baracuda::loss::cuda {

namespace {
Status not_built(const Launch& l) {
  return baracuda::detail::family_not_built(l.mode == Mode::Backward ? "CrossEntropyBackwardPlan" : "CrossEntropyPlan",
                                            "loss");
}
}  // namespace

Status launch_divisor(const Launch& l) { return not_built(l); }
Status launch_rows(const Launch& l) { return not_built(l); }
Status launch_reduce(const Launch& l) { return not_built(l); }
Status launch(const Launch& l) { return not_built(l); }

}  // namespace baracuda::loss::cuda
