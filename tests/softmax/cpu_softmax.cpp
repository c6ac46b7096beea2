// SoftmaxPlan / SoftmaxBackwardPlan on the CPU reference:
//   * every validation rule: its StatusCode and message (naming the plan);
//   * values against an independent naive model (support/softmax_helpers.hpp)
//     for every dtype, axis 0 / middle / last, strided / transposed / padded
//     views, scale, softmax and log_softmax, in place;
//   * the documented special values: all -inf rows, NaN rows, +inf rows;
//   * backward against central finite differences of the forward in f64;
//   * zero-size problems write nothing; the CPU SKU and workspace.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/softmax_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

SoftmaxDescriptor fwd_desc(DType t, Dims shape, int axis = -1, bool log = false, double scale = 1.0) {
  SoftmaxDescriptor d;
  d.dtype = t;
  d.shape = shape;
  d.axis = axis;
  d.log = log;
  d.scale = scale;
  return d;
}
SoftmaxBackwardDescriptor bwd_desc(DType t, Dims shape, int axis = -1, bool log = false, double scale = 1.0) {
  SoftmaxBackwardDescriptor d;
  d.dtype = t;
  d.shape = shape;
  d.axis = axis;
  d.log = log;
  d.scale = scale;
  return d;
}

// Contiguous CPU views of a vector (from element `off` on).
template <class T>
TensorRef cref(const std::vector<T>& v, Dims shape, int64_t off = 0) {
  return TensorRef::contiguous(v.data() + off, Device::cpu(), shape, static_cast<int64_t>(v.size()) - off);
}
template <class T>
TensorMut cmut(std::vector<T>& v, Dims shape, int64_t off = 0) {
  return TensorMut::contiguous(v.data() + off, Device::cpu(), shape, static_cast<int64_t>(v.size()) - off);
}

// Relative tolerance of one rounding to t (the reference and the model both
// compute in double and round once; they may land one ulp apart).
double ulp_tol(DType t) {
  switch (t) {
    case DType::F64: return 1e-12;
    case DType::F32: return 2.4e-7;
    case DType::F16: return 2e-3;
    default: return 1.6e-2;  // bf16
  }
}

::testing::AssertionResult close(const std::vector<double>& got, const std::vector<double>& want, double rel,
                                 double abs = 1e-300) {
  if (got.size() != want.size()) return ::testing::AssertionFailure() << "sizes differ";
  for (size_t i = 0; i < got.size(); ++i) {
    if (bt::same_value(got[i], want[i])) continue;
    if (std::isnan(got[i]) || std::isnan(want[i]) || std::isinf(got[i]) || std::isinf(want[i]) ||
        std::abs(got[i] - want[i]) > rel * std::abs(want[i]) + abs)
      return ::testing::AssertionFailure() << "element " << i << ": got " << got[i] << ", want " << want[i];
  }
  return ::testing::AssertionSuccess();
}

// Forward on the CPU over layouts Lx / Ly; returns y's logical values.
std::vector<double> run_forward(const SoftmaxDescriptor& d, const bt::Layout& Lx, const bt::Layout& Ly,
                                const std::vector<double>& x) {
  bt::HostBuffer bx(d.dtype, Lx.storage), by(d.dtype, Ly.storage);
  bx.poison();
  by.poison();
  bt::scatter(bx, Lx, x);
  auto plan = SoftmaxPlan::select(kCpu, d).value();
  EXPECT_TRUE(plan.run(kCpu, {}, {bt::view(bx, Lx), bt::view_mut(by, Ly)}).is_ok());
  EXPECT_EQ(bt::check_gaps(by, Ly, bt::poison_byte(d.dtype)), "");
  return bt::gather(by, Ly);
}

std::vector<double> run_backward(const SoftmaxBackwardDescriptor& d, const bt::Layout& L, const std::vector<double>& y,
                                 const std::vector<double>& dy) {
  bt::HostBuffer by(d.dtype, L.storage), bg(d.dtype, L.storage), bdx(d.dtype, L.storage);
  bdx.poison();
  bt::scatter(by, L, y);
  bt::scatter(bg, L, dy);
  auto plan = SoftmaxBackwardPlan::select(kCpu, d).value();
  EXPECT_TRUE(plan.run(kCpu, {}, {bt::view(by, L), bt::view(bg, L), bt::view_mut(bdx, L)}).is_ok());
  return bt::gather(bdx, L);
}

std::vector<double> rounded(DType t, std::vector<double> v) {
  for (double& x : v) x = bt::round_to(t, x);
  return v;
}

// ---- validation rules -------------------------------------------------------------
TEST(SoftmaxCpu, IntegerDtypeIsUnsupported) {
  BT_EXPECT_STATUS(SoftmaxPlan::select(kCpu, fwd_desc(DType::I32, {2, 3})).status(), StatusCode::Unsupported,
                   "SoftmaxPlan: dtype i32 is not supported (f32, f64, f16, bf16)");
  BT_EXPECT_STATUS(SoftmaxBackwardPlan::select(kCpu, bwd_desc(DType::F8E4M3, {2, 3})).status(), StatusCode::Unsupported,
                   "SoftmaxBackwardPlan: dtype");
}

TEST(SoftmaxCpu, NegativeExtentIsInvalid) {
  BT_EXPECT_STATUS(SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, {2, -3})).status(), StatusCode::InvalidProblem,
                   "SoftmaxPlan: ");
  BT_EXPECT_STATUS(SoftmaxBackwardPlan::select(kCpu, bwd_desc(DType::F32, {-1})).status(), StatusCode::InvalidProblem,
                   "SoftmaxBackwardPlan: ");
}

TEST(SoftmaxCpu, AxisOutOfRangeIsInvalid) {
  BT_EXPECT_STATUS(SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, {2, 3}, 2)).status(), StatusCode::InvalidProblem,
                   "SoftmaxPlan: axis 2 is out of range for shape [2,3] (expected [-2, 1])");
  BT_EXPECT_STATUS(SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, {2, 3}, -3)).status(), StatusCode::InvalidProblem,
                   "axis -3 is out of range");
  BT_EXPECT_STATUS(SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, Dims{}, 1)).status(), StatusCode::InvalidProblem,
                   "axis 1 is out of range for shape [] (expected [-1, 0])");
  BT_EXPECT_STATUS(SoftmaxBackwardPlan::select(kCpu, bwd_desc(DType::F32, {4}, 1)).status(), StatusCode::InvalidProblem,
                   "SoftmaxBackwardPlan: axis 1 is out of range");
}

TEST(SoftmaxCpu, ScaleMustBeFiniteAndNonZero) {
  for (double s : {0.0, -0.0, kInf, -kInf, kNaN}) {
    BT_EXPECT_STATUS(SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, {2, 3}, -1, false, s)).status(),
                     StatusCode::InvalidProblem, "must be finite and != 0");
    BT_EXPECT_STATUS(SoftmaxBackwardPlan::select(kCpu, bwd_desc(DType::F32, {2, 3}, -1, true, s)).status(),
                     StatusCode::InvalidProblem, "SoftmaxBackwardPlan: scale");
  }
  EXPECT_TRUE(SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, {2, 3}, -1, false, -0.5)).is_ok());  // negative is fine
}

TEST(SoftmaxCpu, ArgumentShapeAndDtypeAreChecked) {
  auto plan = SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, {2, 3})).value();
  std::vector<float> x(6, 0.f), y(6, 0.f);
  std::vector<double> yd(6, 0.0);
  BT_EXPECT_STATUS(plan.can_implement({cref(x, {3, 2}),
                                       cmut(y, {2, 3})}),
                   StatusCode::InvalidProblem, "SoftmaxPlan: x shape [3,2] must be [2,3]");
  BT_EXPECT_STATUS(plan.can_implement({cref(x, {2, 3}),
                                       cmut(yd, {2, 3})}),
                   StatusCode::InvalidProblem, "SoftmaxPlan: y dtype f64 must be f32");
  BT_EXPECT_STATUS(plan.can_implement({cref(x, {2, 3}), TensorMut{}}),
                   StatusCode::InvalidProblem, "SoftmaxPlan: y is missing");
}

TEST(SoftmaxCpu, OverlapIsRefusedButInPlaceIsAllowed) {
  std::vector<float> buf(12, 0.5f);
  auto plan = SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, {2, 3})).value();
  const TensorRef x = cref(buf, {2, 3});
  EXPECT_TRUE(plan.run(kCpu, {}, {x, cmut(buf, {2, 3})}).is_ok());
  BT_EXPECT_STATUS(plan.can_implement({x, cmut(buf, {2, 3}, 1)}),
                   StatusCode::InvalidProblem, "SoftmaxPlan: y partially overlaps x");

  auto bplan = SoftmaxBackwardPlan::select(kCpu, bwd_desc(DType::F32, {2, 3})).value();
  std::vector<float> yv(6, 0.25f), g(6, 1.f);
  const TensorRef y = cref(yv, {2, 3});
  const TensorRef dy = cref(g, {2, 3});
  EXPECT_TRUE(bplan.run(kCpu, {}, {y, dy, cmut(g, {2, 3})}).is_ok());
  BT_EXPECT_STATUS(bplan.can_implement({y, dy, cmut(yv, {2, 3})}),
                   StatusCode::InvalidProblem, "SoftmaxBackwardPlan: dx overlaps y");
}

// ---- values -------------------------------------------------------------------------
struct Case {
  Dims shape;
  int axis;
};

TEST(SoftmaxCpu, MatchesModelEveryDtypeAxisAndLayout) {
  bt::Rng rng(bt::fresh_seed());
  const Case cases[] = {{{5, 7}, -1}, {{5, 7}, 0}, {{3, 4, 6}, 1}, {{2, 3, 4, 5}, -2}, {{9}, 0}, {{1, 1, 33}, 2}, {{6, 1}, -1}};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (const Case& c : cases)
      for (bool log : {false, true})
        for (double scale : {1.0, 0.37, -2.0}) {
          const bt::Layout layouts[] = {bt::contiguous(c.shape), bt::transposed(c.shape), bt::padded(c.shape, 3),
                                        bt::every_other(c.shape)};
          for (const bt::Layout& L : layouts) {
            const auto x = bt::random_values(t, bt::numel(c.shape), rng, -4.0, 4.0);
            const auto got = run_forward(fwd_desc(t, c.shape, c.axis, log, scale), L, bt::contiguous(c.shape), x);
            const auto want = rounded(t, bt::softmax_model::forward(x, c.shape, c.axis, log, scale));
            EXPECT_TRUE(close(got, want, ulp_tol(t), t == DType::F64 ? 1e-15 : 1e-30))
                << dtype_name(t) << " " << c.shape.to_string() << " axis " << c.axis << " log " << log << " scale "
                << scale << " " << bt::describe(L);
          }
        }
}

TEST(SoftmaxCpu, BackwardMatchesModel) {
  bt::Rng rng(bt::fresh_seed());
  const Case cases[] = {{{5, 7}, -1}, {{5, 7}, 0}, {{3, 4, 6}, 1}, {{2, 3, 4, 5}, 0}};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (const Case& c : cases)
      for (bool log : {false, true}) {
        const auto x = bt::random_values(DType::F64, bt::numel(c.shape), rng, -3.0, 3.0);
        const auto y = rounded(t, bt::softmax_model::forward(x, c.shape, c.axis, log, 1.5));
        const auto dy = bt::random_values(t, bt::numel(c.shape), rng);
        for (const bt::Layout& L : {bt::contiguous(c.shape), bt::transposed(c.shape), bt::padded(c.shape, 2)}) {
          const auto got = run_backward(bwd_desc(t, c.shape, c.axis, log, 1.5), L, y, dy);
          const auto want = rounded(t, bt::softmax_model::backward(y, dy, c.shape, c.axis, log, 1.5));
          // dx = a difference of products: its rounding error is relative to the operands.
          EXPECT_TRUE(close(got, want, ulp_tol(t), ulp_tol(t) * 8))
              << dtype_name(t) << " " << c.shape.to_string() << " axis " << c.axis << " log " << log;
        }
      }
}

TEST(SoftmaxCpu, LiteralValues) {
  // softmax([0, ln 3]) = [1/4, 3/4]; log_softmax = log of that.
  const std::vector<double> x = {0.0, std::log(3.0)};
  const auto y = run_forward(fwd_desc(DType::F64, {2}), bt::contiguous({2}), bt::contiguous({2}), x);
  EXPECT_NEAR(y[0], 0.25, 1e-15);
  EXPECT_NEAR(y[1], 0.75, 1e-15);
  const auto ly = run_forward(fwd_desc(DType::F64, {2}, 0, true), bt::contiguous({2}), bt::contiguous({2}), x);
  EXPECT_NEAR(ly[0], std::log(0.25), 1e-15);
  EXPECT_NEAR(ly[1], std::log(0.75), 1e-15);
  // scale 2 on [0, ln 3 / 2] gives the same probabilities.
  const auto ys = run_forward(fwd_desc(DType::F64, {2}, 0, false, 2.0), bt::contiguous({2}), bt::contiguous({2}),
                              {0.0, std::log(3.0) / 2});
  EXPECT_NEAR(ys[1], 0.75, 1e-15);
}

TEST(SoftmaxCpu, RankZeroIsOneElementRow) {
  for (bool log : {false, true}) {
    const auto y = run_forward(fwd_desc(DType::F32, Dims{}, 0, log), bt::contiguous(Dims{}), bt::contiguous(Dims{}), {3.5});
    ASSERT_EQ(y.size(), 1u);
    EXPECT_EQ(y[0], log ? 0.0 : 1.0);
  }
}

// ---- special values -----------------------------------------------------------------
TEST(SoftmaxCpu, AllNegInfRowGivesZeroProbabilitiesAndNegInfLogs) {
  // Row 0 all -inf, row 1 partly -inf, row 2 finite.
  const std::vector<double> x = {-kInf, -kInf, -kInf, 1.0, -kInf, 2.0, 0.5, 0.25, 0.0};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    const auto y = run_forward(fwd_desc(t, {3, 3}), bt::contiguous({3, 3}), bt::contiguous({3, 3}), x);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(y[j], 0.0) << dtype_name(t);
    EXPECT_EQ(y[4], 0.0);
    EXPECT_NEAR(y[3] + y[5], 1.0, ulp_tol(t) * 2);
    const auto ly = run_forward(fwd_desc(t, {3, 3}, -1, true), bt::contiguous({3, 3}), bt::contiguous({3, 3}), x);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(ly[j], -kInf) << dtype_name(t);
    EXPECT_EQ(ly[4], -kInf);
    EXPECT_TRUE(std::isfinite(ly[3]) && std::isfinite(ly[5]));
  }
}

TEST(SoftmaxCpu, NaNOrPosInfMakesTheRowNaN) {
  const std::vector<double> x = {1.0, kNaN, 2.0, 1.0, kInf, 2.0, -kInf, kNaN, -kInf, 1.0, 2.0, 3.0};
  for (bool log : {false, true}) {
    const auto y = run_forward(fwd_desc(DType::F32, {4, 3}, -1, log), bt::contiguous({4, 3}), bt::contiguous({4, 3}), x);
    for (int j = 0; j < 9; ++j) EXPECT_TRUE(std::isnan(y[j])) << "element " << j << " log " << log;
    for (int j = 9; j < 12; ++j) EXPECT_TRUE(std::isfinite(y[j]));
  }
  // Scaling overflows to +inf (or flips -inf to +inf) the same way.
  const auto y = run_forward(fwd_desc(DType::F64, {2}, 0, false, -1.0), bt::contiguous({2}), bt::contiguous({2}), {-kInf, 0.0});
  EXPECT_TRUE(std::isnan(y[0]) && std::isnan(y[1]));
}

// ---- backward vs finite differences ---------------------------------------------------
TEST(SoftmaxCpu, BackwardMatchesFiniteDifferences) {
  bt::Rng rng(bt::fresh_seed());
  for (const Case& c : {Case{{3, 5}, -1}, Case{{4, 3, 2}, 1}, Case{{6, 2}, 0}})
    for (bool log : {false, true})
      for (double scale : {1.0, -0.7}) {
        const int64_t n = bt::numel(c.shape);
        const auto x = bt::random_values(DType::F64, n, rng, -2.0, 2.0);
        const auto w = bt::random_values(DType::F64, n, rng);  // loss = sum w * f(x)
        const bt::Layout L = bt::contiguous(c.shape);
        const auto fwd = [&](const std::vector<double>& xv) {
          return run_forward(fwd_desc(DType::F64, c.shape, c.axis, log, scale), L, L, xv);
        };
        const auto y = fwd(x);
        const auto dx = run_backward(bwd_desc(DType::F64, c.shape, c.axis, log, scale), L, y, w);
        const double h = 1e-6;
        for (int64_t i = 0; i < n; ++i) {
          auto xp = x, xm = x;
          xp[i] += h;
          xm[i] -= h;
          const auto yp = fwd(xp), ym = fwd(xm);
          double lp = 0, lm = 0;
          for (int64_t k = 0; k < n; ++k) lp += w[k] * yp[k], lm += w[k] * ym[k];
          EXPECT_NEAR(dx[i], (lp - lm) / (2 * h), 1e-7) << c.shape.to_string() << " axis " << c.axis << " log " << log
                                                       << " element " << i;
        }
      }
}

// ---- zero size, in place, SKU ----------------------------------------------------------
TEST(SoftmaxCpu, ZeroSizeIsANoOp) {
  for (const Case& c : {Case{{0, 5}, -1}, Case{{3, 0}, -1}, Case{{3, 0, 2}, 1}, Case{{0}, 0}}) {
    auto plan = SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, c.shape, c.axis)).value();
    std::vector<float> x(4, 1.f), y(4, 7.f);
    EXPECT_TRUE(plan.run(kCpu, {}, {cref(x, c.shape),
                                    cmut(y, c.shape)})
                    .is_ok());
    for (float v : y) EXPECT_EQ(v, 7.f);
    auto bplan = SoftmaxBackwardPlan::select(kCpu, bwd_desc(DType::F32, c.shape, c.axis)).value();
    EXPECT_TRUE(bplan.run(kCpu, {}, {cref(x, c.shape),
                                     cref(x, c.shape),
                                     cmut(y, c.shape)})
                    .is_ok());
    for (float v : y) EXPECT_EQ(v, 7.f);
  }
}

TEST(SoftmaxCpu, InPlaceMatchesOutOfPlace) {
  bt::Rng rng(bt::fresh_seed());
  const Dims shape{4, 9};
  const auto x = bt::random_values(DType::F32, 36, rng, -3, 3);
  const auto want = run_forward(fwd_desc(DType::F32, shape, 0, true), bt::contiguous(shape), bt::contiguous(shape), x);
  bt::HostBuffer b = bt::host_from(DType::F32, x);
  auto plan = SoftmaxPlan::select(kCpu, fwd_desc(DType::F32, shape, 0, true)).value();
  const bt::Layout L = bt::contiguous(shape);
  ASSERT_TRUE(plan.run(kCpu, {}, {bt::view(b, L), bt::view_mut(b, L)}).is_ok());
  EXPECT_EQ(bt::gather(b, L), want);
}

TEST(SoftmaxCpu, CpuSkuAndWorkspace) {
  auto plan = SoftmaxPlan::select(kCpu, fwd_desc(DType::BF16, {4, 1 << 20})).value();
  EXPECT_EQ(plan.sku().backend, Backend::CpuReference);
  EXPECT_EQ(plan.sku().op, "softmax.forward");
  EXPECT_EQ(plan.workspace_size(), 0u);
  EXPECT_EQ(plan.descriptor().axis, 1);  // resolved
  auto lplan = SoftmaxBackwardPlan::select(kCpu, bwd_desc(DType::F32, {4, 5}, -2, true)).value();
  EXPECT_EQ(lplan.sku().op, "softmax.log_backward");
  EXPECT_EQ(lplan.descriptor().axis, 0);
  EXPECT_EQ(plan.name(), std::string("SoftmaxPlan"));
}

}  // namespace
