// RoPE launch: dtype dispatch to the kernel template's instantiations
// (rope_kernels.cuh), one generated TU per dtype listed in ../manifest.cmake.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "ops/rope/manifest.hpp"  // generated from ops/rope/manifest.cmake
#include "ops/rope/launch.hpp"

namespace baracuda::rope::cuda {

namespace kern {
template <class T>
Status launch_typed(const Launch& l);
}  // namespace kern

Status launch(const Launch& l) {
  switch (l.desc.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_typed<T>(l);
    BARACUDA_ROPE_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "RopePlan: CUDA kernel needs f32, f64, f16 or bf16");
}

}  // namespace baracuda::rope::cuda
