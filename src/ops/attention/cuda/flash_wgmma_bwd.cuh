// Hopper flash-attention backward (f16 / bf16, sm_90a): wgmma + TMA versions
// of the two deterministic kernels of flash_mma_bwd.cuh (same algorithm, same
// preprocess: lse2 = lse * log2(e), dsum = rowsum(dy * y) in the workspace).
// Every output element is written by one CTA and every sum is taken in a fixed
// order: no floating-point atomics, bit-identical reruns.
//
// Both kernels: warpgroups 0 and 1 compute (64 rows each), warpgroup 2 is the
// producer (one thread issues TMA; registers move to the consumers through
// setmaxnreg: 40 for the producer, 232 for the consumers), stages handed over with full / empty mbarriers as in
// flash_wgmma_fwd.cuh, tiles in the 128-byte swizzled layout.
//
//  * dK/dV kernel: a CTA owns kBN = 128 keys of one (batch, kv head), K and V
//    loaded once. It walks the group's query heads in order and, for each,
//    the 64-row query tiles that can see its keys. Per tile (rows = keys):
//      S^T  = K Q^T, dP^T = V dY^T          (wgmma, A and B from shared memory)
//      P^T  = exp2(S^T scale log2e - lse2),  dS^T = P^T (dP^T - dsum)
//      dV  += P^T dY,  dK += dS^T Q          (wgmma, A from registers)
//    The producer warpgroup also stages the tile's lse2 / dsum (zero past
//    q_len: such rows have Q = dY = 0 and contribute exactly 0).
//  * dQ kernel: a CTA owns 128 query rows of one (batch, head), Q and dY loaded
//    once, and walks the key tiles (64 keys) its rows can see:
//      S = Q K^T, dP = dY V^T, P, dS,  dQ += dS K
// Interior tiles skip the causal / window / length rules; edge tiles apply
// them per element. Feature-free problems only (no mask, ALiBi, softcap),
// dense layout, head dims 64 and 128.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/sm90/hopper.cuh"
#include "cuda/smem_optin.cuh"
#include "cuda/sm90/wgmma_ops.cuh"
#include "ops/attention/cuda/flash_mma_bwd.cuh"
#include "ops/attention/cuda/flash_mma_fwd.cuh"

namespace baracuda::attention::cuda::wgmma_bwd {

using namespace baracuda::dev::sm80;
using namespace baracuda::dev::sm90;
using mma_bwd::BwdArgs;

struct WgBwdArgs {
  BwdArgs a;
  CUtensorMap tm_q, tm_k, tm_v, tm_dy;  // 4-D maps (d, row, head, batch), 128B swizzle
};

__device__ __forceinline__ float bwd_exp2_fma(float s, float mult, float lse2) {
  return mma_bwd::bwd_exp2(fmaf(s, mult, -lse2));
}

// K-major operand descriptor offset of k-step kk for a tile of `rows` rows per
// 64-column block: column block kk / 4, 32 bytes per 16 elements in the row.
__device__ __forceinline__ uint64_t kstep(int kk, int rows) {
  return static_cast<uint64_t>(((kk >> 2) * (rows * 128) + (kk & 3) * 32) >> 4);
}

// Tried and measured slower on an H200 at D = 64: 128-row query tiles here and
// 128-key tiles in the dQ kernel (212 vs 227 TFLOP/s at (8,16,2048,64), 165 vs
// 185 causal).
template <int kD>
struct DkdvCfg {
  static constexpr int kBN = 128, kBM = 64, kStages = 2, kThreads = 384, kCB = kD / 64;
  static constexpr uint32_t kKVTile = kBN * kD * 2;  // K or V
  static constexpr uint32_t kQTile = kBM * kD * 2;   // Q or dY
  static constexpr uint32_t kKOff = 0, kVOff = kKVTile;
  static constexpr uint32_t kQOff = 2 * kKVTile;
  static constexpr uint32_t kDyOff = kQOff + kStages * kQTile;
  static constexpr uint32_t kRowOff = kDyOff + kStages * kQTile;        // lse2 / dsum: [kStages][2][kBM] floats
  static constexpr uint32_t kBarOff = kRowOff + kStages * 2 * kBM * 4;  // kv_full, full[kStages], empty[kStages]
  static constexpr size_t kSmem = kBarOff + 8 * (1 + 2 * kStages) + 1024;
};

template <class T, int kD>
__global__ void __launch_bounds__(384, 1) flash_bwd_dkdv_wgmma_kernel(const __grid_constant__ WgBwdArgs wa) {
#ifdef BARACUDA_SM90A_DEVICE
  using Cfg = DkdvCfg<kD>;
  constexpr int kBN = Cfg::kBN, kBM = Cfg::kBM, kStages = Cfg::kStages, kCB = Cfg::kCB;
  constexpr int kDT = kD / 8, kMT = kBM / 8;  // 8-wide column tiles of dK/dV and of S^T
  const BwdArgs& a = wa.a;
  const FlashBwdParams& p = a.p;

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  uint8_t* const gbase = smem_raw + (base - smem_u32(smem_raw));
  const uint32_t sK = base + Cfg::kKOff, sV = base + Cfg::kVOff, sQ = base + Cfg::kQOff, sDy = base + Cfg::kDyOff;
  float* const srow = reinterpret_cast<float*>(gbase + Cfg::kRowOff);
  const uint32_t bar_kv = base + Cfg::kBarOff;
  auto bar_f = [&](int s) { return bar_kv + 8u * (1 + s); };
  auto bar_e = [&](int s) { return bar_kv + 8u * (1 + kStages + s); };

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int hk = blockIdx.y, b = blockIdx.z + a.b_off;
  const SeqInfo s = seq_info(p, b);
  const int j0 = blockIdx.x * kBN;
  if (j0 >= s.kv_len) return;
  const int j1 = s.kv_len - j0 < kBN ? s.kv_len : j0 + kBN;
  const KeyRange qr = tile_query_range(p, s, j0, j1);
  const int m_lo = qr.lo / kBM;
  const int m_cnt = qr.lo < qr.hi ? (qr.hi + kBM - 1) / kBM - m_lo : 0;
  const int iters = a.group * m_cnt;

  if (tid == 0) {
    mbar_init(bar_kv, 1);
    for (int st = 0; st < kStages; ++st) {
      mbar_init(bar_f(st), 1 + 128);  // the TMA thread's expect_tx + the 128 producer threads' row values
      mbar_init(bar_e(st), 256);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warp >= 8) {
    // ---- producer ---------------------------------------------------------------------
    setmaxnreg_dec<40>();
    const int pt = tid - 256;
    if (pt == 0 && iters > 0) {
      mbar_arrive_expect_tx(bar_kv, 2 * Cfg::kKVTile);
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) {
        tma_load_4d(sK + cb * (kBN * 128), &wa.tm_k, bar_kv, cb * 64, j0, hk, b);
        tma_load_4d(sV + cb * (kBN * 128), &wa.tm_v, bar_kv, cb * 64, j0, hk, b);
      }
    }
    for (int it = 0; it < iters; ++it) {
      const int st = it % kStages;
      const int h = hk * a.group + it / m_cnt, m0 = (m_lo + it % m_cnt) * kBM;
      if (it >= kStages) mbar_wait(bar_e(st), static_cast<uint32_t>((it / kStages - 1) & 1));
      if (pt == 0) {
        mbar_arrive_expect_tx(bar_f(st), 2 * Cfg::kQTile);
#pragma unroll
        for (int cb = 0; cb < kCB; ++cb) {
          tma_load_4d(sQ + st * Cfg::kQTile + cb * (kBM * 128), &wa.tm_q, bar_f(st), cb * 64, m0, h, b);
          tma_load_4d(sDy + st * Cfg::kQTile + cb * (kBM * 128), &wa.tm_dy, bar_f(st), cb * 64, m0, h, b);
        }
      }
      const int r = pt & (kBM - 1), i = m0 + r;
      const float* src = pt < kBM ? a.lse2 : a.dsum;
      srow[(st * 2 + (pt < kBM ? 0 : 1)) * kBM + r] = i < s.q_len ? src[mma_bwd::ws_row(p, s, b, h, i)] : 0.f;
      mbar_arrive(bar_f(st));
    }
    return;
  }
  setmaxnreg_inc<232>();

  // ---- consumers: warpgroup wg owns keys j0 + 64 wg .. +63 ------------------------------
  const int wg = warp >> 2, wq = warp & 3;
  const int g = lane >> 2, t4 = lane & 3;
  const int kj0 = j0 + wg * 64;                 // this warpgroup's first key
  const int kj_end = s.kv_len < kj0 + 64 ? s.kv_len : kj0 + 64;
  const int jr = kj0 + wq * 16 + g;             // this thread's key rows: jr, jr + 8

  float dk[kDT * 4], dv[kDT * 4];
#pragma unroll
  for (int i = 0; i < kDT * 4; ++i) dk[i] = dv[i] = 0.f;

  const uint64_t k_desc = desc_sw128(sK + wg * 64 * 128, 16, 1024);
  const uint64_t v_desc = desc_sw128(sV + wg * 64 * 128, 16, 1024);
  if (iters > 0) mbar_wait(bar_kv, 0);

  for (int it = 0; it < iters; ++it) {
    const int st = it % kStages;
    const uint32_t par = static_cast<uint32_t>((it / kStages) & 1);
    const int m0 = (m_lo + it % m_cnt) * kBM;
    const uint32_t qA = sQ + st * Cfg::kQTile, dyA = sDy + st * Cfg::kQTile;
    const uint64_t q_desc = desc_sw128(qA, 16, 1024), dy_desc = desc_sw128(dyA, 16, 1024);

    float sT[kMT * 4], dpT[kMT * 4];
    mbar_wait(bar_f(st), par);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) wgmma_ss<T, kBM>(sT, k_desc + kstep(kk, kBN), q_desc + kstep(kk, kBM), kk > 0 ? 1 : 0);
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) wgmma_ss<T, kBM>(dpT, v_desc + kstep(kk, kBN), dy_desc + kstep(kk, kBM), kk > 0 ? 1 : 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(sT);
    fence_regs(dpT);

    // Edge tile: some (query, key) pair of this warpgroup's block is outside
    // the causal / window rules (ranges move monotonically with the row).
    const int i_last = (m0 + kBM < s.q_len ? m0 + kBM : s.q_len) - 1;
    const KeyRange rf = key_range(p, s, m0), rl = key_range(p, s, i_last < m0 ? m0 : i_last);
    const bool edge = !(rf.hi >= kj_end && rl.lo <= kj0);
    const float* l2 = srow + (st * 2) * kBM;
    const float* ds = srow + (st * 2 + 1) * kBM;
#pragma unroll
    for (int nt = 0; nt < kMT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int ci = nt * 8 + 2 * t4 + (e & 1);  // query column within the tile
        const int j = jr + (e >> 1) * 8;
        float pv = bwd_exp2_fma(sT[nt * 4 + e], a.scale_log2, l2[ci]);
        if (edge && !key_allowed(p, s, m0 + ci, j)) pv = 0.f;
        dpT[nt * 4 + e] = pv * (dpT[nt * 4 + e] - ds[ci]);
        sT[nt * 4 + e] = pv;
      }
    uint32_t pa[kBM / 16][4], dsa[kBM / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBM / 16; ++kk) {
      const float(&s0)[4] = *reinterpret_cast<const float(*)[4]>(&sT[(2 * kk) * 4]);
      const float(&s1)[4] = *reinterpret_cast<const float(*)[4]>(&sT[(2 * kk + 1) * 4]);
      const float(&d0)[4] = *reinterpret_cast<const float(*)[4]>(&dpT[(2 * kk) * 4]);
      const float(&d1)[4] = *reinterpret_cast<const float(*)[4]>(&dpT[(2 * kk + 1) * 4]);
      acc_to_a_frag<T>(pa[kk], s0, s1);
      acc_to_a_frag<T>(dsa[kk], d0, d1);
    }
    // dY and Q as N-major B (rows = queries = k, d contiguous): 16 rows = 2048
    // bytes per k-step, column blocks kBM * 128 bytes apart.
    const uint64_t dyn_desc = desc_sw128(dyA, kBM * 128, 1024), qn_desc = desc_sw128(qA, kBM * 128, 1024);
    fence_regs(dv);
    fence_regs(dk);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBM / 16; ++kk) wgmma_rs<T, kD>(dv, pa[kk], dyn_desc + static_cast<uint64_t>((kk * 2048) >> 4), 1);
#pragma unroll
    for (int kk = 0; kk < kBM / 16; ++kk) wgmma_rs<T, kD>(dk, dsa[kk], qn_desc + static_cast<uint64_t>((kk * 2048) >> 4), 1);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dv);
    fence_regs(dk);
    mbar_arrive(bar_e(st));
  }

  // ---- epilogue: dK * scale, dV ---------------------------------------------------------------
  T* dkg = static_cast<T*>(p.dk) + b * p.dk_sb + hk * p.dk_sh + s.kv_start * p.dk_ss;
  T* dvg = static_cast<T*>(p.dv) + b * p.dv_sb + hk * p.dv_sh + s.kv_start * p.dv_ss;
  const int d = p.head_dim;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int j = jr + hf * 8;
    if (j < s.kv_len) {
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const int col = dt * 8 + 2 * t4;
        if (col < d) {
          *reinterpret_cast<uint32_t*>(dkg + static_cast<int64_t>(j) * p.dk_ss + col) =
              pack2<T>(dk[dt * 4 + hf * 2] * a.scale, dk[dt * 4 + hf * 2 + 1] * a.scale);
          *reinterpret_cast<uint32_t*>(dvg + static_cast<int64_t>(j) * p.dv_ss + col) =
              pack2<T>(dv[dt * 4 + hf * 2], dv[dt * 4 + hf * 2 + 1]);
        }
      }
    }
  }
#else
  (void)wa;
  __trap();
#endif
}

template <int kD>
struct DqCfg {
  static constexpr int kBM = 128, kBN = 64, kStages = 2, kThreads = 384, kCB = kD / 64;
  static constexpr uint32_t kQTile = kBM * kD * 2;   // Q or dY
  static constexpr uint32_t kKVTile = kBN * kD * 2;  // K or V
  static constexpr uint32_t kQOff = 0, kDyOff = kQTile;
  static constexpr uint32_t kKOff = 2 * kQTile;
  static constexpr uint32_t kVOff = kKOff + kStages * kKVTile;
  static constexpr uint32_t kBarOff = kVOff + kStages * kKVTile;  // q_full, full[kStages], empty[kStages]
  static constexpr size_t kSmem = kBarOff + 8 * (1 + 2 * kStages) + 1024;
};

template <class T, int kD>
__global__ void __launch_bounds__(384, 1) flash_bwd_dq_wgmma_kernel(const __grid_constant__ WgBwdArgs wa) {
#ifdef BARACUDA_SM90A_DEVICE
  using Cfg = DqCfg<kD>;
  constexpr int kBM = Cfg::kBM, kBN = Cfg::kBN, kStages = Cfg::kStages, kCB = Cfg::kCB;
  constexpr int kNT = kBN / 8, kDT = kD / 8;
  const BwdArgs& a = wa.a;
  const FlashBwdParams& p = a.p;

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = base + Cfg::kQOff, sDy = base + Cfg::kDyOff, sK = base + Cfg::kKOff, sV = base + Cfg::kVOff;
  const uint32_t bar_q = base + Cfg::kBarOff;
  auto bar_f = [&](int s) { return bar_q + 8u * (1 + s); };
  auto bar_e = [&](int s) { return bar_q + 8u * (1 + kStages + s); };

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int mb = static_cast<int>(gridDim.x) - 1 - static_cast<int>(blockIdx.x);  // heaviest (causal) first
  const int h = blockIdx.y, b = blockIdx.z + a.b_off;
  const SeqInfo s = seq_info(p, b);
  const int m0 = mb * kBM;
  if (m0 >= s.q_len) return;
  const int rows = s.q_len - m0 < kBM ? s.q_len - m0 : kBM;
  const int hk = h / a.group;
  const KeyRange kr = tile_key_range(p, s, m0, m0 + rows);
  const int n_lo = kr.lo / kBN;
  const int n_hi = kr.lo < kr.hi ? (kr.hi + kBN - 1) / kBN : n_lo;

  if (tid == 0) {
    mbar_init(bar_q, 1);
    for (int st = 0; st < kStages; ++st) {
      mbar_init(bar_f(st), 1);
      mbar_init(bar_e(st), 256);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warp >= 8) {
    setmaxnreg_dec<40>();
    if (tid == 256 && n_lo < n_hi) {
      mbar_arrive_expect_tx(bar_q, 2 * Cfg::kQTile);
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) {
        tma_load_4d(sQ + cb * (kBM * 128), &wa.tm_q, bar_q, cb * 64, m0, h, b);
        tma_load_4d(sDy + cb * (kBM * 128), &wa.tm_dy, bar_q, cb * 64, m0, h, b);
      }
      for (int n = n_lo; n < n_hi; ++n) {
        const int it = n - n_lo, st = it % kStages;
        if (it >= kStages) mbar_wait(bar_e(st), static_cast<uint32_t>((it / kStages - 1) & 1));
        mbar_arrive_expect_tx(bar_f(st), 2 * Cfg::kKVTile);
#pragma unroll
        for (int cb = 0; cb < kCB; ++cb) {
          tma_load_4d(sK + st * Cfg::kKVTile + cb * (kBN * 128), &wa.tm_k, bar_f(st), cb * 64, n * kBN, hk, b);
          tma_load_4d(sV + st * Cfg::kKVTile + cb * (kBN * 128), &wa.tm_v, bar_f(st), cb * 64, n * kBN, hk, b);
        }
      }
    }
    return;
  }
  setmaxnreg_inc<232>();

  const int wg = warp >> 2, wq = warp & 3;
  const int g = lane >> 2, t4 = lane & 3;
  const int i0 = m0 + wg * 64 + wq * 16;
  float lse2[2], dsum[2];
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int i = i0 + hf * 8 + g;
    lse2[hf] = i < s.q_len ? a.lse2[mma_bwd::ws_row(p, s, b, h, i)] : 0.f;
    dsum[hf] = i < s.q_len ? a.dsum[mma_bwd::ws_row(p, s, b, h, i)] : 0.f;
  }
  const KeyRange first = key_range(p, s, m0), last = key_range(p, s, m0 + rows - 1);
  const int f_lo = (last.lo + kBN - 1) / kBN;
  const int f_hi = first.hi / kBN;

  float dq[kDT * 4];
#pragma unroll
  for (int i = 0; i < kDT * 4; ++i) dq[i] = 0.f;
  const uint64_t q_desc = desc_sw128(sQ + wg * 64 * 128, 16, 1024);
  const uint64_t dy_desc = desc_sw128(sDy + wg * 64 * 128, 16, 1024);
  if (n_lo < n_hi) mbar_wait(bar_q, 0);

  for (int n = n_lo; n < n_hi; ++n) {
    const int it = n - n_lo, st = it % kStages;
    const uint32_t par = static_cast<uint32_t>((it / kStages) & 1);
    const uint32_t kA = sK + st * Cfg::kKVTile, vA = sV + st * Cfg::kKVTile;
    const uint64_t k_desc = desc_sw128(kA, 16, 1024), v_desc = desc_sw128(vA, 16, 1024);
    float sc[1][kNT][4], dp[kNT * 4];
    float(&sflat)[kNT * 4] = reinterpret_cast<float(&)[kNT * 4]>(sc);
    mbar_wait(bar_f(st), par);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) wgmma_ss<T, kBN>(sflat, q_desc + kstep(kk, kBM), k_desc + kstep(kk, kBN), kk > 0 ? 1 : 0);
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) wgmma_ss<T, kBN>(dp, dy_desc + kstep(kk, kBM), v_desc + kstep(kk, kBN), kk > 0 ? 1 : 0);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(sflat);
    fence_regs(dp);

    if (n < f_lo || n >= f_hi) mma_fwd::edge_mask<1, kNT>(sc, p, s, i0, n * kBN, g, t4);
#pragma unroll
    for (int nt = 0; nt < kNT; ++nt)
#pragma unroll
      for (int e = 0; e < 4; ++e) {
        const int hf = e >> 1;
        const float pv = bwd_exp2_fma(sc[0][nt][e], a.scale_log2, lse2[hf]);
        dp[nt * 4 + e] = pv * (dp[nt * 4 + e] - dsum[hf]);
      }
    uint32_t dsa[kBN / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) {
      const float(&d0)[4] = *reinterpret_cast<const float(*)[4]>(&dp[(2 * kk) * 4]);
      const float(&d1)[4] = *reinterpret_cast<const float(*)[4]>(&dp[(2 * kk + 1) * 4]);
      acc_to_a_frag<T>(dsa[kk], d0, d1);
    }
    // K as N-major B (rows = keys = k, d contiguous).
    const uint64_t kn_desc = desc_sw128(kA, kBN * 128, 1024);
    fence_regs(dq);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) wgmma_rs<T, kD>(dq, dsa[kk], kn_desc + static_cast<uint64_t>((kk * 2048) >> 4), 1);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(dq);
    mbar_arrive(bar_e(st));
  }

  T* dqg = static_cast<T*>(p.dq) + b * p.dq_sb + h * p.dq_sh + s.q_start * p.dq_ss;
  const int d = p.head_dim;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const int i = i0 + hf * 8 + g;
    if (i < m0 + rows) {
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const int col = dt * 8 + 2 * t4;
        if (col < d)
          *reinterpret_cast<uint32_t*>(dqg + static_cast<int64_t>(i) * p.dq_ss + col) =
              pack2<T>(dq[dt * 4 + hf * 2] * a.scale, dq[dt * 4 + hf * 2 + 1] * a.scale);
      }
    }
  }
#else
  (void)wa;
  __trap();
#endif
}

// Launches the dK/dV and the dQ kernels (after the preprocess kernel). The two
// kernels tile differently, so each gets its own tensor maps (box rows:
// dK/dV: Q, dY 64 and K, V 128; dQ: Q, dY 128 and K, V 64).
template <class T, int kD>
Status launch_wgmma_bwd(const WgBwdArgs& wa_dkdv, const WgBwdArgs& wa_dq, void* stream) {
  using C1 = DkdvCfg<kD>;
  using C2 = DqCfg<kD>;
  const FlashBwdParams& p = wa_dkdv.a.p;
  auto k1 = flash_bwd_dkdv_wgmma_kernel<T, kD>;
  auto k2 = flash_bwd_dq_wgmma_kernel<T, kD>;
  static dev::SmemOptIn opt1, opt2;
  BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(opt1, k1, C1::kSmem, "FlashSdpaBackwardPlan: flash_bwd_dkdv_wgmma smem attribute"));
  BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(opt2, k2, C2::kSmem, "FlashSdpaBackwardPlan: flash_bwd_dq_wgmma smem attribute"));
  const cudaStream_t st = static_cast<cudaStream_t>(stream);
  for (int b0 = 0; b0 < p.batch; b0 += mma_bwd::kMaxGridZ) {
    WgBwdArgs w = wa_dkdv, w2 = wa_dq;
    w.a.b_off = b0;
    w2.a.b_off = b0;
    const int nb = p.batch - b0 < mma_bwd::kMaxGridZ ? p.batch - b0 : mma_bwd::kMaxGridZ;
    if (p.kv_len > 0) {
      k1<<<dim3((p.kv_len + C1::kBN - 1) / C1::kBN, p.kv_heads, nb), C1::kThreads, C1::kSmem, st>>>(w);
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaBackwardPlan: flash_bwd_dkdv_wgmma launch");
    }
    if (p.q_len > 0) {
      k2<<<dim3((p.q_len + C2::kBM - 1) / C2::kBM, p.heads, nb), C2::kThreads, C2::kSmem, st>>>(w2);
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaBackwardPlan: flash_bwd_dq_wgmma launch");
    }
  }
  return Status::ok();
}

}  // namespace baracuda::attention::cuda::wgmma_bwd

#define BARACUDA_FLASH_WGMMA_BWD_INSTANTIATE(T, D)                                  \
  template baracuda::Status baracuda::attention::cuda::wgmma_bwd::launch_wgmma_bwd<T, D>( \
      const baracuda::attention::cuda::wgmma_bwd::WgBwdArgs&, const baracuda::attention::cuda::wgmma_bwd::WgBwdArgs&, void*);
