// RoPE kernels instantiated for __half (see rope_kernels.cuh).
#include "ops/rope/cuda/rope_kernels.cuh"

namespace baracuda::cuda_rope::kern {
Status launch_f16(const Launch& l) { return launch_typed<__half>(l); }
}  // namespace baracuda::cuda_rope::kern
