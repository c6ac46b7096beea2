// Reduction backward kernels instantiated for float (see backward_kernels.cuh).
#include "ops/reduce/cuda/backward_kernels.cuh"

namespace baracuda::cuda_reduce::bw {
Status run_f32(const Problem& pb) { return run_typed<float>(pb); }
}  // namespace baracuda::cuda_reduce::bw
