// The softmax plans' row layout and CUDA path choice, plain C++ (no CUDA
// headers), so that select() / sku() / sku_for() name exactly what the kernels
// run, and the CPU tests can check the choice without a GPU.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "baracuda/core/tensor.hpp"
#include "ops/softmax/launch.hpp"

namespace baracuda::softmax::detail {

// The rows of a call over `shape` reduced along `axis` (resolved; 0 for rank
// 0): `views[k]` are operand k's strides (out, in0[, in1]; n_views of them);
// the other axes are coalesced across all operands.
cuda::Rows make_rows(const Dims& shape, int axis, const int64_t* const* views, int n_views);

// Fills l.path, vec, lane_elems, block_threads and chunks from l.rows, the
// operands' data pointers `ptrs` (alignment), l.dtype, l.backward, l.log,
// l.arch and l.sm_count:
//   fast (every operand's axis unit-stride, at most one outer dim):
//     len <= kWarpMaxLen (not f64)                         -> Warp
//     staged rows (block_staged_rows: softmax backward 2,
//     else 1) fit block_smem_limit(arch), and not
//     (len >= kSplitMinLen with fewer rows than SMs)        -> Block (128 .. 1024 threads; f64: 1024)
//     else                                                 -> Split (ceil(len / kSplitChunk) chunks)
//   otherwise                                              -> Generic
// f64 has no short-row kernels (launch.hpp: has_short_row_kernels): its rows
// of up to kWarpMaxLen take the block path with 1024 threads.
// vec: every pointer 16-byte aligned, row strides and len multiples of a
// 16-byte vector (Warp: and the lane's element count too).
void choose_path(cuda::Launch& l, int n_views, const void* const* ptrs);

// "warp", "block.vec16", "split.vec16", "generic", ...
std::string variant_of(const cuda::Launch& l);

// Bytes of workspace the launch needs (the split path's partials: rows x
// chunks x kPartialBytes, + 16 for aligning any workspace pointer up to 16 bytes).
size_t workspace_of(const cuda::Launch& l);

}  // namespace baracuda::softmax::detail
