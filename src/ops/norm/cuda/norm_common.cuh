// What every norm kernel shares: the kernel parameters, the row offsets of
// the (coalesced) leading axes, the affine parameters of a vector of columns,
// and the backward's pair of row sums. Semantics: baracuda/ops/norm.hpp.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "cuda/numeric.cuh"
#include "cuda/row_reduce.cuh"
#include "cuda/vector_io.cuh"
#include "ops/norm/launch.hpp"

namespace baracuda::norm::cuda::kern {

// block_rows_kernel's modes (its kFused parameter).
inline constexpr int kModePlain = 0;
inline constexpr int kModeFused = 1;           // backward: dx + column partials
inline constexpr int kModeFusedPrefetch = 2;   // the same, double-buffered staging
inline constexpr int kModeForwardPrefetch = 3; // forward, double-buffered staging, persistent grid

// Kernel arguments (operands: launch.hpp's Operand).
struct Params {
  void* op[kOperands] = {};
  const void* weight = nullptr;
  const void* bias = nullptr;
  void* dweight = nullptr;
  void* dbias = nullptr;
  int64_t len = 0, rows = 0;
  int outer_rank = 0;
  int64_t outer_shape[kMaxRank] = {};
  int64_t outer_stride[kOperands][kMaxRank] = {};
  double eps = 0;
  int rms = 0;
  int zero_centered = 0;
  int vec = 0;
  int64_t chunks = 0;         // column partials (backward)
  int fused_colsum = 0;       // the Block dx kernel writes the partials (grid = chunks)
  int prefetch = 0;           // fused + vec: double-buffered staging, the next row copied by cp.async
  int col_vec = 0;            // colsum_partials_kernel: 16-byte vectors
  void* workspace = nullptr;  // chunks x len sums of dy * x_hat, then chunks x len sums of dy
};

inline Params params_of(const Launch& l) {
  Params p;
  for (int o = 0; o < kOperands; ++o) p.op[o] = l.op[o];
  p.weight = l.weight;
  p.bias = l.bias;
  p.dweight = l.need_dweight ? l.dweight : nullptr;
  p.dbias = l.need_dbias ? l.dbias : nullptr;
  p.len = l.rows.len;
  p.rows = l.rows.rows;
  p.outer_rank = l.rows.outer_rank;
  for (int d = 0; d < l.rows.outer_rank; ++d) {
    p.outer_shape[d] = l.rows.outer_shape[d];
    for (int o = 0; o < kOperands; ++o) p.outer_stride[o][d] = l.rows.outer_stride[o][d];
  }
  p.eps = l.eps;
  p.rms = l.rms ? 1 : 0;
  p.zero_centered = l.zero_centered ? 1 : 0;
  p.vec = l.vec ? 1 : 0;
  p.chunks = l.chunks;
  p.fused_colsum = l.fused_colsum ? 1 : 0;
  p.prefetch = l.prefetch ? 1 : 0;
  p.col_vec = l.col_vec ? 1 : 0;
  p.workspace = l.workspace;
  return p;
}

// Every operand's element offset of row `row`.
__device__ __forceinline__ void row_offsets(const Params& p, int64_t row, int64_t (&off)[kOperands]) {
#pragma unroll
  for (int o = 0; o < kOperands; ++o) off[o] = 0;
  for (int d = p.outer_rank - 1; d >= 0; --d) {
    const int64_t i = row % p.outer_shape[d];
    row /= p.outer_shape[d];
#pragma unroll
    for (int o = 0; o < kOperands; ++o) off[o] += i * p.outer_stride[o][d];
  }
}

// Operand o's row (null when absent).
template <class T>
__device__ __forceinline__ T* row_ptr(const Params& p, int o, const int64_t (&off)[kOperands]) {
  return p.op[o] ? static_cast<T*>(p.op[o]) + off[o] : nullptr;
}

// w' (1 + w when zero-centred, 1 without a weight) of columns c0 .. c0 + W.
template <class T, int W, class Acc>
__device__ __forceinline__ void load_weight(const Params& p, int64_t c0, Acc (&w)[W]) {
  if (p.weight) {
    dev::load_elems<T, W>(static_cast<const T*>(p.weight) + c0, w);
    if (p.zero_centered) {
#pragma unroll
      for (int i = 0; i < W; ++i) w[i] += Acc(1);
    }
  } else {
#pragma unroll
    for (int i = 0; i < W; ++i) w[i] = Acc(1);
  }
}
template <class T, int W, class Acc>
__device__ __forceinline__ void load_bias(const Params& p, int64_t c0, Acc (&b)[W]) {
  if (p.bias) {
    dev::load_elems<T, W>(static_cast<const T*>(p.bias) + c0, b);
  } else {
#pragma unroll
    for (int i = 0; i < W; ++i) b[i] = Acc(0);
  }
}

template <class Acc>
__device__ __forceinline__ Acc rstd_of(Acc var, double eps) {
  return Acc(1) / dev::acc_sqrt(var + static_cast<Acc>(eps));
}

// The backward's two row sums, sum(g) and sum(g * x_hat), as one reduction.
template <class Acc>
struct SumPair {
  Acc g, gx;
};
template <class Acc>
struct SumPairOp {
  using State = SumPair<Acc>;
  __device__ __forceinline__ static State init() { return {Acc(0), Acc(0)}; }
  __device__ __forceinline__ static State combine(const State& a, const State& b) { return {a.g + b.g, a.gx + b.gx}; }
};

template <class Acc>
using SumOp = dev::RowSum<Acc>;

// Shared-memory bytes of one staged row, rounded to 16 (a second buffer stays aligned).
__host__ __device__ inline int64_t staging_bytes(int64_t len, int64_t esize) { return (len * esize + 15) / 16 * 16; }

}  // namespace baracuda::norm::cuda::kern
