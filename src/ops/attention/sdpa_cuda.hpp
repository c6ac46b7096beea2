// Interface between SdpaPlan / SdpaBackwardPlan (plain C++) and the CUDA
// materialized-attention kernels (sdpa_*.cu). No CUDA headers: the stream is void*.
//
// Every tensor is addressed through 4-d element strides [b, h, i, d] (any
// strides, including 0 for the mask); k/v use kv head hk = h / (heads / kv_heads).
// probs and the ds workspace hold `acc` elements (float for f16/bf16/f32 inputs,
// double for f64). Semantics: include/baracuda/ops/attention.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::cuda_sdpa {

struct Strides4 {
  int64_t b = 0, h = 0, s = 0, d = 0;
};

struct SdpaFwdParams {
  DType dtype = DType::F32;
  const void* q = nullptr;
  const void* k = nullptr;
  const void* v = nullptr;
  const float* mask = nullptr;  // null = no mask
  void* y = nullptr;
  void* probs = nullptr;        // accumulator dtype
  Strides4 q_st, k_st, v_st, mask_st /* s = query row, d = key column */, y_st, p_st /* s = row, d = column */;
  int batch = 0, heads = 0, kv_heads = 0;
  int64_t q_len = 0, kv_len = 0, head_dim = 0, head_dim_v = 0;
  double scale = 1.0;
  bool causal = false;
  bool bottom_right = false;
};

struct SdpaBwdParams : SdpaFwdParams {
  const void* dy = nullptr;
  void* dq = nullptr;
  void* dk = nullptr;
  void* dv = nullptr;
  Strides4 dy_st, dq_st, dk_st, dv_st;
  void* ds = nullptr;  // workspace: [B,H,Q,K] contiguous, accumulator dtype
};

Status forward(const SdpaFwdParams& p, int sm_count, void* stream);
Status backward(const SdpaBwdParams& p, int sm_count, void* stream);

}  // namespace baracuda::cuda_sdpa
