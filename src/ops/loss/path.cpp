// The cross-entropy plans' CUDA path choice and workspace layout (path.hpp).
#include "ops/loss/path.hpp"

#include "core/align.hpp"

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

}  // namespace baracuda::loss::detail
