// Interface between the RoPE plans (plain C++) and the CUDA kernel
// (src/ops/rope/cuda/*.cu). The launch is only compiled in when
// BARACUDA_WITH_CUDA; the path choice below is plain C++ (the plans name it
// in sku().variant).
#pragma once
#include <cstdint>
#include <string>

#include "baracuda/core/status.hpp"
#include "baracuda/ops/rope.hpp"
#include "core/align.hpp"
#include "core/strided_view.hpp"

namespace baracuda::rope::cuda {

struct Launch {
  RopeDescriptor desc;  // validated, rotary_dim resolved
  bool backward = false;
  // Logical [B, heads, S, D] views (data + element strides).
  baracuda::detail::StridedView<4> x[2];         // inputs: q (dy_q), k (dy_k); x[1] unused when heads[1] == 0
  baracuda::detail::StridedView<4, void*> y[2];  // outputs: q_out (dq), k_out (dk); y[i].data may equal x[i].data (in place)
  bool in_place[2] = {false, false};  // y[i] is exactly x[i] (pass-through dims are then not rewritten)
  int64_t heads[2] = {0, 0};          // H, and Hk or 0 without k
  const void* positions = nullptr;
  int64_t pos_sb = 0, pos_ss = 0;     // element strides of positions over b (PerBatch) and s
  const void* cos = nullptr;
  const void* sin = nullptr;
  int64_t cos_sp = 0, cos_si = 0, sin_sp = 0, sin_si = 0;  // element strides over (position, i)
  void* stream = nullptr;             // cudaStream_t
  int sm_count = 0;
};

// Elements per 16-byte vector of the op dtype.
inline int vec_elems(DType t) { return static_cast<int>(16 / dtype_size(t)); }

// True when the head-dim split allows 16-byte pieces (independent of the views).
inline bool dims_allow_vec(const RopeDescriptor& d) {
  const int64_t v = vec_elems(d.dtype);
  if (d.head_dim % v != 0) return false;
  return d.pairs == RopePairs::Interleaved ? d.rotary_dim % v == 0 : (d.rotary_dim / 2) % v == 0;
}

// cos/sin of one token's R/2 pairs fit the kernel's 16 KiB shared-memory
// table row (R/2 <= 2048 in f32/f16/bf16, 1024 in f64). Otherwise the strided
// path computes cos/sin per pair ("*.strided.direct").
inline bool table_fits(const RopeDescriptor& d) {
  const int64_t entry = d.dtype == DType::F64 ? 16 : 8;  // (cos, sin) in f64 / f32
  return (d.rotary_dim / 2) * entry <= 16 * 1024;
}

// "interleaved.vec16", "halfsplit.strided", ...: the path a contiguous,
// 16-byte aligned problem of this descriptor takes.
inline std::string variant_for(const RopeDescriptor& d) {
  if (!table_fits(d)) return std::string(rope_pairs_name(d.pairs)) + ".strided.direct";
  return std::string(rope_pairs_name(d.pairs)) + (dims_allow_vec(d) ? ".vec16" : ".strided");
}

// The vector path's view rule: every view of a side with heads: unit stride along D, 16-byte aligned rows.
inline bool views_allow_vec(const Launch& l) {
  const int64_t v = vec_elems(l.desc.dtype);
  const RopeDescriptor& d = l.desc;
  auto ok = [&](const auto& x, int64_t heads) {
    if (x.stride[3] != 1 || !baracuda::detail::is_aligned16(x.data)) return false;
    if (d.batch > 1 && x.stride[0] % v != 0) return false;
    if (heads > 1 && x.stride[1] % v != 0) return false;
    if (d.seq_len > 1 && x.stride[2] % v != 0) return false;
    return true;
  };
  for (int w = 0; w < 2; ++w)
    if (l.heads[w] > 0 && !(ok(l.x[w], l.heads[w]) && ok(l.y[w], l.heads[w]))) return false;
  return true;
}

// The path launch(l) takes for these actual views (RopePlan::sku_for).
inline std::string variant_for(const Launch& l) {
  if (!table_fits(l.desc)) return variant_for(l.desc);
  return std::string(rope_pairs_name(l.desc.pairs)) + (dims_allow_vec(l.desc) && views_allow_vec(l) ? ".vec16" : ".strided");
}

Status launch(const Launch& l);

}  // namespace baracuda::rope::cuda
