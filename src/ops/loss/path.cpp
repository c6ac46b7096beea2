// The cross-entropy plans' CUDA path choice and workspace layout (path.hpp).
#include "ops/loss/path.hpp"

#include <algorithm>

#include "core/align.hpp"
#include "core/error.hpp"

namespace baracuda::loss::detail {

using cuda::Mode;
using cuda::Path;

void choose_path(cuda::Launch& l) {
  const int64_t esize = static_cast<int64_t>(dtype_size(l.dtype));
  const int64_t v = 16 / esize;
  bool vec = l.classes % v == 0;
  auto operand = [&](const void* p, int64_t row_stride) {
    vec = vec && baracuda::detail::is_aligned16(p) && (l.rows <= 1 || row_stride % v == 0);
  };
  operand(l.logits, l.logits_rs);
  if (l.mode != Mode::Forward) operand(l.dlogits, l.dlogits_rs);
  if (l.probs) operand(l.target, l.target_s);
  l.vec = vec;
  l.stage = false;
  l.chunks = 0;
  const int64_t vectors = (l.classes * esize + 15) / 16;
  l.threads = vectors <= cuda::kSmallRowVectors ? cuda::kSmallThreads : cuda::kLargeThreads;
  if (l.classes >= cuda::kSplitMinLen && l.rows < l.sm_count) {
    l.path = Path::Split;
    l.chunks = (l.classes + cuda::kSplitChunk - 1) / cuda::kSplitChunk;
    return;
  }
  l.path = Path::Block;
  l.stage = l.mode == Mode::Fused && vectors * 16 <= cuda::stage_limit(l.arch);
}

std::string variant_of(const cuda::Launch& l) {
  return std::string(l.path == Path::Split ? "split" : "block") + (l.vec ? ".vec16" : "");
}

WorkspaceLayout workspace_layout(const cuda::Launch& l) {
  WorkspaceLayout w;
  int64_t at = 0;
  if (l.reduction == LossReduction::Mean) {
    w.divisor = at;
    at += 16;
  }
  if (l.mode != Mode::Backward && l.reduction != LossReduction::None) {
    w.row_loss = at;
    at += (l.rows * 8 + 15) / 16 * 16;
  }
  if (l.path == Path::Split && l.rows > 0) {
    w.partials = at;
    at += l.rows * l.chunks * cuda::kPartialBytes + l.rows * 8;
  }
  w.bytes = at > 0 ? static_cast<size_t>(at + 16) : 0;
  return w;
}

Result<LinearCeChunks> linear_ce_chunks(const char* plan, int64_t N, int64_t V, size_t esize, size_t limit,
                                        int64_t chunk_rows, size_t fixed) {
  const size_t per_row = static_cast<size_t>(V) * esize;
  LinearCeChunks c;
  auto finish = [&](int64_t rows) {
    c.rows = rows;
    c.chunks = rows > 0 ? (N + rows - 1) / rows : 0;
    return c;
  };
  if (chunk_rows > 0) {
    const int64_t n = std::min(chunk_rows, N);
    if (limit > 0 && fixed + static_cast<size_t>(n) * per_row > limit)
      return baracuda::detail::invalid(plan, "chunk_rows ", chunk_rows, " needs ", fixed + static_cast<size_t>(n) * per_row,
                                       " workspace bytes, over workspace_limit ", limit);
    return finish(n);
  }
  if (limit == 0) return finish(std::min(N, kDefaultChunkRows));
  const int64_t n_max = limit > fixed ? static_cast<int64_t>((limit - fixed) / per_row) : 0;
  if (n_max < 1)
    return baracuda::detail::invalid(plan, "workspace_limit ", limit, " is below the minimum ", fixed + per_row,
                                     " bytes (one row of logits and the fixed scratch)");
  if (n_max >= N) return finish(N);
  c.granule = n_max >= kChunkGranuleCoarse ? kChunkGranuleCoarse : n_max >= kChunkGranule ? kChunkGranule : 1;
  const int64_t g = c.granule;
  const int64_t k = (N + n_max / g * g - 1) / (n_max / g * g);
  const int64_t balanced = (N + k - 1) / k;
  return finish((balanced + g - 1) / g * g);
}

}  // namespace baracuda::loss::detail
