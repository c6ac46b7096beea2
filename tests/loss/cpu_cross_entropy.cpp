// CrossEntropyPlan / CrossEntropyBackwardPlan on the CPU reference:
//   * every validation rule: its StatusCode and message (naming the plan);
//   * the forward against the naive model of support/loss_helpers.hpp for
//     every option (smoothing, weights, ignore_index on some / every row,
//     z-loss, probability targets, each reduction, i32 / i64, every dtype);
//   * the gradient (with_grad and the backward plan) against the model and
//     against central finite differences of the forward (f64);
//   * with_grad equals forward-then-backward; in-place dlogits; strided rows
//     and [rows] vectors; zero rows; masked (-inf) logits; the CPU SKU.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/loss_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::CeData;
using bt::CeLayout;

namespace {

const Stream kCpu = Stream::cpu();
constexpr double kInf = std::numeric_limits<double>::infinity();

CrossEntropyDescriptor desc(int64_t rows, int64_t classes, DType t = DType::F64) {
  CrossEntropyDescriptor d;
  d.dtype = t;
  d.rows = rows;
  d.classes = classes;
  d.loss_dtype = t == DType::F64 ? DType::F64 : DType::F32;
  return d;
}

// Tolerances: the reference computes in double and rounds once, so f64
// matches the model to ~1e-12; 16-bit outputs to their rounding.
double tol_of(DType t) { return t == DType::F64 ? 1e-11 : t == DType::F32 ? 1e-6 : t == DType::F16 ? 2e-3 : 1e-2; }

std::vector<double> unit_dloss(const CrossEntropyDescriptor& d, bt::Rng& rng) {
  std::vector<double> g(d.reduction == LossReduction::None ? static_cast<size_t>(d.rows) : 1);
  for (auto& v : g) v = bt::round_to(d.loss_dtype, bt::uniform(rng, 0.5, 1.5));
  return g;
}

// ---- validation -------------------------------------------------------------------------------
Status select_status(const CrossEntropyDescriptor& d) { return CrossEntropyPlan::select(kCpu, d).status(); }

TEST(CrossEntropyCpu, RejectsIntegerDtype) {
  auto d = desc(2, 3, DType::I32);
  BT_EXPECT_STATUS(select_status(d), StatusCode::Unsupported, "CrossEntropyPlan: dtype i32 is not supported");
}
TEST(CrossEntropyCpu, RejectsNegativeRows) {
  BT_EXPECT_STATUS(select_status(desc(-1, 3)), StatusCode::InvalidProblem, "CrossEntropyPlan: rows -1 must be >= 0");
}
TEST(CrossEntropyCpu, RejectsZeroClasses) {
  BT_EXPECT_STATUS(select_status(desc(2, 0)), StatusCode::InvalidProblem, "CrossEntropyPlan: classes 0 must be >= 1");
}
TEST(CrossEntropyCpu, RejectsOverflowingShape) {
  BT_EXPECT_STATUS(select_status(desc(int64_t{1} << 40, int64_t{1} << 40)), StatusCode::InvalidProblem, "overflows int64");
}
TEST(CrossEntropyCpu, RejectsFloatIndexDtype) {
  auto d = desc(2, 3);
  d.index_dtype = DType::F32;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "CrossEntropyPlan: index_dtype f32 must be i32 or i64");
}
TEST(CrossEntropyCpu, RejectsNonNegativeIgnoreIndexWithProbs) {
  auto d = desc(2, 3);
  d.target = CrossEntropyTarget::Probs;
  d.ignore_index = 0;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "CrossEntropyPlan: ignore_index 0 must be negative");
}
TEST(CrossEntropyCpu, RejectsLabelSmoothingOutOfRange) {
  for (double e : {-0.1, 1.5, std::numeric_limits<double>::quiet_NaN()}) {
    auto d = desc(2, 3);
    d.label_smoothing = e;
    BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "must be in [0, 1]");
  }
}
TEST(CrossEntropyCpu, RejectsNegativeOrInfiniteZLoss) {
  for (double z : {-1.0, kInf}) {
    auto d = desc(2, 3);
    d.z_loss = z;
    BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "must be finite and >= 0");
  }
}
TEST(CrossEntropyCpu, RejectsOtherLossDtype) {
  auto d = desc(2, 3, DType::BF16);
  d.loss_dtype = DType::F16;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem,
                   "CrossEntropyPlan: loss_dtype f16 must be f32 or the logits' dtype bf16");
}
TEST(CrossEntropyCpu, RejectsUnknownEnums) {
  auto d = desc(2, 3);
  d.reduction = static_cast<LossReduction>(7);
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "reduction 7 is not a LossReduction");
  d = desc(2, 3);
  d.target = static_cast<CrossEntropyTarget>(9);
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "target 9 is not a CrossEntropyTarget");
}
TEST(CrossEntropyCpu, BackwardRejectsWithGrad) {
  CrossEntropyBackwardDescriptor b;
  b.forward = desc(2, 3);
  b.forward.with_grad = true;
  BT_EXPECT_STATUS(CrossEntropyBackwardPlan::select(kCpu, b).status(), StatusCode::InvalidProblem,
                   "CrossEntropyBackwardPlan: forward.with_grad is true");
  b.forward = desc(2, 0);
  BT_EXPECT_STATUS(CrossEntropyBackwardPlan::select(kCpu, b).status(), StatusCode::InvalidProblem,
                   "CrossEntropyBackwardPlan: forward.classes 0 must be >= 1");
}

// Argument rules on one small problem.
struct ArgFixture {
  CrossEntropyDescriptor d = desc(3, 4);
  std::vector<double> logits = std::vector<double>(12, 0.5), loss = std::vector<double>(1), lse = std::vector<double>(3),
                      dloss = std::vector<double>(1, 1.0), dlogits = std::vector<double>(12), weight = std::vector<double>(4, 1.0);
  std::vector<int64_t> target = {0, 1, 2};
  CrossEntropyArgs args() {
    CrossEntropyArgs a;
    a.logits = TensorRef::contiguous(logits.data(), Device::cpu(), {3, 4}, 12);
    a.target = TensorRef::contiguous(target.data(), Device::cpu(), {3}, 3);
    a.loss = TensorMut::contiguous(loss.data(), Device::cpu(), {}, 1);
    return a;
  }
  Status run(const CrossEntropyArgs& a) {
    auto p = CrossEntropyPlan::select(kCpu, d);
    if (!p) return p.status();
    return p->run(kCpu, {}, a);
  }
};

TEST(CrossEntropyCpu, ArgsWeightGivenButUnused) {
  ArgFixture f;
  auto a = f.args();
  a.weight = TensorRef::contiguous(f.weight.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "CrossEntropyPlan: weight is given but descriptor.has_weight is false");
}
TEST(CrossEntropyCpu, ArgsWeightMissing) {
  ArgFixture f;
  f.d.has_weight = true;
  BT_EXPECT_STATUS(f.run(f.args()), StatusCode::InvalidProblem, "CrossEntropyPlan: weight tensor is missing");
}
TEST(CrossEntropyCpu, ArgsLossShapeFollowsReduction) {
  ArgFixture f;
  f.d.reduction = LossReduction::None;
  BT_EXPECT_STATUS(f.run(f.args()), StatusCode::InvalidProblem, "loss shape [] must be [3]");
}
TEST(CrossEntropyCpu, ArgsTargetDtype) {
  ArgFixture f;
  f.d.index_dtype = DType::I32;
  BT_EXPECT_STATUS(f.run(f.args()), StatusCode::InvalidProblem, "target dtype i64 must be i32");
}
TEST(CrossEntropyCpu, ArgsLseShapeChecked) {
  ArgFixture f;
  auto a = f.args();
  a.lse = TensorMut::contiguous(f.lse.data(), Device::cpu(), {2}, 3);
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "lse shape [2] must be [3]");
}
TEST(CrossEntropyCpu, ArgsLseDtypeChecked) {
  ArgFixture f;
  f.d.dtype = DType::F32;  // lse must then be f32, the fixture's buffer is f64
  f.d.loss_dtype = DType::F32;
  std::vector<float> logits(12, 0.5f), loss(1);
  auto a = f.args();
  a.logits = TensorRef::contiguous(logits.data(), Device::cpu(), {3, 4}, 12);
  a.loss = TensorMut::contiguous(loss.data(), Device::cpu(), {}, 1);
  a.lse = TensorMut::contiguous(f.lse.data(), Device::cpu(), {3}, 3);
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "lse dtype f64 must be f32");
}
TEST(CrossEntropyCpu, ArgsGradTensorsGivenWithoutWithGrad) {
  ArgFixture f;
  auto a = f.args();
  a.dloss = TensorRef::contiguous(f.dloss.data(), Device::cpu(), {}, 1);
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "dloss is given but descriptor.with_grad is false");
  a = f.args();
  a.dlogits = TensorMut::contiguous(f.dlogits.data(), Device::cpu(), {3, 4}, 12);
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "dlogits is given but descriptor.with_grad is false");
}
TEST(CrossEntropyCpu, ArgsGradTensorsMissingWithGrad) {
  ArgFixture f;
  f.d.with_grad = true;
  auto a = f.args();
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "dloss tensor is missing (descriptor.with_grad is true)");
  a.dloss = TensorRef::contiguous(f.dloss.data(), Device::cpu(), {}, 1);
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "dlogits is missing (descriptor.with_grad is true)");
}
TEST(CrossEntropyCpu, ArgsPartialOverlapRefused) {
  ArgFixture f;
  f.d.with_grad = true;
  auto a = f.args();
  a.dloss = TensorRef::contiguous(f.dloss.data(), Device::cpu(), {}, 1);
  a.dlogits = TensorMut(f.logits.data() + 4, DType::F64, Device::cpu(), {2, 4}, {4, 1}, 8);
  f.d.rows = 2;  // dlogits [2, 4] over rows 1..2 of logits [3, 4]: partial overlap
  a.logits = TensorRef::contiguous(f.logits.data(), Device::cpu(), {2, 4}, 12);
  a.target = TensorRef::contiguous(f.target.data(), Device::cpu(), {2}, 3);
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "dlogits partially overlaps logits");
}
TEST(CrossEntropyCpu, ArgsLseMayNotOverlapLogits) {
  ArgFixture f;
  auto a = f.args();
  a.lse = TensorMut::contiguous(f.logits.data(), Device::cpu(), {3}, 12);
  BT_EXPECT_STATUS(f.run(a), StatusCode::InvalidProblem, "lse overlaps logits");
}
TEST(CrossEntropyCpu, TargetOutOfRangeNamesTheRow) {
  ArgFixture f;
  f.target = {0, 4, 1};
  f.loss[0] = 12345;
  BT_EXPECT_STATUS(f.run(f.args()), StatusCode::InvalidProblem,
                   "CrossEntropyPlan: target[1] = 4 is out of range [0, 4) and is not ignore_index -100");
  EXPECT_EQ(f.loss[0], 12345) << "nothing is written on a bad target";
  f.target = {-1, 0, 0};
  BT_EXPECT_STATUS(f.run(f.args()), StatusCode::InvalidProblem, "target[0] = -1 is out of range");
}
TEST(CrossEntropyCpu, BackwardNeedsLse) {
  ArgFixture f;
  CrossEntropyBackwardDescriptor b;
  b.forward = f.d;
  auto p = CrossEntropyBackwardPlan::select(kCpu, b);
  ASSERT_TRUE(p) << p.status().to_string();
  CrossEntropyBackwardArgs a;
  a.logits = TensorRef::contiguous(f.logits.data(), Device::cpu(), {3, 4}, 12);
  a.target = TensorRef::contiguous(f.target.data(), Device::cpu(), {3}, 3);
  a.dloss = TensorRef::contiguous(f.dloss.data(), Device::cpu(), {}, 1);
  a.dlogits = TensorMut::contiguous(f.dlogits.data(), Device::cpu(), {3, 4}, 12);
  BT_EXPECT_STATUS(p->can_implement(a), StatusCode::InvalidProblem,
                   "CrossEntropyBackwardPlan: lse is missing (the forward's saved lse): expected a f64 view of shape [3]");
}

// ---- values against the naive model -----------------------------------------------------------
struct Case {
  const char* name;
  DType dtype;
  CrossEntropyTarget target;
  LossReduction red;
  double eps, z;
  bool weight;
  DType index = DType::I64;
  double ignore_frac = 0.2;
};

CrossEntropyDescriptor desc_of(const Case& c, int64_t rows, int64_t classes) {
  auto d = desc(rows, classes, c.dtype);
  d.target = c.target;
  d.reduction = c.red;
  d.label_smoothing = c.eps;
  d.z_loss = c.z;
  d.has_weight = c.weight;
  d.index_dtype = c.index;
  return d;
}

std::vector<Case> all_cases() {
  std::vector<Case> v;
  const DType dts[] = {DType::F64, DType::F32, DType::F16, DType::BF16};
  for (DType t : dts)
    for (auto red : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
      v.push_back({"plain", t, CrossEntropyTarget::Index, red, 0.0, 0.0, false});
      v.push_back({"smooth+weight+z", t, CrossEntropyTarget::Index, red, 0.1, 1e-3, true, DType::I32});
      v.push_back({"weight", t, CrossEntropyTarget::Index, red, 0.0, 0.0, true, DType::I64, 0.4});
      v.push_back({"smooth", t, CrossEntropyTarget::Index, red, 0.25, 0.0, false, DType::I64, 0.5});
      v.push_back({"zloss", t, CrossEntropyTarget::Index, red, 0.0, 0.01, false, DType::I32});
      v.push_back({"probs", t, CrossEntropyTarget::Probs, red, 0.0, 0.0, false});
      v.push_back({"probs+smooth+weight+z", t, CrossEntropyTarget::Probs, red, 0.2, 1e-3, true});
    }
  return v;
}

std::string label(const Case& c) {
  return std::string(c.name) + " " + std::string(dtype_name(c.dtype)) + " " + loss_reduction_name(c.red);
}

TEST(CrossEntropyCpu, ForwardAndGradientMatchModel) {
  bt::Rng rng(bt::fresh_seed());
  for (const Case& c : all_cases()) {
    for (auto [rows, classes] : {std::pair<int64_t, int64_t>{5, 7}, {3, 1}, {16, 33}}) {
      auto d = desc_of(c, rows, classes);
      d.with_grad = true;
      const CeData x = bt::make_ce_data(d, rng, c.ignore_frac);
      const auto g = unit_dloss(d, rng);
      const bt::CeModel m = bt::ce_model(d, x, g);
      const bt::CeResult r = bt::ce_forward(kCpu, d, x, g);
      ASSERT_TRUE(r.st.is_ok()) << label(c) << ": " << r.st.to_string();
      const double tol = tol_of(c.dtype);
      const double ltol = d.loss_dtype == DType::F64 ? 1e-11 : (c.dtype == DType::F64 || c.dtype == DType::F32 ? 1e-6 : tol);
      EXPECT_LE(bt::rel_error(r.loss, m.loss), ltol) << label(c) << " loss " << rows << "x" << classes;
      EXPECT_LE(bt::rel_error(r.lse, m.lse), c.dtype == DType::F64 ? 1e-12 : 1e-6) << label(c) << " lse";
      EXPECT_LE(bt::rel_error(r.dlogits, m.dlogits), tol) << label(c) << " dlogits " << rows << "x" << classes;
      // The backward plan from the forward's lse gives the same gradient.
      d.with_grad = false;
      const bt::CeResult b = bt::ce_backward(kCpu, d, x, r.lse, g);
      ASSERT_TRUE(b.st.is_ok()) << b.st.to_string();
      EXPECT_LE(bt::rel_error(b.dlogits, m.dlogits), tol) << label(c) << " backward";
    }
  }
}

// Exact in f64 (the saved lse is the forward's double); f32 / bf16 save an
// f32 lse, which the backward reads back: equal up to that rounding.
TEST(CrossEntropyCpu, WithGradEqualsForwardThenBackward) {
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F64, DType::F32, DType::BF16}) {
    Case c{"all", t, CrossEntropyTarget::Index, LossReduction::Mean, 0.1, 1e-3, true};
    auto d = desc_of(c, 9, 50);
    const CeData x = bt::make_ce_data(d, rng);
    const auto g = unit_dloss(d, rng);
    const bt::CeResult f = bt::ce_forward(kCpu, d, x);
    ASSERT_TRUE(f.st.is_ok());
    const bt::CeResult b = bt::ce_backward(kCpu, d, x, f.lse, g);
    d.with_grad = true;
    const bt::CeResult fused = bt::ce_forward(kCpu, d, x, g);
    ASSERT_TRUE(b.st.is_ok() && fused.st.is_ok());
    EXPECT_EQ(fused.loss, f.loss);
    EXPECT_EQ(fused.lse, f.lse);
    if (t == DType::F64) EXPECT_EQ(fused.dlogits, b.dlogits);
    else EXPECT_LE(bt::rel_error(fused.dlogits, b.dlogits), t == DType::F32 ? 1e-6 : 1e-2);
  }
}

// Central differences of the f64 forward (Sum of dloss-weighted losses).
TEST(CrossEntropyCpu, GradientMatchesFiniteDifferences) {
  bt::Rng rng(bt::fresh_seed());
  for (auto target : {CrossEntropyTarget::Index, CrossEntropyTarget::Probs})
    for (auto red : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
      Case c{"fd", DType::F64, target, red, 0.15, 0.02, true};
      auto d = desc_of(c, 4, 6);
      CeData x = bt::make_ce_data(d, rng, 0.25);
      const auto g = unit_dloss(d, rng);
      auto objective = [&](const CeData& xx) {
        const bt::CeResult r = bt::ce_forward(kCpu, d, xx);
        double s = 0;
        for (size_t i = 0; i < r.loss.size(); ++i) s += g[i] * r.loss[i];
        return s;
      };
      auto dg = d;
      dg.with_grad = true;
      const bt::CeResult r = bt::ce_forward(kCpu, dg, x, g);
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      std::vector<double> fd(x.logits.size());
      const double h = 1e-6;
      for (size_t k = 0; k < x.logits.size(); ++k) {
        CeData p = x, m = x;
        p.logits[k] += h;
        m.logits[k] -= h;
        fd[k] = (objective(p) - objective(m)) / (2 * h);
      }
      EXPECT_LE(bt::rel_error(r.dlogits, fd), 1e-7) << loss_reduction_name(red) << (target == CrossEntropyTarget::Probs ? " probs" : " index");
    }
}

TEST(CrossEntropyCpu, IgnoreIndexOnEveryRow) {
  bt::Rng rng(bt::fresh_seed());
  for (auto red : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
    Case c{"ignored", DType::F32, CrossEntropyTarget::Index, red, 0.1, 0.01, true};
    auto d = desc_of(c, 6, 9);
    d.with_grad = true;
    d.ignore_index = 3;  // an in-range id: rows with target 3 are ignored
    CeData x = bt::make_ce_data(d, rng, 1.0);
    const auto g = unit_dloss(d, rng);
    const bt::CeResult r = bt::ce_forward(kCpu, d, x, g);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    for (double v : r.dlogits) EXPECT_EQ(v, 0.0);
    if (red == LossReduction::Mean) {
      EXPECT_TRUE(std::isnan(r.loss[0])) << "0 / 0, as PyTorch";
    } else {
      for (double v : r.loss) EXPECT_EQ(v, 0.0);
    }
    const bt::CeModel m = bt::ce_model(d, x, g);
    EXPECT_LE(bt::rel_error(r.lse, m.lse), 1e-6) << "lse is written for ignored rows too";
  }
}

TEST(CrossEntropyCpu, MaskedLogits) {
  bt::Rng rng(bt::fresh_seed());
  for (auto target : {CrossEntropyTarget::Index, CrossEntropyTarget::Probs}) {
    Case c{"masked", DType::F64, target, LossReduction::None, 0.0, 0.0, false};
    auto d = desc_of(c, 4, 8);
    d.with_grad = true;
    CeData x = bt::make_ce_data(d, rng, 0.0);
    for (int64_t i = 0; i < 3; ++i) {  // rows 0..2: some entries -inf (never the target); row 3: all -inf
      for (int64_t cc = 0; cc < 8; cc += 3) {
        if (target == CrossEntropyTarget::Index && cc == x.target[i]) continue;
        x.logits[i * 8 + cc] = -kInf;
        if (target == CrossEntropyTarget::Probs) x.probs[i * 8 + cc] = 0.0;
      }
    }
    for (int64_t cc = 0; cc < 8; ++cc) x.logits[3 * 8 + cc] = -kInf;
    const auto g = unit_dloss(d, rng);
    const bt::CeModel m = bt::ce_model(d, x, g);
    const bt::CeResult r = bt::ce_forward(kCpu, d, x, g);
    ASSERT_TRUE(r.st.is_ok());
    EXPECT_LE(bt::rel_error(r.loss, m.loss), 1e-12);
    EXPECT_LE(bt::rel_error(r.dlogits, m.dlogits), 1e-12);
    for (int i = 0; i < 3; ++i) EXPECT_TRUE(std::isfinite(r.loss[i])) << i;
    EXPECT_TRUE(std::isnan(r.loss[3])) << "an all -inf row gives NaN, as PyTorch";
    EXPECT_EQ(r.lse[3], -kInf);
  }
}

TEST(CrossEntropyCpu, InPlaceAndStridedViews) {
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::BF16, DType::F64}) {
    for (auto target : {CrossEntropyTarget::Index, CrossEntropyTarget::Probs}) {
      Case c{"strided", t, target, LossReduction::None, 0.1, 1e-3, true};
      auto d = desc_of(c, 7, 13);
      d.with_grad = true;
      const CeData x = bt::make_ce_data(d, rng);
      const auto g = unit_dloss(d, rng);
      const bt::CeModel m = bt::ce_model(d, x, g);
      for (const CeLayout& L : {CeLayout{20, 3, false, true}, CeLayout{0, 1, true, true}, CeLayout{16, 2, true, false}}) {
        const bt::CeResult r = bt::ce_forward(kCpu, d, x, g, L);
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
        EXPECT_LE(bt::rel_error(r.loss, m.loss), 1e-6);
        EXPECT_LE(bt::rel_error(r.dlogits, m.dlogits), tol_of(t)) << "rs " << L.logits_rs << " in place " << L.in_place;
        if (L.want_lse) EXPECT_LE(bt::rel_error(r.lse, m.lse), 1e-6);
        auto db = d;
        db.with_grad = false;
        const bt::CeResult b = bt::ce_backward(kCpu, db, x, m.lse, g, L);
        ASSERT_TRUE(b.st.is_ok()) << b.st.to_string();
        EXPECT_LE(bt::rel_error(b.dlogits, m.dlogits), tol_of(t)) << "backward rs " << L.logits_rs << " in place " << L.in_place;
      }
    }
  }
}

TEST(CrossEntropyCpu, LossInLogitsDtype) {
  bt::Rng rng(bt::fresh_seed());
  Case c{"bf16 loss", DType::BF16, CrossEntropyTarget::Index, LossReduction::None, 0.0, 0.0, false};
  auto d = desc_of(c, 8, 10);
  d.loss_dtype = DType::BF16;
  d.with_grad = true;
  const CeData x = bt::make_ce_data(d, rng);
  const auto g = unit_dloss(d, rng);
  const bt::CeResult r = bt::ce_forward(kCpu, d, x, g);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  const bt::CeModel m = bt::ce_model(d, x, g);
  EXPECT_LE(bt::rel_error(r.loss, m.loss), 1e-2);
  for (double v : r.loss) EXPECT_EQ(v, bt::round_to(DType::BF16, v));
}

TEST(CrossEntropyCpu, ZeroRows) {
  bt::Rng rng(bt::fresh_seed());
  for (auto red : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
    for (auto target : {CrossEntropyTarget::Index, CrossEntropyTarget::Probs}) {
      Case c{"zero", DType::F32, target, red, 0.0, 0.0, false};
      auto d = desc_of(c, 0, 5);
      d.with_grad = true;
      const CeData x = bt::make_ce_data(d, rng);
      const bt::CeResult r = bt::ce_forward(kCpu, d, x, unit_dloss(d, rng));
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      if (red == LossReduction::None) EXPECT_TRUE(r.loss.empty());
      else if (red == LossReduction::Sum) EXPECT_EQ(r.loss, std::vector<double>{0.0});
      else EXPECT_TRUE(std::isnan(r.loss[0])) << "Mean over no rows: NaN, as PyTorch";
      auto p = CrossEntropyPlan::select(kCpu, d);
      ASSERT_TRUE(p);
      EXPECT_EQ(p->sku().backend, Backend::CpuReference);
      EXPECT_EQ(p->sku().variant, red == LossReduction::None ? "empty" : "reference")
          << "None over zero rows writes nothing; Mean / Sum write the rank-0 loss";
    }
  }
}

TEST(CrossEntropyCpu, SkuNamesTheOp) {
  auto d = desc(4, 5);
  auto p = CrossEntropyPlan::select(kCpu, d);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->sku().op, "cross_entropy.forward");
  EXPECT_EQ(p->workspace_size(), 0u);
  EXPECT_EQ(p->loss_shape(), Dims{});
  EXPECT_EQ(p->lse_dtype(), DType::F64);
  d.with_grad = true;
  EXPECT_EQ(CrossEntropyPlan::select(kCpu, d)->sku().op, "cross_entropy.forward_backward");
  CrossEntropyBackwardDescriptor b;
  b.forward = desc(4, 5, DType::BF16);
  b.forward.reduction = LossReduction::None;
  auto pb = CrossEntropyBackwardPlan::select(kCpu, b);
  ASSERT_TRUE(pb);
  EXPECT_EQ(pb->sku().op, "cross_entropy.backward");
  EXPECT_EQ(pb->loss_shape(), Dims{4});
  EXPECT_EQ(pb->lse_dtype(), DType::F32);
  EXPECT_STREQ(loss_reduction_name(LossReduction::Mean), "mean");
}

}  // namespace
