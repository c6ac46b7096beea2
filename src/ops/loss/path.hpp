// The cross-entropy plans' CUDA path choice and workspace layout, plain C++
// (no CUDA headers), so that select() / sku() / sku_for() name exactly what
// the kernels run, and the CPU tests can check the choice without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "ops/loss/launch.hpp"

namespace baracuda::loss::detail {

// Fills l.path, vec, stage, threads and chunks from l.rows, l.classes,
// l.dtype, l.mode, l.arch, l.sm_count and the pointers / row strides of
// logits, dlogits (Backward / Fused) and probability targets:
//   classes >= kSplitMinLen and rows < SMs      -> Split (ceil(classes / kSplitChunk) chunks)
//   otherwise                                    -> Block (kSmallThreads up to kSmallRowVectors
//                                                   16-byte vectors per row, else kLargeThreads;
//                                                   Fused: stage the row when it fits stage_limit)
// vec: every such pointer 16-byte aligned, row strides and classes multiples
// of a 16-byte vector.
void choose_path(cuda::Launch& l);

// "block", "block.vec16", "split.vec16", ...
std::string variant_of(const cuda::Launch& l);

// Byte offsets of the workspace's parts from its 16-byte aligned start
// (-1: not used) and the bytes to ask for (+ 16 to align any pointer up).
struct WorkspaceLayout {
  int64_t divisor = -1, row_loss = -1, partials = -1;
  size_t bytes = 0;
};
WorkspaceLayout workspace_layout(const cuda::Launch& l);

// FusedLinearCrossEntropyPlan's chunk rule: rows per chunk for N rows of V
// classes of `esize` bytes, a workspace `limit` (0: none) and the workspace
// bytes that do not grow with the chunk, `fixed` (cross-entropy scratch,
// inner plans, alignment pads):
//   chunk_rows > 0: min(chunk_rows, N); InvalidProblem when limit > 0 and
//                   fixed + rows * V * esize exceeds it
//   limit == 0:     min(N, kDefaultChunkRows)
//   else:           n_max = (limit - fixed) / (V * esize) (InvalidProblem below 1,
//                   naming the minimum); N when n_max >= N; else the chunk
//                   count k for the largest multiple of the granule (512 rows
//                   when n_max >= 512, 128 when n_max >= 128, else 1) not
//                   above n_max, and the balanced chunk ceil(N / k) rounded
//                   up to the granule. The coarse granule keeps the dH GEMM
//                   ([rows, V] x [V, D]) off a bad tile-wave count: measured
//                   at (8192, 4096, 128256) bf16 on the H100, 1536-row chunks
//                   40.7 ms against 41.8 ms for 1664 (the old 128 granule).
// chunks = ceil(N / rows) (0 for N = 0).
inline constexpr int64_t kDefaultChunkRows = 2048;
inline constexpr int64_t kChunkGranule = 128;
inline constexpr int64_t kChunkGranuleCoarse = 512;
struct LinearCeChunks {
  int64_t rows = 0, chunks = 0, granule = 1;
};
Result<LinearCeChunks> linear_ce_chunks(const char* plan, int64_t N, int64_t V, size_t esize, size_t limit,
                                        int64_t chunk_rows, size_t fixed);

}  // namespace baracuda::loss::detail
