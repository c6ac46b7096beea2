// Reduction backward kernels instantiated for __nv_bfloat16 (see backward_kernels.cuh).
#include "ops/reduce/cuda/backward_kernels.cuh"

namespace baracuda::cuda_reduce::bw {
Status run_bf16(const Problem& pb) { return run_typed<__nv_bfloat16>(pb); }
}  // namespace baracuda::cuda_reduce::bw
