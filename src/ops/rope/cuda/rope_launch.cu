// RoPE launch: dtype dispatch to the per-dtype instantiations.
#include "ops/rope/cuda/rope_kernels.cuh"

namespace baracuda::cuda_rope {

Status launch(const Launch& l) {
  switch (l.desc.dtype) {
    case DType::F32: return kern::launch_f32(l);
    case DType::F64: return kern::launch_f64(l);
    case DType::F16: return kern::launch_f16(l);
    case DType::BF16: return kern::launch_bf16(l);
    default: break;
  }
  return Status(StatusCode::Unsupported, "RopePlan: CUDA kernel needs f32, f64, f16 or bf16");
}

}  // namespace baracuda::cuda_rope
