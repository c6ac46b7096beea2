// Reduction backward: streaming partial kernels for Var/Std and Max/Min over
// slices too long for one register tile: few registers, several 16-byte loads
// in flight per thread, whole cache lines per warp. Each block writes the
// partial of one (slice group, segment) pair; combine_kernel
// (backward_combine.cuh) folds the segments.
//   row_partial_kernel  long contiguous slices
//   col_partial_kernel  slices strided across a contiguous kept dim (reducing
//                       a leading / middle axis): each lane owns 4-8
//                       neighbouring slices through 16-byte loads
// Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "ops/reduce/cuda/backward_block_reduce.cuh"
#include "ops/reduce/cuda/backward_common.cuh"
#include "ops/reduce/cuda/backward_planner.cuh"

namespace baracuda::reduce::cuda::bw {

constexpr int kPartUnroll = 4;  // 16-byte loads in flight per thread and step

template <class T>
struct PartParams {
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int nr;
  int64_t rsize[kMaxRank];
  int64_t rst[2][kMaxRank];
  int64_t M, L;
  int64_t S;        // segments per slice
  int64_t seg;      // row kernel: 16-byte chunks per segment; column kernel: reduced elements per segment
  int64_t GV;       // column kernel: groups of 32 vectors of slices
  const T* x;
  const T* y;
  void* part;       // [M][S]
  acc_t<T>* aux;    // TK_MEAN: [M] shift
};

// Per-element partial: sum of x - shift (Var/Std) or tie count (Max/Min).
template <int TK, class Q, class A>
__device__ __forceinline__ void accumulate(Q& part, A v, A shift, A yv) {
  if constexpr (TK == TK_MEAN) {
    part += v - shift;
  } else {
    part += (v == yv || (v != v && yv != yv)) ? 1 : 0;
  }
}

// Contiguous slices (one reduced dim of stride 1, 16-byte aligned): a block per
// (slice, segment of `seg` chunks).
template <int TK, class T>
__global__ void __launch_bounds__(kPartThreads, 4) row_partial_kernel(const PartParams<T> p) {
  using A = acc_t<T>;
  using P = std::conditional_t<TK == TK_TIE, long long, A>;
  constexpr int V = static_cast<int>(16 / sizeof(T));
  __shared__ P sm[kPartThreads / 32];
  const int64_t o = blockIdx.x / p.S, s = blockIdx.x - o * p.S;
  int64_t ko[kKeptOperands];
  kept_offsets(p, o, ko);
  const T* xr = p.x + ko[kKx];
  A shift = A(0);
  if constexpr (TK == TK_MEAN) {
    shift = ld_acc(xr);  // see tile_kernel: exact mean of a constant slice
    if (!isfinite(shift)) shift = A(0);
  }
  const A yv = TK == TK_TIE ? ld_acc(p.y + ko[kKy]) : A(0);
  const int64_t nch = p.L / V;
  const int64_t b = s * p.seg, e = std::min(nch, b + p.seg);
  using Q = std::conditional_t<TK == TK_TIE, int, A>;  // per-thread partial
  Q part = Q(0);
  for (int64_t ch = b + threadIdx.x; ch < e; ch += kPartThreads * kPartUnroll) {
    uint4 v[kPartUnroll];  // raw: 4 registers per 16 bytes whatever the dtype
#pragma unroll
    for (int k = 0; k < kPartUnroll; ++k) {
      const int64_t c = ch + k * kPartThreads;
      if (c < e) v[k] = *reinterpret_cast<const uint4*>(xr + c * V);
    }
#pragma unroll
    for (int k = 0; k < kPartUnroll; ++k) {
      if (ch + k * kPartThreads < e) {
        T t[V];
        __builtin_memcpy(t, &v[k], 16);
#pragma unroll
        for (int i = 0; i < V; ++i) accumulate<TK>(part, dev::to_acc<A>(t[i]), shift, yv);
      }
    }
  }
  TileCfg c;
  c.TY = kPartThreads;
  const P total = block_sum(static_cast<P>(part), 0, static_cast<int>(threadIdx.x), c, sm);
  if (threadIdx.x == 0) {
    static_cast<P*>(p.part)[o * p.S + s] = total;
    if constexpr (TK == TK_MEAN) {
      if (s == 0) p.aux[o] = shift;
    }
  }
}

// Kept innermost dim contiguous (reducing a leading or middle axis): each lane
// owns V neighbouring slices (one 16-byte load per reduced element), a warp
// covers 32 * V slices, the 8 warps of a block take interleaved reduced
// elements of one segment.
template <int TK, class T>
__global__ void __launch_bounds__(kPartThreads, 3) col_partial_kernel(const PartParams<T> p) {
  using A = acc_t<T>;
  using P = std::conditional_t<TK == TK_TIE, long long, A>;
  constexpr int V = static_cast<int>(16 / sizeof(T));
  constexpr int kRows = kPartThreads / 32;
  __shared__ P sm[kRows][32][V];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int64_t s = blockIdx.x / p.GV, vg = blockIdx.x - s * p.GV;
  const int64_t o0 = (vg * 32 + tx) * V;
  const bool live = o0 < p.M;
  int64_t ko[kKeptOperands] = {0, 0, 0, 0};
  if (live) kept_offsets(p, o0, ko);
  A shift[V], yv[V];
#pragma unroll
  for (int i = 0; i < V; ++i) shift[i] = yv[i] = A(0);
  if (live) {
    if constexpr (TK == TK_MEAN) {
      load_run<V>(p.x + ko[kKx], shift);  // reduced element 0 of the V slices
#pragma unroll
      for (int i = 0; i < V; ++i)
        if (!isfinite(shift[i])) shift[i] = A(0);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) yv[i] = ld_acc(p.y + ko[kKy] + i * p.kst[kKy][0]);
    }
  }
  using Q = std::conditional_t<TK == TK_TIE, int, A>;  // per-thread partial
  Q part[V];
#pragma unroll
  for (int i = 0; i < V; ++i) part[i] = Q(0);
  const int64_t b = s * p.seg, e = std::min(p.L, b + p.seg);
  if (live) {
    for (int64_t r = b + ty; r < e; r += kRows * kPartUnroll) {
      uint4 v[kPartUnroll];  // raw: 4 registers per 16 bytes whatever the dtype
#pragma unroll
      for (int k = 0; k < kPartUnroll; ++k) {
        const int64_t rr = r + k * kRows;
        if (rr < e) {
          v[k] = *reinterpret_cast<const uint4*>(p.x + ko[kKx] + red_offset(p, rr, 0));
        }
      }
#pragma unroll
      for (int k = 0; k < kPartUnroll; ++k) {
        if (r + k * kRows < e) {
          T t[V];
          __builtin_memcpy(t, &v[k], 16);
#pragma unroll
          for (int i = 0; i < V; ++i) accumulate<TK>(part[i], dev::to_acc<A>(t[i]), shift[i], yv[i]);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i) sm[ty][tx][i] = static_cast<P>(part[i]);
  __syncthreads();
  if (ty == 0 && live) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      P t = P(0);
#pragma unroll
      for (int k = 0; k < kRows; ++k) t += sm[k][tx][i];
      static_cast<P*>(p.part)[(o0 + i) * p.S + s] = t;
      if constexpr (TK == TK_MEAN) {
        if (s == 0) p.aux[o0 + i] = shift[i];
      }
    }
  }
}

// Launches the partial pass plan_tiled() chose (RowPartials or ColPartials),
// writing part[M][S] and, for Var/Std, the shift aux[M].
template <int TK, class T>
Status launch_partials(const Problem& pb, const TiledPlan& pl, void* part, acc_t<T>* aux) {
  PartParams<T> pp{};
  pp.nk = pb.nk;
  pp.nr = pb.nr;
  for (int d = 0; d < kMaxRank; ++d) {
    pp.ksize[d] = pb.ksize[d];
    pp.rsize[d] = pb.rsize[d];
    for (int k = 0; k < kKeptOperands; ++k) pp.kst[k][d] = pb.kst[k][d];
    for (int k = 0; k < 2; ++k) pp.rst[k][d] = pb.rst[k][d];
  }
  pp.M = pb.M;
  pp.L = pb.L;
  pp.x = static_cast<const T*>(pb.x);
  pp.y = static_cast<const T*>(pb.y);
  pp.part = part;
  pp.aux = aux;
  pp.seg = pl.seg;
  pp.S = pl.S;
  if (pl.path == TiledPath::RowPartials) {
    if (pb.M * pl.S > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: problem too large for the grid");
    row_partial_kernel<TK, T><<<static_cast<unsigned>(pb.M * pl.S), kPartThreads, 0, pb.stream>>>(pp);
    return check_launch("ReduceBackwardPlan: row partial kernel");
  }
  pp.GV = pl.GV;
  if (pl.GV * pl.S > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: problem too large for the grid");
  col_partial_kernel<TK, T><<<static_cast<unsigned>(pl.GV * pl.S), kPartThreads, 0, pb.stream>>>(pp);
  return check_launch("ReduceBackwardPlan: column partial kernel");
}

}  // namespace baracuda::reduce::cuda::bw
