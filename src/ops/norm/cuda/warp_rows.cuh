// Path "warp": one warp per row of up to 32 * kE elements, the row held in
// registers (kE values per lane), so every input is read once and every
// output written once. Lane l holds vectors (i * 32 + l) of W elements (W =
// 16 bytes of T on the vector path, 1 otherwise), i < kE / W; its valid
// values are a prefix of its registers, so fold_registers' n_valid applies.
#pragma once
#include <algorithm>

#include "ops/norm/cuda/norm_common.cuh"

namespace baracuda::norm::cuda::kern {

constexpr int kWarpBlockThreads = 256;

template <class T, int kE, int W>
__device__ __forceinline__ void forward_warp_row(const Params& p, int64_t row, int lane) {
  using Acc = dev::acc_t<T>;
  constexpr int kN = kE / W;
  const int64_t nv = p.len / W;
  const int valid_vecs = lane < nv ? static_cast<int>((nv - lane + 31) / 32) : 0;
  int64_t off[kOperands];
  row_offsets(p, row, off);
  const T* x = row_ptr<const T>(p, kX, off);
  const T* res = row_ptr<const T>(p, kIn3, off);
  T* h = row_ptr<T>(p, kIn1, off);
  T* y = row_ptr<T>(p, kOut, off);
  Acc v[kE];
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    Acc part[W];
    const int64_t c0 = (static_cast<int64_t>(i) * 32 + lane) * W;
    if (i < valid_vecs) {
      dev::load_elems<T, W>(x + c0, part);
      if (res) {
        Acc r[W];
        dev::load_elems<T, W>(res + c0, r);
#pragma unroll
        for (int w = 0; w < W; ++w) part[w] = dev::to_acc<Acc>(dev::from_acc<T>(part[w] + r[w]));  // h in T
        dev::store_elems<T, W>(h + c0, part);
      }
    } else {
#pragma unroll
      for (int w = 0; w < W; ++w) part[w] = Acc(0);
    }
#pragma unroll
    for (int w = 0; w < W; ++w) v[i * W + w] = part[w];
  }
  const int n_valid = valid_vecs * W;
  const Acc inv_n = Acc(1) / static_cast<Acc>(p.len);
  const Acc mean = p.rms ? Acc(0) : dev::warp_row_reduce<SumOp<Acc>>(v, n_valid) * inv_n;
  Acc sq[kE];
#pragma unroll
  for (int e = 0; e < kE; ++e) sq[e] = (v[e] - mean) * (v[e] - mean);
  const Acc rstd = rstd_of(dev::warp_row_reduce<SumOp<Acc>>(sq, n_valid) * inv_n, p.eps);
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    if (i < valid_vecs) {
      const int64_t c0 = (static_cast<int64_t>(i) * 32 + lane) * W;
      Acc w[W], b[W], out[W];
      load_weight<T, W>(p, c0, w);
      load_bias<T, W>(p, c0, b);
#pragma unroll
      for (int k = 0; k < W; ++k) out[k] = (v[i * W + k] - mean) * rstd * w[k] + b[k];
      dev::store_elems<T, W>(y + c0, out);
    }
  }
  if (lane == 0) {
    if (p.op[kMean]) static_cast<Acc*>(p.op[kMean])[off[kMean]] = mean;
    if (p.op[kRstd]) static_cast<Acc*>(p.op[kRstd])[off[kRstd]] = rstd;
  }
}

template <class T, int kE, int W>
__device__ __forceinline__ void backward_warp_row(const Params& p, int64_t row, int lane) {
  using Acc = dev::acc_t<T>;
  constexpr int kN = kE / W;
  const int64_t nv = p.len / W;
  const int valid_vecs = lane < nv ? static_cast<int>((nv - lane + 31) / 32) : 0;
  int64_t off[kOperands];
  row_offsets(p, row, off);
  const T* x = row_ptr<const T>(p, kX, off);
  const T* dy = row_ptr<const T>(p, kIn1, off);
  const T* dh = row_ptr<const T>(p, kIn3, off);
  T* dx = row_ptr<T>(p, kOut, off);
  const Acc mean = p.rms ? Acc(0) : static_cast<const Acc*>(p.op[kMean])[off[kMean]];
  const Acc rstd = static_cast<const Acc*>(p.op[kRstd])[off[kRstd]];
  Acc xh[kE], g[kE];
  SumPair<Acc> s = SumPairOp<Acc>::init();
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    Acc a[W], b[W], w[W];
    const int64_t c0 = (static_cast<int64_t>(i) * 32 + lane) * W;
    if (i < valid_vecs) {
      dev::load_elems<T, W>(x + c0, a);
      dev::load_elems<T, W>(dy + c0, b);
      load_weight<T, W>(p, c0, w);
    } else {
#pragma unroll
      for (int k = 0; k < W; ++k) a[k] = mean, b[k] = Acc(0), w[k] = Acc(0);
    }
#pragma unroll
    for (int k = 0; k < W; ++k) {
      xh[i * W + k] = (a[k] - mean) * rstd;
      g[i * W + k] = b[k] * w[k];
    }
  }
  // Invalid slots hold g = 0 and x_hat = 0, so they add nothing; folded in order.
#pragma unroll
  for (int e = 0; e < kE; ++e) {
    s.g += g[e];
    s.gx += g[e] * xh[e];
  }
  s = dev::warp_allreduce<SumPairOp<Acc>>(s);
  const Acc inv_n = Acc(1) / static_cast<Acc>(p.len);
  const Acc mg = p.rms ? Acc(0) : s.g * inv_n, mgx = s.gx * inv_n;
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    if (i < valid_vecs) {
      const int64_t c0 = (static_cast<int64_t>(i) * 32 + lane) * W;
      Acc extra[W], out[W];
      if (dh) {
        dev::load_elems<T, W>(dh + c0, extra);
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) extra[k] = Acc(0);
      }
#pragma unroll
      for (int k = 0; k < W; ++k) out[k] = rstd * (g[i * W + k] - mg - xh[i * W + k] * mgx) + extra[k];
      dev::store_elems<T, W>(dx + c0, out);
    }
  }
}

template <class T, int kE, bool kBackward>
__global__ void __launch_bounds__(kWarpBlockThreads) warp_rows_kernel(Params p) {
  const int lane = static_cast<int>(threadIdx.x & 31);
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kWarpBlockThreads / 32);
  constexpr int kV = dev::kVec16<T>;
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (kWarpBlockThreads / 32) + (threadIdx.x >> 5); row < p.rows;
       row += warps) {
    if constexpr (kE % kV == 0) {
      if (p.vec) {
        if constexpr (kBackward) backward_warp_row<T, kE, kV>(p, row, lane);
        else forward_warp_row<T, kE, kV>(p, row, lane);
        continue;
      }
    }
    if constexpr (kBackward) backward_warp_row<T, kE, 1>(p, row, lane);
    else forward_warp_row<T, kE, 1>(p, row, lane);
  }
}

template <class T, int kE, bool kBackward>
Status launch_warp(const Params& p, int sm_count, cudaStream_t stream, const char* what) {
  const int64_t rows_per_block = kWarpBlockThreads / 32;
  const int64_t grid = std::min<int64_t>((p.rows + rows_per_block - 1) / rows_per_block, int64_t{std::max(sm_count, 1)} * 32);
  warp_rows_kernel<T, kE, kBackward><<<static_cast<unsigned>(grid), kWarpBlockThreads, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::norm::cuda::kern
