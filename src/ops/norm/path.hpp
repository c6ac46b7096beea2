// The norm plans' row layout and CUDA path choice, plain C++ (no CUDA
// headers), so that select() / sku() / sku_for() name exactly what the
// kernels run, and the CPU tests can check the choice without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/tensor.hpp"
#include "ops/norm/launch.hpp"

namespace baracuda::norm::detail {

// True when the last k axes of (shape, strides) are one contiguous run
// (unit stride once extent-1 axes are dropped): what the CUDA kernels need.
bool block_contiguous(const Dims& shape, int k, const int64_t* strides);

// The rows of a call over `shape` whose last k axes are normalized.
// `lead[k]` are operand k's strides over the leading axes (rank - k of them;
// null: operand absent, stride 0); the leading axes are coalesced across
// every operand.
cuda::Rows make_rows(const Dims& shape, int k, const int64_t* const* lead);

// Operand strides over the leading axes of a [rows] stats view of stride s:
// the row-major flattening of the leading axes (written to out[0..lead_rank)).
void stats_lead_strides(const Dims& shape, int k, int64_t s, int64_t* out);

// Fills l.path, vec, lane_elems, block_threads and chunks from l.rows, the
// data pointers (alignment), l.dtype, l.backward, l.need_* and l.arch /
// l.sm_count:
//   no dx (backward)                   -> None
//   len <= kWarpMaxLen                 -> Warp (lane_elems: the least of kWarpLaneElems covering len)
//   staged row(s) fit row_staging_limit(arch) -> Block (1024 threads above 48 KiB, else 256)
//   else                               -> Long (1024 threads)
// vec: the used row operands' and weight / bias pointers 16-byte aligned, their
// row strides and len multiples of a 16-byte vector (Warp: lane_elems too).
// dweight / dbias (colsum.cuh): fused into the Block path's dx kernel
// (fused_colsum; not f64) when each thread owns at most kFusedColsPerThread
// columns: chunks = the blocks that fit the SMs at once (registers:
// fused_blocks_per_sm; staging: two rows' worth when they fit, whatever the
// alignment, so the workspace never depends on it), at most rows. prefetch
// (double-buffered staging) when vec and two rows fit.
// Otherwise colsum_partials_kernel: col_vec when dy's and x's rows allow
// 16-byte vectors; chunks: about 8 blocks per SM over the column tiles of
// 32 vectors, each chunk at least kMinChunkRows rows.
void choose_path(cuda::Launch& l);

// "warp", "block.vec16", "long", "warp.vec16+colsum", "block.vec16+colsum.fused", "colsum", ...
std::string variant_of(const cuda::Launch& l);

// Bytes of workspace the launch needs (the column partials: chunks x len x 2
// accumulators, + 16 for aligning any workspace pointer up to 16 bytes).
size_t workspace_of(const cuda::Launch& l);

}  // namespace baracuda::norm::detail
