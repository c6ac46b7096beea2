// Forward reduction kernels for f64 inputs (all kinds). Separate from the other
// dtypes so the kernel instantiations compile in parallel.
#include "ops/reduce/cuda/forward_common.cuh"

namespace baracuda::cuda_reduce::fwd {
BARACUDA_REDUCE_FWD_FLOAT_OPS(BARACUDA_REDUCE_FWD_INSTANTIATE, double)
}  // namespace baracuda::cuda_reduce::fwd
