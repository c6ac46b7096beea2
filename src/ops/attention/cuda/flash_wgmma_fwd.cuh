// Hopper flash-attention forward (f16 / bf16, sm_90a): wgmma + TMA, with a
// producer warpgroup and two consumer warpgroups (FlashAttention-3's
// structure). Tried and measured slower on an H200, so not used: FA3's
// intra-warpgroup pipelining (S(n+1) issued before P(n) V(n), its softmax
// overlapping that product): 575 vs 597 TFLOP/s at (4,16,4096,128), 347 vs 386
// at D = 64, 502 vs 605 at D = 256. Note for such experiments: a branch
// between a wgmma's issue and its wait, or a non-wgmma write to an
// accumulator while any wgmma is pending, makes ptxas serialise the wgmmas
// (info C7515 in the -Xptxas -v output).
//
// One CTA owns kBM = 128 query rows of one (batch, head):
//   * warps 0-3 and 4-7 are two consumer warpgroups, each owning 64 rows: they
//     compute S = Q K^T with wgmma (A = Q and B = K from shared memory, both
//     K-major), the online softmax in registers (the same code and score rules
//     as the mma.sync kernel), and O += P V with wgmma (A = P from registers,
//     B = V from shared memory, N-major);
//   * warpgroup 2 is the producer: one lane of warp 8 issues the bulk tensor copies (TMA) of
//     the Q tile once and of the K and V tiles into a kStages-deep ring, each
//     completing on its own "full" mbarrier; consumers release a stage through
//     its "empty" mbarrier. No CTA-wide barrier inside the loop, so the two
//     warpgroups drift out of phase and one's softmax overlaps the other's
//     matrix work.
// The kernel starts with 168 registers per thread (384 threads, one CTA per
// SM); setmaxnreg then moves registers from the producer warpgroup (40) to the
// consumers (232), which hold the S and O accumulators.
// Tiles sit in shared memory in the 128-byte swizzled layout that TMA writes
// and wgmma reads (src/cuda/sm90/hopper.cuh). Out-of-range rows (past q_len /
// kv_len) and columns (past head_dim) are zero-filled by TMA; the key rules
// (causal, window, kv_len) are applied on edge tiles only, exactly as in the
// mma.sync kernel (flash_mma_fwd.cuh), whose helpers this file reuses.
// Feature-free problems only (no mask, ALiBi or softcap), dense layout.
#pragma once
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "cuda/sm90/hopper.cuh"
#include "cuda/smem_optin.cuh"
#include "cuda/sm90/wgmma_ops.cuh"
#include "ops/attention/cuda/flash_mma_fwd.cuh"

namespace baracuda::attention::cuda::wgmma_fwd {

using namespace baracuda::dev::sm80;
using namespace baracuda::dev::sm90;
using mma_fwd::FwdArgs;

template <int kD>
struct WgCfg {
  static constexpr int kBM = 128;                    // query rows per CTA (two warpgroups of 64)
  // Keys per tile. 176 at D = 128 (FlashAttention-3's non-causal choice) was
  // measured slower here: 587 vs 600 TFLOP/s at (4,16,4096,128), 407 vs 453
  // with a 1024 window.
  static constexpr int kBN = kD <= 128 ? 128 : 64;
  static constexpr int kStages = 2;                  // K / V ring depth
  static constexpr int kThreads = 384;               // 2 consumer warpgroups + 1 producer warpgroup
  static constexpr int kCB = kD / 64;                // 64-element column blocks
  static constexpr uint32_t kQBytes = kBM * kD * 2;
  static constexpr uint32_t kKVBytes = kBN * kD * 2;  // one K or one V tile
  static constexpr uint32_t kQOff = 0;
  static constexpr uint32_t kKOff = kQBytes;
  static constexpr uint32_t kVOff = kKOff + kStages * kKVBytes;
  static constexpr uint32_t kBarOff = kVOff + kStages * kKVBytes;
  // q_full, k_full[kStages], v_full[kStages], empty[kStages]
  static constexpr uint32_t kBarBytes = 8 * (1 + 3 * kStages);
  static constexpr size_t kSmem = kBarOff + kBarBytes + 1024;  // + slack to align the base to 1024
  static_assert(kD % 64 == 0 && kD <= 256, "head dim must be 64, 128 or 256");
};

struct WgArgs {
  FwdArgs f;
  CUtensorMap tm_q, tm_k, tm_v;  // 4-D maps (d, row, head, batch), 64 x rows boxes, 128B swizzle
};

template <class T, int kD>
__global__ void __launch_bounds__(384, 1) flash_fwd_wgmma_kernel(const __grid_constant__ WgArgs wa) {
#ifdef BARACUDA_SM90A_DEVICE
  using Cfg = WgCfg<kD>;
  constexpr int kBM = Cfg::kBM, kBN = Cfg::kBN, kStages = Cfg::kStages, kCB = Cfg::kCB;
  constexpr int kNT = kBN / 8, kDT = kD / 8;
  const FwdArgs& a = wa.f;
  const FlashFwdParams& p = a.p;

  extern __shared__ uint8_t smem_raw[];
  const uint32_t base = (smem_u32(smem_raw) + 1023u) & ~1023u;
  const uint32_t sQ = base + Cfg::kQOff, sK = base + Cfg::kKOff, sV = base + Cfg::kVOff;
  const uint32_t bar_q = base + Cfg::kBarOff;
  auto bar_k = [&](int s) { return bar_q + 8u * (1 + s); };
  auto bar_v = [&](int s) { return bar_q + 8u * (1 + kStages + s); };
  auto bar_e = [&](int s) { return bar_q + 8u * (1 + 2 * kStages + s); };

  const int tid = threadIdx.x, warp = tid >> 5, lane = tid & 31;
  const int mb = static_cast<int>(gridDim.x) - 1 - static_cast<int>(blockIdx.x);  // heaviest (causal) first
  const int h = blockIdx.y, b = blockIdx.z + a.b_base;
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
      mbar_init(bar_k(st), 1);
      mbar_init(bar_v(st), 1);
      mbar_init(bar_e(st), 256);
    }
    mbar_init_fence();
  }
  __syncthreads();

  if (warp >= 8) {
    // ---- producer ---------------------------------------------------------------------
    setmaxnreg_dec<40>();
    if (warp == 8 && lane == 0 && n_lo < n_hi) {
      tma_prefetch_map(&wa.tm_q);
      tma_prefetch_map(&wa.tm_k);
      tma_prefetch_map(&wa.tm_v);
      mbar_arrive_expect_tx(bar_q, Cfg::kQBytes);
#pragma unroll
      for (int cb = 0; cb < kCB; ++cb) tma_load_4d(sQ + cb * (kBM * 128), &wa.tm_q, bar_q, cb * 64, m0, h, b);
      for (int n = n_lo; n < n_hi; ++n) {
        const int it = n - n_lo, st = it % kStages;
        if (it >= kStages) mbar_wait(bar_e(st), static_cast<uint32_t>((it / kStages - 1) & 1));
        const uint32_t kdst = sK + st * Cfg::kKVBytes, vdst = sV + st * Cfg::kKVBytes;
        mbar_arrive_expect_tx(bar_k(st), Cfg::kKVBytes);
#pragma unroll
        for (int cb = 0; cb < kCB; ++cb) tma_load_4d(kdst + cb * (kBN * 128), &wa.tm_k, bar_k(st), cb * 64, n * kBN, hk, b);
        mbar_arrive_expect_tx(bar_v(st), Cfg::kKVBytes);
#pragma unroll
        for (int cb = 0; cb < kCB; ++cb) tma_load_4d(vdst + cb * (kBN * 128), &wa.tm_v, bar_v(st), cb * 64, n * kBN, hk, b);
      }
    }
    return;
  }
  setmaxnreg_inc<232>();

  // ---- consumers: warpgroup wg owns rows m0 + 64 wg .. +63 ------------------------------
  const int wg = warp >> 2, wq = warp & 3;
  const int g = lane >> 2, t4 = lane & 3;
  const int i0 = m0 + wg * 64 + wq * 16;  // this warp's first row

  const KeyRange first = key_range(p, s, m0), last = key_range(p, s, m0 + rows - 1);
  const int f_lo = (last.lo + kBN - 1) / kBN;
  const int f_hi = first.hi / kBN;

  float o[kDT * 4];
  float m_run[2] = {-INFINITY, -INFINITY}, l_run[2] = {0.f, 0.f};
#pragma unroll
  for (int i = 0; i < kDT * 4; ++i) o[i] = 0.f;
  const float mult = a.scale_log2;

  // Q: this warpgroup's 64 rows inside each 128-row column block.
  const uint64_t q_desc = desc_sw128(sQ + wg * 64 * 128, 16, 1024);
  if (n_lo < n_hi) mbar_wait(bar_q, 0);

  for (int n = n_lo; n < n_hi; ++n) {
    const int it = n - n_lo, st = it % kStages;
    const uint32_t par = static_cast<uint32_t>((it / kStages) & 1);
    const uint32_t kA = sK + st * Cfg::kKVBytes, vA = sV + st * Cfg::kKVBytes;
    const int j0 = n * kBN;

    // ---- S = Q K^T ------------------------------------------------------------------
    float sc[1][kNT][4];
    float(&sflat)[kNT * 4] = reinterpret_cast<float(&)[kNT * 4]>(sc);
    mbar_wait(bar_k(st), par);
    const uint64_t k_desc = desc_sw128(kA, 16, 1024);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kD / 16; ++kk) {
      // k-step kk: column block kk / 4, 32 bytes per 16 elements inside the 128-byte row
      const uint64_t qo = static_cast<uint64_t>(((kk >> 2) * (kBM * 128) + (kk & 3) * 32) >> 4);
      const uint64_t ko = static_cast<uint64_t>(((kk >> 2) * (kBN * 128) + (kk & 3) * 32) >> 4);
      wgmma_ss<T, kBN>(sflat, q_desc + qo, k_desc + ko, kk > 0 ? 1 : 0);
    }
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(sflat);

    if (n < f_lo || n >= f_hi) mma_fwd::edge_mask<1, kNT>(sc, p, s, i0, j0, g, t4);
    float(&o3)[1][kDT][4] = reinterpret_cast<float(&)[1][kDT][4]>(o);
    mma_fwd::online_softmax<1, kNT, kDT>(sc, o3, m_run, l_run, mult);

    // ---- O += P V ---------------------------------------------------------------------
    uint32_t pa[kBN / 16][4];
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) acc_to_a_frag<T>(pa[kk], sc[0][2 * kk], sc[0][2 * kk + 1]);
    mbar_wait(bar_v(st), par);
    // V is [key][d] (d contiguous): N-major B. 16 keys = two 8-row atoms = 2048
    // bytes per k-step; column blocks kBN * 128 bytes apart (leading offset).
    const uint64_t v_desc = desc_sw128(vA, kBN * 128, 1024);
    fence_regs(o);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < kBN / 16; ++kk) wgmma_rs<T, kD>(o, pa[kk], v_desc + static_cast<uint64_t>((kk * 2048) >> 4), 1);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(o);
    mbar_arrive(bar_e(st));  // this thread is done reading stage st
  }

  // ---- epilogue: normalise and store this thread's rows -------------------------------------
  // p.lse is null for an inference-only forward (save_lse false): no lse store.
  float* lse_g = p.lse ? p.lse + b * p.lse_sb + h * p.lse_sh + s.q_start * p.lse_ss : nullptr;
  T* yg = static_cast<T*>(p.y) + b * p.y_sb + h * p.y_sh + s.q_start * p.y_ss;
  const int d = p.head_dim;
#pragma unroll
  for (int hf = 0; hf < 2; ++hf) {
    const float l = quad_sum(l_run[hf]);
    const float inv = l > 0.f ? 1.f / l : 0.f;
    const int row = i0 + hf * 8 + g;  // within the sequence
    if (row < m0 + rows) {
      T* yr = yg + static_cast<int64_t>(row) * p.y_ss;
#pragma unroll
      for (int dt = 0; dt < kDT; ++dt) {
        const int col = dt * 8 + 2 * t4;
        if (col < d)
          *reinterpret_cast<uint32_t*>(yr + col) = pack2<T>(o[dt * 4 + hf * 2] * inv, o[dt * 4 + hf * 2 + 1] * inv);
      }
      if (lse_g && t4 == 0) {
        const float mu = m_run[hf] == -INFINITY ? 0.f : m_run[hf];
        lse_g[static_cast<int64_t>(row) * p.lse_ss] = l > 0.f ? mu * 0.6931471805599453f + logf(l) : -INFINITY;
      }
    }
  }
#else
  (void)wa;
  __trap();
#endif
}

// Launches the kernel for (T, kD); flash_wgmma_fwd.cu fills the tensor maps.
template <class T, int kD>
Status launch_wgmma_kernel(const WgArgs& wa, int q_len, int heads, int batch, void* stream) {
  using Cfg = WgCfg<kD>;
  auto kern = flash_fwd_wgmma_kernel<T, kD>;
  static dev::SmemOptIn optin;
  BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(optin, kern, Cfg::kSmem, "FlashSdpaPlan: flash_fwd_wgmma smem attribute"));
  WgArgs w = wa;
  constexpr int kMaxZ = 65535;
  for (int b0 = 0; b0 < batch; b0 += kMaxZ) {
    w.f.b_base = b0;
    const int nb = batch - b0 < kMaxZ ? batch - b0 : kMaxZ;
    const dim3 grid((q_len + Cfg::kBM - 1) / Cfg::kBM, heads, nb);
    kern<<<grid, Cfg::kThreads, Cfg::kSmem, static_cast<cudaStream_t>(stream)>>>(w);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaPlan: flash_fwd_wgmma launch");
  }
  return Status::ok();
}

}  // namespace baracuda::attention::cuda::wgmma_fwd

// One explicit instantiation per (dtype, head dim) of ../manifest.cmake, each in its own generated TU.
#define BARACUDA_FLASH_WGMMA_FWD_INSTANTIATE(T, D)                                     \
  template baracuda::Status baracuda::attention::cuda::wgmma_fwd::launch_wgmma_kernel<T, D>( \
      const baracuda::attention::cuda::wgmma_fwd::WgArgs&, int, int, int, void*);
