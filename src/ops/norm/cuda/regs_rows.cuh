// Path "block", variant ".regs" (forward, 16-byte vectors, rows of at most
// 256 * kV vectors, kV <= kRegsMaxVecs; at most 64 registers: 4 blocks per SM): a persistent grid of the resident blocks; a block
// keeps its row in registers (thread t owns vectors t, t + kThreads, ...) and
// issues the loads of its NEXT row before it reduces and writes the current
// one, so every element is read from global memory once, never staged in
// shared memory and never re-read. Why: the staged block path re-reads its
// row from shared memory in each pass and reloads weight / bias per row; on
// the H100 it was instruction-bound (ncu: 71 % SM throughput, 47 % DRAM at
// LayerNorm bf16 [32768, 4096]). The per-thread partial sums are taken in the
// same order as the staged path's, so both give the same bits.
#pragma once
#include <algorithm>

#include "cuda/vector_io.cuh"
#include "ops/norm/cuda/norm_common.cuh"

namespace baracuda::norm::cuda::kern {

inline constexpr int kRegsThreads = 256;

template <class T, int kV>
__global__ void __launch_bounds__(kRegsThreads, 4) forward_regs_kernel(Params p) {
  using Acc = dev::acc_t<T>;
  constexpr int W = dev::kVec16<T>;
  __shared__ Acc red[kRegsThreads / 32];
  const int t = static_cast<int>(threadIdx.x);
  const int nv = static_cast<int>(p.len / W);  // <= kRegsThreads * kV (the plan's choice)
  const bool has_res = p.op[kIn3] != nullptr;
  dev::Words<16> nx[kV], nr[kV];
  auto fetch = [&](int64_t row) {
    int64_t off[kOperands];
    row_offsets(p, row, off);
    const T* x = row_ptr<const T>(p, kX, off);
    const T* r = row_ptr<const T>(p, kIn3, off);
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const int i = t + j * kRegsThreads;
      if (i < nv) {
        nx[j] = dev::load_stream<16>(x + static_cast<int64_t>(i) * W);
        if (has_res) nr[j] = dev::load_stream<16>(r + static_cast<int64_t>(i) * W);
      }
    }
  };
  const Acc inv_n = Acc(1) / static_cast<Acc>(p.len);
  int64_t row = blockIdx.x;
  if (row < p.rows) fetch(row);
  for (; row < p.rows; row += gridDim.x) {
    Acc v[kV][W];
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      if (t + j * kRegsThreads < nv) {
        dev::unpack<T, Acc, 16>(nx[j], v[j]);
        if (has_res) {
          Acc r[W];
          dev::unpack<T, Acc, 16>(nr[j], r);
#pragma unroll
          for (int k = 0; k < W; ++k) v[j][k] = dev::to_acc<Acc>(dev::from_acc<T>(v[j][k] + r[k]));  // h in T
        }
      } else {
#pragma unroll
        for (int k = 0; k < W; ++k) v[j][k] = Acc(0);
      }
    }
    int64_t off[kOperands];
    row_offsets(p, row, off);
    if (row + gridDim.x < p.rows) fetch(row + gridDim.x);  // in flight while this row is reduced and written
    T* h = row_ptr<T>(p, kIn1, off);
    T* y = row_ptr<T>(p, kOut, off);
    Acc s = Acc(0);
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const int i = t + j * kRegsThreads;
      if (i < nv) {
        if (has_res) dev::store_elems<T, W>(h + static_cast<int64_t>(i) * W, v[j]);
#pragma unroll
        for (int k = 0; k < W; ++k) s += p.rms ? v[j][k] * v[j][k] : v[j][k];
      }
    }
    s = dev::block_allreduce<SumOp<Acc>, kRegsThreads>(s, red);
    Acc mean = Acc(0), var = s * inv_n;
    if (!p.rms) {
      mean = s * inv_n;
      Acc q = Acc(0);
#pragma unroll
      for (int j = 0; j < kV; ++j) {
        if (t + j * kRegsThreads < nv) {
#pragma unroll
          for (int k = 0; k < W; ++k) q += (v[j][k] - mean) * (v[j][k] - mean);
        }
      }
      var = dev::block_allreduce<SumOp<Acc>, kRegsThreads>(q, red) * inv_n;
    }
    const Acc rstd = rstd_of(var, p.eps);
#pragma unroll
    for (int j = 0; j < kV; ++j) {
      const int i = t + j * kRegsThreads;
      if (i < nv) {
        const int64_t c0 = static_cast<int64_t>(i) * W;
        Acc w[W], b[W];
        load_weight<T, W>(p, c0, w);
        load_bias<T, W>(p, c0, b);
#pragma unroll
        for (int k = 0; k < W; ++k) v[j][k] = (v[j][k] - mean) * rstd * w[k] + b[k];
        dev::store_elems<T, W>(y + c0, v[j]);
      }
    }
    if (t == 0) {
      if (p.op[kMean]) static_cast<Acc*>(p.op[kMean])[off[kMean]] = mean;
      if (p.op[kRstd]) static_cast<Acc*>(p.op[kRstd])[off[kRstd]] = rstd;
    }
  }
}

template <class T, int kV>
Status launch_regs(const Params& p, int sm_count, cudaStream_t stream, const char* what) {
  int resident = 0;
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(
      static_cast<int>(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&resident, forward_regs_kernel<T, kV>,
                                                                     kRegsThreads, 0)),
      what));
  const int64_t grid = std::min<int64_t>(p.rows, int64_t{std::max(sm_count, 1)} * std::max(resident, 1));
  forward_regs_kernel<T, kV><<<static_cast<unsigned>(grid), kRegsThreads, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::norm::cuda::kern
