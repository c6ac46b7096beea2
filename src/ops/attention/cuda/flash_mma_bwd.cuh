// Tensor-core flash-attention backward (f16 / bf16, sm_80+, mma.sync m16n8k16
// with f32 accumulation). Deterministic: no floating-point atomics, every
// output element is written by exactly one thread block, and every sum is
// taken in a fixed order.
//
// Three kernels, stream-ordered:
//  1. bwd_preprocess_kernel (flash_mma_bwd.cu): per query row,
//       lse2 = lse * log2(e)   (+inf for a fully masked row, lse = -inf, so that
//                               p = exp2(s * log2(e) - lse2) = 0 there),
//       dsum = rowsum(dy * y)  (f32),
//     both into the workspace (ws_row() below gives the row index).
//  2. bwd_dkdv_kernel: a CTA owns kBN keys of one (batch, kv head). It keeps K
//     and V in shared memory and walks the query heads of the group in order,
//     and for each the query tiles that can see its keys (tile_query_range),
//     kBM query rows at a time (Q, dY, lse2, dsum double-buffered by cp.async).
//     Warp w owns 16 key rows (and, for kD > 128, half of the head dimension:
//     kWD = 2 warps share a key block and exchange their partial S^T / dP^T
//     through shared memory, summed in a fixed order). Per query tile:
//        S^T  = K Q^T              (rows = keys, columns = queries)
//        P^T  = exp2(S'^T log2e - lse2)       S' after the score pipeline
//        dP^T = V dY^T
//        dS^T = P^T * (dP^T - dsum) * dtanh
//        dV  += P^T dY,  dK += dS^T Q        (P^T, dS^T straight from registers)
//     and finally writes scale * dK and dV (zeros for keys no query sees).
//  3. bwd_dq_kernel: a CTA owns 128 query rows of one (batch, head), warp w
//     owns 16 of them. It walks the key tiles the rows can see
//     (tile_key_range), K and V double-buffered:
//        S = Q K^T, P, dP = dY V^T, dS,  dQ += dS K
//     and writes scale * dQ.
// dS is recomputed in both 2 and 3 (7 GEMMs per tile pair instead of the 5 of
// an atomics-based backward): the price of determinism without atomics.
//
// Scores: s = qk * scale, then (kMods) softcap, ALiBi and the additive mask
// through score_transform (flash_common.cuh). Tiles that straddle a causal /
// window / length edge evaluate key_allowed per element; interior tiles do not.
// Rows past the end of a query tile are zero-filled (Q = dY = 0, lse2 = dsum = 0)
// so they contribute exactly 0; keys past the end are masked in the dQ kernel
// (their scores would otherwise be exp2(-lse2), possibly inf).
//
// kD is the padded head dimension (32, 64, ..., 256); the problem's D (a
// multiple of 8, <= kD) is zero-filled on load and clipped on store. Shared
// memory rows are padded by 16 bytes (bank-conflict-free ldmatrix).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "ops/attention/cuda/flash_common.cuh"

namespace baracuda::attention::cuda::mma_bwd {

constexpr float kLog2e = 1.4426950408889634f;
constexpr int kWarps = 8;
constexpr int kThreads = kWarps * 32;
constexpr int kMaxGridZ = 65535;  // batches beyond this are launched in chunks (BwdArgs::b_off)

// Tile configuration for a padded head dimension.
template <int kD>
struct BwdTile {
  // dK/dV kernel: kWD warps share a 16-key block (splitting D), kBN keys per
  // CTA, kBM query rows per step.
  static constexpr int kWD = kD > 128 ? 2 : 1;
  static constexpr int kBN = 16 * kWarps / kWD;
  static constexpr int kBM = kD >= 224 ? 32 : 64;
  // dQ kernel: kQBM query rows per CTA (16 per warp), kQBN keys per step.
  static constexpr int kQBM = 16 * kWarps;
  static constexpr int kQBN = kD >= 224 ? 32 : 64;
  static constexpr int kLd = kD + 8;  // smem row stride (elements)

  static constexpr size_t dkdv_smem(size_t elem) {
    return elem * (2 * kBN * kLd + 4 * kBM * kLd) + sizeof(float) * 4 * kBM +
           (kWD > 1 ? sizeof(float) * 2 * kWarps * 16 * kBM : 0);
  }
  static constexpr size_t dq_smem(size_t elem) { return elem * (2 * kQBM * kLd + 4 * kQBN * kLd); }
  static_assert(kD % 32 == 0 && kD >= 32 && kD <= 256, "padded head dim");
  static_assert(dkdv_smem(2) <= 227 * 1024 && dq_smem(2) <= 227 * 1024, "shared memory budget");
};

// Kernel arguments: the plan's parameters plus the constants derived once.
struct BwdArgs {
  FlashBwdParams p;
  float scale;       // softmax scale
  float scale_log2;  // scale * log2(e)
  float softcap;     // 0 = off
  int group;         // heads / kv_heads
  float* lse2;       // workspace: lse * log2(e) per query row (+inf when lse = -inf)
  float* dsum;       // workspace: rowsum(dy * y)
  int b_off = 0;     // batch index of blockIdx.z == 0 (launch chunk)
};

// Row index of (b, h, query row i of the sequence) in the workspace arrays.
__device__ __forceinline__ int64_t ws_row(const FlashBwdParams& p, const SeqInfo& s, int b, int h, int i) {
  return p.cu_q != nullptr ? static_cast<int64_t>(h) * p.total_q + s.q_start + i
                           : (static_cast<int64_t>(b) * p.heads + h) * p.q_len + i;
}

__device__ __forceinline__ float bwd_exp2(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(r) : "f"(x));
  return r;
}

// Launches the dK/dV and dQ kernels for padded head dim kD (the preprocess
// kernel must have filled a.lse2 / a.dsum). Defined in
// flash_mma_bwd_kernels.cuh, instantiated as listed in ../manifest.cmake.
template <class T, int kD>
Status launch_bwd(const BwdArgs& a, void* stream);

}  // namespace baracuda::attention::cuda::mma_bwd

namespace baracuda::attention::cuda {
// The Hopper kernels on the same preprocessed workspace (flash_wgmma.cu); sets
// *ran = false without launching when the problem does not qualify.
Status backward_wgmma(const mma_bwd::BwdArgs& a, int arch, bool* ran, void* stream);
}  // namespace baracuda::attention::cuda
