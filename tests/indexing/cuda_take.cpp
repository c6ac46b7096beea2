// TakePlan / PutPlan / OneHotPlan on the GPU against the CPU reference, bit
// for bit (take / put_ / one_hot move raw bits; put_ accumulate sums every
// destination in position order in the same accumulator on both backends):
//   * every dtype, i32 / i64 indices, negative (wrapped) indices, odd sizes,
//     heavy duplicates, in place, accumulate or not;
//   * strided and broadcast views (the gaps of out untouched), the contiguous
//     fast paths ("flat.contiguous", one_hot "fill": a memset then the ones,
//     odd C and a misaligned out included) and the general ones;
//   * zero-size problems;
//   * bad indices: take writes zero, put_ skips, one_hot writes a zero row,
//     check_indices() names the first bad position, the next valid run clears
//     the error word;
//   * run twice bit-identical; shapes near the benchmark's.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/take_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Bytes;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();
using bt::flat_indices;
constexpr auto& kAll = bt::kAllDtypes;
constexpr auto& kAccumulate = bt::kAccumulateDtypes;
Bytes values_for(DType t, int64_t n, Rng& rng) { return bt::values_for(t, n, rng, 100000); }

void expect_take(const TakeDescriptor& d, const Bytes& x, const std::vector<int64_t>& idx, const bt::TakeLayouts& L,
                 const std::string& w) {
  const auto gpu = bt::run_take(bt::kGpu, d, x, idx, L);
  const auto cpu = bt::run_take(kCpu, d, x, idx, L);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.variant, L.x.strides == contiguous_strides(L.x.shape) ? "flat.contiguous" : "flat") << w;
  EXPECT_EQ(gpu.raw, cpu.raw) << "take differs from the CPU (gaps included): " << w;
}

void expect_put(const PutDescriptor& d, const Bytes& self, const std::vector<int64_t>& idx, const Bytes& src,
                const bt::PutLayouts& L, bool in_place, const std::string& w) {
  const auto gpu = bt::run_put(bt::kGpu, d, self, idx, src, L, in_place);
  const auto cpu = bt::run_put(kCpu, d, self, idx, src, L, in_place);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.variant, "sorted");
  EXPECT_EQ(gpu.raw, cpu.raw) << "put_ differs from the CPU (gaps included): " << w << (in_place ? " in place" : "");
}

void expect_one_hot(const OneHotDescriptor& d, const std::vector<int64_t>& cls, const bt::Layout& index,
                    const bt::Layout& out, const char* variant, const std::string& w) {
  const auto gpu = bt::run_one_hot(bt::kGpu, d, cls, index, out);
  const auto cpu = bt::run_one_hot(kCpu, d, cls, index, out);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.variant, variant) << w;
  EXPECT_EQ(gpu.raw, cpu.raw) << "one_hot differs from the CPU (gaps included): " << w;
}

TEST(TakeCuda, EveryDtypeMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims x, index;
  };
  const Case cases[] = {{{1000}, {3001}}, {{37, 53}, {29, 71}}, {{}, {17}}, {{5, 7, 9}, {}}, {{3, 1, 4, 2}, {2, 2, 2, 2, 3}}};
  for (const DType t : kAll)
    for (const DType it : {DType::I32, DType::I64})
      for (const Case& c : cases) {
        const TakeDescriptor d = bt::take_desc(t, it, c.x, c.index);
        expect_take(d, bt::random_bytes(t, bt::numel(c.x), rng), flat_indices(bt::numel(c.index), bt::numel(c.x), rng),
                    bt::take_contiguous(d), std::string(dtype_name(t)) + " x " + c.x.to_string());
      }
}

TEST(TakeCuda, StridedAndBroadcastViews) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : {DType::F16, DType::C128, DType::U8}) {
    const TakeDescriptor d = bt::take_desc(t, DType::I64, {33, 40}, {33, 17});
    const bt::Layout xs[] = {bt::transposed({33, 40}), bt::broadcast({33, 40}, 0), bt::padded({33, 40}, 2)};
    const bt::Layout is[] = {bt::broadcast({33, 17}, 0), bt::every_other({33, 17}), bt::transposed({33, 17})};
    const bt::Layout os[] = {bt::padded({33, 17}, 3), bt::transposed({33, 17}), bt::every_other({33, 17})};
    for (int k = 0; k < 3; ++k) {
      std::vector<int64_t> idx = flat_indices(33 * 17, 33 * 40, rng);
      if (k == 0)
        for (size_t i = 17; i < idx.size(); ++i) idx[i] = idx[i % 17];
      expect_take(d, bt::random_bytes(t, 33 * 40, rng), idx, {xs[k], is[k], os[k]},
                  std::string(dtype_name(t)) + " " + bt::describe(xs[k]));
    }
  }
}

TEST(PutCuda, EveryDtypeMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims self, index, source;
  };
  const Case cases[] = {{{33, 47}, {4000}, {40, 100}}, {{7}, {3001}, {3001}}, {{}, {9}, {9}}, {{5, 3, 2}, {}, {1}}};
  for (const bool in_place : {false, true}) {
    for (const DType t : kAll)
      for (const Case& c : cases) {
        const PutDescriptor d = bt::put_desc(t, in_place ? DType::I32 : DType::I64, c.self, c.index, c.source, false);
        expect_put(d, bt::random_bytes(t, bt::numel(c.self), rng), flat_indices(bt::numel(c.index), bt::numel(c.self), rng, true),
                   bt::random_bytes(t, bt::numel(c.source), rng), bt::put_contiguous(d), in_place,
                   std::string(dtype_name(t)) + " self " + c.self.to_string());
      }
    for (const DType t : kAccumulate)
      for (const Case& c : cases) {
        const PutDescriptor d = bt::put_desc(t, DType::I64, c.self, c.index, c.source, true);
        expect_put(d, values_for(t, bt::numel(c.self), rng), flat_indices(bt::numel(c.index), bt::numel(c.self), rng, true),
                   values_for(t, bt::numel(c.source), rng), bt::put_contiguous(d), in_place,
                   "accumulate " + std::string(dtype_name(t)) + " self " + c.self.to_string());
      }
  }
}

TEST(PutCuda, StridedViews) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const bool acc : {false, true}) {
    const PutDescriptor d = bt::put_desc(DType::BF16, DType::I32, {36, 25}, {40, 25}, {25, 40}, acc);
    bt::PutLayouts L{bt::transposed({36, 25}), bt::every_other({40, 25}), bt::padded({25, 40}, 2), bt::padded({36, 25}, 1)};
    const auto idx = flat_indices(1000, 900, rng, true);
    for (const bool in_place : {false, true})
      expect_put(d, values_for(DType::BF16, 900, rng), idx, values_for(DType::BF16, 1000, rng), L, in_place, "strided");
    L = {bt::broadcast({36, 25}, 0), bt::broadcast({40, 25}, 0), bt::transposed({25, 40}), bt::transposed({36, 25})};
    auto bidx = idx;
    for (size_t i = 25; i < bidx.size(); ++i) bidx[i] = bidx[i % 25];
    expect_put(d, bt::held(L.self, d.dtype, values_for(DType::BF16, 900, rng)), bidx, values_for(DType::BF16, 1000, rng),
               L, false, "broadcast self / index");
  }
}

TEST(OneHotCuda, MatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims index;
    int64_t C;
  };
  // C odd and small (rows straddle 16-byte vectors, several rows per vector), and large.
  const Case cases[] = {{{}, 3}, {{257}, 1}, {{31}, 7}, {{5, 9}, 33}, {{3}, 1000}};
  for (const DType t : kAll)
    for (const DType it : {DType::I32, DType::I64})
      for (const Case& c : cases) {
        const OneHotDescriptor d = bt::one_hot_desc(t, it, c.index, c.C);
        std::vector<int64_t> cls(static_cast<size_t>(bt::numel(c.index)));
        for (auto& v : cls) v = bt::uniform_int(rng, 0, c.C - 1);
        const std::string w = std::string(dtype_name(t)) + " " + c.index.to_string() + " C " + std::to_string(c.C);
        expect_one_hot(d, cls, bt::contiguous(c.index), bt::contiguous(bt::one_hot_shape(d)), "fill", w);
        // Transposed out: the element path, except with C = 1, where the
        // transposed view is contiguous after all (an extent-1 axis has no stride).
        if (c.index.rank >= 1)
          expect_one_hot(d, cls, bt::every_other(c.index), bt::transposed(bt::one_hot_shape(d)),
                         c.C == 1 ? "fill" : "elementwise", w);
      }
  // A contiguous out that is not 16-byte aligned: still "fill" (a memset needs
  // no alignment); the gap element before it stays untouched.
  const OneHotDescriptor d = bt::one_hot_desc(DType::F32, DType::I64, {6}, 5);
  bt::Layout out = bt::contiguous({6, 5});
  out.offset = 1;
  out.storage += 1;
  std::vector<int64_t> cls = {0, 4, 2, 2, 1, 3};
  expect_one_hot(d, cls, bt::contiguous({6}), out, "fill", "misaligned out");
}

TEST(TakePutOneHotCuda, ZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const TakeDescriptor t = bt::take_desc(DType::F32, DType::I64, {3, 4}, {0, 5});
  EXPECT_EQ(TakePlan::select(bt::kGpu, t).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_take(bt::kGpu, t, bt::random_bytes(DType::F32, 12, rng), {}, bt::take_contiguous(t)).st.is_ok());
  for (const bool in_place : {false, true}) {
    const PutDescriptor p = bt::put_desc(DType::F32, DType::I64, {3, 4}, {0}, {0, 2}, true);
    const Bytes self = bt::random_bytes(DType::F32, 12, rng);
    const auto r = bt::run_put(bt::kGpu, p, self, {}, {}, bt::put_contiguous(p), in_place);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_TRUE(r.check.is_ok()) << r.check.to_string();
    EXPECT_EQ(r.out, self) << "no index element: out = self";
  }
  EXPECT_EQ(PutPlan::select(bt::kGpu, bt::put_desc(DType::F32, DType::I64, {0}, {0}, {0}, false)).value().sku().variant,
            "empty");
  const OneHotDescriptor o = bt::one_hot_desc(DType::I64, DType::I64, {0, 3}, 5);
  EXPECT_EQ(OneHotPlan::select(bt::kGpu, o).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_one_hot(bt::kGpu, o, {}, bt::contiguous({0, 3}), bt::contiguous({0, 3, 5})).st.is_ok());
}

TEST(TakePutOneHotCuda, BadIndicesAreReportedNeverDereferenced) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64}) {
    const TakeDescriptor td = bt::take_desc(DType::F32, it, {6, 9}, {4, 11});
    std::vector<int64_t> idx = flat_indices(44, 54, rng);
    idx[30] = -55;      // [2,8]
    idx[13] = 54;       // [1,2]: the first bad position
    idx[40] = 1 << 30;
    const Bytes x = bt::random_bytes(DType::F32, 54, rng);
    bt::TakeLayouts TL = bt::take_contiguous(td);
    TL.out = bt::padded({4, 11}, 2);
    const auto g = bt::run_take(bt::kGpu, td, x, idx, TL);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    BT_EXPECT_STATUS(g.check, StatusCode::InvalidProblem,
                     "TakePlan: index element [1,2] (position 13) is outside [-54, 54) (x's element count; the first "
                     "bad index, found on the GPU: its output element was written as zero)");
    EXPECT_EQ(g.out, bt::naive_take(td, x, idx)) << "bad indices read as zero";
    const auto cov = bt::covered(TL.out);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i])
        for (size_t b = 0; b < 4; ++b) ASSERT_EQ(g.raw[i * 4 + b], 0xff) << "out gap element " << i << " written";

    for (const bool acc : {false, true})
      for (const bool in_place : {false, true}) {
        const PutDescriptor pd = bt::put_desc(DType::F32, it, {6, 9}, {4, 9}, {36}, acc);
        std::vector<int64_t> si = flat_indices(36, 54, rng, true);
        si[25] = 54;   // [2,7]
        si[10] = -55;  // [1,1]: the first bad position
        const Bytes self = values_for(DType::F32, 54, rng), src = values_for(DType::F32, 36, rng);
        const auto s = bt::run_put(bt::kGpu, pd, self, si, src, bt::put_contiguous(pd), in_place);
        ASSERT_TRUE(s.st.is_ok()) << s.st.to_string();
        BT_EXPECT_STATUS(s.check, StatusCode::InvalidProblem,
                         "PutPlan: index element [1,1] (position 10) is outside [-54, 54) (self's element count; the "
                         "first bad index, found on the GPU: its contribution was skipped)");
        EXPECT_EQ(s.out, bt::naive_put(pd, self, si, src)) << "bad contributions skipped";
      }

    for (const bool vec : {true, false}) {
      const OneHotDescriptor od = bt::one_hot_desc(DType::BF16, it, {3, 5}, 7);
      std::vector<int64_t> cls(15);
      for (auto& v : cls) v = bt::uniform_int(rng, 0, 6);
      cls[12] = 7;   // [2,2]
      cls[6] = -1;   // [1,1]: the first bad position
      const bt::Layout out = vec ? bt::contiguous({3, 5, 7}) : bt::transposed({3, 5, 7});
      const auto o = bt::run_one_hot(bt::kGpu, od, cls, bt::contiguous({3, 5}), out);
      ASSERT_TRUE(o.st.is_ok()) << o.st.to_string();
      BT_EXPECT_STATUS(o.check, StatusCode::InvalidProblem,
                       "OneHotPlan: index element [1,1] (position 6) is outside [0, 7) (num_classes; the first bad "
                       "index, found on the GPU: its output row was written as zeros)");
      EXPECT_EQ(o.out, bt::naive_one_hot(od, cls)) << "bad classes give zero rows";
    }
  }
  // The next valid run with the same workspace clears the word.
  const TakeDescriptor d = bt::take_desc(DType::BF16, DType::I64, {8}, {5});
  auto plan = TakePlan::select(bt::kGpu, d).value();
  Buffer ws(Device::cuda(0), plan.workspace_size());
  const Workspace W(ws.data(), plan.workspace_size());
  const Bytes x = bt::random_bytes(DType::BF16, 8, rng);
  std::vector<int64_t> idx = {0, 1, 2, 3, 4};
  for (const int64_t v : {int64_t{8}, int64_t{-8}}) {
    idx[2] = v;
    const Bytes ib = bt::index_bytes(DType::I64, idx);
    bt::RawTensor X(Device::cuda(0), d.dtype, bt::contiguous({8}), &x);
    bt::RawTensor I(Device::cuda(0), DType::I64, bt::contiguous({5}), &ib);
    bt::RawTensor O(Device::cuda(0), d.dtype, bt::contiguous({5}), nullptr);
    ASSERT_TRUE(plan.run(bt::kGpu, W, {X.ref(), I.ref(), O.mut()}).is_ok());
    const Status st = plan.check_indices(bt::kGpu, W);
    if (v == 8) EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << st.to_string();
    else EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  BT_EXPECT_STATUS(plan.check_indices(bt::kGpu, Workspace(ws.data(), 8)), StatusCode::WorkspaceTooSmall,
                   "TakePlan: workspace");
}

TEST(TakePutOneHotCuda, RunTwiceBitIdenticalNearBenchmarkShapes) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const PutDescriptor pd = bt::put_desc(DType::F32, DType::I64, {512, 1000}, {1 << 19}, {1 << 19}, true);
  const auto idx = flat_indices(1 << 19, 512000, rng, true);
  const Bytes self(512000 * 4, 0), src = values_for(DType::F32, 1 << 19, rng);
  const auto a = bt::run_put(bt::kGpu, pd, self, idx, src, bt::put_contiguous(pd), false, 0xff);
  const auto b = bt::run_put(bt::kGpu, pd, self, idx, src, bt::put_contiguous(pd), false, 0x5a);
  const auto c = bt::run_put(kCpu, pd, self, idx, src, bt::put_contiguous(pd));
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok() && c.st.is_ok()) << a.st.to_string();
  EXPECT_EQ(a.raw, b.raw);
  EXPECT_EQ(a.raw, c.raw);
  const TakeDescriptor td = bt::take_desc(DType::F32, DType::I64, {512, 1000}, {1 << 19});
  expect_take(td, values_for(DType::F32, 512000, rng), idx, bt::take_contiguous(td),
              "benchmark-like take");
  const OneHotDescriptor od = bt::one_hot_desc(DType::BF16, DType::I64, {512}, 32000);
  std::vector<int64_t> cls(512);
  for (auto& v : cls) v = bt::uniform_int(rng, 0, 31999);
  expect_one_hot(od, cls, bt::contiguous({512}), bt::contiguous({512, 32000}), "fill", "benchmark-like one_hot");
}

}  // namespace
