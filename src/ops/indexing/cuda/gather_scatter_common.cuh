// Device helpers of the gather / scatter kernels: a position's coordinates in
// a row-major shape and their offset through strides.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/indexing/gather_scatter_launch.hpp"

namespace baracuda::indexing::cuda::kern {

// Coordinates of position p of the row-major flattened shape (rank >= 1),
// dividing in U: uint32_t when p and every extent are below 2^32 (the plans'
// CUDA limits make that the common case; a 64-bit division costs several
// times more and was most of these kernels' time), else uint64_t.
template <class U>
__device__ __forceinline__ void coords_of(int rank, const int64_t* shape, U p, int64_t* c) {
  for (int d = rank - 1; d > 0; --d) {
    const U s = static_cast<U>(shape[d]);
    c[d] = static_cast<int64_t>(p % s);
    p /= s;
  }
  c[0] = static_cast<int64_t>(p);
}

__device__ __forceinline__ int64_t offset_of(int rank, const int64_t* c, const int64_t* stride) {
  int64_t o = 0;
  for (int d = 0; d < rank; ++d) o += c[d] * stride[d];
  return o;
}

template <class I>
__device__ __forceinline__ int64_t load_index(const void* index, int64_t off) {
  return static_cast<int64_t>(static_cast<const I*>(index)[off]);
}

inline unsigned grid_for(int64_t items, int threads) {
  const int64_t b = (items + threads - 1) / threads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (int64_t{1} << 20) ? (int64_t{1} << 20) : b));
}

}  // namespace baracuda::indexing::cuda::kern
