// NonzeroPlan / MaskedSelectPlan / MaskedScatterPlan on the GPU against the
// CPU reference, bit for bit (every output element and the gaps of strided
// outputs, and the count):
//   * every dtype, ranks 0..3, odd sizes, capacities below / at / above the
//     count, strided and broadcast (stride-0) views, in place and out of place;
//   * torch's nonzero test on raw bits (-0.0 zero, NaN nonzero) per element size;
//   * zero-size problems (count 0, out all fill);
//   * masked_scatter's short source: the skipped writes and check_indices()
//     naming the first mask position without a source element; the next valid
//     run clears the error word;
//   * run twice bit-identical; the benchmark's shape.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/masked_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Layout;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();
constexpr auto& kTypes = bt::kMaskedTypes;

Layout layout_of(int which, const Dims& shape) { return bt::masked_layout(which, shape); }

void expect_same(const bt::MaskedResult& gpu, const bt::MaskedResult& cpu, const std::string& w) {
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_EQ(gpu.count, cpu.count) << w;
  EXPECT_EQ(gpu.raw, cpu.raw) << "differs from the CPU (gaps included): " << w;
}

TEST(MaskedCuda, PositionsBelow2e31) {
  BT_SKIP_WITHOUT_GPU();
  const Dims huge{int64_t{1} << 16, int64_t{1} << 15};  // 2^31 positions: select only, nothing allocated
  BT_EXPECT_STATUS(NonzeroPlan::select(bt::kGpu, bt::nonzero_desc(DType::Bool, huge, 0)).status(),
                   StatusCode::Unsupported, "NonzeroPlan: the CUDA kernels need fewer than 2^31 positions");
  BT_EXPECT_STATUS(MaskedSelectPlan::select(bt::kGpu, bt::masked_select_desc(DType::F32, huge, {1}, 0)).status(),
                   StatusCode::Unsupported, "MaskedSelectPlan: the CUDA kernels need fewer than 2^31 positions");
  BT_EXPECT_STATUS(MaskedScatterPlan::select(bt::kGpu, bt::masked_scatter_desc(DType::F32, huge, {1}, {1})).status(),
                   StatusCode::Unsupported, "MaskedScatterPlan: the CUDA kernels need fewer than 2^31 positions");
  auto ok = NonzeroPlan::select(bt::kGpu, bt::nonzero_desc(DType::Bool, {3, 5}, 15));
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_GT(ok->workspace_size(), 0u);
  EXPECT_EQ(ok->sku().variant, "select");
}

TEST(NonzeroCuda, MatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const std::vector<Dims> shapes = {{}, {1}, {1001}, {37, 53}, {5, 1, 9}, {3, 0, 2}, {2, 3, 4, 5}};
  int iter = 0;
  for (DType t : kTypes)
    for (const Dims& s : shapes) {
      const int64_t n = bt::numel(s);
      const auto x = bt::masked_values(t, n, rng);
      for (int64_t m : {int64_t{0}, n / 3, n, n + 5}) {
        const NonzeroDescriptor d = bt::nonzero_desc(t, s, m, iter % 2 ? -1 : 0);
        const Layout Lx = layout_of(iter, s), Lo = layout_of(iter + 1, {m, s.rank});
        ++iter;
        const auto gpu = bt::run_nonzero(bt::kGpu, d, x, Lx, Lo);
        const auto cpu = bt::run_nonzero(kCpu, d, x, Lx, Lo);
        expect_same(gpu, cpu, std::string(dtype_name(t)) + " " + s.to_string() + " m " + std::to_string(m) + " " +
                                  bt::describe(Lx) + " " + bt::describe(Lo));
        EXPECT_EQ(gpu.variant, "select");
      }
    }
}

TEST(NonzeroCuda, TorchZeroTestOnBits) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I16, DType::I64}) {
    const std::vector<double> x = {-0.0, 0.0, bt::kNaN, -bt::kInf, 1e-300, -1.0, 0.0, 5.0};
    const NonzeroDescriptor d = bt::nonzero_desc(t, {8}, 8, -7);
    const auto gpu = bt::run_nonzero(bt::kGpu, d, x, bt::contiguous({8}), bt::contiguous({8, 1}));
    const auto cpu = bt::run_nonzero(kCpu, d, x, bt::contiguous({8}), bt::contiguous({8, 1}));
    expect_same(gpu, cpu, std::string(dtype_name(t)));
  }
}

TEST(MaskedSelectCuda, MatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims x, mask;
  };
  const std::vector<Case> cases = {{{1001}, {1001}}, {{37, 53}, {37, 53}}, {{37, 53}, {53}}, {{37, 1}, {1, 41}},
                                   {{}, {7, 3}},     {{2, 3, 4}, {}},      {{5, 1, 4}, {3, 1}}, {{0, 3}, {3}}};
  int iter = 0;
  for (DType t : kTypes)
    for (const Case& c : cases) {
      const auto x = bt::masked_values(t, bt::numel(c.x), rng, 0.2);
      const auto mask = bt::random_mask(bt::numel(c.mask), rng);
      const int64_t big = bt::numel(c.x) * std::max<int64_t>(bt::numel(c.mask), 1);
      for (int64_t m : {int64_t{0}, big / 4, big + 3}) {
        const MaskedSelectDescriptor d = bt::masked_select_desc(t, c.x, c.mask, m, t == DType::Bool ? 1.0 : -3.0);
        const bt::SelectLayouts L{layout_of(iter, c.x), layout_of(iter + 2, c.mask), layout_of(iter + 3, {m})};
        const bool with_count = iter % 3 != 0;
        ++iter;
        const auto gpu = bt::run_masked_select(bt::kGpu, d, x, mask, L, with_count);
        const auto cpu = bt::run_masked_select(kCpu, d, x, mask, L, with_count);
        expect_same(gpu, cpu, std::string(dtype_name(t)) + " x " + c.x.to_string() + " mask " + c.mask.to_string() +
                                  " m " + std::to_string(m));
      }
    }
}

TEST(MaskedSelectCuda, BroadcastViews) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const Dims s{33, 40};
  const auto x = bt::masked_values(DType::BF16, 33 * 40, rng, 0.1);
  const auto mask = bt::random_mask(33 * 40, rng);
  const MaskedSelectDescriptor d = bt::masked_select_desc(DType::BF16, s, s, 33 * 40 + 1, 2.0);
  const bt::SelectLayouts layouts[] = {{bt::broadcast(s, 0), bt::broadcast(s, 1), bt::padded({33 * 40 + 1})},
                                       {bt::transposed(s), bt::broadcast(s, 0), bt::every_other({33 * 40 + 1})}};
  for (const auto& L : layouts) {
    // The broadcast views read only their storage: give every logical element the value the view shows.
    std::vector<double> xv(x.size()), mv(mask.size());
    for (int64_t p = 0; p < 33 * 40; ++p) {
      xv[static_cast<size_t>(p)] = x[static_cast<size_t>(L.x.offset_of(p) - L.x.offset)];
      mv[static_cast<size_t>(p)] = mask[static_cast<size_t>(L.mask.offset_of(p) - L.mask.offset)];
    }
    expect_same(bt::run_masked_select(bt::kGpu, d, xv, mv, L), bt::run_masked_select(kCpu, d, xv, mv, L),
                bt::describe(L.x) + " " + bt::describe(L.mask));
  }
}

TEST(MaskedScatterCuda, MatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims self, mask, source;
  };
  const std::vector<Case> cases = {{{1001}, {1001}, {1001}},   {{37, 53}, {37, 53}, {40, 50}},
                                   {{37, 53}, {53}, {2000}},    {{2, 3, 4}, {3, 1}, {30}},
                                   {{}, {}, {2}},               {{4, 3}, {1, 3}, {2, 3, 2}},
                                   {{3, 4}, {}, {12}},          {{0, 3}, {3}, {0}}};
  int iter = 0;
  for (DType t : kTypes)
    for (const Case& c : cases) {
      const auto self = bt::masked_values(t, bt::numel(c.self), rng, 0.1);
      const auto source = bt::masked_values(t, bt::numel(c.source), rng, 0.1);
      const auto mask = bt::random_mask(bt::numel(c.mask), rng);
      const MaskedScatterDescriptor d = bt::masked_scatter_desc(t, c.self, c.mask, c.source);
      for (bool in_place : {false, true}) {
        const bt::ScatterMaskLayouts L{layout_of(iter, c.self), layout_of(iter + 1, c.mask),
                                       layout_of(iter + 2, c.source), layout_of(iter + 3, c.self)};
        ++iter;
        const auto gpu = bt::run_masked_scatter(bt::kGpu, d, self, mask, source, L, in_place);
        const auto cpu = bt::run_masked_scatter(kCpu, d, self, mask, source, L, in_place);
        expect_same(gpu, cpu, std::string(dtype_name(t)) + " self " + c.self.to_string() + " mask " +
                                  c.mask.to_string() + (in_place ? " in place" : ""));
        EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
      }
    }
}

TEST(MaskedScatterCuda, ShortSourceSkipsAndReports) {
  BT_SKIP_WITHOUT_GPU();
  const Dims s{3, 4};
  const std::vector<double> self(12, 7.0), source = {1, 2, 3};
  std::vector<double> mask(12, 0.0);
  for (int p : {1, 4, 5, 9, 11}) mask[static_cast<size_t>(p)] = 1.0;
  const MaskedScatterDescriptor d = bt::masked_scatter_desc(DType::F32, s, s, {3});
  const bt::ScatterMaskLayouts L{bt::contiguous(s), bt::contiguous(s), bt::contiguous({3}), bt::contiguous(s)};
  for (bool in_place : {false, true}) {
    const auto gpu = bt::run_masked_scatter(bt::kGpu, d, self, mask, source, L, in_place);
    ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string();
    BT_EXPECT_STATUS(gpu.check, StatusCode::InvalidProblem, "MaskedScatterPlan: mask position [2,1] (position 9)");
    std::vector<double> want(self);
    want[1] = 1, want[4] = 2, want[5] = 3;  // positions 9 and 11 skipped: self's value
    EXPECT_EQ(gpu.out, want);
  }
  // The next valid run with a fresh workspace reports nothing (every run resets the word).
  const MaskedScatterDescriptor ok = bt::masked_scatter_desc(DType::F32, s, s, {5});
  const auto gpu = bt::run_masked_scatter(bt::kGpu, ok, self, mask, {1, 2, 3, 4, 5},
                                          {bt::contiguous(s), bt::contiguous(s), bt::contiguous({5}), bt::contiguous(s)});
  ASSERT_TRUE(gpu.st.is_ok());
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
}

TEST(MaskedCuda, RunTwiceAndBenchmarkShape) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const Dims s{512, 4096};  // the benchmark's row length, fewer rows
  const int64_t n = bt::numel(s);
  const auto x = bt::masked_values(DType::BF16, n, rng, 0.0);
  const auto mask = bt::random_mask(n, rng);
  const MaskedSelectDescriptor d = bt::masked_select_desc(DType::BF16, s, s, n);
  const bt::SelectLayouts L{bt::contiguous(s), bt::contiguous(s), bt::contiguous({n})};
  const auto a = bt::run_masked_select(bt::kGpu, d, x, mask, L);
  const auto b = bt::run_masked_select(bt::kGpu, d, x, mask, L);
  expect_same(a, bt::run_masked_select(kCpu, d, x, mask, L), "masked_select [512,4096]");
  EXPECT_EQ(a.raw, b.raw);
  const NonzeroDescriptor nz = bt::nonzero_desc(DType::Bool, s, n);
  expect_same(bt::run_nonzero(bt::kGpu, nz, mask, bt::contiguous(s), bt::contiguous({n, 2})),
              bt::run_nonzero(kCpu, nz, mask, bt::contiguous(s), bt::contiguous({n, 2})), "nonzero [512,4096]");
  const MaskedScatterDescriptor sc = bt::masked_scatter_desc(DType::BF16, s, s, {n});
  const bt::ScatterMaskLayouts SL{bt::contiguous(s), bt::contiguous(s), bt::contiguous({n}), bt::contiguous(s)};
  expect_same(bt::run_masked_scatter(bt::kGpu, sc, x, mask, x, SL, true),
              bt::run_masked_scatter(kCpu, sc, x, mask, x, SL, true), "masked_scatter_ [512,4096]");
}

}  // namespace
