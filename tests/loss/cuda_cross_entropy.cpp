// CrossEntropyPlan / CrossEntropyBackwardPlan on the GPU against the CPU
// reference (fresh random data, NaN-poisoned outputs): every dtype, class
// counts 1 .. 262,144 (block and split paths, staged and re-read rows),
// smoothing + weights + z-loss, probability targets, every reduction,
// strided rows and [rows] vectors, in place, masked (-inf) logits, ignore
// index on every row, out-of-range targets (NaN rows), zero rows, and
// bit-identical reruns. Skips without a GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/loss_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::CeData;
using bt::CeLayout;

namespace {

const Stream kCpu = Stream::cpu();
constexpr double kInf = std::numeric_limits<double>::infinity();

CrossEntropyDescriptor desc(DType t, int64_t rows, int64_t classes, LossReduction red = LossReduction::Mean) {
  CrossEntropyDescriptor d;
  d.dtype = t;
  d.rows = rows;
  d.classes = classes;
  d.reduction = red;
  d.loss_dtype = t == DType::F64 ? DType::F64 : DType::F32;
  return d;
}

std::vector<double> dloss_of(const CrossEntropyDescriptor& d, bt::Rng& rng) {
  std::vector<double> g(d.reduction == LossReduction::None ? static_cast<size_t>(d.rows) : 1);
  for (auto& v : g) v = bt::round_to(d.loss_dtype, bt::uniform(rng, 0.5, 1.5));
  return g;
}

// GPU vs CPU reference tolerances (relative L2): the loss and lse are
// accumulated in f32 (f64) on the GPU; dlogits are rounded to the dtype.
double grad_tol(DType t) { return t == DType::F64 ? 1e-10 : t == DType::F32 ? 2e-5 : t == DType::F16 ? 2e-3 : 1e-2; }
// The loss: f32 / f64 accumulation, then (loss_dtype 16-bit) one rounding.
double loss_tol(const CrossEntropyDescriptor& d) {
  if (d.loss_dtype == DType::F16 || d.loss_dtype == DType::BF16) return grad_tol(d.loss_dtype);
  return d.dtype == DType::F64 ? 1e-10 : 2e-5;
}

// dlogits error: ||got - ref|| relative to the larger of ||ref|| and the rows'
// term scale sqrt(sum_i g_i^2) (g_i: row i's gradient factor, dloss / rows
// for Mean). A row's gradient is a sum of terms of size ~g_i (p_j, the -1 at
// the target, the smoothing terms) that cancel when C is small (C = 1: p = 1,
// leaving only the z-loss term), so f32 rounding of those terms is measured
// against their size, not against the small remainder.
double grad_error(const CrossEntropyDescriptor& d, const std::vector<double>& got, const std::vector<double>& ref,
                  const std::vector<double>& g) {
  double num = 0, den = 0, terms = 0;
  for (size_t i = 0; i < ref.size() && i < got.size(); ++i) {
    num += (got[i] - ref[i]) * (got[i] - ref[i]);
    den += ref[i] * ref[i];
  }
  if (got.size() != ref.size()) return bt::rel_error(got, ref);
  for (int64_t r = 0; r < d.rows; ++r) {
    const double gi = d.reduction == LossReduction::None ? g[static_cast<size_t>(r)]
                      : d.reduction == LossReduction::Mean ? g[0] / static_cast<double>(d.rows)
                                                           : g[0];
    terms += gi * gi;
  }
  for (double v : got)
    if (std::isnan(v)) return bt::rel_error(got, ref);  // NaN rows: rel_error's own rule (both NaN)
  const double scale = std::max(std::sqrt(den), std::sqrt(terms));
  return scale == 0 ? std::sqrt(num) : std::sqrt(num) / scale;
}

// Runs d (forward with_grad as given, then the backward from the CPU lse) on
// both streams and compares every output.
void compare(const CrossEntropyDescriptor& d, const CeData& x, const std::vector<double>& g, const CeLayout& L,
             const std::string& what) {
  const bt::CeResult ref = bt::ce_forward(kCpu, d, x, g);
  ASSERT_TRUE(ref.st.is_ok()) << what << ": " << ref.st.to_string();
  const bt::CeResult gpu = bt::ce_forward(bt::kGpu, d, x, g, L, bt::bespoke());
  ASSERT_TRUE(gpu.st.is_ok()) << what << ": " << gpu.st.to_string();
  EXPECT_LE(bt::rel_error(gpu.loss, ref.loss), loss_tol(d)) << what << " loss; variant " << gpu.variant;
  if (L.want_lse) EXPECT_LE(bt::rel_error(gpu.lse, ref.lse), d.dtype == DType::F64 ? 1e-10 : 2e-5) << what << " lse";
  if (d.with_grad) EXPECT_LE(grad_error(d, gpu.dlogits, ref.dlogits, g), grad_tol(d.dtype)) << what << " dlogits; variant " << gpu.variant;
  auto db = d;
  db.with_grad = false;
  const bt::CeResult rb = bt::ce_backward(kCpu, db, x, ref.lse, g);
  const bt::CeResult gb = bt::ce_backward(bt::kGpu, db, x, ref.lse, g, L, bt::bespoke());
  ASSERT_TRUE(rb.st.is_ok() && gb.st.is_ok()) << what << ": " << gb.st.to_string();
  EXPECT_LE(grad_error(d, gb.dlogits, rb.dlogits, g), grad_tol(d.dtype)) << what << " backward; variant " << gb.variant;
}

std::string name_of(const CrossEntropyDescriptor& d, const char* extra = "") {
  return std::string(dtype_name(d.dtype)) + " " + std::to_string(d.rows) + "x" + std::to_string(d.classes) + " " +
         loss_reduction_name(d.reduction) + (d.target == CrossEntropyTarget::Probs ? " probs" : " index") + extra;
}

TEST(CrossEntropyCuda, MatchesReferenceAcrossDtypesAndClassCounts) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::F64})
    for (int64_t classes : {int64_t{1}, int64_t{7}, int64_t{1000}, int64_t{4096}, int64_t{50304}, int64_t{262144}}) {
      const int64_t rows = classes >= 50304 ? 3 : classes >= 4096 ? 20 : 37;
      auto d = desc(t, rows, classes);
      d.with_grad = true;
      d.label_smoothing = 0.1;
      d.has_weight = true;
      d.z_loss = 1e-4;
      d.index_dtype = classes % 2 ? DType::I32 : DType::I64;
      const CeData x = bt::make_ce_data(d, rng);
      compare(d, x, dloss_of(d, rng), {}, name_of(d));
    }
}

// Every reduction, plain and fully optioned, index and probability targets,
// forward only and with the gradient.
TEST(CrossEntropyCuda, EveryOption) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::BF16})
    for (auto red : {LossReduction::None, LossReduction::Mean, LossReduction::Sum})
      for (auto target : {CrossEntropyTarget::Index, CrossEntropyTarget::Probs})
        for (int opt = 0; opt < 2; ++opt)
          for (bool grad : {false, true}) {
            auto d = desc(t, 45, 777, red);
            d.target = target;
            d.with_grad = grad;
            if (opt) {
              d.label_smoothing = 0.2;
              d.has_weight = true;
              d.z_loss = 1e-3;
              d.loss_dtype = t;
            }
            const CeData x = bt::make_ce_data(d, rng);
            compare(d, x, dloss_of(d, rng), {}, name_of(d, opt ? " +options" : ""));
          }
}

// Long rows: rows at least the SM count take the block path without
// staging (bf16 128,256 = 250 KiB), few rows the split path; Fused stages 50,304.
TEST(CrossEntropyCuda, LongRowPaths) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  struct P {
    int64_t rows, classes;
    const char* variant;
  };
  for (const P& p : {P{140, 128256, "block.vec16"}, P{2, 262144, "split.vec16"}, P{8, 50304, "block.vec16"}, P{3, 100001, "split"}}) {
    auto d = desc(DType::BF16, p.rows, p.classes);
    d.with_grad = true;
    d.label_smoothing = 0.05;
    const CeData x = bt::make_ce_data(d, rng);
    const auto g = dloss_of(d, rng);
    compare(d, x, g, {}, name_of(d));
    const bt::CeResult r = bt::ce_forward(bt::kGpu, d, x, g, {}, bt::bespoke());
    if (p.rows < 132) {  // the split choice depends on the SM count (H100: 132, H200: 132)
      EXPECT_EQ(r.variant, p.variant) << name_of(d);
    } else {
      EXPECT_EQ(r.variant, "block.vec16") << name_of(d);
    }
  }
}

TEST(CrossEntropyCuda, StridedRowsAndInPlace) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::BF16, DType::F64})
    for (int64_t classes : {int64_t{13}, int64_t{1024}, int64_t{70000}}) {
      auto d = desc(t, classes > 10000 ? 3 : 19, classes, LossReduction::None);
      d.with_grad = true;
      d.has_weight = true;
      d.label_smoothing = 0.1;
      const CeData x = bt::make_ce_data(d, rng);
      const auto g = dloss_of(d, rng);
      for (const CeLayout& L : {CeLayout{classes + 8, 3, false, true}, CeLayout{classes + 3, 1, false, true},
                                CeLayout{0, 1, true, true}, CeLayout{classes + 16, 2, true, false}})
        compare(d, x, g, L, name_of(d, (" rs " + std::to_string(L.logits_rs) + (L.in_place ? " in place" : "")).c_str()));
    }
}

TEST(CrossEntropyCuda, NonUnitClassStrideIsUnsupported) {
  BT_SKIP_WITHOUT_GPU();
  auto d = desc(DType::F32, 4, 6);
  auto plan = CrossEntropyPlan::select(bt::kGpu, d, bt::bespoke());
  ASSERT_TRUE(plan) << plan.status().to_string();
  Buffer logits(Device::cuda(0), 4 * 6 * 2 * 4), target(Device::cuda(0), 4 * 8), loss(Device::cuda(0), 16);
  CrossEntropyArgs a;
  a.logits = logits.view(DType::F32, {4, 6}, {1, 4});  // transposed: class stride 4
  a.target = target.view(DType::I64, {4});
  a.loss = loss.view_mut(DType::F32, {}, {});
  const Status st = plan->can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::Unsupported) << st.to_string();
  EXPECT_NE(st.message().find("CrossEntropyPlan: logits strides [1,4] for shape [4,6]"), std::string::npos) << st.to_string();
}

TEST(CrossEntropyCuda, MaskedLogits) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::BF16})
    for (int64_t classes : {int64_t{40}, int64_t{5000}, int64_t{70000}}) {
      auto d = desc(t, 4, classes, LossReduction::None);
      d.with_grad = true;
      CeData x = bt::make_ce_data(d, rng, 0.0);
      for (int64_t i = 0; i < 3; ++i)
        for (int64_t c = 0; c < classes; c += 3)
          if (c != x.target[i]) x.logits[i * classes + c] = -kInf;
      for (int64_t c = 0; c < classes; ++c) x.logits[3 * classes + c] = -kInf;  // row 3: all masked -> NaN
      compare(d, x, dloss_of(d, rng), {}, name_of(d, " masked"));
    }
}

TEST(CrossEntropyCuda, IgnoreIndexOnEveryRow) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (auto red : {LossReduction::None, LossReduction::Mean, LossReduction::Sum})
    for (int64_t classes : {int64_t{100}, int64_t{70000}}) {
      auto d = desc(DType::BF16, 3, classes, red);
      d.with_grad = true;
      d.has_weight = true;
      d.label_smoothing = 0.1;
      const CeData x = bt::make_ce_data(d, rng, 1.0);
      const auto g = dloss_of(d, rng);
      const bt::CeResult r = bt::ce_forward(bt::kGpu, d, x, g, {}, bt::bespoke());
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      for (double v : r.dlogits) ASSERT_EQ(v, 0.0);
      if (red == LossReduction::Mean) EXPECT_TRUE(std::isnan(r.loss[0]));
      else for (double v : r.loss) EXPECT_EQ(v, 0.0);
      compare(d, x, g, {}, name_of(d, " all ignored"));
    }
}

// Out-of-range ids on CUDA: that row's loss and gradient NaN, the other rows
// as the reference computes them with the row ignored (divisor included).
TEST(CrossEntropyCuda, OutOfRangeTargetGivesNaNRow) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (int64_t classes : {int64_t{50}, int64_t{70000}}) {
    auto d = desc(DType::F32, 4, classes);
    d.with_grad = true;
    d.reduction = LossReduction::None;
    CeData x = bt::make_ce_data(d, rng, 0.0);
    CeData bad = x;
    bad.target[1] = classes + 5;
    bad.target[2] = -3;
    const auto g = dloss_of(d, rng);
    const bt::CeResult r = bt::ce_forward(bt::kGpu, d, bad, g, {}, bt::bespoke());
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    for (int64_t i : {1, 2}) {
      EXPECT_TRUE(std::isnan(r.loss[i])) << i;
      for (int64_t c = 0; c < classes; ++c) ASSERT_TRUE(std::isnan(r.dlogits[i * classes + c])) << i << "," << c;
    }
    for (int64_t i : {0, 3}) EXPECT_TRUE(std::isfinite(r.loss[i])) << i;
    // Mean: the total is NaN, the good rows' gradients stay finite (the bad rows count 0 in the divisor).
    d.reduction = LossReduction::Mean;
    const bt::CeResult m = bt::ce_forward(bt::kGpu, d, bad, {1.0}, {}, bt::bespoke());
    ASSERT_TRUE(m.st.is_ok());
    EXPECT_TRUE(std::isnan(m.loss[0]));
    CeData ignored = x;
    ignored.target[1] = ignored.target[2] = d.ignore_index;
    const bt::CeResult ref = bt::ce_forward(kCpu, d, ignored, {1.0});
    ASSERT_TRUE(ref.st.is_ok());
    for (int64_t i : {0, 3})
      for (int64_t c = 0; c < classes; ++c)
        ASSERT_NEAR(m.dlogits[i * classes + c], ref.dlogits[i * classes + c], 1e-6) << i << "," << c;
  }
}

TEST(CrossEntropyCuda, ZeroRows) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (auto red : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
    auto d = desc(DType::BF16, 0, 300, red);
    d.with_grad = true;
    const CeData x = bt::make_ce_data(d, rng);
    const bt::CeResult r = bt::ce_forward(bt::kGpu, d, x, dloss_of(d, rng), {}, bt::bespoke());
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    if (red == LossReduction::None) EXPECT_TRUE(r.loss.empty());
    else if (red == LossReduction::Sum) EXPECT_EQ(r.loss, std::vector<double>{0.0});
    else EXPECT_TRUE(std::isnan(r.loss[0]));
  }
}

bool same_bits(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!bt::same_value(a[i], b[i])) return false;
  return true;
}

TEST(CrossEntropyCuda, RunTwiceBitIdentical) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (auto [rows, classes] : {std::pair<int64_t, int64_t>{300, 4096}, {2, 262144}, {150, 50304}})
    for (auto red : {LossReduction::Mean, LossReduction::Sum}) {
      auto d = desc(DType::BF16, rows, classes, red);
      d.with_grad = true;
      d.label_smoothing = 0.1;
      d.has_weight = true;
      const CeData x = bt::make_ce_data(d, rng);
      const auto g = dloss_of(d, rng);
      const bt::CeResult a = bt::ce_forward(bt::kGpu, d, x, g, {}, bt::bespoke());
      const bt::CeResult b = bt::ce_forward(bt::kGpu, d, x, g, {}, bt::bespoke());
      ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
      EXPECT_TRUE(same_bits(a.loss, b.loss)) << name_of(d);
      EXPECT_TRUE(same_bits(a.lse, b.lse)) << name_of(d);
      EXPECT_TRUE(same_bits(a.dlogits, b.dlogits)) << name_of(d);
      auto db = d;
      db.with_grad = false;
      const bt::CeResult c = bt::ce_backward(bt::kGpu, db, x, a.lse, g, {}, bt::bespoke());
      const bt::CeResult e = bt::ce_backward(bt::kGpu, db, x, a.lse, g, {}, bt::bespoke());
      ASSERT_TRUE(c.st.is_ok() && e.st.is_ok());
      EXPECT_TRUE(same_bits(c.dlogits, e.dlogits)) << name_of(d);
    }
}

}  // namespace
