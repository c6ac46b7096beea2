// Reduction backward kernels instantiated for __half (see backward_kernels.cuh).
#include "ops/reduce/cuda/backward_kernels.cuh"

namespace baracuda::cuda_reduce::bw {
Status run_f16(const Problem& pb) { return run_typed<__half>(pb); }
}  // namespace baracuda::cuda_reduce::bw
