// Embedding forward: one warp per output row (grid-stride over rows). The row
// is weight[idx] copied with 16-byte vectors (raw bytes: no conversion) when
// every row is 16-byte aligned with unit column strides, else element by
// element. A bad index writes a zero row and records its position.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_device.hpp"
#include "ops/indexing/cuda/embedding_common.cuh"

namespace baracuda::indexing::cuda::kern {

template <class T, class I, bool Vec>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    embedding_forward_kernel(const ForwardLaunch l, const T* __restrict__ weight, const I* __restrict__ indices,
                             T* __restrict__ out) {
  constexpr int W = Vec ? static_cast<int>(16 / sizeof(T)) : 1;
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const int64_t units = l.D / W;  // vectors (Vec) or elements
  const int64_t tail0 = units * W;  // Vec: the last D % W elements go element by element
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); p < l.n; p += warps) {
    const Offsets o = offsets_of(l.map, p);
    const int64_t v = static_cast<int64_t>(indices[o.idx]);
    const bool ok = v >= 0 && v < l.V;
    if (!ok && lane == 0) record_bad(l.error_word, p);
    T* dst = out + o.row;
    if constexpr (Vec) {
      uint4* d4 = reinterpret_cast<uint4*>(dst);
      if (ok) {
        const uint4* s4 = reinterpret_cast<const uint4*>(weight + v * l.w_row_stride);
        for (int64_t u = lane; u < units; u += 32) d4[u] = __ldg(s4 + u);
      } else {
        for (int64_t u = lane; u < units; u += 32) d4[u] = make_uint4(0, 0, 0, 0);
      }
      for (int64_t j = tail0 + lane; j < l.D; j += 32) dst[j] = ok ? weight[v * l.w_row_stride + j] : T(0.0f);
    } else {
      for (int64_t j = lane; j < l.D; j += 32)
        dst[j * l.out_col_stride] = ok ? weight[v * l.w_row_stride + j * l.w_col_stride] : T(0.0f);
    }
  }
}

template <class T, class I>
Status launch_forward_index(const ForwardLaunch& l) {
  const int64_t want = (l.n + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const unsigned blocks = static_cast<unsigned>(want < (int64_t{1} << 20) ? want : (int64_t{1} << 20));
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  const T* w = static_cast<const T*>(l.weight);
  const I* idx = static_cast<const I*>(l.indices);
  T* out = static_cast<T*>(l.out);
  if (l.vec) embedding_forward_kernel<T, I, true><<<blocks, kWarpsPerBlock * 32, 0, s>>>(l, w, idx, out);
  else embedding_forward_kernel<T, I, false><<<blocks, kWarpsPerBlock * 32, 0, s>>>(l, w, idx, out);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "EmbeddingPlan: kernel launch");
}

}  // namespace baracuda::indexing::cuda::kern
