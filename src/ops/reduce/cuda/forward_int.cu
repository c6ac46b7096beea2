// Forward reduction kernels for i32 and i64 inputs (Sum, Prod, Max, Min,
// ArgMax, ArgMin; accumulated in int64).
#include "ops/reduce/cuda/forward_common.cuh"

namespace baracuda::cuda_reduce::fwd {
BARACUDA_REDUCE_FWD_INT_OPS(BARACUDA_REDUCE_FWD_INSTANTIATE, int32_t)
BARACUDA_REDUCE_FWD_INT_OPS(BARACUDA_REDUCE_FWD_INSTANTIATE, int64_t)
}  // namespace baracuda::cuda_reduce::fwd
