// The norm plans' row layout and CUDA path choice (path.hpp): plain C++,
// shared by select() (contiguous views), sku_for() and run() (the actual views).
#include "ops/norm/path.hpp"

#include <algorithm>
#include <cstdint>

#include "core/align.hpp"
#include "core/layout.hpp"
#include "core/smem_limit.hpp"

namespace baracuda::norm::detail {

using cuda::Path;

bool block_contiguous(const Dims& shape, int k, const int64_t* strides) {
  int64_t expect = 1;
  for (int d = shape.rank - 1; d >= shape.rank - k; --d) {
    if (shape[d] == 1) continue;
    if (strides[d] != expect) return false;
    expect *= shape[d];
  }
  return true;
}

void stats_lead_strides(const Dims& shape, int k, int64_t s, int64_t* out) {
  int64_t m = s;
  for (int d = shape.rank - k - 1; d >= 0; --d) {
    out[d] = m;
    m *= shape[d];
  }
}

cuda::Rows make_rows(const Dims& shape_in, int k, const int64_t* const* lead) {
  cuda::Rows r;
  const int lead_rank = shape_in.rank - k;
  r.len = 1;
  for (int d = lead_rank; d < shape_in.rank; ++d) r.len *= shape_in[d];
  int64_t shape[kMaxRank] = {};
  int64_t strides[cuda::kOperands][kMaxRank] = {};
  r.rows = 1;
  for (int d = 0; d < lead_rank; ++d) {
    shape[d] = shape_in[d];
    r.rows *= shape[d];
    for (int o = 0; o < cuda::kOperands; ++o) strides[o][d] = lead[o] ? lead[o][d] : 0;
  }
  if (r.rows == 0 || r.len == 0) return r;
  int64_t* sp[cuda::kOperands];
  for (int o = 0; o < cuda::kOperands; ++o) sp[o] = strides[o];
  const int n = baracuda::detail::coalesce_dims(lead_rank, shape, cuda::kOperands, sp);
  r.outer_rank = n;
  for (int d = 0; d < n; ++d) {
    r.outer_shape[d] = shape[d];
    for (int o = 0; o < cuda::kOperands; ++o) r.outer_stride[o][d] = strides[o][d];
  }
  return r;
}

void choose_path(cuda::Launch& l) {
  const cuda::Rows& r = l.rows;
  const int64_t esize = static_cast<int64_t>(dtype_size(l.dtype));
  const int64_t v = 16 / esize;
  l.path = Path::None;
  l.vec = false;
  l.lane_elems = 0;
  l.block_threads = 0;
  l.chunks = 0;
  l.fused_colsum = false;
  l.prefetch = false;
  l.regs_vecs = 0;
  l.col_vec = false;
  const bool colsum = l.backward && (l.need_dweight || l.need_dbias);
  if (colsum) {
    // colsum_partials_kernel: 16-byte vectors when dy's and x's rows allow;
    // about 8 blocks (of kColThreads) per SM over the column tiles.
    bool cv = r.len % v == 0;
    for (int o : {int{cuda::kIn1}, int{cuda::kX}}) {
      if (!l.op[o]) continue;
      cv = cv && baracuda::detail::is_aligned16(l.op[o]);
      for (int d = 0; d < r.outer_rank; ++d) cv = cv && r.outer_stride[o][d] % v == 0;
    }
    l.col_vec = cv;
    const int64_t tile_cols = 32 * (cv ? v : 1);
    const int64_t tiles = (r.len + tile_cols - 1) / tile_cols;
    const int64_t want = std::max<int64_t>(1, (int64_t{std::max(l.sm_count, 1)} * 8 + tiles - 1) / tiles);
    const int64_t most = std::max<int64_t>(1, (r.rows + cuda::kMinChunkRows - 1) / cuda::kMinChunkRows);
    l.chunks = std::min(want, most);
  }
  if (l.backward && !l.need_dx) return;
  bool vec = r.len % v == 0 && baracuda::detail::is_aligned16(l.weight) && baracuda::detail::is_aligned16(l.bias);
  for (int o = 0; o < cuda::kRowTensors; ++o) {
    if (!l.op[o]) continue;
    vec = vec && baracuda::detail::is_aligned16(l.op[o]);
    for (int d = 0; d < r.outer_rank; ++d) vec = vec && r.outer_stride[o][d] % v == 0;
  }
  // (Rows beyond 2^40 elements cannot be staged; the bound keeps the product from overflowing.)
  const int64_t row_bytes =
      r.len > (int64_t{1} << 40) ? INT64_MAX : (r.len * esize + 15) / 16 * 16 * (l.backward ? 2 : 1);
  if (r.len <= cuda::kWarpMaxLen) {
    l.path = Path::Warp;
    for (int e : cuda::kWarpLaneElems)
      if (32 * int64_t{e} >= r.len) {
        l.lane_elems = e;
        break;
      }
    l.vec = vec && l.lane_elems % v == 0;
  } else if (row_bytes <= baracuda::detail::row_staging_limit(l.arch)) {
    l.path = Path::Block;
    l.block_threads = row_bytes > 48 * 1024 ? 1024 : 256;
    l.vec = vec;
    // Forward: double-buffered staging (x, and the residual when there is
    // one) when two rows fit.
    if (!l.backward)
      l.prefetch = vec && 2 * row_bytes * (l.op[cuda::kIn3] ? 2 : 1) <= baracuda::detail::row_staging_limit(l.arch);
    // Forward rows of up to kRegsMaxVecs vectors per thread of 256 stay in
    // registers (regs_rows.cuh) instead of staging (f64 keeps the staged path).
    const int64_t nvec = r.len / v;
    if (!l.backward && vec && esize < 8 && nvec <= 256 * cuda::kRegsMaxVecs) {
      l.regs_vecs = nvec <= 256 ? 1 : 2;
      l.prefetch = false;
      l.block_threads = 256;
    }
    // Fused column sums: each thread's columns fit kFusedColsPerThread
    // (registers); one chunk per block of a grid of the blocks that fit the
    // SMs at once (threads and staging), so each block's partials cover many
    // rows. f64 keeps the separate kernel (fewer instantiations).
    const int64_t w = l.vec ? v : 1;
    const int64_t per_thread = (r.len / w + l.block_threads - 1) / l.block_threads * w;
    if (colsum && l.dtype != DType::F64 && r.rows > 0 && per_thread <= cuda::kFusedColsPerThread) {
      // Double-buffered staging (prefetch) when two rows' x and dy fit. The
      // staging bound assumes the double buffer whenever it fits, aligned or
      // not, so unaligned views never need more chunks (workspace) than the
      // aligned ones select() sized.
      const int64_t limit = baracuda::detail::row_staging_limit(l.arch);
      const bool two_rows = 2 * row_bytes <= limit;
      l.prefetch = l.vec && two_rows;
      const int64_t by_threads = cuda::fused_blocks_per_sm(esize, l.block_threads, l.prefetch);
      const int64_t by_smem = std::max<int64_t>(1, limit / (row_bytes * (two_rows ? 2 : 1)));
      l.fused_colsum = true;
      l.chunks = std::min(r.rows, int64_t{std::max(l.sm_count, 1)} * std::min(by_threads, by_smem));
    }
  } else {
    l.path = Path::Long;
    l.block_threads = 1024;
    l.vec = vec;
  }
}

std::string variant_of(const cuda::Launch& l) {
  std::string s;
  switch (l.path) {
    case Path::Warp: s = "warp"; break;
    case Path::Block: s = "block"; break;
    case Path::Long: s = "long"; break;
    case Path::None: break;
  }
  if (l.vec) s += ".vec16";
  if (l.regs_vecs > 0) s += ".regs";
  if (l.prefetch) s += ".prefetch";
  if (l.chunks > 0) s += s.empty() ? "colsum" : l.fused_colsum ? "+colsum.fused" : "+colsum";
  return s;
}

size_t workspace_of(const cuda::Launch& l) {
  if (l.chunks == 0) return 0;
  const size_t acc = l.dtype == DType::F64 ? 8 : 4;
  return static_cast<size_t>(l.chunks) * static_cast<size_t>(l.rows.len) * 2 * acc + 16;
}

}  // namespace baracuda::norm::detail
