// Reduction backward: register tiles. A block owns TX slices x (TY threads x
// R elements) of the reduced index space, for any strides (TileCfg from
// backward_planner.cuh). FUSED: the tile is the whole slice, held in
// registers. PARTIAL: a partial per tile goes to the workspace. APPLY (Prod):
// dx from the registers and the product of the other tiles.
// Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "ops/reduce/cuda/backward_block_reduce.cuh"
#include "ops/reduce/cuda/backward_common.cuh"
#include "ops/reduce/cuda/backward_formulas.cuh"
#include "ops/reduce/cuda/backward_planner.cuh"

namespace baracuda::reduce::cuda::bw {

template <class T>
struct TileParams {
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int nr;
  int64_t rsize[kMaxRank];
  int64_t rst[2][kMaxRank];
  int64_t M, L;
  TileCfg c;
  const T* x;
  T* dx;
  const T* dy;
  const T* y;
  void* part;     // [M][S] partials (PARTIAL)
  acc_t<T>* aux;  // TK_MEAN: [M] shift; TK_PROD: [M][S] products of the other tiles (APPLY)
  int has_y;
  EwArgs<acc_t<T>> args;
};

// Every field but the tile geometry (c) and the workspace pointers (part, aux).
template <class T>
TileParams<T> make_tile_params(const Problem& pb, const EwArgs<acc_t<T>>& args) {
  TileParams<T> tp{};
  tp.nk = pb.nk;
  tp.nr = pb.nr;
  for (int d = 0; d < kMaxRank; ++d) {
    tp.ksize[d] = pb.ksize[d];
    tp.rsize[d] = pb.rsize[d];
    for (int k = 0; k < kKeptOperands; ++k) tp.kst[k][d] = pb.kst[k][d];
    for (int k = 0; k < 2; ++k) tp.rst[k][d] = pb.rst[k][d];
  }
  tp.M = pb.M;
  tp.L = pb.L;
  tp.x = static_cast<const T*>(pb.x);
  tp.dx = static_cast<T*>(pb.dx);
  tp.dy = static_cast<const T*>(pb.dy);
  tp.y = static_cast<const T*>(pb.y);
  tp.has_y = pb.y != nullptr;
  tp.args = args;
  return tp;
}

template <int TK, int MODE, class T>
__global__ void __launch_bounds__(kTileMaxThreads) tile_kernel(const TileParams<T> p) {
  using A = acc_t<T>;
  using P = std::conditional_t<TK == TK_TIE, long long, A>;
  constexpr int R = tile_r<T>();
  constexpr int V = static_cast<int>(16 / sizeof(T));
  static_assert(R % V == 0, "a thread's elements must be whole vectors");
  __shared__ P sm[2 * kTileMaxThreads];

  const TileCfg& c = p.c;
  const int tid = threadIdx.x;
  const int tx = c.row ? tid >> c.lgTY : tid & (c.TX - 1);
  const int ty = c.row ? tid & (c.TY - 1) : tid >> c.lgTX;
  // Block order follows memory order (tiles of a slice adjacent in row order,
  // slice groups adjacent in column order), so the pass after a PARTIAL pass
  // can walk memory backwards and find the most recent tiles in L2.
  int64_t g, s;
  if (c.row) {
    g = blockIdx.x / c.S;
    s = blockIdx.x - g * c.S;
  } else {
    s = blockIdx.x / c.G;
    g = blockIdx.x - s * c.G;
  }
  const int64_t o = g * c.TX + tx;
  const bool live = o < p.M;
  const int64_t seg0 = s * static_cast<int64_t>(c.TY) * R * c.iters;
  int64_t ko[kKeptOperands] = {0, 0, 0, 0};
  if (live) kept_offsets(p, o, ko);

  // Element j of group `it` of this thread: vectors of V interleaved across the
  // TY threads, so every load instruction of a warp covers consecutive memory.
  auto elem = [&](int it, int j) -> int64_t {
    return seg0 + static_cast<int64_t>(it) * c.TY * R + (j / V) * (c.TY * V) + ty * V + (j % V);
  };
  auto valid = [&](int it, int j) { return live && elem(it, j) < p.L; };
  auto load_group = [&](int it, A (&v)[R]) {
#pragma unroll
    for (int j = 0; j < R; ++j) v[j] = A(0);
    if (c.vec) {
#pragma unroll
      for (int k = 0; k < R / V; ++k) {
        const int64_t r0 = elem(it, k * V);
        if (live && r0 < p.L) {
          A w[V];
          load_run<V>(p.x + ko[kKx] + r0, w);
#pragma unroll
          for (int i = 0; i < V; ++i) v[k * V + i] = w[i];
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < R; ++j) {
        const int64_t r = elem(it, j);
        if (live && r < p.L) v[j] = ld_acc(p.x + ko[kKx] + red_offset(p, r, 0));
      }
    }
  };

  A shift = A(0);
  if constexpr (TK == TK_MEAN) {
    // Sum x - x[first] instead of x: exact mean of a constant slice (so
    // x - mean is exactly 0 there), and no cancellation when |mean| >> spread.
    shift = live ? ld_acc(p.x + ko[kKx]) : A(0);
    if (!isfinite(shift)) shift = A(0);
  }
  const A yv = live && p.has_y ? ld_acc(p.y + ko[kKy]) : A(0);

  if constexpr (MODE == TM_PARTIAL) {
    P part = TK == TK_PROD ? P(1) : P(0);
    for (int it = 0; it < c.iters; ++it) {
      A v[R];
      load_group(it, v);
      if constexpr (TK == TK_MEAN) {
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(it, j)) part += v[j] - shift;
      } else if constexpr (TK == TK_TIE) {
        int cnt = 0;
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(it, j) && (v[j] == yv || (v[j] != v[j] && yv != yv))) ++cnt;
        part += cnt;
      } else {
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(it, j)) part = part * v[j];
      }
    }
    P total;
    if constexpr (TK == TK_PROD) {
      A pre, suf;
      block_scan(part, tx, ty, c, sm, pre, suf, total);
    } else {
      total = block_sum(part, tx, ty, c, sm);
    }
    if (live && ty == 0) {
      static_cast<P*>(p.part)[o * c.S + s] = total;
      if constexpr (TK == TK_MEAN) {
        if (s == 0) p.aux[o] = shift;
      }
    }
    return;
  } else {
    // FUSED (the tile is the whole slice) or APPLY (Prod): values stay in registers.
    A v[R];
    load_group(0, v);
    const A dyv = live ? ld_acc(p.dy + ko[kKdy]) : A(0);
    if constexpr (TK == TK_MEAN || TK == TK_TIE) {
      P part = P(0);
      if constexpr (TK == TK_MEAN) {
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(0, j)) part += v[j] - shift;
      } else {
        int cnt = 0;
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(0, j) && (v[j] == yv || (v[j] != v[j] && yv != yv))) ++cnt;
        part = cnt;
      }
      const P total = block_sum(part, tx, ty, c, sm);
      constexpr int OP = TK == TK_MEAN ? EW_VARSTD : EW_TIE;
      const A auxv = TK == TK_MEAN ? shift + static_cast<A>(total) / p.args.n : static_cast<A>(total);
      const A cf = ew_coef<OP>(dyv, yv, auxv, p.args);
#pragma unroll
      for (int j = 0; j < R; ++j) v[j] = ew_elem<OP, T>(cf, v[j], yv, auxv);
    } else {
      // Prod: dx_j = dy * (product of every other element of the slice), as
      // (exclusive prefix) * (exclusive suffix) in the fixed order (tile,
      // thread, element): exact with any number of zeros, no division.
#pragma unroll
      for (int j = 0; j < R; ++j)
        if (!valid(0, j)) v[j] = A(1);
      A tot = A(1);
#pragma unroll
      for (int j = 0; j < R; ++j) tot = tot * v[j];
      A pre, suf, total;
      block_scan(tot, tx, ty, c, sm, pre, suf, total);
      const A others = MODE == TM_APPLY && live ? p.aux[o * c.S + s] : A(1);
      const A outside = dyv * (others * pre * suf);
      A sl[R];
      A acc = A(1);
#pragma unroll
      for (int j = R - 1; j >= 0; --j) {
        sl[j] = acc;
        acc = acc * v[j];
      }
      A pl = A(1);
#pragma unroll
      for (int j = 0; j < R; ++j) {
        const A xj = v[j];
        v[j] = outside * (pl * sl[j]);
        pl = pl * xj;
      }
    }
    if (c.vec) {
#pragma unroll
      for (int k = 0; k < R / V; ++k) {
        const int64_t r0 = elem(0, k * V);
        if (live && r0 < p.L) {
          Vec<T, V> w;
#pragma unroll
          for (int i = 0; i < V; ++i) w.v[i] = dev::from_acc<T>(v[k * V + i]);
          store_cs(reinterpret_cast<Vec<T, V>*>(p.dx + ko[kKdx] + r0), w);
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < R; ++j) {
        const int64_t r = elem(0, j);
        if (live && r < p.L) store_cs(p.dx + ko[kKdx] + red_offset(p, r, 1), dev::from_acc<T>(v[j]));
      }
    }
  }
}

template <int TK, int MODE, class T>
Status launch_tile(const TileParams<T>& tp, const Problem& pb) {
  const int64_t blocks = tp.c.G * tp.c.S;
  if (blocks > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: problem too large for the grid");
  tile_kernel<TK, MODE, T><<<static_cast<unsigned>(blocks), tp.c.TX * tp.c.TY, 0, pb.stream>>>(tp);
  return check_launch("ReduceBackwardPlan: tile kernel");
}

}  // namespace baracuda::reduce::cuda::bw
