// IndexSelectPlan / IndexUpdatePlan on the GPU against the CPU reference, bit
// for bit (index_select copies; the updates combine every slice's run in
// position order with the same operations on both backends):
//   * all dtypes (f32, f64, f16, bf16; i32 / i64 for select, copy, fill), both
//     index dtypes, odd sizes, many duplicates, every mode, include_self, in
//     place and out of place, negative dims, 0-D index, zero-size problems;
//   * strided views and the variant sku_for() names;
//   * bad indices: select writes zero slices, the updates skip them,
//     check_indices() names the first bad position, and the next valid run
//     clears the error word;
//   * run twice bit-identical (many duplicates).
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/index_dim_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::IdxData;
using bt::IdxLayouts;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();
constexpr DType kFloat[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

IndexSelectDescriptor sel(DType t, Dims self, int64_t dim, Dims index, DType it = DType::I64) {
  IndexSelectDescriptor d;
  d.dtype = t;
  d.index_dtype = it;
  d.self_shape = self;
  d.dim = dim;
  d.index_shape = index;
  return d;
}

IndexUpdateDescriptor upd(IndexUpdateMode m, DType t, Dims self, int64_t dim, Dims index, DType it = DType::I64) {
  IndexUpdateDescriptor d;
  d.mode = m;
  d.dtype = t;
  d.index_dtype = it;
  d.self_shape = self;
  d.dim = dim;
  d.index_shape = index;
  return d;
}

std::string what(const IndexUpdateDescriptor& d, bool in_place) {
  return std::string(index_update_mode_name(d.mode)) + " " + std::string(dtype_name(d.dtype)) + " self " +
         d.self_shape.to_string() + " dim " + std::to_string(d.dim) + " index " + d.index_shape.to_string() +
         (d.include_self ? "" : " exclude_self") + (in_place ? " in place" : "");
}

struct Shape {
  Dims self;
  int64_t dim;
  Dims index;
};
const Shape kShapes[] = {{{37, 13}, 0, {50}},    {{64, 1024}, 0, {300}}, {{3, 50, 24}, 1, {77}},
                         {{5, 7, 3}, -1, {9}},   {{6, 11, 5}, -2, {}},   {{129}, 0, {1000}},
                         {{2, 9, 3, 8}, 1, {17}}};

void expect_select_matches(const IndexSelectDescriptor& d, const IdxData& e, const IdxLayouts& L, const std::string& w) {
  const auto gpu = bt::idx_select(bt::kGpu, d, e, L);
  const auto cpu = bt::idx_select(kCpu, d, e, L);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.raw, cpu.raw) << "index_select differs from the CPU (gaps included): " << w;
}

void expect_update_matches(const IndexUpdateDescriptor& d, const IdxData& e, const IdxLayouts& L, bool in_place) {
  const auto gpu = bt::idx_update(bt::kGpu, d, e, L, in_place);
  const auto cpu = bt::idx_update(kCpu, d, e, L, in_place);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << what(d, in_place);
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << what(d, in_place);
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.raw, cpu.raw) << "update differs from the CPU (gaps included): " << what(d, in_place);
}

TEST(IndexDimCuda, SelectMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64})
    for (DType it : {DType::I32, DType::I64})
      for (const Shape& s : kShapes) {
        const IndexSelectDescriptor d = sel(t, s.self, s.dim, s.index, it);
        const IdxData e = bt::idx_random(t, s.self, s.dim, bt::numel(s.index), false, rng, true);
        expect_select_matches(d, e, bt::idx_contiguous(s.self, s.dim, s.index),
                              std::string(dtype_name(t)) + " " + s.self.to_string() + " dim " + std::to_string(s.dim));
      }
}

TEST(IndexDimCuda, UpdateMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Copy, IndexUpdateMode::Fill, IndexUpdateMode::Prod,
                            IndexUpdateMode::Mean, IndexUpdateMode::Amax, IndexUpdateMode::Amin})
    for (DType t : kFloat)
      for (const Shape& s : kShapes)
        for (bool include_self : {true, false})
          for (bool in_place : {false, true}) {
            IndexUpdateDescriptor d = upd(m, t, s.self, s.dim, s.index, in_place ? DType::I32 : DType::I64);
            d.include_self = include_self;
            d.alpha = m == IndexUpdateMode::Add ? 0.3 : 1.0;
            d.value = -2.75;
            const IdxData e = bt::idx_random(t, s.self, s.dim, bt::numel(s.index), m != IndexUpdateMode::Fill, rng, true);
            expect_update_matches(d, e, bt::idx_contiguous(s.self, s.dim, s.index), in_place);
          }
  for (DType t : {DType::I32, DType::I64})
    for (IndexUpdateMode m : {IndexUpdateMode::Copy, IndexUpdateMode::Fill})
      for (bool in_place : {false, true}) {
        IndexUpdateDescriptor d = upd(m, t, {37, 13}, 0, {50});
        d.value = -9;
        const IdxData e = bt::idx_random(t, d.self_shape, 0, 50, m == IndexUpdateMode::Copy, rng, true);
        expect_update_matches(d, e, bt::idx_contiguous(d.self_shape, 0, {50}), in_place);
      }
}

TEST(IndexDimCuda, StridedViewsAndVariants) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const Dims self{6, 10, 16};
  for (int64_t dim : {0, 1, 2}) {
    const IndexSelectDescriptor d = sel(DType::BF16, self, dim, {7}, DType::I32);
    auto p = IndexSelectPlan::select(bt::kGpu, d);
    ASSERT_TRUE(p) << p.status().to_string();
    EXPECT_EQ(p->sku().variant, dim == 2 ? "slice" : "slice.vec16") << dim;  // inner 16 bf16 = 32 bytes for dim 0, 1
    const IdxData e = bt::idx_random(DType::BF16, self, dim, 7, false, rng, true);
    IdxLayouts L = bt::idx_contiguous(self, dim, {7});
    const auto contiguous = bt::idx_select(bt::kGpu, d, e, L);
    EXPECT_EQ(contiguous.variant, dim == 2 ? "slice" : "slice.vec16");
    L.self = bt::permuted(self, {2, 0, 1});
    L.out = bt::every_other(bt::idx_with_n(self, dim, 7));
    L.index = bt::every_other({7});
    EXPECT_EQ(bt::idx_select(bt::kGpu, d, e, L).variant, "slice");
    expect_select_matches(d, e, L, "strided dim " + std::to_string(dim));
    for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Copy, IndexUpdateMode::Amax}) {
      const IndexUpdateDescriptor u = upd(m, DType::F32, self, dim, {7});
      const IdxData eu = bt::idx_random(DType::F32, self, dim, 7, true, rng, true);
      IdxLayouts Lu = bt::idx_contiguous(self, dim, {7});
      Lu.self = bt::permuted(self, {1, 2, 0});
      Lu.source = bt::every_other(bt::idx_with_n(self, dim, 7));
      Lu.result = bt::permuted(self, {2, 1, 0});
      expect_update_matches(u, eu, Lu, false);
      expect_update_matches(u, eu, Lu, true);
    }
  }
}

TEST(IndexDimCuda, ZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const Shape cases[] = {{{4, 3}, 0, {0}}, {{0, 3}, 0, {0}}, {{0, 3}, 1, {2}}, {{4, 0}, 0, {3}}, {{2, 5, 0}, 1, {4}}};
  for (const Shape& s : cases) {
    const IdxData e = bt::idx_random(DType::F32, s.self, s.dim, bt::numel(s.index), true, rng);
    expect_select_matches(sel(DType::F32, s.self, s.dim, s.index), e, bt::idx_contiguous(s.self, s.dim, s.index),
                          "zero-size " + s.self.to_string());
    for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Mean})
      for (bool in_place : {false, true})
        expect_update_matches(upd(m, DType::F32, s.self, s.dim, s.index), e, bt::idx_contiguous(s.self, s.dim, s.index),
                              in_place);
  }
}

TEST(IndexDimCuda, NanPropagatesThroughAmaxAmin) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (DType t : kFloat)
    for (IndexUpdateMode m : {IndexUpdateMode::Amax, IndexUpdateMode::Amin}) {
      IndexUpdateDescriptor d = upd(m, t, {5, 4}, 0, {6});
      IdxData e = bt::idx_random(t, d.self_shape, 0, 6, true, rng);
      e.index = {1, 1, 3, 1, 0, 3};
      e.source[4 * 1 + 2] = bt::kNaN;  // position 1 -> slice 1, column 2
      e.self[4 * 3 + 0] = bt::kNaN;    // slice 3, column 0 (self)
      d.include_self = true;
      const auto r = bt::idx_update(bt::kGpu, d, e, bt::idx_contiguous(d.self_shape, 0, {6}), false);
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      EXPECT_TRUE(std::isnan(r.out[4 * 1 + 2])) << what(d, false);
      EXPECT_TRUE(std::isnan(r.out[4 * 3 + 0])) << what(d, false);
      EXPECT_FALSE(std::isnan(r.out[4 * 1 + 1])) << what(d, false);
    }
}

TEST(IndexDimCuda, BadIndicesAreSkippedAndReported) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const Dims self{4, 9, 8};
  const int64_t dim = 1, n = 12;
  for (DType it : {DType::I32, DType::I64}) {
    // index_select: the bad positions' slices are zeros; the first bad position is named.
    const IndexSelectDescriptor d = sel(DType::F32, self, dim, {n}, it);
    IdxData e = bt::idx_random(DType::F32, self, dim, n, false, rng);
    e.index[5] = -1;
    e.index[9] = 9;
    const IdxLayouts L = bt::idx_contiguous(self, dim, {n});
    const auto r = bt::idx_select(bt::kGpu, d, e, L);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    BT_EXPECT_STATUS(r.check, StatusCode::InvalidProblem, "IndexSelectPlan: index position 5 is outside [0, 9)");
    IdxData good = e;
    good.index[5] = good.index[9] = 0;
    std::vector<double> want = bt::idx_naive_select(d, good);
    for (int64_t o = 0; o < 4; ++o)
      for (int64_t k : {5, 9})
        for (int64_t i = 0; i < 8; ++i) want[static_cast<size_t>((o * n + k) * 8 + i)] = 0.0;
    EXPECT_EQ(r.out, want);

    // updates: the bad contributions are skipped (the model without them).
    for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Copy, IndexUpdateMode::Mean}) {
      const IndexUpdateDescriptor u = upd(m, DType::F32, self, dim, {n}, it);
      IdxData eu = bt::idx_random(DType::F32, self, dim, n, true, rng, true);
      eu.index[3] = 100;
      eu.index[7] = -3;
      const auto ru = bt::idx_update(bt::kGpu, u, eu, L, false);
      ASSERT_TRUE(ru.st.is_ok()) << ru.st.to_string();
      BT_EXPECT_STATUS(ru.check, StatusCode::InvalidProblem, "IndexUpdatePlan: index position 3 is outside [0, 9)");
      // Without positions 3 and 7: a problem of n - 2 positions.
      IdxData kept;
      kept.self = eu.self;
      IndexUpdateDescriptor uk = u;
      uk.index_shape = Dims{n - 2};
      const Dims src_shape = bt::idx_with_n(self, dim, n);
      for (int64_t k = 0; k < n; ++k)
        if (k != 3 && k != 7) kept.index.push_back(eu.index[static_cast<size_t>(k)]);
      for (int64_t i = 0; i < bt::numel(src_shape); ++i) {
        const Dims c = bt::unravel(i, src_shape);
        if (c[1] != 3 && c[1] != 7) kept.source.push_back(eu.source[static_cast<size_t>(i)]);
      }
      EXPECT_EQ(ru.out, bt::idx_naive_update<float>(uk, kept)) << what(u, false);
      // The next valid run clears the error word.
      eu.index[3] = eu.index[7] = 0;
      const auto ok = bt::idx_update(bt::kGpu, u, eu, L, false);
      ASSERT_TRUE(ok.st.is_ok());
      EXPECT_TRUE(ok.check.is_ok()) << ok.check.to_string();
    }
    // index_fill: negatives down to -S wrap; below that is bad.
    IndexUpdateDescriptor f = upd(IndexUpdateMode::Fill, DType::F32, self, dim, {n}, it);
    f.value = 3;
    IdxData ef = bt::idx_random(DType::F32, self, dim, n, false, rng, false, -9);
    expect_update_matches(f, ef, L, false);
    ef.index[2] = -10;
    const auto rf = bt::idx_update(bt::kGpu, f, ef, L, false);
    ASSERT_TRUE(rf.st.is_ok());
    BT_EXPECT_STATUS(rf.check, StatusCode::InvalidProblem, "IndexUpdatePlan: index position 2 is outside [-9, 9)");
  }
}

TEST(IndexDimCuda, RunTwiceBitIdentical) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Mean, IndexUpdateMode::Prod}) {
    const IndexUpdateDescriptor d = upd(m, DType::BF16, {500, 257}, 0, {6000});
    const IdxData e = bt::idx_random(DType::BF16, d.self_shape, 0, 6000, true, rng, true);  // half on slice 0
    const IdxLayouts L = bt::idx_contiguous(d.self_shape, 0, {6000});
    const auto a = bt::idx_update(bt::kGpu, d, e, L, false, 0xff);
    const auto b = bt::idx_update(bt::kGpu, d, e, L, false, 0x5a);
    ASSERT_TRUE(a.st.is_ok() && b.st.is_ok()) << a.st.to_string() << b.st.to_string();
    EXPECT_EQ(a.raw, b.raw) << what(d, false);
    expect_update_matches(d, e, L, false);
  }
}

}  // namespace
