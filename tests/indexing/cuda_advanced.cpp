// IndexGetPlan / IndexPutPlan on the GPU against the CPU reference, bit for
// bit (get copies raw elements; put writes each destination's last position or
// sums its run in position order in the same accumulator on both backends):
//   * every dtype (get, plain put), the six accumulate dtypes, i32 / i64
//     indices, negative indices, adjacent and non-adjacent indexed dims,
//     broadcast index tensors, rank-0 indices, heavy duplicates, in place;
//   * strided and stride-0 views, the gaps of out untouched;
//   * zero-size problems;
//   * bad indices: get writes zero, put skips, check_indices() names the first
//     bad position of R, the next valid run clears the error word;
//   * run twice bit-identical; shapes near the benchmark's.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/advanced_helpers.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();

using bt::adv_index;
using bt::get_desc;
using bt::put_desc;
using Indices = bt::AdvIndices;
using bt::random_adv_indices;

void expect_get_matches(const IndexGetDescriptor& d, const std::vector<double>& x, const Indices& I,
                        const bt::AdvLayouts& L, const std::string& w) {
  const auto gpu = bt::run_index_get(bt::kGpu, d, x, I.v, L);
  const auto cpu = bt::run_index_get(kCpu, d, x, I.v, L);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  if (bt::numel(L.out.shape) > 0) EXPECT_EQ(gpu.variant, "elementwise");
  EXPECT_EQ(gpu.raw, cpu.raw) << "index differs from the CPU (gaps included): " << w;
}

void expect_put_matches(const IndexPutDescriptor& d, const std::vector<double>& self, const Indices& I,
                        const std::vector<double>& vals, const bt::AdvLayouts& L, const std::string& w) {
  for (const bool in_place : {false, true}) {
    const auto gpu = bt::run_index_put(bt::kGpu, d, self, I.v, vals, L, in_place);
    const auto cpu = bt::run_index_put(kCpu, d, self, I.v, vals, L, in_place);
    ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
    ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
    EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
    if (bt::numel(d.index.self_shape) > 0) EXPECT_EQ(gpu.variant, "sorted");
    EXPECT_EQ(gpu.raw, cpu.raw) << "index_put differs from the CPU (gaps included): " << w
                                << (in_place ? " in place" : "");
  }
}

const bt::AdvCase kCases[] = {
    {{37}, {{0, {53}}}},
    {{7}, {{0, {}}}},
    {{9, 13}, {{1, {5}}}},
    {{9, 13}, {{0, {4, 7}}, {1, {7}}}},
    {{5, 6, 7}, {{0, {3, 1}}, {2, {4}}}},
    {{5, 6, 7}, {{1, {3}}, {2, {1}}}},
    {{3, 4, 5, 6}, {{1, {}}, {3, {5}}}},
    {{3, 5, 7}, {{0, {2, 3}}, {1, {2, 3}}, {2, {3}}}},
};

TEST(IndexGetCuda, MatchesCpuEveryDtype) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : kAllDTypes)
    for (const DType it : {DType::I32, DType::I64})
      for (const bt::AdvCase& c : kCases) {
        const AdvancedIndex ix = adv_index(it, c.self, c.idx);
        const auto x = bt::adv_values(t, bt::numel(c.self), rng);
        expect_get_matches(get_desc(t, ix), x, random_adv_indices(ix, rng), bt::adv_contiguous(ix, bt::adv_model_shape(ix).R),
                           std::string(dtype_name(t)) + " self " + c.self.to_string());
      }
}

TEST(IndexGetCuda, StridedAndBroadcastViews) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const AdvancedIndex ix = adv_index(DType::I32, {5, 6, 7}, {{0, {4, 3}}, {2, {4, 3}}});
  const Dims R{4, 3, 6};
  const auto x = bt::adv_values(DType::F16, 210, rng);
  for (int k = 0; k < 2; ++k) {
    bt::AdvLayouts L = bt::adv_contiguous(ix, R);
    Indices I = random_adv_indices(ix, rng);
    if (k == 0) {
      L.x = bt::transposed({5, 6, 7}), L.index[0] = bt::broadcast({4, 3}, 0), L.out = bt::padded(R, 2);
      for (size_t i = 3; i < 12; ++i) I.v[0][i] = I.v[0][i % 3];
    } else {
      L.x = bt::every_other({5, 6, 7}), L.index[2] = bt::transposed({4, 3}), L.out = bt::transposed(R);
    }
    expect_get_matches(get_desc(DType::F16, ix), x, I, L, "layout set " + std::to_string(k));
  }
}

TEST(IndexPutCuda, MatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const bt::AdvCase& c : kCases)
    for (const bool acc : {false, true})
      for (const DType t : kAllDTypes) {
        if (acc && !bt::adv_accumulates(t)) continue;
        const AdvancedIndex ix = adv_index(t == DType::F16 ? DType::I32 : DType::I64, c.self, c.idx);
        Dims vs = bt::adv_model_shape(ix).R;
        if (vs.rank > 1) vs[0] = 1;  // values broadcast on the first axis
        const auto self = bt::adv_values(t, bt::numel(c.self), rng), vals = bt::adv_values(t, bt::numel(vs), rng);
        expect_put_matches(put_desc(t, ix, vs, acc), self, random_adv_indices(ix, rng), vals,
                           bt::adv_contiguous(ix, c.self, vs),
                           std::string(dtype_name(t)) + (acc ? " accumulate" : "") + " self " + c.self.to_string());
      }
}

TEST(IndexPutCuda, HeavyDuplicatesAndStridedViews) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const AdvancedIndex ix = adv_index(DType::I64, {4, 5, 3}, {{0, {300, 1}}, {2, {3}}});  // R = [300, 3, 5]
  const Dims R{300, 3, 5};
  for (const DType t : bt::kAdvAccumulate)
    for (const bool acc : {false, true}) {
      Indices I;
      I.v[0].assign(300, 2);
      for (size_t i = 0; i < 300; i += 7) I.v[0][i] = -1;
      I.v[2] = {0, 2, -1};
      const auto self = bt::adv_values(t, 60, rng), vals = bt::adv_values(t, 4500, rng);
      bt::AdvLayouts L = bt::adv_contiguous(ix, {4, 5, 3}, R);
      L.x = bt::transposed({4, 5, 3}), L.out = bt::padded({4, 5, 3}, 1), L.values = bt::every_other(R);
      L.index[0] = bt::padded({300, 1}, 2), L.index[2] = bt::every_other({3});
      expect_put_matches(put_desc(t, ix, R, acc), self, I, vals, L,
                         std::string(dtype_name(t)) + (acc ? " accumulate" : ""));
    }
}

TEST(AdvancedIndexCuda, ZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const AdvancedIndex e = adv_index(DType::I64, {3, 4}, {{0, {0}}});
  expect_get_matches(get_desc(DType::F32, e), bt::adv_values(DType::F32, 12, rng), Indices{}, bt::adv_contiguous(e, {0, 4}),
                     "empty index");
  expect_put_matches(put_desc(DType::F32, e, {4}, true), bt::adv_values(DType::F32, 12, rng), Indices{},
                     {1, 2, 3, 4}, bt::adv_contiguous(e, {3, 4}, {4}), "empty index put");
  const AdvancedIndex s = adv_index(DType::I64, {3, 0}, {{0, {2}}});
  Indices I;
  I.v[0] = {0, 9};
  expect_put_matches(put_desc(DType::BF16, s, {}, false), {}, I, {1.0}, bt::adv_contiguous(s, {3, 0}, {}), "empty self");
}

// 32-bit positions and keys: numel(R) and numel(self) below 2^31 (select only, nothing allocated).
TEST(AdvancedIndexCuda, SizeLimitsAreUnsupported) {
  BT_SKIP_WITHOUT_GPU();
  const AdvancedIndex big_r = adv_index(DType::I64, {4, 1 << 16}, {{0, {1 << 16, 1}}});  // R = [2^16, 2^16]
  BT_EXPECT_STATUS(IndexGetPlan::select(bt::kGpu, get_desc(DType::F32, big_r)).status(), StatusCode::Unsupported,
                   "IndexGetPlan: the CUDA index needs fewer than 2^31 result elements");
  BT_EXPECT_STATUS(IndexPutPlan::select(bt::kGpu, put_desc(DType::F32, big_r, {}, true)).status(),
                   StatusCode::Unsupported, "IndexPutPlan: the CUDA index_put needs fewer than 2^31");
  const AdvancedIndex big_self = adv_index(DType::I64, {1 << 16, 1 << 15}, {{0, {4}}});
  BT_EXPECT_STATUS(IndexPutPlan::select(bt::kGpu, put_desc(DType::BF16, big_self, {}, false)).status(),
                   StatusCode::Unsupported, "IndexPutPlan: the CUDA index_put needs");
  EXPECT_TRUE(IndexGetPlan::select(bt::kGpu, get_desc(DType::BF16, big_self)).is_ok()) << "R = [4, 2^15] is fine";
}

TEST(AdvancedIndexCuda, BadIndicesAreReportedNeverDereferenced) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64}) {
    const AdvancedIndex ix = adv_index(it, {5, 3, 4}, {{0, {2, 2}}, {2, {2}}});  // R = [2, 2, 3]
    Indices I;
    I.v[0] = {0, 1, -5, 9};  // B [1, 1]: R positions 9..11
    I.v[2] = {3, 1 << 30};   // B [*, 1]: R positions 3..5 (the first) and 9..11
    const auto x = bt::adv_values(DType::F32, 60, rng);
    bt::AdvLayouts L = bt::adv_contiguous(ix, {2, 2, 3});
    L.out = bt::padded({2, 2, 3}, 2);
    const auto g = bt::run_index_get(bt::kGpu, get_desc(DType::F32, ix), x, I.v, L);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    BT_EXPECT_STATUS(g.check, StatusCode::InvalidProblem,
                     "IndexGetPlan: index position [0,1,0] (position 3 of the result shape [2,2,3]) holds an index "
                     "outside [-size, size) of its dim (the first bad index, found on the GPU: its output element was "
                     "written as zero)");
    EXPECT_EQ(g.out, bt::naive_index_get(ix, x, I.v)) << "bad indices read as zero";
    const auto cov = bt::covered(L.out);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i])
        for (size_t b = 0; b < 4; ++b) ASSERT_EQ(g.raw[i * 4 + b], 0xff) << "out gap element " << i << " written";
    for (const bool in_place : {false, true})
      for (const bool acc : {false, true}) {
        const IndexPutDescriptor d = put_desc(DType::F32, ix, {3}, acc);
        const auto vals = bt::adv_values(DType::F32, 3, rng);
        const auto p = bt::run_index_put(bt::kGpu, d, x, I.v, vals, bt::adv_contiguous(ix, {5, 3, 4}, {3}), in_place);
        ASSERT_TRUE(p.st.is_ok()) << p.st.to_string();
        BT_EXPECT_STATUS(p.check, StatusCode::InvalidProblem,
                         "IndexPutPlan: index position [0,1,0] (position 3 of the result shape [2,2,3]) holds an "
                         "index outside [-size, size) of its dim (the first bad index, found on the GPU: its "
                         "contribution was skipped)");
        EXPECT_EQ(p.out, bt::naive_index_put(d, x, I.v, vals)) << "bad contributions skipped";
      }
  }
  // The next valid run with the same workspace clears the word.
  const AdvancedIndex ix = adv_index(DType::I64, {8}, {{0, {5}}});
  const IndexPutDescriptor d = put_desc(DType::BF16, ix, {5}, true);
  auto plan = IndexPutPlan::select(bt::kGpu, d).value();
  Buffer ws(Device::cuda(0), plan.workspace_size());
  const Workspace W(ws.data(), plan.workspace_size());
  std::vector<double> self = bt::adv_values(DType::BF16, 8, rng), vals = bt::adv_values(DType::BF16, 5, rng);
  std::vector<int64_t> idx = {0, 1, 2, 3, 4};
  for (const int64_t v : {int64_t{8}, int64_t{-8}}) {
    idx[2] = v;
    bt::EmbTensor S(Device::cuda(0), d.dtype, bt::contiguous({8}), &self, nullptr);
    bt::EmbTensor I(Device::cuda(0), ix.index_dtype, bt::contiguous({5}), nullptr, &idx);
    bt::EmbTensor V(Device::cuda(0), d.dtype, bt::contiguous({5}), &vals, nullptr);
    IndexPutArgs a;
    a.self = S.ref();
    a.indices[0] = I.ref();
    a.values = V.ref();
    a.out = S.mut();
    ASSERT_TRUE(plan.run(bt::kGpu, W, a).is_ok());
    const Status st = plan.check_indices(bt::kGpu, W);
    if (v == 8) EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << st.to_string();
    else EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  BT_EXPECT_STATUS(plan.check_indices(bt::kGpu, Workspace(ws.data(), 8)), StatusCode::WorkspaceTooSmall,
                   "IndexPutPlan: workspace");
}

TEST(IndexPutCuda, RunTwiceBitIdentical) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const AdvancedIndex ix = adv_index(DType::I64, {512, 256}, {{0, {1 << 18}}, {1, {1 << 18}}});
  const IndexPutDescriptor d = put_desc(DType::BF16, ix, {1 << 18}, true);
  const auto self = bt::adv_values(DType::BF16, 512 * 256, rng), vals = bt::adv_values(DType::BF16, 1 << 18, rng);
  Indices I;
  I.v[0] = bt::adv_indices(1 << 18, 16, rng);  // rows in [-16, 16): heavy duplicates
  I.v[1] = bt::adv_indices(1 << 18, 256, rng);
  const auto L = bt::adv_contiguous(ix, {512, 256}, {1 << 18});
  const auto a = bt::run_index_put(bt::kGpu, d, self, I.v, vals, L, false, 0xff);
  const auto b = bt::run_index_put(bt::kGpu, d, self, I.v, vals, L, false, 0x5a);
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
  EXPECT_EQ(a.raw, b.raw);
}

// Shapes near the benchmark's (smaller: the CPU reference checks them).
TEST(AdvancedIndexCuda, BenchLikeShapes) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const AdvancedIndex rc = adv_index(DType::I64, {1024, 512}, {{0, {1 << 16}}, {1, {1 << 16}}});
  const auto x = bt::adv_values(DType::F32, 1024 * 512, rng);
  const Indices I = random_adv_indices(rc, rng);
  expect_get_matches(get_desc(DType::F32, rc), x, I, bt::adv_contiguous(rc, {1 << 16}), "x[rows, cols]");
  expect_put_matches(put_desc(DType::F32, rc, {1 << 16}, true), std::vector<double>(1024 * 512, 0.0), I,
                     bt::adv_values(DType::F32, 1 << 16, rng), bt::adv_contiguous(rc, {1024, 512}, {1 << 16}),
                     "index_put_ accumulate");
  const AdvancedIndex sc = adv_index(DType::I64, {256, 1024}, {{1, {300}}});  // x[:, cols]
  expect_get_matches(get_desc(DType::BF16, sc), bt::adv_values(DType::BF16, 256 * 1024, rng), random_adv_indices(sc, rng),
                     bt::adv_contiguous(sc, {256, 300}), "x[:, cols]");
}

}  // namespace
