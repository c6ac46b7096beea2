// Softmax launch: dtype and direction dispatch to the kernel templates'
// instantiations (softmax_kernels.cuh), one generated TU per dtype and
// direction listed in ../manifest.cmake.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/softmax/launch.hpp"
#include "ops/softmax/manifest.hpp"  // generated from ops/softmax/manifest.cmake

namespace baracuda::softmax::cuda {

namespace kern {
template <class T>
Status launch_forward_typed(const Launch& l);
template <class T>
Status launch_backward_typed(const Launch& l);
}  // namespace kern

Status launch(const Launch& l) {
  if (!l.backward) {
    switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_forward_typed<T>(l);
      BARACUDA_SOFTMAX_FORWARD_KERNELS(CASE)
#undef CASE
      default: break;
    }
    return Status(StatusCode::Unsupported, "SoftmaxPlan: CUDA kernel needs f32, f64, f16 or bf16");
  }
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_backward_typed<T>(l);
    BARACUDA_SOFTMAX_BACKWARD_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "SoftmaxBackwardPlan: CUDA kernel needs f32, f64, f16 or bf16");
}

}  // namespace baracuda::softmax::cuda
