// Stand-in for the CUDA entry point of launch.hpp, built instead of the
// kernels when CUDA is on but BARACUDA_FAMILIES leaves softmax out: the plans
// then refuse CUDA streams at select() (family_not_built), and this keeps them
// linking (and refuses too, should anything reach it).
#include "core/families.hpp"
#include "ops/softmax/launch.hpp"

namespace baracuda::softmax::cuda {

Status launch(const Launch& l) {
  return baracuda::detail::family_not_built(l.backward ? "SoftmaxBackwardPlan" : "SoftmaxPlan", "softmax");
}

}  // namespace baracuda::softmax::cuda
