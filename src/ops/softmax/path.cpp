// The softmax plans' row layout and CUDA path choice (path.hpp): plain C++,
// shared by select() (contiguous views), sku_for() and run() (the actual views).
#include "ops/softmax/path.hpp"

#include <cstdint>

#include "core/align.hpp"
#include "core/layout.hpp"

namespace baracuda::softmax::detail {

using cuda::Path;

cuda::Rows make_rows(const Dims& shape_in, int axis, const int64_t* const* views, int n_views) {
  cuda::Rows r;
  const int rank = shape_in.rank;
  r.len = rank == 0 ? 1 : shape_in[axis];
  int64_t shape[kMaxRank] = {};
  int64_t strides[cuda::kOperands][kMaxRank] = {};
  int n = 0;
  for (int d = 0; d < rank; ++d) {
    if (d == axis) continue;
    shape[n] = shape_in[d];
    for (int k = 0; k < n_views; ++k) strides[k][n] = views[k][d];
    ++n;
  }
  r.rows = 1;
  for (int d = 0; d < n; ++d) r.rows *= shape[d];
  for (int k = 0; k < n_views; ++k) r.axis_stride[k] = rank == 0 ? 1 : views[k][axis];
  if (r.rows == 0 || r.len == 0) return r;
  int64_t* sp[cuda::kOperands] = {strides[0], strides[1], strides[2]};
  n = baracuda::detail::coalesce_dims(n, shape, n_views, sp);
  r.outer_rank = n;
  for (int d = 0; d < n; ++d) {
    r.outer_shape[d] = shape[d];
    for (int k = 0; k < n_views; ++k) r.outer_stride[k][d] = strides[k][d];
  }
  return r;
}

void choose_path(cuda::Launch& l, int n_views, const void* const* ptrs) {
  const cuda::Rows& r = l.rows;
  const int64_t esize = static_cast<int64_t>(dtype_size(l.dtype));
  const int64_t v = 16 / esize;
  bool fast = r.outer_rank <= 1;
  for (int k = 0; k < n_views; ++k) fast = fast && (r.len == 1 || r.axis_stride[k] == 1);
  l.vec = false;
  l.lane_elems = 0;
  l.block_threads = 0;
  l.chunks = 0;
  if (!fast) {
    l.path = Path::Generic;
    return;
  }
  bool vec = r.len % v == 0;
  for (int k = 0; k < n_views; ++k) {
    vec = vec && baracuda::detail::is_aligned16(ptrs[k]);
    if (r.outer_rank == 1) vec = vec && r.outer_stride[k][0] % v == 0;
  }
  // The block path's staging: one or two rows, each padded to 16 bytes.
  // (Rows beyond 2^40 elements cannot be staged; the bound keeps the product from overflowing.)
  const int64_t row_bytes = r.len > (int64_t{1} << 40)
                                ? INT64_MAX
                                : (r.len * esize + 15) / 16 * 16 * cuda::block_staged_rows(l.backward, l.log);
  // Without the short-row kernels (f64), rows of up to kWarpMaxLen take the
  // block path with 1024 threads (they always fit its staging).
  const bool short_kernels = cuda::has_short_row_kernels(l.dtype);
  if (r.len <= cuda::kWarpMaxLen && short_kernels) {
    l.path = Path::Warp;
    for (int e : cuda::kWarpLaneElems)
      if (32 * int64_t{e} >= r.len) {
        l.lane_elems = e;
        break;
      }
    l.vec = vec && l.lane_elems % v == 0;
  } else if (row_bytes <= cuda::block_smem_limit(l.arch) && !(r.len >= cuda::kSplitMinLen && r.rows < l.sm_count)) {
    l.path = Path::Block;
    // Enough threads that each holds at most kBlockVecsPerThread 16-byte
    // vectors of the row (more rows in flight per SM for short rows; measured
    // on the H100: 256 threads on 4096-element bf16 rows held 55 % of the
    // copy bandwidth), 128 .. 1024.
    const int64_t vectors = (r.len * esize + 15) / 16;
    int threads = short_kernels ? 128 : 1024;
    while (threads < 1024 && threads * cuda::kBlockVecsPerThread < vectors) threads *= 2;
    l.block_threads = threads;
    l.vec = vec;
  } else {
    l.path = Path::Split;
    l.chunks = (r.len + cuda::kSplitChunk - 1) / cuda::kSplitChunk;
    l.vec = vec;
  }
}

std::string variant_of(const cuda::Launch& l) {
  const char* base = l.path == Path::Warp ? "warp" : l.path == Path::Block ? "block" : l.path == Path::Split ? "split" : "generic";
  return std::string(base) + (l.vec ? ".vec16" : "");
}

size_t workspace_of(const cuda::Launch& l) {
  // + 16: the launch aligns the workspace pointer up to 16 bytes (any pointer is accepted).
  return l.path == Path::Split ? static_cast<size_t>(l.rows.rows * l.chunks * cuda::kPartialBytes + 16) : 0;
}

}  // namespace baracuda::softmax::detail
