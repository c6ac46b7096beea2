// NormPlan / NormBackwardPlan on the CPU reference:
//   * every validation rule: its StatusCode and message (naming the plan);
//   * forward and backward against the naive model of support/norm_helpers.hpp
//     for every dtype, both kinds, normalized_dims 1 and 2, weight / bias /
//     zero-centred weight, fused residual, strided / transposed / padded views
//     (rows, weight and stats), in place;
//   * the backward against central finite differences of the forward (f64),
//     both kinds, fused and unfused residual, zero-centred weight, k = 1 and 2;
//   * zero rows write nothing (the backward's dweight / dbias: zeros); the CPU SKU.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/norm_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();
constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr NormKind kLN = NormKind::LayerNorm, kRMS = NormKind::RMSNorm;

NormBackwardDescriptor bwd_of(const NormDescriptor& f, bool dx = true, bool dw = true, bool db = true, bool rg = false) {
  NormBackwardDescriptor b;
  b.forward = f;
  b.need_dx = dx;
  b.need_dweight = dw;
  b.need_dbias = db;
  b.residual_grad = rg;
  return b;
}

template <class T>
TensorRef cref(const std::vector<T>& v, Dims shape) {
  return TensorRef::contiguous(v.data(), Device::cpu(), shape, static_cast<int64_t>(v.size()));
}
template <class T>
TensorMut cmut(std::vector<T>& v, Dims shape) {
  return TensorMut::contiguous(v.data(), Device::cpu(), shape, static_cast<int64_t>(v.size()));
}

bt::Layout stats_layout(int64_t rows, int64_t stride) {
  bt::Layout L;
  L.shape = {rows};
  L.strides = {stride};
  L.storage = rows * stride;
  L.name = "stats(stride " + std::to_string(stride) + ")";
  return L;
}

// ---- runners ------------------------------------------------------------------------------
struct Layouts {
  bt::Layout rows;     // x, residual, y, h, dy, dx, dh_in
  bt::Layout weight;   // weight, bias, dweight, dbias
  int64_t stats = 1;   // stride of mean / rstd
};

Layouts contiguous_layouts(const NormDescriptor& d) { return {bt::contiguous(d.shape), bt::contiguous(bt::norm_weight_shape(d)), 1}; }

struct FwdResult {
  Status st;
  std::vector<double> y, h, mean, rstd;
};

FwdResult cpu_forward(const NormDescriptor& d, const bt::NormInputs& in, const Layouts& L, bool in_place = false) {
  const int64_t rows = bt::norm_rows(d);
  const DType sd = bt::norm_stats_dtype(d);
  const bt::Layout S = stats_layout(rows, L.stats);
  bt::HostBuffer bx(d.dtype, L.rows.storage), br(d.dtype, L.rows.storage), by(d.dtype, L.rows.storage),
      bh(d.dtype, L.rows.storage), bw(d.dtype, L.weight.storage), bb(d.dtype, L.weight.storage), bm(sd, S.storage),
      bs(sd, S.storage);
  for (auto* b : {&bx, &br, &by, &bh, &bw, &bb, &bm, &bs}) b->poison();
  bt::scatter(bx, L.rows, in.x);
  bt::scatter(br, L.rows, in.res);
  bt::scatter(bw, L.weight, in.w);
  bt::scatter(bb, L.weight, in.b);
  const bool rms = d.kind == kRMS;
  NormArgs a;
  a.x = bt::view(bx, L.rows);
  if (d.residual) a.residual = bt::view(br, L.rows);
  if (d.has_weight) a.weight = bt::view(bw, L.weight);
  if (d.has_bias) a.bias = bt::view(bb, L.weight);
  bt::HostBuffer& yb = in_place ? bx : by;
  bt::HostBuffer& hb = in_place ? br : bh;
  a.y = bt::view_mut(yb, L.rows);
  if (d.residual) a.h = bt::view_mut(hb, L.rows);
  if (d.save_stats && !rms) a.mean = bt::view_mut(bm, S);
  if (d.save_stats) a.rstd = bt::view_mut(bs, S);
  FwdResult r;
  auto plan = NormPlan::select(kCpu, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  r.st = plan->run(kCpu, {}, a);
  if (!in_place) {
    EXPECT_EQ(bt::check_gaps(by, L.rows, bt::poison_byte(d.dtype)), "");
    if (d.residual) EXPECT_EQ(bt::check_gaps(bh, L.rows, bt::poison_byte(d.dtype)), "");
  }
  EXPECT_EQ(bt::check_gaps(bs, S, bt::poison_byte(sd)), "");
  r.y = bt::gather(yb, L.rows);
  if (d.residual) r.h = bt::gather(hb, L.rows);
  if (d.save_stats && !rms) r.mean = bt::gather(bm, S);
  if (d.save_stats) r.rstd = bt::gather(bs, S);
  return r;
}

struct BwdResult {
  Status st;
  std::vector<double> dx, dw, db;
};

// x: the forward's normalized input (h); mean / rstd: the saved stats.
BwdResult cpu_backward(const NormBackwardDescriptor& bd, const std::vector<double>& x, const std::vector<double>& mean,
                       const std::vector<double>& rstd, const bt::NormInputs& in, const Layouts& L, bool in_place = false) {
  const NormDescriptor& d = bd.forward;
  const int64_t rows = bt::norm_rows(d);
  const DType sd = bt::norm_stats_dtype(d);
  const bt::Layout S = stats_layout(rows, L.stats);
  const bool rms = d.kind == kRMS;
  const bool dw = bd.need_dweight && d.has_weight, db = bd.need_dbias && d.has_bias;
  bt::HostBuffer bx(d.dtype, L.rows.storage), bg(d.dtype, L.rows.storage), bh(d.dtype, L.rows.storage),
      bdx(d.dtype, L.rows.storage), bw(d.dtype, L.weight.storage), bdw(d.dtype, L.weight.storage),
      bdb(d.dtype, L.weight.storage), bm(sd, S.storage), bs(sd, S.storage);
  for (auto* b : {&bx, &bg, &bh, &bdx, &bw, &bdw, &bdb, &bm, &bs}) b->poison();
  bt::scatter(bx, L.rows, x);
  bt::scatter(bg, L.rows, in.dy);
  bt::scatter(bh, L.rows, in.dh);
  bt::scatter(bw, L.weight, in.w);
  if (!rms) bt::scatter(bm, S, mean);
  bt::scatter(bs, S, rstd);
  NormBackwardArgs a;
  a.dy = bt::view(bg, L.rows);
  a.x = bt::view(bx, L.rows);
  if (d.has_weight && bd.need_dx) a.weight = bt::view(bw, L.weight);
  if (!rms) a.mean = bt::view(bm, S);
  a.rstd = bt::view(bs, S);
  if (bd.residual_grad) a.dh_in = bt::view(bh, L.rows);
  bt::HostBuffer& dxb = in_place ? bg : bdx;
  if (bd.need_dx) a.dx = bt::view_mut(dxb, L.rows);
  if (dw) a.dweight = bt::view_mut(bdw, L.weight);
  if (db) a.dbias = bt::view_mut(bdb, L.weight);
  BwdResult r;
  auto plan = NormBackwardPlan::select(kCpu, bd);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  r.st = plan->run(kCpu, {}, a);
  if (bd.need_dx) r.dx = bt::gather(dxb, L.rows);
  if (dw) r.dw = bt::gather(bdw, L.weight);
  if (db) r.db = bt::gather(bdb, L.weight);
  if (!in_place && bd.need_dx) EXPECT_EQ(bt::check_gaps(bdx, L.rows, bt::poison_byte(d.dtype)), "");
  return r;
}

// |got - want| <= tol * (|want| + 1) element-wise (values are O(1)).
::testing::AssertionResult near(const char* what, const std::vector<double>& got, const std::vector<double>& want,
                                double tol) {
  if (got.size() != want.size())
    return ::testing::AssertionFailure() << what << ": " << got.size() << " values, want " << want.size();
  for (size_t i = 0; i < got.size(); ++i)
    if (!(std::abs(got[i] - want[i]) <= tol * (std::abs(want[i]) + 1.0)))
      return ::testing::AssertionFailure() << what << " element " << i << ": got " << got[i] << ", want " << want[i];
  return ::testing::AssertionSuccess();
}

// One rounding of an O(1) value computed in double (reference and model may land one ulp apart).
double ulp_tol(DType t) {
  switch (t) {
    case DType::F64: return 1e-12;
    case DType::F32: return 5e-7;
    case DType::F16: return 2e-3;
    default: return 1.6e-2;  // bf16
  }
}

std::vector<double> rounded(DType t, std::vector<double> v) {
  for (double& x : v) x = bt::round_to(t, x);
  return v;
}

// ---- validation rules -------------------------------------------------------------
TEST(NormCpu, IntegerDtypeIsUnsupported) {
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kLN, DType::I32, {2, 3})).status(), StatusCode::Unsupported,
                   "NormPlan: dtype i32 is not supported (f32, f64, f16, bf16)");
  BT_EXPECT_STATUS(NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kRMS, DType::F8E4M3, {2, 3}))).status(),
                   StatusCode::Unsupported, "NormBackwardPlan: forward.dtype f8e4m3 is not supported");
}

TEST(NormCpu, NegativeExtentIsInvalid) {
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kLN, DType::F32, {2, -3})).status(), StatusCode::InvalidProblem,
                   "NormPlan: ");
}

TEST(NormCpu, RankZeroIsInvalid) {
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kLN, DType::F32, Dims{})).status(), StatusCode::InvalidProblem,
                   "NormPlan: shape [] has rank 0 (a norm needs at least one axis)");
}

TEST(NormCpu, NormalizedDimsOutOfRangeIsInvalid) {
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kLN, DType::F32, {2, 3}, 0)).status(), StatusCode::InvalidProblem,
                   "NormPlan: normalized_dims 0 is out of range for shape [2,3] (expected [1, 2])");
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kRMS, DType::F32, {2, 3}, 3)).status(), StatusCode::InvalidProblem,
                   "normalized_dims 3 is out of range");
  BT_EXPECT_STATUS(NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kLN, DType::F32, {4}, -1))).status(),
                   StatusCode::InvalidProblem, "NormBackwardPlan: forward.normalized_dims -1 is out of range");
}

TEST(NormCpu, EmptyNormalizedBlockIsInvalid) {
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kLN, DType::F32, {4, 0})).status(), StatusCode::InvalidProblem,
                   "NormPlan: shape [4,0] has an empty normalized block [0]");
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kRMS, DType::F32, {4, 0, 3}, 2)).status(),
                   StatusCode::InvalidProblem, "has an empty normalized block [0,3]");
}

TEST(NormCpu, EpsMustBeFiniteAndNonNegative) {
  for (double eps : {-1e-6, kInf, kNaN}) {
    BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kLN, DType::F32, {2, 3}, 1, true, false, false, false, eps)).status(),
                     StatusCode::InvalidProblem, "must be finite and >= 0");
    BT_EXPECT_STATUS(
        NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kRMS, DType::F32, {2, 3}, 1, true, false, false, false, eps))).status(),
        StatusCode::InvalidProblem, "NormBackwardPlan: forward.eps");
  }
  EXPECT_TRUE(NormPlan::select(kCpu, bt::norm_desc(kLN, DType::F32, {2, 3}, 1, true, false, false, false, 0.0)).is_ok());
}

TEST(NormCpu, RmsNormWithBiasIsInvalid) {
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kRMS, DType::F32, {2, 3}, 1, true, true)).status(),
                   StatusCode::InvalidProblem, "NormPlan: has_bias is true but rms_norm has no bias");
}

TEST(NormCpu, ZeroCenteredWeightNeedsWeight) {
  BT_EXPECT_STATUS(NormPlan::select(kCpu, bt::norm_desc(kRMS, DType::F32, {2, 3}, 1, false, false, false, true)).status(),
                   StatusCode::InvalidProblem, "NormPlan: zero_centered_weight is true but has_weight is false");
}

TEST(NormCpu, BackwardNeedsSavedStats) {
  NormDescriptor f = bt::norm_desc(kLN, DType::F32, {2, 3});
  f.save_stats = false;
  BT_EXPECT_STATUS(NormBackwardPlan::select(kCpu, bwd_of(f)).status(), StatusCode::InvalidProblem,
                   "NormBackwardPlan: forward.save_stats is false: the backward needs the saved mean / rstd");
}

TEST(NormCpu, ResidualGradNeedsDx) {
  BT_EXPECT_STATUS(NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kLN, DType::F32, {2, 3}), false, true, true, true)).status(),
                   StatusCode::InvalidProblem, "NormBackwardPlan: residual_grad is true but need_dx is false");
}

TEST(NormCpu, BackwardWithNothingToComputeIsInvalid) {
  // No dx, and the forward has no weight / bias to differentiate.
  BT_EXPECT_STATUS(NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kRMS, DType::F32, {2, 3}, 1, false), false)).status(),
                   StatusCode::InvalidProblem, "NormBackwardPlan: nothing to compute");
  BT_EXPECT_STATUS(NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kLN, DType::F32, {2, 3}, 1, true, true), false, false, false)).status(),
                   StatusCode::InvalidProblem, "nothing to compute");
  // dweight alone is something.
  EXPECT_TRUE(NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kRMS, DType::F32, {2, 3}), false, true, true)).is_ok());
}

TEST(NormCpu, ShapesAndDtypesOfArgumentsAreChecked) {
  auto plan = NormPlan::select(kCpu, bt::norm_desc(kLN, DType::F32, {2, 3}, 1, true, true)).value();
  EXPECT_TRUE(plan.weight_shape() == (Dims{3}));
  EXPECT_TRUE(plan.stats_shape() == (Dims{2}));
  EXPECT_EQ(plan.stats_dtype(), DType::F32);
  std::vector<float> x(6, 1.f), y(6), w(3, 1.f), b(3, 0.f), m(2), s(2);
  std::vector<double> md(2);
  NormArgs a{cref(x, {2, 3}), {}, cref(w, {3}), cref(b, {3}), cmut(y, {2, 3}), {}, cmut(m, {2}), cmut(s, {2})};
  EXPECT_TRUE(plan.can_implement(a).is_ok());
  NormArgs bad = a;
  bad.weight = cref(w, {1, 3});
  BT_EXPECT_STATUS(plan.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: weight shape [1,3] must be [3]");
  bad = a;
  bad.mean = cmut(md, {2});
  BT_EXPECT_STATUS(plan.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: mean dtype f64 must be f32");
  bad = a;
  bad.rstd = cmut(s, {1});
  BT_EXPECT_STATUS(plan.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: rstd shape [1] must be [2]");
  bad = a;
  bad.y = TensorMut{};
  BT_EXPECT_STATUS(plan.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: y is missing");
  auto f64 = NormPlan::select(kCpu, bt::norm_desc(kRMS, DType::F64, {2, 3})).value();
  EXPECT_EQ(f64.stats_dtype(), DType::F64);
}

TEST(NormCpu, OptionalTensorsMustMatchTheDescriptor) {
  std::vector<float> x(6, 1.f), y(6), h(6), w(3, 1.f), m(2), s(2);
  // Forward, RMSNorm without residual: residual, h, bias and mean are refused.
  auto rms = NormPlan::select(kCpu, bt::norm_desc(kRMS, DType::F32, {2, 3})).value();
  NormArgs a{cref(x, {2, 3}), {}, cref(w, {3}), {}, cmut(y, {2, 3}), {}, {}, cmut(s, {2})};
  EXPECT_TRUE(rms.can_implement(a).is_ok());
  NormArgs bad = a;
  bad.residual = cref(h, {2, 3});
  BT_EXPECT_STATUS(rms.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: residual is given but descriptor.residual is false");
  bad = a;
  bad.h = cmut(h, {2, 3});
  BT_EXPECT_STATUS(rms.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: h is given but descriptor.residual is false");
  bad = a;
  bad.mean = cmut(m, {2});
  BT_EXPECT_STATUS(rms.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: mean is given but rms_norm has no mean");
  bad = a;
  bad.bias = cref(w, {3});
  BT_EXPECT_STATUS(rms.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: bias is given but descriptor.has_bias is false");
  bad = a;
  bad.weight = {};
  BT_EXPECT_STATUS(rms.can_implement(bad), StatusCode::InvalidProblem,
                   "NormPlan: weight tensor is missing (descriptor.has_weight is true)");
  // Fused residual: residual and h are required.
  auto fused = NormPlan::select(kCpu, bt::norm_desc(kRMS, DType::F32, {2, 3}, 1, true, false, true)).value();
  BT_EXPECT_STATUS(fused.can_implement(a), StatusCode::InvalidProblem, "NormPlan: residual tensor is missing (descriptor.residual is true)");
  a.residual = cref(h, {2, 3});
  BT_EXPECT_STATUS(fused.can_implement(a), StatusCode::InvalidProblem, "NormPlan: h is missing");
  // Backward: dbias without a bias, dh_in without residual_grad, weight when dx is not computed.
  auto bwd = NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kRMS, DType::F32, {2, 3}))).value();
  std::vector<float> dy(6, 1.f), dx(6), dw(3), db(3);
  NormBackwardArgs b{cref(dy, {2, 3}), cref(x, {2, 3}), cref(w, {3}), {}, cref(s, {2}), {}, cmut(dx, {2, 3}), cmut(dw, {3}), {}};
  EXPECT_TRUE(bwd.can_implement(b).is_ok());
  NormBackwardArgs bb = b;
  bb.dbias = cmut(db, {3});
  BT_EXPECT_STATUS(bwd.can_implement(bb), StatusCode::InvalidProblem, "NormBackwardPlan: dbias is given but forward.has_bias is false");
  bb = b;
  bb.dh_in = cref(dy, {2, 3});
  BT_EXPECT_STATUS(bwd.can_implement(bb), StatusCode::InvalidProblem, "NormBackwardPlan: dh_in is given but residual_grad is false");
  bb = b;
  bb.rstd = {};
  BT_EXPECT_STATUS(bwd.can_implement(bb), StatusCode::InvalidProblem, "NormBackwardPlan: rstd is missing (the saved forward rstd)");
  auto dw_only = NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kRMS, DType::F32, {2, 3}), false)).value();
  bb = b;
  bb.dx = {};
  BT_EXPECT_STATUS(dw_only.can_implement(bb), StatusCode::InvalidProblem, "NormBackwardPlan: weight is given but need_dx is false");
  bb.weight = {};
  EXPECT_TRUE(dw_only.can_implement(bb).is_ok());
}

TEST(NormCpu, OverlapIsRefusedButInPlaceIsAllowed) {
  std::vector<float> x(8, 1.f), r(6, 0.5f), w(3, 1.f), s(2);
  auto plan = NormPlan::select(kCpu, bt::norm_desc(kRMS, DType::F32, {2, 3}, 1, true, false, true)).value();
  NormArgs a{cref(x, {2, 3}), cref(r, {2, 3}), cref(w, {3}), {}, cmut(x, {2, 3}), cmut(r, {2, 3}), {}, cmut(s, {2})};
  EXPECT_TRUE(plan.can_implement(a).is_ok());  // y = x, h = residual in place
  NormArgs bad = a;
  bad.y = TensorMut::contiguous(x.data() + 1, Device::cpu(), {2, 3}, 7);
  BT_EXPECT_STATUS(plan.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: y partially overlaps x");
  bad = a;
  bad.h = cmut(x, {2, 3});
  BT_EXPECT_STATUS(plan.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: h overlaps x");
  bad = a;
  bad.rstd = TensorMut::contiguous(w.data(), Device::cpu(), {2}, 3);
  BT_EXPECT_STATUS(plan.can_implement(bad), StatusCode::InvalidProblem, "NormPlan: rstd overlaps weight");
}

// ---- values -------------------------------------------------------------------------
struct Shape {
  Dims shape;
  int k;
};
const Shape kShapes[] = {{{5, 7}, 1}, {{3, 4, 6}, 2}, {{2, 3, 9}, 1}, {{16}, 1}, {{1, 1}, 1}};

std::vector<Layouts> layouts_for(const NormDescriptor& d) {
  const Dims ws = bt::norm_weight_shape(d);
  return {contiguous_layouts(d),
          {bt::transposed(d.shape), bt::every_other(ws), 3},
          {bt::padded(d.shape, 3), bt::contiguous(ws), 2},
          {bt::every_other(d.shape), bt::transposed(ws), 1}};
}

TEST(NormCpu, ForwardMatchesModelEveryDtypeKindAndLayout) {
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (NormKind kind : {kLN, kRMS})
      for (const Shape& s : kShapes)
        for (int variant = 0; variant < 4; ++variant) {
          // weight / bias / zero-centred / residual combinations
          const bool weight = variant != 1, bias = kind == kLN && variant >= 2, zc = variant == 3, res = variant >= 2;
          const NormDescriptor d = bt::norm_desc(kind, t, s.shape, s.k, weight, bias, res, zc);
          const bt::NormInputs in = bt::norm_inputs(d, rng);
          const auto want = bt::norm_model::forward(d, in);
          for (const Layouts& L : layouts_for(d)) {
            const std::string what = std::string(dtype_name(t)) + " " + norm_kind_name(kind) + " " + s.shape.to_string() +
                                     " k " + std::to_string(s.k) + " variant " + std::to_string(variant) + " " +
                                     bt::describe(L.rows);
            const FwdResult got = cpu_forward(d, in, L);
            ASSERT_TRUE(got.st.is_ok()) << got.st.to_string() << "; " << what;
            EXPECT_TRUE(near("y", got.y, rounded(t, want.y), ulp_tol(t))) << what;
            if (res) EXPECT_EQ(got.h, want.h) << what;  // the rounded sum, exactly
            const DType sd = bt::norm_stats_dtype(d);
            if (kind == kLN) EXPECT_TRUE(near("mean", got.mean, rounded(sd, want.mean), ulp_tol(sd))) << what;
            EXPECT_TRUE(near("rstd", got.rstd, rounded(sd, want.rstd), ulp_tol(sd))) << what;
          }
        }
}

TEST(NormCpu, ForwardInPlaceMatchesOutOfPlace) {
  bt::Rng rng(bt::fresh_seed());
  for (NormKind kind : {kLN, kRMS}) {
    const NormDescriptor d = bt::norm_desc(kind, DType::F32, {4, 9}, 1, true, kind == kLN, true);
    const bt::NormInputs in = bt::norm_inputs(d, rng);
    const FwdResult a = cpu_forward(d, in, contiguous_layouts(d)), b = cpu_forward(d, in, contiguous_layouts(d), true);
    ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
    EXPECT_EQ(a.y, b.y);
    EXPECT_EQ(a.h, b.h);
    EXPECT_EQ(a.rstd, b.rstd);
  }
}

TEST(NormCpu, BackwardMatchesModelEveryDtypeKindAndLayout) {
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (NormKind kind : {kLN, kRMS})
      for (const Shape& s : kShapes)
        for (int variant = 0; variant < 4; ++variant) {
          const bool weight = variant != 1, bias = kind == kLN && variant >= 2, zc = variant == 3, rg = variant >= 2;
          const NormDescriptor d = bt::norm_desc(kind, t, s.shape, s.k, weight, bias, false, zc);
          const NormBackwardDescriptor bd = bwd_of(d, true, true, true, rg);
          const bt::NormInputs in = bt::norm_inputs(d, rng);
          // Saved stats as the forward would store them (rounded to the stats dtype).
          const auto f = bt::norm_model::forward(d, in);
          const DType sd = bt::norm_stats_dtype(d);
          const auto mean = rounded(sd, f.mean), rstd = rounded(sd, f.rstd);
          const auto want = bt::norm_model::backward(bd, in.x, mean, rstd, in);
          for (const Layouts& L : layouts_for(d)) {
            const std::string what = std::string(dtype_name(t)) + " " + norm_kind_name(kind) + " " + s.shape.to_string() +
                                     " k " + std::to_string(s.k) + " variant " + std::to_string(variant) + " " +
                                     bt::describe(L.rows);
            const BwdResult got = cpu_backward(bd, in.x, mean, rstd, in, L);
            ASSERT_TRUE(got.st.is_ok()) << got.st.to_string() << "; " << what;
            // dx: a difference of O(1) terms; dweight / dbias: sums over rows.
            EXPECT_TRUE(near("dx", got.dx, rounded(t, want.dx), 4 * ulp_tol(t))) << what;
            if (weight) EXPECT_TRUE(near("dweight", got.dw, rounded(t, want.dw), ulp_tol(t))) << what;
            if (bias) EXPECT_TRUE(near("dbias", got.db, rounded(t, want.db), ulp_tol(t))) << what;
          }
        }
}

TEST(NormCpu, BackwardInPlaceAndOptionalOutputs) {
  bt::Rng rng(bt::fresh_seed());
  const NormDescriptor d = bt::norm_desc(kLN, DType::F64, {6, 5}, 1, true, true);
  const bt::NormInputs in = bt::norm_inputs(d, rng);
  const auto f = bt::norm_model::forward(d, in);
  const BwdResult all = cpu_backward(bwd_of(d), in.x, f.mean, f.rstd, in, contiguous_layouts(d));
  const BwdResult inplace = cpu_backward(bwd_of(d), in.x, f.mean, f.rstd, in, contiguous_layouts(d), true);
  ASSERT_TRUE(all.st.is_ok() && inplace.st.is_ok());
  EXPECT_EQ(all.dx, inplace.dx);  // dweight / dbias read dy before dx overwrites it
  EXPECT_EQ(all.dw, inplace.dw);
  EXPECT_EQ(all.db, inplace.db);
  for (int mask = 1; mask < 8; ++mask) {
    const BwdResult part = cpu_backward(bwd_of(d, mask & 1, mask & 2, mask & 4), in.x, f.mean, f.rstd, in, contiguous_layouts(d));
    ASSERT_TRUE(part.st.is_ok()) << part.st.to_string();
    if (mask & 1) EXPECT_EQ(part.dx, all.dx);
    if (mask & 2) EXPECT_EQ(part.dw, all.dw);
    if (mask & 4) EXPECT_EQ(part.db, all.db);
  }
}

// ---- finite differences -------------------------------------------------------------------
// L = sum(c * y) + sum(e * h) (the fused forward's h feeds the residual stream);
// the backward with dy = c, dh_in = e, x = h must give dL/dx (= dL/dresidual),
// dL/dweight and dL/dbias.
TEST(NormCpu, BackwardMatchesFiniteDifferences) {
  bt::Rng rng(bt::fresh_seed());
  for (NormKind kind : {kLN, kRMS})
    for (const Shape& s : {Shape{{3, 5}, 1}, Shape{{2, 3, 4}, 2}})
      for (bool res : {false, true})
        for (bool zc : {false, true}) {
          const NormDescriptor d = bt::norm_desc(kind, DType::F64, s.shape, s.k, true, kind == kLN, res, zc);
          bt::NormInputs in = bt::norm_inputs(d, rng);
          const std::string what = std::string(norm_kind_name(kind)) + " " + s.shape.to_string() + " residual " +
                                   std::to_string(res) + " zero_centered " + std::to_string(zc);
          auto loss = [&](const bt::NormInputs& v) {
            const FwdResult f = cpu_forward(d, v, contiguous_layouts(d));
            EXPECT_TRUE(f.st.is_ok()) << f.st.to_string();
            double l = 0;
            for (size_t i = 0; i < f.y.size(); ++i) l += v.dy[i] * f.y[i] + (res ? v.dh[i] * f.h[i] : 0.0);
            return l;
          };
          auto fd = [&](std::vector<double> bt::NormInputs::*field) {
            std::vector<double> g((in.*field).size());
            const double step = 1e-6;
            for (size_t i = 0; i < g.size(); ++i) {
              bt::NormInputs p = in, m = in;
              (p.*field)[i] += step;
              (m.*field)[i] -= step;
              g[i] = (loss(p) - loss(m)) / (2 * step);
            }
            return g;
          };
          const FwdResult f = cpu_forward(d, in, contiguous_layouts(d));
          ASSERT_TRUE(f.st.is_ok());
          const BwdResult b = cpu_backward(bwd_of(d, true, true, true, res), res ? f.h : in.x, f.mean, f.rstd, in,
                                           contiguous_layouts(d));
          ASSERT_TRUE(b.st.is_ok()) << b.st.to_string();
          EXPECT_TRUE(near("dx", b.dx, fd(&bt::NormInputs::x), 1e-6)) << what;
          if (res) EXPECT_TRUE(near("dresidual", b.dx, fd(&bt::NormInputs::res), 1e-6)) << what;
          EXPECT_TRUE(near("dweight", b.dw, fd(&bt::NormInputs::w), 1e-6)) << what;
          if (kind == kLN) EXPECT_TRUE(near("dbias", b.db, fd(&bt::NormInputs::b), 1e-6)) << what;
        }
}

// ---- zero size, SKU ------------------------------------------------------------------------
TEST(NormCpu, ZeroRowsWriteNothingButDweightIsZero) {
  const NormDescriptor d = bt::norm_desc(kLN, DType::F32, {0, 4}, 1, true, true);
  auto plan = NormPlan::select(kCpu, d).value();
  EXPECT_EQ(plan.sku().variant, "empty");
  std::vector<float> w(4, 1.f), b(4, 0.f);
  NormArgs a{TensorRef::contiguous(nullptr, DType::F32, Device::cpu(), {0, 4}), {}, cref(w, {4}), cref(b, {4}),
             TensorMut::contiguous(nullptr, DType::F32, Device::cpu(), {0, 4}), {},
             TensorMut::contiguous(nullptr, DType::F32, Device::cpu(), {0}),
             TensorMut::contiguous(nullptr, DType::F32, Device::cpu(), {0})};
  EXPECT_TRUE(plan.run(kCpu, {}, a).is_ok());
  // The backward's dweight / dbias are sums over no rows: zeros.
  auto bplan = NormBackwardPlan::select(kCpu, bwd_of(d, false)).value();
  std::vector<float> dw(4, 7.f), db(4, 7.f);
  NormBackwardArgs g{TensorRef::contiguous(nullptr, DType::F32, Device::cpu(), {0, 4}),
                     TensorRef::contiguous(nullptr, DType::F32, Device::cpu(), {0, 4}), {},
                     TensorRef::contiguous(nullptr, DType::F32, Device::cpu(), {0}),
                     TensorRef::contiguous(nullptr, DType::F32, Device::cpu(), {0}), {}, {}, cmut(dw, {4}),
                     cmut(db, {4})};
  ASSERT_TRUE(bplan.run(kCpu, {}, g).is_ok());
  EXPECT_EQ(dw, std::vector<float>(4, 0.f));
  EXPECT_EQ(db, std::vector<float>(4, 0.f));
}

TEST(NormCpu, CpuSkuNamesTheOp) {
  auto ln = NormPlan::select(kCpu, bt::norm_desc(kLN, DType::BF16, {4, 8})).value();
  EXPECT_EQ(ln.sku().op, "layer_norm.forward");
  EXPECT_EQ(ln.sku().variant, "reference");
  EXPECT_EQ(ln.workspace_size(), 0u);
  auto rms = NormBackwardPlan::select(kCpu, bwd_of(bt::norm_desc(kRMS, DType::F32, {4, 8}))).value();
  EXPECT_EQ(rms.sku().op, "rms_norm.backward");
  EXPECT_EQ(rms.workspace_size(), 0u);
}

}  // namespace
