// Interface between SdpaPlan / SdpaBackwardPlan (plain C++) and the CUDA
// materialized-attention kernels (sdpa_*.cu). No CUDA headers: the stream is void*.
//
// Every tensor is a 4-d view [b, h, i, d] (data + element strides, any
// strides, including 0 for the mask); k/v use kv head hk = h / (heads / kv_heads).
// probs and the ds workspace hold `acc` elements (float for f16/bf16/f32 inputs,
// double for f64). Semantics: include/baracuda/ops/attention.hpp.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"
#include "core/strided_view.hpp"

namespace baracuda::attention::cuda::sdpa {

using baracuda::detail::StridedView;

struct SdpaFwdParams {
  DType dtype = DType::F32;
  StridedView<4> q, k, v;
  StridedView<4, const float*> mask;  // [b, h, query row, key column]; data null = no mask
  StridedView<4, void*> y;
  StridedView<4, void*> probs;        // [b, h, row, column], accumulator dtype
  int batch = 0, heads = 0, kv_heads = 0;
  int64_t q_len = 0, kv_len = 0, head_dim = 0, head_dim_v = 0;
  double scale = 1.0;
  bool causal = false;
  bool bottom_right = false;
};

struct SdpaBwdParams : SdpaFwdParams {
  StridedView<4> dy;
  StridedView<4, void*> dq, dk, dv;
  void* ds = nullptr;  // workspace: [B,H,Q,K] contiguous, accumulator dtype
};

Status forward(const SdpaFwdParams& p, int sm_count, void* stream);
Status backward(const SdpaBwdParams& p, int sm_count, void* stream);

}  // namespace baracuda::attention::cuda::sdpa
