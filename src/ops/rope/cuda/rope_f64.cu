// RoPE kernels instantiated for double (see rope_kernels.cuh).
#include "ops/rope/cuda/rope_kernels.cuh"

namespace baracuda::cuda_rope::kern {
Status launch_f64(const Launch& l) { return launch_typed<double>(l); }
}  // namespace baracuda::cuda_rope::kern
