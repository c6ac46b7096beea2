// Norm launches: dtype dispatch to the kernel templates' instantiations
// (forward_kernels.cuh, backward_kernels.cuh), one generated TU per dtype and
// direction listed in ../manifest.cmake.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/norm/launch.hpp"
#include "ops/norm/manifest.hpp"  // generated from ops/norm/manifest.cmake

namespace baracuda::norm::cuda {

namespace kern {
template <class T>
Status launch_forward_typed(const Launch& l);
template <class T>
Status launch_backward_typed(const Launch& l);
}  // namespace kern

Status launch_forward(const Launch& l) {
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_forward_typed<T>(l);
    BARACUDA_NORM_FORWARD_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "NormPlan: CUDA kernel needs f32, f64, f16 or bf16");
}

Status launch_backward(const Launch& l) {
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_backward_typed<T>(l);
    BARACUDA_NORM_BACKWARD_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "NormBackwardPlan: CUDA kernel needs f32, f64, f16 or bf16");
}

}  // namespace baracuda::norm::cuda
