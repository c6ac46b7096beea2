// RoPE kernels instantiated for __nv_bfloat16 (see rope_kernels.cuh).
#include "ops/rope/cuda/rope_kernels.cuh"

namespace baracuda::cuda_rope::kern {
Status launch_bf16(const Launch& l) { return launch_typed<__nv_bfloat16>(l); }
}  // namespace baracuda::cuda_rope::kern
