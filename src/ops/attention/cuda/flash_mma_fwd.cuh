// Tensor-core flash-attention forward (FlashAttention-2 algorithm) for f16 and
// bf16 on sm_80+, with mma.sync m16n8k16 and f32 accumulation.
//
// One CTA owns kBM query rows of one (batch, head); each of its kWarps warps
// owns kMT = kBM / (16 * kWarps) row tiles of 16 rows. The CTA walks the key
// tiles (kBN keys) that any of its rows may see (tile_key_range), keeping:
//   * the Q tile in shared memory (read with ldmatrix per 16-deep k-step),
//   * kStages K and V tiles in shared memory, loaded with cp.async: with two
//     stages tile n+1 is requested while tile n is computed (one barrier per
//     tile); with one, V(n) lands during S = Q K(n)^T and K(n+1) during the
//     softmax and O += P V(n) (FlashAttention-2's schedule),
//   * S, the running row max m, the row sum l and O in registers (f32).
// Scores are kept in log2 units (scale * log2(e) folded in) so exp2 suffices.
// Only tiles that straddle a causal / window / length edge evaluate the
// per-element key rules; the feature-free instantiation (kFeat = false: no
// mask, ALiBi or softcap) has no feature code at all in its loop.
// Shared-memory rows are padded by 16 bytes (kD is a multiple of 32, so 8
// consecutive rows hit 8 different 16-byte bank groups for ldmatrix).
//
// kD is the padded head dimension (32, 64, ..., 256); the problem's D (a
// multiple of 8, <= kD) is zero-filled on load and clipped on store.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <atomic>
#include <cstdint>

#include "core/cuda_device.hpp"
#include "ops/attention/cuda/flash_common.cuh"
#include "ops/attention/cuda/mma_utils.cuh"

namespace baracuda::cuda_flash::mma_fwd {

using namespace baracuda::cuda_mma;

template <int kD, int kBM, int kBN, int kWarps>
struct FwdCfg {
  static constexpr int kThreads = kWarps * 32;
  static constexpr int kMT = kBM / (16 * kWarps);  // 16-row tiles per warp
  static constexpr int kNT = kBN / 8;              // 8-key column tiles of S
  static constexpr int kDT = kD / 8;               // 8-wide column tiles of O
  static constexpr int kLd = kD + 8;               // smem row stride (elements)
  static constexpr int kChunks = kD / 8;           // 16-byte chunks per row
  static_assert(kMT >= 1 && kMT * 16 * kWarps == kBM, "kBM must be a multiple of 16 * kWarps");
  static_assert(kD % 32 == 0 && kBN % 16 == 0, "bad tile");
};

// Kernel arguments: the plan's parameters plus the f32 constants derived once.
struct FwdArgs {
  FlashFwdParams p;
  float scale;       // softmax scale
  float scale_log2;  // scale * log2(e)
  float softcap;     // 0 = off
  float softcap_in;  // scale / softcap (0 when off)
  int group;         // heads / kv_heads
  int b_base;        // batch index of blockIdx.z == 0 (grids of > 65535 batches are split)
};

__device__ __forceinline__ float fast_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
}

__device__ __forceinline__ float fast_rcp(float x) {
  float r;
  asm("rcp.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
}

// tanh(u) = sign(u) (1 - 2 / (exp(2|u|) + 1)): absolute error a few f32 ulps
// (enough for a softcap score; tanh.approx's ~5e-4 relative error is not),
// saturating cleanly for large |u|.
__device__ __forceinline__ float tanh_acc(float u) {
  const float e = fast_exp2(fabsf(u) * 2.8853900817779268f);  // exp(2|u|)
  return copysignf(1.f - 2.f * fast_rcp(e + 1.f), u);
}

// Loads rows [0, kRows) x [0, kD) of a row-major tile with row stride `ld_g`
// (elements) into shared memory (row stride Cfg::kLd); rows >= valid_rows and
// columns >= d are zero-filled.
template <class T, int kRows, class Cfg>
__device__ __forceinline__ void load_tile(T* smem, const T* g, int64_t ld_g, int valid_rows, int d, int tid) {
  constexpr int kTotal = kRows * Cfg::kChunks;
  static_assert(kTotal % Cfg::kThreads == 0, "tile loads must divide evenly");
  if constexpr (Cfg::kThreads % Cfg::kChunks == 0) {
    // Each thread keeps one column chunk and steps down the rows: one base
    // address and one stride instead of a 64-bit offset per chunk.
    constexpr int kStep = Cfg::kThreads / Cfg::kChunks;
    const int row0 = tid / Cfg::kChunks, ch = tid % Cfg::kChunks;
    const bool col_ok = ch * 8 < d;
    const T* src = g + row0 * ld_g + ch * 8;
    const int64_t step_g = kStep * ld_g;
    uint32_t dst = smem_u32(smem + row0 * Cfg::kLd + ch * 8);
#pragma unroll
    for (int it = 0; it < kRows / kStep; ++it) {
      const bool ok = col_ok && row0 + it * kStep < valid_rows;
      cp_async_16(dst + it * (kStep * Cfg::kLd * 2), ok ? src : g, ok);
      src += step_g;
    }
  } else {
#pragma unroll
    for (int it = 0; it < kTotal / Cfg::kThreads; ++it) {
      const int c = it * Cfg::kThreads + tid;
      const int row = c / Cfg::kChunks, ch = c % Cfg::kChunks;
      const bool ok = row < valid_rows && ch * 8 < d;
      const T* src = ok ? g + row * ld_g + ch * 8 : g;
      cp_async_16(smem_u32(smem + row * Cfg::kLd + ch * 8), src, ok);
    }
  }
}

// Score transform of one S tile in place (kFeat): raw q.k -> final score in
// log2 units, the pipeline of attention.hpp (scale, softcap, ALiBi, mask), one
// uniform pass per enabled feature. On edge tiles (kEdge) keys outside a row's
// key_range become -inf afterwards, and mask reads past kv_len are skipped.
template <int kMT, int kNT, bool kEdge>
__device__ __forceinline__ void feature_scores(float (&sc)[kMT][kNT][4], const FwdArgs& a, const SeqInfo& s, float slope_log2,
                                               const float* mask_bh, int i0, int j0, int g, int t4) {
  const FlashFwdParams& p = a.p;
  if (a.softcap > 0.f) {
    const float in = a.softcap_in, out = a.softcap * 1.4426950408889634f;
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) sc[mt][nt][e] = tanh_acc(sc[mt][nt][e] * in) * out;
  } else {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int e = 0; e < 4; ++e) sc[mt][nt][e] *= a.scale_log2;
  }
  if (p.alibi != nullptr) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        // |i + off - j| with j = j0 + nt*8 + 2*t4 + c, exact in f32 (< 2^24).
        const float base = static_cast<float>(i0 + mt * 16 + hf * 8 + g + s.off - j0 - 2 * t4);
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int c = 0; c < 2; ++c)
            sc[mt][nt][hf * 2 + c] -= slope_log2 * fabsf(base - static_cast<float>(nt * 8 + c));
      }
  }
  if (p.mask != nullptr) {
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        int i = i0 + mt * 16 + hf * 8 + g;
        if (i > s.q_len - 1) i = s.q_len - 1;  // junk rows past the end read a valid row
        const float* mrow = mask_bh + static_cast<int64_t>(i) * p.m_sq;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
          for (int c = 0; c < 2; ++c) {
            const int j = j0 + nt * 8 + 2 * t4 + c;
            if (!kEdge || j < s.kv_len)
              sc[mt][nt][hf * 2 + c] =
                  fmaf(__ldg(mrow + static_cast<int64_t>(j) * p.m_sk), 1.4426950408889634f, sc[mt][nt][hf * 2 + c]);
          }
      }
  }
}

// Edge tiles: -inf outside each row's key range (rows past the end see nothing).
template <int kMT, int kNT>
__device__ __forceinline__ void edge_mask(float (&sc)[kMT][kNT][4], const FlashFwdParams& p, const SeqInfo& s, int i0, int j0,
                                          int g, int t4) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int i = i0 + mt * 16 + hf * 8 + g;
      int lo = 0, hi = 0;
      if (i < s.q_len) {
        const KeyRange k = key_range(p, s, i);
        lo = k.lo - j0 - 2 * t4;  // compare the in-tile column nt*8 + c
        hi = k.hi - j0 - 2 * t4;
      }
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int jj = nt * 8 + c;
          if (jj < lo || jj >= hi) sc[mt][nt][hf * 2 + c] = -INFINITY;
        }
    }
}

// kStages = 1: one K and one V buffer (V(n) lands during S = Q K(n)^T, K(n+1)
// during the softmax and P V(n)); kStages = 2: two of each, tile n+1 is
// requested a whole iteration ahead and one barrier per tile suffices.
template <class T, int kD, int kBM, int kBN, int kWarps, int kStages, bool kFeat>
__global__ void __launch_bounds__(kWarps * 32, kWarps >= 8 ? 1 : 2) flash_fwd_mma_kernel(const __grid_constant__ FwdArgs a) {
  using Cfg = FwdCfg<kD, kBM, kBN, kWarps>;
  constexpr int kMT = Cfg::kMT, kNT = Cfg::kNT, kDT = Cfg::kDT, kLd = Cfg::kLd;
  static_assert(kStages == 1 || kStages == 2, "kStages must be 1 or 2");
  const FlashFwdParams& p = a.p;

  extern __shared__ uint4 smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + kBM * kLd;            // kStages tiles
  T* sV = sK + kStages * kBN * kLd;  // kStages tiles
  constexpr uint32_t kTileBytes = kBN * kLd * sizeof(T);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  // Heaviest query tiles (causal: the last ones) first.
  const int mb = static_cast<int>(gridDim.x) - 1 - static_cast<int>(blockIdx.x);
  const int h = blockIdx.y, b = blockIdx.z + a.b_base;
  const SeqInfo s = seq_info(p, b);
  const int m0 = mb * kBM;
  if (m0 >= s.q_len) return;
  const int rows = s.q_len - m0 < kBM ? s.q_len - m0 : kBM;
  const int hk = h / a.group;
  const int d = p.head_dim;

  const T* qg = static_cast<const T*>(p.q) + b * p.q_sb + h * p.q_sh + (s.q_start + m0) * p.q_ss;
  const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh + s.kv_start * p.k_ss;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh + s.kv_start * p.v_ss;

  // Key tiles to visit and the ones that need no per-element rules.
  const KeyRange kr = tile_key_range(p, s, m0, m0 + rows);
  const int n_lo = kr.lo / kBN;
  const int n_hi = kr.lo < kr.hi ? (kr.hi + kBN - 1) / kBN : n_lo;
  const KeyRange first = key_range(p, s, m0), last = key_range(p, s, m0 + rows - 1);
  const int f_lo = (last.lo + kBN - 1) / kBN;  // full tiles: n*kBN >= last.lo
  const int f_hi = first.hi / kBN;             //             (n+1)*kBN <= first.hi

  // This thread's rows: r = mt*2 + half -> m0 + warp*kMT*16 + mt*16 + half*8 + g.
  const int wr0 = warp * kMT * 16;
  const int i0 = m0 + wr0;  // first row of this warp (within the sequence)

  float o[kMT][kDT][4];
  float m_run[kMT * 2], l_run[kMT * 2];
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) o[mt][dt][0] = o[mt][dt][1] = o[mt][dt][2] = o[mt][dt][3] = 0.f;
    m_run[mt * 2] = m_run[mt * 2 + 1] = -INFINITY;
    l_run[mt * 2] = l_run[mt * 2 + 1] = 0.f;
  }

  // Feature state (kFeat only). Scores are in log2 units after feature_scores,
  // raw q.k otherwise (the scale, > 0 there, is folded into the exponent).
  float slope_log2 = 0.f;
  const float* mask_bh = nullptr;
  if constexpr (kFeat) {
    slope_log2 = alibi_slope(p, b, h) * 1.4426950408889634f;
    mask_bh = mask_row(p, b, h, 0);
  }
  const float mult = kFeat ? 1.f : a.scale_log2;

  const uint32_t sQa = smem_u32(sQ), sKa = smem_u32(sK), sVa = smem_u32(sV);

  if (n_lo < n_hi) {
    load_tile<T, kBM, Cfg>(sQ, qg, p.q_ss, rows, d, tid);
    load_tile<T, kBN, Cfg>(sK, kg + static_cast<int64_t>(n_lo) * kBN * p.k_ss, p.k_ss, s.kv_len - n_lo * kBN, d, tid);
    if constexpr (kStages == 2)
      load_tile<T, kBN, Cfg>(sV, vg + static_cast<int64_t>(n_lo) * kBN * p.v_ss, p.v_ss, s.kv_len - n_lo * kBN, d, tid);
    cp_async_commit();
  }

  for (int n = n_lo; n < n_hi; ++n) {
    const int j0 = n * kBN;
    const int stage = kStages == 2 ? ((n - n_lo) & 1) : 0;
    const uint32_t kA = sKa + stage * kTileBytes, vA = sVa + stage * kTileBytes;
    cp_async_wait<0>();
    __syncthreads();  // tile n landed; every warp is done with tile n-1
    if constexpr (kStages == 2) {
      if (n + 1 < n_hi) {
        const int j1 = j0 + kBN;
        T* kd = sK + (stage ^ 1) * kBN * kLd;
        T* vd = sV + (stage ^ 1) * kBN * kLd;
        load_tile<T, kBN, Cfg>(kd, kg + static_cast<int64_t>(j1) * p.k_ss, p.k_ss, s.kv_len - j1, d, tid);
        load_tile<T, kBN, Cfg>(vd, vg + static_cast<int64_t>(j1) * p.v_ss, p.v_ss, s.kv_len - j1, d, tid);
        cp_async_commit();
      }
    } else {
      load_tile<T, kBN, Cfg>(sV, vg + static_cast<int64_t>(j0) * p.v_ss, p.v_ss, s.kv_len - j0, d, tid);
      cp_async_commit();
    }

    // ---- S = Q K^T -------------------------------------------------------------
    float sc[kMT][kNT][4];
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) sc[mt][nt][0] = sc[mt][nt][1] = sc[mt][nt][2] = sc[mt][nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      uint32_t qa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) ldmatrix_x4(qa[mt], sQa + 2u * ldsm_a_off(lane, wr0 + mt * 16, kk * 16, kLd));
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        uint32_t kb[4];
        ldmatrix_x4(kb, kA + 2u * ldsm_b_nk_off(lane, np * 16, kk * 16, kLd));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_16816<T>(sc[mt][2 * np], qa[mt], kb[0], kb[1]);
          mma_16816<T>(sc[mt][2 * np + 1], qa[mt], kb[2], kb[3]);
        }
      }
    }

    if constexpr (kStages == 1) {
      cp_async_wait<0>();
      __syncthreads();  // V(n) landed; every warp is done with K(n)
      if (n + 1 < n_hi) {
        load_tile<T, kBN, Cfg>(sK, kg + static_cast<int64_t>(j0 + kBN) * p.k_ss, p.k_ss, s.kv_len - j0 - kBN, d, tid);
        cp_async_commit();
      }
    }

    // ---- scores, masking --------------------------------------------------------------
    const bool edge = n < f_lo || n >= f_hi;
    if constexpr (kFeat) {
      if (edge) {
        feature_scores<kMT, kNT, true>(sc, a, s, slope_log2, mask_bh, i0, j0, g, t4);
        edge_mask<kMT, kNT>(sc, p, s, i0, j0, g, t4);
      } else {
        feature_scores<kMT, kNT, false>(sc, a, s, slope_log2, mask_bh, i0, j0, g, t4);
      }
    } else {
      if (edge) edge_mask<kMT, kNT>(sc, p, s, i0, j0, g, t4);
    }

    // ---- online softmax (log2 units: score * mult) --------------------------------------
#pragma unroll
    for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
      for (int hf = 0; hf < 2; ++hf) {
        const int r = mt * 2 + hf;
        float mx = -INFINITY;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) mx = fmaxf(mx, fmaxf(sc[mt][nt][hf * 2], sc[mt][nt][hf * 2 + 1]));
        mx = fmaxf(m_run[r], quad_max(mx) * mult);
        // A row with no finite score yet keeps m = -inf; subtracting 0 then
        // gives exp2(-inf) = 0 instead of NaN.
        const float mu = mx == -INFINITY ? 0.f : mx;
        const float alpha = fast_exp2(m_run[r] - mu);
        m_run[r] = mx;
        float sum = 0.f;
#pragma unroll
        for (int nt = 0; nt < kNT; ++nt) {
          const float p0 = fast_exp2(fmaf(sc[mt][nt][hf * 2], mult, -mu));
          const float p1 = fast_exp2(fmaf(sc[mt][nt][hf * 2 + 1], mult, -mu));
          sc[mt][nt][hf * 2] = p0;
          sc[mt][nt][hf * 2 + 1] = p1;
          sum += p0 + p1;
        }
        l_run[r] = l_run[r] * alpha + sum;
#pragma unroll
        for (int dt = 0; dt < kDT; ++dt) {
          o[mt][dt][hf * 2] *= alpha;
          o[mt][dt][hf * 2 + 1] *= alpha;
        }
      }
    }

    // ---- O += P V ----------------------------------------------------------------------
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t pa[kMT][4];
#pragma unroll
      for (int mt = 0; mt < kMT; ++mt) acc_to_a_frag<T>(pa[mt], sc[mt][2 * kk], sc[mt][2 * kk + 1]);
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, vA + 2u * ldsm_b_kn_off(lane, kk * 16, dp * 16, kLd));
#pragma unroll
        for (int mt = 0; mt < kMT; ++mt) {
          mma_16816<T>(o[mt][2 * dp], pa[mt], vb[0], vb[1]);
          mma_16816<T>(o[mt][2 * dp + 1], pa[mt], vb[2], vb[3]);
        }
      }
    }
  }

  // ---- epilogue: normalise, stage this warp's rows in its own Q rows, store ----------
  cp_async_wait<0>();
  __syncwarp();
  float* lse_g = p.lse + b * p.lse_sb + h * p.lse_sh + s.q_start * p.lse_ss;
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const int r = mt * 2 + hf;
      const float l = quad_sum(l_run[r]);
      const float inv = l > 0.f ? 1.f / l : 0.f;
      const int row = wr0 + mt * 16 + hf * 8 + g;  // within the CTA tile
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const uint32_t v = pack2<T>(o[mt][dt][hf * 2] * inv, o[mt][dt][hf * 2 + 1] * inv);
        *reinterpret_cast<uint32_t*>(sQ + row * kLd + dt * 8 + 2 * t4) = v;
      }
      if (t4 == 0 && row < rows) {
        const float mu = m_run[r] == -INFINITY ? 0.f : m_run[r];
        lse_g[static_cast<int64_t>(m0 + row) * p.lse_ss] =
            l > 0.f ? mu * 0.6931471805599453f + logf(l) : -INFINITY;
      }
    }
  }
  __syncwarp();
  T* yg = static_cast<T*>(p.y) + b * p.y_sb + h * p.y_sh + (s.q_start + m0) * p.y_ss;
  constexpr int kWarpChunks = kMT * 16 * Cfg::kChunks;
#pragma unroll
  for (int it = 0; it < (kWarpChunks + 31) / 32; ++it) {
    const int c = it * 32 + lane;
    const int row = wr0 + c / Cfg::kChunks, ch = c % Cfg::kChunks;
    if (c < kWarpChunks && row < rows && ch * 8 < d) {
      *reinterpret_cast<uint4*>(yg + row * p.y_ss + ch * 8) = *reinterpret_cast<const uint4*>(sQ + row * kLd + ch * 8);
    }
  }
}

// Launches the forward for padded head dimension kD (p.head_dim <= kD) with
// kBM query rows x kBN keys per tile and kWarps warps per CTA.
template <class T, int kD, int kBM, int kBN, int kWarps, int kStages>
Status launch_fwd(const FlashFwdParams& p, int arch, int sm_count, void* stream) {
  (void)arch;
  (void)sm_count;
  using Cfg = FwdCfg<kD, kBM, kBN, kWarps>;
  if (p.q_len <= 0 || p.batch <= 0 || p.heads <= 0) return Status::ok();
  FwdArgs a;
  a.p = p;
  a.scale = static_cast<float>(p.scale);
  a.scale_log2 = static_cast<float>(p.scale * 1.4426950408889634);
  a.softcap = static_cast<float>(p.softcap);
  a.softcap_in = p.softcap > 0.0 ? static_cast<float>(p.scale / p.softcap) : 0.f;
  a.group = p.heads / p.kv_heads;
  // The feature-free kernel folds a positive (normal f32) scale * log2(e) into
  // the exponent; any other scale takes the general path.
  const bool feat = p.mask != nullptr || p.alibi != nullptr || p.softcap > 0.0 || !(a.scale_log2 >= 1.17549435e-38f);
  const size_t smem = static_cast<size_t>(kBM + 2 * kStages * kBN) * Cfg::kLd * sizeof(T);
  auto kern = feat ? flash_fwd_mma_kernel<T, kD, kBM, kBN, kWarps, kStages, true>
                   : flash_fwd_mma_kernel<T, kD, kBM, kBN, kWarps, kStages, false>;
  // The smem opt-in is per kernel and device; doing it on every launch costs
  // host time, so remember it per device (a race only repeats the same call).
  static std::atomic<uint64_t> attr_done[2];
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = 0;
  const uint64_t bit = uint64_t{1} << (dev & 63);
  if ((attr_done[feat].load(std::memory_order_relaxed) & bit) == 0) {
    cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(smem));
    if (e == cudaSuccess)
      e = cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
    if (e != cudaSuccess) {
      (void)cudaGetLastError();
      return detail::cuda_status(static_cast<int>(e), "FlashSdpaPlan: flash_fwd_mma smem attribute");
    }
    attr_done[feat].fetch_or(bit, std::memory_order_relaxed);
  }
  constexpr int kMaxZ = 65535;
  for (int b0 = 0; b0 < p.batch; b0 += kMaxZ) {
    a.b_base = b0;
    const int nb = p.batch - b0 < kMaxZ ? p.batch - b0 : kMaxZ;
    const dim3 grid((p.q_len + kBM - 1) / kBM, p.heads, nb);
    kern<<<grid, Cfg::kThreads, smem, static_cast<cudaStream_t>(stream)>>>(a);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return detail::cuda_status(static_cast<int>(e), "FlashSdpaPlan: flash_fwd_mma launch");
  }
  return Status::ok();
}

}  // namespace baracuda::cuda_flash::mma_fwd

// Explicit instantiations live in flash_mma_fwd_<dtype>_d<D>.cu, one file per
// (dtype, padded head dim), each holding the tile configurations the
// dispatcher (flash_mma_fwd.cu) may pick for it.
#define BARACUDA_FLASH_MMA_FWD_INSTANTIATE(T, D, BM, BN, W, S)                                           \
  template baracuda::Status baracuda::cuda_flash::mma_fwd::launch_fwd<T, D, BM, BN, W, S>(               \
      const baracuda::cuda_flash::FlashFwdParams&, int, int, void*);
