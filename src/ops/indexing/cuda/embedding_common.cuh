// Device helpers shared by the embedding kernels: a position's offsets through
// the row map, and the error word.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::cuda::kern {

struct Offsets {
  int64_t idx, row;
};

// Offsets of position p (row-major over the coalesced index shape): no
// division at all for the common rank <= 1 maps.
__device__ __forceinline__ Offsets offsets_of(const RowMap& m, int64_t p) {
  Offsets o{0, 0};
  for (int d = m.rank - 1; d > 0; --d) {
    const int64_t c = p % m.shape[d];
    p /= m.shape[d];
    o.idx += c * m.idx_stride[d];
    o.row += c * m.row_stride[d];
  }
  if (m.rank > 0) {
    o.idx += p * m.idx_stride[0];
    o.row += p * m.row_stride[0];
  }
  return o;
}

// Records a bad index's position: the word keeps the lowest one (deterministic).
__device__ __forceinline__ void record_bad(void* word, int64_t p) {
  atomicMin(static_cast<unsigned long long*>(word), static_cast<unsigned long long>(p));
}

// First i in [0, n) with keys[i] >= v (n when none).
__device__ __forceinline__ int64_t lower_bound_u32(const uint32_t* keys, int64_t n, uint32_t v) {
  int64_t lo = 0, hi = n;
  while (lo < hi) {
    const int64_t mid = (lo + hi) >> 1;
    if (keys[mid] < v) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

}  // namespace baracuda::indexing::cuda::kern
