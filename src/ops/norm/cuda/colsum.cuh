// dweight / dbias: deterministic column sums over the rows in two kernels.
// colsum_partials_kernel: block (tile, chunk) gives each of its threads one
// column of the tile and walks the chunk's rows in order, summing dy * x_hat
// (x_hat recomputed from x and the saved mean / rstd) and dy; the partials go
// to the workspace at [chunk][column]. colsum_final_kernel sums a column's
// partials in chunk order and writes dweight / dbias. The chunk count comes
// from the plan (select(): shape and SM count), so reruns are bit-identical;
// no atomics. Loads are coalesced across a warp's consecutive columns.
#pragma once
#include <algorithm>

#include "ops/norm/cuda/norm_common.cuh"

namespace baracuda::norm::cuda::kern {

template <class T>
__global__ void __launch_bounds__(kColThreads) colsum_partials_kernel(Params p) {
  using Acc = dev::acc_t<T>;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColThreads + threadIdx.x;
  if (col >= p.len) return;
  const int64_t per = (p.rows + p.chunks - 1) / p.chunks;
  const int64_t r0 = static_cast<int64_t>(blockIdx.y) * per, r1 = std::min(p.rows, r0 + per);
  Acc sw = Acc(0), sb = Acc(0);
  // Rows over one outer dim (any contiguous or row-strided tensor): offsets by
  // a multiply, not row_offsets' 64-bit div / mod per row (7-10 % faster on
  // the H100; issuing four rows' loads before summing was faster at [32768,
  // 4096] but slower at [8192, 16384]: measured, not kept).
  const bool one_dim = p.outer_rank <= 1;
  auto offsets = [&](int64_t r, int64_t(&off)[kOperands]) {
    if (one_dim) {
#pragma unroll
      for (int o = 0; o < kOperands; ++o) off[o] = p.outer_rank == 1 ? r * p.outer_stride[o][0] : 0;
    } else {
      row_offsets(p, r, off);
    }
  };
  int64_t r = r0;
  for (; r < r1; ++r) {
    int64_t off[kOperands];
    offsets(r, off);
    const Acc g = dev::to_acc<Acc>(static_cast<const T*>(p.op[kIn1])[off[kIn1] + col]);
    if (p.dweight) {
      const Acc mean = p.rms ? Acc(0) : static_cast<const Acc*>(p.op[kMean])[off[kMean]];
      const Acc rstd = static_cast<const Acc*>(p.op[kRstd])[off[kRstd]];
      const Acc xv = dev::to_acc<Acc>(static_cast<const T*>(p.op[kX])[off[kX] + col]);
      sw += g * ((xv - mean) * rstd);
    }
    sb += g;
  }
  Acc* ws = static_cast<Acc*>(p.workspace);
  const int64_t slot = static_cast<int64_t>(blockIdx.y) * p.len + col;
  ws[slot] = sw;
  ws[p.chunks * p.len + slot] = sb;
}

template <class T>
__global__ void __launch_bounds__(kColThreads) colsum_final_kernel(Params p) {
  using Acc = dev::acc_t<T>;
  const int64_t col = static_cast<int64_t>(blockIdx.x) * kColThreads + threadIdx.x;
  if (col >= p.len) return;
  const Acc* ws = static_cast<const Acc*>(p.workspace);
  Acc sw = Acc(0), sb = Acc(0);
  for (int64_t c = 0; c < p.chunks; ++c) {
    sw += ws[c * p.len + col];
    sb += ws[(p.chunks + c) * p.len + col];
  }
  if (p.dweight) static_cast<T*>(p.dweight)[col] = dev::from_acc<T>(sw);
  if (p.dbias) static_cast<T*>(p.dbias)[col] = dev::from_acc<T>(sb);
}

template <class T>
Status launch_colsum(const Params& p, cudaStream_t stream, const char* what) {
  const int64_t tiles = (p.len + kColThreads - 1) / kColThreads;
  colsum_partials_kernel<T><<<dim3(static_cast<unsigned>(tiles), static_cast<unsigned>(p.chunks)), kColThreads, 0, stream>>>(p);
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what));
  colsum_final_kernel<T><<<static_cast<unsigned>(tiles), kColThreads, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::norm::cuda::kern
