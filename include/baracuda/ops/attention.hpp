// Attention family: SdpaPlan / SdpaBackwardPlan (materialized attention, the
// general fallback) and FlashSdpaPlan / FlashSdpaBackwardPlan (tiled online
// softmax; [Q,K] is never materialized).
//
// Shapes (element strides are free: [B,S,H,D] storage is a [B,H,S,D] view with
// permuted strides):
//   q [B, H,  Q, Dk]    k [B, Hk, K, Dk]    v [B, Hk, K, Dv]    y [B, H, Q, Dv]
// Grouped-query / multi-query attention: H % Hk == 0, query head h reads kv
// head h / (H / Hk). K and V are never copied per query head.
//
// Scores for query row i and key column j of one (batch, head):
//   s  = (q_i . k_j) * scale                      scale defaults to 1/sqrt(Dk)
//   s  = cap * tanh(s / cap)                      flash only, when softcap > 0
//   s += -slope[b,h] * |i + off - j|              flash only, ALiBi
//   s += mask[b,h,i,j]                            additive f32 mask (0-strides broadcast)
//   j is allowed when (!causal || j <= i + off)
//                 and (window_left  < 0 || j >= i + off - window_left)
//                 and (window_right < 0 || j <= i + off + window_right)
//   off = 0 for DiagonalAlign::TopLeft (PyTorch is_causal),
//         K - Q for DiagonalAlign::BottomRight (FlashAttention, KV-cache decoding);
//   per sequence in varlen mode.
//   p  = softmax over the allowed j of s;   y_i = sum_j p_ij v_j
//   lse_i = log(sum over allowed j of exp(s_ij))   (natural log, f32)
// A row with no allowed key, or whose scores are all -inf (fully masked), gives
// y_i = 0, p_i. = 0 and lse_i = -inf (FlashAttention's convention; PyTorch's
// math backend would give NaN). Its gradients are 0.
//
// Precision: f16/bf16 multiply on tensor cores with f32 accumulation and an f32
// softmax; f32 runs in f32, f64 in f64; the CPU reference accumulates in double.
//
// Backends. Stream::cpu(): the CPU reference. CUDA: materialized plans run
// bespoke tiled kernels; flash plans run bespoke SIMT kernels for f32/f64 and,
// for f16/bf16, either cuDNN's fused attention (cuDNN 9 backend graph API) or
// our mma.sync kernels. The default f16/bf16 route is cuDNN wherever it
// supports the problem (dense, no mask / ALiBi / softcap / window, bottom-right
// causal only with Q <= K, backward K % 128 == 0 on cuDNN <= 9.15.0), except
// decode-shaped forwards (q_len <= 64), which take our split-KV kernel; both
// choices are measured (docs/BENCHMARKS.md). PlanPreference{backend} overrides
// (require_backend: an error when it cannot run). sku() names the route chosen at
// select(); a cuDNN plan whose actual strides cuDNN refuses at run() falls back
// to the bespoke kernels (unless cuDNN was required). cuDNN plans are built at
// select(), never while the stream is capturing a CUDA graph (the plan stays
// bespoke then); running a built one is capture-safe.
// Every default plan is deterministic: no floating-point atomics, grouped-query
// gradients of K/V are summed over the query heads of a group in a fixed order.
// Opt-in non-determinism: FlashSdpaBackwardPlan selected with
// PlanPreference::require_deterministic = false builds cuDNN's backward with
// its atomic dQ accumulation (the SKU's precision.deterministic is false and
// its string says "non-deterministic"; results within the dtype's tolerance,
// not bit-stable between runs). On the H100 it measured 1.09-1.30x PyTorch's
// fastest backward on all ten benchmark shapes (docs/BENCHMARKS.md); the
// bespoke kernels stay deterministic either way.
#pragma once
#include <cstdint>
#include <optional>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

enum class DiagonalAlign : uint8_t { TopLeft, BottomRight };

namespace detail {
// Flash kernel-variant overrides parsed from PlanPreference::variant at
// select() (keys: tile=<BM>x<BN>w<W>s<S>, splits=<n>, wgmma=0|1) or, when
// that is empty, from the environment defaults BARACUDA_FLASH_FWD_TILE,
// BARACUDA_FLASH_FWD_SPLITS, BARACUDA_FLASH_FWD_WGMMA / BARACUDA_FLASH_BWD_WGMMA.
struct FlashHint {
  int16_t tile_bm = 0, tile_bn = 0, tile_warps = 0, tile_stages = 0;  // 0: the default tile
  int16_t splits = -1;  // split-KV splits: -1 automatic, 0 never, n forced (capped at 64)
  bool wgmma = true;    // false: the Hopper kernels are not used
  bool has_tile() const { return tile_bm > 0; }
};
}  // namespace detail
BARACUDA_API const char* diagonal_align_name(DiagonalAlign a);

// ---------------------------------------------------------------------------
// Materialized attention. Forward saves the probabilities p [B,H,Q,K] (dtype
// probs_dtype(): f32 for f16/bf16/f32 inputs, f64 for f64) for the backward.
struct BARACUDA_API SdpaDescriptor {
  DType dtype = DType::F32;  // q, k, v, y (and dy, dq, dk, dv)
  int64_t batch = 1;
  int64_t heads = 1;         // H (query heads)
  int64_t kv_heads = 1;      // Hk, H % Hk == 0
  int64_t q_len = 0;         // Q
  int64_t kv_len = 0;        // K
  int64_t head_dim = 0;      // Dk
  int64_t head_dim_v = -1;   // Dv; -1 = same as head_dim
  std::optional<double> scale;  // default 1/sqrt(Dk); must be finite
  bool causal = false;
  DiagonalAlign align = DiagonalAlign::TopLeft;
  bool has_mask = false;     // additive f32 mask [B,H,Q,K], any extent may be broadcast by stride 0

  // The descriptor of these views: dtype, batch, heads, kv_heads, q_len,
  // kv_len, head_dim and head_dim_v read from q [B,H,Q,Dk], k [B,Hk,K,Dk] and
  // v [B,Hk,K,Dv]; every other field (scale, causal, align, has_mask) is
  // `options`' (its shape fields are ignored). InvalidProblem naming
  // "SdpaDescriptor::from" when the views disagree (rank, dtype, B, Hk, K, Dk).
  static Result<SdpaDescriptor> from(const TensorRef& q, const TensorRef& k, const TensorRef& v,
                                     const SdpaDescriptor& options);
  static Result<SdpaDescriptor> from(const TensorRef& q, const TensorRef& k, const TensorRef& v);  // default options
};

struct SdpaArgs {
  TensorRef q, k, v;
  TensorRef mask;   // used when descriptor.has_mask
  TensorMut y;      // [B,H,Q,Dv]
  TensorMut probs;  // [B,H,Q,K], probs_dtype(); saved for SdpaBackwardPlan
};

class BARACUDA_API SdpaPlan : public PlanBase {
 public:
  SdpaPlan() : PlanBase("SdpaPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<SdpaPlan> select(const Stream& stream, const SdpaDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const SdpaArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const SdpaArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const SdpaArgs& args) const;  // see PlanBase
  const SdpaDescriptor& descriptor() const { return desc_; }  // head_dim_v and scale resolved
  double scale() const { return *desc_.scale; }
  DType probs_dtype() const;
  // Expected shape of every tensor of the arguments (gradients: their
  // primal's). dtype: descriptor().dtype, probs: probs_dtype(), mask: f32.
  Dims q_shape() const;      // [B,H,Q,Dk]  (dq)
  Dims k_shape() const;      // [B,Hk,K,Dk] (dk)
  Dims v_shape() const;      // [B,Hk,K,Dv] (dv)
  Dims y_shape() const;      // [B,H,Q,Dv]  (dy)
  Dims probs_shape() const;  // [B,H,Q,K]
  Dims mask_shape() const;   // [B,H,Q,K] (when has_mask)

 private:
  SdpaDescriptor desc_;
};

// dp = dy . v^T;  ds = p * (dp - rowsum(dp * p));  dq = scale ds . k;
// dk = scale ds^T . q (summed over the group's query heads, in head order);  dv = p^T . dy.
// Workspace: ds, [B,H,Q,K] in probs_dtype() (workspace_size()).
struct SdpaBackwardArgs {
  TensorRef dy;         // [B,H,Q,Dv]
  TensorRef q, k, v;
  TensorRef probs;      // from SdpaPlan::run
  TensorMut dq, dk, dv;
};

class BARACUDA_API SdpaBackwardPlan : public PlanBase {
 public:
  SdpaBackwardPlan() : PlanBase("SdpaBackwardPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<SdpaBackwardPlan> select(const Stream& stream, const SdpaDescriptor& desc,
                                         const PlanPreference& pref = {});
  Status can_implement(const SdpaBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const SdpaBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const SdpaBackwardArgs& args) const;  // see PlanBase
  const SdpaDescriptor& descriptor() const { return desc_; }
  double scale() const { return *desc_.scale; }
  DType probs_dtype() const;
  // Expected shape of every tensor of the arguments (gradients: their
  // primal's). dtype: descriptor().dtype, probs: probs_dtype().
  Dims q_shape() const;      // [B,H,Q,Dk]  (dq)
  Dims k_shape() const;      // [B,Hk,K,Dk] (dk)
  Dims v_shape() const;      // [B,Hk,K,Dv] (dv)
  Dims y_shape() const;      // [B,H,Q,Dv]  (dy)
  Dims probs_shape() const;  // [B,H,Q,K]

 private:
  SdpaDescriptor desc_;
};

// ---------------------------------------------------------------------------
// Flash attention. Head dims 32..256 in steps of 8, Dk == Dv. The CUDA paths
// need the head dimension to be contiguous (stride 1) in q, k, v, y, dy, dq, dk,
// dv, and (f16/bf16) every other stride a multiple of 8 elements and 16-byte
// aligned base pointers; the CPU reference takes any strides.
enum class AlibiMode : uint8_t { None, PerHead /* slopes [H] */, PerBatchHead /* slopes [B,H] */ };

struct BARACUDA_API FlashSdpaDescriptor {
  DType dtype = DType::F32;  // q, k, v, y (and the gradients); f32 like every descriptor's default
  int64_t batch = 1;        // B; in varlen mode the number of sequences
  int64_t heads = 1;        // H
  int64_t kv_heads = 1;     // Hk, H % Hk == 0
  int64_t q_len = 0;        // Q; in varlen mode the longest query sequence (max_seqlen_q)
  int64_t kv_len = 0;       // K; in varlen mode the longest key sequence (max_seqlen_k)
  int64_t head_dim = 0;     // D = Dk = Dv
  std::optional<double> scale;  // default 1/sqrt(D); must be finite
  bool causal = false;
  DiagonalAlign align = DiagonalAlign::TopLeft;  // diagonal for causal, window and ALiBi
  int64_t window_left = -1;   // -1 = unbounded
  int64_t window_right = -1;  // -1 = unbounded
  double softcap = 0.0;       // 0 = off; > 0: s = softcap * tanh(s / softcap)
  AlibiMode alibi = AlibiMode::None;
  bool has_mask = false;      // additive f32 mask [B,H,Q,K] (strides may be 0); not with varlen
  // Variable-length packed batch (FlashAttention's varlen API): q [total_q, H, D],
  // k/v [total_kv, Hk, D], y like q, lse [H, total_q]; sequence b owns rows
  // cu_seqlens_q[b] .. cu_seqlens_q[b+1] (int32 [B+1], non-decreasing, starting
  // at 0, ending at total_q / total_kv, each length <= q_len / kv_len). The CPU
  // reference checks this (InvalidProblem); CUDA kernels cannot read the array
  // before launching, so they clamp the offsets to the tensors instead: a bad
  // array gives wrong numbers, never out-of-bounds reads or writes.
  bool varlen = false;
  int64_t total_q = 0;
  int64_t total_kv = 0;
  // The forward writes lse (FlashSdpaArgs::lse), which the backward reads.
  // false: an inference-only forward; lse must be left empty and is never
  // written (no kernel touches it). FlashSdpaBackwardPlan needs it true.
  bool save_lse = true;

  // The descriptor of these views: dtype, batch, heads, kv_heads, q_len,
  // kv_len and head_dim read from q [B,H,Q,D] and k, v [B,Hk,K,D]; every
  // other field is `options`' (its shape fields are ignored). Varlen
  // (options.varlen): q [total_q,H,D], k, v [total_kv,Hk,D] give heads,
  // kv_heads, head_dim, total_q and total_kv, while batch, q_len and kv_len
  // (the longest sequences) stay options' (the views cannot tell them).
  // InvalidProblem naming "FlashSdpaDescriptor::from" when the views disagree
  // (rank, dtype, B, Hk, K, D).
  static Result<FlashSdpaDescriptor> from(const TensorRef& q, const TensorRef& k, const TensorRef& v,
                                          const FlashSdpaDescriptor& options);
  static Result<FlashSdpaDescriptor> from(const TensorRef& q, const TensorRef& k, const TensorRef& v);  // default options
};

struct FlashSdpaArgs {
  TensorRef q, k, v;
  TensorRef mask;          // f32 [B,H,Q,K] when has_mask
  TensorRef alibi_slopes;  // f32 [H] or [B,H] when alibi != None
  TensorRef cu_seqlens_q;  // int32 [B+1] when varlen (device memory on CUDA)
  TensorRef cu_seqlens_kv; // int32 [B+1] when varlen
  TensorMut y;             // like q (Dv == D)
  TensorMut lse;           // f32 [B,H,Q] ([H,total_q] when varlen); saved for the backward
                           // (left empty when descriptor.save_lse is false)
};

class BARACUDA_API FlashSdpaPlan : public PlanBase {
 public:
  FlashSdpaPlan() : PlanBase("FlashSdpaPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<FlashSdpaPlan> select(const Stream& stream, const FlashSdpaDescriptor& desc,
                                      const PlanPreference& pref = {});
  Status can_implement(const FlashSdpaArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const FlashSdpaArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const FlashSdpaArgs& args) const;  // see PlanBase
  const FlashSdpaDescriptor& descriptor() const { return desc_; }  // scale resolved
  double scale() const { return *desc_.scale; }
  // Expected shape of every tensor of the arguments (gradients: their
  // primal's). dtype: descriptor().dtype; lse, mask, alibi_slopes: f32;
  // cu_seqlens: i32.
  Dims q_shape() const;           // [B,H,Q,D], varlen [total_q,H,D]    (y, dy, dq)
  Dims kv_shape() const;          // [B,Hk,K,D], varlen [total_kv,Hk,D] (k, v, dk, dv)
  Dims y_shape() const;           // = q_shape()
  Dims lse_shape() const;         // [B,H,Q], varlen [H,total_q]
  DType lse_dtype() const { return DType::F32; }
  Dims mask_shape() const;        // [B,H,Q,K] (has_mask)
  Dims alibi_shape() const;       // [H] or [B,H] (alibi), rank 0 when none
  Dims cu_seqlens_shape() const;  // [B+1] (varlen), rank 0 when not varlen

 private:
  FlashSdpaDescriptor desc_;
  bool use_cudnn_ = false;       // cuDNN fused attention chosen at select()
  bool cudnn_required_ = false;  // ... and required by the preference (no fallback)
  detail::FlashHint hint_;       // variant overrides recorded at select()
  KernelSku fallback_sku_;       // the bespoke route a cuDNN plan falls back to at run()
};

// Backward: recomputes p from lse (D = rowsum(dy * y) first), each output tile
// owned by one thread block: deterministic and bit-stable.
struct FlashSdpaBackwardArgs {
  TensorRef dy;            // like y
  TensorRef q, k, v;
  TensorRef y;             // forward output
  TensorRef lse;           // forward log-sum-exp
  TensorRef mask, alibi_slopes, cu_seqlens_q, cu_seqlens_kv;  // as in the forward
  TensorMut dq, dk, dv;    // like q, k, v
};

class BARACUDA_API FlashSdpaBackwardPlan : public PlanBase {
 public:
  FlashSdpaBackwardPlan() : PlanBase("FlashSdpaBackwardPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<FlashSdpaBackwardPlan> select(const Stream& stream, const FlashSdpaDescriptor& desc,
                                              const PlanPreference& pref = {});
  Status can_implement(const FlashSdpaBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const FlashSdpaBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const FlashSdpaBackwardArgs& args) const;  // see PlanBase
  const FlashSdpaDescriptor& descriptor() const { return desc_; }
  double scale() const { return *desc_.scale; }
  // Expected shape of every tensor of the arguments (gradients: their
  // primal's). dtype: descriptor().dtype; lse, mask, alibi_slopes: f32;
  // cu_seqlens: i32.
  Dims q_shape() const;           // [B,H,Q,D], varlen [total_q,H,D]    (y, dy, dq)
  Dims kv_shape() const;          // [B,Hk,K,D], varlen [total_kv,Hk,D] (k, v, dk, dv)
  Dims y_shape() const;           // = q_shape()
  Dims lse_shape() const;         // [B,H,Q], varlen [H,total_q]
  DType lse_dtype() const { return DType::F32; }
  Dims mask_shape() const;        // [B,H,Q,K] (has_mask)
  Dims alibi_shape() const;       // [H] or [B,H] (alibi), rank 0 when none
  Dims cu_seqlens_shape() const;  // [B+1] (varlen), rank 0 when not varlen

 private:
  FlashSdpaDescriptor desc_;
  bool use_cudnn_ = false;       // cuDNN fused attention chosen at select()
  bool cudnn_required_ = false;  // ... and required by the preference (no fallback)
  detail::FlashHint hint_;       // variant overrides recorded at select()
  KernelSku fallback_sku_;       // the bespoke route a cuDNN plan falls back to at run()
};

}  // namespace baracuda
