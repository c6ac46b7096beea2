// ScatterReduceBackwardPlan on the CPU reference:
//   * every descriptor and argument rule: its StatusCode and message;
//   * bad indices: InvalidProblem naming the first bad position, nothing written;
//   * hand-made cases whose expected values come from torch 2.5.1
//     (scatter_reduce(...).backward in f64): prod with 0, 1 and 2 zeros per
//     destination in self and / or src, amax / amin ties, mean; the documented
//     difference from torch for amax / amin with include_self = false;
//   * against an independent model of torch's formulas (whole-tensor steps,
//     support/scatter_backward_helpers.hpp), bit for bit in the documented
//     accumulator: every dtype, every reduce mode, include_self both ways,
//     heavy duplicates, zeros and ties drawn on purpose, i32 / i64 indices,
//     every dim, either output alone, src larger than index, strided views;
//   * finite differences (f64) of the forward ScatterPlan for sum / mean /
//     prod (also through zeros: prod is multilinear) and amax / amin without
//     ties;
//   * zero-size problems; run twice bit-identical.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
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

// Equal as values (NaN equals NaN), and zeros of the same sign.
void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(want[i]) && std::isnan(got[i])) continue;
    ASSERT_EQ(got[i], want[i]) << what << " element " << i;
    ASSERT_EQ(std::signbit(got[i]), std::signbit(want[i])) << what << " element " << i << " (sign of zero)";
  }
}

// Values that make ties and zeros likely: a few small integers / halves.
std::vector<double> coarse_values(int64_t n, Rng& rng, bool zeros) {
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) {
    const int64_t k = bt::uniform_int(rng, zeros ? -3 : 1, 4);
    x = static_cast<double>(k) * 0.5;
    if (!zeros && bt::uniform_int(rng, 0, 1)) x = -x;
  }
  return v;
}

void expect_model(const ScatterReduceBackwardDescriptor& d, const std::vector<double>& grad,
                  const std::vector<double>& self, const std::vector<int64_t>& idx, const std::vector<double>& src,
                  const bt::SbwLayouts& L) {
  const auto result = bt::sbw_forward(d, self, idx, src);
  const auto want = bt::sbw_model_exact(d, grad, self, idx, src, result);
  const auto r = bt::run_sbw(kCpu, d, grad, self, idx, src, result, L);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string() << " " << bt::sbw_what(d);
  EXPECT_EQ(r.variant, "reference");
  if (d.compute_grad_self) expect_same(r.g.self, want.self, "grad_self " + bt::sbw_what(d));
  if (d.compute_grad_src) expect_same(r.g.src, want.src, "grad_src " + bt::sbw_what(d));
}

// ---- descriptor rules -----------------------------------------------------------------------
TEST(ScatterBackwardCpu, DescriptorRules) {
  const auto ok = sbw_desc(DType::F32, DType::I32, {4, 5}, {3, 2}, {3, 4}, 0, ScatterReduce::Prod);
  auto expect = [](const ScatterReduceBackwardDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(ScatterReduceBackwardPlan::select(kCpu, d).status(), code, "ScatterReduceBackwardPlan: " + what);
  };
  auto d = ok;
  d.dtype = DType::I32;
  expect(d, StatusCode::Unsupported, "dtype i32 is not supported (f32, f64, f16, bf16)");
  d = ok, d.index_dtype = DType::U8;
  expect(d, StatusCode::Unsupported, "index_dtype u8 is not supported (i32, i64)");
  d = ok, d.reduce = static_cast<ScatterReduce>(9);
  expect(d, StatusCode::InvalidProblem, "reduce 9 is not a ScatterReduce (none, sum, prod, mean, amax, amin)");
  d = ok, d.compute_grad_self = false, d.compute_grad_src = false;
  expect(d, StatusCode::InvalidProblem, "compute_grad_self and compute_grad_src are both false (nothing to compute)");
  d = ok, d.self_shape = Dims{}, d.index_shape = Dims{}, d.src_shape = Dims{};
  expect(d, StatusCode::InvalidProblem, "self_shape has rank 0 (view a scalar as shape [1]");
  d = ok, d.self_shape = Dims{4, 5, 1};
  expect(d, StatusCode::InvalidProblem, "index_shape [3,2] has rank 2, self_shape [4,5,1] has rank 3 (they must match)");
  d = ok, d.src_shape = Dims{3};
  expect(d, StatusCode::InvalidProblem, "src_shape [3] has rank 1, index_shape [3,2] has rank 2 (they must match)");
  d = ok, d.dim = 2;
  expect(d, StatusCode::InvalidProblem, "dim 2 is outside [-2, 2)");
  d = ok, d.dim = -3;
  expect(d, StatusCode::InvalidProblem, "dim -3 is outside [-2, 2)");
  d = ok, d.index_shape = Dims{3, 6}, d.src_shape = Dims{3, 6};
  expect(d, StatusCode::InvalidProblem,
         "index_shape [3,6] is larger than self_shape [4,5] along dim 1 (6 > 5; only dim 0 may differ)");
  d = ok, d.index_shape = Dims{4, 2};  // any extent along dim 0 for self, but not larger than src
  expect(d, StatusCode::InvalidProblem, "index_shape [4,2] is larger than src_shape [3,4] along dim 0 (4 > 3)");
  d = ok, d.src_shape = Dims{3, -1};
  expect(d, StatusCode::InvalidProblem, "src_shape");
  d = ok, d.self_shape = Dims{-4, 5};
  expect(d, StatusCode::InvalidProblem, "self_shape");
  // Valid: dim resolved, None never includes self, the sku's op names the mode.
  d = ok, d.dim = -2, d.reduce = ScatterReduce::None;
  auto p = ScatterReduceBackwardPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->descriptor().dim, 0);
  EXPECT_FALSE(p->descriptor().include_self);
  EXPECT_EQ(p->sku().op, "indexing.scatter_none_backward");
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_FALSE(p->needs_self());
  EXPECT_FALSE(p->needs_result());
  d = ok, d.compute_grad_src = false;
  p = ScatterReduceBackwardPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  EXPECT_TRUE(p->needs_self());
  EXPECT_FALSE(p->needs_result()) << "prod's grad_self does not read result";
  d.reduce = ScatterReduce::Amin;
  EXPECT_TRUE(ScatterReduceBackwardPlan::select(kCpu, d).value().needs_result());
}

// ---- argument rules -------------------------------------------------------------------------
TEST(ScatterBackwardCpu, ArgumentRules) {
  const Device c = Device::cpu();
  std::vector<float> grad(4, 1.f), self(4, 1.f), src(3, 1.f), result(4, 1.f), gself(4), gsrc(3);
  std::vector<int64_t> idx = {0, 3};
  auto P = [&](ScatterReduce r, bool want_self = true, bool want_src = true) {
    auto d = sbw_desc(DType::F32, DType::I64, {4}, {2}, {3}, 0, r);
    d.compute_grad_self = want_self, d.compute_grad_src = want_src;
    return ScatterReduceBackwardPlan::select(kCpu, d).value();
  };
  auto full = [&] {
    ScatterReduceBackwardArgs a;
    a.grad = TensorRef::contiguous(grad.data(), c, {4}, 4);
    a.index = TensorRef::contiguous(idx.data(), c, {2}, 2);
    a.self = TensorRef::contiguous(self.data(), c, {4}, 4);
    a.src = TensorRef::contiguous(src.data(), c, {3}, 3);
    a.result = TensorRef::contiguous(result.data(), c, {4}, 4);
    a.grad_self = TensorMut::contiguous(gself.data(), c, {4}, 4);
    a.grad_src = TensorMut::contiguous(gsrc.data(), c, {3}, 3);
    return a;
  };
  const std::string n = "ScatterReduceBackwardPlan: ";
  auto a = full();
  EXPECT_TRUE(P(ScatterReduce::Amax).can_implement(a).is_ok()) << P(ScatterReduce::Amax).can_implement(a).to_string();
  a.self = {};
  BT_EXPECT_STATUS(P(ScatterReduce::Amax).can_implement(a), StatusCode::InvalidProblem,
                   n + "self is missing: reduce prod / amax / amin read it");
  a = full(), a.src = {};
  BT_EXPECT_STATUS(P(ScatterReduce::Prod).can_implement(a), StatusCode::InvalidProblem,
                   n + "src is missing: reduce prod / amax / amin read it");
  a = full(), a.result = {};
  BT_EXPECT_STATUS(P(ScatterReduce::Prod).can_implement(a), StatusCode::InvalidProblem, n + "result is missing");
  BT_EXPECT_STATUS(P(ScatterReduce::Amin).can_implement(a), StatusCode::InvalidProblem, n + "result is missing");
  a.grad_src = {};
  EXPECT_TRUE(P(ScatterReduce::Prod, true, false).can_implement(a).is_ok());
  a = full(), a.grad_src = {};
  BT_EXPECT_STATUS(P(ScatterReduce::Prod, true, false).can_implement(a), StatusCode::InvalidProblem,
                   n + "result is given but unused (reduce prod) without grad_src");
  a = full();
  BT_EXPECT_STATUS(P(ScatterReduce::Sum).can_implement(a), StatusCode::InvalidProblem,
                   n + "self is given but unused (reduce sum)");
  a.self = {};
  BT_EXPECT_STATUS(P(ScatterReduce::Mean).can_implement(a), StatusCode::InvalidProblem,
                   n + "src is given but unused (reduce mean)");
  a.src = {};
  BT_EXPECT_STATUS(P(ScatterReduce::None).can_implement(a), StatusCode::InvalidProblem,
                   n + "result is given but unused (reduce none)");
  a.result = {};
  EXPECT_TRUE(P(ScatterReduce::Sum).can_implement(a).is_ok());
  BT_EXPECT_STATUS(P(ScatterReduce::Sum, false, true).can_implement(a), StatusCode::InvalidProblem,
                   n + "grad_self is given but descriptor.compute_grad_self is false");
  BT_EXPECT_STATUS(P(ScatterReduce::Sum, true, false).can_implement(a), StatusCode::InvalidProblem,
                   n + "grad_src is given but descriptor.compute_grad_src is false");
  auto b = a;
  b.grad_src = {};
  BT_EXPECT_STATUS(P(ScatterReduce::Sum).can_implement(b), StatusCode::InvalidProblem, n + "grad_src");
  b = a, b.grad = {};
  BT_EXPECT_STATUS(P(ScatterReduce::Sum).can_implement(b), StatusCode::InvalidProblem, n + "grad is missing");
  b = a, b.index = TensorRef::contiguous(src.data(), c, {2}, 2);
  BT_EXPECT_STATUS(P(ScatterReduce::Sum).can_implement(b), StatusCode::InvalidProblem,
                   n + "index dtype f32 must be i64");
  b = a, b.grad_self = TensorMut::contiguous(gself.data(), c, {3}, 3);
  BT_EXPECT_STATUS(P(ScatterReduce::Sum).can_implement(b), StatusCode::InvalidProblem,
                   n + "grad_self shape [3] must be [4]");
  b = a, b.grad_self = TensorMut::contiguous(grad.data(), c, {4}, 4);  // in place on grad: refused
  BT_EXPECT_STATUS(P(ScatterReduce::Sum).can_implement(b), StatusCode::InvalidProblem, n + "grad_self overlaps grad");
  b = a, b.grad_src = TensorMut::contiguous(gself.data() + 1, c, {3}, 3);
  BT_EXPECT_STATUS(P(ScatterReduce::Sum).can_implement(b), StatusCode::InvalidProblem,
                   n + "grad_self overlaps grad_src");
  EXPECT_EQ(ScatterReduceBackwardPlan().run(kCpu, Workspace::none(), {}).code(), StatusCode::InvalidProblem);
  EXPECT_EQ(ScatterReduceBackwardPlan().check_indices(kCpu, Workspace::none()).code(), StatusCode::InvalidProblem);
  EXPECT_TRUE(P(ScatterReduce::Sum).check_indices(kCpu, Workspace::none()).is_ok());
}

// ---- bad indices ----------------------------------------------------------------------------
TEST(ScatterBackwardCpu, BadIndexNamesTheFirstBadPositionAndWritesNothing) {
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64})
    for (const ScatterReduce m : {ScatterReduce::Sum, ScatterReduce::Prod, ScatterReduce::Amax})
      for (const int64_t bad : {int64_t{-1}, int64_t{4}, int64_t{-5}, int64_t{1000}}) {
        const auto d = sbw_desc(DType::F32, it, {3, 4}, {2, 3}, {2, 3}, -1, m);
        std::vector<int64_t> idx = bt::random_indices(6, 4, rng);
        idx[4] = bad;  // [1,1]
        idx[5] = 9;    // a later bad one is not the one named
        const auto v = bt::random_values(DType::F32, 12, rng), x = bt::random_values(DType::F32, 6, rng);
        const auto r = bt::run_sbw(kCpu, d, v, v, idx, x, v, bt::sbw_contiguous(d));
        BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem,
                         "ScatterReduceBackwardPlan: index element [1,1] (position 4) is " + std::to_string(bad) +
                             ", outside [0, 4) (the size of dim 1; the first bad index)");
        for (uint8_t b : r.raw_self) EXPECT_EQ(b, 0xff) << "grad_self written although the call failed";
        for (uint8_t b : r.raw_src) EXPECT_EQ(b, 0xff) << "grad_src written although the call failed";
      }
}

// ---- torch's values, by hand ------------------------------------------------------------------
struct Hand {
  std::vector<double> self;
  std::vector<int64_t> idx;
  std::vector<double> src, grad;
};

bt::SbwGrads hand_run(const Hand& h, ScatterReduce m, bool include_self, DType t = DType::F64) {
  const int64_t ns = static_cast<int64_t>(h.self.size()), ni = static_cast<int64_t>(h.idx.size());
  const auto d = sbw_desc(t, DType::I64, {ns}, {ni}, {ni}, 0, m, include_self);
  const auto result = bt::sbw_forward(d, h.self, h.idx, h.src);
  const auto r = bt::run_sbw(kCpu, d, h.grad, h.self, h.idx, h.src, result, bt::sbw_contiguous(d));
  EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
  return r.g;
}

// Expected values printed by torch 2.5.1 (f64, CPU) for the same inputs.
TEST(ScatterBackwardCpu, ProdZerosMatchTorch) {
  const std::vector<double> g5 = {0.5, -1, 2, 3, 1.5};
  // dest 0: no zero; 1: self 0 and one src 0; 2: nothing scattered; 3: one src 0; 4: self 0 and two src 0.
  const Hand a{{2, 0, 3, 5, 0}, {0, 0, 1, 1, 1, 3, 4, 4}, {3, 4, 0, 2, 5, 0, 0, 0}, g5};
  for (const DType t : kFloat) {  // small integers: exact in every dtype
    auto r = hand_run(a, ScatterReduce::Prod, true, t);
    expect_same(r.self, {6, -0.0, 2, 0, 0}, "prod a include_self grad_self");
    expect_same(r.src, {4, 3, -0.0, -0.0, -0.0, 15, 0, 0}, "prod a include_self grad_src");
    r = hand_run(a, ScatterReduce::Prod, false, t);
    expect_same(r.self, {0, 0, 2, 0, 0}, "prod a exclude_self grad_self");
    expect_same(r.src, {2, 1.5, -10, -0.0, -0.0, 3, 0, 0}, "prod a exclude_self grad_src");
  }
  // dest 1: self 0, no src zero; 4: self 0 and one src zero beside -2.
  const Hand b{{2, 0, 3, 5, 0}, {0, 0, 1, 1, 1, 3, 4, 4}, {3, 4, 7, 2, 5, 0, 0, -2}, g5};
  auto r = hand_run(b, ScatterReduce::Prod, true);
  expect_same(r.self, {6, -70, 2, 0, -0.0}, "prod b include_self grad_self");
  expect_same(r.src, {4, 3, -0.0, -0.0, -0.0, 15, -0.0, 0}, "prod b include_self grad_src");
  r = hand_run(b, ScatterReduce::Prod, false);
  expect_same(r.self, {0, 0, 2, 0, 0}, "prod b exclude_self grad_self");
  expect_same(r.src, {2, 1.5, -10, -35, -14, 3, -3, 0}, "prod b exclude_self grad_src");
}

TEST(ScatterBackwardCpu, AmaxAminTiesMatchTorch) {
  // dest 0: two src ties; 1: self ties src (amax); 2: self and two srcs tie; 3: one src wins.
  const Hand h{{1, 5, 2, 7}, {0, 0, 1, 1, 2, 2, 3}, {3, 3, 5, 4, 2, 2, 9}, {1, 2, 3, 4}};
  for (const DType t : kFloat) {
    auto r = hand_run(h, ScatterReduce::Amax, true, t);
    expect_same(r.self, {0, 1, 1, 0}, "amax include_self grad_self");
    expect_same(r.src, {0.5, 0.5, 1, 0, 1, 1, 4}, "amax include_self grad_src");
    r = hand_run(h, ScatterReduce::Amin, true, t);
    expect_same(r.self, {1, 0, 1, 4}, "amin include_self grad_self");
    expect_same(r.src, {0, 0, 0, 2, 1, 1, 0}, "amin include_self grad_src");
    // include_self = false: torch gives {0.5, 0.5, 1, 0, 1, 1, 4} (amax) and
    // {0.5, 0.5, 0, 2, 1, 1, 4} (amin): the excluded self, equal to the result
    // at destinations 1 (amax) and 2, takes a share that is then dropped. Here
    // the excluded self never counts, so each destination's src gradients sum
    // to its grad.
    r = hand_run(h, ScatterReduce::Amax, false, t);
    expect_same(r.self, {0, 0, 0, 0}, "amax exclude_self grad_self");
    expect_same(r.src, {0.5, 0.5, 2, 0, 1.5, 1.5, 4}, "amax exclude_self grad_src");
    r = hand_run(h, ScatterReduce::Amin, false, t);
    expect_same(r.self, {0, 0, 0, 0}, "amin exclude_self grad_self");
    expect_same(r.src, {0.5, 0.5, 0, 2, 1.5, 1.5, 4}, "amin exclude_self grad_src");
  }
  // A NaN result (amax propagates NaN): no element equals it, N = 0, torch's
  // literal formula gives NaN for self and every member.
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const Hand n{{1, 2}, {0, 0, 1}, {nan, 3, 1}, {1, 1}};
  const auto r = hand_run(n, ScatterReduce::Amax, true);
  EXPECT_TRUE(std::isnan(r.self[0]) && std::isnan(r.src[0]) && std::isnan(r.src[1]));
  EXPECT_EQ(r.self[1], 1);  // self 2 > src 1: self takes it all
  EXPECT_EQ(r.src[2], 0);
}

TEST(ScatterBackwardCpu, MeanAndSumMatchTorch) {
  const Hand h{{1, 5, 2, 7}, {0, 0, 1, 1, 2, 2, 0}, {3, 3, 5, 4, 2, 2, 9}, {1, 2, 3, 4}};
  auto r = hand_run(h, ScatterReduce::Mean, true);
  expect_same(r.self, {0.25, 2.0 / 3, 1, 4}, "mean include_self grad_self");
  expect_same(r.src, {0.25, 0.25, 2.0 / 3, 2.0 / 3, 1, 1, 0.25}, "mean include_self grad_src");
  r = hand_run(h, ScatterReduce::Mean, false);
  expect_same(r.self, {0, 0, 0, 4}, "mean exclude_self grad_self");
  expect_same(r.src, {1.0 / 3, 1.0 / 3, 1, 1, 1.5, 1.5, 1.0 / 3}, "mean exclude_self grad_src");
  r = hand_run(h, ScatterReduce::Sum, true);
  expect_same(r.self, {1, 2, 3, 4}, "sum include_self grad_self");
  expect_same(r.src, {1, 1, 2, 2, 3, 3, 1}, "sum grad_src");
  r = hand_run(h, ScatterReduce::Sum, false);
  expect_same(r.self, {0, 0, 0, 4}, "sum exclude_self grad_self");
  r = hand_run(h, ScatterReduce::None, true);  // include_self is ignored: self is overwritten
  expect_same(r.self, {0, 0, 0, 4}, "none grad_self");
  expect_same(r.src, {1, 1, 2, 2, 3, 3, 1}, "none grad_src");
}

// ---- against the model ------------------------------------------------------------------------
TEST(ScatterBackwardCpu, EveryModeMatchesModel) {
  Rng rng(bt::fresh_seed());
  for (const DType t : kFloat)
    for (const ScatterReduce m : kModes)
      for (const bool include_self : {true, false})
        for (const int64_t dim : {0, 1, -1})
          for (const bool coarse : {false, true}) {
            auto d = sbw_desc(t, coarse ? DType::I32 : DType::I64, {5, 6}, {4, 3}, {4, 5}, dim, m, include_self);
            const int64_t rd = bt::resolved_dim(dim, 2);
            // coarse: zeros (prod) and ties (amax / amin) on purpose.
            const auto self = coarse ? coarse_values(30, rng, true) : bt::random_values(t, 30, rng, 0.5, 1.5);
            const auto src = coarse ? coarse_values(20, rng, true) : bt::random_values(t, 20, rng, 0.5, 1.5);
            const auto grad = bt::random_values(t, 30, rng);
            const auto idx = bt::random_indices(12, d.self_shape[rd], rng, 2);  // heavy duplicates
            expect_model(d, grad, self, idx, src, bt::sbw_contiguous(d));
            d.compute_grad_src = false;
            expect_model(d, grad, self, idx, src, bt::sbw_contiguous(d));
            d.compute_grad_src = true, d.compute_grad_self = false;
            expect_model(d, grad, self, idx, src, bt::sbw_contiguous(d));
          }
}

TEST(ScatterBackwardCpu, ManyToOneAndRank3) {
  Rng rng(bt::fresh_seed());
  for (const ScatterReduce m : kModes)
    for (const bool include_self : {true, false}) {
      // every index element names row 2: 40 members per destination, 0-2 zeros
      const auto d = sbw_desc(DType::BF16, DType::I64, {3, 7}, {40, 7}, {40, 7}, 0, m, include_self);
      const auto self = bt::random_values(DType::BF16, 21, rng, 0.9, 1.1);
      auto src = bt::random_values(DType::BF16, 280, rng, 0.9, 1.1);
      src[7 * 3 + 1] = 0;  // column 1: one zero
      src[7 * 5 + 2] = 0, src[7 * 9 + 2] = 0;  // column 2: two zeros
      for (int k = 0; k < 40; k += 3) src[static_cast<size_t>(7 * k + 4)] = 1.25;  // column 4: ties
      const auto grad = bt::random_values(DType::BF16, 21, rng);
      expect_model(d, grad, self, std::vector<int64_t>(280, 2), src, bt::sbw_contiguous(d));
      const auto r3 = sbw_desc(DType::F32, DType::I32, {3, 4, 5}, {2, 6, 3}, {3, 6, 4}, -2, m, include_self);
      expect_model(r3, bt::random_values(DType::F32, 60, rng), coarse_values(60, rng, true),
                   bt::random_indices(36, 4, rng, 1), coarse_values(72, rng, true), bt::sbw_contiguous(r3));
    }
}

// Any strides of every tensor; the gaps of the outputs untouched.
TEST(ScatterBackwardCpu, StridedViews) {
  Rng rng(bt::fresh_seed());
  for (const ScatterReduce m : {ScatterReduce::Prod, ScatterReduce::Amax, ScatterReduce::Mean}) {
    const auto d = sbw_desc(DType::F16, DType::I64, {6, 5}, {4, 5}, {4, 6}, 0, m);
    const auto self = coarse_values(30, rng, true), src = coarse_values(24, rng, true);
    const auto grad = bt::random_values(DType::F16, 30, rng);
    auto idx = bt::random_indices(20, 6, rng, 2);
    bt::SbwLayouts L{bt::transposed({6, 5}), bt::every_other({4, 5}), bt::padded({6, 5}, 2), bt::padded({4, 6}, 1),
                     bt::transposed({6, 5}), bt::padded({6, 5}, 3), bt::transposed({4, 6})};
    expect_model(d, grad, self, idx, src, L);
    const auto result = bt::sbw_forward(d, self, idx, src);
    const auto r = bt::run_sbw(kCpu, d, grad, self, idx, src, result, L);
    ASSERT_TRUE(r.st.is_ok());
    const auto cov = bt::covered(L.grad_self);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i]) EXPECT_EQ(r.raw_self[2 * i], 0xff) << "gap element " << i << " written";
    L = {bt::padded({6, 5}, 1), bt::broadcast({4, 5}, 0), bt::transposed({6, 5}), bt::broadcast({4, 6}, 1),
         bt::padded({6, 5}, 2), bt::transposed({6, 5}), bt::padded({4, 6}, 2)};
    for (size_t i = 5; i < 20; ++i) idx[i] = idx[i % 5];  // a broadcast index holds one row
    std::vector<double> bsrc = src;
    for (size_t i = 0; i < 24; ++i) bsrc[i] = src[i / 6 * 6];  // src broadcast along dim 1
    expect_model(d, grad, self, idx, bsrc, L);
  }
}

// ---- finite differences (f64) -------------------------------------------------------------------
// loss = sum(forward(self, src) * c): the gradients of the plan with grad = c.
TEST(ScatterBackwardCpu, MatchesFiniteDifferences) {
  Rng rng(bt::fresh_seed());
  const double h = 1e-6;
  for (const ScatterReduce m : kModes)
    for (const bool include_self : {true, false})
      for (int variant = 0; variant < 3; ++variant) {
        const bool extreme = m == ScatterReduce::Amax || m == ScatterReduce::Amin;
        if (variant > 0 && m != ScatterReduce::Prod) continue;  // zeros: prod only
        if (m == ScatterReduce::None) continue;  // last wins: torch's rule gives every duplicate g, not a derivative
        const auto d = sbw_desc(DType::F64, DType::I64, {4, 3}, {3, 3}, {3, 4}, 0, m, include_self);
        auto self = bt::random_values(DType::F64, 12, rng, 0.5, 2.0);
        auto src = bt::random_values(DType::F64, 12, rng, 0.5, 2.0);
        // destinations: (1,0) <- src (0,0), (1,0); (2,0) <- (2,0); (0,1) <- (1,1); (1,1) <- (0,1), (2,1);
        // (3,2) <- (0,2), (1,2), (2,2)
        const std::vector<int64_t> idx = {1, 1, 3, 1, 0, 3, 2, 1, 3};
        if (variant >= 1) self[3] = 0, src[0] = 0;  // (1,0): self 0 and one src 0
        if (variant == 2) src[4] = 0, self[4] = 0, src[9] = 0;  // (1,0): two src zeros; (1,1): self 0, one src 0
        if (extreme)  // well separated values: no ties, FD valid
          for (size_t i = 0; i < 12; ++i) self[i] = 0.37 * static_cast<double>(i) - 1.0, src[i] = 0.29 * static_cast<double>(i) - 1.3;
        const auto c = bt::random_values(DType::F64, 12, rng);
        const auto result = bt::sbw_forward(d, self, idx, src);
        const auto r = bt::run_sbw(kCpu, d, c, self, idx, src, result, bt::sbw_contiguous(d));
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
        auto loss = [&](const std::vector<double>& s, const std::vector<double>& x) {
          const auto o = bt::sbw_forward(d, s, idx, x);
          double t = 0;
          for (size_t i = 0; i < o.size(); ++i) t += o[i] * c[i];
          return t;
        };
        for (size_t i = 0; i < 12; ++i) {
          auto p = self, q = self;
          p[i] += h, q[i] -= h;
          EXPECT_NEAR(r.g.self[i], (loss(p, src) - loss(q, src)) / (2 * h), 1e-6)
              << bt::sbw_what(d) << " variant " << variant << " grad_self " << i;
          auto ps = src, qs = src;
          ps[i] += h, qs[i] -= h;
          EXPECT_NEAR(r.g.src[i], (loss(self, ps) - loss(self, qs)) / (2 * h), 1e-6)
              << bt::sbw_what(d) << " variant " << variant << " grad_src " << i;
        }
      }
}

// ---- zero size, determinism -------------------------------------------------------------------
TEST(ScatterBackwardCpu, ZeroSize) {
  Rng rng(bt::fresh_seed());
  // No index element: grad_self = grad, grad_src (src larger) all zeros.
  for (const ScatterReduce m : kModes) {
    const auto d = sbw_desc(DType::F32, DType::I64, {3, 4}, {0, 4}, {2, 4}, 0, m, false);
    const auto grad = bt::random_values(DType::F32, 12, rng), self = bt::random_values(DType::F32, 12, rng);
    const auto src = bt::random_values(DType::F32, 8, rng);
    const auto r = bt::run_sbw(kCpu, d, grad, self, {}, src, self, bt::sbw_contiguous(d));
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.g.self, grad);
    EXPECT_EQ(r.g.src, std::vector<double>(8, 0.0));
  }
  const auto e = sbw_desc(DType::F32, DType::I64, {0, 4}, {0, 2}, {0, 2}, 1, ScatterReduce::Prod);
  EXPECT_EQ(ScatterReduceBackwardPlan::select(kCpu, e).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_sbw(kCpu, e, {}, {}, {}, {}, {}, bt::sbw_contiguous(e)).st.is_ok());
  // self empty along dim with an index element: every index is bad.
  const auto f = sbw_desc(DType::F32, DType::I64, {2, 0}, {2, 1}, {2, 1}, 1, ScatterReduce::Sum);
  BT_EXPECT_STATUS(bt::run_sbw(kCpu, f, {}, {}, {0, 0}, {1, 1}, {}, bt::sbw_contiguous(f)).st,
                   StatusCode::InvalidProblem, "outside [0, 0)");
}

TEST(ScatterBackwardCpu, RunTwiceBitIdentical) {
  Rng rng(bt::fresh_seed());
  const auto d = sbw_desc(DType::BF16, DType::I64, {17, 9}, {64, 9}, {64, 9}, 0, ScatterReduce::Prod);
  const auto self = coarse_values(153, rng, true), src = coarse_values(576, rng, true);
  const auto grad = bt::random_values(DType::BF16, 153, rng);
  const auto idx = bt::random_indices(576, 17, rng, 2);
  const auto result = bt::sbw_forward(d, self, idx, src);
  const auto a = bt::run_sbw(kCpu, d, grad, self, idx, src, result, bt::sbw_contiguous(d), 0xff);
  const auto b = bt::run_sbw(kCpu, d, grad, self, idx, src, result, bt::sbw_contiguous(d), 0x5a);
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
  EXPECT_EQ(a.raw_self, b.raw_self);
  EXPECT_EQ(a.raw_src, b.raw_src);
}

}  // namespace
