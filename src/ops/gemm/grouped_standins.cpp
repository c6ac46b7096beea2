// Stand-in for the grouped plans' CUDA pass (grouped_launch.hpp), built
// instead of cuda/grouped_fill.cu when CUDA is on but BARACUDA_FAMILIES leaves
// gemm out (the plans then refuse CUDA streams at select(); see
// cuda_standins.cpp).
#include "core/families.hpp"
#include "ops/gemm/grouped_launch.hpp"

namespace baracuda::gemm::cuda {

Status fill_pass(const Stream&, double, const TensorMut&) {
  return baracuda::detail::family_not_built("GroupedLinearBackwardPlan", "gemm");
}

}  // namespace baracuda::gemm::cuda
