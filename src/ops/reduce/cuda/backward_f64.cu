// Reduction backward kernels instantiated for double (see backward_kernels.cuh).
#include "ops/reduce/cuda/backward_kernels.cuh"

namespace baracuda::cuda_reduce::bw {
Status run_f64(const Problem& pb) { return run_typed<double>(pb); }
}  // namespace baracuda::cuda_reduce::bw
