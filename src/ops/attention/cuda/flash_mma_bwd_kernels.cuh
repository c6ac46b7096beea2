// Kernels of the tensor-core flash-attention backward (see flash_mma_bwd.cuh
// for the algorithm). Included only by the per-(dtype, head dim) instantiation
// files.
#pragma once
#include <algorithm>

#include "core/cuda_device.hpp"
#include "cuda/smem_optin.cuh"
#include "ops/attention/cuda/flash_mma_bwd.cuh"
#include "cuda/sm80/mma.cuh"

namespace baracuda::attention::cuda::mma_bwd {

using namespace baracuda::dev::sm80;

// 4-byte cp.async (through L1); pred false zero-fills and reads nothing.
__device__ __forceinline__ void cp_async_4(uint32_t smem_addr, const void* gmem, bool pred) {
  const int src_bytes = pred ? 4 : 0;
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;\n" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes)
               : "memory");
}

// Rows [0, kRows) x [0, kD) of a row-major global tile (row stride ld_g
// elements) into shared memory (row stride kD + 8); rows >= valid_rows and
// columns >= d are zero-filled.
template <class T, int kRows, int kD>
__device__ __forceinline__ void bwd_load_tile(T* smem, const T* g, int64_t ld_g, int valid_rows, int d, int tid) {
  constexpr int kChunks = kD / 8, kLd = kD + 8;
  constexpr int kTotal = kRows * kChunks;
#pragma unroll
  for (int it = 0; it < (kTotal + kThreads - 1) / kThreads; ++it) {
    const int c = it * kThreads + tid;
    if (kTotal % kThreads == 0 || c < kTotal) {
      const int row = c / kChunks, ch = c % kChunks;
      const bool ok = row < valid_rows && ch * 8 < d;
      const T* src = ok ? g + row * ld_g + ch * 8 : g;
      cp_async_16(smem_u32(smem + row * kLd + ch * 8), src, ok);
    }
  }
}

// Stores a warp's 16 x (kDT*8) f32 C-fragment tile, times `mul`, to global rows
// row0 + {g, g+8} (< valid_rows) and columns col0 + 8*dt + 2*t4 (< d).
template <class T, int kDT>
__device__ __forceinline__ void bwd_store_frag(T* g_base, int64_t ld_g, const float (&acc)[kDT][4], float mul,
                                               int row0, int valid_rows, int col0, int d, int lane) {
  const int g = lane >> 2, t4 = lane & 3;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int row = row0 + g + hf * 8;
    if (row >= valid_rows) continue;
    T* rp = g_base + row * ld_g;
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) {
      const int col = col0 + dt * 8 + 2 * t4;
      if (col < d) {
        *reinterpret_cast<uint32_t*>(rp + col) = pack2<T>(acc[dt][hf * 2] * mul, acc[dt][hf * 2 + 1] * mul);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// dK / dV
// ---------------------------------------------------------------------------
template <class T, int kD, bool kLocal, bool kMods>
__global__ void __launch_bounds__(kThreads, 1) bwd_dkdv_kernel(const __grid_constant__ BwdArgs a) {
  using Tile = BwdTile<kD>;
  constexpr int kWD = Tile::kWD, kBN = Tile::kBN, kBM = Tile::kBM, kLd = Tile::kLd;
  constexpr int kDW = kD / kWD;  // head-dim columns per warp
  constexpr int kNT = kBM / 8;   // 8-query column tiles of S^T
  constexpr int kDT = kDW / 8;   // 8-wide column tiles of this warp's dK / dV
  static_assert(kNT % 2 == 0 && kDT % 2 == 0 && kDW % 16 == 0, "tile shapes");
  const FlashBwdParams& p = a.p;

  extern __shared__ uint4 smem_raw[];
  T* sK = reinterpret_cast<T*>(smem_raw);
  T* sV = sK + kBN * kLd;
  T* sQ = sV + kBN * kLd;       // 2 stages x kBM x kLd
  T* sdY = sQ + 2 * kBM * kLd;  // 2 stages
  float* sL = reinterpret_cast<float*>(sdY + 2 * kBM * kLd);  // 2 stages x kBM: lse2
  float* sDs = sL + 2 * kBM;                                  // 2 stages x kBM: dsum
  float* sX = sDs + 2 * kBM;  // kWD == 2: per warp, partial S^T and dP^T (2 x 16 x kBM)

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int nb = blockIdx.x, hk = blockIdx.y, b = blockIdx.z + a.b_off;
  const SeqInfo s = seq_info(p, b);
  const int n0 = nb * kBN;
  if (n0 >= s.kv_len) return;
  const int keys = s.kv_len - n0 < kBN ? s.kv_len - n0 : kBN;
  const int d = p.head_dim;
  const int wk = warp / kWD, wd = warp % kWD;
  const int kr0 = wk * 16;   // this warp's first key row in the tile
  const int dc0 = wd * kDW;  // this warp's first head-dim column

  // Query rows that can see any key of the tile; walked from qr.lo in kBM steps.
  const KeyRange qr = kLocal ? tile_query_range(p, s, n0, n0 + keys) : KeyRange{0, s.q_len};
  const int n_mt = qr.hi > qr.lo ? (qr.hi - qr.lo + kBM - 1) / kBM : 0;
  const int total = n_mt * a.group;

  const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh + (s.kv_start + n0) * p.k_ss;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh + (s.kv_start + n0) * p.v_ss;

  float acc_dk[kDT][4], acc_dv[kDT][4];
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dk[dt][e] = acc_dv[dt][e] = 0.f;

  const uint32_t sKa = smem_u32(sK), sVa = smem_u32(sV);

  // Issue the loads of step `it` (query head it / n_mt, tile it % n_mt) into `stage`.
  auto load_step = [&](int it, int stage) {
    const int h = hk * a.group + it / n_mt;
    const int m0 = qr.lo + (it % n_mt) * kBM;
    const int rows = qr.hi - m0 < kBM ? qr.hi - m0 : kBM;
    const T* qg = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + (s.q_start + m0) * p.q_ss;
    const T* dyg = static_cast<const T*>(p.dy) + b * p.dy_sb + h * p.dy_sh + (s.q_start + m0) * p.dy_ss;
    bwd_load_tile<T, kBM, kD>(sQ + stage * kBM * kLd, qg, p.q_ss, rows, d, tid);
    bwd_load_tile<T, kBM, kD>(sdY + stage * kBM * kLd, dyg, p.dy_ss, rows, d, tid);
    if (tid < 2 * kBM) {
      const int r = tid % kBM;
      const bool ok = r < rows;
      const float* src = (tid < kBM ? a.lse2 : a.dsum) + ws_row(p, s, b, h, m0 + (ok ? r : 0));
      cp_async_4(smem_u32(sL + (tid < kBM ? 0 : 2 * kBM) + stage * kBM + r), src, ok);
    }
  };

  if (total > 0) {
    bwd_load_tile<T, kBN, kD>(sK, kg, p.k_ss, keys, d, tid);
    bwd_load_tile<T, kBN, kD>(sV, vg, p.v_ss, keys, d, tid);
    load_step(0, 0);
    cp_async_commit();
  }

  for (int it = 0; it < total; ++it) {
    const int st = it & 1;
    if (it + 1 < total) load_step(it + 1, st ^ 1);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();  // step `it` landed (and K, V)

    const int h = hk * a.group + it / n_mt;
    const int m0 = qr.lo + (it % n_mt) * kBM;
    const int rows = qr.hi - m0 < kBM ? qr.hi - m0 : kBM;
    const uint32_t sQa = smem_u32(sQ + st * kBM * kLd), sdYa = smem_u32(sdY + st * kBM * kLd);
    const float* sLs = sL + st * kBM;
    const float* sDss = sDs + st * kBM;

    // ---- S^T = K Q^T and dP^T = V dY^T over this warp's head-dim columns ------
    float acc_s[kNT][4], acc_dp[kNT][4];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_s[nt][e] = acc_dp[nt][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kDW / 16; ++kk) {
      uint32_t ka[4];
      ldmatrix_x4(ka, sKa + 2u * ldsm_a_off(lane, kr0, dc0 + kk * 16, kLd));
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        uint32_t qb[4];
        ldmatrix_x4(qb, sQa + 2u * ldsm_b_nk_off(lane, np * 16, dc0 + kk * 16, kLd));
        mma_16816<T>(acc_s[2 * np], ka, qb[0], qb[1]);
        mma_16816<T>(acc_s[2 * np + 1], ka, qb[2], qb[3]);
      }
    }
#pragma unroll
    for (int kk = 0; kk < kDW / 16; ++kk) {
      uint32_t va[4];
      ldmatrix_x4(va, sVa + 2u * ldsm_a_off(lane, kr0, dc0 + kk * 16, kLd));
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        uint32_t yb[4];
        ldmatrix_x4(yb, sdYa + 2u * ldsm_b_nk_off(lane, np * 16, dc0 + kk * 16, kLd));
        mma_16816<T>(acc_dp[2 * np], va, yb[0], yb[1]);
        mma_16816<T>(acc_dp[2 * np + 1], va, yb[2], yb[3]);
      }
    }
    if constexpr (kWD > 1) {
      // Exchange partial sums with the partner warp (same keys, other half of
      // D). a + b == b + a exactly, so both warps hold identical totals.
      float4* mine = reinterpret_cast<float4*>(sX) + warp * (2 * kNT * 32);
      const float4* other = reinterpret_cast<const float4*>(sX) + (warp ^ 1) * (2 * kNT * 32);
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        mine[nt * 32 + lane] = make_float4(acc_s[nt][0], acc_s[nt][1], acc_s[nt][2], acc_s[nt][3]);
        mine[(kNT + nt) * 32 + lane] = make_float4(acc_dp[nt][0], acc_dp[nt][1], acc_dp[nt][2], acc_dp[nt][3]);
      }
      __syncthreads();
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const float4 os = other[nt * 32 + lane], od = other[(kNT + nt) * 32 + lane];
        acc_s[nt][0] += os.x;
        acc_s[nt][1] += os.y;
        acc_s[nt][2] += os.z;
        acc_s[nt][3] += os.w;
        acc_dp[nt][0] += od.x;
        acc_dp[nt][1] += od.y;
        acc_dp[nt][2] += od.z;
        acc_dp[nt][3] += od.w;
      }
    }

    // ---- P^T and dS^T (in place: acc_s <- p, acc_dp <- ds) --------------------
    // Element (nt, e): key row kr0 + g + 8*(e/2), query column nt*8 + 2*t4 + (e%2).
    bool edge = false;
    if constexpr (kLocal || kMods) {
      edge = rows < kBM || keys < kBN;
      if (!edge && kLocal) {
        edge = key_range(p, s, m0 + kBM - 1).lo > n0 || key_range(p, s, m0).hi < n0 + kBN;
      }
    }
    [[maybe_unused]] float slope = 0.f;
    if constexpr (kMods) slope = alibi_slope(p, b, h);
    uint32_t pa[kBM / 16][4], sa[kBM / 16][4];  // P^T and dS^T as 16-bit A fragments
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
      const float2 l2 = *reinterpret_cast<const float2*>(sLs + nt * 8 + 2 * t4);
      const float2 ds = *reinterpret_cast<const float2*>(sDss + nt * 8 + 2 * t4);
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const float lv = (e & 1) ? l2.y : l2.x;
        const float dv = (e & 1) ? ds.y : ds.x;
        if constexpr (!kMods) {
          float pv = bwd_exp2(fmaf(acc_s[nt][e], a.scale_log2, -lv));
          if constexpr (kLocal) {
            if (edge) {
              const int i = m0 + nt * 8 + 2 * t4 + (e & 1);
              const int j = n0 + kr0 + g + (e >> 1) * 8;
              if (!key_allowed(p, s, i, j)) pv = 0.f;
            }
          }
          acc_s[nt][e] = pv;
          acc_dp[nt][e] = pv * (acc_dp[nt][e] - dv);
        } else {
          const int il = nt * 8 + 2 * t4 + (e & 1);
          const int i = m0 + il;
          const int j = n0 + kr0 + g + (e >> 1) * 8;
          float pv = 0.f, gt = 1.f;
          if (!edge || (il < rows && key_allowed(p, s, i, j))) {
            const float x = score_transform<float>(p, acc_s[nt][e], a.scale, a.softcap, slope, mask_row(p, b, h, i), i,
                                                   j, s, &gt);
            pv = bwd_exp2(fmaf(x, kLog2e, -lv));
          }
          acc_s[nt][e] = pv;
          acc_dp[nt][e] = pv * (acc_dp[nt][e] - dv) * gt;
        }
      }
      if (nt & 1) {
        acc_to_a_frag<T>(pa[nt / 2], acc_s[nt - 1], acc_s[nt]);
        acc_to_a_frag<T>(sa[nt / 2], acc_dp[nt - 1], acc_dp[nt]);
      }
    }

    // ---- dV += P^T dY, dK += dS^T Q --------------------------------------------
#pragma unroll
    for (int kk = 0; kk < kBM / 16; ++kk) {
#pragma unroll
      for (int dp = 0; dp < kDT / 2; ++dp) {
        uint32_t yb[4];
        ldmatrix_x4_trans(yb, sdYa + 2u * ldsm_b_kn_off(lane, kk * 16, dc0 + dp * 16, kLd));
        mma_16816<T>(acc_dv[2 * dp], pa[kk], yb[0], yb[1]);
        mma_16816<T>(acc_dv[2 * dp + 1], pa[kk], yb[2], yb[3]);
      }
#pragma unroll
      for (int dp = 0; dp < kDT / 2; ++dp) {
        uint32_t qb[4];
        ldmatrix_x4_trans(qb, sQa + 2u * ldsm_b_kn_off(lane, kk * 16, dc0 + dp * 16, kLd));
        mma_16816<T>(acc_dk[2 * dp], sa[kk], qb[0], qb[1]);
        mma_16816<T>(acc_dk[2 * dp + 1], sa[kk], qb[2], qb[3]);
      }
    }
    __syncthreads();  // everyone is done with stage `st` (and sX) before it is refilled
  }

  // ---- epilogue ---------------------------------------------------------------
  T* dkg = static_cast<T*>(p.dk) + b * p.dk_sb + hk * p.dk_sh + (s.kv_start + n0) * p.dk_ss;
  T* dvg = static_cast<T*>(p.dv) + b * p.dv_sb + hk * p.dv_sh + (s.kv_start + n0) * p.dv_ss;
  bwd_store_frag<T, kDT>(dkg, p.dk_ss, acc_dk, a.scale, kr0, keys, dc0, d, lane);
  bwd_store_frag<T, kDT>(dvg, p.dv_ss, acc_dv, 1.f, kr0, keys, dc0, d, lane);
}

// ---------------------------------------------------------------------------
// dQ
// ---------------------------------------------------------------------------
template <class T, int kD, bool kLocal, bool kMods>
__global__ void __launch_bounds__(kThreads, 1) bwd_dq_kernel(const __grid_constant__ BwdArgs a) {
  using Tile = BwdTile<kD>;
  constexpr int kBM = Tile::kQBM, kBN = Tile::kQBN, kLd = Tile::kLd;
  constexpr int kNT = kBN / 8;  // 8-key column tiles of S
  constexpr int kDT = kD / 8;   // 8-wide column tiles of dQ
  static_assert(kNT % 2 == 0 && kDT % 2 == 0, "tile shapes");
  const FlashBwdParams& p = a.p;

  extern __shared__ uint4 smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sdY = sQ + kBM * kLd;
  T* sK = sdY + kBM * kLd;     // 2 stages x kBN x kLd
  T* sV = sK + 2 * kBN * kLd;  // 2 stages

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  // Causal: the last query tiles see the most keys; start them first.
  const int mb = kLocal ? static_cast<int>(gridDim.x) - 1 - static_cast<int>(blockIdx.x) : static_cast<int>(blockIdx.x);
  const int h = blockIdx.y, b = blockIdx.z + a.b_off;
  const SeqInfo s = seq_info(p, b);
  const int m0 = mb * kBM;
  if (m0 >= s.q_len) return;
  const int rows = s.q_len - m0 < kBM ? s.q_len - m0 : kBM;
  const int hk = h / a.group;
  const int d = p.head_dim;
  const int wr0 = warp * 16;

  const KeyRange kr = kLocal ? tile_key_range(p, s, m0, m0 + rows) : KeyRange{0, s.kv_len};
  const int n_nt = kr.hi > kr.lo ? (kr.hi - kr.lo + kBN - 1) / kBN : 0;

  const T* qg = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + (s.q_start + m0) * p.q_ss;
  const T* dyg = static_cast<const T*>(p.dy) + b * p.dy_sb + h * p.dy_sh + (s.q_start + m0) * p.dy_ss;
  const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh + s.kv_start * p.k_ss;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh + s.kv_start * p.v_ss;

  // This thread's rows: m0 + wr0 + g (+8). Rows past the end use lse2 = dsum = 0
  // (their Q and dY are zero, so they produce finite junk that is not stored).
  float lv[2], dv[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int il = wr0 + g + hf * 8;
    lv[hf] = dv[hf] = 0.f;
    if (il < rows) {
      const int64_t r = ws_row(p, s, b, h, m0 + il);
      lv[hf] = a.lse2[r];
      dv[hf] = a.dsum[r];
    }
  }
  [[maybe_unused]] float slope = 0.f;
  [[maybe_unused]] const float* mrow[2] = {nullptr, nullptr};
  if constexpr (kMods) {
    slope = alibi_slope(p, b, h);
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int il = wr0 + g + hf * 8;
      mrow[hf] = mask_row(p, b, h, m0 + (il < rows ? il : 0));
    }
  }

  float acc_dq[kDT][4];
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc_dq[dt][e] = 0.f;

  const uint32_t sQa = smem_u32(sQ), sdYa = smem_u32(sdY);

  if (n_nt > 0) {
    bwd_load_tile<T, kBM, kD>(sQ, qg, p.q_ss, rows, d, tid);
    bwd_load_tile<T, kBM, kD>(sdY, dyg, p.dy_ss, rows, d, tid);
    bwd_load_tile<T, kBN, kD>(sK, kg + static_cast<int64_t>(kr.lo) * p.k_ss, p.k_ss, s.kv_len - kr.lo, d, tid);
    bwd_load_tile<T, kBN, kD>(sV, vg + static_cast<int64_t>(kr.lo) * p.v_ss, p.v_ss, s.kv_len - kr.lo, d, tid);
    cp_async_commit();
  }
  // Rows of this tile, for the per-tile edge test.
  const KeyRange first = kLocal ? key_range(p, s, m0) : KeyRange{0, s.kv_len};
  const KeyRange last = kLocal ? key_range(p, s, m0 + rows - 1) : KeyRange{0, s.kv_len};

  for (int n = 0; n < n_nt; ++n) {
    const int st = n & 1;
    const int j0 = kr.lo + n * kBN;
    if (n + 1 < n_nt) {
      const int j1 = j0 + kBN;
      bwd_load_tile<T, kBN, kD>(sK + (st ^ 1) * kBN * kLd, kg + static_cast<int64_t>(j1) * p.k_ss, p.k_ss,
                                s.kv_len - j1, d, tid);
      bwd_load_tile<T, kBN, kD>(sV + (st ^ 1) * kBN * kLd, vg + static_cast<int64_t>(j1) * p.v_ss, p.v_ss,
                                s.kv_len - j1, d, tid);
    }
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    const uint32_t sKa = smem_u32(sK + st * kBN * kLd), sVa = smem_u32(sV + st * kBN * kLd);

    // ---- S = Q K^T, dP = dY V^T ---------------------------------------------------
    float acc_s[kNT][4], acc_dp[kNT][4];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) acc_s[nt][e] = acc_dp[nt][e] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      uint32_t qa[4];
      ldmatrix_x4(qa, sQa + 2u * ldsm_a_off(lane, wr0, kk * 16, kLd));
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        uint32_t kb[4];
        ldmatrix_x4(kb, sKa + 2u * ldsm_b_nk_off(lane, np * 16, kk * 16, kLd));
        mma_16816<T>(acc_s[2 * np], qa, kb[0], kb[1]);
        mma_16816<T>(acc_s[2 * np + 1], qa, kb[2], kb[3]);
      }
    }
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      uint32_t ya[4];
      ldmatrix_x4(ya, sdYa + 2u * ldsm_a_off(lane, wr0, kk * 16, kLd));
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        uint32_t vb[4];
        ldmatrix_x4(vb, sVa + 2u * ldsm_b_nk_off(lane, np * 16, kk * 16, kLd));
        mma_16816<T>(acc_dp[2 * np], ya, vb[0], vb[1]);
        mma_16816<T>(acc_dp[2 * np + 1], ya, vb[2], vb[3]);
      }
    }

    // ---- P and dS (in place) ---------------------------------------------------
    // Element (nt, e): query row wr0 + g + 8*(e/2), key column j0 + nt*8 + 2*t4 + (e%2).
    bool edge = j0 + kBN > s.kv_len;
    if constexpr (kMods) edge = edge || rows < kBM;
    if constexpr (kLocal) edge = edge || last.lo > j0 || first.hi < j0 + kBN;
    uint32_t sa[kBN / 16][4];  // dS as 16-bit A fragments
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) {
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int hf = e >> 1;
        const int il = wr0 + g + hf * 8;
        const int j = j0 + nt * 8 + 2 * t4 + (e & 1);
        if constexpr (!kMods) {
          float pv = bwd_exp2(fmaf(acc_s[nt][e], a.scale_log2, -lv[hf]));
          if (edge && !key_allowed(p, s, m0 + il, j)) pv = 0.f;
          acc_s[nt][e] = pv;
          acc_dp[nt][e] = pv * (acc_dp[nt][e] - dv[hf]);
        } else {
          float pv = 0.f, gt = 1.f;
          if (!edge || (il < rows && key_allowed(p, s, m0 + il, j))) {
            const float x =
                score_transform<float>(p, acc_s[nt][e], a.scale, a.softcap, slope, mrow[hf], m0 + il, j, s, &gt);
            pv = bwd_exp2(fmaf(x, kLog2e, -lv[hf]));
          }
          acc_dp[nt][e] = pv * (acc_dp[nt][e] - dv[hf]) * gt;
        }
      }
      if (nt & 1) acc_to_a_frag<T>(sa[nt / 2], acc_dp[nt - 1], acc_dp[nt]);
    }

    // ---- dQ += dS K -------------------------------------------------------------------
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
#pragma unroll
      for (int dp = 0; dp < kDT / 2; ++dp) {
        uint32_t kb[4];
        ldmatrix_x4_trans(kb, sKa + 2u * ldsm_b_kn_off(lane, kk * 16, dp * 16, kLd));
        mma_16816<T>(acc_dq[2 * dp], sa[kk], kb[0], kb[1]);
        mma_16816<T>(acc_dq[2 * dp + 1], sa[kk], kb[2], kb[3]);
      }
    }
    __syncthreads();  // everyone is done with stage `st` before it is refilled
  }

  T* dqg = static_cast<T*>(p.dq) + b * p.dq_sb + h * p.dq_sh + (s.q_start + m0) * p.dq_ss;
  bwd_store_frag<T, kDT>(dqg, p.dq_ss, acc_dq, a.scale, wr0, rows, 0, d, lane);
}

// ---------------------------------------------------------------------------
// Launch of the dK/dV and dQ kernels for padded head dim kD (after the
// preprocess kernel has filled a.lse2 / a.dsum).
// ---------------------------------------------------------------------------

template <class T, int kD, bool kLocal, bool kMods>
Status launch_bwd_variant(const BwdArgs& a, cudaStream_t stream) {
  using Tile = BwdTile<kD>;
  const FlashBwdParams& p = a.p;
  // dK / dV
  if (p.kv_len > 0) {
    auto kern = bwd_dkdv_kernel<T, kD, kLocal, kMods>;
    const size_t smem = Tile::dkdv_smem(sizeof(T));
    static dev::SmemOptIn optin;
    BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(optin, kern, smem, "FlashSdpaBackwardPlan: flash_bwd_dkdv smem attribute"));
    for (int b0 = 0; b0 < p.batch; b0 += kMaxGridZ) {
      BwdArgs c = a;
      c.b_off = b0;
      const dim3 grid((p.kv_len + Tile::kBN - 1) / Tile::kBN, p.kv_heads, std::min(kMaxGridZ, p.batch - b0));
      kern<<<grid, kThreads, smem, stream>>>(c);
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaBackwardPlan: flash_bwd_dkdv launch");
    }
  }
  // dQ
  if (p.q_len > 0) {
    auto kern = bwd_dq_kernel<T, kD, kLocal, kMods>;
    const size_t smem = Tile::dq_smem(sizeof(T));
    static dev::SmemOptIn optin;
    BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(optin, kern, smem, "FlashSdpaBackwardPlan: flash_bwd_dq smem attribute"));
    for (int b0 = 0; b0 < p.batch; b0 += kMaxGridZ) {
      BwdArgs c = a;
      c.b_off = b0;
      const dim3 grid((p.q_len + Tile::kQBM - 1) / Tile::kQBM, p.heads, std::min(kMaxGridZ, p.batch - b0));
      kern<<<grid, kThreads, smem, stream>>>(c);
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaBackwardPlan: flash_bwd_dq launch");
    }
  }
  return Status::ok();
}

// Picks the feature variant: kMods (softcap / ALiBi / mask, local rules at run
// time), kLocal (causal / window), or neither.
template <class T, int kD>
Status launch_bwd(const BwdArgs& a, void* stream) {
  const FlashBwdParams& p = a.p;
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  const bool mods = p.mask != nullptr || p.alibi != nullptr || p.softcap > 0.0;
  const bool local = p.causal || p.window_left >= 0 || p.window_right >= 0;
  if (mods) return launch_bwd_variant<T, kD, true, true>(a, st);
  if (local) return launch_bwd_variant<T, kD, true, false>(a, st);
  return launch_bwd_variant<T, kD, false, false>(a, st);
}

}  // namespace baracuda::attention::cuda::mma_bwd

// One explicit instantiation per (dtype, padded head dim) of ../manifest.cmake, grouped into generated TUs.
#define BARACUDA_FLASH_MMA_BWD_INSTANTIATE(T, D) \
  template baracuda::Status baracuda::attention::cuda::mma_bwd::launch_bwd<T, D>(const baracuda::attention::cuda::mma_bwd::BwdArgs&, void*);
