// RoPE kernels instantiated for float (see rope_kernels.cuh).
#include "ops/rope/cuda/rope_kernels.cuh"

namespace baracuda::cuda_rope::kern {
Status launch_f32(const Launch& l) { return launch_typed<float>(l); }
}  // namespace baracuda::cuda_rope::kern
