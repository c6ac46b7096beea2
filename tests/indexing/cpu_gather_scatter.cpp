// GatherPlan / ScatterPlan on the CPU reference:
//   * every descriptor and argument rule: its StatusCode and message;
//   * bad indices (negative, too large): InvalidProblem naming the first bad
//     position, nothing written;
//   * gather against the naive model: every dtype, ranks 1..3, every dim (also
//     negative), index smaller than x on the other axes, strided and broadcast
//     (take_along_dim) views;
//   * scatter against the naive model, bit for bit in the documented
//     accumulator: every reduce mode, include_self on / off, src or value, heavy
//     duplicates, in place, strided views, zero-size problems; the documented
//     semantics one by one (last wins, mean's count, NaN in amax / amin);
//   * the backward compositions against finite differences (f64).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
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

std::vector<double> values_of(DType t, int64_t n, Rng& rng) {
  if (t == DType::I32 || t == DType::I64) {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<double>(bt::uniform_int(rng, -1000, 1000));
    return v;
  }
  if (!bt::is_fp(t)) return bt::random_values(t, n, rng, -100, 100);  // i16 / i8 / u8 (wrapped) / bool
  return bt::random_values(t, n, rng);
}

// ---- descriptor rules ---------------------------------------------------------------------
TEST(GatherCpu, DescriptorRules) {
  const GatherDescriptor ok = gather_desc(DType::F32, DType::I64, {4, 5}, {3, 2}, 1);
  auto expect = [](const GatherDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(GatherPlan::select(kCpu, d).status(), code, "GatherPlan: " + what);
  };
  GatherDescriptor d = ok;
  d.dtype = DType::C64;
  expect(d, StatusCode::Unsupported, "dtype c64 is not supported (f32, f64, f16, bf16, i32, i64, i16, i8, u8, bool)");
  d = ok, d.index_dtype = DType::F32;
  expect(d, StatusCode::Unsupported, "index_dtype f32 is not supported (i32, i64)");
  d = ok, d.x_shape = Dims{}, d.index_shape = Dims{};
  expect(d, StatusCode::InvalidProblem, "x_shape has rank 0 (view a scalar as shape [1]");
  d = ok, d.index_shape = Dims{3};
  expect(d, StatusCode::InvalidProblem, "index_shape [3] has rank 1, x_shape [4,5] has rank 2 (they must match)");
  d = ok, d.dim = 2;
  expect(d, StatusCode::InvalidProblem, "dim 2 is outside [-2, 2)");
  d = ok, d.dim = -3;
  expect(d, StatusCode::InvalidProblem, "dim -3 is outside [-2, 2)");
  d = ok, d.index_shape = Dims{5, 2};
  expect(d, StatusCode::InvalidProblem,
         "index_shape [5,2] is larger than x_shape [4,5] along dim 0 (5 > 4; only dim 1 may differ)");
  d = ok, d.index_shape = Dims{2, -1};
  expect(d, StatusCode::InvalidProblem, "index_shape");
  d = ok, d.index_shape = Dims{4, 9}, d.dim = -1;  // dim may be larger; negative dim resolved
  auto p = GatherPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->descriptor().dim, 1);
  EXPECT_EQ(p->out_shape(), (Dims{4, 9}));
  EXPECT_EQ(p->sku().op, "indexing.gather");
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_EQ(p->workspace_size(), 0u);
}

TEST(ScatterCpu, DescriptorRules) {
  const ScatterDescriptor ok = scatter_desc(DType::F32, DType::I32, {4, 5}, {3, 2}, {3, 4}, 0, ScatterReduce::Sum);
  auto expect = [](const ScatterDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(ScatterPlan::select(kCpu, d).status(), code, "ScatterPlan: " + what);
  };
  ScatterDescriptor d = ok;
  d.dtype = DType::Bool;
  expect(d, StatusCode::Unsupported, "dtype bool is not supported (f32, f64, f16, bf16, i8, u8, i16, i32, i64)");
  d = ok, d.dtype = DType::I8, d.use_value = true, d.value = 128.0;
  expect(d, StatusCode::InvalidProblem, "value 128 does not fit dtype i8 (truncated toward zero, it must lie in [-128, 127])");
  d.value = std::numeric_limits<double>::quiet_NaN();
  expect(d, StatusCode::InvalidProblem, "value nan does not fit dtype i8");
  d.dtype = DType::U8, d.value = -1.0;
  expect(d, StatusCode::InvalidProblem, "value -1 does not fit dtype u8");
  d.dtype = DType::I64, d.value = 9.2233720368547758e18;
  expect(d, StatusCode::InvalidProblem, "value 9.223372037e+18 does not fit dtype i64 (truncated toward zero, it must lie in [-9.223372037e+18, 9.223372037e+18))");
  d.dtype = DType::I32, d.value = -2.7;  // truncated toward zero
  EXPECT_EQ(ScatterPlan::select(kCpu, d).value().descriptor().value, -2.0);
  d.dtype = DType::U8, d.value = 255.9;
  EXPECT_EQ(ScatterPlan::select(kCpu, d).value().descriptor().value, 255.0);
  d = ok, d.index_dtype = DType::U8;
  expect(d, StatusCode::Unsupported, "index_dtype u8 is not supported (i32, i64)");
  d = ok, d.reduce = static_cast<ScatterReduce>(9);
  expect(d, StatusCode::InvalidProblem, "reduce 9 is not a ScatterReduce (none, sum, prod, mean, amax, amin)");
  d = ok, d.self_shape = Dims{4, 5, 1};
  expect(d, StatusCode::InvalidProblem, "index_shape [3,2] has rank 2, self_shape [4,5,1] has rank 3");
  d = ok, d.index_shape = Dims{3, 6};
  expect(d, StatusCode::InvalidProblem, "index_shape [3,6] is larger than self_shape [4,5] along dim 1 (6 > 5");
  d = ok, d.index_shape = Dims{4, 2};  // fits self along dim 0 (any), but not src
  expect(d, StatusCode::InvalidProblem, "index_shape [4,2] is larger than src_shape [3,4] along dim 0 (4 > 3)");
  d = ok, d.src_shape = Dims{3};
  expect(d, StatusCode::InvalidProblem, "src_shape [3] has rank 1, index_shape [3,2] has rank 2 (they must match)");
  d = ok, d.dim = 2;
  expect(d, StatusCode::InvalidProblem, "dim 2 is outside [-2, 2)");
  // use_value: src_shape is ignored, value rounded to dtype.
  d = ok, d.use_value = true, d.src_shape = Dims{1}, d.dtype = DType::BF16, d.value = 1.0 + 1.0 / 1024;
  auto p = ScatterPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->descriptor().src_shape, Dims{});
  EXPECT_EQ(p->descriptor().value, 1.0);
  EXPECT_EQ(p->sku().op, "indexing.scatter_sum");
  EXPECT_EQ(p->out_shape(), (Dims{4, 5}));
  d = ok, d.dim = -2, d.reduce = ScatterReduce::None, d.include_self = false;
  auto q = ScatterPlan::select(kCpu, d);
  ASSERT_TRUE(q.is_ok());
  EXPECT_EQ(q->descriptor().dim, 0);
  EXPECT_TRUE(q->descriptor().include_self) << "plain scatter always starts from self";
  EXPECT_STREQ(scatter_reduce_name(ScatterReduce::Amin), "amin");
}

// ---- argument rules -------------------------------------------------------------------------
TEST(ScatterCpu, ArgumentRules) {
  const ScatterDescriptor d = scatter_desc(DType::F32, DType::I64, {4}, {2}, {3}, 0, ScatterReduce::Sum);
  auto plan = ScatterPlan::select(kCpu, d).value();
  std::vector<float> self(8, 1.f), src(3, 1.f), out(4, 0.f);
  std::vector<int64_t> idx = {0, 3};
  ScatterArgs a;
  a.self = TensorRef::contiguous(self.data(), Device::cpu(), {4}, 4);
  a.index = TensorRef::contiguous(idx.data(), Device::cpu(), {2}, 2);
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem,
                   "ScatterPlan: src is missing (descriptor.use_value is false)");
  a.src = TensorRef::contiguous(src.data(), Device::cpu(), {3}, 3);
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.out = TensorMut::contiguous(self.data(), Device::cpu(), {4}, 4);  // in place: self's own view
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.out = TensorMut::contiguous(self.data() + 2, Device::cpu(), {4}, 4);  // overlapping, not the same view
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "ScatterPlan: out partially overlaps self (in place needs the same data pointer and strides)");
  a.out = TensorMut::contiguous(src.data(), Device::cpu(), {3}, 3);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "ScatterPlan: out shape [3] must be [4]");
  ScatterDescriptor dv = d;
  dv.use_value = true;
  auto pv = ScatterPlan::select(kCpu, dv).value();
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(pv.can_implement(a), StatusCode::InvalidProblem,
                   "ScatterPlan: src is given but descriptor.use_value is true");

  auto g = GatherPlan::select(kCpu, gather_desc(DType::F32, DType::I64, {4}, {2}, 0)).value();
  GatherArgs ga{TensorRef::contiguous(self.data(), Device::cpu(), {4}, 4),
                TensorRef::contiguous(idx.data(), Device::cpu(), {2}, 2),
                TensorMut::contiguous(self.data() + 1, Device::cpu(), {2}, 2)};
  BT_EXPECT_STATUS(g.can_implement(ga), StatusCode::InvalidProblem, "GatherPlan: out overlaps x");
  ga.out = TensorMut::contiguous(out.data(), Device::cpu(), {2}, 2);
  EXPECT_TRUE(g.can_implement(ga).is_ok());
  ga.index = TensorRef::contiguous(src.data(), Device::cpu(), {2}, 2);
  BT_EXPECT_STATUS(g.can_implement(ga), StatusCode::InvalidProblem, "GatherPlan: index dtype f32 must be i64");
}

// ---- bad indices ----------------------------------------------------------------------------
TEST(GatherScatterCpu, BadIndexNamesTheFirstBadPositionAndWritesNothing) {
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64})
    for (const int64_t bad : {int64_t{-1}, int64_t{4}, int64_t{-5}, int64_t{1000}}) {
      const GatherDescriptor gd = gather_desc(DType::F32, it, {3, 4}, {2, 3}, 1);
      std::vector<int64_t> idx = bt::random_indices(6, 4, rng);
      idx[4] = bad;  // [1,1]
      idx[5] = 9;    // a later bad one is not the one named
      const auto x = bt::random_values(DType::F32, 12, rng);
      const auto g = bt::run_gather(kCpu, gd, x, idx, bt::gather_contiguous(gd));
      BT_EXPECT_STATUS(g.st, StatusCode::InvalidProblem,
                       "GatherPlan: index element [1,1] (position 4) is " + std::to_string(bad) +
                           ", outside [0, 4) (the size of dim 1; the first bad index)");
      for (uint8_t b : g.raw) EXPECT_EQ(b, 0xff) << "out written although the call failed";
      for (const bool in_place : {false, true}) {
        const ScatterDescriptor sd = scatter_desc(DType::F32, it, {3, 4}, {2, 3}, {2, 3}, -1, ScatterReduce::Sum);
        const auto self = bt::random_values(DType::F32, 12, rng), src = bt::random_values(DType::F32, 6, rng);
        const auto s = bt::run_scatter(kCpu, sd, self, idx, src, bt::scatter_contiguous(sd), in_place);
        BT_EXPECT_STATUS(s.st, StatusCode::InvalidProblem, "ScatterPlan: index element [1,1] (position 4) is " +
                                                               std::to_string(bad) + ", outside [0, 4)");
        if (in_place) EXPECT_EQ(s.out, self) << "self changed although the call failed";
        else for (uint8_t b : s.raw) EXPECT_EQ(b, 0xff) << "out written although the call failed";
      }
    }
  auto p = GatherPlan::select(kCpu, gather_desc(DType::F32, DType::I64, {3}, {2}, 0)).value();
  EXPECT_TRUE(p.check_indices(kCpu, Workspace::none()).is_ok());
  EXPECT_EQ(GatherPlan().check_indices(kCpu, Workspace::none()).code(), StatusCode::InvalidProblem);
  EXPECT_EQ(ScatterPlan().run(kCpu, Workspace::none(), {}).code(), StatusCode::InvalidProblem);
}

// ---- gather ---------------------------------------------------------------------------------
TEST(GatherCpu, MatchesNaiveModel) {
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims x, index;
  };
  const Case cases[] = {{{7}, {11}}, {{4, 6}, {3, 9}}, {{3, 4, 5}, {2, 4, 3}}, {{2, 3, 4}, {2, 3, 1}}};
  for (const DType t : kGatherTypes)
    for (const DType it : {DType::I32, DType::I64})
      for (const Case& c : cases)
        for (int64_t dim = -c.x.rank; dim < c.x.rank; ++dim) {
          const int64_t rd = bt::resolved_dim(dim, c.x.rank);
          Dims is = c.index;
          for (int k = 0; k < is.rank; ++k) is[k] = k == rd ? c.index[k] : std::min(c.index[k], c.x[k]);
          const GatherDescriptor d = gather_desc(t, it, c.x, is, dim);
          const auto x = values_of(t, bt::numel(c.x), rng);
          const auto idx = bt::random_indices(bt::numel(is), c.x[rd], rng, 2);
          const auto r = bt::run_gather(kCpu, d, x, idx, bt::gather_contiguous(d));
          ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
          EXPECT_EQ(r.out, bt::naive_gather(d, x, idx)) << dtype_name(t) << " x " << c.x.to_string() << " dim " << dim;
        }
}

// take_along_dim: x and index broadcast against each other (stride-0 views);
// any strides of every tensor, the gaps of out untouched.
TEST(GatherCpu, StridedAndBroadcastViews) {
  Rng rng(bt::fresh_seed());
  const GatherDescriptor d = gather_desc(DType::BF16, DType::I32, {5, 6}, {5, 4}, 1);
  const bt::Layout xs[] = {bt::transposed({5, 6}), bt::broadcast({5, 6}, 0), bt::padded({5, 6}, 2)};
  const bt::Layout is[] = {bt::broadcast({5, 4}, 0), bt::every_other({5, 4}), bt::transposed({5, 4})};
  const bt::Layout os[] = {bt::padded({5, 4}, 3), bt::transposed({5, 4}), bt::every_other({5, 4})};
  for (int k = 0; k < 3; ++k) {
    auto x = bt::random_values(DType::BF16, 30, rng);
    auto idx = bt::random_indices(20, 6, rng);
    if (k == 1)  // a broadcast x holds one row
      for (size_t i = 6; i < 30; ++i) x[i] = x[i % 6];
    if (k == 0)
      for (size_t i = 4; i < 20; ++i) idx[i] = idx[i % 4];
    const auto r = bt::run_gather(kCpu, d, x, idx, {xs[k], is[k], os[k]});
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.out, bt::naive_gather(d, x, idx)) << bt::describe(xs[k]);
    const auto cov = bt::covered(os[k]);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i]) EXPECT_EQ(r.raw[2 * i], 0xff) << "gap element " << i << " written";
  }
}

TEST(GatherCpu, ZeroSize) {
  Rng rng(bt::fresh_seed());
  const GatherDescriptor d = gather_desc(DType::F32, DType::I64, {0, 3}, {0, 5}, 1);
  EXPECT_EQ(GatherPlan::select(kCpu, d).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_gather(kCpu, d, {}, {}, bt::gather_contiguous(d)).st.is_ok());
  // x empty along dim with a non-empty index: every index is out of range.
  const GatherDescriptor e = gather_desc(DType::F32, DType::I64, {2, 0}, {2, 1}, 1);
  BT_EXPECT_STATUS(bt::run_gather(kCpu, e, {}, {0, 0}, bt::gather_contiguous(e)).st, StatusCode::InvalidProblem,
                   "outside [0, 0)");
}

// ---- scatter --------------------------------------------------------------------------------
std::string what(const ScatterDescriptor& d) {
  return std::string(dtype_name(d.dtype)) + " " + scatter_reduce_name(d.reduce) +
         (d.include_self ? " include_self" : " exclude_self") + (d.use_value ? " value" : " src") + " self " +
         d.self_shape.to_string() + " index " + d.index_shape.to_string() + " dim " + std::to_string(d.dim);
}

void expect_scatter(const ScatterDescriptor& d, const std::vector<double>& self, const std::vector<int64_t>& idx,
                    const std::vector<double>& src, const bt::ScatterLayouts& L) {
  const auto want = bt::naive_scatter_exact(d, self, idx, src);
  for (const bool in_place : {false, true}) {
    const auto r = bt::run_scatter(kCpu, d, self, idx, src, L, in_place);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string() << " " << what(d);
    ASSERT_EQ(r.out.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      if (!(std::isnan(want[i]) && std::isnan(r.out[i])))
        ASSERT_EQ(r.out[i], want[i]) << what(d) << (in_place ? " in place" : "") << " element " << i;
  }
}

TEST(ScatterCpu, EveryModeMatchesNaiveModel) {
  Rng rng(bt::fresh_seed());
  for (const DType t : kFloat)
    for (const ScatterReduce m : kModes)
      for (const bool include_self : {true, false})
        for (const bool use_value : {false, true})
          for (const int64_t dim : {0, 1, -1}) {
            ScatterDescriptor d = scatter_desc(t, use_value ? DType::I32 : DType::I64, {5, 6}, {4, 3}, {4, 5}, dim, m,
                                               include_self);
            d.use_value = use_value;
            d.value = -0.7;
            const int64_t rd = bt::resolved_dim(dim, 2);
            const auto self = bt::random_values(t, 30, rng, 0.5, 1.5);  // prod stays in range
            const auto src = bt::random_values(t, 20, rng, 0.5, 1.5);
            const auto idx = bt::random_indices(12, d.self_shape[rd], rng, 2);  // heavy duplicates
            expect_scatter(d, self, idx, src, bt::scatter_contiguous(d));
          }
}

TEST(ScatterCpu, ManyToOneAndRank3) {
  Rng rng(bt::fresh_seed());
  for (const ScatterReduce m : kModes) {
    // every index element names row 2: each column gets 40 contributions
    ScatterDescriptor d = scatter_desc(DType::BF16, DType::I64, {3, 7}, {40, 7}, {40, 7}, 0, m, false);
    const auto self = bt::random_values(DType::BF16, 21, rng, 0.9, 1.1);
    const auto src = bt::random_values(DType::BF16, 280, rng, 0.9, 1.1);
    expect_scatter(d, self, std::vector<int64_t>(280, 2), src, bt::scatter_contiguous(d));
    ScatterDescriptor r3 = scatter_desc(DType::F32, DType::I32, {3, 4, 5}, {2, 6, 3}, {3, 6, 4}, -2, m, true);
    const auto s3 = bt::random_values(DType::F32, 60, rng);
    const auto x3 = bt::random_values(DType::F32, 72, rng);
    expect_scatter(r3, s3, bt::random_indices(36, 4, rng, 1), x3, bt::scatter_contiguous(r3));
  }
}

TEST(ScatterCpu, StridedViews) {
  Rng rng(bt::fresh_seed());
  const ScatterDescriptor d = scatter_desc(DType::F16, DType::I64, {6, 5}, {4, 5}, {4, 6}, 0, ScatterReduce::Mean);
  const auto self = bt::random_values(DType::F16, 30, rng), src = bt::random_values(DType::F16, 24, rng);
  auto idx = bt::random_indices(20, 6, rng, 2);
  bt::ScatterLayouts L{bt::transposed({6, 5}), bt::every_other({4, 5}), bt::padded({4, 6}, 2), bt::padded({6, 5}, 1)};
  expect_scatter(d, self, idx, src, L);
  L = {bt::padded({6, 5}, 3), bt::broadcast({4, 5}, 0), bt::transposed({4, 6}), bt::transposed({6, 5})};
  for (size_t i = 5; i < 20; ++i) idx[i] = idx[i % 5];  // a broadcast index holds one row
  expect_scatter(d, self, idx, src, L);
  // src broadcast along dim 1 too
  L.src = bt::broadcast({4, 6}, 1);
  std::vector<double> bsrc = src;
  for (size_t i = 0; i < 24; ++i) bsrc[i] = src[i / 6 * 6];
  expect_scatter(d, self, idx, bsrc, L);
}

TEST(ScatterCpu, ZeroSize) {
  Rng rng(bt::fresh_seed());
  // No index elements: out = self.
  const ScatterDescriptor d = scatter_desc(DType::F32, DType::I64, {3, 4}, {0, 4}, {0, 4}, 0, ScatterReduce::Prod);
  const auto self = bt::random_values(DType::F32, 12, rng);
  const auto r = bt::run_scatter(kCpu, d, self, {}, {}, bt::scatter_contiguous(d));
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.out, self);
  // Empty self: nothing to do.
  const ScatterDescriptor e = scatter_desc(DType::F32, DType::I64, {0, 4}, {0, 2}, {0, 2}, 1);
  EXPECT_EQ(ScatterPlan::select(kCpu, e).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_scatter(kCpu, e, {}, {}, {}, bt::scatter_contiguous(e)).st.is_ok());
}

// The documented semantics, one by one, on hand-made values.
TEST(ScatterCpu, DocumentedSemantics) {
  const std::vector<double> self = {10, 20, 30, 40};
  const std::vector<int64_t> idx = {1, 3, 1, 1};
  const std::vector<double> src = {1, 2, 3, 4};
  auto run = [&](ScatterReduce m, bool include_self, std::vector<double> s = {}) {
    const ScatterDescriptor d = scatter_desc(DType::F64, DType::I64, {4}, {4}, {4}, 0, m, include_self);
    const auto r = bt::run_scatter(kCpu, d, self, idx, s.empty() ? src : s, bt::scatter_contiguous(d));
    EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
    return r.out;
  };
  EXPECT_EQ(run(ScatterReduce::None, true), (std::vector<double>{10, 4, 30, 2})) << "the last position wins";
  EXPECT_EQ(run(ScatterReduce::Sum, true), (std::vector<double>{10, 28, 30, 42}));
  EXPECT_EQ(run(ScatterReduce::Sum, false), (std::vector<double>{10, 8, 30, 2}));
  EXPECT_EQ(run(ScatterReduce::Prod, false), (std::vector<double>{10, 12, 30, 2}));
  EXPECT_EQ(run(ScatterReduce::Mean, true), (std::vector<double>{10, 7, 30, 21})) << "count includes self";
  EXPECT_EQ(run(ScatterReduce::Mean, false), (std::vector<double>{10, 8.0 / 3, 30, 2}));
  EXPECT_EQ(run(ScatterReduce::Amax, true), (std::vector<double>{10, 20, 30, 40}));
  EXPECT_EQ(run(ScatterReduce::Amin, false), (std::vector<double>{10, 1, 30, 2}));
  const double nan = std::numeric_limits<double>::quiet_NaN();
  for (const ScatterReduce m : {ScatterReduce::Amax, ScatterReduce::Amin}) {
    const auto o = run(m, false, {5, 2, nan, 7});  // NaN at a middle position of row 1
    EXPECT_TRUE(std::isnan(o[1])) << "NaN propagates through " << scatter_reduce_name(m);
    EXPECT_EQ(o[3], 2);
  }
  // value: every contribution is the value
  ScatterDescriptor dv = scatter_desc(DType::F64, DType::I64, {4}, {4}, {}, 0, ScatterReduce::Sum, true);
  dv.use_value = true;
  dv.value = 0.5;
  const auto r = bt::run_scatter(kCpu, dv, self, idx, {}, bt::scatter_contiguous(dv));
  ASSERT_TRUE(r.st.is_ok());
  EXPECT_EQ(r.out, (std::vector<double>{10, 21.5, 30, 40.5}));
}

// ---- integer dtypes ---------------------------------------------------------------------------
constexpr DType kInts[] = {DType::I8, DType::U8, DType::I16, DType::I32, DType::I64};

std::vector<int64_t> int_values(DType t, int64_t n, Rng& rng) {
  std::vector<int64_t> v(static_cast<size_t>(n));
  for (auto& x : v) {
    switch (t) {  // the whole range, so sums and products wrap
      case DType::I8: x = bt::uniform_int(rng, -128, 127); break;
      case DType::U8: x = bt::uniform_int(rng, 0, 255); break;
      case DType::I16: x = bt::uniform_int(rng, -32768, 32767); break;
      case DType::I32: x = bt::uniform_int(rng, -2147483648LL, 2147483647LL); break;
      default: x = static_cast<int64_t>(rng()) ^ (static_cast<int64_t>(rng()) << 32); break;
    }
  }
  return v;
}

void expect_scatter_int(const ScatterDescriptor& d, const std::vector<int64_t>& self, const std::vector<int64_t>& idx,
                        const std::vector<int64_t>& src, const bt::ScatterLayouts& L) {
  const auto want = bt::naive_scatter_int(d, self, idx, src);
  for (const bool in_place : {false, true}) {
    const auto r = bt::run_scatter_int(kCpu, d, self, idx, src, L, in_place);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string() << " " << what(d);
    EXPECT_EQ(r.iout, want) << what(d) << (in_place ? " in place" : "");
  }
}

TEST(ScatterCpu, IntegerEveryModeMatchesNaiveModel) {
  Rng rng(bt::fresh_seed());
  for (const DType t : kInts)
    for (const ScatterReduce m : kModes)
      for (const bool include_self : {true, false})
        for (const bool use_value : {false, true})
          for (const int64_t dim : {0, 1, -1})
            for (const bool small : {false, true}) {  // small: values in [-5, 5] (exact means, no wrap)
              ScatterDescriptor d = scatter_desc(t, use_value ? DType::I32 : DType::I64, {5, 6}, {4, 3}, {4, 5}, dim,
                                                 m, include_self);
              d.use_value = use_value;
              d.value = t == DType::U8 ? 200.0 : -77.0;
              const int64_t rd = bt::resolved_dim(dim, 2);
              auto self = int_values(t, 30, rng), src = int_values(t, 20, rng);
              if (small)
                for (auto* v : {&self, &src})
                  for (auto& x : *v) x = t == DType::U8 ? bt::uniform_int(rng, 0, 5) : bt::uniform_int(rng, -5, 5);
              const auto idx = bt::random_indices(12, d.self_shape[rd], rng, 2);
              expect_scatter_int(d, self, idx, src, bt::scatter_contiguous(d));
            }
}

TEST(ScatterCpu, IntegerStridedManyToOneAndRank3) {
  Rng rng(bt::fresh_seed());
  for (const DType t : kInts)
    for (const ScatterReduce m : kModes) {
      ScatterDescriptor d = scatter_desc(t, DType::I64, {3, 7}, {40, 7}, {40, 7}, 0, m, false);
      expect_scatter_int(d, int_values(t, 21, rng), std::vector<int64_t>(280, 2), int_values(t, 280, rng),
                         bt::scatter_contiguous(d));
      ScatterDescriptor r3 = scatter_desc(t, DType::I32, {3, 4, 5}, {2, 6, 3}, {3, 6, 4}, -2, m, true);
      expect_scatter_int(r3, int_values(t, 60, rng), bt::random_indices(36, 4, rng, 1), int_values(t, 72, rng),
                         bt::scatter_contiguous(r3));
      const ScatterDescriptor s = scatter_desc(t, DType::I64, {6, 5}, {4, 5}, {4, 6}, 0, m);
      bt::ScatterLayouts L{bt::transposed({6, 5}), bt::every_other({4, 5}), bt::padded({4, 6}, 2), bt::padded({6, 5}, 1)};
      expect_scatter_int(s, int_values(t, 30, rng), bt::random_indices(20, 6, rng, 2), int_values(t, 24, rng), L);
    }
}

// Values pinned from torch 2.5.1 (CPU): self.scatter_reduce(0, idx, src, mode, include_self)
// with self = [5, -7, 0, 100] (u8: [5, 7, 0, 100]), idx = [0, 0, 1, 1, 1, 3],
// src = [2, 3, -4, -3, 100, 100] (u8: [2, 3, 4, 250, 100, 100]); scatter_add = sum.
TEST(ScatterCpu, IntegerMatchesTorch) {
  struct Pin {
    DType t;
    ScatterReduce m;
    bool inc;
    std::vector<int64_t> want;
  };
  using R = ScatterReduce;
  const Pin pins[] = {
      {DType::I8, R::Sum, true, {10, 86, 0, -56}},     {DType::I8, R::Sum, false, {5, 93, 0, 100}},
      {DType::I8, R::Prod, true, {30, 48, 0, 16}},     {DType::I8, R::Prod, false, {6, -80, 0, 100}},
      {DType::I8, R::Mean, true, {3, 21, 0, -28}},     {DType::I8, R::Mean, false, {2, 31, 0, 100}},
      {DType::I8, R::Amax, true, {5, 100, 0, 100}},    {DType::I8, R::Amax, false, {3, 100, 0, 100}},
      {DType::I8, R::Amin, true, {2, -7, 0, 100}},     {DType::I8, R::Amin, false, {2, -4, 0, 100}},
      {DType::U8, R::Sum, true, {10, 105, 0, 200}},    {DType::U8, R::Sum, false, {5, 98, 0, 100}},
      {DType::U8, R::Prod, true, {30, 96, 0, 16}},     {DType::U8, R::Prod, false, {6, 160, 0, 100}},
      {DType::U8, R::Mean, true, {3, 26, 0, 100}},     {DType::U8, R::Mean, false, {2, 32, 0, 100}},
      {DType::U8, R::Amax, true, {5, 250, 0, 100}},    {DType::U8, R::Amax, false, {3, 250, 0, 100}},
      {DType::U8, R::Amin, true, {2, 4, 0, 100}},      {DType::U8, R::Amin, false, {2, 4, 0, 100}},
      {DType::I16, R::Sum, true, {10, 86, 0, 200}},    {DType::I16, R::Prod, true, {30, -8400, 0, 10000}},
      {DType::I16, R::Mean, true, {3, 21, 0, 100}},    {DType::I16, R::Mean, false, {2, 31, 0, 100}},
      {DType::I32, R::Sum, true, {10, 86, 0, 200}},    {DType::I32, R::Sum, false, {5, 93, 0, 100}},
      {DType::I32, R::Prod, false, {6, 1200, 0, 100}}, {DType::I32, R::Amax, false, {3, 100, 0, 100}},
      {DType::I32, R::Amin, true, {2, -7, 0, 100}},    {DType::I64, R::Mean, true, {3, 21, 0, 100}},
      {DType::I64, R::Amin, false, {2, -4, 0, 100}},   {DType::I64, R::Prod, true, {30, -8400, 0, 10000}},
  };
  const std::vector<int64_t> idx = {0, 0, 1, 1, 1, 3};
  for (const Pin& p : pins) {
    const bool u8 = p.t == DType::U8;
    const std::vector<int64_t> self = {5, u8 ? 7 : -7, 0, 100};
    const std::vector<int64_t> src = {2, 3, u8 ? 4 : -4, u8 ? 250 : -3, 100, 100};
    const ScatterDescriptor d = scatter_desc(p.t, DType::I64, {4}, {6}, {6}, 0, p.m, p.inc);
    const auto r = bt::run_scatter_int(kCpu, d, self, idx, src, bt::scatter_contiguous(d));
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.iout, p.want) << what(d);
  }
  // Mean floors (toward minus infinity): torch gives [-5, -1] and [-4, -6].
  for (const DType t : {DType::I8, DType::I32, DType::I64})
    for (const bool inc : {true, false}) {
      const ScatterDescriptor d = scatter_desc(t, DType::I64, {2}, {3}, {3}, 0, ScatterReduce::Mean, inc);
      const auto r = bt::run_scatter_int(kCpu, d, {-7, 5}, {0, 0, 1}, {-4, -3, -6}, bt::scatter_contiguous(d));
      ASSERT_TRUE(r.st.is_ok());
      EXPECT_EQ(r.iout, inc ? (std::vector<int64_t>{-5, -1}) : (std::vector<int64_t>{-4, -6})) << what(d);
    }
  // Overflow wraps: i32 max + 1 + 2; i64 mean of (2^63 - 1) and 2^62 (the wrapped sum, floored).
  const ScatterDescriptor a = scatter_desc(DType::I32, DType::I64, {2}, {2}, {2}, 0, ScatterReduce::Sum);
  auto r = bt::run_scatter_int(kCpu, a, {2147483647, 0}, {0, 0}, {1, 2}, bt::scatter_contiguous(a));
  EXPECT_EQ(r.iout, (std::vector<int64_t>{-2147483646, 0}));
  const ScatterDescriptor m = scatter_desc(DType::I64, DType::I64, {1}, {1}, {1}, 0, ScatterReduce::Mean);
  r = bt::run_scatter_int(kCpu, m, {std::numeric_limits<int64_t>::max()}, {0}, {int64_t{1} << 62},
                          bt::scatter_contiguous(m));
  EXPECT_EQ(r.iout, (std::vector<int64_t>{-2305843009213693953LL}));
  // scatter(value) truncates toward zero: torch.zeros(3, int32).scatter_(0, [0, 1], -2.7) = [-2, -2, 0].
  ScatterDescriptor v = scatter_desc(DType::I32, DType::I64, {3}, {2}, {}, 0, ScatterReduce::None);
  v.use_value = true, v.value = -2.7;
  r = bt::run_scatter_int(kCpu, v, {0, 0, 0}, {0, 1}, {}, bt::scatter_contiguous(v));
  EXPECT_EQ(r.iout, (std::vector<int64_t>{-2, -2, 0}));
  // plain scatter: the last position wins
  const ScatterDescriptor n = scatter_desc(DType::I32, DType::I64, {3}, {2}, {2}, 0, ScatterReduce::None);
  r = bt::run_scatter_int(kCpu, n, {0, 0, 0}, {0, 0}, {1, 2}, bt::scatter_contiguous(n));
  EXPECT_EQ(r.iout, (std::vector<int64_t>{2, 0, 0}));
}

TEST(ScatterCpu, IntegerZeroSizeAndBadIndex) {
  Rng rng(bt::fresh_seed());
  for (const DType t : kInts) {
    const ScatterDescriptor d = scatter_desc(t, DType::I64, {3, 4}, {0, 4}, {0, 4}, 0, ScatterReduce::Sum);
    const auto self = int_values(t, 12, rng);
    const auto r = bt::run_scatter_int(kCpu, d, self, {}, {}, bt::scatter_contiguous(d));
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.iout, bt::naive_scatter_int(d, self, {}, {}));
    const ScatterDescriptor e = scatter_desc(t, DType::I64, {0, 4}, {0, 2}, {0, 2}, 1, ScatterReduce::Amax);
    EXPECT_EQ(ScatterPlan::select(kCpu, e).value().sku().variant, "empty");
    const ScatterDescriptor b = scatter_desc(t, DType::I32, {3}, {2}, {2}, 0, ScatterReduce::Amin);
    const auto bad = bt::run_scatter_int(kCpu, b, {1, 2, 3}, {0, 3}, {4, 5}, bt::scatter_contiguous(b));
    BT_EXPECT_STATUS(bad.st, StatusCode::InvalidProblem, "ScatterPlan: index element [1] (position 1) is 3, outside [0, 3)");
  }
}

// ---- backward compositions vs finite differences (f64) --------------------------------------
// loss = sum(f(...) * c); each gradient is a composition of the plans.
TEST(GatherScatterCpu, BackwardCompositionsMatchFiniteDifferences) {
  Rng rng(bt::fresh_seed());
  const double h = 1e-6;
  // gather: dx = scatter Sum (include_self) of dout into zeros of x's shape.
  {
    const GatherDescriptor g = gather_desc(DType::F64, DType::I64, {3, 4}, {5, 4}, 0);
    const auto x = bt::random_values(DType::F64, 12, rng);
    const auto idx = bt::random_indices(20, 3, rng, 1);  // duplicates
    const auto c = bt::random_values(DType::F64, 20, rng);
    const ScatterDescriptor sd = scatter_desc(DType::F64, DType::I64, {3, 4}, {5, 4}, {5, 4}, 0, ScatterReduce::Sum);
    const auto dx = bt::run_scatter(kCpu, sd, std::vector<double>(12, 0.0), idx, c, bt::scatter_contiguous(sd));
    ASSERT_TRUE(dx.st.is_ok());
    auto loss = [&](const std::vector<double>& xv) {
      const auto o = bt::run_gather(kCpu, g, xv, idx, bt::gather_contiguous(g)).out;
      double s = 0;
      for (size_t i = 0; i < o.size(); ++i) s += o[i] * c[i];
      return s;
    };
    for (size_t i = 0; i < 12; ++i) {
      auto p = x, m = x;
      p[i] += h, m[i] -= h;
      EXPECT_NEAR(dx.out[i], (loss(p) - loss(m)) / (2 * h), 1e-7) << "gather dx " << i;
    }
  }
  // scatter_add: dself = dout, dsrc = gather(dout); scatter (src): dself = dout
  // with the scattered positions zeroed, dsrc = gather(dout) (distinct destinations).
  for (const ScatterReduce m : {ScatterReduce::Sum, ScatterReduce::None}) {
    const ScatterDescriptor sd = scatter_desc(DType::F64, DType::I64, {4, 3}, {2, 3}, {2, 3}, 0, m);
    const auto self = bt::random_values(DType::F64, 12, rng), src = bt::random_values(DType::F64, 6, rng);
    const std::vector<int64_t> idx = m == ScatterReduce::Sum ? std::vector<int64_t>{1, 1, 3, 1, 0, 3}
                                                             : std::vector<int64_t>{1, 2, 3, 0, 1, 2};
    const auto c = bt::random_values(DType::F64, 12, rng);  // dout
    const GatherDescriptor g = gather_desc(DType::F64, DType::I64, {4, 3}, {2, 3}, 0);
    const auto dsrc = bt::run_gather(kCpu, g, c, idx, bt::gather_contiguous(g));
    ASSERT_TRUE(dsrc.st.is_ok());
    std::vector<double> dself = c;
    if (m == ScatterReduce::None) {
      ScatterDescriptor zero = sd;
      zero.use_value = true;
      zero.value = 0.0;
      const auto z = bt::run_scatter(kCpu, zero, c, idx, {}, bt::scatter_contiguous(zero));
      ASSERT_TRUE(z.st.is_ok());
      dself = z.out;
    }
    auto loss = [&](const std::vector<double>& s, const std::vector<double>& x) {
      const auto o = bt::run_scatter(kCpu, sd, s, idx, x, bt::scatter_contiguous(sd)).out;
      double t = 0;
      for (size_t i = 0; i < o.size(); ++i) t += o[i] * c[i];
      return t;
    };
    for (size_t i = 0; i < 12; ++i) {
      auto p = self, q = self;
      p[i] += h, q[i] -= h;
      EXPECT_NEAR(dself[i], (loss(p, src) - loss(q, src)) / (2 * h), 1e-7) << scatter_reduce_name(m) << " dself " << i;
    }
    for (size_t i = 0; i < 6; ++i) {
      auto p = src, q = src;
      p[i] += h, q[i] -= h;
      EXPECT_NEAR(dsrc.out[i], (loss(self, p) - loss(self, q)) / (2 * h), 1e-7) << scatter_reduce_name(m) << " dsrc " << i;
    }
  }
}

TEST(ScatterCpu, RunTwiceBitIdentical) {
  Rng rng(bt::fresh_seed());
  const ScatterDescriptor d = scatter_desc(DType::BF16, DType::I64, {17, 9}, {64, 9}, {64, 9}, 0, ScatterReduce::Sum);
  const auto self = bt::random_values(DType::BF16, 153, rng), src = bt::random_values(DType::BF16, 576, rng);
  const auto idx = bt::random_indices(576, 17, rng, 2);
  const auto a = bt::run_scatter(kCpu, d, self, idx, src, bt::scatter_contiguous(d), false, 0xff);
  const auto b = bt::run_scatter(kCpu, d, self, idx, src, bt::scatter_contiguous(d), false, 0x5a);
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
  EXPECT_EQ(a.raw, b.raw);
}

}  // namespace
