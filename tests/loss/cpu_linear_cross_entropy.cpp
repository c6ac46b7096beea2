// FusedLinearCrossEntropyPlan on the CPU reference, and its chunk rule:
//   * every validation rule: its StatusCode and message (naming the plan);
//   * the chunk rule (path.cpp linear_ce_chunks) at the benchmark shape and
//     its edge cases;
//   * the reference against the naive double model (support/linear_ce_helpers.hpp);
//   * dH, dW, db against central finite differences of the plan's own loss (f64);
//   * the fused plan against the unfused CPU composition (LinearPlan ->
//     CrossEntropyPlan with_grad in place -> LinearBackwardPlan): bit-identical;
//   * zero sizes, strided H / dH, out-of-range targets, strict workspace mode.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "ops/loss/path.hpp"
#include "support/linear_ce_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::lce_desc;
using bt::LceData;
using bt::LceResult;

namespace {

const Stream kCpu = Stream::cpu();
constexpr const char* kPlan = "FusedLinearCrossEntropyPlan";

Status select_status(const FusedLinearCrossEntropyDescriptor& d) { return FusedLinearCrossEntropyPlan::select(kCpu, d).status(); }

// Element-wise |got - ref| <= tol * max(1, |ref|); a message naming the first miss.
std::string close(const char* what, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
  if (got.size() != ref.size()) return std::string(what) + ": size " + std::to_string(got.size()) + " vs " + std::to_string(ref.size());
  for (size_t i = 0; i < got.size(); ++i) {
    const bool both_nan = std::isnan(got[i]) && std::isnan(ref[i]);
    if (!both_nan && !(std::fabs(got[i] - ref[i]) <= tol * std::max(1.0, std::fabs(ref[i]))))
      return std::string(what) + "[" + std::to_string(i) + "] = " + std::to_string(got[i]) + ", expected " + std::to_string(ref[i]) + "; ";
  }
  return "";
}

// Bit equality (NaN equals NaN).
std::string same(const char* what, const std::vector<double>& got, const std::vector<double>& ref) { return close(what, got, ref, 0.0); }

// ---- validation -------------------------------------------------------------------------------
TEST(LinearCrossEntropyCpu, RejectsIntegerDtype) {
  BT_EXPECT_STATUS(select_status(lce_desc(DType::I32, 2, 3, 4)), StatusCode::Unsupported,
                   "FusedLinearCrossEntropyPlan: dtype i32 is not supported");
}
TEST(LinearCrossEntropyCpu, RejectsNegativeRows) {
  BT_EXPECT_STATUS(select_status(lce_desc(DType::F32, -1, 3, 4)), StatusCode::InvalidProblem, "rows -1 must be >= 0");
}
TEST(LinearCrossEntropyCpu, RejectsNegativeInFeatures) {
  BT_EXPECT_STATUS(select_status(lce_desc(DType::F32, 2, -3, 4)), StatusCode::InvalidProblem, "in_features -3 must be >= 0");
}
TEST(LinearCrossEntropyCpu, RejectsZeroClasses) {
  BT_EXPECT_STATUS(select_status(lce_desc(DType::F32, 2, 3, 0)), StatusCode::InvalidProblem, "classes 0 must be >= 1");
}
TEST(LinearCrossEntropyCpu, RejectsProbabilityTargets) {
  auto d = lce_desc(DType::F32, 2, 3, 4);
  d.target = CrossEntropyTarget::Probs;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "probability targets are not supported");
}
TEST(LinearCrossEntropyCpu, RejectsFloatIndexDtype) {
  auto d = lce_desc(DType::F32, 2, 3, 4);
  d.index_dtype = DType::F32;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "index_dtype f32 must be i32 or i64");
}
TEST(LinearCrossEntropyCpu, RejectsSmoothingAboveOne) {
  auto d = lce_desc(DType::F32, 2, 3, 4);
  d.label_smoothing = 1.5;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "label_smoothing");
}
TEST(LinearCrossEntropyCpu, RejectsNegativeZLoss) {
  auto d = lce_desc(DType::F32, 2, 3, 4);
  d.z_loss = -1;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "z_loss");
}
TEST(LinearCrossEntropyCpu, RejectsOtherLossDtype) {
  auto d = lce_desc(DType::BF16, 2, 3, 4);
  d.loss_dtype = DType::F16;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "loss_dtype f16 must be f32 or the dtype bf16");
}
TEST(LinearCrossEntropyCpu, RejectsBiasGradientWithoutBias) {
  auto d = lce_desc(DType::F32, 2, 3, 4, /*bias=*/false);
  d.need_db = true;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "need_db is set but has_bias is false");
}
TEST(LinearCrossEntropyCpu, RejectsNegativeChunkRows) {
  auto d = lce_desc(DType::F32, 2, 3, 4);
  d.chunk_rows = -2;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "chunk_rows -2 must be >= 0");
}

// The argument rules, each on an otherwise valid argument list.
struct ArgFixture {
  FusedLinearCrossEntropyDescriptor d = lce_desc(DType::F32, 3, 2, 4);
  bt::HostBuffer h{DType::F32, 6}, w{DType::F32, 8}, b{DType::F32, 4}, t{DType::I64, 3}, dl{DType::F32, 1},
      loss{DType::F32, 1}, dh{DType::F32, 6}, dw{DType::F32, 8}, db{DType::F32, 4};
  FusedLinearCrossEntropyArgs all() {
    t.fill_bytes(0);
    FusedLinearCrossEntropyArgs a;
    a.hidden = bt::view(h, bt::contiguous({3, 2}));
    a.weight = bt::view(w, bt::contiguous({4, 2}));
    a.bias = bt::view(b, bt::contiguous({4}));
    a.target = bt::view(t, bt::contiguous({3}));
    a.dloss = bt::view(dl, bt::contiguous({}));
    a.loss = bt::view_mut(loss, bt::contiguous({}));
    a.dhidden = bt::view_mut(dh, bt::contiguous({3, 2}));
    a.dweight = bt::view_mut(dw, bt::contiguous({4, 2}));
    a.dbias = bt::view_mut(db, bt::contiguous({4}));
    return a;
  }
};

TEST(LinearCrossEntropyCpu, ArgumentRules) {
  ArgFixture f;
  auto plan = FusedLinearCrossEntropyPlan::select(kCpu, f.d);
  ASSERT_TRUE(plan) << plan.status().to_string();
  EXPECT_TRUE(plan->can_implement(f.all()).is_ok()) << plan->can_implement(f.all()).to_string();
  auto a = f.all();
  a.dloss = {};
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "dloss is missing");
  a = f.all();
  a.weight = bt::view(f.w, bt::contiguous({2, 4}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "weight");
  a = f.all();
  a.target = bt::view(f.h, bt::contiguous({3}));
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "target");
  a = f.all();
  a.dhidden = bt::view_mut(f.h, bt::contiguous({3, 2}));  // dH over H itself
  BT_EXPECT_STATUS(plan->can_implement(a), StatusCode::InvalidProblem, "overlap");
  // Without any gradient, dloss and the gradient outputs must not be given.
  auto fwd = f.d;
  fwd.need_dh = fwd.need_dw = fwd.need_db = false;
  auto fplan = FusedLinearCrossEntropyPlan::select(kCpu, fwd);
  ASSERT_TRUE(fplan);
  EXPECT_EQ(fplan->sku().op, "linear_cross_entropy.forward");
  EXPECT_EQ(plan->sku().op, "linear_cross_entropy.forward_backward");
  a = f.all();
  a.dhidden = {}, a.dweight = {}, a.dbias = {};
  BT_EXPECT_STATUS(fplan->can_implement(a), StatusCode::InvalidProblem, "dloss is given but no gradient is asked for");
  a.dloss = {};
  EXPECT_TRUE(fplan->can_implement(a).is_ok());
  a.dweight = bt::view_mut(f.dw, bt::contiguous({4, 2}));
  BT_EXPECT_STATUS(fplan->can_implement(a), StatusCode::InvalidProblem, "dweight is given but need_dw is false");
}

TEST(LinearCrossEntropyCpu, OutOfRangeTargetNamesTheRow) {
  auto d = lce_desc(DType::F64, 4, 3, 5);
  bt::Rng rng(bt::fresh_seed("lce range"));
  LceData x = bt::make_lce_data(d, rng, 0.0);
  x.target[2] = 5;
  auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d);
  ASSERT_TRUE(plan);
  BT_EXPECT_STATUS(bt::lce_run(kCpu, *plan, x).st, StatusCode::InvalidProblem, "target[2] = 5 is out of range [0, 5)");
}

// The reference's host scratch is bounded: a weight broadcast (stride 0) over
// 2^28 classes is 4 bytes of memory but would need 2 GiB of doubles.
TEST(LinearCrossEntropyCpu, ReferenceScratchIsBounded) {
  auto d = lce_desc(DType::F32, 1, 1, int64_t{1} << 28, false);
  d.need_dh = d.need_dw = d.need_db = false;
  auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d);
  ASSERT_TRUE(plan) << plan.status().to_string();
  float h = 1.f, w = 1.f, loss = 0.f;
  int64_t target = 0;
  FusedLinearCrossEntropyArgs a;
  a.hidden = TensorRef(&h, DType::F32, Device::cpu(), Dims{1, 1}, Dims{1, 1}, 1);
  a.weight = TensorRef(&w, DType::F32, Device::cpu(), Dims{int64_t{1} << 28, 1}, Dims{0, 0}, 1);
  a.target = TensorRef(&target, DType::I64, Device::cpu(), Dims{1}, Dims{1}, 1);
  a.loss = TensorMut(&loss, DType::F32, Device::cpu(), Dims{}, Dims{}, 1);
  ASSERT_TRUE(plan->can_implement(a).is_ok()) << plan->can_implement(a).to_string();
  BT_EXPECT_STATUS(plan->run(kCpu, Workspace{}, a), StatusCode::Unsupported, "MiB of scratch");
}

// ---- chunk rule -----------------------------------------------------------------------------
TEST(LinearCrossEntropyChunks, BenchmarkShapeAtAQuarterOfTheLogits) {
  // (8192, 4096, 128256) bf16 with workspace_limit = N V 2 / 4 and about 33.6 MB
  // of fixed scratch (cuBLASLt's 32 MiB, the CE row losses, pads): n_max 1916,
  // granule 512: 1536 x 6 (the last 512 rows), 0.203 of the logits.
  const int64_t N = 8192, V = 128256;
  const size_t limit = static_cast<size_t>(N * V * 2 / 4);
  const size_t fixed = (size_t{32} << 20) + 16 + N * 8 + 3 * 256 + N * 2;
  auto c = loss::detail::linear_ce_chunks(kPlan, N, V, 2, limit, 0, fixed);
  ASSERT_TRUE(c) << c.status().to_string();
  EXPECT_EQ(c->rows, 1536);
  EXPECT_EQ(c->chunks, 6);
  EXPECT_EQ(c->granule, 512);
  const double ratio = static_cast<double>(fixed + static_cast<size_t>(c->rows * V * 2)) / static_cast<double>(N * V * 2);
  EXPECT_LT(ratio, 0.25);
  EXPECT_GT(ratio, 0.2);
}

TEST(LinearCrossEntropyChunks, EdgeCases) {
  using loss::detail::linear_ce_chunks;
  // No limit: the default chunk, or all rows when fewer.
  EXPECT_EQ(linear_ce_chunks(kPlan, 5000, 100, 4, 0, 0, 0)->rows, loss::detail::kDefaultChunkRows);
  EXPECT_EQ(linear_ce_chunks(kPlan, 5000, 100, 4, 0, 0, 0)->chunks, 3);
  EXPECT_EQ(linear_ce_chunks(kPlan, 300, 100, 4, 0, 0, 0)->rows, 300);
  // N = 0: no chunk.
  auto z = linear_ce_chunks(kPlan, 0, 100, 4, 1 << 20, 0, 1000);
  ASSERT_TRUE(z);
  EXPECT_EQ(z->rows, 0);
  EXPECT_EQ(z->chunks, 0);
  // Everything fits: one chunk.
  auto all = linear_ce_chunks(kPlan, 50, 100, 4, 1000 + 50 * 400, 0, 1000);
  EXPECT_EQ(all->rows, 50);
  EXPECT_EQ(all->chunks, 1);
  // 128..511 rows fit: granule 128 (n_max 300 of 1000 rows -> 4 chunks of 256).
  auto mid = linear_ce_chunks(kPlan, 1000, 100, 4, 1000 + 300 * 400 + 399, 0, 1000);
  EXPECT_EQ(mid->granule, 128);
  EXPECT_EQ(mid->rows, 256);
  EXPECT_EQ(mid->chunks, 4);
  // Fewer than 128 rows fit: granule 1, balanced chunks (n_max 30 -> 4 chunks of 25).
  auto small = linear_ce_chunks(kPlan, 100, 100, 4, 1000 + 30 * 400 + 399, 0, 1000);
  EXPECT_EQ(small->granule, 1);
  EXPECT_EQ(small->rows, 25);
  EXPECT_EQ(small->chunks, 4);
  // Explicit chunk_rows (capped at N), and one that does not fit the limit.
  EXPECT_EQ(linear_ce_chunks(kPlan, 100, 100, 4, 0, 7, 0)->rows, 7);
  EXPECT_EQ(linear_ce_chunks(kPlan, 100, 100, 4, 0, 7, 0)->chunks, 15);
  EXPECT_EQ(linear_ce_chunks(kPlan, 10, 100, 4, 0, 64, 0)->rows, 10);
  BT_EXPECT_STATUS(linear_ce_chunks(kPlan, 100, 100, 4, 1000 + 6 * 400, 7, 1000).status(), StatusCode::InvalidProblem,
                   "chunk_rows 7 needs 3800 workspace bytes, over workspace_limit 3400");
  // A limit below one row of logits plus the fixed scratch.
  BT_EXPECT_STATUS(linear_ce_chunks(kPlan, 100, 100, 4, 1399, 0, 1000).status(), StatusCode::InvalidProblem,
                   "workspace_limit 1399 is below the minimum 1400 bytes");
}

// ---- values ---------------------------------------------------------------------------------
FusedLinearCrossEntropyDescriptor options(FusedLinearCrossEntropyDescriptor d, LossReduction r) {
  d.reduction = r;
  d.label_smoothing = 0.1;
  d.has_weight = true;
  d.z_loss = 1e-2;
  return d;
}

TEST(LinearCrossEntropyCpu, ReferenceMatchesTheNaiveModel) {
  for (DType t : {DType::F64, DType::F32})
    for (LossReduction r : {LossReduction::None, LossReduction::Mean, LossReduction::Sum})
      for (bool opts : {false, true})
        for (bool bias : {false, true}) {
          auto d = lce_desc(t, 13, 6, 9, bias);
          if (opts) d = options(d, r);
          d.reduction = r;
          SCOPED_TRACE(std::string(dtype_name(t)) + " " + loss_reduction_name(r) + (opts ? " options" : "") + (bias ? " bias" : ""));
          bt::Rng rng(bt::fresh_seed("lce naive"));
          const LceData x = bt::make_lce_data(d, rng);
          auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d);
          ASSERT_TRUE(plan) << plan.status().to_string();
          EXPECT_EQ(plan->sku().backend, Backend::CpuReference);
          const LceResult got = bt::lce_run(kCpu, *plan, x), ref = bt::lce_naive(d, x);
          ASSERT_TRUE(got.st.is_ok()) << got.st.to_string();
          // f64: exact math up to summation order; f32: the logits and dlogits are rounded to f32.
          const double tol = t == DType::F64 ? 1e-11 : 2e-5;
          const std::string e = close("loss", got.loss, ref.loss, tol) + close("lse", got.lse, ref.lse, tol) +
                                close("dh", got.dh, ref.dh, tol) + close("dw", got.dw, ref.dw, tol) +
                                close("db", got.db, ref.db, tol);
          EXPECT_TRUE(e.empty()) << e;
        }
}

// The scalar sum_i g_i loss_i (None) or the loss (Mean / Sum, dloss = 1 then),
// evaluated by a forward-only plan on perturbed inputs.
double objective(const FusedLinearCrossEntropyDescriptor& d, const LceData& x) {
  auto f = d;
  f.need_dh = f.need_dw = f.need_db = false;
  auto plan = FusedLinearCrossEntropyPlan::select(kCpu, f);
  EXPECT_TRUE(plan) << plan.status().to_string();
  const LceResult r = bt::lce_run(kCpu, *plan, x, bt::LceLayout{0, false});
  EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
  double s = 0;
  for (size_t i = 0; i < r.loss.size(); ++i) s += r.loss[i] * x.dloss[i];
  return s;
}

TEST(LinearCrossEntropyCpu, GradientsMatchFiniteDifferencesInF64) {
  for (LossReduction r : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
    SCOPED_TRACE(loss_reduction_name(r));
    auto d = options(lce_desc(DType::F64, 6, 4, 5), r);
    d.loss_dtype = DType::F64;
    bt::Rng rng(bt::fresh_seed("lce fd"));
    LceData x = bt::make_lce_data(d, rng, 0.3);
    x.target[1] = d.ignore_index;  // at least one ignored row
    if (r != LossReduction::None) x.dloss = {1.0};
    auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d);
    ASSERT_TRUE(plan);
    const LceResult g = bt::lce_run(kCpu, *plan, x);
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    const double h = 1e-6;
    auto fd = [&](std::vector<double> LceData::*field, size_t i) {
      LceData p = x, m = x;
      (p.*field)[i] += h;
      (m.*field)[i] -= h;
      return (objective(d, p) - objective(d, m)) / (2 * h);
    };
    for (size_t i = 0; i < x.h.size(); ++i) EXPECT_NEAR(g.dh[i], fd(&LceData::h, i), 1e-7) << "dh[" << i << "]";
    for (size_t i = 0; i < x.w.size(); ++i) EXPECT_NEAR(g.dw[i], fd(&LceData::w, i), 1e-7) << "dw[" << i << "]";
    for (size_t i = 0; i < x.b.size(); ++i) EXPECT_NEAR(g.db[i], fd(&LceData::b, i), 1e-7) << "db[" << i << "]";
  }
}

// The unfused composition on the CPU: LinearPlan, CrossEntropyPlan with_grad in
// place on the logits, LinearBackwardPlan; outputs as doubles.
LceResult unfused(const FusedLinearCrossEntropyDescriptor& d, const LceData& x) {
  const int64_t N = d.rows, D = d.in_features, V = d.classes;
  const DType t = d.dtype;
  const bool none = d.reduction == LossReduction::None;
  LceResult r;
  bt::HostBuffer h = bt::host_from(t, x.h), w = bt::host_from(t, x.w), b = bt::host_from(t, x.b),
                 tg = bt::host_from_i64(d.index_dtype, x.target), cw = bt::host_from(t, x.cw),
                 dl = bt::host_from(d.loss_dtype, x.dloss);
  bt::HostBuffer logits(t, N * V), loss(d.loss_dtype, none ? N : 1), lse(d.dtype == DType::F64 ? DType::F64 : DType::F32, N),
      dh(t, N * D), dw(t, V * D), db(t, V);
  LinearDescriptor ld;
  ld.dtype = t;
  ld.x_shape = Dims{N, D};
  ld.out_features = V;
  ld.has_bias = d.has_bias;
  auto lin = LinearPlan::select(kCpu, ld);
  EXPECT_TRUE(lin);
  LinearArgs la;
  la.x = bt::view(h, bt::contiguous({N, D}));
  la.weight = bt::view(w, bt::contiguous({V, D}));
  if (d.has_bias) la.bias = bt::view(b, bt::contiguous({V}));
  la.y = bt::view_mut(logits, bt::contiguous({N, V}));
  r.st = lin->run(kCpu, Workspace::none(), la);
  if (!r.st.is_ok()) return r;
  CrossEntropyDescriptor cd = bt::lce_ce_desc(d);
  cd.with_grad = true;
  auto ce = CrossEntropyPlan::select(kCpu, cd);
  EXPECT_TRUE(ce);
  CrossEntropyArgs ca;
  ca.logits = bt::view(logits, bt::contiguous({N, V}));
  ca.target = bt::view(tg, bt::contiguous({N}));
  if (d.has_weight) ca.weight = bt::view(cw, bt::contiguous({V}));
  ca.loss = bt::view_mut(loss, bt::contiguous(none ? Dims{N} : Dims{}));
  ca.lse = bt::view_mut(lse, bt::contiguous({N}));
  ca.dloss = bt::view(dl, bt::contiguous(none ? Dims{N} : Dims{}));
  ca.dlogits = bt::view_mut(logits, bt::contiguous({N, V}));
  r.st = ce->run(kCpu, Workspace::none(), ca);
  if (!r.st.is_ok()) return r;
  LinearBackwardDescriptor bd;
  bd.forward = ld;
  bd.need_db = d.need_db;
  auto bwd = LinearBackwardPlan::select(kCpu, bd);
  EXPECT_TRUE(bwd);
  LinearBackwardArgs ba;
  ba.dy = bt::view(logits, bt::contiguous({N, V}));
  ba.x = la.x;
  ba.weight = la.weight;
  ba.dx = bt::view_mut(dh, bt::contiguous({N, D}));
  ba.dw = bt::view_mut(dw, bt::contiguous({V, D}));
  if (d.need_db) ba.db = bt::view_mut(db, bt::contiguous({V}));
  r.st = bwd->run(kCpu, Workspace::none(), ba);
  r.loss = bt::all_values(loss);
  r.lse = bt::all_values(lse);
  r.dh = bt::all_values(dh);
  r.dw = bt::all_values(dw);
  if (d.need_db) r.db = bt::all_values(db);
  return r;
}

TEST(LinearCrossEntropyCpu, EqualsTheUnfusedCompositionBitForBit) {
  for (DType t : {DType::BF16, DType::F32, DType::F16})
    for (LossReduction r : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + loss_reduction_name(r));
      auto d = options(lce_desc(t, 70, 12, 33), r);  // 70 rows: two of the reference's row blocks
      bt::Rng rng(bt::fresh_seed("lce unfused"));
      const LceData x = bt::make_lce_data(d, rng);
      auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d);
      ASSERT_TRUE(plan);
      const LceResult got = bt::lce_run(kCpu, *plan, x), ref = unfused(d, x);
      ASSERT_TRUE(got.st.is_ok()) << got.st.to_string();
      ASSERT_TRUE(ref.st.is_ok()) << ref.st.to_string();
      const std::string e = same("loss", got.loss, ref.loss) + same("lse", got.lse, ref.lse) + same("dh", got.dh, ref.dh) +
                            same("dw", got.dw, ref.dw) + same("db", got.db, ref.db);
      EXPECT_TRUE(e.empty()) << e;
    }
}

TEST(LinearCrossEntropyCpu, StridedHiddenRows) {
  auto d = options(lce_desc(DType::F64, 9, 5, 7), LossReduction::Mean);
  bt::Rng rng(bt::fresh_seed("lce strided"));
  const LceData x = bt::make_lce_data(d, rng);
  auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d);
  ASSERT_TRUE(plan);
  const LceResult dense = bt::lce_run(kCpu, *plan, x), padded = bt::lce_run(kCpu, *plan, x, {8, true});
  ASSERT_TRUE(padded.st.is_ok()) << padded.st.to_string();
  const std::string e = same("loss", padded.loss, dense.loss) + same("dh", padded.dh, dense.dh) + same("dw", padded.dw, dense.dw);
  EXPECT_TRUE(e.empty()) << e;
}

TEST(LinearCrossEntropyCpu, ZeroRows) {
  for (LossReduction r : {LossReduction::Mean, LossReduction::Sum}) {
    auto d = lce_desc(DType::F32, 0, 4, 6);
    d.reduction = r;
    auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d);
    ASSERT_TRUE(plan);
    EXPECT_EQ(plan->chunks(), 0);
    bt::Rng rng(bt::fresh_seed("lce zero"));
    const LceResult g = bt::lce_run(kCpu, *plan, bt::make_lce_data(d, rng));
    ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
    ASSERT_EQ(g.loss.size(), 1u);
    if (r == LossReduction::Mean) EXPECT_TRUE(std::isnan(g.loss[0]));  // 0 / 0, as PyTorch
    else EXPECT_EQ(g.loss[0], 0.0);
    EXPECT_EQ(g.dw, std::vector<double>(24, 0.0));  // sums over no rows
    EXPECT_EQ(g.db, std::vector<double>(6, 0.0));
  }
}

TEST(LinearCrossEntropyCpu, ZeroFeaturesAndOneClass) {
  // D = 0: the logits are the bias; V = 1: every loss is 0 (lse = the only logit).
  auto d = lce_desc(DType::F64, 5, 0, 3);
  d.loss_dtype = DType::F64;
  bt::Rng rng(bt::fresh_seed("lce d0"));
  const LceData x = bt::make_lce_data(d, rng, 0.0);
  auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d);
  ASSERT_TRUE(plan);
  const LceResult g = bt::lce_run(kCpu, *plan, x), ref = bt::lce_naive(d, x);
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
  EXPECT_TRUE((close("loss", g.loss, ref.loss, 1e-12) + close("db", g.db, ref.db, 1e-12)).empty());
  auto one = lce_desc(DType::F64, 4, 3, 1);
  one.loss_dtype = DType::F64;
  const LceData y = bt::make_lce_data(one, rng, 0.0);
  auto p1 = FusedLinearCrossEntropyPlan::select(kCpu, one);
  ASSERT_TRUE(p1);
  const LceResult g1 = bt::lce_run(kCpu, *p1, y);
  ASSERT_TRUE(g1.st.is_ok());
  EXPECT_EQ(g1.loss[0], 0.0);
  EXPECT_EQ(g1.dw, std::vector<double>(3, 0.0));
}

TEST(LinearCrossEntropyCpu, StrictWorkspaceNeedsTheToken) {
  auto d = lce_desc(DType::F32, 4, 3, 5);
  PlanPreference strict;
  strict.strict_workspace = true;
  auto plan = FusedLinearCrossEntropyPlan::select(kCpu, d, strict);
  ASSERT_TRUE(plan);
  EXPECT_EQ(plan->workspace_size(), kStrictWorkspaceBytes);
  auto normal = FusedLinearCrossEntropyPlan::select(kCpu, d);
  EXPECT_EQ(normal->workspace_size(), 0u);
  EXPECT_EQ(normal->logits_bytes(), 4u * 5u * 4u);
  bt::Rng rng(bt::fresh_seed("lce strict"));
  const LceData x = bt::make_lce_data(d, rng);
  const LceResult g = bt::lce_run(kCpu, *plan, x), ref = bt::lce_run(kCpu, *normal, x);
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
  EXPECT_TRUE((same("loss", g.loss, ref.loss) + same("dw", g.dw, ref.dw)).empty());
}

}  // namespace
