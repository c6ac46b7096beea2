// RandpermPlan / MultinomialPlan on the GPU against the CPU reference, byte
// for byte (the same Philox words, integer keys and IEEE-exact f64 sums):
//   * randperm: n from 1 to 2^20 + 7 in every dtype, strided out (gaps kept),
//     a permutation, device_offset read and incremented on the stream, an
//     empty out with device_offset still consumes an offset;
//   * multinomial: with replacement (C below, at and above the 1024 scan
//     chunks: several categories per chunk; cdf_scan, and cdf_search past its
//     table limit) and without (race_topk with one and several merge levels;
//     segmented sort above 1024 samples; one row: device-wide sort), every
//     probs dtype, I32 / I64 out, strided probs and out, [C] and [R, C],
//     zero weights, num_samples == C;
//   * invalid rows: their samples are -1, check_probs names the lowest one,
//     the next valid run clears the error word;
//   * graph capture with device_offset: every replay draws new numbers, equal
//     to the CPU's draws at consecutive offsets.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/random_sampling.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/sampling_helpers.hpp"
#include "support/tensor_utils.hpp"
#include "ops/random/sampling_launch.hpp"  // multinomial_variant

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();

void expect_randperm(const RandpermDescriptor& d, RandomSeed seed, const bt::Layout* L, const std::string& w) {
  const auto gpu = bt::run_randperm(bt::kGpu, d, seed, L);
  const auto cpu = bt::run_randperm(kCpu, d, seed, L);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_EQ(gpu.variant, d.n == 0 ? (d.device_offset ? "offset_only" : "empty") : "radix_sort") << w;
  EXPECT_TRUE(gpu.raw == cpu.raw) << "randperm differs from the CPU (gaps included): " << w;
  if (d.device_offset) {
    EXPECT_EQ(gpu.offset_after, static_cast<int64_t>(seed.offset + 1)) << w;
  }
}

TEST(RandpermCuda, MatchesCpuInEveryDtype) {
  BT_SKIP_WITHOUT_GPU();
  for (const int64_t n : {1, 2, 3, 255, 256, 1000, 4097, 100003, (1 << 20) + 7})
    for (const DType t : {DType::I64, DType::I32, DType::F64, DType::F32, DType::F16, DType::BF16}) {
      if ((t == DType::F16 && n > 2048) || (t == DType::BF16 && n > 256) || (t == DType::F32 && n > (1 << 24))) continue;
      expect_randperm(bt::randperm_desc(n, t), RandomSeed{0x5eed + static_cast<uint64_t>(n), 3}, nullptr,
                      std::to_string(n) + " " + std::string(dtype_name(t)));
    }
  const auto big = bt::run_randperm(bt::kGpu, bt::randperm_desc((1 << 20) + 7), RandomSeed{1, 2});
  ASSERT_TRUE(big.st.is_ok());
  std::vector<int64_t> s = big.values;
  std::sort(s.begin(), s.end());
  for (size_t i = 0; i < s.size(); ++i) ASSERT_EQ(s[i], static_cast<int64_t>(i));
}

TEST(RandpermCuda, StridedOutAndDeviceOffset) {
  BT_SKIP_WITHOUT_GPU();
  const bt::Layout L = bt::every_other(Dims{777});
  expect_randperm(bt::randperm_desc(777, DType::I32), RandomSeed{4, 4}, &L, "every other");
  for (const int64_t n : {0, 5, 3001}) expect_randperm(bt::randperm_desc(n, DType::I64, true), RandomSeed{9, 77}, nullptr, "device offset");
  expect_randperm(bt::randperm_desc(0), RandomSeed{9, 77}, nullptr, "empty");
}

TEST(SamplingCuda, SizeLimits) {
  BT_SKIP_WITHOUT_GPU();
  BT_EXPECT_STATUS(RandpermPlan::select(bt::kGpu, bt::randperm_desc(int64_t{1} << 31)).status(), StatusCode::Unsupported,
                   "RandpermPlan: the CUDA randperm needs n below 2^31");
  BT_EXPECT_STATUS(MultinomialPlan::select(bt::kGpu, bt::multinomial_desc(DType::F32, {1 << 16, (1 << 15) + 1}, 1, false))
                       .status(),
                   StatusCode::Unsupported, "MultinomialPlan: the CUDA multinomial needs");
  BT_EXPECT_STATUS(MultinomialPlan::select(bt::kGpu, bt::multinomial_desc(DType::F32, {int64_t{1} << 31}, 1, true)).status(),
                   StatusCode::Unsupported, "MultinomialPlan: the CUDA multinomial needs");
  // The largest allowed sizes select (no allocation here).
  EXPECT_TRUE(RandpermPlan::select(bt::kGpu, bt::randperm_desc((int64_t{1} << 31) - 1)).is_ok());
  EXPECT_TRUE(MultinomialPlan::select(bt::kGpu, bt::multinomial_desc(DType::F32, {1 << 16, 1 << 14}, 1, true)).is_ok());
}

void expect_multinomial(const MultinomialDescriptor& d, const std::vector<double>& probs, RandomSeed seed,
                        const bt::Layout* PL, const bt::Layout* OL, const std::string& w) {
  const auto gpu = bt::run_multinomial(bt::kGpu, d, probs, seed, PL, OL);
  const auto cpu = bt::run_multinomial(kCpu, d, probs, seed, PL, OL);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string() << " " << w;
  const int64_t R = d.probs_shape.rank == 2 ? d.probs_shape[0] : 1, C = d.probs_shape[d.probs_shape.rank - 1];
  EXPECT_EQ(gpu.variant, random::cuda::multinomial_variant(R, C, d.num_samples, d.replacement)) << w;
  EXPECT_TRUE(gpu.raw == cpu.raw) << "multinomial differs from the CPU (gaps included): " << w;
  if (d.device_offset) {
    EXPECT_EQ(gpu.offset_after, static_cast<int64_t>(seed.offset + 1)) << w;
  }
}

std::vector<double> weights(int64_t n, bt::Rng& rng, double zero_share) {
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = bt::uniform(rng, 0, 1) < zero_share ? 0.0 : bt::uniform(rng, 0.001, 4.0);
  return v;
}

TEST(MultinomialCuda, MatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  struct Case {
    int64_t R, C, S;
  };
  const Case cases[] = {{1, 1, 1},    {1, 7, 5},      {3, 1000, 700}, {2, 1024, 1024}, {5, 1025, 100},
                        {2, 5000, 3000}, {1, 100000, 4097}, {300, 13, 13}, {70000, 3, 2}, {80, 3000, 50},
                        {3, 20000, 16}, {2, 70000, 1000}, {4, 9000, 1024}, {1, 8193, 1}};
  for (const Case& c : cases)
    for (const bool repl : {true, false})
      for (const DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
        const int64_t S = repl ? c.S + 3 : std::min(c.S, c.C);
        const auto probs = weights(c.R * c.C, rng, c.C > 4 ? 0.2 : 0.0);
        // Without replacement every row needs S positive weights: make the first S positive.
        std::vector<double> p = probs;
        if (!repl)
          for (int64_t r = 0; r < c.R; ++r)
            for (int64_t j = 0; j < S; ++j)
              if (p[static_cast<size_t>(r * c.C + j)] == 0) p[static_cast<size_t>(r * c.C + j)] = 0.5;
        const DType ot = c.C % 2 ? DType::I32 : DType::I64;
        const std::string w = std::to_string(c.R) + "x" + std::to_string(c.C) + " S " + std::to_string(S) +
                              (repl ? " repl " : " no-repl ") + std::string(dtype_name(t));
        expect_multinomial(bt::multinomial_desc(t, {c.R, c.C}, S, repl, ot), p, RandomSeed{c.C * 31ull, 5}, nullptr,
                           nullptr, w);
        if (c.R == 1)
          expect_multinomial(bt::multinomial_desc(t, {c.C}, S, repl, ot), p, RandomSeed{c.C * 31ull, 5}, nullptr,
                             nullptr, w + " [C]");
      }
}

TEST(MultinomialCuda, StridedViewsAndDeviceOffset) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  const int64_t R = 9, C = 2100, S = 50;
  const auto p = weights(R * C, rng, 0.1);
  const bt::Layout PT = bt::transposed(Dims{R, C}), OP = bt::padded(Dims{R, S}, 5);
  for (const bool repl : {true, false}) {
    expect_multinomial(bt::multinomial_desc(DType::F32, {R, C}, S, repl), p, RandomSeed{6, 6}, &PT, &OP, "strided");
    expect_multinomial(bt::multinomial_desc(DType::BF16, {R, C}, S, repl, DType::I64, true), p, RandomSeed{6, 60},
                       nullptr, nullptr, "device offset");
  }
  // Subnormal f64 weights (clamped keys) and a row with exactly S positive weights.
  const std::vector<double> sub = {1e-310, 0.0, 4e-320, 1.0, 0.0, 0.0, 2.0, 3.0, 0.0, 1.0};
  expect_multinomial(bt::multinomial_desc(DType::F64, {2, 5}, 3, false), sub, RandomSeed{5, 5}, nullptr, nullptr,
                     "subnormal weights");
  expect_multinomial(bt::multinomial_desc(DType::F64, {10}, 6, false), sub, RandomSeed{5, 6}, nullptr, nullptr,
                     "one row, exactly S positive");
  // Empty with device_offset: only the increment.
  const auto e = bt::run_multinomial(bt::kGpu, bt::multinomial_desc(DType::F32, {0, 4}, 2, true, DType::I64, true), {},
                                     RandomSeed{1, 10});
  ASSERT_TRUE(e.st.is_ok()) << e.st.to_string();
  EXPECT_EQ(e.variant, "offset_only");
  EXPECT_EQ(e.offset_after, 11);
}

TEST(MultinomialCuda, InvalidRowsWriteMinusOneAndCheckProbsNamesTheFirst) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t C = 1500, S = 4;
  for (const int64_t R : {6, 100})
  for (const bool repl : {true, false}) {
    std::vector<double> p(static_cast<size_t>(R * C), 1.0);
    p[static_cast<size_t>(4 * C + 17)] = -1.0;                                    // row 4: negative
    p[static_cast<size_t>(5 * C + 3)] = std::nan("");                            // row 5: NaN
    for (int64_t j = 0; j < C; ++j) p[static_cast<size_t>(2 * C + j)] = j < 2 ? 1.0 : 0.0;  // row 2: 2 positive
    if (repl) p[static_cast<size_t>(2 * C)] = 0.0, p[static_cast<size_t>(2 * C + 1)] = 0.0;  // row 2: all zero
    const auto d = bt::multinomial_desc(DType::F32, {R, C}, S, repl);
    const auto g = bt::run_multinomial(bt::kGpu, d, p, RandomSeed{3, 3}, nullptr, nullptr, 0x5a);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    BT_EXPECT_STATUS(g.check, StatusCode::InvalidProblem, "MultinomialPlan: probs row 2 is invalid");
    EXPECT_EQ(g.variant, !repl ? "race_topk" : "cdf_scan");
    for (int64_t r = 0; r < R; ++r)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t v = g.values[static_cast<size_t>(r * S + s)];
        if (r == 2 || r == 4 || r == 5) EXPECT_EQ(v, -1) << "row " << r;
        else EXPECT_TRUE(v >= 0 && v < C) << "row " << r << ": " << v;
      }
    // The valid rows are the CPU's.
    std::vector<double> q = p;
    for (int64_t r : {2, 4, 5})
      for (int64_t j = 0; j < C; ++j) q[static_cast<size_t>(r * C + j)] = 1.0;
    const auto c = bt::run_multinomial(kCpu, d, q, RandomSeed{3, 3});
    ASSERT_TRUE(c.st.is_ok());
    for (int64_t r = 0; r < R; ++r)
      for (int64_t s = 0; s < S; ++s)
        if (r != 2 && r != 4 && r != 5)
        EXPECT_EQ(g.values[static_cast<size_t>(r * S + s)], c.values[static_cast<size_t>(r * S + s)]);
  }
  // One plan, one workspace: a valid run after a bad one clears the word.
  const auto d = bt::multinomial_desc(DType::F32, {2, 3}, 2, true);
  auto plan = MultinomialPlan::select(bt::kGpu, d).value();
  Buffer ws(Device::cuda(0), std::max<size_t>(plan.workspace_size(), 1));
  const Workspace W(ws.data(), plan.workspace_size());
  const bt::Bytes bad = bt::bytes_of(DType::F32, {1, 1, 1, 0, 0, 0}), good = bt::bytes_of(DType::F32, {1, 1, 1, 1, 2, 3});
  bt::RawTensor P(Device::cuda(0), DType::F32, bt::contiguous({2, 3}), &bad), O(Device::cuda(0), DType::I64, bt::contiguous({2, 2}), nullptr);
  MultinomialArgs a;
  a.probs = P.ref();
  a.out = O.mut();
  ASSERT_TRUE(plan.run(bt::kGpu, W, a).is_ok());
  BT_EXPECT_STATUS(plan.check_probs(bt::kGpu, W), StatusCode::InvalidProblem, "MultinomialPlan: probs row 1 is invalid");
  bt::RawTensor P2(Device::cuda(0), DType::F32, bt::contiguous({2, 3}), &good);
  a.probs = P2.ref();
  ASSERT_TRUE(plan.run(bt::kGpu, W, a).is_ok());
  EXPECT_TRUE(plan.check_probs(bt::kGpu, W).is_ok());
  BT_EXPECT_STATUS(plan.check_probs(bt::kGpu, Workspace(ws.data(), 0)), StatusCode::WorkspaceTooSmall, "MultinomialPlan");
}

// Bad rows whose bad weight sits in a later tile of a multi-level race_topk
// (the flag crosses launches) or of a multi-chunk cdf_scan.
TEST(MultinomialCuda, InvalidRowsAcrossTilesAndChunks) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t R = 4, C = 9000, S = 8;
  for (const bool repl : {true, false}) {
    std::vector<double> p(static_cast<size_t>(R * C), 1.0);
    p[static_cast<size_t>(1 * C + 8500)] = std::nan("");  // row 1: NaN in the third tile
    for (int64_t j = 0; j < C; ++j) p[static_cast<size_t>(2 * C + j)] = repl ? 0.0 : j % 2000 == 0 ? 1.0 : 0.0;
    const auto d = bt::multinomial_desc(DType::F32, {R, C}, S, repl);
    const auto g = bt::run_multinomial(bt::kGpu, d, p, RandomSeed{8, 8}, nullptr, nullptr, 0x5a);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    BT_EXPECT_STATUS(g.check, StatusCode::InvalidProblem, "MultinomialPlan: probs row 1 is invalid");
    EXPECT_EQ(g.variant, !repl ? "race_topk" : "cdf_scan");
    for (int64_t r = 0; r < R; ++r)
      for (int64_t s = 0; s < S; ++s) {
        const int64_t v = g.values[static_cast<size_t>(r * S + s)];
        if (r == 1 || r == 2) EXPECT_EQ(v, -1) << "row " << r;
        else EXPECT_TRUE(v >= 0 && v < C) << "row " << r << ": " << v;
      }
  }
}

// Equal weights: equal keys (24-bit uniforms collide within 50304 draws) are
// ordered by category in every merge level, as on the CPU.
TEST(MultinomialCuda, EqualWeightsTieBreakByCategory) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t R = 2, C = 50304;
  const std::vector<double> p(static_cast<size_t>(R * C), 1.0);
  for (const int64_t S : {1, 16, 1000, 1024})
    expect_multinomial(bt::multinomial_desc(DType::F32, {R, C}, S, false), p, RandomSeed{21, static_cast<uint64_t>(S)},
                       nullptr, nullptr, "equal weights S " + std::to_string(S));
}

// Many rows with replacement: the table would pass kScanMaxElems, so the
// one-block-per-row cdf_search runs; the same values as the CPU.
TEST(MultinomialCuda, ManyRowsFallBackToCdfSearch) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  const int64_t R = 16800, C = 1000, S = 2;
  ASSERT_GT(R * C, random::cuda::kScanMaxElems);
  const auto p = weights(R * C, rng, 0.3);
  expect_multinomial(bt::multinomial_desc(DType::F16, {R, C}, S, true), p, RandomSeed{17, 1}, nullptr, nullptr,
                     "cdf_search fallback");
}

#ifdef BARACUDA_WITH_CUDA
// A captured run with device_offset draws new numbers at every replay: the
// CPU's draws at offsets 50, 51, 52.
TEST(SamplingCuda, GraphReplaysAdvanceTheDeviceOffset) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t n = 1000;
  auto plan = RandpermPlan::select(bt::kGpu, bt::randperm_desc(n, DType::I64, true)).value();
  Buffer ws(Device::cuda(0), std::max<size_t>(plan.workspace_size(), 1));
  const Workspace W(ws.data(), plan.workspace_size());
  const bt::Bytes off0 = bt::index_bytes(DType::I64, {50});
  bt::RawTensor O(Device::cuda(0), DType::I64, bt::contiguous({n}), nullptr), Off(Device::cuda(0), DType::I64, bt::contiguous({1}), &off0);
  RandpermArgs a;
  a.seed = RandomSeed{21, 0};
  a.out = O.mut();
  a.offset = Off.mut();
  cudaStream_t s = nullptr;
  ASSERT_EQ(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), cudaSuccess);
  const Stream st = Stream::cuda(0, s);
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  ASSERT_EQ(cudaStreamBeginCapture(s, cudaStreamCaptureModeThreadLocal), cudaSuccess);
  const Status run = plan.run(st, W, a);
  ASSERT_EQ(cudaStreamEndCapture(s, &graph), cudaSuccess);
  ASSERT_TRUE(run.is_ok()) << run.to_string();
  ASSERT_EQ(cudaGraphInstantiate(&exec, graph, 0), cudaSuccess);
  for (uint64_t k = 0; k < 3; ++k) {
    ASSERT_EQ(cudaGraphLaunch(exec, s), cudaSuccess);
    ASSERT_EQ(cudaStreamSynchronize(s), cudaSuccess);
    const auto cpu = bt::run_randperm(kCpu, bt::randperm_desc(n), RandomSeed{21, 50 + k});
    EXPECT_EQ(bt::as_ints(DType::I64, O.logical()), cpu.values) << "replay " << k;
    EXPECT_EQ(bt::as_ints(DType::I64, Off.logical())[0], static_cast<int64_t>(51 + k));
  }
  cudaGraphExecDestroy(exec);
  cudaGraphDestroy(graph);
  cudaStreamDestroy(s);
}
#endif

}  // namespace
