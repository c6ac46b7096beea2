// NonzeroPlan / MaskedSelectPlan / MaskedScatterPlan on the CPU reference,
// and masked_fill as TernaryPlan Where:
//   * every descriptor and argument rule: its StatusCode and message;
//   * each plan against a naive model written here (a loop over coordinates):
//     every claimed dtype, ranks 0..3, odd sizes, strided and broadcast
//     (stride-0) views, capacities below / at / above the count, fill values,
//     zero-size problems; torch's nonzero test (-0.0 zero, NaN nonzero);
//   * masked_scatter's short source: InvalidProblem naming the first mask
//     position without a source element, nothing written;
//   * run twice bit-identical;
//   * the backward compositions against finite differences (f64).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/masked_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Layout;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();
constexpr auto& kTypes = bt::kMaskedTypes;

// ---- naive models -------------------------------------------------------------------------
bool is_nonzero(DType t, double v) { return is_floating_point(t) ? v != 0.0 : bt::round_to(t, v) != 0.0; }

// Element of `shape` at coordinates c of the broadcast shape b (torch's rules).
int64_t broadcast_index(const Dims& shape, const Dims& b, const Dims& c) {
  int64_t o = 0;
  for (int i = 0; i < shape.rank; ++i) {
    const int j = i + b.rank - shape.rank;
    o = o * shape[i] + (shape[i] == 1 ? 0 : c[j]);
  }
  return o;
}

struct NonzeroModel {
  std::vector<int64_t> out;
  int64_t count = 0;
};
NonzeroModel naive_nonzero(const NonzeroDescriptor& d, const std::vector<double>& x) {
  NonzeroModel m;
  const int r = d.shape.rank;
  std::vector<Dims> hits;
  for (int64_t p = 0; p < bt::numel(d.shape); ++p)
    if (is_nonzero(d.dtype, x[static_cast<size_t>(p)])) hits.push_back(bt::unravel(p, d.shape));
  m.count = static_cast<int64_t>(hits.size());
  for (int64_t k = 0; k < d.capacity; ++k)
    for (int j = 0; j < r; ++j) m.out.push_back(k < m.count ? hits[static_cast<size_t>(k)][j] : d.fill_value);
  return m;
}

Dims bshape(const Dims& a, const Dims& b) {
  const int r = std::max(a.rank, b.rank);
  Dims s = Dims::of_rank(r);
  for (int i = 0; i < r; ++i) {
    const int ja = i - (r - a.rank), jb = i - (r - b.rank);
    const int64_t ea = ja < 0 ? 1 : a[ja], eb = jb < 0 ? 1 : b[jb];
    s[i] = ea == 1 ? eb : ea;
  }
  return s;
}

std::vector<double> naive_select(const MaskedSelectDescriptor& d, const std::vector<double>& x,
                                 const std::vector<double>& mask, int64_t* count) {
  const Dims b = bshape(d.x_shape, d.mask_shape);
  std::vector<double> out;
  for (int64_t p = 0; p < bt::numel(b); ++p) {
    const Dims c = bt::unravel(p, b);
    if (mask[static_cast<size_t>(broadcast_index(d.mask_shape, b, c))] != 0)
      out.push_back(bt::round_to(d.dtype, x[static_cast<size_t>(broadcast_index(d.x_shape, b, c))]));
  }
  *count = static_cast<int64_t>(out.size());
  out.resize(static_cast<size_t>(d.capacity), d.fill_value);
  return out;
}

std::vector<double> naive_scatter(const MaskedScatterDescriptor& d, const std::vector<double>& self,
                                  const std::vector<double>& mask, const std::vector<double>& source) {
  std::vector<double> out(self.size());
  size_t k = 0;
  for (int64_t p = 0; p < bt::numel(d.self_shape); ++p) {
    const Dims c = bt::unravel(p, d.self_shape);
    const bool m = mask[static_cast<size_t>(broadcast_index(d.mask_shape, d.self_shape, c))] != 0;
    out[static_cast<size_t>(p)] = bt::round_to(d.dtype, m ? source[k++] : self[static_cast<size_t>(p)]);
  }
  return out;
}

bool same(const std::vector<double>& a, const std::vector<double>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!bt::same_value(a[i], b[i])) return false;
  return true;
}

// Storage elements outside the view keep the poison byte.
bool gaps_untouched(const std::vector<uint8_t>& raw, const Layout& L, size_t elem, uint8_t poison) {
  const std::vector<bool> c = bt::covered(L);
  for (size_t e = 0; e < c.size(); ++e)
    for (size_t b = 0; !c[e] && b < elem && e * elem + b < raw.size(); ++b)
      if (raw[e * elem + b] != poison) return false;
  return true;
}

Layout layout_of(int which, const Dims& shape) { return bt::masked_layout(which, shape); }

// ---- descriptor rules ---------------------------------------------------------------------
TEST(NonzeroCpu, DescriptorRules) {
  auto expect = [](const NonzeroDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(NonzeroPlan::select(kCpu, d).status(), code, "NonzeroPlan: " + what);
  };
  expect(bt::nonzero_desc(DType::C64, {3}, 3), StatusCode::Unsupported,
         "dtype c64 is not supported (bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64)");
  expect(bt::nonzero_desc(DType::F8E4M3, {3}, 3), StatusCode::Unsupported, "dtype f8e4m3 is not supported");
  expect(bt::nonzero_desc(DType::F32, {3, -1}, 3), StatusCode::InvalidProblem, "shape [3,-1] has a negative extent");
  expect(bt::nonzero_desc(DType::F32, {3}, -1), StatusCode::InvalidProblem, "capacity -1 is negative");
  expect(bt::nonzero_desc(DType::F32, {1, 1, 1, 1, 1, 1, 1, 1}, int64_t{1} << 61), StatusCode::InvalidProblem,
         "out's element count (capacity x columns)");
  auto p = NonzeroPlan::select(kCpu, bt::nonzero_desc(DType::I16, {4, 5}, 7, -1));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->out_shape(), (Dims{7, 2}));
  EXPECT_EQ(p->sku().op, "indexing.nonzero");
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_EQ(p->workspace_size(), 0u);
  auto s = NonzeroPlan::select(kCpu, bt::nonzero_desc(DType::Bool, {}, 2));
  ASSERT_TRUE(s.is_ok());
  EXPECT_EQ(s->out_shape(), (Dims{2, 0}));
}

TEST(MaskedSelectCpu, DescriptorRules) {
  auto expect = [](const MaskedSelectDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(MaskedSelectPlan::select(kCpu, d).status(), code, "MaskedSelectPlan: " + what);
  };
  expect(bt::masked_select_desc(DType::C128, {3}, {3}, 3), StatusCode::Unsupported, "dtype c128 is not supported");
  expect(bt::masked_select_desc(DType::F32, {3, 4}, {2, 1}, 3), StatusCode::InvalidProblem,
         "x_shape [3,4] and mask_shape [2,1] do not broadcast (axis 0 of the broadcast shape: 3 vs 2)");
  expect(bt::masked_select_desc(DType::F32, {3}, {-2}, 3), StatusCode::InvalidProblem, "mask_shape [-2]");
  expect(bt::masked_select_desc(DType::F32, {3}, {3}, -4), StatusCode::InvalidProblem, "capacity -4 is negative");
  expect(bt::masked_select_desc(DType::I32, {3}, {3}, 3, std::nan("")), StatusCode::InvalidProblem,
         "fill_value nan is not finite (dtype i32 is not a float)");
  expect(bt::masked_select_desc(DType::I64, {3}, {3}, 3, 1e19), StatusCode::InvalidProblem,
         "fill_value 1e+19 is outside the int64 range (dtype i64)");
  auto p = MaskedSelectPlan::select(kCpu, bt::masked_select_desc(DType::I32, {4, 1, 3}, {5, 1}, 9, -2.7));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->broadcast_shape(), (Dims{4, 5, 3}));
  EXPECT_EQ(p->out_shape(), (Dims{9}));
  EXPECT_EQ(p->descriptor().fill_value, -2.0) << "cast to the dtype: integers truncate";
  EXPECT_EQ(p->sku().op, "indexing.masked_select");
  auto h = MaskedSelectPlan::select(kCpu, bt::masked_select_desc(DType::BF16, {2}, {}, 1, 1.0 + 1.0 / 1024));
  ASSERT_TRUE(h.is_ok());
  EXPECT_EQ(h->descriptor().fill_value, 1.0) << "rounded to bf16";
  auto u = MaskedSelectPlan::select(kCpu, bt::masked_select_desc(DType::U8, {2}, {2}, 1, 300));
  ASSERT_TRUE(u.is_ok());
  EXPECT_EQ(u->descriptor().fill_value, 44.0) << "wrapped as a C++ cast";
}

TEST(MaskedScatterCpu, DescriptorRules) {
  auto expect = [](const MaskedScatterDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(MaskedScatterPlan::select(kCpu, d).status(), code, "MaskedScatterPlan: " + what);
  };
  expect(bt::masked_scatter_desc(DType::C64, {3}, {3}, {3}), StatusCode::Unsupported, "dtype c64 is not supported");
  expect(bt::masked_scatter_desc(DType::F32, {3}, {2, 3}, {3}), StatusCode::InvalidProblem,
         "mask_shape [2,3] has more axes than self_shape [3] (the mask broadcasts to self; self does not broadcast)");
  expect(bt::masked_scatter_desc(DType::F32, {1, 3}, {2, 3}, {3}), StatusCode::InvalidProblem,
         "mask_shape [2,3] does not broadcast to self_shape [1,3] (axis 0: 2 vs 1; self does not broadcast)");
  expect(bt::masked_scatter_desc(DType::F32, {4, 3}, {2}, {3}), StatusCode::InvalidProblem,
         "mask_shape [2] does not broadcast to self_shape [4,3] (axis 1: 2 vs 3");
  expect(bt::masked_scatter_desc(DType::F32, {3}, {3}, {-3}), StatusCode::InvalidProblem, "source_shape [-3]");
  auto p = MaskedScatterPlan::select(kCpu, bt::masked_scatter_desc(DType::F16, {4, 3}, {3}, {2, 7}));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->out_shape(), (Dims{4, 3}));
  EXPECT_EQ(p->sku().op, "indexing.masked_scatter");
  EXPECT_TRUE(p->check_indices(kCpu, {}).is_ok());
}

// ---- argument rules -------------------------------------------------------------------------
TEST(NonzeroCpu, ArgumentRules) {
  auto plan = NonzeroPlan::select(kCpu, bt::nonzero_desc(DType::F32, {4}, 4)).value();
  std::vector<float> x(4, 1.f);
  std::vector<int64_t> out(4, 0), count(1, 0);
  NonzeroArgs a;
  a.x = TensorRef::contiguous(x.data(), Device::cpu(), {4}, 4);
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4, 1}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "NonzeroPlan: count is missing");
  a.count = TensorMut::contiguous(count.data(), Device::cpu(), {}, 1);
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  NonzeroDescriptor no_count = bt::nonzero_desc(DType::F32, {4}, 4);
  no_count.has_count = false;  // phase two: the size is known
  BT_EXPECT_STATUS(NonzeroPlan::select(kCpu, no_count).value().can_implement(a), StatusCode::InvalidProblem,
                   "NonzeroPlan: count is given but descriptor.has_count is false");
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "NonzeroPlan: out shape [4] must be [4,1]");
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4, 1}, 4);
  a.count = TensorMut::contiguous(out.data() + 3, Device::cpu(), {}, 1);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "NonzeroPlan: ");
  a.count = TensorMut::contiguous(reinterpret_cast<int32_t*>(count.data()), Device::cpu(), {}, 1);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "NonzeroPlan: count");
}

TEST(MaskedSelectCpu, ArgumentRules) {
  auto plan = MaskedSelectPlan::select(kCpu, bt::masked_select_desc(DType::F32, {4}, {4}, 4)).value();
  std::vector<float> x(4, 1.f), out(4);
  std::vector<uint8_t> mask(4, 1);
  std::vector<int64_t> count(1, 0);
  MaskedSelectArgs a;
  a.x = TensorRef::contiguous(x.data(), Device::cpu(), {4}, 4);
  a.mask = TensorRef::contiguous(reinterpret_cast<bool*>(mask.data()), Device::cpu(), {4}, 4);
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "MaskedSelectPlan: count is missing");
  MaskedSelectDescriptor no_count = bt::masked_select_desc(DType::F32, {4}, {4}, 4);
  no_count.has_count = false;
  auto plan2 = MaskedSelectPlan::select(kCpu, no_count).value();
  EXPECT_TRUE(plan2.can_implement(a).is_ok()) << plan2.can_implement(a).to_string();
  a.count = TensorMut::contiguous(count.data(), Device::cpu(), {}, 1);
  BT_EXPECT_STATUS(plan2.can_implement(a), StatusCode::InvalidProblem,
                   "MaskedSelectPlan: count is given but descriptor.has_count is false");
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.mask = TensorRef::contiguous(x.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "MaskedSelectPlan: mask");
  a.mask = TensorRef::contiguous(reinterpret_cast<bool*>(mask.data()), Device::cpu(), {4}, 4);
  a.out = TensorMut::contiguous(x.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "MaskedSelectPlan: out");
}

TEST(MaskedScatterCpu, ArgumentRules) {
  auto plan = MaskedScatterPlan::select(kCpu, bt::masked_scatter_desc(DType::F32, {4}, {4}, {2})).value();
  std::vector<float> self(8, 1.f), src(2, 2.f), out(4);
  std::vector<uint8_t> mask(4, 0);
  MaskedScatterArgs a;
  a.self = TensorRef::contiguous(self.data(), Device::cpu(), {4}, 4);
  a.mask = TensorRef::contiguous(reinterpret_cast<bool*>(mask.data()), Device::cpu(), {4}, 4);
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "MaskedScatterPlan: source is missing");
  a.source = TensorRef::contiguous(src.data(), Device::cpu(), {2}, 2);
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.out = TensorMut::contiguous(self.data(), Device::cpu(), {4}, 4);  // in place
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.out = TensorMut::contiguous(self.data() + 2, Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "MaskedScatterPlan: out partially overlaps self");
  a.out = TensorMut::contiguous(src.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "MaskedScatterPlan: out");
}

// ---- nonzero against the model ----------------------------------------------------------------
TEST(NonzeroCpu, MatchesModel) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  const std::vector<Dims> shapes = {{}, {7}, {3, 5}, {2, 3, 4}, {5, 1, 3}, {0, 3}, {4, 0, 2}};
  int iter = 0;
  for (DType t : kTypes) {
    for (const Dims& s : shapes) {
      const int64_t n = bt::numel(s);
      const std::vector<double> x = bt::masked_values(t, n, rng);
      for (int64_t m : {int64_t{0}, n / 2, n, n + 3}) {
        const NonzeroDescriptor d = bt::nonzero_desc(t, s, m, iter % 2 ? -1 : 0);
        const Layout Lx = layout_of(iter, s), Lo = layout_of(iter + 1, {m, s.rank});
        ++iter;
        const bt::MaskedResult r = bt::run_nonzero(kCpu, d, x, Lx, Lo);
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
        const NonzeroModel ref = naive_nonzero(d, x);
        EXPECT_EQ(r.count, ref.count) << dtype_name(t) << " " << s.to_string();
        EXPECT_EQ(r.out_i, ref.out) << dtype_name(t) << " " << s.to_string() << " m " << m << " "
                                    << bt::describe(Lx) << " " << bt::describe(Lo);
        EXPECT_TRUE(gaps_untouched(r.raw, Lo, 8, 0xff)) << bt::describe(Lo);
      }
    }
  }
}

TEST(NonzeroCpu, TorchZeroTest) {
  // -0.0 is zero; NaN, inf and the smallest subnormal are nonzero.
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    const std::vector<double> x = {-0.0, 0.0, bt::kNaN, -bt::kInf, 1e-300, -1.0};
    const bt::MaskedResult r =
        bt::run_nonzero(kCpu, bt::nonzero_desc(t, {6}, 6, -7), x, bt::contiguous({6}), bt::contiguous({6, 1}));
    ASSERT_TRUE(r.st.is_ok());
    const bool tiny = bt::round_to(t, 1e-300) != 0.0;  // only f64 holds 1e-300
    std::vector<int64_t> want = {2, 3};
    if (tiny) want.push_back(4);
    want.push_back(5);
    EXPECT_EQ(r.count, static_cast<int64_t>(want.size())) << dtype_name(t);
    while (want.size() < 6) want.push_back(-7);
    EXPECT_EQ(r.out_i, want) << dtype_name(t);
  }
  // Rank 0: out [m, 0], count 0 or 1.
  for (double v : {0.0, 3.0}) {
    const bt::MaskedResult r =
        bt::run_nonzero(kCpu, bt::nonzero_desc(DType::I32, {}, 1), {v}, bt::contiguous({}), bt::contiguous({1, 0}));
    ASSERT_TRUE(r.st.is_ok());
    EXPECT_EQ(r.count, v != 0 ? 1 : 0);
  }
}

TEST(NonzeroCpu, TwoPhaseExactSize) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  const Dims s{6, 7};
  const std::vector<double> x = bt::masked_values(DType::F32, 42, rng);
  const bt::MaskedResult probe = bt::run_nonzero(kCpu, bt::nonzero_desc(DType::F32, s, 0), x, bt::contiguous(s),
                                                 bt::contiguous({0, 2}));
  ASSERT_TRUE(probe.st.is_ok());
  const NonzeroDescriptor exact = bt::nonzero_desc(DType::F32, s, probe.count);
  const bt::MaskedResult r = bt::run_nonzero(kCpu, exact, x, bt::contiguous(s), bt::contiguous({probe.count, 2}));
  ASSERT_TRUE(r.st.is_ok());
  EXPECT_EQ(r.count, probe.count);
  EXPECT_EQ(r.out_i, naive_nonzero(exact, x).out);
}

// A rank-0 x writes out [m, 0]: no element, whatever m is. The fuzz found the
// reference looping over m empty rows (m = 2^62 never returned).
TEST(NonzeroCpu, RankZeroHugeCapacityReturnsAtOnce) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  const std::vector<double> x = {3.0};
  const int64_t m = int64_t{1} << 62;
  const bt::MaskedResult r =
      bt::run_nonzero(kCpu, bt::nonzero_desc(DType::F32, Dims{}, m), x, bt::contiguous(Dims{}), bt::contiguous({m, 0}));
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.count, 1);
  EXPECT_TRUE(r.out_i.empty());
}

// ---- masked_select against the model ---------------------------------------------------------
TEST(MaskedSelectCpu, MatchesModel) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  struct Case {
    Dims x, mask;
  };
  const std::vector<Case> cases = {{{7}, {7}},       {{3, 5}, {3, 5}},    {{3, 5}, {5}},    {{3, 1}, {1, 4}},
                                   {{}, {2, 3}},     {{2, 3, 4}, {}},     {{2, 1, 4}, {3, 1}}, {{0, 3}, {3}},
                                   {{4, 3}, {0, 4, 1}}};
  int iter = 0;
  for (DType t : kTypes) {
    for (const Case& c : cases) {
      const Dims b = bshape(c.x, c.mask);
      const int64_t nb = bt::numel(b);
      const std::vector<double> x = bt::masked_values(t, bt::numel(c.x), rng, 0.2);
      const std::vector<double> mask = bt::random_mask(bt::numel(c.mask), rng);
      for (int64_t m : {int64_t{0}, nb / 3, nb, nb + 2}) {
        const double fill = is_floating_point(t) ? -1.5 : (t == DType::Bool ? 1.0 : 5.0);
        const MaskedSelectDescriptor d = bt::masked_select_desc(t, c.x, c.mask, m, fill);
        const bt::SelectLayouts L{layout_of(iter, c.x), layout_of(iter + 2, c.mask), layout_of(iter + 3, {m})};
        const bool with_count = iter % 3 != 0;
        ++iter;
        const bt::MaskedResult r = bt::run_masked_select(kCpu, d, x, mask, L, with_count);
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
        int64_t count = 0;
        const std::vector<double> ref = naive_select(d, x, mask, &count);
        if (with_count) EXPECT_EQ(r.count, count);
        EXPECT_TRUE(same(r.out, ref)) << dtype_name(t) << " x " << c.x.to_string() << " mask " << c.mask.to_string()
                                      << " m " << m << ": " << bt::describe_mismatch(r.out, ref);
      }
    }
  }
}

TEST(MaskedSelectCpu, BroadcastViewsAndBits) {
  // Stride-0 views of x and mask; the elements' bits move unchanged (-0.0, NaN payload).
  const Dims s{3, 4};
  const std::vector<double> row = {-0.0, bt::kNaN, 2.0, 3.0}, rows_mask = {1, 0, 1};
  std::vector<double> x(12), mask(12);  // logical values: what the stride-0 views show
  for (size_t p = 0; p < 12; ++p) x[p] = row[p % 4], mask[p] = rows_mask[p / 4];
  const MaskedSelectDescriptor d = bt::masked_select_desc(DType::F32, s, s, 12, 9.0);
  const bt::SelectLayouts L{bt::broadcast(s, 0), bt::broadcast(s, 1), bt::contiguous({12})};
  const bt::MaskedResult r = bt::run_masked_select(kCpu, d, x, mask, L);
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.count, 8);
  const std::vector<double> want = {-0.0, bt::kNaN, 2, 3, -0.0, bt::kNaN, 2, 3, 9, 9, 9, 9};
  EXPECT_TRUE(same(r.out, want)) << bt::describe_mismatch(r.out, want);
  float first = 1.f;
  std::memcpy(&first, r.raw.data(), sizeof(float));
  EXPECT_TRUE(std::signbit(first)) << "-0.0 keeps its sign bit";
}

// ---- masked_scatter against the model ---------------------------------------------------------
TEST(MaskedScatterCpu, MatchesModel) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  struct Case {
    Dims self, mask, source;
  };
  const std::vector<Case> cases = {{{7}, {7}, {7}},          {{3, 5}, {3, 5}, {4, 4}},  {{3, 5}, {5}, {20}},
                                   {{2, 3, 4}, {3, 1}, {30}}, {{}, {}, {2}},           {{4, 3}, {1, 3}, {2, 3, 2}},
                                   {{3, 4}, {}, {12}},        {{0, 3}, {3}, {0}}};
  int iter = 0;
  for (DType t : kTypes) {
    for (const Case& c : cases) {
      const std::vector<double> self = bt::masked_values(t, bt::numel(c.self), rng, 0.1);
      const std::vector<double> source = bt::masked_values(t, bt::numel(c.source), rng, 0.1);
      const std::vector<double> mask = bt::random_mask(bt::numel(c.mask), rng);
      const MaskedScatterDescriptor d = bt::masked_scatter_desc(t, c.self, c.mask, c.source);
      for (bool in_place : {false, true}) {
        const bt::ScatterMaskLayouts L{layout_of(iter, c.self), layout_of(iter + 1, c.mask),
                                       layout_of(iter + 2, c.source), layout_of(iter + 3, c.self)};
        ++iter;
        const bt::MaskedResult r = bt::run_masked_scatter(kCpu, d, self, mask, source, L, in_place);
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string() << " " << dtype_name(t) << " " << c.self.to_string();
        EXPECT_TRUE(r.check.is_ok());
        const std::vector<double> ref = naive_scatter(d, self, mask, source);
        EXPECT_TRUE(same(r.out, ref)) << dtype_name(t) << " self " << c.self.to_string() << " mask "
                                      << c.mask.to_string() << (in_place ? " in place" : "") << ": "
                                      << bt::describe_mismatch(r.out, ref);
      }
    }
  }
}

TEST(MaskedScatterCpu, ShortSourceIsAnErrorBeforeWriting) {
  const Dims s{3, 4};
  const std::vector<double> self(12, 7.0), source = {1, 2, 3};
  std::vector<double> mask(12, 0.0);
  for (int p : {1, 4, 5, 9, 11}) mask[static_cast<size_t>(p)] = 1.0;
  const MaskedScatterDescriptor d = bt::masked_scatter_desc(DType::F32, s, s, {3});
  const bt::ScatterMaskLayouts L{bt::contiguous(s), bt::contiguous(s), bt::contiguous({3}), bt::contiguous(s)};
  for (bool in_place : {false, true}) {
    const bt::MaskedResult r = bt::run_masked_scatter(kCpu, d, self, mask, source, L, in_place, 0x00);
    BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem,
                     "MaskedScatterPlan: mask position [2,1] (position 9) is true number 4 but source has only 3 "
                     "elements");
    EXPECT_TRUE(same(r.out, in_place ? self : std::vector<double>(12, 0.0))) << "nothing written";
  }
  // Extra source elements are fine (torch uses the first ones).
  const MaskedScatterDescriptor big = bt::masked_scatter_desc(DType::F32, s, s, {9});
  const std::vector<double> src9 = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  const bt::MaskedResult ok = bt::run_masked_scatter(
      kCpu, big, self, mask, src9, {bt::contiguous(s), bt::contiguous(s), bt::contiguous({9}), bt::contiguous(s)});
  ASSERT_TRUE(ok.st.is_ok());
  EXPECT_TRUE(same(ok.out, naive_scatter(big, self, mask, src9)));
}

TEST(MaskedCpu, RunTwiceBitIdentical) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  const Dims s{17, 9};
  const std::vector<double> x = bt::masked_values(DType::BF16, 153, rng);
  const std::vector<double> mask = bt::random_mask(153, rng);
  const auto n1 = bt::run_nonzero(kCpu, bt::nonzero_desc(DType::BF16, s, 153), x, bt::padded(s), bt::contiguous({153, 2}));
  const auto n2 = bt::run_nonzero(kCpu, bt::nonzero_desc(DType::BF16, s, 153), x, bt::padded(s), bt::contiguous({153, 2}));
  EXPECT_EQ(n1.raw, n2.raw);
  const bt::SelectLayouts L{bt::transposed(s), bt::padded(s), bt::contiguous({153})};
  const auto s1 = bt::run_masked_select(kCpu, bt::masked_select_desc(DType::BF16, s, s, 153), x, mask, L);
  const auto s2 = bt::run_masked_select(kCpu, bt::masked_select_desc(DType::BF16, s, s, 153), x, mask, L);
  EXPECT_EQ(s1.raw, s2.raw);
}

// ---- masked_fill = TernaryPlan Where(mask, value, x) ---------------------------------------------
// value: a Scalar operand, or torch's 0-dim tensor value (a rank-0 tensor
// operand of x's dtype); the mask broadcasts.
std::vector<double> run_masked_fill(DType t, const Dims& xs, const Dims& ms, const std::vector<double>& x,
                                    const std::vector<double>& mask, double value, bool zero_dim_tensor) {
  TernaryDescriptor d;
  d.op = TernaryOp::Where;
  d.a = ElementwiseOperand::tensor(DType::Bool, ms);
  const bool integral = !is_floating_point(t);
  d.b = zero_dim_tensor ? ElementwiseOperand::tensor(t, {})
                        : ElementwiseOperand::scalar(integral ? DType::I64 : DType::F64);
  d.c = ElementwiseOperand::tensor(t, xs);
  d.out_dtype = t;  // torch's masked_fill keeps x's dtype (the value is cast to it)
  auto plan = TernaryPlan::select(kCpu, d);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan) return {};
  EXPECT_EQ(plan->out_dtype(), t);
  bt::HostBuffer X = bt::host_from(t, x), M = bt::host_from(DType::Bool, mask), V = bt::host_from(t, {value});
  bt::HostBuffer O(t, bt::numel(plan->output_shape()));
  TernaryArgs a;
  a.a = bt::view(M, bt::contiguous(ms));
  if (zero_dim_tensor) a.b = bt::view(V, bt::contiguous({}));
  else a.b_value = integral ? Scalar(static_cast<long long>(value)) : Scalar(value);
  a.c = bt::view(X, bt::contiguous(xs));
  a.out = bt::view_mut(O, bt::contiguous(plan->output_shape()));
  const Status st = plan->run(kCpu, {}, a);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return bt::all_values(O);
}

TEST(MaskedFillCpu, WhereComposition) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::BF16, DType::I32}) {
    const Dims xs{4, 5}, ms{5};
    const std::vector<double> x = bt::masked_values(t, 20, rng, 0.1);
    const std::vector<double> mask = bt::random_mask(5, rng);
    for (bool zero_dim : {false, true}) {
      const std::vector<double> got = run_masked_fill(t, xs, ms, x, mask, -3.0, zero_dim);
      std::vector<double> want(20);
      for (int64_t p = 0; p < 20; ++p) want[static_cast<size_t>(p)] = mask[static_cast<size_t>(p % 5)] != 0 ? -3.0 : bt::round_to(t, x[static_cast<size_t>(p)]);
      EXPECT_TRUE(same(got, want)) << dtype_name(t) << (zero_dim ? " 0-dim value" : " scalar value") << ": "
                                   << bt::describe_mismatch(got, want);
    }
  }
}

// ---- backward compositions against finite differences (f64) -----------------------------------
// L = sum(w * f(...)); each gradient is the composition of plans the header
// names, compared with central differences (exact for these linear maps up to
// rounding).
constexpr double kH = 1e-3, kTol = 1e-8;

std::vector<double> select_f64(const Dims& s, const std::vector<double>& x, const std::vector<double>& mask, int64_t m,
                               int64_t* count = nullptr) {
  const bt::MaskedResult r = bt::run_masked_select(kCpu, bt::masked_select_desc(DType::F64, s, s, m), x, mask,
                                                   {bt::contiguous(s), bt::contiguous(s), bt::contiguous({m})});
  EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
  if (count) *count = r.count;
  return r.out;
}

std::vector<double> scatter_f64(const Dims& s, const std::vector<double>& self, const std::vector<double>& mask,
                                const std::vector<double>& source) {
  const Dims src{static_cast<int64_t>(source.size())};
  const bt::MaskedResult r =
      bt::run_masked_scatter(kCpu, bt::masked_scatter_desc(DType::F64, s, s, src), self, mask, source,
                             {bt::contiguous(s), bt::contiguous(s), bt::contiguous(src), bt::contiguous(s)});
  EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
  return r.out;
}

double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

TEST(MaskedBackwardCpu, MaskedSelectFiniteDifferences) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  const Dims s{3, 4};
  const std::vector<double> x = bt::random_values(DType::F64, 12, rng), mask = bt::random_mask(12, rng);
  int64_t count = 0;
  (void)select_f64(s, x, mask, 12, &count);
  const std::vector<double> w = bt::random_values(DType::F64, count, rng);
  // dx = masked_scatter(zeros, mask, dout[:count]).
  const std::vector<double> dx = scatter_f64(s, std::vector<double>(12, 0.0), mask, w);
  for (size_t i = 0; i < 12; ++i) {
    std::vector<double> xp = x, xm = x;
    xp[i] += kH, xm[i] -= kH;
    const double fd = (dot(w, select_f64(s, xp, mask, count)) - dot(w, select_f64(s, xm, mask, count))) / (2 * kH);
    EXPECT_NEAR(dx[i], fd, kTol) << "element " << i;
  }
}

TEST(MaskedBackwardCpu, MaskedScatterFiniteDifferences) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  const Dims s{3, 4};
  const int64_t ns = 14;
  const std::vector<double> self = bt::random_values(DType::F64, 12, rng), mask = bt::random_mask(12, rng);
  const std::vector<double> source = bt::random_values(DType::F64, ns, rng), w = bt::random_values(DType::F64, 12, rng);
  // dself = where(mask, 0, dout) (TernaryPlan Where); dsource = masked_select(dout, mask), capacity numel(source), fill 0.
  const std::vector<double> dself = run_masked_fill(DType::F64, s, s, w, mask, 0.0, false);
  const std::vector<double> dsource = select_f64(s, w, mask, ns);
  auto loss = [&](const std::vector<double>& sf, const std::vector<double>& src) {
    return dot(w, scatter_f64(s, sf, mask, src));
  };
  for (size_t i = 0; i < 12; ++i) {
    std::vector<double> p = self, m = self;
    p[i] += kH, m[i] -= kH;
    EXPECT_NEAR(dself[i], (loss(p, source) - loss(m, source)) / (2 * kH), kTol) << "self element " << i;
  }
  for (size_t i = 0; i < static_cast<size_t>(ns); ++i) {
    std::vector<double> p = source, m = source;
    p[i] += kH, m[i] -= kH;
    EXPECT_NEAR(dsource[i], (loss(self, p) - loss(self, m)) / (2 * kH), kTol) << "source element " << i;
  }
}

TEST(MaskedBackwardCpu, MaskedFillFiniteDifferences) {
  Rng rng = bt::make_rng(bt::fresh_seed());
  const Dims s{2, 5};
  const std::vector<double> x = bt::random_values(DType::F64, 10, rng), mask = bt::random_mask(5, rng);
  const std::vector<double> w = bt::random_values(DType::F64, 10, rng);
  std::vector<double> wide_mask(10);
  for (size_t i = 0; i < 10; ++i) wide_mask[i] = mask[i % 5];
  const std::vector<double> dx = run_masked_fill(DType::F64, s, s, w, wide_mask, 0.0, false);  // where(mask, 0, dy)
  for (size_t i = 0; i < 10; ++i) {
    std::vector<double> p = x, m = x;
    p[i] += kH, m[i] -= kH;
    const double fd = (dot(w, run_masked_fill(DType::F64, s, {5}, p, mask, 2.5, false)) -
                       dot(w, run_masked_fill(DType::F64, s, {5}, m, mask, 2.5, false))) / (2 * kH);
    EXPECT_NEAR(dx[i], fd, kTol) << "element " << i;
  }
}

}  // namespace

// Contract finding N1: without a count and with an empty out (capacity 0, or a
// rank-0 x whose out is [capacity, 0]) nothing is written: select() names the
// plan "empty", as sku_for() does for those views.
TEST(NonzeroCpu, NothingToWriteIsEmpty) {
  for (const Dims& shape : {Dims{}, Dims{3, 4}}) {
    NonzeroDescriptor d;
    d.dtype = DType::F32;
    d.shape = shape;
    d.capacity = shape.rank == 0 ? 2 : 0;
    d.has_count = false;
    auto plan = NonzeroPlan::select(Stream::cpu(), d);
    ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
    EXPECT_STREQ(plan->sku().variant.c_str(), "empty");
    std::vector<float> x(static_cast<size_t>(std::max<int64_t>(1, shape_numel(shape))), 1.0f);
    int64_t out_dummy = 0;
    NonzeroArgs a;
    a.x = TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), shape);
    a.out = TensorMut::contiguous(&out_dummy, DType::I64, Device::cpu(), {d.capacity, shape.rank}, 1);
    auto sku = plan->sku_for(Stream::cpu(), Workspace::none(), a);
    ASSERT_TRUE(sku.is_ok()) << sku.status().to_string();
    EXPECT_EQ(sku->variant, plan->sku().variant);
    EXPECT_TRUE(plan->run(Stream::cpu(), Workspace::none(), a).is_ok());
  }
  MaskedSelectDescriptor m;
  m.dtype = DType::F32;
  m.x_shape = {5};
  m.mask_shape = {5};
  m.capacity = 0;
  m.has_count = false;
  auto sel = MaskedSelectPlan::select(Stream::cpu(), m);
  ASSERT_TRUE(sel.is_ok());
  EXPECT_STREQ(sel->sku().variant.c_str(), "empty");
}

