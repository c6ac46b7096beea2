// The CUDA path choice of the softmax plans (src/ops/softmax/path.hpp), checked
// on the CPU: it is plain C++, and select() / sku() / sku_for() / run() all
// go through it, so these tests pin which kernel a layout reaches without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "baracuda/baracuda.hpp"
#include "ops/softmax/path.hpp"

using namespace baracuda;
using baracuda::softmax::cuda::Launch;
using baracuda::softmax::cuda::Path;

namespace {

alignas(16) const char kAligned[64] = {};

struct Views {
  Dims strides[3];
  const void* ptr[3] = {kAligned, kAligned, kAligned};
};

Views contiguous(const Dims& shape) {
  Views v;
  for (auto& s : v.strides) s = contiguous_strides(shape);
  return v;
}

Launch choose(DType t, const Dims& shape, int axis, const Views& v, bool backward = false, int arch = 90,
              int sm_count = 132, bool log = false) {
  Launch l;
  l.dtype = t;
  l.backward = backward;
  l.log = log;
  l.arch = arch;
  l.sm_count = sm_count;
  const int n = backward ? 3 : 2;
  const int64_t* views[3] = {v.strides[0].begin(), v.strides[1].begin(), v.strides[2].begin()};
  l.rows = softmax::detail::make_rows(shape, axis, views, n);
  softmax::detail::choose_path(l, n, v.ptr);
  return l;
}

std::string variant(DType t, const Dims& shape, int axis = -1, bool backward = false, int arch = 90, int sm = 132) {
  const int a = axis < 0 ? axis + shape.rank : axis;
  return softmax::detail::variant_of(choose(t, shape, a, contiguous(shape), backward, arch, sm));
}

// The backward's choice on contiguous rows over the last axis (log: the forward was log_softmax).
std::string backward_variant(DType t, const Dims& shape, bool log, int arch = 90) {
  return softmax::detail::variant_of(choose(t, shape, shape.rank - 1, contiguous(shape), true, arch, 132, log));
}

TEST(SoftmaxPath, ContiguousRowsByLength) {
  EXPECT_EQ(variant(DType::F32, {129, 1}), "warp");
  EXPECT_EQ(variant(DType::F32, {129, 7}), "warp");
  EXPECT_EQ(variant(DType::F32, {65, 33}), "warp");
  EXPECT_EQ(variant(DType::F32, {67, 1000}), "warp.vec16");
  EXPECT_EQ(variant(DType::BF16, {67, 1000}), "warp.vec16");
  EXPECT_EQ(variant(DType::F32, {67, 1024}), "warp.vec16");
  EXPECT_EQ(variant(DType::F32, {67, 1028}), "block.vec16");
  EXPECT_EQ(variant(DType::F32, {33, 4096}), "block.vec16");
  EXPECT_EQ(variant(DType::F32, {8192, 16384}), "block.vec16");
  EXPECT_EQ(variant(DType::BF16, {7, 50304}), "block.vec16");
  EXPECT_EQ(variant(DType::F32, {3, 262144}), "split.vec16");
  EXPECT_EQ(variant(DType::F64, {2, 1 << 20}), "split.vec16");
  EXPECT_EQ(variant(DType::F16, {5, 4097}), "block");  // not a multiple of a vector
}

TEST(SoftmaxPath, WarpLaneElementsCoverTheRow) {
  for (int64_t len : {1, 7, 128, 129, 256, 257, 512, 513, 1024}) {
    const Launch l = choose(DType::F32, {3, len}, 1, contiguous({3, len}));
    ASSERT_EQ(l.path, Path::Warp) << len;
    EXPECT_GE(32 * l.lane_elems, len);
    EXPECT_TRUE(l.lane_elems == 4 || 16 * l.lane_elems < len) << len << ": the smallest that fits";
  }
  // bf16 vectors hold 8 elements: a 4-element lane cannot use them.
  EXPECT_EQ(variant(DType::BF16, {3, 64}), "warp");
  EXPECT_EQ(variant(DType::BF16, {3, 256}), "warp.vec16");
}

TEST(SoftmaxPath, SharedMemoryLimitPerArchAndDirection) {
  // f32 50304: 201,216 bytes fit sm_90's 200 KiB staging; the softmax
  // backward stages y and dy, the log_softmax backward only dy.
  EXPECT_EQ(variant(DType::F32, {9, 50304}), "block.vec16");
  EXPECT_EQ(variant(DType::F32, {9, 50304}, -1, true), "split.vec16");
  EXPECT_EQ(backward_variant(DType::F32, {9, 50304}, true), "block.vec16");
  EXPECT_EQ(backward_variant(DType::F32, {9, 50304}, false), "split.vec16");
  // The limits exactly: 200 KiB is 51,200 f32 elements staged once, 25,600 twice.
  EXPECT_EQ(backward_variant(DType::F32, {9, 51200}, true), "block.vec16");
  EXPECT_EQ(backward_variant(DType::F32, {9, 51204}, true), "split.vec16");
  EXPECT_EQ(backward_variant(DType::F32, {9, 25600}, false), "block.vec16");
  EXPECT_EQ(backward_variant(DType::F32, {9, 25604}, false), "split.vec16");
  EXPECT_EQ(backward_variant(DType::BF16, {9, 50304}, true, 80), "block.vec16");   // 100,608 bytes of 160 KiB
  EXPECT_EQ(backward_variant(DType::BF16, {9, 50304}, false, 80), "split.vec16");  // twice that
  EXPECT_EQ(variant(DType::F32, {9, 50304}, -1, false, 80), "split.vec16");
  EXPECT_EQ(variant(DType::BF16, {9, 50304}, -1, false, 80), "block.vec16");
  EXPECT_EQ(variant(DType::BF16, {9, 50304}, -1, false, 75), "split.vec16");
  // Threads: at most kBlockVecsPerThread (8) 16-byte vectors per thread, 128 .. 1024.
  const Launch big = choose(DType::F32, {9, 50304}, 1, contiguous({9, 50304}));
  EXPECT_EQ(big.block_threads, 1024);
  const Launch small = choose(DType::F32, {9, 4096}, 1, contiguous({9, 4096}));  // 1024 vectors
  EXPECT_EQ(small.block_threads, 128);
  const Launch bf16 = choose(DType::BF16, {9, 16384}, 1, contiguous({9, 16384}));  // 2048 vectors
  EXPECT_EQ(bf16.block_threads, 256);
  const Launch f32 = choose(DType::F32, {9, 16384}, 1, contiguous({9, 16384}));  // 4096 vectors
  EXPECT_EQ(f32.block_threads, 512);
}

// f64 has no short-row kernels (launch.hpp: has_short_row_kernels): what
// the warp path and the smaller blocks would take goes to 1024-thread blocks.
TEST(SoftmaxPath, F64ShortRowsTakeTheBlockPathWith1024Threads) {
  for (int64_t len : {1, 7, 33, 1000, 1024, 1026, 4096}) {
    for (bool backward : {false, true}) {
      const Launch l = choose(DType::F64, {3, len}, 1, contiguous({3, len}), backward);
      EXPECT_EQ(l.path, Path::Block) << len;
      EXPECT_EQ(l.block_threads, 1024) << len;
      EXPECT_EQ(l.lane_elems, 0) << len;
      EXPECT_EQ(l.vec, len % 2 == 0) << len;  // two f64 per 16-byte vector
    }
  }
  EXPECT_EQ(variant(DType::F64, {67, 1000}), "block.vec16");
  EXPECT_EQ(variant(DType::F64, {129, 7}), "block");
  EXPECT_EQ(variant(DType::F64, {129, 7}, -1, false, 75), "block");  // fits the smallest staging (48 KiB)
  EXPECT_EQ(backward_variant(DType::F64, {129, 1024}, false, 75), "block.vec16");
  // The other dtypes keep the warp path and sized blocks for the same rows.
  EXPECT_EQ(variant(DType::F32, {67, 1000}), "warp.vec16");
  EXPECT_EQ(choose(DType::F32, {3, 4096}, 1, contiguous({3, 4096})).block_threads, 128);
  // Long f64 rows: unchanged (block by the staging limit, split beyond it).
  EXPECT_EQ(variant(DType::F64, {7, 25600}), "block.vec16");  // 204,800 bytes: sm_90's 200 KiB
  EXPECT_EQ(variant(DType::F64, {7, 25602}), "split.vec16");
  EXPECT_EQ(variant(DType::F64, {2, 1 << 20}), "split.vec16");
  EXPECT_EQ(variant(DType::F64, {300, 257}, 0), "generic");
}

TEST(SoftmaxPath, FewLongRowsSplitAcrossBlocks) {
  // 65,536 f32 elements fit one block's staging, but 8 rows would leave most SMs idle.
  EXPECT_EQ(variant(DType::BF16, {8, 65536}), "split.vec16");
  EXPECT_EQ(variant(DType::BF16, {512, 65536}), "block.vec16");
  EXPECT_EQ(variant(DType::BF16, {8, 65528}), "block.vec16");  // below kSplitMinLen
  const Launch l = choose(DType::F32, {3, 262144 + 5}, 1, contiguous({3, 262144 + 5}));
  EXPECT_EQ(l.chunks, 262144 / 8192 + 1);
  EXPECT_EQ(softmax::detail::workspace_of(l), static_cast<size_t>(3 * l.chunks * 16 + 16));
  EXPECT_EQ(softmax::detail::workspace_of(choose(DType::F32, {3, 4096}, 1, contiguous({3, 4096}))), 0u);
}

TEST(SoftmaxPath, OtherAxesCollapseIntoOneRowStride) {
  // [2, 3, 1000] over the last axis: the two outer dims coalesce.
  const Launch l = choose(DType::F32, {2, 3, 1000}, 2, contiguous({2, 3, 1000}));
  EXPECT_EQ(l.path, Path::Warp);
  EXPECT_EQ(l.rows.rows, 6);
  EXPECT_EQ(l.rows.outer_rank, 1);
  EXPECT_EQ(l.rows.outer_stride[1][0], 1000);
  // Padded rows (row stride 1008, aligned): the vector path with a row stride.
  Views v = contiguous({4, 1000});
  v.strides[1] = {1008, 1};
  EXPECT_EQ(softmax::detail::variant_of(choose(DType::F32, {4, 1000}, 1, v)), "warp.vec16");
  v.strides[1] = {1001, 1};  // row starts not 16-byte aligned
  EXPECT_EQ(softmax::detail::variant_of(choose(DType::F32, {4, 1000}, 1, v)), "warp");
  v.strides[1] = {1008, 1};
  v.ptr[1] = kAligned + 4;  // misaligned data pointer
  EXPECT_EQ(softmax::detail::variant_of(choose(DType::F32, {4, 1000}, 1, v)), "warp");
  // A padded middle dim: two outer dims that do not coalesce.
  Views m = contiguous({2, 3, 64});
  m.strides[0] = {256, 64, 1};
  m.strides[1] = {256, 64, 1};
  const Launch g = choose(DType::F32, {2, 3, 64}, 2, m);
  EXPECT_EQ(g.path, Path::Generic);
  EXPECT_EQ(g.rows.outer_rank, 2);
}

TEST(SoftmaxPath, LeadingOrMiddleAxisIsGeneric) {
  EXPECT_EQ(variant(DType::F32, {300, 257}, 0), "generic");
  EXPECT_EQ(variant(DType::F32, {5, 67, 9}, 1), "generic");
  // The backward's dy with another layout decides too.
  Views v = contiguous({4, 32});
  v.strides[2] = {1, 4};  // dy transposed
  EXPECT_EQ(softmax::detail::variant_of(choose(DType::F32, {4, 32}, 1, v, true)), "generic");
  // A unit-length axis is a row of one element whatever its stride.
  // [5, 1, 3] over axis 1: the other axes (strides 3 and 1) coalesce into 15 rows of stride 1.
  const Launch one = choose(DType::F32, {5, 1, 3}, 1, contiguous({5, 1, 3}));
  EXPECT_EQ(one.path, Path::Warp);
  EXPECT_EQ(one.rows.rows, 15);
  EXPECT_EQ(one.rows.outer_stride[1][0], 1);
  EXPECT_EQ(variant(DType::F32, {5, 1}, 1), "warp");
}

}  // namespace
