// Prod backward over columns: the reduced dims are strided and the innermost
// kept dim is contiguous for x and dx (reducing a leading or middle axis, e.g.
// [8192, 16384] over axis 0 or [64, 4096, 128] over axis 1).
//
// Geometry. A block is 32 lanes x `warps` warps (warps <= 8). Lane l of column
// block cb owns the V = 16 / sizeof(T) neighbouring columns starting at
// (cb * 32 + l) * V: every row is one 16-byte load / store per lane, 512
// contiguous bytes per warp. Warp w of row segment s owns the k rows starting
// at (s * warps + w) * k and holds them, packed, in registers (k <= K, a
// compile-time bound: 16 rows, 8 for f64). A segment is warps * k rows; S
// segments cover the slice.
//
// dx at (row r, column o) = dy[o] * others(s) * pre(w) * suf(w) * pl(j) * sl(j):
//   others(s)  product of the other segments of the column (1 when S == 1),
//   pre / suf  products of the earlier / later warps of the segment (smem),
//   pl / sl    products of the thread's earlier / later rows (registers).
// Every factor is a product of x values in a fixed order; no division, so
// zeros are exact, and the results are bitwise reproducible.
//
// Passes (S > 1): colprod_kernel<TM_PARTIAL> writes the segment products
// part[S][M] (column index fastest: coalesced), colprod_combine_kernel turns
// them into others[S][M] (a block per 32 columns, its warps on contiguous runs
// of segments), colprod_kernel<TM_APPLY> writes dx, walking the blocks from the
// end so the rows the partial pass read last are still in L2. S == 1:
// colprod_kernel<TM_APPLY> alone, without others.
//
// The geometry (ColProdCfg, choose_colprod) and the layout test
// (colprod_fits) live in backward_planner.cuh. Private to
// src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "ops/reduce/cuda/backward_common.cuh"
#include "ops/reduce/cuda/backward_planner.cuh"

namespace baracuda::reduce::cuda::bw {

template <class T>
struct ColProdParams {
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int64_t xs, ds;  // row stride of x, dx (the one reduced dim)
  int64_t M, L;
  int64_t CB, S;
  int k;        // rows per thread (<= colprod_k<T>())
  int reverse;  // walk the blocks from the end
  const T* x;
  T* dx;
  const T* dy;
  acc_t<T>* part;          // PARTIAL: out [S][M]
  const acc_t<T>* others;  // APPLY: in [S][M]; nullptr when S == 1
};

// Value i of the V packed in four 32-bit words, as the accumulator type.
template <class T, class A>
__device__ __forceinline__ A packed_get(const uint32_t (&w)[4], int i) {
  if constexpr (sizeof(T) == 2) {
    const unsigned short b = static_cast<unsigned short>(w[i >> 1] >> ((i & 1) * 16));
    T t;
    __builtin_memcpy(&t, &b, 2);
    return dev::to_acc<A>(t);
  } else if constexpr (sizeof(T) == 4) {
    static_assert(std::is_same_v<T, float>, "f32");
    return __uint_as_float(w[i]);
  } else {
    static_assert(std::is_same_v<T, double>, "f64");
    return __hiloint2double(static_cast<int>(w[2 * i + 1]), static_cast<int>(w[2 * i]));
  }
}

// Replaces value i of the V packed in four words by v, rounded to T.
template <class T, class A>
__device__ __forceinline__ void packed_set(uint32_t (&w)[4], int i, A v) {
  const T t = dev::from_acc<T>(v);
  if constexpr (sizeof(T) == 2) {
    unsigned short b;
    __builtin_memcpy(&b, &t, 2);
    const int sh = (i & 1) * 16;
    w[i >> 1] = (w[i >> 1] & ~(0xffffu << sh)) | (static_cast<uint32_t>(b) << sh);
  } else if constexpr (sizeof(T) == 4) {
    w[i] = __float_as_uint(t);
  } else {
    w[2 * i] = static_cast<uint32_t>(__double2loint(t));
    w[2 * i + 1] = static_cast<uint32_t>(__double2hiint(t));
  }
}

template <int MODE, class T>
__global__ void __launch_bounds__(kColThreads, 2) colprod_kernel(const ColProdParams<T> p) {
  using A = acc_t<T>;
  constexpr int K = colprod_k<T>();
  constexpr int V = static_cast<int>(16 / sizeof(T));
  __shared__ A sm[kColWarps][V][32];  // per-thread products, [warp][column][lane]

  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int64_t nb = p.CB * p.S;
  const int64_t b = p.reverse ? nb - 1 - static_cast<int64_t>(blockIdx.x) : static_cast<int64_t>(blockIdx.x);
  const int64_t s = b / p.CB, cb = b - s * p.CB;
  const int64_t o0 = (cb * 32 + lane) * V;  // first of this lane's V columns (M % V == 0)
  const bool live = o0 < p.M;
  int64_t ko[kKeptOperands] = {0, 0, 0, 0};
  if (live) kept_offsets(p, o0, ko);
  const int64_t r0 = (s * nw + w) * p.k;  // first of this thread's rows
  // Rows of this thread inside the slice: j < nv (0 for a dead lane).
  const int nv = live ? static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(p.k, p.L - r0))) : 0;
  const T* xp = p.x + ko[kKx] + r0 * p.xs;  // row r0 of the lane's columns
  T* dp = p.dx + ko[kKdx] + r0 * p.ds;

  // The thread's rows, packed; rows past k or L hold 1 (neutral in every product).
  uint32_t one[4];
  {
    Vec<T, V> o;
#pragma unroll
    for (int i = 0; i < V; ++i) o.v[i] = dev::from_acc<T>(A(1));
    __builtin_memcpy(one, &o, 16);
  }
  uint32_t v[K][4];
#pragma unroll
  for (int j = 0; j < K; ++j) {
    if (j < nv) {
      const uint4 u = *reinterpret_cast<const uint4*>(xp + j * p.xs);
      v[j][0] = u.x;
      v[j][1] = u.y;
      v[j][2] = u.z;
      v[j][3] = u.w;
    } else {
#pragma unroll
      for (int q = 0; q < 4; ++q) v[j][q] = one[q];
    }
  }

  // Product of the thread's rows, per column, in row order. The empty asm
  // statements (no instructions) keep the rows packed: without them the
  // compiler keeps all V * K unpacked values live, twice the registers of the
  // packed rows for 16-bit types.
  A tp[V];
#pragma unroll
  for (int i = 0; i < V; ++i) tp[i] = A(1);
#pragma unroll
  for (int j = 0; j < K; ++j) {
#pragma unroll
    for (int i = 0; i < V; ++i) tp[i] = tp[i] * packed_get<T, A>(v[j], i);
    if constexpr (MODE != TM_PARTIAL) {  // (the partial pass is done with v here)
#pragma unroll
      for (int q = 0; q < 4; ++q) asm volatile("" : "+r"(v[j][q]));
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i) sm[w][i][lane] = tp[i];
  __syncthreads();

  if constexpr (MODE == TM_PARTIAL) {
    // The segment's product per column, warps in order.
    if (w == 0 && live) {
#pragma unroll
      for (int i = 0; i < V; ++i) {
        A t = A(1);
        for (int u = 0; u < nw; ++u) t = t * sm[u][i][lane];
        p.part[s * p.M + o0 + i] = t;
      }
    }
    return;
  } else {
    A outside[V];
#pragma unroll
    for (int i = 0; i < V; ++i) {
      A pre = A(1), suf = A(1);
      for (int u = 0; u < w; ++u) pre = pre * sm[u][i][lane];
      for (int u = nw - 1; u > w; --u) suf = sm[u][i][lane] * suf;
      A oth = A(1), dyv = A(0);
      if (live) {
        if (p.others != nullptr) oth = p.others[s * p.M + o0 + i];
        dyv = ld_acc(p.dy + ko[kKdy] + i * p.kst[kKdy][0]);
      }
      outside[i] = dyv * (oth * (pre * suf));
    }
    // One column at a time, each half of the rows in turn: the suffix products
    // of the half (K / 2 registers; the first half's start from the product
    // of the second half), then dx in place of x in the packed rows (x[j] is
    // read before it is overwritten).
    constexpr int H = K / 2;
    static_assert(K % 2 == 0, "two halves");
#pragma unroll
    for (int i = 0; i < V; ++i) {
      A hi = A(1);  // product of rows H..K-1 (ascending: its own order)
#pragma unroll
      for (int j = H; j < K; ++j) hi = hi * packed_get<T, A>(v[j], i);
      A pl = A(1);
#pragma unroll
      for (int h = 0; h < 2; ++h) {
        A sl[H];
        A acc = h == 0 ? hi : A(1);
#pragma unroll
        for (int j = H - 1; j >= 0; --j) {
          sl[j] = acc;
          acc = acc * packed_get<T, A>(v[h * H + j], i);
        }
#pragma unroll
        for (int j = 0; j < H; ++j) {
          const A xj = packed_get<T, A>(v[h * H + j], i);
          packed_set<T, A>(v[h * H + j], i, outside[i] * (pl * sl[j]));
          pl = pl * xj;
        }
      }
      // One column at a time (see above).
#pragma unroll
      for (int j = 0; j < K; ++j)
#pragma unroll
        for (int q = 0; q < 4; ++q) asm volatile("" : "+r"(v[j][q]));
    }
#pragma unroll
    for (int j = 0; j < K; ++j) {
      if (j < nv) {
        const uint4 u = make_uint4(v[j][0], v[j][1], v[j][2], v[j][3]);
        __stcs(reinterpret_cast<uint4*>(dp + j * p.ds), u);
      }
    }
  }
}

template <class T>
struct ColCombineParams {
  const acc_t<T>* part;  // [S][M]
  acc_t<T>* others;      // [S][M]: products of the other segments of the column
  int64_t M, S;
};

// A block per 32 columns (a lane each); its warps take contiguous runs of
// segments, joined by a fixed-order scan of the run products in smem.
template <class T>
__global__ void __launch_bounds__(32 * kColCombineWarps) colprod_combine_kernel(const ColCombineParams<T> p) {
  using A = acc_t<T>;
  __shared__ A sm[kColCombineWarps][32];
  const int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * 32 + lane;
  const bool live = o < p.M;
  const int64_t run = (p.S + nw - 1) / nw;
  const int64_t b = std::min<int64_t>(p.S, w * run), e = std::min<int64_t>(p.S, b + run);
  A prod = A(1);
  if (live)
    for (int64_t k = b; k < e; ++k) prod = prod * p.part[k * p.M + o];
  sm[w][lane] = prod;
  __syncthreads();
  if (!live) return;
  A pre = A(1), suf = A(1);
  for (int u = 0; u < w; ++u) pre = pre * sm[u][lane];
  for (int u = nw - 1; u > w; --u) suf = sm[u][lane] * suf;
  for (int64_t k = e - 1; k >= b; --k) {
    const A pk = p.part[k * p.M + o];
    p.others[k * p.M + o] = suf;
    suf = pk * suf;
  }
  for (int64_t k = b; k < e; ++k) {
    p.others[k * p.M + o] = pre * p.others[k * p.M + o];
    pre = pre * p.part[k * p.M + o];
  }
}

// Launches the column path for a problem colprod_fits() accepted, with the
// geometry it chose.
template <class T>
Status launch_col_prod(const Problem& pb, const ColProdCfg& c) {
  using A = acc_t<T>;
  ColProdParams<T> cp{};
  cp.nk = pb.nk;
  for (int d = 0; d < kMaxRank; ++d) {
    cp.ksize[d] = pb.ksize[d];
    for (int k = 0; k < kKeptOperands; ++k) cp.kst[k][d] = pb.kst[k][d];
  }
  cp.xs = pb.rst[0][0];
  cp.ds = pb.rst[1][0];
  cp.M = pb.M;
  cp.L = pb.L;
  cp.CB = c.CB;
  cp.S = c.S;
  cp.k = c.k;
  cp.reverse = 0;
  cp.x = static_cast<const T*>(pb.x);
  cp.dx = static_cast<T*>(pb.dx);
  cp.dy = static_cast<const T*>(pb.dy);
  const unsigned grid = static_cast<unsigned>(c.CB * c.S);
  const int threads = 32 * c.warps;
  if (c.S == 1) {  // the apply pass alone, others == nullptr
    colprod_kernel<TM_APPLY, T><<<grid, threads, 0, pb.stream>>>(cp);
    return check_launch("ReduceBackwardPlan: column prod kernel");
  }
  char* ws = static_cast<char*>(pb.ws);
  A* part = reinterpret_cast<A*>(ws);
  A* others = reinterpret_cast<A*>(ws + align16(static_cast<size_t>(pb.M) * static_cast<size_t>(c.S) * sizeof(A)));
  cp.part = part;
  colprod_kernel<TM_PARTIAL, T><<<grid, threads, 0, pb.stream>>>(cp);
  BARACUDA_RETURN_IF_ERROR(check_launch("ReduceBackwardPlan: column prod partial kernel"));

  ColCombineParams<T> cc{};
  cc.part = part;
  cc.others = others;
  cc.M = pb.M;
  cc.S = c.S;
  const int cw = static_cast<int>(std::clamp<int64_t>(ceil_div(c.S, 2), 1, kColCombineWarps));
  const int64_t cblocks = ceil_div(pb.M, 32);
  if (cblocks > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: too many outputs");
  colprod_combine_kernel<T><<<static_cast<unsigned>(cblocks), 32 * cw, 0, pb.stream>>>(cc);
  BARACUDA_RETURN_IF_ERROR(check_launch("ReduceBackwardPlan: column prod combine kernel"));

  cp.part = nullptr;
  cp.others = others;
  cp.reverse = 1;
  colprod_kernel<TM_APPLY, T><<<grid, threads, 0, pb.stream>>>(cp);
  return check_launch("ReduceBackwardPlan: column prod apply kernel");
}

}  // namespace baracuda::reduce::cuda::bw
