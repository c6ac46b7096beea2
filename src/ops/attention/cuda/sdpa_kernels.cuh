// Materialized attention (SdpaPlan / SdpaBackwardPlan), CUDA: kernel templates
// and the per-dtype drivers run_forward<T> / run_backward<T>, instantiated for
// the dtypes of ../manifest.cmake (generated TUs) and dispatched from sdpa.cu.
//
// Three kernels do all the work:
//  * gemm_kernel      C[z][m,n] = alpha * sum_g sum_k A[z,g][m,k] * B[z,g][k,n]
//                     over a batch z = (b, head). Every operand is addressed by
//                     element strides (row, reduction, batch, head), so a
//                     transposed operand is just swapped strides, and the head
//                     an operand reads is (hz * mul) / div + g: hz / G for K/V
//                     in the per-query-head products, hz * G + g for the
//                     grouped-query sums of dK / dV (the group is an outer
//                     reduction loop, in head order). 64x64 output tiles, 16-deep
//                     reduction slices through double-buffered shared memory
//                     (converted to the accumulator type on load; the next
//                     slice's global loads are in flight during the current
//                     slice's math), 256 threads each owning a 4x4
//                     micro-tile, every output element written by one thread in
//                     a fixed order: deterministic, no atomics. With causal
//                     masking a tile skips what is provably zero: whole score
//                     tiles above the diagonal, reduction ranges past it.
//  * softmax_kernel   a warp per query row: raw scaled scores (written into
//                     probs by the QK^T product) + mask, causal range, max /
//                     sum / normalise in the accumulator type; rows without an
//                     allowed finite score give p = 0. Writes probs in place.
//  * softmax_bwd_kernel  a warp per row: ds = p * (dp - sum_j dp_j p_j), in
//                     place over dp in the ds workspace.
// Forward:  S = scale Q K^T -> softmax -> Y = P V.
// Backward: dP = dY V^T -> ds -> dQ = scale ds K, dK = scale sum_g ds^T Q,
//           dV = sum_g P^T dY.
//
// Private to src/ops/attention/cuda/sdpa*.cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "cuda/warp_reduce.cuh"
#include "ops/attention/sdpa_launch.hpp"

namespace baracuda::attention::cuda::sdpa::detail_k {

using dev::acc_t;

constexpr int kTileM = 64;  // output rows per block tile
constexpr int kTileN = 64;  // output columns per block tile
constexpr int kTileK = 16;  // reduction depth per shared-memory slice
constexpr int kGemmThreads = 256;
constexpr int kRowThreads = 256;  // row kernels: 8 warps, a warp per row
static_assert(kTileM == 64 && kTileN == 64 && kTileK == 16 && kGemmThreads == 256,
              "the tile loaders and the 4x4 micro-tiles assume 64x64x16 with 256 threads");

// How causal masking shrinks a product (off = diagonal offset of the rows).
enum class Causal : int {
  None,
  SkipAbove,   // C is [i, j] scores: a tile whose every j > i + off is skipped (never read later)
  RedUpToRow,  // m = i, reduction index = j: only j <= i + off contribute (the rest of A is 0)
  RedFromRow,  // m = j, reduction index = i: only i >= j - off contribute
};

struct Operand {
  const void* ptr = nullptr;
  int64_t sb = 0, sh = 0;   // batch / head strides
  int64_t so = 0, sr = 0;   // outer (m for A, n for B) / reduction strides
  int mul = 1, div = 1;     // head = (hz * mul) / div + g
};

template <class Acc>
struct GemmParams {
  Operand a, b;
  StridedView<4, void*> c;      // [b, head, m, n]
  int64_t M = 0, N = 0, R = 0;  // rows, columns, reduction length per group
  int groups = 1;               // outer reduction loop over heads
  int hout = 1;                 // heads of the output batch (z = b * hout + hz)
  int64_t nz = 0;               // batch * hout
  int64_t tiles_m = 0, tiles_n = 0, tiles = 0;
  Acc alpha = Acc(1);
  Causal causal = Causal::None;
  int64_t off = 0;
};

// One thread's share of an outer[64] x red[16] slice of an operand: 4
// elements, zero outside [0, o_end) x [r0, r_end). The thread -> element map
// follows the operand's faster index for coalescing. fetch_slice reads global
// memory into registers (issued before the current slice's math, so the loads
// are in flight while it runs); commit_slice stores them into S[red][outer]
// (rows padded against bank conflicts).
__device__ __forceinline__ void slice_coords(bool red_fast, int tid, int e, int* o, int* r) {
  if (red_fast) {
    *r = tid % kTileK;
    *o = tid / kTileK + (kGemmThreads / kTileK) * e;
  } else {
    *o = tid % kTileM;
    *r = tid / kTileM + (kGemmThreads / kTileM) * e;
  }
}
template <class T, class Acc>
__device__ __forceinline__ void fetch_slice(Acc (&v)[4], const T* base, int64_t so, int64_t sr, int64_t o0,
                                            int64_t o_end, int64_t r0, int64_t r_end, bool red_fast, int tid) {
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    int o, r;
    slice_coords(red_fast, tid, e, &o, &r);
    const int64_t go = o0 + o, gr = r0 + r;
    v[e] = Acc(0);
    if (go < o_end && gr < r_end) v[e] = dev::to_acc<Acc>(dev::load_ro(base + go * so + gr * sr));
  }
}
template <class Acc>
__device__ __forceinline__ void commit_slice(Acc (*S)[kTileM + 1], const Acc (&v)[4], bool red_fast, int tid) {
#pragma unroll
  for (int e = 0; e < 4; ++e) {
    int o, r;
    slice_coords(red_fast, tid, e, &o, &r);
    S[r][o] = v[e];
  }
}

__device__ __forceinline__ float fma_acc(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fma_acc(double a, double b, double c) { return fma(a, b, c); }

__host__ __device__ inline bool reduction_is_faster(int64_t so, int64_t sr) {
  const int64_t ao = so < 0 ? -so : so, ar = sr < 0 ? -sr : sr;
  if (ar == 1) return true;
  if (ao == 1) return false;
  return ar < ao;
}

template <class TA, class TB, class TC, class Acc>
__global__ void __launch_bounds__(kGemmThreads) gemm_kernel(const GemmParams<Acc> p) {
  // Double-buffered slices: one barrier per slice.
  __shared__ Acc As[2][kTileK][kTileM + 1];
  __shared__ Acc Bs[2][kTileK][kTileN + 1];
  const int tid = threadIdx.x;
  const int tx = tid % 16, ty = tid / 16;
  const bool a_red_fast = reduction_is_faster(p.a.so, p.a.sr);
  const bool b_red_fast = reduction_is_faster(p.b.so, p.b.sr);
  const TA* a_all = static_cast<const TA*>(p.a.ptr);
  const TB* b_all = static_cast<const TB*>(p.b.ptr);
  TC* c_all = static_cast<TC*>(p.c.data);

  for (int64_t t = blockIdx.x; t < p.tiles; t += gridDim.x) {
    const int64_t tn = t % p.tiles_n;
    const int64_t tm = (t / p.tiles_n) % p.tiles_m;
    const int64_t z = t / (p.tiles_n * p.tiles_m);
    const int64_t bz = z / p.hout;
    const int hz = static_cast<int>(z % p.hout);
    const int64_t m0 = tm * kTileM, n0 = tn * kTileN;
    const int64_t m_last = (m0 + kTileM < p.M ? m0 + kTileM : p.M) - 1;

    int64_t r_lo = 0, r_hi = p.R;
    if (p.causal == Causal::SkipAbove) {
      if (n0 > m_last + p.off) continue;  // uniform over the block: every score of the tile is masked
    } else if (p.causal == Causal::RedUpToRow) {
      r_hi = m_last + p.off + 1 < r_hi ? m_last + p.off + 1 : r_hi;
    } else if (p.causal == Causal::RedFromRow) {
      r_lo = m0 - p.off > 0 ? m0 - p.off : 0;
    }

    Acc acc[4][4];
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int c = 0; c < 4; ++c) acc[r][c] = Acc(0);

    // Slices in reduction order: group by group (head order), then k.
    const int64_t per_group = r_hi > r_lo ? (r_hi - r_lo + kTileK - 1) / kTileK : 0;
    const int64_t slices = per_group * p.groups;
    Acc ra[4], rb[4];
    auto fetch = [&](int64_t sl) {
      const int64_t g = sl / per_group;
      const int64_t k0 = r_lo + (sl % per_group) * kTileK;
      const int64_t ha = (static_cast<int64_t>(hz) * p.a.mul) / p.a.div + g;
      const int64_t hb = (static_cast<int64_t>(hz) * p.b.mul) / p.b.div + g;
      fetch_slice<TA, Acc>(ra, a_all + bz * p.a.sb + ha * p.a.sh, p.a.so, p.a.sr, m0, p.M, k0, r_hi, a_red_fast, tid);
      fetch_slice<TB, Acc>(rb, b_all + bz * p.b.sb + hb * p.b.sh, p.b.so, p.b.sr, n0, p.N, k0, r_hi, b_red_fast, tid);
    };
    if (slices > 0) {
      fetch(0);
      commit_slice(As[0], ra, a_red_fast, tid);
      commit_slice(Bs[0], rb, b_red_fast, tid);
      __syncthreads();
    }
    for (int64_t sl = 0; sl < slices; ++sl) {
      const int buf = static_cast<int>(sl & 1);
      const bool more = sl + 1 < slices;
      if (more) fetch(sl + 1);  // global loads overlap the math below
#pragma unroll
      for (int kk = 0; kk < kTileK; ++kk) {
        Acc av[4], bv[4];
#pragma unroll
        for (int r = 0; r < 4; ++r) av[r] = As[buf][kk][ty + 16 * r];
#pragma unroll
        for (int c = 0; c < 4; ++c) bv[c] = Bs[buf][kk][tx + 16 * c];
#pragma unroll
        for (int r = 0; r < 4; ++r)
#pragma unroll
          for (int c = 0; c < 4; ++c) acc[r][c] = fma_acc(av[r], bv[c], acc[r][c]);
      }
      // The other buffer was last read in slice sl - 1, before the barrier
      // that ended it; the barrier below publishes it for slice sl + 1 and
      // keeps the next tile's first commit behind this slice's reads.
      if (more) {
        commit_slice(As[buf ^ 1], ra, a_red_fast, tid);
        commit_slice(Bs[buf ^ 1], rb, b_red_fast, tid);
      }
      __syncthreads();
    }

    TC* cb = c_all + bz * p.c.stride[0] + static_cast<int64_t>(hz) * p.c.stride[1];
#pragma unroll
    for (int r = 0; r < 4; ++r) {
      const int64_t m = m0 + ty + 16 * r;
      if (m >= p.M) continue;
#pragma unroll
      for (int c = 0; c < 4; ++c) {
        const int64_t n = n0 + tx + 16 * c;
        if (n < p.N) cb[m * p.c.stride[2] + n * p.c.stride[3]] = dev::from_acc<TC, Acc>(p.alpha * acc[r][c]);
      }
    }
  }
}

template <class TA, class TB, class TC, class Acc>
Status launch_gemm(GemmParams<Acc> p, cudaStream_t stream, const char* what) {
  if (p.M <= 0 || p.N <= 0 || p.nz <= 0) return Status::ok();
  p.tiles_m = (p.M + kTileM - 1) / kTileM;
  p.tiles_n = (p.N + kTileN - 1) / kTileN;
  p.tiles = p.tiles_m * p.tiles_n * p.nz;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(p.tiles, INT_MAX));
  gemm_kernel<TA, TB, TC, Acc><<<grid, kGemmThreads, 0, stream>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), what);
  return Status::ok();
}

// Keys a query row may see: [0, allowed_keys(i)).
struct RowGeom {
  int heads = 1;
  int64_t q_len = 0, kv_len = 0;
  bool causal = false;
  int64_t off = 0;
};
__device__ __forceinline__ int64_t allowed_keys(const RowGeom& g, int64_t i) {
  if (!g.causal) return g.kv_len;
  const int64_t hi = i + g.off + 1;
  return hi < 0 ? 0 : (hi < g.kv_len ? hi : g.kv_len);
}

template <class Acc>
__device__ __forceinline__ Acc warp_sum(Acc v) {
  v = dev::warp_reduce(v, 32, [](Acc x, Acc y) { return x + y; });
  return __shfl_sync(0xffffffffu, v, 0);
}
template <class Acc>
__device__ __forceinline__ Acc warp_max(Acc v) {
  v = dev::warp_reduce(v, 32, [](Acc x, Acc y) { return dev::max_nan(x, y); });
  return __shfl_sync(0xffffffffu, v, 0);
}

// probs[b,h,i,:] holds scale * q_i . k_j (for the allowed j); replaced by p.
template <class Acc>
struct SoftmaxParams {
  StridedView<4, Acc*> probs;
  StridedView<4, const float*> mask;  // data null = no mask
  RowGeom geom;
  int64_t rows = 0;
};

template <class Acc>
__global__ void __launch_bounds__(kRowThreads) softmax_kernel(const SoftmaxParams<Acc> p) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kRowThreads / 32);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (kRowThreads / 32) + threadIdx.x / 32; row < p.rows;
       row += warps) {
    const int64_t i = row % p.geom.q_len;
    const int64_t bh = row / p.geom.q_len;
    const int64_t h = bh % p.geom.heads, b = bh / p.geom.heads;
    Acc* s = p.probs.data + b * p.probs.stride[0] + h * p.probs.stride[1] + i * p.probs.stride[2];
    const float* mk =
        p.mask.data ? p.mask.data + b * p.mask.stride[0] + h * p.mask.stride[1] + i * p.mask.stride[2] : nullptr;
    const int64_t hi = allowed_keys(p.geom, i);
    auto score = [&](int64_t j) {
      Acc x = s[j * p.probs.stride[3]];
      if (mk) x += static_cast<Acc>(mk[j * p.mask.stride[3]]);
      return x;
    };
    Acc mx = dev::lowest_value<Acc>();
    for (int64_t j = lane; j < hi; j += 32) mx = dev::max_nan(mx, score(j));
    mx = warp_max(mx);
    const bool empty = mx == dev::lowest_value<Acc>();  // no key, or every score -inf
    Acc sum = Acc(0);
    if (!empty) {
      for (int64_t j = lane; j < hi; j += 32) sum += dev::acc_exp(score(j) - mx);
    }
    sum = warp_sum(sum);
    for (int64_t j = lane; j < p.geom.kv_len; j += 32) {
      Acc v = Acc(0);
      if (!empty && j < hi) v = dev::acc_exp(score(j) - mx) / sum;
      s[j * p.probs.stride[3]] = v;
    }
  }
}

// ds[b,h,i,:] (contiguous [B,H,Q,K]) holds dp = dy_i . v_j for the allowed j;
// replaced by p * (dp - sum_j dp_j p_j), 0 outside the allowed range.
template <class Acc>
struct SoftmaxBwdParams {
  Acc* ds = nullptr;
  StridedView<4, const Acc*> probs;
  RowGeom geom;
  int64_t rows = 0;
};

template <class Acc>
__global__ void __launch_bounds__(kRowThreads) softmax_bwd_kernel(const SoftmaxBwdParams<Acc> p) {
  const int lane = threadIdx.x % 32;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kRowThreads / 32);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * (kRowThreads / 32) + threadIdx.x / 32; row < p.rows;
       row += warps) {
    const int64_t i = row % p.geom.q_len;
    const int64_t bh = row / p.geom.q_len;
    const int64_t h = bh % p.geom.heads, b = bh / p.geom.heads;
    Acc* ds = p.ds + row * p.geom.kv_len;
    const Acc* pr = p.probs.data + b * p.probs.stride[0] + h * p.probs.stride[1] + i * p.probs.stride[2];
    const int64_t hi = allowed_keys(p.geom, i);
    Acc dot = Acc(0);
    for (int64_t j = lane; j < hi; j += 32) dot += ds[j] * pr[j * p.probs.stride[3]];
    dot = warp_sum(dot);
    for (int64_t j = lane; j < p.geom.kv_len; j += 32) {
      Acc v = Acc(0);
      if (j < hi) v = pr[j * p.probs.stride[3]] * (ds[j] - dot);
      ds[j] = v;
    }
  }
}

inline unsigned row_grid(int64_t rows) {
  const int64_t blocks = (rows + kRowThreads / 32 - 1) / (kRowThreads / 32);
  return static_cast<unsigned>(std::min<int64_t>(blocks, INT_MAX));
}

inline RowGeom row_geom(const SdpaFwdParams& p) {
  RowGeom g;
  g.heads = p.heads;
  g.q_len = p.q_len;
  g.kv_len = p.kv_len;
  g.causal = p.causal;
  g.off = p.bottom_right ? p.kv_len - p.q_len : 0;
  return g;
}

// Operand over a [b, h, s, d] view read as [b, head, outer, red] (outer = s or d).
template <class Ptr>
Operand operand(const StridedView<4, Ptr>& t, bool outer_is_s, int mul, int div) {
  Operand o;
  o.ptr = t.data;
  o.sb = t.stride[0];
  o.sh = t.stride[1];
  o.so = outer_is_s ? t.stride[2] : t.stride[3];
  o.sr = outer_is_s ? t.stride[3] : t.stride[2];
  o.mul = mul;
  o.div = div;
  return o;
}

// ---------------------------------------------------------------------------
// Drivers
// ---------------------------------------------------------------------------
template <class T>
Status run_forward(const SdpaFwdParams& p, cudaStream_t stream) {
  using Acc = acc_t<T>;
  const int G = p.heads / p.kv_heads;
  const RowGeom geom = row_geom(p);
  const int64_t nz = static_cast<int64_t>(p.batch) * p.heads;

  // S = scale * Q K^T into probs (above-diagonal tiles skipped with causal).
  {
    GemmParams<Acc> g;
    g.a = operand(p.q, true, 1, 1);   // [i, d]
    g.b = operand(p.k, true, 1, G);   // [j, d]
    g.c = p.probs;
    g.M = p.q_len, g.N = p.kv_len, g.R = p.head_dim;
    g.hout = p.heads, g.nz = nz;
    g.alpha = static_cast<Acc>(p.scale);
    g.causal = p.causal ? Causal::SkipAbove : Causal::None;
    g.off = geom.off;
    const Status st = launch_gemm<T, T, Acc, Acc>(g, stream, "SdpaPlan: scores kernel");
    if (!st.is_ok()) return st;
  }
  // Softmax in place.
  const int64_t rows = nz * p.q_len;
  if (rows > 0 && p.kv_len > 0) {
    SoftmaxParams<Acc> s;
    s.probs = p.probs.typed<Acc>();
    s.mask = p.mask;
    s.geom = geom;
    s.rows = rows;
    softmax_kernel<Acc><<<row_grid(rows), kRowThreads, 0, stream>>>(s);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "SdpaPlan: softmax kernel");
  }
  // Y = P V (reduction cut at the diagonal with causal).
  {
    GemmParams<Acc> g;
    g.a = operand(p.probs, true, 1, 1);  // [i, j]
    g.b = operand(p.v, false, 1, G);     // [d, j]: outer d, reduction j
    g.c = p.y;
    g.M = p.q_len, g.N = p.head_dim_v, g.R = p.kv_len;
    g.hout = p.heads, g.nz = nz;
    g.causal = p.causal ? Causal::RedUpToRow : Causal::None;
    g.off = geom.off;
    return launch_gemm<Acc, T, T, Acc>(g, stream, "SdpaPlan: PV kernel");
  }
}

template <class T>
Status run_backward(const SdpaBwdParams& p, cudaStream_t stream) {
  using Acc = acc_t<T>;
  const int G = p.heads / p.kv_heads;
  const RowGeom geom = row_geom(p);
  const int64_t nz = static_cast<int64_t>(p.batch) * p.heads;
  const int64_t nzk = static_cast<int64_t>(p.batch) * p.kv_heads;
  // ds workspace [B,H,Q,K] contiguous.
  const StridedView<4, void*> ds = {p.ds, p.heads * (p.q_len * p.kv_len), p.q_len * p.kv_len, p.kv_len, 1};
  const Causal skip = p.causal ? Causal::SkipAbove : Causal::None;
  const Causal up_to_row = p.causal ? Causal::RedUpToRow : Causal::None;
  const Causal from_row = p.causal ? Causal::RedFromRow : Causal::None;

  // dP = dY V^T into ds.
  {
    GemmParams<Acc> g;
    g.a = operand(p.dy, true, 1, 1);  // [i, d]
    g.b = operand(p.v, true, 1, G);    // [j, d]
    g.c = ds;
    g.M = p.q_len, g.N = p.kv_len, g.R = p.head_dim_v;
    g.hout = p.heads, g.nz = nz;
    g.causal = skip;
    g.off = geom.off;
    const Status st = launch_gemm<T, T, Acc, Acc>(g, stream, "SdpaBackwardPlan: dP kernel");
    if (!st.is_ok()) return st;
  }
  // ds = p * (dp - rowsum(dp * p)) in place.
  const int64_t rows = nz * p.q_len;
  if (rows > 0 && p.kv_len > 0) {
    SoftmaxBwdParams<Acc> s;
    s.ds = static_cast<Acc*>(p.ds);
    s.probs = p.probs.typed<const Acc>();
    s.geom = geom;
    s.rows = rows;
    softmax_bwd_kernel<Acc><<<row_grid(rows), kRowThreads, 0, stream>>>(s);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
      return baracuda::detail::cuda_status(static_cast<int>(e), "SdpaBackwardPlan: softmax backward kernel");
  }
  // dQ = scale * ds K.
  {
    GemmParams<Acc> g;
    g.a = operand(ds, true, 1, 1);    // [i, j]
    g.b = operand(p.k, false, 1, G);  // [d, j]
    g.c = p.dq;
    g.M = p.q_len, g.N = p.head_dim, g.R = p.kv_len;
    g.hout = p.heads, g.nz = nz;
    g.alpha = static_cast<Acc>(p.scale);
    g.causal = up_to_row;
    g.off = geom.off;
    const Status st = launch_gemm<Acc, T, T, Acc>(g, stream, "SdpaBackwardPlan: dQ kernel");
    if (!st.is_ok()) return st;
  }
  // dK[b,hk] = scale * sum over the group's heads of ds^T Q.
  {
    GemmParams<Acc> g;
    g.a = operand(ds, false, G, 1);   // [j, i]
    g.b = operand(p.q, false, G, 1);  // [d, i]
    g.c = p.dk;
    g.M = p.kv_len, g.N = p.head_dim, g.R = p.q_len;
    g.groups = G;
    g.hout = p.kv_heads, g.nz = nzk;
    g.alpha = static_cast<Acc>(p.scale);
    g.causal = from_row;
    g.off = geom.off;
    const Status st = launch_gemm<Acc, T, T, Acc>(g, stream, "SdpaBackwardPlan: dK kernel");
    if (!st.is_ok()) return st;
  }
  // dV[b,hk] = sum over the group's heads of P^T dY.
  {
    GemmParams<Acc> g;
    g.a = operand(p.probs, false, G, 1);  // [j, i]
    g.b = operand(p.dy, false, G, 1);     // [d, i]
    g.c = p.dv;
    g.M = p.kv_len, g.N = p.head_dim_v, g.R = p.q_len;
    g.groups = G;
    g.hout = p.kv_heads, g.nz = nzk;
    g.causal = from_row;
    g.off = geom.off;
    return launch_gemm<Acc, T, T, Acc>(g, stream, "SdpaBackwardPlan: dV kernel");
  }
}

}  // namespace baracuda::attention::cuda::sdpa::detail_k
