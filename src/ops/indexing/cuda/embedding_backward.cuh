// Embedding backward, after the sort (embedding_sort.cu): keys_out holds the
// rows in ascending order (V marks a skipped index: bad or padding_idx, sorted
// last), pos_out the positions, each row's run in position order (the sort is
// stable). One warp per (row or run, column chunk) sums its run's dout rows in
// that order in Acc (f32; f64 for f64) and stores the sums once:
//   dense:   task row v reads its run [row_start[v], row_start[v + 1]); an
//            empty run writes zeros, so every row of dweight is written;
//   compact: task i works when sorted entry i starts a run; run_id (an
//            inclusive scan of the run starts) numbers its output row; task i
//            also fills output row i when i >= count (row -1, zeros).
// A chunk covers 32 * kBwdVecsPerLane units of a row: 16-byte vectors of dout
// (Vec), else single elements; with Vec the last D % W columns are summed
// element by element by chunk 0.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "cuda/vector_io.cuh"
#include "ops/indexing/cuda/embedding_common.cuh"

namespace baracuda::indexing::cuda::kern {

template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// W accumulators stored as W elements of G at p (16-byte aligned when W > 1).
template <class G, int W, class Acc>
__device__ __forceinline__ void store_sums(G* p, const Acc (&a)[W]) {
  if constexpr (W == 1 || W * sizeof(G) == 16) {
    dev::store_elems<G, W>(p, a);
  } else {  // f32 sums of 8 16-bit columns: two 16-byte stores
    static_assert(W * sizeof(G) == 32, "a 16-byte vector of dout widens to 32 bytes");
    Acc lo[W / 2], hi[W / 2];
#pragma unroll
    for (int i = 0; i < W / 2; ++i) lo[i] = a[i], hi[i] = a[W / 2 + i];
    dev::store_elems<G, W / 2>(p, lo);
    dev::store_elems<G, W / 2>(p + W / 2, hi);
  }
}

// Sums the run [b, e) of the sorted entries into output row `grad_row` for
// chunk `chunk` of the columns.
template <class T, class G, bool Vec>
__device__ __forceinline__ void sum_run(const BackwardLaunch& l, const int32_t* __restrict__ pos, int64_t b, int64_t e,
                                        G* __restrict__ grad_row, int64_t chunk, int lane) {
  using Acc = AccOf<T>;
  constexpr int W = Vec ? static_cast<int>(16 / sizeof(T)) : 1;
  constexpr int K = kBwdVecsPerLane;
  const T* dout = static_cast<const T*>(l.dout);
  const int64_t units = l.D / W;
  const int64_t u0 = chunk * 32 * K + lane;
  Acc acc[K][W];
#pragma unroll
  for (int k = 0; k < K; ++k)
#pragma unroll
    for (int w = 0; w < W; ++w) acc[k][w] = Acc(0);
  // Vec: chunk 0 also sums the tail columns [units * W, D), one per lane.
  const int64_t tail_col = units * W + lane;
  const bool has_tail = Vec && chunk == 0 && tail_col < l.D;
  Acc tail = Acc(0);
#pragma unroll 4
  for (int64_t j = b; j < e; ++j) {
    const T* src = dout + offsets_of(l.map, pos[j]).row;
#pragma unroll
    for (int k = 0; k < K; ++k) {
      const int64_t u = u0 + k * 32;
      if (u < units) {
        Acc v[W];
        if constexpr (Vec) dev::load_elems<T, W>(src + u * W, v);
        else v[0] = dev::to_acc<Acc>(src[u * l.dout_col_stride]);
#pragma unroll
        for (int w = 0; w < W; ++w) acc[k][w] += v[w];
      }
    }
    if (has_tail) tail += dev::to_acc<Acc>(src[tail_col]);
  }
#pragma unroll
  for (int k = 0; k < K; ++k) {
    const int64_t u = u0 + k * 32;
    if (u < units) {
      if constexpr (Vec) store_sums<G, W>(grad_row + u * W, acc[k]);
      else grad_row[u * l.g_col_stride] = dev::from_acc<G>(acc[k][0]);
    }
  }
  if (has_tail) grad_row[tail_col] = dev::from_acc<G>(tail);
}

template <class T, class G, bool Vec>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    embedding_dense_kernel(const BackwardLaunch l, const int32_t* __restrict__ row_start,
                           const int32_t* __restrict__ pos, int64_t chunks) {
  const int lane = threadIdx.x & 31;
  const int64_t tasks = l.V * chunks;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); t < tasks; t += warps) {
    const int64_t v = t / chunks, chunk = t - v * chunks;
    sum_run<T, G, Vec>(l, pos, row_start[v], row_start[v + 1], static_cast<G*>(l.grad) + v * l.g_row_stride, chunk, lane);
  }
}

template <class T, class G, bool Vec>
__global__ void __launch_bounds__(kWarpsPerBlock * 32)
    embedding_compact_kernel(const BackwardLaunch l, const uint32_t* __restrict__ keys, const int32_t* __restrict__ pos,
                             const int32_t* __restrict__ run_id, int64_t chunks) {
  const int lane = threadIdx.x & 31;
  const int64_t tasks = l.n * chunks;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * kWarpsPerBlock;
  const uint32_t skip = static_cast<uint32_t>(l.V);
  const int64_t count = run_id[l.n - 1];  // n >= 1 here
  if (blockIdx.x == 0 && threadIdx.x == 0) *static_cast<int64_t*>(l.count) = count;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kWarpsPerBlock + (threadIdx.x >> 5); t < tasks; t += warps) {
    const int64_t i = t / chunks, chunk = t - i * chunks;
    if (i >= count) {  // output row i is past count: row -1, zero gradient
      sum_run<T, G, Vec>(l, pos, 0, 0, static_cast<G*>(l.grad) + i * l.g_row_stride, chunk, lane);
      if (chunk == 0 && lane == 0) {
        if (l.index_dtype == DType::I32) static_cast<int32_t*>(l.unique_rows)[i * l.unique_stride] = -1;
        else static_cast<int64_t*>(l.unique_rows)[i * l.unique_stride] = -1;
      }
    }
    const uint32_t key = keys[i];
    if (key == skip || (i > 0 && keys[i - 1] == key)) continue;  // not the start of a run
    const int64_t e = lower_bound_u32(keys, l.n, key + 1);  // key < V < 2^31 - 1
    const int64_t slot = run_id[i] - 1;
    sum_run<T, G, Vec>(l, pos, i, e, static_cast<G*>(l.grad) + slot * l.g_row_stride, chunk, lane);
    if (chunk == 0 && lane == 0) {
      if (l.index_dtype == DType::I32) static_cast<int32_t*>(l.unique_rows)[slot * l.unique_stride] = static_cast<int32_t>(key);
      else static_cast<int64_t*>(l.unique_rows)[slot * l.unique_stride] = static_cast<int64_t>(key);
    }
  }
}

template <class T, class G, bool Vec>
Status launch_sums(const BackwardLaunch& l) {
  constexpr int W = Vec ? static_cast<int>(16 / sizeof(T)) : 1;
  const int64_t units = l.D / W;
  const int64_t per_chunk = int64_t{32} * kBwdVecsPerLane;
  const int64_t chunks = units > 0 ? (units + per_chunk - 1) / per_chunk : 1;  // >= 1: chunk 0 owns the tail
  const int64_t tasks = (l.compact ? l.n : l.V) * chunks;
  const int64_t want = (tasks + kWarpsPerBlock - 1) / kWarpsPerBlock;
  const unsigned blocks = static_cast<unsigned>(want < (int64_t{1} << 20) ? want : (int64_t{1} << 20));
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  const auto* keys = reinterpret_cast<const uint32_t*>(ws + l.ws.keys_out);
  const auto* pos = reinterpret_cast<const int32_t*>(ws + l.ws.pos_out);
  if (blocks == 0) return Status::ok();
  if (l.compact)
    embedding_compact_kernel<T, G, Vec><<<blocks, kWarpsPerBlock * 32, 0, s>>>(
        l, keys, pos, reinterpret_cast<const int32_t*>(ws + l.ws.run_id), chunks);
  else
    embedding_dense_kernel<T, G, Vec><<<blocks, kWarpsPerBlock * 32, 0, s>>>(
        l, reinterpret_cast<const int32_t*>(ws + l.ws.row_start), pos, chunks);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "EmbeddingBackwardPlan: kernel launch");
}

template <class T, class G>
Status launch_sums_vec(const BackwardLaunch& l) {
  return l.vec ? launch_sums<T, G, true>(l) : launch_sums<T, G, false>(l);
}

}  // namespace baracuda::indexing::cuda::kern
