// TakePlan / PutPlan / OneHotPlan on the CPU reference:
//   * every descriptor and argument rule: its StatusCode and message;
//   * bad indices / classes: InvalidProblem naming the first bad position,
//     nothing written;
//   * take and put_ against the naive models bit for bit: every dtype (raw
//     bytes), ranks 0..3, negative (wrapped) indices, heavy duplicates, in
//     place, strided and broadcast views (gaps untouched), zero-size problems;
//   * put_ accumulate in the documented accumulator (f32 for 16-bit / f32, f64,
//     wrapping int64 for integers), last-wins without accumulate;
//   * one_hot for many out dtypes, strided views;
//   * the backward compositions against finite differences (f64).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/take_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Bytes;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();
using bt::flat_indices;
constexpr auto& kAll = bt::kAllDtypes;
constexpr auto& kAccumulate = bt::kAccumulateDtypes;
Bytes values_for(DType t, int64_t n, Rng& rng) { return bt::values_for(t, n, rng, 1000); }

// ---- TakePlan ---------------------------------------------------------------------------
TEST(TakeCpu, DescriptorRules) {
  const TakeDescriptor ok = bt::take_desc(DType::F32, DType::I64, {4, 5}, {3, 2});
  auto expect = [](const TakeDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(TakePlan::select(kCpu, d).status(), code, "TakePlan: " + what);
  };
  TakeDescriptor d = ok;
  d.dtype = static_cast<DType>(77);
  expect(d, StatusCode::Unsupported, "dtype 77 is not a dtype");
  d = ok, d.index_dtype = DType::F32;
  expect(d, StatusCode::Unsupported, "index_dtype f32 is not supported (i32, i64)");
  d = ok, d.x_shape = Dims{2, -1};
  expect(d, StatusCode::InvalidProblem, "x_shape");
  d = ok, d.index_shape = Dims{-3};
  expect(d, StatusCode::InvalidProblem, "index_shape");
  auto p = TakePlan::select(kCpu, bt::take_desc(DType::Bool, DType::I32, {}, {2, 3, 1}));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->out_shape(), (Dims{2, 3, 1}));
  EXPECT_EQ(p->sku().op, "indexing.take");
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_EQ(p->workspace_size(), 0u);
}

TEST(TakeCpu, ArgumentRules) {
  auto plan = TakePlan::select(kCpu, bt::take_desc(DType::F32, DType::I64, {4}, {2})).value();
  std::vector<float> x(8, 1.f), out(4, 0.f);
  std::vector<int64_t> idx = {0, 3};
  TakeArgs a{TensorRef::contiguous(x.data(), Device::cpu(), {4}, 4),
             TensorRef::contiguous(idx.data(), Device::cpu(), {2}, 2),
             TensorMut::contiguous(x.data() + 1, Device::cpu(), {2}, 2)};
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "TakePlan: out overlaps x");
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {2}, 2);
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {3}, 3);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "TakePlan: out shape [3] must be [2]");
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {2}, 2);
  a.index = TensorRef::contiguous(out.data() + 2, Device::cpu(), {2}, 2);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "TakePlan: index dtype f32 must be i64");
  EXPECT_EQ(TakePlan().run(kCpu, Workspace::none(), {}).code(), StatusCode::InvalidProblem);
  EXPECT_TRUE(plan.check_indices(kCpu, Workspace::none()).is_ok());
}

TEST(TakeCpu, EveryDtypeMatchesNaiveModel) {
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims x, index;
  };
  const Case cases[] = {{{7}, {11}}, {{3, 4, 5}, {2, 3}}, {{}, {4}}, {{5, 2}, {}}, {{2, 1, 3}, {3, 2, 2}}};
  for (const DType t : kAll)
    for (const DType it : {DType::I32, DType::I64})
      for (const Case& c : cases) {
        const TakeDescriptor d = bt::take_desc(t, it, c.x, c.index);
        const Bytes x = bt::random_bytes(t, bt::numel(c.x), rng);
        const auto idx = flat_indices(bt::numel(c.index), bt::numel(c.x), rng);
        const auto r = bt::run_take(kCpu, d, x, idx, bt::take_contiguous(d));
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
        EXPECT_EQ(r.out, bt::naive_take(d, x, idx)) << dtype_name(t) << " x " << c.x.to_string();
      }
}

// x of any strides is read as its row-major flattening, whatever its memory order.
TEST(TakeCpu, StridedAndBroadcastViews) {
  Rng rng(bt::fresh_seed());
  const TakeDescriptor d = bt::take_desc(DType::BF16, DType::I32, {5, 6}, {4, 3});
  const bt::Layout xs[] = {bt::transposed({5, 6}), bt::broadcast({5, 6}, 0), bt::padded({5, 6}, 2)};
  const bt::Layout is[] = {bt::broadcast({4, 3}, 0), bt::every_other({4, 3}), bt::transposed({4, 3})};
  const bt::Layout os[] = {bt::padded({4, 3}, 3), bt::transposed({4, 3}), bt::every_other({4, 3})};
  for (int k = 0; k < 3; ++k) {
    const Bytes x = bt::held(xs[k], d.dtype, bt::random_bytes(d.dtype, 30, rng));
    std::vector<int64_t> idx = flat_indices(12, 30, rng);
    if (k == 0)  // a broadcast index holds one row
      for (size_t i = 3; i < idx.size(); ++i) idx[i] = idx[i % 3];
    const auto r = bt::run_take(kCpu, d, x, idx, {xs[k], is[k], os[k]});
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.out, bt::naive_take(d, x, idx)) << bt::describe(xs[k]);
    const auto cov = bt::covered(os[k]);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i]) EXPECT_EQ(r.raw[2 * i], 0xff) << "gap element " << i << " written";
  }
}

TEST(TakeCpu, ZeroSizeAndBadIndices) {
  Rng rng(bt::fresh_seed());
  const TakeDescriptor e = bt::take_desc(DType::F32, DType::I64, {3, 4}, {0, 5});
  EXPECT_EQ(TakePlan::select(kCpu, e).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_take(kCpu, e, bt::random_bytes(DType::F32, 12, rng), {}, bt::take_contiguous(e)).st.is_ok());
  // An empty x has no valid index (torch: "tried to take from an empty tensor").
  const TakeDescriptor z = bt::take_desc(DType::F32, DType::I64, {2, 0}, {1});
  BT_EXPECT_STATUS(bt::run_take(kCpu, z, {}, {0}, bt::take_contiguous(z)).st, StatusCode::InvalidProblem,
                   "TakePlan: index element [0] (position 0) is 0, outside [0, 0) (x has 0 elements");
  for (const DType it : {DType::I32, DType::I64})
    for (const int64_t bad : {int64_t{12}, int64_t{-13}, int64_t{1000}}) {
      const TakeDescriptor d = bt::take_desc(DType::F16, it, {3, 4}, {2, 3});
      std::vector<int64_t> idx = flat_indices(6, 12, rng);
      idx[4] = bad;  // [1,1]
      idx[5] = 99;   // a later bad one is not the one named
      const auto r = bt::run_take(kCpu, d, bt::random_bytes(DType::F16, 12, rng), idx, bt::take_contiguous(d));
      BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem,
                       "TakePlan: index element [1,1] (position 4) is " + std::to_string(bad) +
                           ", outside [-12, 12) (x has 12 elements; the first bad index)");
      for (uint8_t b : r.raw) EXPECT_EQ(b, 0xff) << "out written although the call failed";
    }
}

// ---- PutPlan ----------------------------------------------------------------------------
TEST(PutCpu, DescriptorRules) {
  const PutDescriptor ok = bt::put_desc(DType::F32, DType::I64, {4, 5}, {3, 2}, {6}, true);
  auto expect = [](const PutDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(PutPlan::select(kCpu, d).status(), code, "PutPlan: " + what);
  };
  PutDescriptor d = ok;
  d.dtype = DType::Bool;
  expect(d, StatusCode::Unsupported, "dtype bool is not supported with accumulate (f32, f64, f16, bf16, i32, i64)");
  d = ok, d.dtype = static_cast<DType>(99), d.accumulate = false;
  expect(d, StatusCode::Unsupported, "dtype 99 is not a dtype");
  d = ok, d.index_dtype = DType::U8;
  expect(d, StatusCode::Unsupported, "index_dtype u8 is not supported (i32, i64)");
  d = ok, d.source_shape = Dims{7};
  expect(d, StatusCode::InvalidProblem,
         "source_shape [7] has 7 elements, index_shape [3,2] has 6 (they must have the same number)");
  d = ok, d.self_shape = Dims{-1};
  expect(d, StatusCode::InvalidProblem, "self_shape");
  d = ok, d.dtype = DType::C64, d.accumulate = false, d.source_shape = Dims{2, 3};  // any dtype without accumulate
  auto p = PutPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->sku().op, "indexing.put");
  EXPECT_EQ(p->out_shape(), (Dims{4, 5}));
  EXPECT_EQ(PutPlan::select(kCpu, ok).value().sku().op, "indexing.put_accumulate");
}

TEST(PutCpu, ArgumentRules) {
  auto plan = PutPlan::select(kCpu, bt::put_desc(DType::F32, DType::I64, {4}, {2}, {2}, false)).value();
  std::vector<float> self(8, 1.f), src(2, 1.f), out(4, 0.f);
  std::vector<int64_t> idx = {0, 3};
  PutArgs a;
  a.self = TensorRef::contiguous(self.data(), Device::cpu(), {4}, 4);
  a.index = TensorRef::contiguous(idx.data(), Device::cpu(), {2}, 2);
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "PutPlan: source");
  a.source = TensorRef::contiguous(src.data(), Device::cpu(), {2}, 2);
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.out = TensorMut::contiguous(self.data(), Device::cpu(), {4}, 4);  // in place
  EXPECT_TRUE(plan.can_implement(a).is_ok()) << plan.can_implement(a).to_string();
  a.out = TensorMut::contiguous(self.data() + 2, Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "PutPlan: out partially overlaps self");
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  a.source = TensorRef::contiguous(out.data() + 1, Device::cpu(), {2}, 2);
  BT_EXPECT_STATUS(plan.can_implement(a), StatusCode::InvalidProblem, "PutPlan: out overlaps source");
}

void expect_put(const PutDescriptor& d, const Bytes& self, const std::vector<int64_t>& idx, const Bytes& src,
                const bt::PutLayouts& L, const std::string& what) {
  const Bytes want = bt::naive_put(d, self, idx, src);
  for (const bool in_place : {false, true}) {
    const auto r = bt::run_put(kCpu, d, self, idx, src, L, in_place);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string() << " " << what;
    EXPECT_EQ(r.out, want) << what << (in_place ? " in place" : "");
    if (!in_place) {
      const auto cov = bt::covered(L.out);
      const size_t es = bt::esize(d.dtype);
      for (size_t i = 0; i < cov.size(); ++i)
        if (!cov[i]) EXPECT_EQ(r.raw[es * i], 0xff) << "gap element " << i << " written: " << what;
    }
  }
}

TEST(PutCpu, EveryDtypeMatchesNaiveModel) {
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims self, index, source;
  };
  const Case cases[] = {{{7}, {11}, {11}}, {{3, 4, 5}, {2, 3}, {6}}, {{}, {4}, {2, 2}}, {{5, 2}, {}, {1}},
                        {{2, 3}, {40}, {5, 8}}};
  for (const DType t : kAll)
    for (const DType it : {DType::I32, DType::I64})
      for (const Case& c : cases) {
        const PutDescriptor d = bt::put_desc(t, it, c.self, c.index, c.source, false);
        const auto idx = flat_indices(bt::numel(c.index), bt::numel(c.self), rng, true);
        expect_put(d, bt::random_bytes(t, bt::numel(c.self), rng), idx, bt::random_bytes(t, bt::numel(c.source), rng),
                   bt::put_contiguous(d), std::string(dtype_name(t)) + " self " + c.self.to_string());
      }
  for (const DType t : kAccumulate)
    for (const Case& c : cases) {
      const PutDescriptor d = bt::put_desc(t, DType::I64, c.self, c.index, c.source, true);
      const auto idx = flat_indices(bt::numel(c.index), bt::numel(c.self), rng, true);
      expect_put(d, values_for(t, bt::numel(c.self), rng), idx, values_for(t, bt::numel(c.source), rng),
                 bt::put_contiguous(d), "accumulate " + std::string(dtype_name(t)) + " self " + c.self.to_string());
    }
}

TEST(PutCpu, StridedAndBroadcastViews) {
  Rng rng(bt::fresh_seed());
  for (const bool acc : {false, true}) {
    const PutDescriptor d = bt::put_desc(DType::F16, DType::I32, {6, 5}, {4, 5}, {5, 4}, acc);
    bt::PutLayouts L{bt::transposed({6, 5}), bt::every_other({4, 5}), bt::padded({5, 4}, 2), bt::padded({6, 5}, 1)};
    const auto idx = flat_indices(20, 30, rng, true);
    expect_put(d, values_for(DType::F16, 30, rng), idx, values_for(DType::F16, 20, rng), L, "strided");
    L = {bt::broadcast({6, 5}, 0), bt::broadcast({4, 5}, 0), bt::transposed({5, 4}), bt::transposed({6, 5})};
    auto bidx = idx;
    for (size_t i = 5; i < bidx.size(); ++i) bidx[i] = bidx[i % 5];
    const Bytes self = bt::held(L.self, d.dtype, values_for(DType::F16, 30, rng));
    // a broadcast self cannot be written in place: out of place only
    const Bytes src = values_for(DType::F16, 20, rng);
    const auto r = bt::run_put(kCpu, d, self, bidx, src, L, false);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.out, bt::naive_put(d, self, bidx, src)) << "broadcast self / index, accumulate " << acc;
  }
}

// The documented semantics one by one on hand-made values.
TEST(PutCpu, DocumentedSemantics) {
  const std::vector<double> self = {10, 20, 30, 40};
  const std::vector<int64_t> idx = {1, -1, 1, 1, -3};  // -1 is 3, -3 is 1
  const std::vector<double> src = {1, 2, 3, 4, 5};
  auto run = [&](DType t, bool acc, const std::vector<double>& s, const std::vector<double>& x) {
    const PutDescriptor d = bt::put_desc(t, DType::I64, {4}, {5}, {5}, acc);
    const auto r = bt::run_put(kCpu, d, bt::bytes_of(t, s), idx, bt::bytes_of(t, x), bt::put_contiguous(d));
    EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
    const bt::HostBuffer h = bt::host_of(t, r.out);
    std::vector<double> v;
    for (int64_t i = 0; i < h.size(); ++i) v.push_back(bt::is_fp(t) ? h.get(i) : static_cast<double>(h.get_i(i)));
    return v;
  };
  EXPECT_EQ(run(DType::F64, false, self, src), (std::vector<double>{10, 5, 30, 2})) << "the last position wins";
  EXPECT_EQ(run(DType::F64, true, self, src), (std::vector<double>{10, 33, 30, 42})) << "self + contributions";
  EXPECT_EQ(run(DType::I64, true, self, src), (std::vector<double>{10, 33, 30, 42}));
  // 16-bit: accumulated in f32, rounded once: 1024 + 0.5 * 4 = 1026 (summing in
  // f16 would round every addition of 0.5 away at 1024, ties to even).
  EXPECT_EQ(run(DType::F16, true, {0, 1024, 0, 0}, {0.5, 0, 0.5, 0.5, 0.5}), (std::vector<double>{0, 1026, 0, 0}));
  // i32 wraps (two's complement), as torch's in-place integer +=.
  const PutDescriptor d = bt::put_desc(DType::I32, DType::I32, {1}, {2}, {2}, true);
  const auto r = bt::run_put(kCpu, d, bt::bytes_of(DType::I32, {2147483647.0}), {0, 0},
                             bt::bytes_of(DType::I32, {1, 1}), bt::put_contiguous(d));
  ASSERT_TRUE(r.st.is_ok());
  int32_t v = 0;
  std::memcpy(&v, r.out.data(), 4);
  EXPECT_EQ(v, -2147483647);
}

TEST(PutCpu, ZeroSizeAndBadIndices) {
  Rng rng(bt::fresh_seed());
  // No index element: out = self.
  const PutDescriptor d0 = bt::put_desc(DType::F32, DType::I64, {3, 4}, {0}, {0, 2}, true);
  const Bytes self = bt::random_bytes(DType::F32, 12, rng);
  const auto r0 = bt::run_put(kCpu, d0, self, {}, {}, bt::put_contiguous(d0));
  ASSERT_TRUE(r0.st.is_ok()) << r0.st.to_string();
  EXPECT_EQ(r0.out, self);
  EXPECT_EQ(PutPlan::select(kCpu, bt::put_desc(DType::F32, DType::I64, {0, 4}, {0}, {0}, false)).value().sku().variant,
            "empty");
  for (const bool in_place : {false, true})
    for (const int64_t bad : {int64_t{12}, int64_t{-13}}) {
      const PutDescriptor d = bt::put_desc(DType::I64, DType::I32, {3, 4}, {2, 3}, {6}, true);
      std::vector<int64_t> idx = flat_indices(6, 12, rng);
      idx[3] = bad;  // [1,0]
      idx[5] = 50;
      const Bytes s = values_for(DType::I64, 12, rng);
      const auto r = bt::run_put(kCpu, d, s, idx, values_for(DType::I64, 6, rng), bt::put_contiguous(d), in_place);
      BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem,
                       "PutPlan: index element [1,0] (position 3) is " + std::to_string(bad) +
                           ", outside [-12, 12) (self has 12 elements; the first bad index)");
      if (in_place) EXPECT_EQ(r.out, s) << "self changed although the call failed";
      else for (uint8_t b : r.raw) EXPECT_EQ(b, 0xff) << "out written although the call failed";
    }
}

TEST(PutCpu, RunTwiceBitIdentical) {
  Rng rng(bt::fresh_seed());
  const PutDescriptor d = bt::put_desc(DType::BF16, DType::I64, {17, 9}, {600}, {600}, true);
  const Bytes self = values_for(DType::BF16, 153, rng), src = values_for(DType::BF16, 600, rng);
  const auto idx = flat_indices(600, 153, rng, true);
  const auto a = bt::run_put(kCpu, d, self, idx, src, bt::put_contiguous(d), false, 0xff);
  const auto b = bt::run_put(kCpu, d, self, idx, src, bt::put_contiguous(d), false, 0x5a);
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
  EXPECT_EQ(a.raw, b.raw);
}

// ---- OneHotPlan -------------------------------------------------------------------------
TEST(OneHotCpu, DescriptorRules) {
  const OneHotDescriptor ok = bt::one_hot_desc(DType::I64, DType::I64, {3, 2}, 5);
  auto expect = [](const OneHotDescriptor& d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(OneHotPlan::select(kCpu, d).status(), code, "OneHotPlan: " + what);
  };
  OneHotDescriptor d = ok;
  d.num_classes = -1;
  expect(d, StatusCode::InvalidProblem, "num_classes -1 must be at least 1 (torch's -1, infer from the data, is two-phase");
  d = ok, d.num_classes = 0;
  expect(d, StatusCode::InvalidProblem, "num_classes 0 must be at least 1");
  d = ok, d.index_dtype = DType::I16;
  expect(d, StatusCode::Unsupported, "index_dtype i16 is not supported (i32, i64)");
  d = ok, d.dtype = static_cast<DType>(50);
  expect(d, StatusCode::Unsupported, "dtype 50 is not a dtype");
  d = ok, d.index_shape = Dims{1, 1, 1, 1, 1, 1, 1, 1};
  expect(d, StatusCode::InvalidProblem, "index_shape [1,1,1,1,1,1,1,1] has rank 8 (at most 7: out adds the class axis)");
  d = ok, d.index_shape = Dims{2, -2};
  expect(d, StatusCode::InvalidProblem, "index_shape");
  auto p = OneHotPlan::select(kCpu, ok);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->out_shape(), (Dims{3, 2, 5}));
  EXPECT_EQ(p->sku().op, "indexing.one_hot");
  EXPECT_EQ(OneHotDescriptor{}.dtype, DType::I64) << "torch's default out dtype";
}

TEST(OneHotCpu, MatchesNaiveModel) {
  Rng rng(bt::fresh_seed());
  struct Case {
    Dims index;
    int64_t C;
  };
  const Case cases[] = {{{}, 4}, {{7}, 1}, {{5}, 9}, {{3, 4}, 6}, {{2, 1, 3}, 33}};
  for (const DType t : kAll)
    for (const DType it : {DType::I32, DType::I64})
      for (const Case& c : cases) {
        const OneHotDescriptor d = bt::one_hot_desc(t, it, c.index, c.C);
        std::vector<int64_t> cls(static_cast<size_t>(bt::numel(c.index)));
        for (auto& v : cls) v = bt::uniform_int(rng, 0, c.C - 1);
        const auto r = bt::run_one_hot(kCpu, d, cls, bt::contiguous(c.index), bt::contiguous(bt::one_hot_shape(d)));
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
        EXPECT_EQ(r.out, bt::naive_one_hot(d, cls)) << dtype_name(t) << " " << c.index.to_string() << " C " << c.C;
      }
  // Strided index and out (gaps untouched).
  const OneHotDescriptor d = bt::one_hot_desc(DType::BF16, DType::I32, {4, 3}, 5);
  const bt::Layout is[] = {bt::transposed({4, 3}), bt::broadcast({4, 3}, 0)};
  const bt::Layout os[] = {bt::transposed({4, 3, 5}), bt::padded({4, 3, 5}, 2)};
  for (int k = 0; k < 2; ++k) {
    std::vector<int64_t> cls(12);
    for (auto& v : cls) v = bt::uniform_int(rng, 0, 4);
    if (k == 1)
      for (size_t i = 3; i < 12; ++i) cls[i] = cls[i % 3];
    const auto r = bt::run_one_hot(kCpu, d, cls, is[k], os[k]);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.out, bt::naive_one_hot(d, cls)) << bt::describe(os[k]);
    const auto cov = bt::covered(os[k]);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i]) EXPECT_EQ(r.raw[2 * i], 0xff) << "gap element " << i << " written";
  }
}

TEST(OneHotCpu, BadClassNamesTheFirstAndWritesNothing) {
  for (const int64_t bad : {int64_t{-1}, int64_t{5}, int64_t{1} << 40}) {
    const OneHotDescriptor d = bt::one_hot_desc(DType::F32, DType::I64, {2, 3}, 5);
    const std::vector<int64_t> cls = {0, 4, 2, 1, bad, 7};
    const auto r = bt::run_one_hot(kCpu, d, cls, bt::contiguous({2, 3}), bt::contiguous({2, 3, 5}));
    BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem,
                     "OneHotPlan: index element [1,1] (position 4) is " + std::to_string(bad) +
                         ", outside [0, 5) (num_classes; the first bad class)");
    for (uint8_t b : r.raw) EXPECT_EQ(b, 0xff) << "out written although the call failed";
  }
  const OneHotDescriptor e = bt::one_hot_desc(DType::I64, DType::I64, {0, 3}, 5);
  EXPECT_EQ(OneHotPlan::select(kCpu, e).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_one_hot(kCpu, e, {}, bt::contiguous({0, 3}), bt::contiguous({0, 3, 5})).st.is_ok());
}

// ---- backward compositions vs finite differences (f64) ------------------------------------
std::vector<double> f64_of(const Bytes& b) {
  std::vector<double> v(b.size() / 8);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}
Bytes bytes_f64(const std::vector<double>& v) { return bt::bytes_of(DType::F64, v); }
double dot(const std::vector<double>& a, const std::vector<double>& b) {
  double s = 0;
  for (size_t i = 0; i < a.size(); ++i) s += a[i] * b[i];
  return s;
}

TEST(TakePutCpu, BackwardCompositionsMatchFiniteDifferences) {
  Rng rng(bt::fresh_seed());
  const double h = 1e-6;
  // take: dx = put accumulate of dout into zeros of x's shape.
  {
    const TakeDescriptor td = bt::take_desc(DType::F64, DType::I64, {3, 4}, {5, 3});
    const auto x = bt::random_values(DType::F64, 12, rng);
    const auto idx = flat_indices(15, 12, rng, true);  // duplicates and negatives
    const auto c = bt::random_values(DType::F64, 15, rng);  // dout
    const PutDescriptor pd = bt::put_desc(DType::F64, DType::I64, {3, 4}, {5, 3}, {5, 3}, true);
    const auto dx = bt::run_put(kCpu, pd, bytes_f64(std::vector<double>(12, 0.0)), idx, bytes_f64(c),
                                bt::put_contiguous(pd));
    ASSERT_TRUE(dx.st.is_ok());
    const auto g = f64_of(dx.out);
    auto loss = [&](const std::vector<double>& xv) {
      return dot(f64_of(bt::run_take(kCpu, td, bytes_f64(xv), idx, bt::take_contiguous(td)).out), c);
    };
    for (size_t i = 0; i < 12; ++i) {
      auto p = x, m = x;
      p[i] += h, m[i] -= h;
      EXPECT_NEAR(g[i], (loss(p) - loss(m)) / (2 * h), 1e-7) << "take dx " << i;
    }
  }
  // put_: dsource = take(dout, index); dself = dout (accumulate) or
  // put(dout, index, zeros) (not accumulate; distinct destinations so the
  // function is differentiable everywhere in source).
  for (const bool acc : {true, false}) {
    const PutDescriptor pd = bt::put_desc(DType::F64, DType::I64, {4, 3}, {6}, {2, 3}, acc);
    const auto self = bt::random_values(DType::F64, 12, rng), src = bt::random_values(DType::F64, 6, rng);
    const std::vector<int64_t> idx = acc ? std::vector<int64_t>{1, 1, -1, 4, 0, 11} : std::vector<int64_t>{1, 2, -1, 4, 0, 7};
    const auto c = bt::random_values(DType::F64, 12, rng);  // dout
    const TakeDescriptor td = bt::take_desc(DType::F64, DType::I64, {4, 3}, {6});
    const auto dsrc = f64_of(bt::run_take(kCpu, td, bytes_f64(c), idx, bt::take_contiguous(td)).out);
    std::vector<double> dself = c;
    if (!acc) {
      const PutDescriptor zd = bt::put_desc(DType::F64, DType::I64, {4, 3}, {6}, {6}, false);
      const auto z = bt::run_put(kCpu, zd, bytes_f64(c), idx, bytes_f64(std::vector<double>(6, 0.0)),
                                 bt::put_contiguous(zd));
      ASSERT_TRUE(z.st.is_ok());
      dself = f64_of(z.out);
    }
    auto loss = [&](const std::vector<double>& s, const std::vector<double>& x) {
      return dot(f64_of(bt::run_put(kCpu, pd, bytes_f64(s), idx, bytes_f64(x), bt::put_contiguous(pd)).out), c);
    };
    for (size_t i = 0; i < 12; ++i) {
      auto p = self, q = self;
      p[i] += h, q[i] -= h;
      EXPECT_NEAR(dself[i], (loss(p, src) - loss(q, src)) / (2 * h), 1e-7) << "accumulate " << acc << " dself " << i;
    }
    for (size_t i = 0; i < 6; ++i) {
      auto p = src, q = src;
      p[i] += h, q[i] -= h;
      EXPECT_NEAR(dsrc[i], (loss(self, p) - loss(self, q)) / (2 * h), 1e-7) << "accumulate " << acc << " dsrc " << i;
    }
  }
}

}  // namespace
