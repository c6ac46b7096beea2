// The CUDA path choice of the norm plans (src/ops/norm/path.hpp), checked on
// the CPU: it is plain C++, and select() / sku() / sku_for() / run() all go
// through it, so these tests pin which kernel a layout reaches, the row
// layout and the column-sum workspace without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "baracuda/baracuda.hpp"
#include "ops/norm/path.hpp"

using namespace baracuda;
using baracuda::norm::cuda::Launch;
using baracuda::norm::cuda::Path;
namespace nc = baracuda::norm::cuda;

namespace {

alignas(16) const char kAligned[64] = {};

// A launch over contiguous views of `shape` (last k axes normalized), all
// four row operands and both stats present.
Launch choose(DType t, const Dims& shape, int k, bool backward, bool weights_grad = false, int arch = 90,
              int sm_count = 132, const void* ptr = kAligned, const Dims* row_strides = nullptr) {
  Launch l;
  l.dtype = t;
  l.backward = backward;
  l.need_dx = true;
  l.need_dweight = l.need_dbias = weights_grad;
  l.arch = arch;
  l.sm_count = sm_count;
  const Dims c = row_strides ? *row_strides : contiguous_strides(shape);
  int64_t stats[kMaxRank] = {};
  norm::detail::stats_lead_strides(shape, k, 1, stats);
  const int64_t* lead[nc::kOperands] = {c.begin(), c.begin(), c.begin(), c.begin(), stats, stats};
  l.rows = norm::detail::make_rows(shape, k, lead);
  for (int o = 0; o < nc::kOperands; ++o) l.op[o] = const_cast<void*>(o < nc::kRowTensors ? ptr : kAligned);
  l.weight = kAligned;
  norm::detail::choose_path(l);
  return l;
}

std::string variant(DType t, const Dims& shape, bool backward = false, int arch = 90) {
  return norm::detail::variant_of(choose(t, shape, 1, backward, false, arch));
}

TEST(NormPath, ForwardByRowLength) {
  EXPECT_EQ(variant(DType::F32, {9, 1}), "warp");
  EXPECT_EQ(variant(DType::F32, {9, 7}), "warp");
  EXPECT_EQ(variant(DType::F32, {9, 33}), "warp");
  EXPECT_EQ(variant(DType::F32, {9, 768}), "warp.vec16");
  EXPECT_EQ(variant(DType::BF16, {9, 768}), "warp.vec16");
  EXPECT_EQ(variant(DType::F16, {9, 100}), "warp");  // 4 elements per lane: no 8-element vector
  EXPECT_EQ(variant(DType::F32, {9, 1024}), "warp.vec16");
  // Up to 2 vectors per thread of 256: the row in registers (regs_rows.cuh).
  EXPECT_EQ(variant(DType::F32, {9, 1028}), "block.vec16.regs");
  EXPECT_EQ(variant(DType::F32, {9, 2048}), "block.vec16.regs");
  EXPECT_EQ(variant(DType::BF16, {9, 4096}), "block.vec16.regs");
  EXPECT_EQ(choose(DType::BF16, {9, 4096}, 1, false, false, 90).regs_vecs, 2);
  EXPECT_EQ(choose(DType::F16, {9, 2048}, 1, false, false, 90).regs_vecs, 1);
  EXPECT_EQ(choose(DType::F32, {9, 2048}, 1, false, false, 90).regs_vecs, 2);
  EXPECT_EQ(variant(DType::BF16, {9, 4104}), "block.vec16.prefetch");  // 513 vectors: staged, two rows fit
  EXPECT_EQ(variant(DType::F64, {9, 2048}), "block.vec16.prefetch");   // f64 keeps the staged path
  EXPECT_EQ(variant(DType::F32, {9, 4096}), "block.vec16.prefetch");
  EXPECT_EQ(variant(DType::F32, {9, 2048}, true).find(".regs"), std::string::npos);  // forward only
  // (These views have a residual: x and the residual, double-buffered.)
  EXPECT_EQ(variant(DType::F32, {9, 12800}), "block.vec16.prefetch");  // 2 x 2 x 50 KiB
  EXPECT_EQ(variant(DType::F32, {9, 12804}), "block.vec16");
  EXPECT_EQ(variant(DType::F32, {9, 51200}), "block.vec16");  // 200 KiB staged
  EXPECT_EQ(variant(DType::F32, {9, 51204}), "long.vec16");
  EXPECT_EQ(variant(DType::BF16, {9, 65536}), "block.vec16");
  EXPECT_EQ(variant(DType::F64, {9, 65536}), "long.vec16");
  EXPECT_EQ(variant(DType::F32, {9, 4097}), "block");  // not a whole number of vectors
  // Smaller shared memory on other architectures.
  EXPECT_EQ(variant(DType::F32, {9, 16384}, false, 80), "block.vec16");
  EXPECT_EQ(variant(DType::F32, {9, 16384}, false, 75), "long.vec16");
}

TEST(NormPath, ForwardPrefetchWithoutAResidualStagesOneOperand) {
  for (const auto& [len, prefetch] : {std::pair<int64_t, bool>{25600, true}, {25604, false}}) {
    Launch l = choose(DType::F32, {9, len}, 1, false);
    l.op[nc::kIn3] = nullptr;  // no residual: x alone, double-buffered (2 x 100 KiB fits)
    norm::detail::choose_path(l);
    EXPECT_EQ(l.prefetch, prefetch) << len;
  }
}

TEST(NormPath, BackwardStagesTwoRowsAndAddsTheColumnSums) {
  EXPECT_EQ(variant(DType::F32, {9, 25600}, true), "block.vec16");  // x and dy: 200 KiB
  EXPECT_EQ(variant(DType::F32, {9, 25604}, true), "long.vec16");
  Launch l = choose(DType::BF16, {300, 768}, 1, true, true);
  EXPECT_EQ(norm::detail::variant_of(l), "warp.vec16+colsum");
  l.need_dx = false;
  norm::detail::choose_path(l);
  EXPECT_EQ(l.path, Path::None);
  EXPECT_EQ(norm::detail::variant_of(l), "colsum");
}

TEST(NormPath, ThreadsPerBlock) {
  EXPECT_EQ(choose(DType::F32, {9, 4096}, 1, false).block_threads, 256);          // 16 KiB staged
  EXPECT_EQ(choose(DType::F32, {9, 16384}, 1, false).block_threads, 1024);        // 64 KiB staged
  EXPECT_EQ(choose(DType::F32, {9, 1 << 20}, 1, false).block_threads, 1024);      // long
  EXPECT_EQ(choose(DType::F32, {9, 1000}, 1, false).lane_elems, 32);
  EXPECT_EQ(choose(DType::F32, {9, 100}, 1, false).lane_elems, 4);
  EXPECT_EQ(choose(DType::F32, {9, 129}, 1, false).lane_elems, 8);
}

TEST(NormPath, MisalignedViewsUseElements) {
  const Dims shape{9, 768};
  EXPECT_FALSE(choose(DType::F32, shape, 1, false, false, 90, 132, kAligned + 4).vec);  // data not 16-byte aligned
  const Dims padded{769, 1};
  EXPECT_FALSE(choose(DType::F32, shape, 1, false, false, 90, 132, kAligned, &padded).vec);  // row stride
  const Dims aligned{772, 1};
  EXPECT_TRUE(choose(DType::F32, shape, 1, false, false, 90, 132, kAligned, &aligned).vec);
}

TEST(NormPath, RowsCoalesceAcrossOperandsAndStats) {
  // [2, 3, 4, 5] with k = 2: rows over [2, 3] (contiguous: one dim), len 20.
  Launch l = choose(DType::F32, {2, 3, 4, 5}, 2, false);
  EXPECT_EQ(l.rows.len, 20);
  EXPECT_EQ(l.rows.rows, 6);
  EXPECT_EQ(l.rows.outer_rank, 1);
  EXPECT_EQ(l.rows.outer_stride[nc::kX][0], 20);
  EXPECT_EQ(l.rows.outer_stride[nc::kRstd][0], 1);
  // A padded middle axis does not coalesce with the outer one.
  const Dims strides{100, 30, 5, 1};  // rows of 20 at a stride of 30, groups of 3 at 100
  l = choose(DType::F32, {2, 3, 4, 5}, 2, false, false, 90, 132, kAligned, &strides);
  EXPECT_EQ(l.rows.outer_rank, 2);
  EXPECT_EQ(l.rows.outer_stride[nc::kX][0], 100);
  EXPECT_EQ(l.rows.outer_stride[nc::kX][1], 30);
  EXPECT_EQ(l.rows.outer_stride[nc::kMean][0], 3);  // stats stay row-major over [2, 3]
  EXPECT_EQ(l.rows.outer_stride[nc::kMean][1], 1);
  // k = rank: one row.
  l = choose(DType::F32, {4, 5}, 2, false);
  EXPECT_EQ(l.rows.rows, 1);
  EXPECT_EQ(l.rows.outer_rank, 0);
}

TEST(NormPath, BlockContiguity) {
  const Dims shape{3, 4, 5};
  EXPECT_TRUE(norm::detail::block_contiguous(shape, 2, contiguous_strides(shape).begin()));
  const Dims t{1, 3, 12};  // the last two axes transposed
  EXPECT_FALSE(norm::detail::block_contiguous(shape, 2, t.begin()));
  EXPECT_TRUE(norm::detail::block_contiguous(shape, 1, Dims{40, 5, 1}.begin()));  // padded rows
  const Dims ones{3, 1, 5};
  EXPECT_TRUE(norm::detail::block_contiguous(ones, 2, Dims{7, 99, 1}.begin()));  // extent-1 axes do not count
}

TEST(NormPath, ColumnSumChunksAndWorkspace) {
  // Separate column-sum kernel: 768 bf16 columns = 3 tiles of 32 16-byte
  // vectors; ~8 blocks per SM over them, at least 64 rows per chunk.
  Launch l = choose(DType::BF16, {8192, 768}, 1, true, true, 90, 132);
  EXPECT_FALSE(l.fused_colsum);
  EXPECT_TRUE(l.col_vec);
  EXPECT_EQ(l.chunks, 8192 / 64);
  EXPECT_EQ(choose(DType::BF16, {1 << 20, 768}, 1, true, true, 90, 132).chunks, (132 * 8 + 2) / 3);
  EXPECT_EQ(norm::detail::workspace_of(l), static_cast<size_t>(l.chunks) * 768 * 2 * 4 + 16);
  EXPECT_EQ(choose(DType::F32, {40, 768}, 1, true, true).chunks, 1);        // 40 rows: one chunk (>= 64 rows each)
  EXPECT_EQ(choose(DType::F32, {0, 768}, 1, true, true).chunks, 1);         // zero rows still write zeros
  EXPECT_EQ(choose(DType::F32, {4096, 1 << 20}, 1, true, true).chunks, 1);  // 8192 tiles already fill the GPU
  EXPECT_FALSE(choose(DType::F32, {64, 102}, 1, true, true).col_vec);       // 102 % 4 != 0
  Launch f64 = choose(DType::F64, {64, 100}, 1, true, true);
  EXPECT_EQ(norm::detail::workspace_of(f64), static_cast<size_t>(f64.chunks) * 100 * 2 * 8 + 16);
  EXPECT_EQ(norm::detail::workspace_of(choose(DType::F32, {64, 100}, 1, true, false)), 0u);
}

TEST(NormPath, BlockPathFusesTheColumnSums) {
  // 4096 bf16 columns on 256 threads: 2 vectors (16 columns) per thread; 16
  // KiB staged, double-buffered (prefetch): min(4 resident by registers,
  // 200 KiB / 32 KiB) = 4 blocks per SM.
  Launch l = choose(DType::BF16, {32768, 4096}, 1, true, true, 90, 132);
  EXPECT_TRUE(l.fused_colsum);
  EXPECT_TRUE(l.prefetch);
  EXPECT_EQ(l.chunks, 132 * 4);
  EXPECT_EQ(norm::detail::variant_of(l), "block.vec16.prefetch+colsum.fused");
  EXPECT_EQ(norm::detail::workspace_of(l), static_cast<size_t>(132 * 4) * 4096 * 2 * 4 + 16);
  EXPECT_EQ(choose(DType::F32, {32768, 4096}, 1, true, true, 90, 132).chunks, 132 * 3);  // f32 on 256: 3
  // 16384 bf16 columns on 1024 threads: 64 KiB staged, 128 KiB double-buffered.
  Launch h = choose(DType::BF16, {8192, 16384}, 1, true, true, 90, 132);
  EXPECT_TRUE(h.prefetch);
  EXPECT_EQ(h.chunks, 132);
  // 16384 f32 columns on 1024 threads (128 KiB staged: one block per SM; two
  // rows do not fit, so no prefetch).
  Launch f = choose(DType::F32, {8192, 16384}, 1, true, true, 90, 132);
  EXPECT_TRUE(f.fused_colsum);
  EXPECT_FALSE(f.prefetch);
  EXPECT_EQ(f.chunks, 132);
  const Launch u = choose(DType::F32, {64, 4096}, 1, true, true, 90, 132, kAligned + 4);  // no 16-byte vectors
  EXPECT_TRUE(u.fused_colsum);
  EXPECT_FALSE(u.prefetch);
  // Unaligned views never need more chunks (workspace) than aligned ones.
  EXPECT_LE(u.chunks, choose(DType::F32, {64, 4096}, 1, true, true, 90, 132).chunks);
  EXPECT_LE(choose(DType::F32, {1200, 3000}, 1, true, true, 90, 132, kAligned + 4).chunks,
            choose(DType::F32, {1200, 3000}, 1, true, true, 90, 132).chunks);
  EXPECT_LE(choose(DType::BF16, {1200, 4000}, 1, true, true, 90, 132, kAligned + 2).chunks,
            choose(DType::BF16, {1200, 4000}, 1, true, true, 90, 132).chunks);
  EXPECT_EQ(choose(DType::F32, {100, 16384}, 1, true, true, 90, 132).chunks, 100);  // at most one chunk per row
  EXPECT_FALSE(choose(DType::F32, {9, 4097}, 1, true, true).fused_colsum);          // 17 columns per thread
  EXPECT_FALSE(choose(DType::BF16, {64, 8192}, 1, true, true).fused_colsum);        // 4 vectors per thread
  EXPECT_FALSE(choose(DType::F64, {64, 2048}, 1, true, true).fused_colsum);         // f64: separate kernel
  EXPECT_FALSE(choose(DType::F32, {9, 4096}, 1, true, false).fused_colsum);         // no weight gradients
}

}  // namespace
