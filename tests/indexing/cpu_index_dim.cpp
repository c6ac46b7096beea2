// IndexSelectPlan / IndexUpdatePlan on the CPU reference:
//   * every descriptor and argument rule: its StatusCode and message (naming the plan);
//   * bad indices: InvalidProblem naming the first bad position, nothing written;
//     index_fill's negative indices wrap (torch), the others reject them;
//   * index_select and every update mode against the naive models (bit for bit:
//     the same operations in the same order), all dtypes, negative dims, 0-D
//     index, many duplicates, strided views, in place and out of place;
//   * the semantic corner cases stated in the header: copy's last position
//     wins, mean's count, NaN propagation of amax / amin, include_self;
//   * zero-size problems (n = 0, S = 0, outer 0, inner 0);
//   * the backward compositions of docs/OPS.md against finite differences (f64).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
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
constexpr IndexUpdateMode kReduce[] = {IndexUpdateMode::Prod, IndexUpdateMode::Mean, IndexUpdateMode::Amax,
                                       IndexUpdateMode::Amin};

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

std::vector<double> naive(const IndexUpdateDescriptor& d, const IdxData& e) {
  return d.dtype == DType::F64 ? bt::idx_naive_update<double>(d, e) : bt::idx_naive_update<float>(d, e);
}

std::string what(const IndexUpdateDescriptor& d, bool in_place) {
  return std::string(index_update_mode_name(d.mode)) + " " + std::string(dtype_name(d.dtype)) + " self " +
         d.self_shape.to_string() + " dim " + std::to_string(d.dim) + " index " + d.index_shape.to_string() +
         (d.include_self ? "" : " exclude_self") + (in_place ? " in place" : "");
}

void expect_same(const std::vector<double>& got, const std::vector<double>& want, const std::string& w) {
  ASSERT_EQ(got.size(), want.size()) << w;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_TRUE(bt::same_value(got[i], want[i])) << w << " element " << i << ": " << got[i] << " vs " << want[i];
}

// ---- rules ---------------------------------------------------------------------------------
TEST(IndexDimCpu, SelectDescriptorRules) {
  const IndexSelectDescriptor ok = sel(DType::F32, {4, 5}, 1, {3});
  auto expect = [](IndexSelectDescriptor d, StatusCode code, const std::string& msg) {
    BT_EXPECT_STATUS(IndexSelectPlan::select(kCpu, d).status(), code, "IndexSelectPlan: " + msg);
  };
  IndexSelectDescriptor d = ok;
  d.dtype = DType::Bool;
  expect(d, StatusCode::Unsupported, "dtype bool is not supported (f32, f64, f16, bf16, i32, i64)");
  d = ok, d.index_dtype = DType::I16;
  expect(d, StatusCode::Unsupported, "index_dtype i16 is not supported (i32, i64)");
  d = ok, d.self_shape = Dims{};
  expect(d, StatusCode::InvalidProblem, "self_shape [] has rank 0");
  d = ok, d.self_shape = Dims{4, -1};
  expect(d, StatusCode::InvalidProblem, "self_shape");
  d = ok, d.dim = 2;
  expect(d, StatusCode::InvalidProblem, "dim 2 is outside [-2, 2)");
  d = ok, d.dim = -3;
  expect(d, StatusCode::InvalidProblem, "dim -3 is outside [-2, 2)");
  d = ok, d.index_shape = Dims{2, 2};
  expect(d, StatusCode::InvalidProblem, "index_shape [2,2] has rank 2 (0 or 1");
  d = ok, d.self_shape = Dims{int64_t{1} << 40, 1}, d.dim = 1, d.index_shape = Dims{int64_t{1} << 30};
  expect(d, StatusCode::InvalidProblem, "the shape with n at dim");
  d = ok, d.dim = -1;  // resolved
  auto p = IndexSelectPlan::select(kCpu, d);
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_EQ(p->descriptor().dim, 1);
  EXPECT_EQ(p->out_shape(), (Dims{4, 3}));
  d.index_shape = Dims{};  // 0-D index: n = 1
  p = IndexSelectPlan::select(kCpu, d);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->out_shape(), (Dims{4, 1}));
}

TEST(IndexDimCpu, UpdateDescriptorRules) {
  const IndexUpdateDescriptor ok = upd(IndexUpdateMode::Add, DType::F32, {4, 5}, 0, {3});
  auto expect = [](IndexUpdateDescriptor d, StatusCode code, const std::string& msg) {
    BT_EXPECT_STATUS(IndexUpdatePlan::select(kCpu, d).status(), code, "IndexUpdatePlan: " + msg);
  };
  IndexUpdateDescriptor d = ok;
  d.mode = static_cast<IndexUpdateMode>(9);
  expect(d, StatusCode::InvalidProblem, "mode 9 is not an IndexUpdateMode");
  for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Prod, IndexUpdateMode::Mean, IndexUpdateMode::Amax,
                            IndexUpdateMode::Amin}) {
    d = ok, d.mode = m, d.dtype = DType::I32;
    expect(d, StatusCode::Unsupported, "dtype i32 is not supported (f32, f64, f16, bf16; i32 / i64 only for");
  }
  for (IndexUpdateMode m : {IndexUpdateMode::Copy, IndexUpdateMode::Fill}) {
    d = ok, d.mode = m, d.dtype = DType::I64;
    EXPECT_TRUE(IndexUpdatePlan::select(kCpu, d)) << index_update_mode_name(m);
  }
  d = ok, d.index_dtype = DType::F32;
  expect(d, StatusCode::Unsupported, "index_dtype f32 is not supported");
  d = ok, d.dim = 2;
  expect(d, StatusCode::InvalidProblem, "dim 2 is outside [-2, 2)");
  d = ok, d.alpha = std::nan("");
  expect(d, StatusCode::InvalidProblem, "alpha nan is not finite");
  d = ok, d.mode = IndexUpdateMode::Fill, d.dtype = DType::I32, d.value = 1e30;
  expect(d, StatusCode::InvalidProblem, "value 1e+30 does not fit dtype i32");
  d.value = 3e9;  // fits i64, not i32
  expect(d, StatusCode::InvalidProblem, "value 3000000000 does not fit dtype i32 (truncated toward zero, it must lie in [-2147483648, 2147483648))");
  d.dtype = DType::I64;
  EXPECT_TRUE(IndexUpdatePlan::select(kCpu, d));
  d = ok, d.dim = -2;
  auto p = IndexUpdatePlan::select(kCpu, d);
  ASSERT_TRUE(p);
  EXPECT_EQ(p->descriptor().dim, 0);
  EXPECT_EQ(p->source_shape(), (Dims{3, 5}));
}

TEST(IndexDimCpu, UpdateArgumentRules) {
  const IndexUpdateDescriptor d = upd(IndexUpdateMode::Add, DType::F32, {4, 5}, 0, {3});
  auto plan = IndexUpdatePlan::select(kCpu, d);
  ASSERT_TRUE(plan);
  bt::HostBuffer self(DType::F32, 40), src(DType::F32, 15), idx = bt::host_from_i64(DType::I64, {0, 1, 2}),
                 out(DType::F32, 20);
  const TensorRef idx_v = bt::view(idx, bt::contiguous({3}));
  IndexUpdateArgs a{bt::view(self, bt::contiguous({4, 5})), idx_v, bt::view(src, bt::contiguous({3, 5})),
                    bt::view_mut(out, bt::contiguous({4, 5}))};
  EXPECT_TRUE(plan->can_implement(a).is_ok());
  IndexUpdateArgs b = a;
  b.source = {};
  BT_EXPECT_STATUS(plan->can_implement(b), StatusCode::InvalidProblem, "IndexUpdatePlan: source is missing");
  b = a, b.out = bt::view_mut(self, bt::contiguous({4, 5}));  // in place: allowed
  EXPECT_TRUE(plan->can_implement(b).is_ok()) << plan->can_implement(b).to_string();
  bt::Layout shifted = bt::contiguous({4, 5});
  shifted.offset = 1;  // overlaps self without being it
  b = a, b.out = bt::view_mut(self, shifted);
  EXPECT_EQ(plan->can_implement(b).code(), StatusCode::InvalidProblem);
  EXPECT_NE(plan->can_implement(b).message().find("IndexUpdatePlan: "), std::string::npos);
  b = a, b.source = bt::view(src, bt::contiguous({2, 5}));
  EXPECT_FALSE(plan->can_implement(b).is_ok());

  IndexUpdateDescriptor f = d;
  f.mode = IndexUpdateMode::Fill;
  auto fp = IndexUpdatePlan::select(kCpu, f);
  ASSERT_TRUE(fp);
  BT_EXPECT_STATUS(fp->can_implement(a), StatusCode::InvalidProblem, "IndexUpdatePlan: source is given but mode is fill");
  b = a, b.source = {};
  EXPECT_TRUE(fp->can_implement(b).is_ok());
}

// ---- bad indices ---------------------------------------------------------------------------
TEST(IndexDimCpu, BadIndicesNameTheFirstPositionAndWriteNothing) {
  Rng rng(11);
  const Dims self{3, 4, 2};
  for (int64_t bad : {int64_t{-1}, int64_t{4}, int64_t{-5}}) {
    IndexSelectDescriptor d = sel(DType::F32, self, 1, {5});
    IdxData e = bt::idx_random(DType::F32, self, 1, 5, false, rng);
    e.index[3] = bad;
    e.index[4] = 99;
    const auto r = bt::idx_select(kCpu, d, e, bt::idx_contiguous(self, 1, {5}));
    BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem,
                     "IndexSelectPlan: index position 3 is " + std::to_string(bad) + ", outside [0, 4) (self's extent at dim 1");
    for (uint8_t b : r.raw) ASSERT_EQ(b, 0xff) << "nothing written";
    for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Copy, IndexUpdateMode::Amax}) {
      IndexUpdateDescriptor u = upd(m, DType::F32, self, 1, {5});
      IdxData eu = bt::idx_random(DType::F32, self, 1, 5, true, rng);
      eu.index[3] = bad;
      const auto ru = bt::idx_update(kCpu, u, eu, bt::idx_contiguous(self, 1, {5}), false);
      BT_EXPECT_STATUS(ru.st, StatusCode::InvalidProblem, "IndexUpdatePlan: index position 3 is " + std::to_string(bad));
    }
  }
  // index_fill wraps [-S, 0) as torch and rejects below -S.
  IndexUpdateDescriptor f = upd(IndexUpdateMode::Fill, DType::F32, self, 1, {3});
  f.value = 2.5;
  IdxData e = bt::idx_random(DType::F32, self, 1, 3, false, rng);
  e.index = {-1, -4, 1};
  const auto r = bt::idx_update(kCpu, f, e, bt::idx_contiguous(self, 1, {3}), false);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  expect_same(r.out, naive(f, e), "fill negative");
  e.index = {0, -5, 1};
  BT_EXPECT_STATUS(bt::idx_update(kCpu, f, e, bt::idx_contiguous(self, 1, {3}), false).st, StatusCode::InvalidProblem,
                   "IndexUpdatePlan: index position 1 is -5, outside [-4, 4)");
}

// ---- against the naive models ---------------------------------------------------------------
struct Shape {
  Dims self;
  int64_t dim;
  Dims index;
};
const Shape kShapes[] = {{{7}, 0, {5}},         {{4, 6}, 0, {9}},        {{4, 6}, -1, {3}},
                         {{3, 5, 4}, 1, {8}},   {{2, 3, 5, 3}, -2, {6}}, {{3, 5, 4}, 2, {}},
                         {{5, 3}, 0, {12}}};

TEST(IndexDimCpu, SelectMatchesTheNaiveModel) {
  Rng rng(21);
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64})
    for (DType it : {DType::I32, DType::I64})
      for (const Shape& s : kShapes) {
        const IndexSelectDescriptor d = sel(t, s.self, s.dim, s.index, it);
        const IdxData e = bt::idx_random(t, s.self, s.dim, bt::numel(s.index), false, rng, true);
        const auto r = bt::idx_select(kCpu, d, e, bt::idx_contiguous(s.self, s.dim, s.index));
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
        expect_same(r.out, bt::idx_naive_select(d, e), std::string(dtype_name(t)) + " " + s.self.to_string());
      }
}

TEST(IndexDimCpu, SelectStridedViews) {
  Rng rng(22);
  const Dims self{4, 5, 6};
  for (int64_t dim : {0, 1, 2}) {
    const IndexSelectDescriptor d = sel(DType::BF16, self, dim, {7}, DType::I32);
    const IdxData e = bt::idx_random(DType::BF16, self, dim, 7, false, rng, true);
    IdxLayouts L = bt::idx_contiguous(self, dim, {7});
    L.self = bt::permuted(self, {2, 0, 1});
    L.out = bt::every_other(bt::idx_with_n(self, dim, 7));
    L.index = bt::every_other({7});
    const auto r = bt::idx_select(kCpu, d, e, L);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    expect_same(r.out, bt::idx_naive_select(d, e), "strided dim " + std::to_string(dim));
  }
}

TEST(IndexDimCpu, UpdateMatchesTheNaiveModel) {
  Rng rng(31);
  std::vector<IndexUpdateMode> modes = {IndexUpdateMode::Add, IndexUpdateMode::Copy, IndexUpdateMode::Fill};
  modes.insert(modes.end(), std::begin(kReduce), std::end(kReduce));
  for (IndexUpdateMode m : modes)
    for (DType t : kFloat)
      for (const Shape& s : kShapes)
        for (bool include_self : {true, false})
          for (bool in_place : {false, true}) {
            IndexUpdateDescriptor d = upd(m, t, s.self, s.dim, s.index, in_place ? DType::I32 : DType::I64);
            d.include_self = include_self;
            d.alpha = m == IndexUpdateMode::Add ? -0.75 : 1.0;
            d.value = 1.5;
            const int64_t n = bt::numel(s.index);
            const IdxData e = bt::idx_random(t, s.self, s.dim, n, m != IndexUpdateMode::Fill, rng, true);
            const auto r = bt::idx_update(kCpu, d, e, bt::idx_contiguous(s.self, s.dim, s.index), in_place);
            ASSERT_TRUE(r.st.is_ok()) << r.st.to_string() << " " << what(d, in_place);
            expect_same(r.out, naive(d, e), what(d, in_place));
          }
}

TEST(IndexDimCpu, UpdateIntegerCopyAndFill) {
  Rng rng(32);
  for (DType t : {DType::I32, DType::I64})
    for (IndexUpdateMode m : {IndexUpdateMode::Copy, IndexUpdateMode::Fill}) {
      IndexUpdateDescriptor d = upd(m, t, {5, 4}, 0, {7});
      d.value = -7;
      const IdxData e = bt::idx_random(t, d.self_shape, 0, 7, m == IndexUpdateMode::Copy, rng, true);
      const auto r = bt::idx_update(kCpu, d, e, bt::idx_contiguous(d.self_shape, 0, {7}), false);
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      expect_same(r.out, naive(d, e), what(d, false));
    }
}

TEST(IndexDimCpu, UpdateStridedViews) {
  Rng rng(33);
  const Dims self{4, 5, 6};
  for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Copy, IndexUpdateMode::Mean, IndexUpdateMode::Amin})
    for (int64_t dim : {0, 1, 2}) {
      IndexUpdateDescriptor d = upd(m, DType::F16, self, dim, {9});
      const IdxData e = bt::idx_random(DType::F16, self, dim, 9, true, rng, true);
      IdxLayouts L = bt::idx_contiguous(self, dim, {9});
      L.self = bt::permuted(self, {1, 2, 0});
      L.source = bt::every_other(bt::idx_with_n(self, dim, 9));
      L.result = bt::permuted(self, {2, 1, 0});
      L.index = bt::every_other({9});
      auto r = bt::idx_update(kCpu, d, e, L, false);
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      expect_same(r.out, naive(d, e), what(d, false) + " strided");
      r = bt::idx_update(kCpu, d, e, L, true);  // in place on the permuted self
      ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
      expect_same(r.out, naive(d, e), what(d, true) + " strided");
    }
}

// ---- the stated semantics, element by element -------------------------------------------------
TEST(IndexDimCpu, DuplicatesFollowTheStatedRules) {
  // self [3, 2]; index {2, 0, 2, 2} along dim 0: slice 2 gets positions 0, 2, 3 in that order.
  const Dims self{3, 2};
  IdxData e;
  e.self = {1, 2, 3, 4, 5, 6};
  e.index = {2, 0, 2, 2};
  e.source = {10, 20, 30, 40, 50, 60, 70, 80};
  const IdxLayouts L = bt::idx_contiguous(self, 0, {4});
  auto run = [&](IndexUpdateMode m, bool include_self, double alpha = 1.0) {
    IndexUpdateDescriptor d = upd(m, DType::F64, self, 0, {4});
    d.include_self = include_self;
    d.alpha = alpha;
    const auto r = bt::idx_update(kCpu, d, e, L, false);
    EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
    return r.out;
  };
  // Copy: the last position naming slice 2 (position 3) wins; slice 1 is self's.
  auto c = run(IndexUpdateMode::Copy, true);
  EXPECT_EQ(c[4], e.source[6]);
  EXPECT_EQ(c[5], e.source[7]);
  EXPECT_EQ(c[2], e.self[2]);
  EXPECT_EQ(c[0], e.source[2]);
  // Add with alpha: self + alpha * (sum of the run).
  auto a = run(IndexUpdateMode::Add, true, 0.5);
  EXPECT_EQ(a[4], e.self[4] + 0.5 * (e.source[0] + e.source[4] + e.source[6]));
  // Mean: count includes self when include_self.
  auto mean_in = run(IndexUpdateMode::Mean, true), mean_ex = run(IndexUpdateMode::Mean, false);
  EXPECT_DOUBLE_EQ(mean_in[5], (e.self[5] + e.source[1] + e.source[5] + e.source[7]) / 4);
  EXPECT_DOUBLE_EQ(mean_ex[5], (e.source[1] + e.source[5] + e.source[7]) / 3);
  EXPECT_EQ(mean_ex[2], e.self[2]);  // never indexed: keeps self even without include_self
  // Prod / amax / amin with and without self.
  EXPECT_EQ(run(IndexUpdateMode::Prod, false)[4], e.source[0] * e.source[4] * e.source[6]);
  EXPECT_EQ(run(IndexUpdateMode::Prod, true)[4], e.self[4] * e.source[0] * e.source[4] * e.source[6]);
  EXPECT_EQ(run(IndexUpdateMode::Amax, true)[4], e.source[6]);
  EXPECT_EQ(run(IndexUpdateMode::Amin, true)[4], e.self[4]);
  EXPECT_EQ(run(IndexUpdateMode::Amin, false)[4], e.source[0]);
  // NaN propagates through amax / amin, from self or from a source.
  e.source[4] = bt::kNaN;
  EXPECT_TRUE(std::isnan(run(IndexUpdateMode::Amax, true)[4]));
  EXPECT_TRUE(std::isnan(run(IndexUpdateMode::Amin, false)[4]));
  e.source[4] = 50;
  e.self[4] = bt::kNaN;
  EXPECT_TRUE(std::isnan(run(IndexUpdateMode::Amax, true)[4]));
  EXPECT_FALSE(std::isnan(run(IndexUpdateMode::Amax, false)[4]));
}

TEST(IndexDimCpu, SixteenBitAccumulatesInF32) {
  // 64 additions of 2^-9 to 1 in bf16: each one rounds away in bf16, the f32 sum keeps them.
  const Dims self{1, 1};
  IndexUpdateDescriptor d = upd(IndexUpdateMode::Add, DType::BF16, self, 0, {64});
  IdxData e;
  e.self = {1.0};
  e.index.assign(64, 0);
  e.source.assign(64, std::ldexp(1.0, -9));
  const auto r = bt::idx_update(kCpu, d, e, bt::idx_contiguous(self, 0, {64}), false);
  ASSERT_TRUE(r.st.is_ok());
  EXPECT_EQ(r.out[0], bt::round_to(DType::BF16, 1.0 + 64 * std::ldexp(1.0, -9)));
  EXPECT_NE(r.out[0], 1.0);
}

// ---- zero-size ---------------------------------------------------------------------------------
TEST(IndexDimCpu, ZeroSize) {
  Rng rng(41);
  const Shape cases[] = {{{4, 3}, 0, {0}}, {{0, 3}, 0, {0}}, {{0, 3}, 1, {2}}, {{4, 0}, 0, {3}}, {{2, 5, 0}, 1, {4}}};
  for (const Shape& s : cases) {
    const IndexSelectDescriptor d = sel(DType::F32, s.self, s.dim, s.index);
    IdxData e = bt::idx_random(DType::F32, s.self, s.dim, bt::numel(s.index), false, rng);
    const int64_t S = s.self[static_cast<int>(s.dim)];
    for (auto& v : e.index) v = S > 0 ? v : 0;
    const auto r = bt::idx_select(kCpu, d, e, bt::idx_contiguous(s.self, s.dim, s.index));
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string() << " " << s.self.to_string();
    expect_same(r.out, bt::idx_naive_select(d, e), "select zero-size");
    if (S == 0 && bt::numel(s.index) > 0) continue;  // an index into an empty dim: only with no elements to move
    for (IndexUpdateMode m : {IndexUpdateMode::Add, IndexUpdateMode::Fill, IndexUpdateMode::Mean}) {
      const IndexUpdateDescriptor u = upd(m, DType::F32, s.self, s.dim, s.index);
      const IdxData eu = bt::idx_random(DType::F32, s.self, s.dim, bt::numel(s.index), m != IndexUpdateMode::Fill, rng);
      const auto ru = bt::idx_update(kCpu, u, eu, bt::idx_contiguous(s.self, s.dim, s.index), false);
      ASSERT_TRUE(ru.st.is_ok()) << ru.st.to_string();
      expect_same(ru.out, naive(u, eu), what(u, false));  // n = 0: out is a copy of self
    }
  }
}

// ---- backward compositions against finite differences (f64) -------------------------------------
// L(x) = sum(w * f(x)) for a fixed random w; dL/dx from the composition vs central differences.
double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

template <class F>
void expect_gradient(const std::vector<double>& x, const std::vector<double>& grad, F&& loss, const std::string& w) {
  ASSERT_EQ(x.size(), grad.size());
  const double h = 1e-6;
  for (size_t i = 0; i < x.size(); ++i) {
    std::vector<double> xp = x, xm = x;
    xp[i] += h;
    xm[i] -= h;
    const double fd = (loss(xp) - loss(xm)) / (2 * h);
    ASSERT_NEAR(grad[i], fd, 1e-6 * (1 + std::fabs(fd))) << w << " element " << i;
  }
}

TEST(IndexDimCpu, BackwardCompositionsMatchFiniteDifferences) {
  Rng rng(51);
  const Dims self{4, 3, 2};
  const int64_t dim = 1, n = 5;
  const Dims src_shape = bt::idx_with_n(self, dim, n);
  const IdxLayouts L = bt::idx_contiguous(self, dim, {n});
  IdxData e = bt::idx_random(DType::F64, self, dim, n, true, rng);
  e.index = {2, 0, 2, 1, 2};  // duplicates
  const std::vector<double> w_out = bt::random_values(DType::F64, bt::numel(src_shape), rng);
  const std::vector<double> w_self = bt::random_values(DType::F64, bt::numel(self), rng);

  // index_select: dself = Add of dout (w_out) into zeros (include_self with a zero self).
  const IndexSelectDescriptor sd = sel(DType::F64, self, dim, {n});
  IndexUpdateDescriptor add = upd(IndexUpdateMode::Add, DType::F64, self, dim, {n});
  IdxData g{std::vector<double>(static_cast<size_t>(bt::numel(self)), 0.0), e.index, w_out};
  auto dself = bt::idx_update(kCpu, add, g, L, true);
  ASSERT_TRUE(dself.st.is_ok());
  expect_gradient(e.self, dself.out, [&](const std::vector<double>& x) {
    IdxData t = e;
    t.self = x;
    return dot(w_out, bt::idx_select(kCpu, sd, t, L).out);
  }, "index_select dself");

  // index_add: dself = dout, dsource = alpha * index_select(dout).
  add.alpha = -1.25;
  auto fwd_add = [&](const std::vector<double>& x, const std::vector<double>& s) {
    IdxData t = e;
    t.self = x;
    t.source = s;
    return dot(w_self, bt::idx_update(kCpu, add, t, L, false).out);
  };
  expect_gradient(e.self, w_self, [&](const std::vector<double>& x) { return fwd_add(x, e.source); }, "index_add dself");
  IdxData gs{w_self, e.index, {}};
  auto sel_w = bt::idx_select(kCpu, sd, gs, L);
  ASSERT_TRUE(sel_w.st.is_ok());
  std::vector<double> dsrc = sel_w.out;
  for (double& v : dsrc) v *= add.alpha;
  expect_gradient(e.source, dsrc, [&](const std::vector<double>& s) { return fwd_add(e.self, s); }, "index_add dsource");

  // index_copy (distinct indices): dself = index_fill(dout, 0), dsource = index_select(dout).
  IdxData ec = e;
  ec.index = {2, 0};  // slice 1 keeps self
  const IdxLayouts Lc = bt::idx_contiguous(self, dim, {2});
  ec.source.resize(static_cast<size_t>(bt::numel(bt::idx_with_n(self, dim, 2))));
  const IndexUpdateDescriptor copy = upd(IndexUpdateMode::Copy, DType::F64, self, dim, {2});
  IndexUpdateDescriptor fill = upd(IndexUpdateMode::Fill, DType::F64, self, dim, {2});
  fill.value = 0;
  const IndexSelectDescriptor sd3 = sel(DType::F64, self, dim, {2});
  auto fwd_copy = [&](const std::vector<double>& x, const std::vector<double>& s) {
    IdxData t = ec;
    t.self = x;
    t.source = s;
    return dot(w_self, bt::idx_update(kCpu, copy, t, Lc, false).out);
  };
  IdxData gw{w_self, ec.index, {}};
  auto dself_c = bt::idx_update(kCpu, fill, gw, Lc, false);
  auto dsrc_c = bt::idx_select(kCpu, sd3, gw, Lc);
  ASSERT_TRUE(dself_c.st.is_ok() && dsrc_c.st.is_ok());
  expect_gradient(ec.self, dself_c.out, [&](const std::vector<double>& x) { return fwd_copy(x, ec.source); },
                  "index_copy dself");
  expect_gradient(ec.source, dsrc_c.out, [&](const std::vector<double>& s) { return fwd_copy(ec.self, s); },
                  "index_copy dsource");
}

}  // namespace
