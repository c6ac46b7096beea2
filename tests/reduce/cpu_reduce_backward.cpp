// ReduceBackwardPlan on the CPU: central finite differences of the CPU forward
// in f64 for all nine differentiable kinds, hand cases for ties, zeros in Prod,
// Norm2 at 0, LogSumExp at -inf, Sum/Mean without x / y, strided operands.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/reduce_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::cpu_backward;
using bt::cpu_backward_views;
using bt::cpu_forward;
using bt::make_desc;

namespace {

constexpr double NaN = std::numeric_limits<double>::quiet_NaN();
constexpr double Inf = std::numeric_limits<double>::infinity();

// loss(x) = sum(dy * y(x)) with the CPU forward in f64.
double loss(const ReduceDescriptor& d, const std::vector<double>& x, const std::vector<double>& dy) {
  auto r = cpu_forward(d, x);
  EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
  double s = 0;
  for (size_t i = 0; i < dy.size() && i < r.y.size(); ++i) s += dy[i] * r.y[i];
  return s;
}

std::vector<double> finite_difference(const ReduceDescriptor& d, std::vector<double> x, const std::vector<double>& dy) {
  std::vector<double> g(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double h = 1e-6 * std::max(1.0, std::fabs(x[i]));
    const double x0 = x[i];
    x[i] = x0 + h;
    const double lp = loss(d, x, dy);
    x[i] = x0 - h;
    const double lm = loss(d, x, dy);
    x[i] = x0;
    g[i] = (lp - lm) / (2 * h);
  }
  return g;
}

// Inputs for which every kind is smooth around x: distinct values (Max/Min
// have a unique winner far from the others), Prod away from 0.
std::vector<double> smooth_inputs(ReduceKind k, int64_t n, bt::Rng& rng) {
  if (k == ReduceKind::Max || k == ReduceKind::Min) {
    auto v = bt::permutation_values(DType::F64, n, rng, 0.1);
    for (double& a : v) a += bt::uniform(rng, -0.01, 0.01);
    return v;
  }
  std::vector<double> v(static_cast<size_t>(n));
  for (double& a : v) {
    if (k == ReduceKind::Prod) a = bt::uniform(rng, 0.5, 1.5) * (bt::uniform_int(rng, 0, 1) ? 1 : -1);
    else a = bt::uniform(rng, -1.0, 1.0);
  }
  return v;
}

struct FdCase {
  Dims shape;
  Dims axes;
};

class BackwardFd : public ::testing::TestWithParam<ReduceKind> {};
INSTANTIATE_TEST_SUITE_P(AllKinds, BackwardFd, ::testing::ValuesIn(bt::kGradKinds),
                         [](const auto& info) { return bt::kname(info.param); });

}  // namespace

TEST_P(BackwardFd, MatchesCentralDifferences) {
  const ReduceKind k = GetParam();
  const bool var_like = k == ReduceKind::Var || k == ReduceKind::Std;
  std::vector<FdCase> cases = {
      {{3, 4}, {1}},        {{3, 4}, {0}},       {{3, 4}, {}},          {{2, 3, 4}, {0, 2}},
      {{2, 3, 4}, {1, 2}},  {{2, 3, 4}, {-1}},   {{2, 3, 4}, {1}},      {{2, 3, 4}, {}},
      {{4, 1, 3}, {0, 1}},  {{5}, {0}},          {{2, 2, 2, 3}, {3, 0}}, {{3, 5}, {-2}},
  };
  // A few random shapes / axis sets.
  bt::Rng shape_rng(bt::fresh_seed("shapes"));
  for (int i = 0; i < 6; ++i) {
    FdCase c;
    const int rank = static_cast<int>(bt::uniform_int(shape_rng, 1, 4));
    for (int a = 0; a < rank; ++a) c.shape.push_back(bt::uniform_int(shape_rng, 1, 4));
    for (int a = 0; a < rank; ++a)
      if (bt::uniform_int(shape_rng, 0, 1)) c.axes.push_back(bt::uniform_int(shape_rng, 0, 1) ? a : a - rank);
    cases.push_back(c);
  }
  int checked = 0;
  for (size_t ci = 0; ci < cases.size(); ++ci) {
    const FdCase& c = cases[ci];
    for (bool keep : {false, true}) {
      for (int64_t corr : var_like ? std::vector<int64_t>{0, 1, 2} : std::vector<int64_t>{1}) {
        const auto d = make_desc(k, DType::F64, c.shape, c.axes, keep, corr);
        auto fwd_plan = ReducePlan::select(Stream::cpu(), d);
        ASSERT_TRUE(fwd_plan.is_ok()) << fwd_plan.status().to_string();
        const int64_t n_in = bt::numel(c.shape), n_out = bt::numel(fwd_plan->output_shape());
        const int64_t n_red = n_out ? n_in / n_out : 0;
        if (var_like && n_red <= corr) continue;  // the function is inf / NaN there
        // Std of a single element is |x - mean| = 0 for every x: sqrt is not
        // differentiable at 0 (the documented formula gives 0 / 0 there).
        if (k == ReduceKind::Std && n_red == 1) continue;
        const uint64_t seed = bt::fresh_seed();
        SCOPED_TRACE("shape " + c.shape.to_string() + " axes " + c.axes.to_string() + (keep ? " keepdim" : "") +
                     " correction " + std::to_string(corr) + " seed " + std::to_string(seed));
        bt::Rng rng(seed);
        const auto x = smooth_inputs(k, n_in, rng);
        const auto dy = bt::random_values(DType::F64, n_out, rng, -1, 1);
        const auto y = cpu_forward(d, x).y;
        auto b = cpu_backward(d, dy, &x, &y);
        ASSERT_TRUE(b.st.is_ok()) << b.st.to_string();
        const auto fd = finite_difference(d, x, dy);
        EXPECT_LE(bt::rel_error(b.dx, fd), 1e-6) << bt::describe_mismatch(b.dx, fd);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 20);
}

// The same backward in f32 / f16 / bf16 equals the f64 backward of the same
// (rounded) operands, rounded once: the reference computes in double.
TEST_P(BackwardFd, LowerPrecisionDTypesMatchF64) {
  const ReduceKind k = GetParam();
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    for (const FdCase& c : {FdCase{{3, 5}, {1}}, FdCase{{2, 3, 4}, {0, 2}}, FdCase{{4, 3}, {}}}) {
      const uint64_t seed = bt::fresh_seed();
      SCOPED_TRACE(bt::tname(t) + " shape " + c.shape.to_string() + " axes " + c.axes.to_string() + " seed " + std::to_string(seed));
      bt::Rng rng(seed);
      const auto d = make_desc(k, t, c.shape, c.axes, true);
      auto d64 = d;
      d64.dtype = DType::F64;
      auto x = smooth_inputs(k, bt::numel(c.shape), rng);
      for (double& a : x) a = bt::round_to(t, a);
      const auto y = cpu_forward(d, x).y;  // already rounded to t
      const auto dy = bt::random_values(t, bt::numel(bt::reduced_shape(d)), rng, -1, 1);
      auto lo = cpu_backward(d, dy, &x, &y);
      auto hi = cpu_backward(d64, dy, &x, &y);
      ASSERT_TRUE(lo.st.is_ok() && hi.st.is_ok()) << lo.st.to_string() << hi.st.to_string();
      std::vector<double> hi_rounded = hi.dx;
      for (double& a : hi_rounded) a = bt::round_to(t, a);
      EXPECT_EQ(bt::rel_error(lo.dx, hi_rounded), 0.0) << bt::describe_mismatch(lo.dx, hi_rounded);
    }
  }
}

// ---------------------------------------------------------------------------
// Hand cases
// ---------------------------------------------------------------------------
TEST(ReduceBackwardHand, MaxMinTiesSplitEvenly) {
  for (DType t : bt::kFpTypes) {
    SCOPED_TRACE(bt::tname(t));
    const std::vector<double> x = {1, 3, 3, 2};
    const std::vector<double> y = {3};
    auto r = cpu_backward(make_desc(ReduceKind::Max, t, {4}, {0}), {1}, &x, &y);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.dx, (std::vector<double>{0, 0.5, 0.5, 0}));
    const std::vector<double> x3 = {5, 5, 5};
    const std::vector<double> y3 = {5};
    r = cpu_backward(make_desc(ReduceKind::Max, t, {3}, {0}), {3}, &x3, &y3);
    EXPECT_EQ(r.dx, (std::vector<double>{1, 1, 1}));
    r = cpu_backward(make_desc(ReduceKind::Min, t, {3}, {0}), {3}, &x3, &y3);
    EXPECT_EQ(r.dx, (std::vector<double>{1, 1, 1}));
    const std::vector<double> xm = {2, 1, 1, 1};
    const std::vector<double> ym = {1};
    r = cpu_backward(make_desc(ReduceKind::Min, t, {4}, {0}), {1.5}, &xm, &ym);
    EXPECT_EQ(r.dx, (std::vector<double>{0, 0.5, 0.5, 0.5}));
    // Rows, keepdim: [[4,1,4],[2,2,0]] max over axis 1 -> [4,2], dy [2,-4].
    const std::vector<double> x2 = {4, 1, 4, 2, 2, 0};
    const std::vector<double> y2 = {4, 2};
    r = cpu_backward(make_desc(ReduceKind::Max, t, {2, 3}, {1}, true), {2, -4}, &x2, &y2);
    EXPECT_EQ(r.dx, (std::vector<double>{1, 0, 1, -2, -2, 0}));
    // Multi-axis: ties across both reduced axes.
    const std::vector<double> x4 = {7, 1, 7, 7};  // [2,2] all reduced
    const std::vector<double> y4 = {7};
    r = cpu_backward(make_desc(ReduceKind::Max, t, {2, 2}, {}), {3}, &x4, &y4);
    EXPECT_EQ(r.dx, (std::vector<double>{1, 0, 1, 1}));
    // NaN max: the gradient goes to the NaN entries (x and y both NaN).
    const std::vector<double> xn = {1, NaN, NaN};
    const std::vector<double> yn = {NaN};
    r = cpu_backward(make_desc(ReduceKind::Max, t, {3}, {0}), {1}, &xn, &yn);
    EXPECT_EQ(r.dx, (std::vector<double>{0, 0.5, 0.5}));
  }
}

TEST(ReduceBackwardHand, ProdWithZerosIsExact) {
  for (DType t : bt::kFpTypes) {
    SCOPED_TRACE(bt::tname(t));
    auto prod_bw = [&](const std::vector<double>& x, double dy) {
      const auto d = make_desc(ReduceKind::Prod, t, {static_cast<int64_t>(x.size())}, {0});
      return cpu_backward(d, {dy}, &x, nullptr);  // Prod needs x only
    };
    auto r = prod_bw({2, 3, 4}, 1);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.dx, (std::vector<double>{12, 8, 6}));
    EXPECT_EQ(prod_bw({2, 0, 3}, 1).dx, (std::vector<double>{0, 6, 0}));   // one zero
    EXPECT_EQ(prod_bw({2, 0, 3}, 2).dx, (std::vector<double>{0, 12, 0}));
    EXPECT_EQ(prod_bw({0, -5}, 1).dx, (std::vector<double>{-5, 0}));
    EXPECT_EQ(prod_bw({2, 0, 3, 0}, 1).dx, (std::vector<double>{0, 0, 0, 0}));  // two zeros
    EXPECT_EQ(prod_bw({0}, 7).dx, (std::vector<double>{7}));  // empty product of the others = 1
    // No NaN from 0 * inf tricks: a huge value next to a zero.
    EXPECT_EQ(prod_bw({0, 1e30, 2}, 1).dx[0], bt::round_to(t, 2e30));
    // Rows: [[0,2,3],[1,2,3]] over axis 1, dy [1,1].
    const std::vector<double> x2 = {0, 2, 3, 1, 2, 3};
    auto r2 = cpu_backward(make_desc(ReduceKind::Prod, t, {2, 3}, {1}), {1, 1}, &x2, nullptr);
    EXPECT_EQ(r2.dx, (std::vector<double>{6, 0, 0, 6, 3, 2}));
  }
}

TEST(ReduceBackwardHand, Norm2AtZeroAndLogSumExpAtMinusInf) {
  for (DType t : bt::kFpTypes) {
    SCOPED_TRACE(bt::tname(t));
    const std::vector<double> x = {0, 0, 3, 4};
    const std::vector<double> y = {0, 5};
    auto r = cpu_backward(make_desc(ReduceKind::Norm2, t, {2, 2}, {1}), {1, 10}, &x, &y);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.dx, (std::vector<double>{0, 0, 6, 8}));
    const std::vector<double> xl = {-Inf, -Inf, 0, 0};
    const std::vector<double> yl = {-Inf, std::log(2.0)};
    r = cpu_backward(make_desc(ReduceKind::LogSumExp, t, {2, 2}, {1}), {1, 1}, &xl, &yl);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.dx[0], 0.0);
    EXPECT_EQ(r.dx[1], 0.0);
    // exp(0 - rounded(log 2)) ~ 0.5
    EXPECT_NEAR(r.dx[2], 0.5, 0.5 * 2 * bt::ulp_rel(t));
    EXPECT_NEAR(r.dx[3], 0.5, 0.5 * 2 * bt::ulp_rel(t));
  }
}

TEST(ReduceBackwardHand, VarStd) {
  const std::vector<double> x = {1, 2, 3};
  const std::vector<double> y_std = {1};
  auto v = cpu_backward(make_desc(ReduceKind::Var, DType::F64, {3}, {0}), {1}, &x, nullptr);
  ASSERT_TRUE(v.st.is_ok()) << v.st.to_string();
  EXPECT_EQ(v.dx, (std::vector<double>{-1, 0, 1}));  // 2 (x - 2) / 2
  auto v0 = cpu_backward(make_desc(ReduceKind::Var, DType::F64, {3}, {0}, false, 0), {3}, &x, nullptr);
  EXPECT_EQ(v0.dx, (std::vector<double>{-2, 0, 2}));  // 3 * 2 (x - 2) / 3
  auto s = cpu_backward(make_desc(ReduceKind::Std, DType::F64, {3}, {0}), {1}, &x, &y_std);
  EXPECT_EQ(s.dx, (std::vector<double>{-0.5, 0, 0.5}));  // (x - 2) / (2 * 1)
}

TEST(ReduceBackwardHand, SumAndMeanNeedNoXOrY) {
  for (DType t : bt::kFpTypes) {
    SCOPED_TRACE(bt::tname(t));
    auto r = cpu_backward(make_desc(ReduceKind::Sum, t, {2, 3}, {1}), {1, 2}, nullptr, nullptr);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.dx, (std::vector<double>{1, 1, 1, 2, 2, 2}));
    r = cpu_backward(make_desc(ReduceKind::Sum, t, {2, 3}, {0}, true), {1, 2, 3}, nullptr, nullptr);
    EXPECT_EQ(r.dx, (std::vector<double>{1, 2, 3, 1, 2, 3}));
    r = cpu_backward(make_desc(ReduceKind::Sum, t, {2, 3}, {}), {-4}, nullptr, nullptr);
    EXPECT_EQ(r.dx, (std::vector<double>(6, -4)));
    r = cpu_backward(make_desc(ReduceKind::Mean, t, {2, 4}, {1}), {1, 2}, nullptr, nullptr);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.dx, (std::vector<double>{0.25, 0.25, 0.25, 0.25, 0.5, 0.5, 0.5, 0.5}));
    r = cpu_backward(make_desc(ReduceKind::Mean, t, {2, 2, 2}, {0, 2}, true), {8, 16}, nullptr, nullptr);
    EXPECT_EQ(r.dx, (std::vector<double>{2, 2, 4, 4, 2, 2, 4, 4}));
  }
  // needs_x / needs_y as documented.
  struct Need { ReduceKind k; bool x, y; };
  for (const Need& n : {Need{ReduceKind::Sum, false, false}, Need{ReduceKind::Mean, false, false},
                        Need{ReduceKind::Max, true, true}, Need{ReduceKind::Min, true, true},
                        Need{ReduceKind::Prod, true, false}, Need{ReduceKind::Norm2, true, true},
                        Need{ReduceKind::LogSumExp, true, true}, Need{ReduceKind::Var, true, false},
                        Need{ReduceKind::Std, true, true}}) {
    auto p = ReduceBackwardPlan::select(Stream::cpu(), make_desc(n.k, DType::F32, {2, 3}, {1}));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ(p->needs_x(), n.x) << bt::kname(n.k);
    EXPECT_EQ(p->needs_y(), n.y) << bt::kname(n.k);
    EXPECT_EQ(p->output_shape(), Dims{2});
  }
}

TEST(ReduceBackwardHand, EmptyShapes) {
  // dx empty: nothing to do. dy empty with a non-empty dx cannot happen.
  auto r = cpu_backward(make_desc(ReduceKind::Sum, DType::F32, {0, 3}, {0}), {0, 0, 0}, nullptr, nullptr);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_TRUE(r.dx.empty());
  const std::vector<double> none;
  r = cpu_backward(make_desc(ReduceKind::Var, DType::F32, {2, 0}, {0}), none, &none, nullptr);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_TRUE(r.dx.empty());
}

// ---------------------------------------------------------------------------
// Strided / broadcast operands give exactly the contiguous result.
// ---------------------------------------------------------------------------
TEST(ReduceBackwardLayouts, StridedOperandsMatchContiguous) {
  const Dims s{3, 4, 5};
  for (DType t : {DType::F64, DType::F32, DType::BF16}) {
    for (ReduceKind k : bt::kGradKinds) {
      for (const Dims& ax : {Dims{2}, Dims{0}, Dims{0, 2}, Dims{}}) {
        for (bool keep : {false, true}) {
          const auto d = make_desc(k, t, s, ax, keep);
          const Dims os = bt::reduced_shape(d);
          const uint64_t seed = bt::fresh_seed();
          SCOPED_TRACE(bt::tname(t) + " " + bt::kname(k) + " axes " + ax.to_string() + (keep ? " keepdim" : "") +
                       " seed " + std::to_string(seed));
          bt::Rng rng(seed);
          auto x = smooth_inputs(k, bt::numel(s), rng);
          for (double& a : x) a = bt::round_to(t, a);
          const auto y = cpu_forward(d, x).y;
          // dy: a broadcast view along its first axis when it has one of extent > 1.
          bt::Layout dyl = bt::contiguous(os);
          for (int a = 0; a < os.rank; ++a)
            if (os[a] > 1) { dyl = bt::broadcast(os, a); break; }
          bt::HostBuffer dyb(t, dyl.storage);
          bt::scatter(dyb, dyl, bt::random_values(t, dyl.numel(), rng, -1, 1));
          const auto dy = bt::gather(dyb, dyl);
          const bt::Layout xl = bt::transposed(s), yl = bt::padded(os), dxl = bt::every_other(s);
          bt::HostBuffer xb(t, xl.storage), yb(t, yl.storage);
          xb.poison();
          yb.poison();
          bt::scatter(xb, xl, x);
          bt::scatter(yb, yl, y);
          auto strided = cpu_backward_views(d, bt::view(dyb, dyl), bt::view(xb, xl), bt::view(yb, yl), dxl);
          auto plain = cpu_backward(d, dy, &x, &y);
          ASSERT_TRUE(strided.st.is_ok() && plain.st.is_ok()) << strided.st.to_string() << plain.st.to_string();
          ASSERT_EQ(strided.dx.size(), plain.dx.size());
          for (size_t i = 0; i < plain.dx.size(); ++i)
            ASSERT_TRUE(bt::same_value(strided.dx[i], plain.dx[i])) << i << ": " << strided.dx[i] << " vs " << plain.dx[i];
        }
      }
    }
  }
}
