// dweight / dbias: deterministic column sums over the rows, in two stages.
//
// Stage 1 writes per-chunk partial sums of dy * x_hat and of dy to the
// workspace ([chunk][column], then the dy sums after chunks x len slots), by
// one of:
//   - the dx row kernel itself ("fused", block_rows.cuh): every thread owns the
//     same columns in every row it handles, so it keeps their partials in
//     registers across its block's rows and writes them once at the end (chunk
//     = block; the grid is the plan's chunk count);
//   - colsum_partials_kernel (no dx, the warp and long paths, f64): block
//     (tile, chunk) covers kColVecLanes vectors of columns; its warps take the
//     chunk's rows round robin (warp w: rows w, w + kColWarps, ...), each lane
//     summing one vector of columns, and the warps' sums are combined in warp
//     order through shared memory. 16-byte loads where the plan allows
//     (col_vec), so a warp reads 512 contiguous bytes per row.
// Stage 2, colsum_final_kernel: block tile of kFinalCols columns x kFinalLanes
// chunk lanes; lane k sums chunks k, k + kFinalLanes, ... in order, then the
// lanes are combined in lane order, and dweight / dbias are written.
// Every order is fixed by the plan's chunk count (shape and SM count), so
// reruns are bit-identical; no atomics.
#pragma once
#include <algorithm>

#include "ops/norm/cuda/norm_common.cuh"

namespace baracuda::norm::cuda::kern {

inline constexpr int kColWarps = kColThreads / 32;
inline constexpr int kFinalCols = 32;
inline constexpr int kFinalLanes = 8;

// Rows over one outer dim (any contiguous or row-strided tensor): offsets by a
// multiply, not row_offsets' 64-bit div / mod per row.
__device__ __forceinline__ void colsum_offsets(const Params& p, int64_t r, int64_t (&off)[kOperands]) {
  if (p.outer_rank <= 1) {
#pragma unroll
    for (int o = 0; o < kOperands; ++o) off[o] = p.outer_rank == 1 ? r * p.outer_stride[o][0] : 0;
  } else {
    row_offsets(p, r, off);
  }
}

template <class T, int W>
__device__ __forceinline__ void colsum_partials(const Params& p, dev::acc_t<T>* red) {
  using Acc = dev::acc_t<T>;
  const int lane = static_cast<int>(threadIdx.x & 31), warp = static_cast<int>(threadIdx.x >> 5);
  const int64_t c0 = (static_cast<int64_t>(blockIdx.x) * 32 + lane) * W;  // this lane's first column
  const bool active = c0 < p.len;
  const int64_t per = (p.rows + p.chunks - 1) / p.chunks;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * per, r1 = std::min(p.rows, r0 + per);
  Acc sw[W], sb[W];
#pragma unroll
  for (int k = 0; k < W; ++k) sw[k] = sb[k] = Acc(0);
  if (active) {
    for (int64_t r = r0 + warp; r < r1; r += kColWarps) {
      int64_t off[kOperands];
      colsum_offsets(p, r, off);
      Acc g[W];
      dev::load_elems<T, W>(static_cast<const T*>(p.op[kIn1]) + off[kIn1] + c0, g);
      if (p.dweight) {
        const Acc mean = p.rms ? Acc(0) : static_cast<const Acc*>(p.op[kMean])[off[kMean]];
        const Acc rstd = static_cast<const Acc*>(p.op[kRstd])[off[kRstd]];
        Acc xv[W];
        dev::load_elems<T, W>(static_cast<const T*>(p.op[kX]) + off[kX] + c0, xv);
#pragma unroll
        for (int k = 0; k < W; ++k) sw[k] += g[k] * ((xv[k] - mean) * rstd);
      }
#pragma unroll
      for (int k = 0; k < W; ++k) sb[k] += g[k];
    }
  }
  // Combine the warps in order: warp w's sums at red[w][lane * W + k] (w then b).
  constexpr int kSlots = 32 * W;
#pragma unroll
  for (int k = 0; k < W; ++k) {
    red[(warp * 2) * kSlots + lane * W + k] = sw[k];
    red[(warp * 2 + 1) * kSlots + lane * W + k] = sb[k];
  }
  __syncthreads();
  Acc* ws = static_cast<Acc*>(p.workspace);
  const int64_t tile0 = static_cast<int64_t>(blockIdx.x) * kSlots;
  for (int s = static_cast<int>(threadIdx.x); s < 2 * kSlots; s += kColThreads) {
    const int which = s / kSlots, slot = s % kSlots;  // 0: dy * x_hat, 1: dy
    const int64_t col = tile0 + slot;
    if (col >= p.len) continue;
    Acc sum = Acc(0);
    for (int w = 0; w < kColWarps; ++w) sum += red[(w * 2 + which) * kSlots + slot];
    ws[(static_cast<int64_t>(which) * p.chunks + blockIdx.y) * p.len + col] = sum;
  }
}

template <class T, int W>
__global__ void __launch_bounds__(kColThreads) colsum_partials_kernel(Params p) {
  __shared__ dev::acc_t<T> red[kColWarps * 2 * 32 * W];
  colsum_partials<T, W>(p, red);
}

template <class T>
__global__ void __launch_bounds__(kFinalCols * kFinalLanes) colsum_final_kernel(Params p) {
  using Acc = dev::acc_t<T>;
  __shared__ Acc red[2][kFinalLanes][kFinalCols];
  const int cx = static_cast<int>(threadIdx.x % kFinalCols), lane = static_cast<int>(threadIdx.x / kFinalCols);
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kFinalCols + cx;
  const Acc* ws = static_cast<const Acc*>(p.workspace);
  Acc sw = Acc(0), sb = Acc(0);
  if (col < p.len) {
    for (int64_t c = lane; c < p.chunks; c += kFinalLanes) {
      sw += ws[c * p.len + col];
      sb += ws[(p.chunks + c) * p.len + col];
    }
  }
  red[0][lane][cx] = sw;
  red[1][lane][cx] = sb;
  __syncthreads();
  if (lane != 0 || col >= p.len) return;
  sw = sb = Acc(0);
  for (int k = 0; k < kFinalLanes; ++k) {
    sw += red[0][k][cx];
    sb += red[1][k][cx];
  }
  if (p.dweight) static_cast<T*>(p.dweight)[col] = dev::from_acc<T>(sw);
  if (p.dbias) static_cast<T*>(p.dbias)[col] = dev::from_acc<T>(sb);
}

// Stage 1 by colsum_partials_kernel (unless the row kernel fused it).
template <class T>
Status launch_colsum_partials(const Params& p, cudaStream_t stream, const char* what) {
  constexpr int kV = dev::kVec16<T>;
  const int w = p.col_vec ? kV : 1;
  const int64_t tiles = (p.len + 32 * w - 1) / (32 * w);
  const dim3 grid(static_cast<unsigned>(tiles), static_cast<unsigned>(p.chunks));
  if (p.col_vec) colsum_partials_kernel<T, kV><<<grid, kColThreads, 0, stream>>>(p);
  else colsum_partials_kernel<T, 1><<<grid, kColThreads, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

template <class T>
Status launch_colsum_final(const Params& p, cudaStream_t stream, const char* what) {
  const int64_t tiles = (p.len + kFinalCols - 1) / kFinalCols;
  colsum_final_kernel<T><<<static_cast<unsigned>(tiles), kFinalCols * kFinalLanes, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::norm::cuda::kern
