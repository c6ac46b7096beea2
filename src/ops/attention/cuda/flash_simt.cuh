// SIMT flash attention for f32 (float math) and f64 (double math): forward,
// the backward's row statistics, dQ and dK/dV. Shared by flash_simt_fwd.cu and
// flash_simt_bwd.cu. Every score goes through flash_common.cuh, so the rules
// (causal / window / alignment, softcap, ALiBi, mask, varlen) are the ones the
// tensor-core kernels use.
//
// Tiling (NW = 1..8 warps per block, chosen at launch so the shared memory
// fits the device; head dim D <= 32*NC, NC in {2,4,8}):
//   forward / dQ: a block owns NW*RPW query rows of one (b, h); warp w owns
//     RPW of them. For each key tile (32*KPL keys) lane l computes the scores of
//     keys l, l+32, ... against the warp's rows (q rows broadcast from shared
//     memory, k rows padded to D+1 so lanes hit distinct banks), the row max /
//     sum are butterfly-reduced (every lane ends with identical bits), and the
//     output columns d = l, l+32, ... accumulate p * v (or ds * k) in registers.
//     K and V share one shared buffer: K is loaded, used, then V replaces it.
//   dK/dV: a block owns NW*KPW keys of one (b, kv head); warp w owns KPW keys,
//     lane l the query rows l, l+32, ... of a 32*QPL-row query tile. The block
//     loops over the query heads of the group in order and over the query tiles
//     that can see its keys; dK / dV columns d = l, l+32, ... stay in registers.
// No atomics, every sum in a fixed order: results are bit-reproducible.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "ops/attention/cuda/flash_common.cuh"

namespace baracuda::attention::cuda::simt {

constexpr int kMaxWarps = 8;
constexpr int kDsumRowsPerWarp = 8;  // row-statistics kernel: 8 warps x 8 rows per block

// Rows per warp (forward, dQ) and keys per warp (dK/dV) by element type: the
// per-thread accumulators are RPW*NC (forward, dQ) and 2*KPW*NC (dK/dV).
template <class T>
struct Cfg;
template <>
struct Cfg<float> {
  static constexpr int kFwdRpw = 8;
  static constexpr int kDqRpw = 8;
  static constexpr int kDkvKpw = 4;
};
template <>
struct Cfg<double> {
  static constexpr int kFwdRpw = 4;
  static constexpr int kDqRpw = 4;
  static constexpr int kDkvKpw = 2;
};
// Keys per lane in the forward score tile; query rows per lane in dK/dV.
template <int NC>
constexpr int fwd_kpl() {
  return NC <= 2 ? 2 : 1;
}
template <int NC>
constexpr int dkv_qpl() {
  return NC <= 4 ? 2 : 1;
}

// ---- small device helpers ------------------------------------------------------
template <class T>
__device__ __forceinline__ T neg_inf() {
  return dev::lowest_value<T>();
}
// Butterfly reductions: lane i combines v_i with v_{i^o}; addition and max are
// commutative, so every lane ends with the same bits.
template <class T>
__device__ __forceinline__ T warp_allsum(T v) {
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}
template <class T>
__device__ __forceinline__ T warp_allmax(T v) {
#pragma unroll
  for (int o = 16; o >= 1; o >>= 1) {
    const T w = __shfl_xor_sync(0xffffffffu, v, o);
    v = w > v ? w : v;
  }
  return v;
}

// Which (tile, head, batch) a block owns: blockIdx.x = (b * heads + h) * ntiles + tile.
struct TileId {
  int tile, h, b;
};
__device__ __forceinline__ TileId tile_id(int ntiles, int heads) {
  const int64_t bid = blockIdx.x;
  const int64_t bh = bid / ntiles;
  return {static_cast<int>(bid - bh * ntiles), static_cast<int>(bh % heads), static_cast<int>(bh / heads)};
}

// Row index of (b, h, i) in the backward's per-row workspace arrays:
// dense [B, H, Q], varlen [H, total_q].
__device__ __forceinline__ int64_t ws_row(const FlashFwdParams& p, const SeqInfo& s, int b, int h, int i) {
  return p.cu_q != nullptr ? static_cast<int64_t>(h) * p.total_q + s.q_start + i
                           : (static_cast<int64_t>(b) * p.heads + h) * p.q_len + i;
}
__device__ __forceinline__ int64_t lse_offset(const FlashFwdParams& p, const SeqInfo& s, int b, int h, int i) {
  return b * p.lse_sb + h * p.lse_sh + (s.q_start + i) * p.lse_ss;
}

// dst[r][d] (row stride ld) <- src row r0 + r (row stride rs, d contiguous) for
// r < nrows; rows at or beyond r_end are zero-filled (so padding never feeds
// NaN garbage into a product).
template <class T>
__device__ __forceinline__ void load_rows(T* __restrict__ dst, int ld, const T* __restrict__ src, int64_t rs, int r0,
                                          int nrows, int r_end, int D) {
  const int n = nrows * D;
  for (int idx = threadIdx.x; idx < n; idx += blockDim.x) {
    const int r = idx / D, d = idx - r * D;
    const int row = r0 + r;
    dst[r * ld + d] = row < r_end ? src[static_cast<int64_t>(row) * rs + d] : T(0);
  }
}

// ---- forward (and the f64 backward's exact log-sum-exp pass) --------------------
// kLseOnly: no V, no y; writes the row log-sum-exp (double) to lse_out[ws_row]
// instead. Shared memory: q [BQ][D], k|v [BK][D+1], p [BQ][BK].
template <class T, int NC, int RPW, int KPL>
__host__ __device__ constexpr size_t fwd_smem_elems(int nw, int D) {
  return static_cast<size_t>(nw * RPW) * D + static_cast<size_t>(32 * KPL) * (D + 1) +
         static_cast<size_t>(nw * RPW) * (32 * KPL);
}

template <class T, int NC, int RPW, int KPL, bool kLseOnly>
__global__ void __launch_bounds__(kMaxWarps * 32)
    fwd_kernel(const FlashFwdParams p, const int ntiles, double* __restrict__ lse_out) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int BK = 32 * KPL;
  const int D = p.head_dim;
  const int nw = static_cast<int>(blockDim.x >> 5);
  const int BQ = nw * RPW;
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const TileId t = tile_id(ntiles, p.heads);
  const int b = t.b, h = t.h, hk = h / (p.heads / p.kv_heads);
  const SeqInfo s = seq_info(p, b);
  const int i0 = t.tile * BQ;
  if (i0 >= s.q_len) return;
  const int i1 = min(i0 + BQ, s.q_len);

  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sKV = sQ + BQ * D;
  T* sP = sKV + BK * (D + 1);
  const T* qg = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + s.q_start * p.q_ss;
  const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh + s.kv_start * p.k_ss;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh + s.kv_start * p.v_ss;
  load_rows(sQ, D, qg, p.q_ss, i0, BQ, i1, D);

  const T scale = static_cast<T>(p.scale), cap = static_cast<T>(p.softcap);
  const T slope = static_cast<T>(alibi_slope(p, b, h));
  const int rbase = warp * RPW;
  T m[RPW], l[RPW], o[RPW][kLseOnly ? 1 : NC];
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    m[r] = neg_inf<T>();
    l[r] = T(0);
#pragma unroll
    for (int c = 0; c < (kLseOnly ? 1 : NC); ++c) o[r][c] = T(0);
  }

  const KeyRange kr = tile_key_range(p, s, i0, i1);
  for (int j0 = kr.lo; j0 < kr.hi; j0 += BK) {
    __syncthreads();  // the previous tile's V (and, the first time, the q load) is done with
    load_rows(sKV, D + 1, kg, p.k_ss, j0, BK, kr.hi, D);
    __syncthreads();
    T sc[RPW][KPL];
#pragma unroll
    for (int r = 0; r < RPW; ++r)
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) sc[r][kk] = T(0);
    for (int d = 0; d < D; ++d) {
      T kv[KPL];
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) kv[kk] = sKV[(lane + 32 * kk) * (D + 1) + d];
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        const T qv = sQ[(rbase + r) * D + d];
#pragma unroll
        for (int kk = 0; kk < KPL; ++kk) sc[r][kk] = fma(qv, kv[kk], sc[r][kk]);
      }
    }
    // Scores -> online softmax (all branches below are warp-uniform per row).
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const int i = i0 + rbase + r;
      const bool row_ok = i < i1;
      const float* mr = row_ok ? mask_row(p, b, h, i) : nullptr;
      T tmax = neg_inf<T>();
#pragma unroll
      for (int kk = 0; kk < KPL; ++kk) {
        const int j = j0 + lane + 32 * kk;
        T x = neg_inf<T>();
        if (row_ok && j < kr.hi && key_allowed(p, s, i, j))
          x = score_transform<T>(p, sc[r][kk], scale, cap, slope, mr, i, j, s, nullptr);
        sc[r][kk] = x;
        tmax = x > tmax ? x : tmax;
      }
      tmax = warp_allmax(tmax);
      const T mnew = tmax > m[r] ? tmax : m[r];
      T alpha = T(1), psum = T(0);
      if (mnew != neg_inf<T>()) {
        alpha = dev::acc_exp(m[r] - mnew);  // 0 when m was -inf
#pragma unroll
        for (int kk = 0; kk < KPL; ++kk) {
          const T pv = dev::acc_exp(sc[r][kk] - mnew);
          psum += pv;
          if constexpr (!kLseOnly) sP[(rbase + r) * BK + lane + 32 * kk] = pv;
        }
      } else if constexpr (!kLseOnly) {
#pragma unroll
        for (int kk = 0; kk < KPL; ++kk) sP[(rbase + r) * BK + lane + 32 * kk] = T(0);
      }
      psum = warp_allsum(psum);
      l[r] = l[r] * alpha + psum;
      m[r] = mnew;
      if constexpr (!kLseOnly) {
#pragma unroll
        for (int c = 0; c < NC; ++c) o[r][c] *= alpha;
      }
    }
    if constexpr (!kLseOnly) {
      __syncthreads();  // every warp is done with K
      load_rows(sKV, D + 1, vg, p.v_ss, j0, BK, kr.hi, D);
      __syncthreads();
      const int jn = min(BK, kr.hi - j0);
      for (int jj = 0; jj < jn; ++jj) {
        T vv[NC];
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const int d = lane + 32 * c;
          vv[c] = d < D ? sKV[jj * (D + 1) + d] : T(0);
        }
#pragma unroll
        for (int r = 0; r < RPW; ++r) {
          const T pv = sP[(rbase + r) * BK + jj];
#pragma unroll
          for (int c = 0; c < NC; ++c) o[r][c] = fma(pv, vv[c], o[r][c]);
        }
      }
    }
  }

  // Finalize: a row that saw no finite score (no allowed key, or all -inf)
  // gets y = 0 and lse = -inf.
  T* yg = kLseOnly ? nullptr : static_cast<T*>(p.y) + b * p.y_sb + h * p.y_sh + s.q_start * p.y_ss;
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const int i = i0 + rbase + r;
    if (i >= i1) continue;
    const bool empty = m[r] == neg_inf<T>();
    const T lse = empty ? neg_inf<T>() : m[r] + dev::acc_log(l[r]);
    if constexpr (kLseOnly) {
      if (lane == 0) lse_out[ws_row(p, s, b, h, i)] = static_cast<double>(lse);
    } else {
      T* yr = yg + static_cast<int64_t>(i) * p.y_ss;
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const int d = lane + 32 * c;
        if (d < D) yr[d] = empty ? T(0) : o[r][c] / l[r];
      }
      if (lane == 0 && p.lse) p.lse[lse_offset(p, s, b, h, i)] = static_cast<float>(lse);  // null: no lse
    }
  }
}

// ---- backward: per-row statistics -----------------------------------------------
// dsum[ws_row] = sum_d dy[i,d] * y[i,d]. 8 warps, 8 rows each.
template <class T>
__global__ void __launch_bounds__(kMaxWarps * 32)
    dsum_kernel(const FlashBwdParams p, const int ntiles, T* __restrict__ dsum) {
  const int D = p.head_dim;
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const TileId t = tile_id(ntiles, p.heads);
  const int b = t.b, h = t.h;
  const SeqInfo s = seq_info(p, b);
  const int i0 = t.tile * (kMaxWarps * kDsumRowsPerWarp) + warp * kDsumRowsPerWarp;
  const T* dyg = static_cast<const T*>(p.dy) + b * p.dy_sb + h * p.dy_sh + s.q_start * p.dy_ss;
  const T* yg = static_cast<const T*>(p.y) + b * p.y_sb + h * p.y_sh + s.q_start * p.y_ss;
  for (int r = 0; r < kDsumRowsPerWarp; ++r) {
    const int i = i0 + r;
    if (i >= s.q_len) break;
    const T* dyr = dyg + static_cast<int64_t>(i) * p.dy_ss;
    const T* yr = yg + static_cast<int64_t>(i) * p.y_ss;
    T acc = T(0);
    for (int d = lane; d < D; d += 32) acc = fma(dyr[d], yr[d], acc);
    acc = warp_allsum(acc);
    if (lane == 0) dsum[ws_row(p, s, b, h, i)] = acc;
  }
}

// The row's log-sum-exp for the backward: the forward's f32 lse for f32, the
// exact one recomputed by the backward (fwd_kernel<..., true>) for f64.
template <class T>
__device__ __forceinline__ T row_lse(const FlashBwdParams& p, const double* lse64, const SeqInfo& s, int b, int h,
                                     int i) {
  if constexpr (std::is_same_v<T, double>) {
    return lse64[ws_row(p, s, b, h, i)];
  } else {
    return p.lse[lse_offset(p, s, b, h, i)];
  }
}

// ---- backward: dQ ----------------------------------------------------------------
// Shared memory: q [BQ][D], dy [BQ][D], v|k [32][D+1], ds [BQ][32].
template <class T, int NC, int RPW>
__host__ __device__ constexpr size_t dq_smem_elems(int nw, int D) {
  return 2 * static_cast<size_t>(nw * RPW) * D + 32 * static_cast<size_t>(D + 1) + static_cast<size_t>(nw * RPW) * 32;
}

template <class T, int NC, int RPW>
__global__ void __launch_bounds__(kMaxWarps * 32)
    dq_kernel(const FlashBwdParams p, const int ntiles, const T* __restrict__ dsum, const double* __restrict__ lse64) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int BK = 32;
  const int D = p.head_dim;
  const int nw = static_cast<int>(blockDim.x >> 5);
  const int BQ = nw * RPW;
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const TileId t = tile_id(ntiles, p.heads);
  const int b = t.b, h = t.h, hk = h / (p.heads / p.kv_heads);
  const SeqInfo s = seq_info(p, b);
  const int i0 = t.tile * BQ;
  if (i0 >= s.q_len) return;
  const int i1 = min(i0 + BQ, s.q_len);

  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sDY = sQ + BQ * D;
  T* sKV = sDY + BQ * D;
  T* sS = sKV + BK * (D + 1);
  const T* qg = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + s.q_start * p.q_ss;
  const T* dyg = static_cast<const T*>(p.dy) + b * p.dy_sb + h * p.dy_sh + s.q_start * p.dy_ss;
  const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh + s.kv_start * p.k_ss;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh + s.kv_start * p.v_ss;
  load_rows(sQ, D, qg, p.q_ss, i0, BQ, i1, D);
  load_rows(sDY, D, dyg, p.dy_ss, i0, BQ, i1, D);

  const T scale = static_cast<T>(p.scale), cap = static_cast<T>(p.softcap);
  const T slope = static_cast<T>(alibi_slope(p, b, h));
  const int rbase = warp * RPW;
  T lse[RPW], ds_row[RPW], acc[RPW][NC];
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const int i = i0 + rbase + r;
    lse[r] = i < i1 ? row_lse<T>(p, lse64, s, b, h, i) : neg_inf<T>();
    ds_row[r] = i < i1 ? dsum[ws_row(p, s, b, h, i)] : T(0);
#pragma unroll
    for (int c = 0; c < NC; ++c) acc[r][c] = T(0);
  }

  const KeyRange kr = tile_key_range(p, s, i0, i1);
  for (int j0 = kr.lo; j0 < kr.hi; j0 += BK) {
    __syncthreads();
    load_rows(sKV, D + 1, vg, p.v_ss, j0, BK, kr.hi, D);
    __syncthreads();
    T dp[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) dp[r] = T(0);
    for (int d = 0; d < D; ++d) {
      const T vv = sKV[lane * (D + 1) + d];
#pragma unroll
      for (int r = 0; r < RPW; ++r) dp[r] = fma(sDY[(rbase + r) * D + d], vv, dp[r]);
    }
    __syncthreads();
    load_rows(sKV, D + 1, kg, p.k_ss, j0, BK, kr.hi, D);
    __syncthreads();
    T sc[RPW];
#pragma unroll
    for (int r = 0; r < RPW; ++r) sc[r] = T(0);
    for (int d = 0; d < D; ++d) {
      const T kv = sKV[lane * (D + 1) + d];
#pragma unroll
      for (int r = 0; r < RPW; ++r) sc[r] = fma(sQ[(rbase + r) * D + d], kv, sc[r]);
    }
    const int j = j0 + lane;
#pragma unroll
    for (int r = 0; r < RPW; ++r) {
      const int i = i0 + rbase + r;
      T ds = T(0);
      if (i < i1 && lse[r] != neg_inf<T>() && j < kr.hi && key_allowed(p, s, i, j)) {
        T g;
        const T x = score_transform<T>(p, sc[r], scale, cap, slope, mask_row(p, b, h, i), i, j, s, &g);
        const T pr = dev::acc_exp(x - lse[r]);
        ds = pr * (dp[r] - ds_row[r]) * g;
      }
      sS[(rbase + r) * BK + lane] = ds;
    }
    __syncwarp();
    const int jn = min(BK, kr.hi - j0);
    for (int jj = 0; jj < jn; ++jj) {
      T kv[NC];
#pragma unroll
      for (int c = 0; c < NC; ++c) {
        const int d = lane + 32 * c;
        kv[c] = d < D ? sKV[jj * (D + 1) + d] : T(0);
      }
#pragma unroll
      for (int r = 0; r < RPW; ++r) {
        const T dsv = sS[(rbase + r) * BK + jj];
#pragma unroll
        for (int c = 0; c < NC; ++c) acc[r][c] = fma(dsv, kv[c], acc[r][c]);
      }
    }
  }

  T* dqg = static_cast<T*>(p.dq) + b * p.dq_sb + h * p.dq_sh + s.q_start * p.dq_ss;
#pragma unroll
  for (int r = 0; r < RPW; ++r) {
    const int i = i0 + rbase + r;
    if (i >= i1) continue;
    T* dqr = dqg + static_cast<int64_t>(i) * p.dq_ss;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int d = lane + 32 * c;
      if (d < D) dqr[d] = acc[r][c] * scale;
    }
  }
}

// ---- backward: dK and dV -----------------------------------------------------------
// Shared memory: k [BKb][D], v [BKb][D], q [BQ][D+1], dy [BQ][D+1], p [BKb][BQ], ds [BKb][BQ].
template <class T, int NC, int KPW, int QPL>
__host__ __device__ constexpr size_t dkv_smem_elems(int nw, int D) {
  return 2 * static_cast<size_t>(nw * KPW) * D + 2 * static_cast<size_t>(32 * QPL) * (D + 1) +
         2 * static_cast<size_t>(nw * KPW) * (32 * QPL);
}

template <class T, int NC, int KPW, int QPL>
__global__ void __launch_bounds__(kMaxWarps * 32)
    dkv_kernel(const FlashBwdParams p, const int ntiles, const T* __restrict__ dsum, const double* __restrict__ lse64) {
  extern __shared__ __align__(16) unsigned char smem_raw[];
  constexpr int BQ = 32 * QPL;
  const int D = p.head_dim;
  const int nw = static_cast<int>(blockDim.x >> 5);
  const int BKb = nw * KPW;
  const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
  const TileId t = tile_id(ntiles, p.kv_heads);
  const int b = t.b, hk = t.h;
  const int G = p.heads / p.kv_heads;
  const SeqInfo s = seq_info(p, b);
  const int j0 = t.tile * BKb;
  if (j0 >= s.kv_len) return;
  const int j1 = min(j0 + BKb, s.kv_len);

  T* sK = reinterpret_cast<T*>(smem_raw);
  T* sV = sK + BKb * D;
  T* sQ = sV + BKb * D;
  T* sDY = sQ + BQ * (D + 1);
  T* sP = sDY + BQ * (D + 1);
  T* sS = sP + BKb * BQ;
  const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh + s.kv_start * p.k_ss;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh + s.kv_start * p.v_ss;
  load_rows(sK, D, kg, p.k_ss, j0, BKb, j1, D);
  load_rows(sV, D, vg, p.v_ss, j0, BKb, j1, D);

  const T scale = static_cast<T>(p.scale), cap = static_cast<T>(p.softcap);
  const int kbase = warp * KPW;
  T dk[KPW][NC], dv[KPW][NC];
#pragma unroll
  for (int k = 0; k < KPW; ++k)
#pragma unroll
    for (int c = 0; c < NC; ++c) dk[k][c] = dv[k][c] = T(0);

  const KeyRange qr = tile_query_range(p, s, j0, j1);
  for (int g = 0; g < G; ++g) {  // the group's query heads, in order
    const int h = hk * G + g;
    const T slope = static_cast<T>(alibi_slope(p, b, h));
    const T* qg = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + s.q_start * p.q_ss;
    const T* dyg = static_cast<const T*>(p.dy) + b * p.dy_sb + h * p.dy_sh + s.q_start * p.dy_ss;
    for (int i0 = qr.lo; i0 < qr.hi; i0 += BQ) {
      __syncthreads();  // the previous tile's q / dy / p / ds are done with (and k / v loaded)
      load_rows(sQ, D + 1, qg, p.q_ss, i0, BQ, qr.hi, D);
      load_rows(sDY, D + 1, dyg, p.dy_ss, i0, BQ, qr.hi, D);
      __syncthreads();
      T lse[QPL], dsr[QPL];
#pragma unroll
      for (int qq = 0; qq < QPL; ++qq) {
        const int i = i0 + lane + 32 * qq;
        lse[qq] = i < qr.hi ? row_lse<T>(p, lse64, s, b, h, i) : neg_inf<T>();
        dsr[qq] = i < qr.hi ? dsum[ws_row(p, s, b, h, i)] : T(0);
      }
      T sc[KPW][QPL], dp[KPW][QPL];
#pragma unroll
      for (int k = 0; k < KPW; ++k)
#pragma unroll
        for (int qq = 0; qq < QPL; ++qq) sc[k][qq] = dp[k][qq] = T(0);
      for (int d = 0; d < D; ++d) {
        T qv[QPL], dyv[QPL];
#pragma unroll
        for (int qq = 0; qq < QPL; ++qq) {
          qv[qq] = sQ[(lane + 32 * qq) * (D + 1) + d];
          dyv[qq] = sDY[(lane + 32 * qq) * (D + 1) + d];
        }
#pragma unroll
        for (int k = 0; k < KPW; ++k) {
          const T kv = sK[(kbase + k) * D + d], vv = sV[(kbase + k) * D + d];
#pragma unroll
          for (int qq = 0; qq < QPL; ++qq) {
            sc[k][qq] = fma(kv, qv[qq], sc[k][qq]);
            dp[k][qq] = fma(vv, dyv[qq], dp[k][qq]);
          }
        }
      }
#pragma unroll
      for (int k = 0; k < KPW; ++k) {
        const int j = j0 + kbase + k;
#pragma unroll
        for (int qq = 0; qq < QPL; ++qq) {
          const int i = i0 + lane + 32 * qq;
          T pr = T(0), ds = T(0);
          if (j < j1 && i < qr.hi && lse[qq] != neg_inf<T>() && key_allowed(p, s, i, j)) {
            T gt;
            const T x = score_transform<T>(p, sc[k][qq], scale, cap, slope, mask_row(p, b, h, i), i, j, s, &gt);
            pr = dev::acc_exp(x - lse[qq]);
            ds = pr * (dp[k][qq] - dsr[qq]) * gt;
          }
          sP[(kbase + k) * BQ + lane + 32 * qq] = pr;
          sS[(kbase + k) * BQ + lane + 32 * qq] = ds;
        }
      }
      __syncwarp();
      const int in = min(BQ, qr.hi - i0);
      for (int ii = 0; ii < in; ++ii) {
        T dyv[NC], qv[NC];
#pragma unroll
        for (int c = 0; c < NC; ++c) {
          const int d = lane + 32 * c;
          dyv[c] = d < D ? sDY[ii * (D + 1) + d] : T(0);
          qv[c] = d < D ? sQ[ii * (D + 1) + d] : T(0);
        }
#pragma unroll
        for (int k = 0; k < KPW; ++k) {
          const T pk = sP[(kbase + k) * BQ + ii], sk = sS[(kbase + k) * BQ + ii];
#pragma unroll
          for (int c = 0; c < NC; ++c) {
            dv[k][c] = fma(pk, dyv[c], dv[k][c]);
            dk[k][c] = fma(sk, qv[c], dk[k][c]);
          }
        }
      }
    }
  }

  // Every key row of the tile is written, zeros where no query row sees it.
  T* dkg = static_cast<T*>(p.dk) + b * p.dk_sb + hk * p.dk_sh + s.kv_start * p.dk_ss;
  T* dvg = static_cast<T*>(p.dv) + b * p.dv_sb + hk * p.dv_sh + s.kv_start * p.dv_ss;
#pragma unroll
  for (int k = 0; k < KPW; ++k) {
    const int j = j0 + kbase + k;
    if (j >= j1) continue;
    T* dkr = dkg + static_cast<int64_t>(j) * p.dk_ss;
    T* dvr = dvg + static_cast<int64_t>(j) * p.dv_ss;
#pragma unroll
    for (int c = 0; c < NC; ++c) {
      const int d = lane + 32 * c;
      if (d < D) {
        dkr[d] = dk[k][c] * scale;
        dvr[d] = dv[k][c];
      }
    }
  }
}

}  // namespace baracuda::attention::cuda::simt

// ---- host-side launch helpers ------------------------------------------------------
namespace baracuda::attention::cuda::simt {

// The opt-in shared memory per block of the current device (cached per ordinal).
inline Result<int> smem_limit() {
  static std::atomic<int> cache[64] = {};
  int dev = 0;
  cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "flash SIMT: cudaGetDevice");
  if (dev >= 0 && dev < 64) {
    const int c = cache[dev].load(std::memory_order_relaxed);
    if (c > 0) return c;
  }
  int v = 0;
  e = cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, dev);
  if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "flash SIMT: shared memory limit");
  if (dev >= 0 && dev < 64) cache[dev].store(v, std::memory_order_relaxed);
  return v;
}

// Head-dim bucket: the per-lane column count NC (D <= 32*NC).
template <class F>
Status with_nc(int D, F&& f) {
  if (D <= 64) return f(std::integral_constant<int, 2>{});
  if (D <= 128) return f(std::integral_constant<int, 4>{});
  return f(std::integral_constant<int, 8>{});
}

// The most warps (8, 4, 2, 1) whose shared memory `elems(nw) * sizeof(T)` fits.
template <class T, class Elems>
Status pick_warps(const char* what, int limit, Elems&& elems, int* nw, size_t* bytes) {
  for (int w = kMaxWarps; w >= 1; w >>= 1) {
    const size_t b = elems(w) * sizeof(T);
    if (b <= static_cast<size_t>(limit)) {
      *nw = w;
      *bytes = b;
      return Status::ok();
    }
  }
  return Status(StatusCode::Unsupported, std::string(what) + ": the head dimension needs more shared memory than the device offers (" +
                                             std::to_string(elems(1) * sizeof(T)) + " > " + std::to_string(limit) + " bytes)");
}

// Blocks for `tiles` tiles of each of `heads` x `batch` problems (one grid axis).
inline Status grid_blocks(const char* what, int64_t tiles, int64_t heads, int64_t batch, unsigned* blocks) {
  const int64_t n = tiles * heads * batch;
  if (n > 0x7fffffffLL) return Status(StatusCode::Unsupported, std::string(what) + ": problem needs more than 2^31-1 thread blocks");
  *blocks = static_cast<unsigned>(n);
  return Status::ok();
}

template <class Kern, class... Args>
Status launch(const char* what, Kern kern, unsigned blocks, int threads, size_t smem, void* stream, Args... args) {
  if (blocks == 0) return Status::ok();
  if (smem > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), what);
  }
  kern<<<blocks, threads, smem, static_cast<cudaStream_t>(stream)>>>(args...);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), what);
  return Status::ok();
}

inline Status check_common(const FlashFwdParams& p, const char* what) {
  if (p.dtype != DType::F32 && p.dtype != DType::F64)
    return Status(StatusCode::Unsupported, std::string(what) + ": the SIMT path runs f32 and f64 only");
  if (p.head_dim < 1 || p.head_dim > 256)
    return Status(StatusCode::Unsupported, std::string(what) + ": the SIMT path needs 1 <= head_dim <= 256, got " +
                                               std::to_string(p.head_dim));
  if (p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    return Status(StatusCode::InvalidProblem, std::string(what) + ": heads must be a multiple of kv_heads");
  if ((p.cu_q == nullptr) != (p.cu_kv == nullptr))
    return Status(StatusCode::InvalidProblem, std::string(what) + ": varlen needs both cu_seqlens arrays");
  return Status::ok();
}

// Forward-shaped launch (forward itself, or the f64 backward's exact-lse pass).
template <class T, bool kLseOnly>
Status launch_fwd(const FlashFwdParams& p, void* stream, double* lse_out, const char* what) {
  auto lim = smem_limit();
  if (!lim.is_ok()) return lim.status();
  return with_nc(p.head_dim, [&](auto nc) -> Status {
    constexpr int NC = decltype(nc)::value;
    constexpr int RPW = Cfg<T>::kFwdRpw, KPL = fwd_kpl<NC>();
    int nw = 0;
    size_t bytes = 0;
    Status st = pick_warps<T>(what, lim.value(), [&](int w) { return fwd_smem_elems<T, NC, RPW, KPL>(w, p.head_dim); }, &nw,
                              &bytes);
    if (!st.is_ok()) return st;
    const int bq = nw * RPW;
    const int64_t tiles = (static_cast<int64_t>(p.q_len) + bq - 1) / bq;
    unsigned blocks = 0;
    st = grid_blocks(what, tiles, p.heads, p.batch, &blocks);
    if (!st.is_ok()) return st;
    return launch(what, fwd_kernel<T, NC, RPW, KPL, kLseOnly>, blocks, nw * 32, bytes, stream, p,
                  static_cast<int>(tiles), lse_out);
  });
}

}  // namespace baracuda::attention::cuda::simt
