// Softmax launch: dtype dispatch to the kernel templates' instantiations
// (softmax_kernels.cuh), one generated TU per dtype listed in ../manifest.cmake.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/softmax/launch.hpp"
#include "ops/softmax/manifest.hpp"  // generated from ops/softmax/manifest.cmake

namespace baracuda::softmax::cuda {

namespace kern {
template <class T>
Status launch_typed(const Launch& l);
}  // namespace kern

Status launch(const Launch& l) {
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_typed<T>(l);
    BARACUDA_SOFTMAX_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, l.backward ? "SoftmaxBackwardPlan: CUDA kernel needs f32, f64, f16 or bf16"
                                                    : "SoftmaxPlan: CUDA kernel needs f32, f64, f16 or bf16");
}

}  // namespace baracuda::softmax::cuda
