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
#include "cuda/smem_optin.cuh"
#include "ops/attention/cuda/flash_common.cuh"
#include "cuda/sm80/mma.cuh"

namespace baracuda::attention::cuda::mma_fwd {

using namespace baracuda::dev::sm80;

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

// Online-softmax update for one S tile (kMT 16-row tiles x kNT 8-key tiles in
// the mma C layout; the wgmma kernels use the same layout with kMT = 1):
// scores * mult are in log2 units; m_run / l_run are this thread's running row
// max and (quad-partial) row sum. sc receives the unnormalised probabilities
// and alpha = exp2(m_old - m_new), the factor the output accumulator of each
// row must be scaled by (online_softmax below does it at once; the pipelined
// wgmma kernel later, once the previous P V product has landed).
template <int kMT, int kNT>
__device__ __forceinline__ void softmax_update(float (&sc)[kMT][kNT][4], float (&m_run)[kMT * 2], float (&l_run)[kMT * 2],
                                               float mult, float (&alpha)[kMT * 2]) {
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
      alpha[r] = fast_exp2(m_run[r] - mu);
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
      l_run[r] = l_run[r] * alpha[r] + sum;
    }
  }
}

template <int kMT, int kDT>
__device__ __forceinline__ void rescale_rows(float (&o)[kMT][kDT][4], const float (&alpha)[kMT * 2]) {
#pragma unroll
  for (int mt = 0; mt < kMT; ++mt)
#pragma unroll
    for (int dt = 0; dt < kDT; ++dt) {
      o[mt][dt][0] *= alpha[mt * 2];
      o[mt][dt][1] *= alpha[mt * 2];
      o[mt][dt][2] *= alpha[mt * 2 + 1];
      o[mt][dt][3] *= alpha[mt * 2 + 1];
    }
}

template <int kMT, int kNT, int kDT>
__device__ __forceinline__ void online_softmax(float (&sc)[kMT][kNT][4], float (&o)[kMT][kDT][4], float (&m_run)[kMT * 2],
                                               float (&l_run)[kMT * 2], float mult) {
  float alpha[kMT * 2];
  softmax_update<kMT, kNT>(sc, m_run, l_run, mult, alpha);
  rescale_rows<kMT, kDT>(o, alpha);
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

    online_softmax<kMT, kNT, kDT>(sc, o, m_run, l_run, mult);

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
  // p.lse is null for an inference-only forward (save_lse false): no lse store.
  float* lse_g = p.lse ? p.lse + b * p.lse_sb + h * p.lse_sh + s.q_start * p.lse_ss : nullptr;
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
      if (lse_g && t4 == 0 && row < rows) {
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
  const bool feat = uses_features(p);
  const size_t smem = static_cast<size_t>(kBM + 2 * kStages * kBN) * Cfg::kLd * sizeof(T);
  auto kern = feat ? flash_fwd_mma_kernel<T, kD, kBM, kBN, kWarps, kStages, true>
                   : flash_fwd_mma_kernel<T, kD, kBM, kBN, kWarps, kStages, false>;
  static dev::SmemOptIn optin[2];  // per kernel: feature-free / general
  BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(optin[feat], kern, smem, "FlashSdpaPlan: flash_fwd_mma smem attribute"));
  constexpr int kMaxZ = 65535;
  for (int b0 = 0; b0 < p.batch; b0 += kMaxZ) {
    a.b_base = b0;
    const int nb = p.batch - b0 < kMaxZ ? p.batch - b0 : kMaxZ;
    const dim3 grid((p.q_len + kBM - 1) / kBM, p.heads, nb);
    kern<<<grid, Cfg::kThreads, smem, static_cast<cudaStream_t>(stream)>>>(a);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaPlan: flash_fwd_mma launch");
  }
  return Status::ok();
}


// ---- split-KV forward for short query lengths (decode) ------------------------------
// One CTA of kBM = 64 rows (4 warps of 16) owns either the G = heads / kv_heads
// query heads of one kv head packed together (pack = G, q_len * G <= 64:
// row r <-> head hk * G + r / q_len, query r % q_len), so K / V are read once
// for the whole group, or (pack = 1) up to 64 rows of one head. The key tiles
// its rows may see are divided into `splits` contiguous chunks, one CTA each;
// every CTA writes, for each of its valid rows, the unnormalised f32 output,
// the row max (log2 units) and the row sum to the workspace, and
// flash_fwd_combine_kernel merges the splits of a row in split order. Warps
// whose 16 rows are all past the end skip the math (they still load tiles).
// K / V use a kStages-deep cp.async ring (tile n + kStages - 1 requested while
// tile n is computed): the loop is bandwidth-bound, so the depth matters more
// than the tile width.
template <int kD>
struct SplitCfg {  // flash_mma_fwd.cu names it in the variant string: keep in sync
  static constexpr int kBM = 64, kWarps = 4;
  static constexpr int kBN = kD <= 64 ? 64 : 32;
  static constexpr int kStages = kD <= 64 ? 3 : (kD <= 128 ? 4 : 2);
};

struct SplitArgs {
  FwdArgs f;
  float* ws_o;    // [splits][batch][heads][q_len][head_dim]: unnormalised output
  float2* ws_ml;  // [splits][batch][heads][q_len]: (row max in log2 units, row sum)
  int splits;
  int pack;  // query heads per CTA: group (packed) or 1
};

// Per-row score transform for the split kernel (one 16-row tile per warp; each
// thread's two rows hf = 0, 1 carry their own query index, ALiBi slope and
// mask row).
template <int kNT, bool kEdge>
__device__ __forceinline__ void split_feature_scores(float (&sc)[kNT][4], const FwdArgs& a, const SeqInfo& s,
                                                     const float (&slope_log2)[2], const float* const (&mrow)[2],
                                                     const int (&ri)[2], int j0, int t4) {
  const FlashFwdParams& p = a.p;
  if (a.softcap > 0.f) {
    const float in = a.softcap_in, out = a.softcap * 1.4426950408889634f;
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) sc[nt][e] = tanh_acc(sc[nt][e] * in) * out;
  } else {
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) sc[nt][e] *= a.scale_log2;
  }
  if (p.alibi != nullptr) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      const float base = static_cast<float>(ri[hf] + s.off - j0 - 2 * t4);
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) sc[nt][hf * 2 + c] -= slope_log2[hf] * fabsf(base - static_cast<float>(nt * 8 + c));
    }
  }
  if (p.mask != nullptr) {
#pragma unroll
    for (int hf = 0; hf < 2; ++hf)
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
        for (int c = 0; c < 2; ++c) {
          const int j = j0 + nt * 8 + 2 * t4 + c;
          if (!kEdge || j < s.kv_len)
            sc[nt][hf * 2 + c] = fmaf(__ldg(mrow[hf] + static_cast<int64_t>(j) * p.m_sk), 1.4426950408889634f, sc[nt][hf * 2 + c]);
        }
  }
}

template <int kNT>
__device__ __forceinline__ void split_edge_mask(float (&sc)[kNT][4], const FlashFwdParams& p, const SeqInfo& s,
                                                const int (&ri)[2], const bool (&rv)[2], int j0, int t4) {
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    int lo = 0, hi = 0;
    if (rv[hf]) {
      const KeyRange k = key_range(p, s, ri[hf]);
      lo = k.lo - j0 - 2 * t4;
      hi = k.hi - j0 - 2 * t4;
    }
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int c = 0; c < 2; ++c) {
        const int jj = nt * 8 + c;
        if (jj < lo || jj >= hi) sc[nt][hf * 2 + c] = -INFINITY;
      }
  }
}

template <class T, int kD, bool kFeat>
__global__ void __launch_bounds__(SplitCfg<kD>::kWarps * 32, 2) flash_fwd_split_kernel(const __grid_constant__ SplitArgs sa) {
  using SC = SplitCfg<kD>;
  constexpr int kBM = SC::kBM, kBN = SC::kBN, kStages = SC::kStages;
  using Cfg = FwdCfg<kD, kBM, kBN, SC::kWarps>;
  constexpr int kNT = Cfg::kNT, kDT = Cfg::kDT, kLd = Cfg::kLd, kChunks = Cfg::kChunks, kThreads = Cfg::kThreads;
  static_assert(Cfg::kMT == 1, "the split kernel has one 16-row tile per warp");
  static_assert(kStages >= 2, "the split kernel needs at least two stages");
  static_assert((kBM * kChunks) % kThreads == 0, "Q loads must divide evenly");
  const FwdArgs& a = sa.f;
  const FlashFwdParams& p = a.p;

  extern __shared__ uint4 smem_raw[];
  T* sQ = reinterpret_cast<T*>(smem_raw);
  T* sK = sQ + kBM * kLd;            // kStages tiles
  T* sV = sK + kStages * kBN * kLd;  // kStages tiles
  constexpr uint32_t kTileBytes = kBN * kLd * sizeof(T);

  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;
  const int g = lane >> 2, t4 = lane & 3;
  const int sp = static_cast<int>(blockIdx.x) % sa.splits, mb = static_cast<int>(blockIdx.x) / sa.splits;
  const int b = blockIdx.z + a.b_base;
  const SeqInfo s = seq_info(p, b);
  const bool packed = sa.pack > 1;
  const int m0 = packed ? 0 : mb * kBM;
  if (m0 >= s.q_len) return;
  // Query indices m0 .. m0 + nq - 1; rows r < nrows; row r <-> head h_base + r / qn, query m0 + r % qn.
  const int nq = packed ? s.q_len : (s.q_len - m0 < kBM ? s.q_len - m0 : kBM);
  const int qn = packed ? s.q_len : kBM;
  const int nrows = packed ? s.q_len * sa.pack : nq;
  const int h_base = packed ? static_cast<int>(blockIdx.y) * sa.pack : static_cast<int>(blockIdx.y);
  const int hk = h_base / a.group;
  const int d = p.head_dim;

  // Key tiles of the union of the rows' ranges (ranges move monotonically with
  // the query index, so the first and last query suffice), then this split's chunk.
  const KeyRange kr = tile_key_range(p, s, m0, m0 + nq);
  const int n_lo = kr.lo / kBN;
  const int n_hi = kr.lo < kr.hi ? (kr.hi + kBN - 1) / kBN : n_lo;
  const KeyRange first = key_range(p, s, m0), last = key_range(p, s, m0 + nq - 1);
  const int f_lo = (last.lo + kBN - 1) / kBN;
  const int f_hi = first.hi / kBN;
  const int per = (n_hi - n_lo + sa.splits - 1) / sa.splits;
  int t_lo = n_lo + sp * per;
  const int t_hi = t_lo + per < n_hi ? t_lo + per : n_hi;
  if (t_lo > t_hi) t_lo = t_hi;

  // This thread's two rows.
  int ri[2], rh[2];
  bool rv[2];
  float slope_log2[2] = {0.f, 0.f};
  const float* mrow[2] = {nullptr, nullptr};
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int r = warp * 16 + hf * 8 + g;
    rv[hf] = r < nrows;
    const int rr = rv[hf] ? r : 0;  // rows past the end borrow row 0's head and query
    rh[hf] = h_base + rr / qn;
    ri[hf] = m0 + rr % qn;
    if constexpr (kFeat) {
      slope_log2[hf] = alibi_slope(p, b, rh[hf]) * 1.4426950408889634f;
      mrow[hf] = mask_row(p, b, rh[hf], ri[hf]);
    }
  }
  const float mult = kFeat ? 1.f : a.scale_log2;
  const bool active = warp * 16 < nrows;

  const T* kg = static_cast<const T*>(p.k) + b * p.k_sb + hk * p.k_sh + s.kv_start * p.k_ss;
  const T* vg = static_cast<const T*>(p.v) + b * p.v_sb + hk * p.v_sh + s.kv_start * p.v_ss;
  const uint32_t sQa = smem_u32(sQ), sKa = smem_u32(sK), sVa = smem_u32(sV);

  if (t_lo < t_hi) {
    // Q rows (gathered over the packed heads), part of the first group.
    const T* q0 = static_cast<const T*>(p.q);
    const T* qb = q0 + b * p.q_sb + (s.q_start + m0) * p.q_ss;
#pragma unroll
    for (int it = 0; it < kBM * kChunks / kThreads; ++it) {
      const int c = it * kThreads + tid;
      const int row = c / kChunks, ch = c % kChunks;
      const bool ok = row < nrows && ch * 8 < d;
      const T* src = ok ? qb + static_cast<int64_t>(h_base + row / qn) * p.q_sh + static_cast<int64_t>(row % qn) * p.q_ss + ch * 8 : q0;
      cp_async_16(smem_u32(sQ + row * kLd + ch * 8), src, ok);
    }
#pragma unroll
    for (int st = 0; st < kStages - 1; ++st) {
      const int n = t_lo + st;
      if (n < t_hi) {
        const int j = n * kBN;
        load_tile<T, kBN, Cfg>(sK + st * kBN * kLd, kg + static_cast<int64_t>(j) * p.k_ss, p.k_ss, s.kv_len - j, d, tid);
        load_tile<T, kBN, Cfg>(sV + st * kBN * kLd, vg + static_cast<int64_t>(j) * p.v_ss, p.v_ss, s.kv_len - j, d, tid);
      }
      cp_async_commit();  // possibly empty: keeps one group per tile
    }
  }

  float o[kDT][4];
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
#pragma unroll
  for (int dt = 0; dt < kDT; ++dt) o[dt][0] = o[dt][1] = o[dt][2] = o[dt][3] = 0.f;

  for (int n = t_lo; n < t_hi; ++n) {
    const int idx = n - t_lo;
    const int stage = idx % kStages;
    cp_async_wait<kStages - 2>();
    __syncthreads();  // tile n landed; every warp is done with tile n - 1 (whose buffer is refilled next)
    {
      const int nn = n + kStages - 1;
      if (nn < t_hi) {
        const int st = (idx + kStages - 1) % kStages;
        const int j = nn * kBN;
        load_tile<T, kBN, Cfg>(sK + st * kBN * kLd, kg + static_cast<int64_t>(j) * p.k_ss, p.k_ss, s.kv_len - j, d, tid);
        load_tile<T, kBN, Cfg>(sV + st * kBN * kLd, vg + static_cast<int64_t>(j) * p.v_ss, p.v_ss, s.kv_len - j, d, tid);
      }
      cp_async_commit();
    }
    if (!active) continue;  // warp-uniform; the barrier above is reached by every warp
    const int j0 = n * kBN;
    const uint32_t kA = sKa + stage * kTileBytes, vA = sVa + stage * kTileBytes;

    float sc[kNT][4];
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt) sc[nt][0] = sc[nt][1] = sc[nt][2] = sc[nt][3] = 0.f;
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      uint32_t qa[4];
      ldmatrix_x4(qa, sQa + 2u * ldsm_a_off(lane, warp * 16, kk * 16, kLd));
#pragma unroll
      for (int np = 0; np < kNT / 2; ++np) {
        uint32_t kb[4];
        ldmatrix_x4(kb, kA + 2u * ldsm_b_nk_off(lane, np * 16, kk * 16, kLd));
        mma_16816<T>(sc[2 * np], qa, kb[0], kb[1]);
        mma_16816<T>(sc[2 * np + 1], qa, kb[2], kb[3]);
      }
    }

    const bool edge = n < f_lo || n >= f_hi;
    if constexpr (kFeat) {
      if (edge) {
        split_feature_scores<kNT, true>(sc, a, s, slope_log2, mrow, ri, j0, t4);
        split_edge_mask<kNT>(sc, p, s, ri, rv, j0, t4);
      } else {
        split_feature_scores<kNT, false>(sc, a, s, slope_log2, mrow, ri, j0, t4);
      }
    } else {
      if (edge) split_edge_mask<kNT>(sc, p, s, ri, rv, j0, t4);
    }

#pragma unroll
    for (int hf = 0; hf < 2; ++hf) {
      float mx = -INFINITY;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) mx = fmaxf(mx, fmaxf(sc[nt][hf * 2], sc[nt][hf * 2 + 1]));
      mx = fmaxf(m_run[hf], quad_max(mx) * mult);
      const float mu = mx == -INFINITY ? 0.f : mx;
      const float alpha = fast_exp2(m_run[hf] - mu);
      m_run[hf] = mx;
      float sum = 0.f;
#pragma unroll
      for (int nt = 0; nt < kNT; ++nt) {
        const float p0 = fast_exp2(fmaf(sc[nt][hf * 2], mult, -mu));
        const float p1 = fast_exp2(fmaf(sc[nt][hf * 2 + 1], mult, -mu));
        sc[nt][hf * 2] = p0;
        sc[nt][hf * 2 + 1] = p1;
        sum += p0 + p1;
      }
      l_run[hf] = l_run[hf] * alpha + sum;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        o[dt][hf * 2] *= alpha;
        o[dt][hf * 2 + 1] *= alpha;
      }
    }

#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      uint32_t pa[4];
      acc_to_a_frag<T>(pa, sc[2 * kk], sc[2 * kk + 1]);
#pragma unroll
      for (int dp = 0; dp < kD / 16; ++dp) {
        uint32_t vb[4];
        ldmatrix_x4_trans(vb, vA + 2u * ldsm_b_kn_off(lane, kk * 16, dp * 16, kLd));
        mma_16816<T>(o[2 * dp], pa, vb[0], vb[1]);
        mma_16816<T>(o[2 * dp + 1], pa, vb[2], vb[3]);
      }
    }
  }
  cp_async_wait<0>();

  // ---- partials: every valid row, also of empty splits (m = -inf, l = 0, o = 0) ----
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float l = quad_sum(l_run[hf]);  // all lanes: shuffles
    if (rv[hf]) {
      const int64_t slot =
          ((static_cast<int64_t>(sp) * p.batch + b) * p.heads + rh[hf]) * p.q_len + ri[hf];
      float* wo = sa.ws_o + slot * d;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const int col = dt * 8 + 2 * t4;
        if (col < d) *reinterpret_cast<float2*>(wo + col) = make_float2(o[dt][hf * 2], o[dt][hf * 2 + 1]);
      }
      if (t4 == 0) sa.ws_ml[slot] = make_float2(m_run[hf], l);
    }
  }
}

// One warp per output row (b, h, i): merges the splits in order 0, 1, ... and
// writes y (normalised, dtype) and lse. A row no split saw (max -inf) gets
// y = 0 and lse = -inf, like the single-pass kernel.
template <class T>
__global__ void __launch_bounds__(128) flash_fwd_combine_kernel(const __grid_constant__ SplitArgs sa) {
  const FlashFwdParams& p = sa.f.p;
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int64_t total = static_cast<int64_t>(p.batch) * p.heads * p.q_len;  // slots per split
  const int64_t row = static_cast<int64_t>(blockIdx.x) * 4 + warp;
  if (row >= total) return;
  const int i = static_cast<int>(row % p.q_len);
  const int64_t bh = row / p.q_len;
  const int h = static_cast<int>(bh % p.heads), b = static_cast<int>(bh / p.heads);
  const SeqInfo s = seq_info(p, b);
  if (i >= s.q_len) return;
  const int d = p.head_dim;

  float M = -INFINITY;
  for (int k = 0; k < sa.splits; ++k) M = fmaxf(M, sa.ws_ml[k * total + row].x);
  float L = 0.f;
  if (M != -INFINITY)
    for (int k = 0; k < sa.splits; ++k) {
      const float2 ml = sa.ws_ml[k * total + row];
      if (ml.x != -INFINITY) L += exp2f(ml.x - M) * ml.y;
    }
  const float inv = L > 0.f ? 1.f / L : 0.f;

  T* yr = static_cast<T*>(p.y) + b * p.y_sb + h * p.y_sh + (s.q_start + i) * p.y_ss;
  for (int c = lane * 4; c < d; c += 128) {
    float4 acc = make_float4(0.f, 0.f, 0.f, 0.f);
    if (L > 0.f)
      for (int k = 0; k < sa.splits; ++k) {
        const float2 ml = sa.ws_ml[k * total + row];
        if (ml.x == -INFINITY) continue;
        const float w = exp2f(ml.x - M);
        const float4 v = *reinterpret_cast<const float4*>(sa.ws_o + (k * total + row) * d + c);
        acc.x = fmaf(w, v.x, acc.x);
        acc.y = fmaf(w, v.y, acc.y);
        acc.z = fmaf(w, v.z, acc.z);
        acc.w = fmaf(w, v.w, acc.w);
      }
    uint2 out;
    out.x = pack2<T>(acc.x * inv, acc.y * inv);
    out.y = pack2<T>(acc.z * inv, acc.w * inv);
    *reinterpret_cast<uint2*>(yr + c) = out;
  }
  if (lane == 0 && p.lse) {  // null: inference-only forward, no lse
    float* lse = p.lse + b * p.lse_sb + h * p.lse_sh + (s.q_start + i) * p.lse_ss;
    *lse = L > 0.f ? M * 0.6931471805599453f + logf(L) : -INFINITY;
  }
}

// Launches the split-KV forward (padded head dim kD) and the combine kernel.
// The caller (forward_mma) has checked p.q_len <= 64 (and q_len * group <= 64
// when pack > 1) and that p.fwd_workspace holds splits * batch * heads * q_len *
// (head_dim + 2) floats, 16-byte aligned (flash_mma_fwd.cu's split_bytes).
template <class T, int kD>
Status launch_fwd_split(const FlashFwdParams& p, int splits, int pack, void* stream) {
  using SC = SplitCfg<kD>;
  using Cfg = FwdCfg<kD, SC::kBM, SC::kBN, SC::kWarps>;
  if (p.q_len <= 0 || p.batch <= 0 || p.heads <= 0) return Status::ok();
  SplitArgs sa;
  FwdArgs& a = sa.f;
  a.p = p;
  a.scale = static_cast<float>(p.scale);
  a.scale_log2 = static_cast<float>(p.scale * 1.4426950408889634);
  a.softcap = static_cast<float>(p.softcap);
  a.softcap_in = p.softcap > 0.0 ? static_cast<float>(p.scale / p.softcap) : 0.f;
  a.group = p.heads / p.kv_heads;
  a.b_base = 0;
  sa.splits = splits;
  sa.pack = pack;
  sa.ws_o = static_cast<float*>(p.fwd_workspace);
  sa.ws_ml = reinterpret_cast<float2*>(sa.ws_o + static_cast<size_t>(splits) * p.batch * p.heads * p.q_len * p.head_dim);
  const bool feat = uses_features(p);
  const size_t smem = static_cast<size_t>(SC::kBM + 2 * SC::kStages * SC::kBN) * Cfg::kLd * sizeof(T);
  auto kern = feat ? flash_fwd_split_kernel<T, kD, true> : flash_fwd_split_kernel<T, kD, false>;
  static dev::SmemOptIn optin[2];  // per kernel: feature-free / general
  BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(optin[feat], kern, smem, "FlashSdpaPlan: flash_fwd_split smem attribute"));
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  const int mblocks = pack > 1 ? 1 : (p.q_len + SC::kBM - 1) / SC::kBM;
  const int ny = pack > 1 ? p.kv_heads : p.heads;
  constexpr int kMaxZ = 65535;
  for (int b0 = 0; b0 < p.batch; b0 += kMaxZ) {
    sa.f.b_base = b0;
    const int nb = p.batch - b0 < kMaxZ ? p.batch - b0 : kMaxZ;
    const dim3 grid(mblocks * splits, ny, nb);
    kern<<<grid, Cfg::kThreads, smem, st>>>(sa);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaPlan: flash_fwd_split launch");
  }
  sa.f.b_base = 0;
  const int64_t rows = static_cast<int64_t>(p.batch) * p.heads * p.q_len;
  flash_fwd_combine_kernel<T><<<static_cast<unsigned>((rows + 3) / 4), 128, 0, st>>>(sa);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaPlan: flash_fwd_combine launch");
  return Status::ok();
}

}  // namespace baracuda::attention::cuda::mma_fwd

// Explicit instantiations: the rows of ../manifest.cmake, generated into one TU
// per (dtype, padded head dim) holding the tile configurations the dispatcher
// (flash_mma_fwd.cu) may pick for it.
#define BARACUDA_FLASH_MMA_FWD_INSTANTIATE(T, D, BM, BN, W, S)                                           \
  template baracuda::Status baracuda::attention::cuda::mma_fwd::launch_fwd<T, D, BM, BN, W, S>(               \
      const baracuda::attention::cuda::FlashFwdParams&, int, int, void*);
// The split-KV path, one per (dtype, padded head dim).
#define BARACUDA_FLASH_MMA_SPLIT_INSTANTIATE(T, D)                                              \
  template baracuda::Status baracuda::attention::cuda::mma_fwd::launch_fwd_split<T, D>(              \
      const baracuda::attention::cuda::FlashFwdParams&, int, int, void*);
