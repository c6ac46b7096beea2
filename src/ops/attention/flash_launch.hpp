// Interface between FlashSdpaPlan / FlashSdpaBackwardPlan (plain C++) and the
// CUDA flash-attention kernels. No CUDA headers: the stream travels as void*.
//
// Addressing (element strides, head dimension contiguous):
//   q[b, h, i, d] = q + b*q_sb + h*q_sh + (q_start(b) + i)*q_ss + d
// where q_start(b) = 0 in dense mode and cu_q[b] in varlen mode (q_sb = 0 then).
// Same for k, v (with kv head hk = h / (heads / kv_heads)), y, dy, dq, dk, dv.
// lse[b, h, i] = lse + b*lse_sb + h*lse_sh + (q_start(b) + i)*lse_ss.
// mask[b, h, i, j] = mask + b*m_sb + h*m_sh + i*m_sq + j*m_sk (dense mode only).
// alibi slope = alibi + b*alibi_sb + h*alibi_sh (alibi_sb = 0 for [H] slopes).
// Semantics of every field: include/baracuda/ops/attention.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/ops/attention.hpp"

namespace baracuda::attention::cuda {

struct FlashFwdParams {
  DType dtype = DType::BF16;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  void* y = nullptr;
  float* lse = nullptr;
  int64_t q_sb = 0, q_sh = 0, q_ss = 0;
  int64_t k_sb = 0, k_sh = 0, k_ss = 0;
  int64_t v_sb = 0, v_sh = 0, v_ss = 0;
  int64_t y_sb = 0, y_sh = 0, y_ss = 0;
  int64_t lse_sb = 0, lse_sh = 0, lse_ss = 0;

  int batch = 0, heads = 0, kv_heads = 0;
  int q_len = 0, kv_len = 0;  // dense: the lengths; varlen: the maximum lengths (grid size)
  int head_dim = 0;

  // varlen (both null in dense mode); total_* bound the clamped offsets
  const int32_t* cu_q = nullptr;
  const int32_t* cu_kv = nullptr;
  int64_t total_q = 0, total_kv = 0;

  double scale = 1.0;
  double softcap = 0.0;     // 0 = off
  bool causal = false;
  bool bottom_right = false;
  int64_t window_left = -1, window_right = -1;  // -1 = unbounded

  const float* alibi = nullptr;  // null = off
  int64_t alibi_sb = 0, alibi_sh = 0;

  const float* mask = nullptr;   // null = off
  int64_t m_sb = 0, m_sh = 0, m_sq = 0, m_sk = 0;

  // Forward scratch (forward_workspace_bytes_mma() bytes, owned by the caller)
  // for the split-KV path; too small or null: the kernels run without it.
  void* fwd_workspace = nullptr;
  size_t fwd_workspace_bytes = 0;
  baracuda::detail::FlashHint hint;  // variant overrides recorded by the plan at select()
};

struct FlashBwdParams : FlashFwdParams {
  const void* dy = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  int64_t dy_sb = 0, dy_sh = 0, dy_ss = 0;
  int64_t dq_sb = 0, dq_sh = 0, dq_ss = 0;
  int64_t dk_sb = 0, dk_sh = 0, dk_ss = 0;
  int64_t dv_sb = 0, dv_sh = 0, dv_ss = 0;
  void* workspace = nullptr;  // backward_workspace_bytes() bytes, owned by the caller
  size_t workspace_bytes = 0;
};

// Shape facts the kernels need to size their scratch and pick a kernel (no pointers).
struct FlashShape {
  DType dtype = DType::BF16;
  int64_t batch = 0, heads = 0, kv_heads = 0, q_len = 0, kv_len = 0, head_dim = 0;
  bool varlen = false;
  int64_t total_q = 0, total_kv = 0;
  // Mask, ALiBi or softcap on, or a scale the feature-free kernels cannot fold
  // into the exponent (not a positive normal f32 once times log2(e)): the
  // general kernels run (the variant names say which).
  bool features = false;
  baracuda::detail::FlashHint hint;  // variant overrides recorded by the plan at select()
};

// The feature-free tensor-core kernels fold scale * log2(e) into the exponent:
// it must be a positive normal f32.
inline bool scale_folds(double scale) { return static_cast<float>(scale * 1.4426950408889634) >= 1.17549435e-38f; }
// Mask, ALiBi or softcap on, or a scale that does not fold: the general kernels run.
inline bool uses_features(const FlashFwdParams& p) {
  return p.mask != nullptr || p.alibi != nullptr || p.softcap > 0.0 || !scale_folds(p.scale);
}
inline FlashShape shape_of(const FlashFwdParams& p) {
  FlashShape s;
  s.dtype = p.dtype;
  s.batch = p.batch;
  s.heads = p.heads;
  s.kv_heads = p.kv_heads;
  s.q_len = p.q_len;
  s.kv_len = p.kv_len;
  s.head_dim = p.head_dim;
  s.varlen = p.cu_q != nullptr;
  s.total_q = p.total_q;
  s.total_kv = p.total_kv;
  s.features = uses_features(p);
  s.hint = p.hint;
  return s;
}

// ---- SIMT path: f32 and f64 (flash_simt_*.cu) --------------------------------
Status forward_simt(const FlashFwdParams& p, int arch, int sm_count, void* stream);
size_t backward_workspace_bytes_simt(const FlashShape& s);
Status backward_simt(const FlashBwdParams& p, int arch, int sm_count, void* stream);

// ---- tensor-core path: f16 and bf16, mma.sync on sm_80+ (flash_mma_*.cu) -------
// The variant string names the tile configuration chosen for the shape.
// Short query lengths (decode) take a split-KV path when the workspace allows:
// the query heads of one kv head are packed into one CTA, the keys are split
// over several CTAs writing f32 partials, and a second kernel combines them in
// a fixed order (deterministic). forward_workspace_bytes_mma() is 0 when the
// shape does not take that path on a device with sm_count SMs.
Status forward_mma(const FlashFwdParams& p, int arch, int sm_count, void* stream);
const char* forward_mma_variant(const FlashShape& s, int arch, int sm_count = 0);
size_t forward_workspace_bytes_mma(const FlashShape& s, int arch, int sm_count);
size_t backward_workspace_bytes_mma(const FlashShape& s);
Status backward_mma(const FlashBwdParams& p, int arch, int sm_count, void* stream);
const char* backward_mma_variant(const FlashShape& s, int arch);

// ---- Hopper path: wgmma + TMA on sm_90, in builds with the sm_90a target -------
// (flash_wgmma_fwd.cu). forward_mma() tries it first. Eligible shapes: f16 /
// bf16, head dim 64, 128 or 256, dense (not varlen), no mask / ALiBi / softcap
// (`features`). forward_wgmma sets *ran = false without launching when the
// problem does not qualify, including strides the tensor maps cannot describe
// (16-byte multiples, non-zero); the caller then takes the mma.sync kernel.
// Feature problems (s.features) are not eligible.
bool forward_wgmma_eligible(const FlashShape& s, int arch);
const char* forward_wgmma_variant(const FlashShape& s);
Status forward_wgmma(const FlashFwdParams& p, int arch, bool* ran, void* stream);
// The backward (head dims 48..64 and 96..128, otherwise the same rules) runs from
// backward_mma() after its preprocess kernel, on the same workspace.
bool backward_wgmma_eligible(const FlashShape& s, int arch);
const char* backward_wgmma_variant(const FlashShape& s);
// Whether the tensor maps of the Hopper kernels can describe these actual
// pointers and strides (builds the maps on the host, launches nothing).
bool forward_wgmma_maps_ok(const FlashFwdParams& p);
bool backward_wgmma_maps_ok(const FlashBwdParams& p);

// ---- what run() launches for actual arguments ---------------------------------
// forward_mma_variant / backward_mma_variant name the select()-time choice from
// the shape; these name what forward_mma / backward_mma launch for the actual
// params: the same, except where the split-KV workspace is absent or the TMA
// maps refuse the strides (then the mma.sync tile). The plans' sku_for().
const char* forward_mma_variant_for(const FlashFwdParams& p, int arch, int sm_count);
const char* backward_mma_variant_for(const FlashBwdParams& p, int arch);

}  // namespace baracuda::attention::cuda
