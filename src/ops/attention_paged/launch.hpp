// Interface between the paged-KV plans (plain C++) and their CUDA kernels
// (src/ops/attention_paged/cuda/paged_launch.cu). The split choice is plain
// C++ (select() sizes the workspace from it).
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "baracuda/core/status.hpp"
#include "baracuda/ops/attention_paged.hpp"
#include "core/strided_view.hpp"

namespace baracuda::attention_paged::cuda {

inline constexpr int kTileKeys = 32;    // keys per shared-memory tile
inline constexpr int kMaxRowBlock = 16;  // query rows (group heads x Lq) per CTA
inline constexpr int kMaxSplits = 64;

struct AttnLaunch {
  PagedAttentionDescriptor desc;  // validated, scale resolved
  baracuda::detail::StridedView<4> q;           // [B, Hq, Lq, D]
  baracuda::detail::StridedView<4> k, v;        // [page, slot, Hkv, D]
  baracuda::detail::StridedView<2> table;       // [B, max_pages]
  baracuda::detail::StridedView<1> lens;        // [B]
  baracuda::detail::StridedView<4, void*> out;  // [B, Hq, Lq, D]
  baracuda::detail::StridedView<3, void*> lse;  // [B, Hq, Lq] (data null when not saved)
  int splits = 1;
  int row_block = kMaxRowBlock;
  bool few_rows = true;       // the decode P.V path may be used (few_rows_path)
  void* workspace = nullptr;  // partial outputs f32 [splits][B*Hq*Lq][D], then (m, l) f32 [splits][B*Hq*Lq][2]
  void* stream = nullptr;
};

struct AppendLaunch {
  PagedKvAppendDescriptor desc;
  baracuda::detail::StridedView<4> k_new, v_new;          // [B, Hkv, Lnew, D]
  baracuda::detail::StridedView<2> table;
  baracuda::detail::StridedView<1> lens;
  baracuda::detail::StridedView<4, void*> k, v;          // [page, slot, Hkv, D]
  void* stream = nullptr;
  int sm_count = 0;
};

// Query rows of one (batch, kv head): group * Lq; CTAs split them in blocks of
// at most kMaxRowBlock rows.
inline int64_t rows_per_kv_head(const PagedAttentionDescriptor& d) {
  return d.kv_heads > 0 ? (d.heads / d.kv_heads) * d.q_len : 0;
}
inline int row_block_for(const PagedAttentionDescriptor& d) {
  return static_cast<int>(std::clamp<int64_t>(rows_per_kv_head(d), 1, kMaxRowBlock));
}
inline int64_t row_blocks(const PagedAttentionDescriptor& d) {
  const int64_t r = rows_per_kv_head(d), rb = row_block_for(d);
  return (r + rb - 1) / rb;
}

// Splits of the key range: the fewest that give >= 3 CTAs per SM (all of them
// resident at once: ~5 fit per SM at head dim 128 in 16-bit, so no tail wave),
// each split at least 8 tiles (256 keys) long, at most kMaxSplits.
inline int splits_for(const PagedAttentionDescriptor& d, int sm_count) {
  const int64_t ctas = d.batch * d.kv_heads * row_blocks(d);
  const int64_t max_keys = d.max_pages * d.page_size;
  if (ctas <= 0 || max_keys <= 0) return 1;
  const int64_t target = 3 * static_cast<int64_t>(std::max(sm_count, 1));
  int64_t s = (target + ctas - 1) / ctas;
  const int64_t by_len = std::max<int64_t>(1, max_keys / (8 * kTileKeys));
  s = std::clamp<int64_t>(s, 1, std::min<int64_t>(by_len, kMaxSplits));
  return static_cast<int>(s);
}
// Keys per split: a multiple of the tile.
inline int64_t keys_per_split(const PagedAttentionDescriptor& d, int splits) {
  const int64_t max_keys = d.max_pages * d.page_size;
  const int64_t per = (max_keys + splits - 1) / splits;
  return std::max<int64_t>(kTileKeys, (per + kTileKeys - 1) / kTileKeys * kTileKeys);
}
inline size_t workspace_bytes(const PagedAttentionDescriptor& d, int splits) {
  const int64_t rows = d.batch * d.heads * d.q_len;
  return static_cast<size_t>(splits) * static_cast<size_t>(rows) * static_cast<size_t>(d.head_dim + 2) * 4u;
}
// The decode P.V path ((chunk, key group) threads over all rows): at most 4
// rows per kv head and a power-of-two count of 16-byte chunks in [4, 32].
inline bool few_rows_path(const PagedAttentionDescriptor& d) {
  const int64_t vec = static_cast<int64_t>(16 / dtype_size(d.dtype));
  const int64_t dc = d.head_dim / vec;
  return rows_per_kv_head(d) <= 4 && dc >= 4 && dc <= 32 && (dc & (dc - 1)) == 0;
}
inline std::string variant_for(const PagedAttentionDescriptor& d, int splits, bool few_rows) {
  return "splitkv.s" + std::to_string(splits) + ".rb" + std::to_string(row_block_for(d)) +
         (few_rows && few_rows_path(d) ? ".pvrows" : ".pvitems");
}

Status launch_attention(const AttnLaunch& l);
Status launch_append(const AppendLaunch& l);

}  // namespace baracuda::attention_paged::cuda
