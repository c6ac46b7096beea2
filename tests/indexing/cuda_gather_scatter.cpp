// GatherPlan / ScatterPlan on the GPU against the CPU reference, bit for bit
// (gather copies; scatter reduces every destination in position order in the
// same accumulator on both backends, scatter_combine.hpp):
//   * every dtype, i32 / i64 indices, odd sizes, every reduce mode with
//     include_self on / off, src or value, heavy duplicates, in place;
//   * strided and broadcast (take_along_dim) views, the gaps of out untouched;
//   * zero-size problems (no index element: out = self);
//   * bad indices: gather writes zero, scatter skips, check_indices() names the
//     first bad position, the next valid run clears the error word;
//   * run twice bit-identical; shapes near the benchmark's.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/gather_scatter_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();
constexpr DType kFloat[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
constexpr DType kGatherTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32,
                                  DType::I64, DType::I16, DType::I8,  DType::U8,   DType::Bool};
constexpr ScatterReduce kModes[] = {ScatterReduce::None, ScatterReduce::Sum,  ScatterReduce::Prod,
                                    ScatterReduce::Mean, ScatterReduce::Amax, ScatterReduce::Amin};

using bt::gather_desc;
using bt::scatter_desc;

std::vector<double> values_of(DType t, int64_t n, Rng& rng, double lo = -1.0, double hi = 1.0) {
  if (t == DType::I32 || t == DType::I64) {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<double>(bt::uniform_int(rng, -100000, 100000));
    return v;
  }
  if (!bt::is_fp(t)) return bt::random_values(t, n, rng, -100, 100);  // i16 / i8 / u8 (wrapped) / bool
  return bt::random_values(t, n, rng, lo, hi);
}

std::string what(const ScatterDescriptor& d) {
  return std::string(dtype_name(d.dtype)) + " idx " + std::string(dtype_name(d.index_dtype)) + " " + scatter_reduce_name(d.reduce) +
         (d.include_self ? " include_self" : " exclude_self") + (d.use_value ? " value" : " src") + " self " +
         d.self_shape.to_string() + " index " + d.index_shape.to_string() + " dim " + std::to_string(d.dim);
}

void expect_gather_matches(const GatherDescriptor& d, const std::vector<double>& x, const std::vector<int64_t>& idx,
                           const bt::GatherLayouts& L, const std::string& w) {
  const auto gpu = bt::run_gather(bt::kGpu, d, x, idx, L);
  const auto cpu = bt::run_gather(kCpu, d, x, idx, L);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.variant, "elementwise");
  EXPECT_EQ(gpu.raw, cpu.raw) << "gather differs from the CPU (gaps included): " << w;
}

void expect_scatter_matches(const ScatterDescriptor& d, const std::vector<double>& self,
                            const std::vector<int64_t>& idx, const std::vector<double>& src,
                            const bt::ScatterLayouts& L, bool in_place) {
  const auto gpu = bt::run_scatter(bt::kGpu, d, self, idx, src, L, in_place);
  const auto cpu = bt::run_scatter(kCpu, d, self, idx, src, L, in_place);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << what(d);
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << what(d);
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.variant, "sorted");
  EXPECT_EQ(gpu.raw, cpu.raw) << "scatter differs from the CPU (gaps included): " << what(d)
                              << (in_place ? " in place" : "");
}

TEST(GatherCuda, MatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims x, index;
    int64_t dim;
  };
  const Case cases[] = {{{1000}, {3001}, 0},         {{37, 53}, {29, 71}, 1},  {{37, 53}, {90, 53}, -2},
                        {{5, 7, 9}, {5, 3, 9}, 1},   {{5, 7, 9}, {4, 7, 2}, -1}, {{1, 1, 1}, {1, 1, 5}, 2}};
  for (const DType t : kGatherTypes)
    for (const DType it : {DType::I32, DType::I64})
      for (const Case& c : cases) {
        const GatherDescriptor d = gather_desc(t, it, c.x, c.index, c.dim);
        const int64_t rd = bt::resolved_dim(c.dim, c.x.rank);
        const auto x = values_of(t, bt::numel(c.x), rng);
        const auto idx = bt::random_indices(bt::numel(c.index), c.x[rd], rng, 2);
        expect_gather_matches(d, x, idx, bt::gather_contiguous(d),
                              std::string(dtype_name(t)) + " x " + c.x.to_string() + " dim " + std::to_string(c.dim));
      }
}

// take_along_dim through broadcast views, and other strides.
TEST(GatherCuda, StridedAndBroadcastViews) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const GatherDescriptor d = gather_desc(DType::F16, DType::I64, {33, 40}, {33, 17}, 1);
  const bt::Layout xs[] = {bt::transposed({33, 40}), bt::broadcast({33, 40}, 0), bt::padded({33, 40}, 2)};
  const bt::Layout is[] = {bt::broadcast({33, 17}, 0), bt::every_other({33, 17}), bt::transposed({33, 17})};
  const bt::Layout os[] = {bt::padded({33, 17}, 3), bt::transposed({33, 17}), bt::every_other({33, 17})};
  for (int k = 0; k < 3; ++k) {
    auto x = bt::random_values(DType::F16, 33 * 40, rng);
    auto idx = bt::random_indices(33 * 17, 40, rng);
    if (k == 1)
      for (size_t i = 40; i < x.size(); ++i) x[i] = x[i % 40];
    if (k == 0)
      for (size_t i = 17; i < idx.size(); ++i) idx[i] = idx[i % 17];
    expect_gather_matches(d, x, idx, {xs[k], is[k], os[k]}, bt::describe(xs[k]));
  }
}

TEST(ScatterCuda, EveryModeMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : kFloat)
    for (const ScatterReduce m : kModes)
      for (const bool include_self : {true, false})
        for (const bool use_value : {false, true})
          for (const bool in_place : {false, true}) {
            if (use_value && in_place) continue;  // covered out of place; keeps the test short
            ScatterDescriptor d = scatter_desc(t, use_value ? DType::I32 : DType::I64, {33, 47}, {100, 40},
                                               {101, 45}, 0, m, include_self);
            d.use_value = use_value;
            d.value = 1.03125;
            const auto self = bt::random_values(t, 33 * 47, rng, 0.8, 1.25);
            const auto src = bt::random_values(t, 101 * 45, rng, 0.8, 1.25);
            const auto idx = bt::random_indices(4000, 33, rng, 2);  // half the rows on 2 rows
            expect_scatter_matches(d, self, idx, src, bt::scatter_contiguous(d), in_place);
          }
}

// The opt-in atomic route (require_deterministic = false, reduce Sum):
// small integer values, so every sum is exact in every dtype whatever the
// order of the atomic additions, and the result must equal the CPU's bits.
TEST(ScatterCuda, AtomicSumOptIn) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  PlanPreference pref;
  pref.require_deterministic = false;
  auto ints = [&](int64_t n) {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<double>(bt::uniform_int(rng, -4, 4));
    return v;
  };
  for (const DType t : kFloat)
    for (const bool include_self : {true, false})
      for (const bool in_place : {false, true})
        for (const bool use_value : {false, true}) {
          if (use_value && in_place) continue;
          ScatterDescriptor d = scatter_desc(t, DType::I64, {33, 47}, {100, 40}, {101, 45}, 0, ScatterReduce::Sum,
                                             include_self);
          d.use_value = use_value;
          d.value = 2.0;
          const auto self = ints(33 * 47), src = ints(101 * 45);
          auto idx = bt::random_indices(4000, 33, rng, 2);
          const auto L = bt::scatter_contiguous(d);
          const auto gpu = bt::run_scatter(bt::kGpu, d, self, idx, src, L, in_place, 0xff, pref);
          const auto cpu = bt::run_scatter(kCpu, d, self, idx, src, L, in_place);
          ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << what(d);
          ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string();
          EXPECT_EQ(gpu.variant, "atomic");
          EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
          EXPECT_EQ(gpu.raw, cpu.raw) << what(d) << (in_place ? " in place" : "");
          // A bad index: skipped (nothing written out of bounds) and reported.
          idx[17] = 33;
          const auto bad = bt::run_scatter(bt::kGpu, d, self, idx, src, L, in_place, 0xff, pref);
          ASSERT_TRUE(bad.st.is_ok()) << bad.st.to_string();
          EXPECT_EQ(bad.check.code(), StatusCode::InvalidProblem) << bad.check.to_string();
        }
  // Signed zeros: the 16-bit packed atomics add -0.0 to the pair partner, which
  // must keep every untouched -0.0 (adding +0.0 would turn it into +0.0).
  for (const DType t : {DType::F16, DType::BF16}) {
    const ScatterDescriptor d = scatter_desc(t, DType::I64, {9, 31}, {5, 31}, {5, 31}, 0, ScatterReduce::Sum);
    const std::vector<double> self(9 * 31, -0.0), src(5 * 31, -0.0);
    const auto idx = bt::random_indices(5 * 31, 9, rng, 2);
    const auto L = bt::scatter_contiguous(d);
    const auto gpu = bt::run_scatter(bt::kGpu, d, self, idx, src, L, true, 0xff, pref);
    const auto cpu = bt::run_scatter(kCpu, d, self, idx, src, L, true);
    ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string();
    EXPECT_EQ(gpu.raw, cpu.raw) << what(d);
  }
  auto plan = ScatterPlan::select(bt::kGpu, scatter_desc(DType::F32, DType::I64, {8, 4}, {8, 4}, {8, 4}, 0,
                                                         ScatterReduce::Sum), pref);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_FALSE(plan->sku().precision.deterministic);
  // Other reductions keep the sorted, deterministic route.
  auto amax = ScatterPlan::select(bt::kGpu, scatter_desc(DType::F32, DType::I64, {8, 4}, {8, 4}, {8, 4}, 0,
                                                         ScatterReduce::Amax), pref);
  ASSERT_TRUE(amax.is_ok());
  EXPECT_EQ(amax->sku().variant, "sorted");
}

// ---- integer dtypes: GPU vs CPU reference, bit for bit -------------------------------------
constexpr DType kInts[] = {DType::I8, DType::U8, DType::I16, DType::I32, DType::I64};

std::vector<int64_t> int_values(DType t, int64_t n, Rng& rng) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) {
    switch (t) {  // the whole range: sums and products wrap
      case DType::I8: x = bt::uniform_int(rng, -128, 127); break;
      case DType::U8: x = bt::uniform_int(rng, 0, 255); break;
      case DType::I16: x = bt::uniform_int(rng, -32768, 32767); break;
      case DType::I32: x = bt::uniform_int(rng, -2147483648LL, 2147483647LL); break;
      default: x = static_cast<int64_t>(rng()); break;
    }
  }
  return v;
}

// i32 / i64 Sum / Amax / Amin take the integer-atomic route (deterministic:
// integer add / max / min give the same bits in any order), whatever
// require_deterministic says; the rest the sorted route.
std::string int_variant(const ScatterDescriptor& d) {
  const bool wide = d.dtype == DType::I32 || d.dtype == DType::I64;
  const bool m = d.reduce == ScatterReduce::Sum || d.reduce == ScatterReduce::Amax || d.reduce == ScatterReduce::Amin;
  return wide && m ? "atomic" : "sorted";
}

void expect_scatter_int_matches(const ScatterDescriptor& d, const std::vector<int64_t>& self,
                                const std::vector<int64_t>& idx, const std::vector<int64_t>& src,
                                const bt::ScatterLayouts& L, bool in_place) {
  for (const bool det : {true, false}) {
    PlanPreference pref;
    pref.require_deterministic = det;
    const auto gpu = bt::run_scatter_int(bt::kGpu, d, self, idx, src, L, in_place, 0xff, pref);
    const auto cpu = bt::run_scatter_int(kCpu, d, self, idx, src, L, in_place);
    ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << what(d);
    ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << what(d);
    EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
    EXPECT_EQ(gpu.variant, int_variant(d)) << what(d);
    EXPECT_TRUE(gpu.precision.deterministic) << what(d);
    EXPECT_EQ(gpu.raw, cpu.raw) << "scatter differs from the CPU (gaps included): " << what(d)
                                << (in_place ? " in place" : "");
  }
}

TEST(ScatterCuda, IntegerEveryModeMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : kInts)
    for (const ScatterReduce m : kModes)
      for (const bool include_self : {true, false})
        for (const bool use_value : {false, true})
          for (const int64_t dim : {0, 1}) {
            // index.size(d) <= self.size(d) off dim (torch's rule): [50, 23] along dim 0, [30, 23] along dim 1
            const Dims ishape = dim == 0 ? Dims{50, 23} : Dims{30, 23};
            ScatterDescriptor d = scatter_desc(t, dim == 0 ? DType::I64 : DType::I32, {37, 29}, ishape, {53, 29},
                                               dim, m, include_self);
            d.use_value = use_value;
            d.value = t == DType::U8 ? 201.0 : -77.0;
            const auto self = int_values(t, 37 * 29, rng), src = int_values(t, 53 * 29, rng);
            const auto idx = bt::random_indices(ishape[0] * ishape[1], d.self_shape[dim], rng, 3);
            for (const bool in_place : {false, true})
              expect_scatter_int_matches(d, self, idx, src, bt::scatter_contiguous(d), in_place);
          }
}

TEST(ScatterCuda, IntegerStridedAndBadIndices) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : kInts)
    for (const ScatterReduce m : kModes) {
      const ScatterDescriptor d = scatter_desc(t, DType::I64, {6, 5}, {4, 5}, {4, 6}, 0, m, m != ScatterReduce::Amax);
      bt::ScatterLayouts L{bt::transposed({6, 5}), bt::every_other({4, 5}), bt::padded({4, 6}, 2),
                           bt::padded({6, 5}, 1)};
      const auto self = int_values(t, 30, rng), src = int_values(t, 24, rng);
      expect_scatter_int_matches(d, self, bt::random_indices(20, 6, rng, 2), src, L, false);
      // bad indices: skipped, the first one reported; the rest as the CPU without them
      auto idx = bt::random_indices(20, 6, rng, 2);
      idx[7] = -1, idx[12] = 6;
      const auto gpu = bt::run_scatter_int(bt::kGpu, d, self, idx, src, L);
      ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string();
      BT_EXPECT_STATUS(gpu.check, StatusCode::InvalidProblem, "ScatterPlan: index element [1,2] (position 7)");
      EXPECT_EQ(gpu.iout, bt::naive_scatter_int(d, self, idx, src)) << what(d);
    }
}

TEST(ScatterCuda, IntegerAtomicRunTwiceBitIdenticalAndZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : {DType::I32, DType::I64})
    for (const ScatterReduce m : {ScatterReduce::Sum, ScatterReduce::Amax, ScatterReduce::Amin}) {
      const ScatterDescriptor d = scatter_desc(t, DType::I64, {64, 257}, {4096, 257}, {4096, 257}, 0, m, false);
      const auto self = int_values(t, 64 * 257, rng), src = int_values(t, 4096 * 257, rng);
      const auto idx = bt::random_indices(4096 * 257, 64, rng, 2);  // ~64 contributions per destination
      const auto a = bt::run_scatter_int(bt::kGpu, d, self, idx, src, bt::scatter_contiguous(d));
      const auto b = bt::run_scatter_int(bt::kGpu, d, self, idx, src, bt::scatter_contiguous(d), false, 0x5a);
      ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
      EXPECT_EQ(a.variant, "atomic");
      EXPECT_EQ(a.raw, b.raw) << what(d);
      EXPECT_EQ(a.iout, bt::naive_scatter_int(d, self, idx, src)) << what(d);
      const ScatterDescriptor z = scatter_desc(t, DType::I64, {3, 4}, {0, 4}, {0, 4}, 0, m);
      const auto zs = int_values(t, 12, rng);
      const auto r = bt::run_scatter_int(bt::kGpu, z, zs, {}, {}, bt::scatter_contiguous(z));
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      EXPECT_EQ(r.iout, zs);
    }
}

// ---- "sorted.rows": an index constant along every axis but dim (stride 0 there) -----------
// The index's logical values repeat one value per step of dim; the GPU result
// must equal the CPU reference's bits (the same order: ascending position per
// destination), every mode, float and integer dtypes, src larger than index.
bt::Layout rows_layout(const Dims& shape, int64_t dim) {
  Dims inner = shape;
  for (int k = 0; k < shape.rank; ++k)
    if (k != dim) inner[k] = 1;
  bt::Layout L = bt::contiguous(inner);
  L.shape = shape;
  for (int k = 0; k < shape.rank; ++k)
    if (k != dim) L.strides[k] = 0;
  L.name = "rows(dim " + std::to_string(dim) + ")";
  return L;
}

std::vector<int64_t> row_constant_indices(const Dims& shape, int64_t dim, int64_t size, Rng& rng, int64_t hot) {
  const auto per_row = bt::random_indices(shape[dim], size, rng, hot);
  std::vector<int64_t> idx(static_cast<size_t>(bt::numel(shape)));
  for (size_t p = 0; p < idx.size(); ++p) idx[p] = per_row[static_cast<size_t>(bt::unravel(static_cast<int64_t>(p), shape)[dim])];
  return idx;
}

TEST(ScatterCuda, BroadcastIndexRowsPathMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims self, index, src;
    int64_t dim;
  };
  const Case cases[] = {{{37, 300}, {50, 260}, {53, 300}, 0},
                        {{300, 37}, {260, 50}, {300, 53}, 1},
                        {{5, 19, 66}, {4, 40, 33}, {4, 41, 33}, 1},
                        {{3, 4, 9}, {3, 4, 11}, {3, 5, 12}, -1}};
  const DType types[] = {DType::BF16, DType::F32, DType::F64, DType::F16, DType::I8, DType::I64};
  for (const DType t : types)
    for (const Case& c : cases)
      for (const ScatterReduce m : kModes)
        for (const bool include_self : {true, false})
          for (const bool use_value : {false, true}) {
            ScatterDescriptor d = scatter_desc(t, c.dim == 0 ? DType::I64 : DType::I32, c.self, c.index, c.src, c.dim,
                                               m, include_self);
            d.use_value = use_value;
            d.value = bt::is_fp(t) ? -0.7 : -3.0;
            const int64_t rd = bt::resolved_dim(c.dim, c.self.rank);
            bt::ScatterLayouts L = bt::scatter_contiguous(d);
            L.index = rows_layout(c.index, rd);
            const auto idx = row_constant_indices(c.index, rd, c.self[rd], rng, 2);
            const bool in_place = include_self;
            if (bt::is_fp(t)) {
              const auto self = values_of(t, bt::numel(c.self), rng, 0.5, 1.5);
              const auto src = values_of(t, bt::numel(c.src), rng, 0.5, 1.5);
              const auto gpu = bt::run_scatter(bt::kGpu, d, self, idx, src, L, in_place);
              const auto cpu = bt::run_scatter(kCpu, d, self, idx, src, L, in_place);
              ASSERT_TRUE(gpu.st.is_ok() && cpu.st.is_ok()) << gpu.st.to_string() << " " << what(d);
              EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
              EXPECT_EQ(gpu.variant, "sorted.rows") << what(d);
              EXPECT_EQ(gpu.raw, cpu.raw) << "rows path differs from the CPU: " << what(d);
            } else {
              const auto self = int_values(t, bt::numel(c.self), rng), src = int_values(t, bt::numel(c.src), rng);
              const auto gpu = bt::run_scatter_int(bt::kGpu, d, self, idx, src, L, in_place);
              const auto cpu = bt::run_scatter_int(kCpu, d, self, idx, src, L, in_place);
              ASSERT_TRUE(gpu.st.is_ok() && cpu.st.is_ok()) << gpu.st.to_string() << " " << what(d);
              const std::string v = int_variant(d);
              EXPECT_EQ(gpu.variant, v == "sorted" ? "sorted.rows" : v) << what(d);
              EXPECT_EQ(gpu.raw, cpu.raw) << "rows path differs from the CPU: " << what(d);
            }
          }
}

TEST(ScatterCuda, BroadcastIndexRowsPathBadIndicesAndRepeatRuns) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  // rank 3, dim 1: index [3, 7, 40] constant along axes 0 and 2; rows 2 and 5 bad.
  const ScatterDescriptor d = scatter_desc(DType::BF16, DType::I64, {3, 6, 40}, {3, 7, 40}, {3, 7, 40}, 1,
                                           ScatterReduce::Sum);
  bt::ScatterLayouts L = bt::scatter_contiguous(d);
  L.index = rows_layout(d.index_shape, 1);
  auto idx = row_constant_indices(d.index_shape, 1, 6, rng, 2);
  for (size_t p = 0; p < idx.size(); ++p) {
    const int64_t k = bt::unravel(static_cast<int64_t>(p), d.index_shape)[1];
    if (k == 2) idx[p] = 6;
    if (k == 5) idx[p] = -1;
  }
  const auto self = values_of(DType::BF16, bt::numel(d.self_shape), rng), src = values_of(DType::BF16, 3 * 7 * 40, rng);
  const auto a = bt::run_scatter(bt::kGpu, d, self, idx, src, L);
  ASSERT_TRUE(a.st.is_ok()) << a.st.to_string();
  EXPECT_EQ(a.variant, "sorted.rows");
  BT_EXPECT_STATUS(a.check, StatusCode::InvalidProblem, "ScatterPlan: index element [0,2,0] (position 80)");
  const auto want = bt::naive_scatter_exact(d, self, idx, src);  // bad ones skipped
  EXPECT_EQ(a.out, want);
  const auto b = bt::run_scatter(bt::kGpu, d, self, idx, src, L, false, 0x5a);
  EXPECT_EQ(a.raw, b.raw) << "run twice";
  // The same values materialized (no stride 0): the general sorted path, the same bits.
  const auto g = bt::run_scatter(bt::kGpu, d, self, idx, src, bt::scatter_contiguous(d));
  EXPECT_EQ(g.variant, "sorted");
  EXPECT_EQ(g.raw, a.raw);
}

TEST(ScatterCuda, OddShapesAndDims) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64})
    for (const int64_t dim : {-1, 1, 0, 2}) {
      const Dims self = {7, 13, 5}, src = {6, 13, 9};
      Dims index = {6, 11, 5};
      const int64_t rd = bt::resolved_dim(dim, 3);
      if (rd == 2) index = {6, 11, 9};  // longer than self along dim: duplicates guaranteed
      ScatterDescriptor d = scatter_desc(DType::BF16, it, self, index, src, dim, ScatterReduce::Sum);
      const auto s = bt::random_values(DType::BF16, bt::numel(self), rng);
      const auto x = bt::random_values(DType::BF16, bt::numel(src), rng);
      const auto idx = bt::random_indices(bt::numel(index), self[rd], rng);
      expect_scatter_matches(d, s, idx, x, bt::scatter_contiguous(d), false);
      d.reduce = ScatterReduce::None;  // the last position wins
      expect_scatter_matches(d, s, idx, x, bt::scatter_contiguous(d), true);
    }
  // Many to one: every index names row 0.
  const ScatterDescriptor d = scatter_desc(DType::F32, DType::I64, {3, 64}, {5000, 64}, {5000, 64}, 0,
                                           ScatterReduce::Mean, false);
  const auto s = bt::random_values(DType::F32, 3 * 64, rng), x = bt::random_values(DType::F32, 5000 * 64, rng);
  expect_scatter_matches(d, s, std::vector<int64_t>(5000 * 64, 0), x, bt::scatter_contiguous(d), false);
}

TEST(ScatterCuda, StridedViews) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const ScatterDescriptor d = scatter_desc(DType::F64, DType::I64, {19, 23}, {30, 23}, {31, 24}, 0, ScatterReduce::Amax);
  const auto self = bt::random_values(DType::F64, 19 * 23, rng), src = bt::random_values(DType::F64, 31 * 24, rng);
  auto idx = bt::random_indices(30 * 23, 19, rng, 3);
  bt::ScatterLayouts L{bt::transposed({19, 23}), bt::every_other({30, 23}), bt::padded({31, 24}, 2),
                       bt::padded({19, 23}, 1)};
  expect_scatter_matches(d, self, idx, src, L, false);
  expect_scatter_matches(d, self, idx, src, L, true);
  L = {bt::padded({19, 23}, 3), bt::broadcast({30, 23}, 0), bt::broadcast({31, 24}, 1), bt::transposed({19, 23})};
  for (size_t i = 23; i < idx.size(); ++i) idx[i] = idx[i % 23];
  std::vector<double> bsrc = src;
  for (size_t i = 0; i < bsrc.size(); ++i) bsrc[i] = src[i / 24 * 24];
  expect_scatter_matches(d, self, idx, bsrc, L, false);
}

TEST(GatherScatterCuda, ZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const ScatterDescriptor d = scatter_desc(DType::F16, DType::I64, {3, 4}, {0, 4}, {0, 4}, 0, ScatterReduce::Sum);
  const auto self = bt::random_values(DType::F16, 12, rng);
  const auto r = bt::run_scatter(bt::kGpu, d, self, {}, {}, bt::scatter_contiguous(d));
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.out, self) << "no index element: out = self";
  const ScatterDescriptor e = scatter_desc(DType::F32, DType::I64, {0, 4}, {0, 2}, {0, 2}, 1);
  auto pe = ScatterPlan::select(bt::kGpu, e);
  ASSERT_TRUE(pe.is_ok());
  EXPECT_EQ(pe->sku().variant, "empty");
  EXPECT_TRUE(bt::run_scatter(bt::kGpu, e, {}, {}, {}, bt::scatter_contiguous(e)).st.is_ok());
  const GatherDescriptor g = gather_desc(DType::BF16, DType::I32, {4, 3}, {4, 0}, 1);
  EXPECT_EQ(GatherPlan::select(bt::kGpu, g).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_gather(bt::kGpu, g, bt::random_values(DType::BF16, 12, rng), {}, bt::gather_contiguous(g)).st.is_ok());
}

TEST(GatherScatterCuda, BadIndicesAreReportedNeverDereferenced) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64}) {
    const GatherDescriptor gd = gather_desc(DType::F32, it, {6, 9}, {4, 11}, 1);
    std::vector<int64_t> idx = bt::random_indices(44, 9, rng);
    idx[30] = -3;       // [2,8]
    idx[13] = 9;        // [1,2]: the first bad position
    idx[40] = 1 << 30;
    const auto x = bt::random_values(DType::F32, 54, rng);
    bt::GatherLayouts GL = bt::gather_contiguous(gd);
    GL.out = bt::padded({4, 11}, 2);
    const auto g = bt::run_gather(bt::kGpu, gd, x, idx, GL);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    BT_EXPECT_STATUS(g.check, StatusCode::InvalidProblem,
                     "GatherPlan: index element [1,2] (position 13) is outside [0, 9) (the size of dim 1; the first "
                     "bad index, found on the GPU: its output element was written as zero)");
    EXPECT_EQ(g.out, bt::naive_gather(gd, x, idx)) << "bad indices read as zero";
    const auto cov = bt::covered(GL.out);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i])
        for (size_t b = 0; b < 4; ++b) ASSERT_EQ(g.raw[i * 4 + b], 0xff) << "out gap element " << i << " written";

    for (const bool in_place : {false, true}) {
      const ScatterDescriptor sd = scatter_desc(DType::F32, it, {6, 9}, {4, 9}, {4, 11}, 1, ScatterReduce::Sum);
      std::vector<int64_t> si = bt::random_indices(36, 9, rng, 2);
      si[25] = 9;   // [2,7]
      si[10] = -1;  // [1,1]: the first bad position
      const auto self = bt::random_values(DType::F32, 54, rng), src = bt::random_values(DType::F32, 44, rng);
      const auto s = bt::run_scatter(bt::kGpu, sd, self, si, src, bt::scatter_contiguous(sd), in_place);
      ASSERT_TRUE(s.st.is_ok()) << s.st.to_string();
      BT_EXPECT_STATUS(s.check, StatusCode::InvalidProblem,
                       "ScatterPlan: index element [1,1] (position 10) is outside [0, 9) (the size of dim 1; the "
                       "first bad index, found on the GPU: its contribution was skipped)");
      EXPECT_EQ(s.out, bt::naive_scatter<float>(sd, self, si, src)) << "bad contributions skipped";
    }
  }
  // The next valid run with the same workspace clears the word.
  const ScatterDescriptor d = scatter_desc(DType::BF16, DType::I64, {8}, {5}, {5}, 0, ScatterReduce::Amin);
  auto plan = ScatterPlan::select(bt::kGpu, d).value();
  Buffer ws(Device::cuda(0), plan.workspace_size());
  const Workspace W(ws.data(), plan.workspace_size());
  std::vector<double> self = bt::random_values(DType::BF16, 8, rng), src = bt::random_values(DType::BF16, 5, rng);
  std::vector<int64_t> idx = {0, 1, 2, 3, 4};
  for (const int64_t v : {int64_t{8}, int64_t{3}}) {
    idx[2] = v;
    bt::EmbTensor S(Device::cuda(0), d.dtype, bt::contiguous({8}), &self, nullptr);
    bt::EmbTensor I(Device::cuda(0), d.index_dtype, bt::contiguous({5}), nullptr, &idx);
    bt::EmbTensor X(Device::cuda(0), d.dtype, bt::contiguous({5}), &src, nullptr);
    bt::EmbTensor O(Device::cuda(0), d.dtype, bt::contiguous({8}), nullptr, nullptr);
    ASSERT_TRUE(plan.run(bt::kGpu, W, {S.ref(), I.ref(), X.ref(), O.mut()}).is_ok());
    const Status st = plan.check_indices(bt::kGpu, W);
    if (v == 8) EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << st.to_string();
    else EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  BT_EXPECT_STATUS(plan.check_indices(bt::kGpu, Workspace(ws.data(), 8)), StatusCode::WorkspaceTooSmall,
                   "ScatterPlan: workspace");
}

TEST(ScatterCuda, RunTwiceBitIdentical) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const ScatterDescriptor d = scatter_desc(DType::BF16, DType::I64, {512, 256}, {4096, 256}, {4096, 256}, 0,
                                           ScatterReduce::Sum);
  const auto self = bt::random_values(DType::BF16, 512 * 256, rng);
  const auto src = bt::random_values(DType::BF16, 4096 * 256, rng);
  const auto idx = bt::random_indices(4096 * 256, 512, rng, 4);
  const auto a = bt::run_scatter(bt::kGpu, d, self, idx, src, bt::scatter_contiguous(d), false, 0xff);
  const auto b = bt::run_scatter(bt::kGpu, d, self, idx, src, bt::scatter_contiguous(d), false, 0x5a);
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
  EXPECT_EQ(a.raw, b.raw);
}

// Shapes near the benchmark's (smaller: the CPU reference checks them).
TEST(GatherScatterCuda, BenchLikeShapes) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const GatherDescriptor g = gather_desc(DType::BF16, DType::I64, {256, 50304}, {256, 64}, 1);
  const auto x = bt::random_values(DType::BF16, 256 * 50304, rng);
  expect_gather_matches(g, x, bt::random_indices(256 * 64, 50304, rng), bt::gather_contiguous(g), "bench gather");
  const ScatterDescriptor s = scatter_desc(DType::BF16, DType::I64, {2048, 512}, {256, 512}, {256, 512}, 0,
                                           ScatterReduce::Sum);
  // random rows: each row of src goes whole to one row of self
  std::vector<int64_t> idx(256 * 512);
  for (size_t r = 0; r < 256; ++r) {
    const int64_t row = bt::uniform_int(rng, 0, 2047);
    for (size_t j = 0; j < 512; ++j) idx[r * 512 + j] = row;
  }
  expect_scatter_matches(s, bt::random_values(DType::BF16, 2048 * 512, rng), idx,
                         bt::random_values(DType::BF16, 256 * 512, rng), bt::scatter_contiguous(s), false);
}

}  // namespace
