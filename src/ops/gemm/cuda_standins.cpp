// Stand-ins for the GEMM family's CUDA passes (launch.hpp), built instead of
// cuda/passes.cu when CUDA is on but BARACUDA_FAMILIES leaves gemm out: the
// plans then refuse CUDA streams at select() (family_not_built), and these
// keep them linking (and refuse too, should anything reach them).
#include "core/families.hpp"
#include "ops/gemm/launch.hpp"

namespace baracuda::gemm::cuda {

namespace {
Status not_built() { return baracuda::detail::family_not_built("MatmulPlan", "gemm"); }
}  // namespace

Status activation_pass(const Stream&, GemmActivation, const TensorRef&, const TensorMut&) { return not_built(); }
Status activation_grad_pass(const Stream&, GemmActivation, const TensorRef&, const TensorRef&, const TensorMut&) {
  return not_built();
}
Status copy_pass(const Stream&, const TensorRef&, const TensorMut&) { return not_built(); }
Status affine_pass(const Stream&, double, const TensorRef&, const TensorRef&, const TensorMut&) { return not_built(); }

}  // namespace baracuda::gemm::cuda
