// ScatterReduceBackwardPlan on the GPU against the CPU reference, bit for bit
// (both run scatter_backward_run over each destination's members in position
// order in the same accumulator):
//   * every dtype, i32 / i64 indices, every reduce mode, include_self on / off,
//     either output alone, heavy duplicates with zeros (prod) and ties (amax /
//     amin) drawn on purpose, src larger than index, odd shapes and dims;
//   * strided and broadcast views, the gaps of the outputs untouched;
//   * a many-to-one run (thousands of members per destination);
//   * zero-size problems; bad indices: skipped, grad_src 0 there,
//     check_indices() names the first, the next valid run clears the word;
//   * run twice bit-identical.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/scatter_backward_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();
constexpr DType kFloat[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
constexpr ScatterReduce kModes[] = {ScatterReduce::None, ScatterReduce::Sum,  ScatterReduce::Prod,
                                    ScatterReduce::Mean, ScatterReduce::Amax, ScatterReduce::Amin};

using bt::sbw_desc;

// Small integers and halves: zeros and ties are common.
std::vector<double> coarse_values(int64_t n, Rng& rng) {
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<double>(bt::uniform_int(rng, -3, 4)) * 0.5;
  return v;
}

void expect_matches(const ScatterReduceBackwardDescriptor& d, const std::vector<double>& grad,
                    const std::vector<double>& self, const std::vector<int64_t>& idx, const std::vector<double>& src,
                    const bt::SbwLayouts& L) {
  const auto result = bt::sbw_forward(d, self, idx, src);
  const auto gpu = bt::run_sbw(bt::kGpu, d, grad, self, idx, src, result, L);
  const auto cpu = bt::run_sbw(kCpu, d, grad, self, idx, src, result, L);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << bt::sbw_what(d);
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << bt::sbw_what(d);
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.variant, bt::numel(d.self_shape) == 0 && bt::numel(d.src_shape) == 0 ? "empty" : "sorted");
  EXPECT_EQ(gpu.raw_self, cpu.raw_self) << "grad_self differs from the CPU (gaps included): " << bt::sbw_what(d);
  EXPECT_EQ(gpu.raw_src, cpu.raw_src) << "grad_src differs from the CPU (gaps included): " << bt::sbw_what(d);
}

TEST(ScatterBackwardCuda, EveryModeMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : kFloat)
    for (const ScatterReduce m : kModes)
      for (const bool include_self : {true, false})
        for (int outputs = 0; outputs < 3; ++outputs) {  // both, grad_self only, grad_src only
          auto d = sbw_desc(t, outputs == 1 ? DType::I32 : DType::I64, {33, 47}, {100, 40}, {101, 45}, 0, m,
                            include_self);
          d.compute_grad_src = outputs != 1;
          d.compute_grad_self = outputs != 2;
          const auto self = coarse_values(33 * 47, rng), src = coarse_values(101 * 45, rng);
          const auto grad = bt::random_values(t, 33 * 47, rng);
          const auto idx = bt::random_indices(4000, 33, rng, 2);  // half the rows on 2 rows
          expect_matches(d, grad, self, idx, src, bt::sbw_contiguous(d));
        }
}

TEST(ScatterBackwardCuda, OddShapesAndDims) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64})
    for (const int64_t dim : {-1, 1, 0, 2})
      for (const ScatterReduce m : {ScatterReduce::Prod, ScatterReduce::Amin, ScatterReduce::Mean}) {
        const Dims self = {7, 13, 5}, src = {6, 13, 9};
        Dims index = {6, 11, 5};
        const int64_t rd = bt::resolved_dim(dim, 3);
        if (rd == 2) index = {6, 11, 9};  // longer than self along dim: duplicates guaranteed
        const auto d = sbw_desc(DType::BF16, it, self, index, src, dim, m, dim != 0);
        expect_matches(d, bt::random_values(DType::BF16, bt::numel(self), rng), coarse_values(bt::numel(self), rng),
                       bt::random_indices(bt::numel(index), self[rd], rng), coarse_values(bt::numel(src), rng),
                       bt::sbw_contiguous(d));
      }
}

TEST(ScatterBackwardCuda, ManyToOne) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const ScatterReduce m : kModes) {
    const auto d = sbw_desc(DType::F32, DType::I64, {3, 64}, {3000, 64}, {3000, 64}, 0, m, m != ScatterReduce::Amax);
    auto src = bt::random_values(DType::F32, 3000 * 64, rng, 0.999, 1.001);
    for (size_t i = 0; i < src.size(); i += 977) src[i] = 0;  // some columns get one or two zeros
    for (size_t i = 5; i < src.size(); i += 64 * 7) src[i] = 1.5;  // column 5: ties of the maximum
    expect_matches(d, bt::random_values(DType::F32, 3 * 64, rng), bt::random_values(DType::F32, 3 * 64, rng),
                   std::vector<int64_t>(3000 * 64, 1), src, bt::sbw_contiguous(d));
  }
}

TEST(ScatterBackwardCuda, StridedViews) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const ScatterReduce m : {ScatterReduce::Prod, ScatterReduce::Amax, ScatterReduce::Sum}) {
    const auto d = sbw_desc(DType::F64, DType::I64, {19, 23}, {30, 23}, {31, 24}, 0, m, m != ScatterReduce::Sum);
    const auto self = coarse_values(19 * 23, rng), src = coarse_values(31 * 24, rng);
    const auto grad = bt::random_values(DType::F64, 19 * 23, rng);
    auto idx = bt::random_indices(30 * 23, 19, rng, 3);
    bt::SbwLayouts L{bt::transposed({19, 23}), bt::every_other({30, 23}), bt::padded({19, 23}, 2),
                     bt::padded({31, 24}, 2),  bt::transposed({19, 23}),  bt::padded({19, 23}, 1),
                     bt::transposed({31, 24})};
    expect_matches(d, grad, self, idx, src, L);
    L = {bt::padded({19, 23}, 3), bt::broadcast({30, 23}, 0), bt::transposed({19, 23}), bt::broadcast({31, 24}, 1),
         bt::padded({19, 23}, 1), bt::transposed({19, 23}),   bt::padded({31, 24}, 3)};
    for (size_t i = 23; i < idx.size(); ++i) idx[i] = idx[i % 23];
    std::vector<double> bsrc = src;
    for (size_t i = 0; i < bsrc.size(); ++i) bsrc[i] = src[i / 24 * 24];
    expect_matches(d, grad, self, idx, bsrc, L);
  }
}

TEST(ScatterBackwardCuda, ZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const ScatterReduce m : kModes) {
    const auto d = sbw_desc(DType::F16, DType::I64, {3, 4}, {0, 4}, {2, 4}, 0, m);
    const auto grad = bt::random_values(DType::F16, 12, rng), self = bt::random_values(DType::F16, 12, rng);
    const auto src = bt::random_values(DType::F16, 8, rng);
    const auto r = bt::run_sbw(bt::kGpu, d, grad, self, {}, src, self, bt::sbw_contiguous(d));
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.g.self, grad) << "no index element: grad_self = grad";
    EXPECT_EQ(r.g.src, std::vector<double>(8, 0.0)) << "src outside index: zero gradient";
  }
  const auto e = sbw_desc(DType::F32, DType::I64, {0, 4}, {0, 2}, {0, 2}, 1, ScatterReduce::Amax);
  auto pe = ScatterReduceBackwardPlan::select(bt::kGpu, e);
  ASSERT_TRUE(pe.is_ok());
  EXPECT_EQ(pe->sku().variant, "empty");
  EXPECT_TRUE(bt::run_sbw(bt::kGpu, e, {}, {}, {}, {}, {}, bt::sbw_contiguous(e)).st.is_ok());
}

TEST(ScatterBackwardCuda, BadIndicesAreReportedNeverDereferenced) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64})
    for (const ScatterReduce m : {ScatterReduce::Sum, ScatterReduce::Prod, ScatterReduce::Amin}) {
      const auto d = sbw_desc(DType::F32, it, {6, 9}, {4, 9}, {4, 11}, 1, m);
      std::vector<int64_t> idx = bt::random_indices(36, 9, rng, 2);
      idx[25] = 9;   // [2,7]
      idx[10] = -1;  // [1,1]: the first bad position
      const auto self = coarse_values(54, rng), src = coarse_values(44, rng);
      const auto grad = bt::random_values(DType::F32, 54, rng);
      const ScatterDescriptor f =
          bt::scatter_desc(d.dtype, it, d.self_shape, d.index_shape, d.src_shape, d.dim, m, d.include_self);
      const auto result = bt::naive_scatter<float>(f, self, idx, src);  // bad contributions skipped
      const auto r = bt::run_sbw(bt::kGpu, d, grad, self, idx, src, result, bt::sbw_contiguous(d));
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      BT_EXPECT_STATUS(r.check, StatusCode::InvalidProblem,
                       "ScatterReduceBackwardPlan: index element [1,1] (position 10) is outside [0, 9) (the size of "
                       "dim 1; the first bad index, found on the GPU: its contribution was skipped, its grad_src "
                       "written as 0)");
      const auto want = bt::sbw_model<float>(d, grad, self, idx, src, result);
      EXPECT_EQ(r.g.self, want.self) << bt::sbw_what(d);
      EXPECT_EQ(r.g.src, want.src) << bt::sbw_what(d);
    }
  // The next valid run with the same workspace clears the word.
  const auto d = sbw_desc(DType::BF16, DType::I64, {8}, {5}, {5}, 0, ScatterReduce::Mean);
  auto plan = ScatterReduceBackwardPlan::select(bt::kGpu, d).value();
  Buffer ws(Device::cuda(0), plan.workspace_size());
  const Workspace W(ws.data(), plan.workspace_size());
  const std::vector<double> grad = bt::random_values(DType::BF16, 8, rng);
  std::vector<int64_t> idx = {0, 1, 2, 3, 4};
  for (const int64_t v : {int64_t{8}, int64_t{3}}) {
    idx[2] = v;
    bt::EmbTensor G(Device::cuda(0), d.dtype, bt::contiguous({8}), &grad, nullptr);
    bt::EmbTensor I(Device::cuda(0), d.index_dtype, bt::contiguous({5}), nullptr, &idx);
    bt::EmbTensor GS(Device::cuda(0), d.dtype, bt::contiguous({8}), nullptr, nullptr);
    bt::EmbTensor GX(Device::cuda(0), d.dtype, bt::contiguous({5}), nullptr, nullptr);
    ScatterReduceBackwardArgs a;
    a.grad = G.ref();
    a.index = I.ref();
    a.grad_self = GS.mut();
    a.grad_src = GX.mut();
    ASSERT_TRUE(plan.run(bt::kGpu, W, a).is_ok());
    const Status st = plan.check_indices(bt::kGpu, W);
    if (v == 8) EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << st.to_string();
    else EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  BT_EXPECT_STATUS(plan.check_indices(bt::kGpu, Workspace(ws.data(), 8)), StatusCode::WorkspaceTooSmall,
                   "ScatterReduceBackwardPlan: workspace");
}

TEST(ScatterBackwardCuda, RunTwiceBitIdentical) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const ScatterReduce m : {ScatterReduce::Prod, ScatterReduce::Amax}) {
    const auto d = sbw_desc(DType::BF16, DType::I64, {512, 256}, {4096, 256}, {4096, 256}, 0, m);
    const auto self = coarse_values(512 * 256, rng), src = coarse_values(4096 * 256, rng);
    const auto grad = bt::random_values(DType::BF16, 512 * 256, rng);
    const auto idx = bt::random_indices(4096 * 256, 512, rng, 8);
    const auto result = bt::sbw_forward(d, self, idx, src);
    const auto a = bt::run_sbw(bt::kGpu, d, grad, self, idx, src, result, bt::sbw_contiguous(d), 0xff);
    const auto b = bt::run_sbw(bt::kGpu, d, grad, self, idx, src, result, bt::sbw_contiguous(d), 0x5a);
    ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
    EXPECT_EQ(a.raw_self, b.raw_self);
    EXPECT_EQ(a.raw_src, b.raw_src);
  }
}

}  // namespace
