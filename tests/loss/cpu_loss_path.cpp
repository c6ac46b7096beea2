// The cross-entropy CUDA path choice and workspace layout (src/ops/loss/path.cpp),
// plain C++: checked without a GPU.
#include <gtest/gtest.h>

#include "ops/loss/path.hpp"

namespace {

using baracuda::DType;
using baracuda::LossReduction;
using baracuda::loss::cuda::Launch;
using baracuda::loss::cuda::Mode;
using baracuda::loss::cuda::Path;
namespace cuda = baracuda::loss::cuda;
namespace detail = baracuda::loss::detail;

alignas(16) const char kAligned[64] = {};

Launch launch(DType t, int64_t rows, int64_t classes, Mode m) {
  Launch l;
  l.dtype = t;
  l.rows = rows;
  l.classes = classes;
  l.mode = m;
  l.sm_count = 132;
  l.arch = 90;
  l.logits = kAligned;
  l.logits_rs = classes;
  l.target = kAligned;
  l.target_s = 1;
  l.dlogits = const_cast<char*>(kAligned);
  l.dlogits_rs = classes;
  return l;
}

TEST(CrossEntropyPath, BlockSplitAndVectors) {
  Launch l = launch(DType::BF16, 8192, 50304, Mode::Fused);
  detail::choose_path(l);
  EXPECT_EQ(l.path, Path::Block);
  EXPECT_TRUE(l.vec);
  EXPECT_TRUE(l.stage) << "50304 bf16 (98 KiB) is staged on sm_90";
  EXPECT_EQ(l.threads, cuda::kLargeThreads);
  EXPECT_EQ(detail::variant_of(l), "block.vec16");

  l = launch(DType::BF16, 8192, 128256, Mode::Fused);
  detail::choose_path(l);
  EXPECT_FALSE(l.stage) << "250 KiB does not fit: the gradient pass re-reads the row";
  l = launch(DType::BF16, 8192, 50304, Mode::Forward);
  detail::choose_path(l);
  EXPECT_FALSE(l.stage) << "the forward reads the row once anyway";

  l = launch(DType::F32, 4, 262144, Mode::Backward);
  detail::choose_path(l);
  EXPECT_EQ(l.path, Path::Split);
  EXPECT_EQ(l.chunks, 262144 / cuda::kSplitChunk);
  EXPECT_EQ(detail::variant_of(l), "split.vec16");
  l = launch(DType::F32, 200, 262144, Mode::Backward);
  detail::choose_path(l);
  EXPECT_EQ(l.path, Path::Block) << "rows enough to fill the SMs";

  l = launch(DType::F32, 10, 7, Mode::Forward);
  detail::choose_path(l);
  EXPECT_EQ(l.threads, cuda::kSmallThreads);
  EXPECT_EQ(detail::variant_of(l), "block") << "7 classes: no 16-byte vectors";
  l = launch(DType::F32, 10, 1024, Mode::Forward);
  l.logits_rs = 1030;
  detail::choose_path(l);
  EXPECT_FALSE(l.vec) << "a row stride that breaks 16-byte alignment";
  l = launch(DType::F32, 10, 1024, Mode::Backward);
  l.dlogits = const_cast<char*>(kAligned + 4);
  detail::choose_path(l);
  EXPECT_FALSE(l.vec) << "a misaligned dlogits";
}

TEST(CrossEntropyPath, WorkspaceLayout) {
  Launch l = launch(DType::BF16, 100, 1000, Mode::Forward);
  l.reduction = LossReduction::None;
  detail::choose_path(l);
  EXPECT_EQ(detail::workspace_layout(l).bytes, 0u) << "None writes the losses directly";
  l.reduction = LossReduction::Sum;
  auto w = detail::workspace_layout(l);
  EXPECT_EQ(w.divisor, -1);
  EXPECT_EQ(w.row_loss, 0);
  EXPECT_EQ(w.bytes, 100u * 8 + 16);
  l.reduction = LossReduction::Mean;
  w = detail::workspace_layout(l);
  EXPECT_EQ(w.divisor, 0);
  EXPECT_EQ(w.row_loss, 16);
  l = launch(DType::BF16, 2, 262144, Mode::Backward);
  detail::choose_path(l);
  w = detail::workspace_layout(l);
  EXPECT_EQ(w.row_loss, -1) << "the backward writes no loss";
  EXPECT_EQ(w.partials, 16);
  EXPECT_EQ(w.bytes, static_cast<size_t>(16 + 2 * l.chunks * cuda::kPartialBytes + 2 * 8 + 16));
}

}  // namespace
