// IndexGetPlan / IndexPutPlan on the CPU reference:
//   * every descriptor and argument rule: its StatusCode and message;
//   * the result shape rule (adjacent / not adjacent indexed dims, broadcast);
//   * bad indices: InvalidProblem naming the first bad position and its index
//     tensor, nothing written;
//   * get against the naive model: every dtype, negative indices, broadcast
//     index tensors, rank-0 indices, strided and stride-0 views;
//   * put against the naive model, bit for bit in the documented accumulator:
//     every dtype (plain), the six accumulate dtypes, heavy duplicates, values
//     broadcast, in place and out of place, strided views, zero-size;
//   * the documented semantics one by one (last wins, sums from self, integer
//     wrap-around), run-twice determinism;
//   * the backward compositions against finite differences (f64).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/advanced_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();

using bt::adv_index;
using bt::get_desc;
using bt::put_desc;
using Indices = bt::AdvIndices;
using bt::random_adv_indices;

// ---- descriptor rules ---------------------------------------------------------------------
TEST(IndexGetCpu, DescriptorRulesAndShapes) {
  const AdvancedIndex ok = adv_index(DType::I64, {4, 5, 6}, {{0, {3}}, {2, {2, 1}}});
  auto expect = [](const AdvancedIndex& ix, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(IndexGetPlan::select(kCpu, get_desc(DType::F32, ix)).status(), code, "IndexGetPlan: " + what);
  };
  AdvancedIndex ix = ok;
  ix.index_dtype = DType::F32;
  expect(ix, StatusCode::Unsupported, "index_dtype f32 is not supported (i32, i64; a boolean mask: convert it with NonzeroPlan)");
  ix = ok, ix.index_dtype = DType::Bool;
  expect(ix, StatusCode::Unsupported, "index_dtype bool is not supported");
  ix = AdvancedIndex{}, ix.has_index[0] = true;
  expect(ix, StatusCode::InvalidProblem, "self_shape [] has rank 0 (at least 1: an index names a dim)");
  ix = ok, ix.has_index[0] = ix.has_index[2] = false;
  expect(ix, StatusCode::InvalidProblem, "no dim is indexed");
  ix = ok, ix.has_index[3] = true;
  expect(ix, StatusCode::InvalidProblem, "has_index[3] is set past self_shape's rank 3");
  ix = ok, ix.index_shape[2] = Dims{2, 4};
  expect(ix, StatusCode::InvalidProblem, "index_shape[2] [2,4] does not broadcast with the other index shapes ([3] so far");
  ix = ok, ix.index_shape[0] = Dims{-1};
  expect(ix, StatusCode::InvalidProblem, "an index_shape");
  ix = adv_index(DType::I64, {2, 2, 2, 2}, {{0, {1, 1, 1, 1, 1, 1}}});
  expect(ix, StatusCode::InvalidProblem, "the result has rank 9 (broadcast index rank 6 + 3 sliced dims), more than 8");
  BT_EXPECT_STATUS(IndexGetPlan::select(kCpu, get_desc(static_cast<DType>(77), ok)).status(), StatusCode::Unsupported,
                   "IndexGetPlan: dtype");

  // x[i, :, j] (not adjacent): B + the sliced dims; B = [2, 3].
  auto p = IndexGetPlan::select(kCpu, get_desc(DType::Bool, ok));
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->broadcast_shape(), (Dims{2, 3}));
  EXPECT_EQ(p->out_shape(), (Dims{2, 3, 5}));
  EXPECT_EQ(p->sku().op, "indexing.index");
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_EQ(p->workspace_size(), 0u);
  // x[:, i, j] (adjacent): B in place of the indexed dims.
  auto q = IndexGetPlan::select(kCpu, get_desc(DType::F32, adv_index(DType::I32, {4, 5, 6}, {{1, {3}}, {2, {2, 1}}})));
  ASSERT_TRUE(q.is_ok());
  EXPECT_EQ(q->out_shape(), (Dims{4, 2, 3}));
  // x[:, i] with a rank-0 i drops the dim; x[i] with a 2-D i inserts two.
  EXPECT_EQ(IndexGetPlan::select(kCpu, get_desc(DType::F32, adv_index(DType::I32, {4, 5, 6}, {{1, {}}}))).value().out_shape(),
            (Dims{4, 6}));
  EXPECT_EQ(IndexGetPlan::select(kCpu, get_desc(DType::F32, adv_index(DType::I32, {4, 5}, {{0, {2, 3}}}))).value().out_shape(),
            (Dims{2, 3, 5}));
  // The shared helper gives the same shapes.
  Dims B, R;
  EXPECT_TRUE(advanced_index_shapes("X", ok, &B, &R).is_ok());
  EXPECT_EQ(R, (Dims{2, 3, 5}));
}

TEST(IndexPutCpu, DescriptorRules) {
  const AdvancedIndex ix = adv_index(DType::I64, {4, 5}, {{0, {3}}});  // R = [3, 5]
  auto expect = [&](IndexPutDescriptor d, StatusCode code, const std::string& what) {
    BT_EXPECT_STATUS(IndexPutPlan::select(kCpu, d).status(), code, "IndexPutPlan: " + what);
  };
  expect(put_desc(DType::Bool, ix, {3, 5}, true), StatusCode::Unsupported,
         "dtype bool cannot accumulate (f32, f64, f16, bf16, i32, i64; without accumulate every dtype)");
  expect(put_desc(DType::U8, ix, {3, 5}, true), StatusCode::Unsupported, "dtype u8 cannot accumulate");
  expect(put_desc(DType::F32, ix, {3, 4}, false), StatusCode::InvalidProblem,
         "values_shape [3,4] does not broadcast to the result shape [3,5]");
  expect(put_desc(DType::F32, ix, {1, 3, 5}, false), StatusCode::InvalidProblem,
         "values_shape [1,3,5] does not broadcast to the result shape [3,5]");
  expect(put_desc(DType::F32, ix, {-1}, false), StatusCode::InvalidProblem, "values_shape");
  for (const Dims v : {Dims{}, Dims{1}, Dims{5}, Dims{3, 1}, Dims{3, 5}})
    EXPECT_TRUE(IndexPutPlan::select(kCpu, put_desc(DType::F32, ix, v, true)).is_ok()) << v.to_string();
  for (const DType t : kAllDTypes)
    EXPECT_TRUE(IndexPutPlan::select(kCpu, put_desc(t, ix, {5}, false)).is_ok()) << dtype_name(t);
  auto p = IndexPutPlan::select(kCpu, put_desc(DType::BF16, ix, {5}, true)).value();
  EXPECT_EQ(p.sku().op, "indexing.index_put_accumulate");
  EXPECT_EQ(p.result_shape(), (Dims{3, 5}));
  EXPECT_EQ(p.out_shape(), (Dims{4, 5}));
  EXPECT_EQ(IndexPutPlan::select(kCpu, put_desc(DType::BF16, ix, {5}, false)).value().sku().op, "indexing.index_put");
}

// ---- argument rules -------------------------------------------------------------------------
TEST(IndexPutCpu, ArgumentRules) {
  const AdvancedIndex ix = adv_index(DType::I64, {4}, {{0, {2}}});
  auto put = IndexPutPlan::select(kCpu, put_desc(DType::F32, ix, {2}, false)).value();
  std::vector<float> self(8, 1.f), vals(2, 1.f), out(4, 0.f);
  std::vector<int64_t> idx = {0, 3};
  IndexPutArgs a;
  a.self = TensorRef::contiguous(self.data(), Device::cpu(), {4}, 4);
  a.values = TensorRef::contiguous(vals.data(), Device::cpu(), {2}, 2);
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(put.can_implement(a), StatusCode::InvalidProblem,
                   "IndexPutPlan: indices[0] is missing (dim 0 is indexed: descriptor.index.has_index[0])");
  a.indices[0] = TensorRef::contiguous(idx.data(), Device::cpu(), {2}, 2);
  EXPECT_TRUE(put.can_implement(a).is_ok()) << put.can_implement(a).to_string();
  a.indices[1] = TensorRef::contiguous(idx.data(), Device::cpu(), {2}, 2);
  BT_EXPECT_STATUS(put.can_implement(a), StatusCode::InvalidProblem,
                   "IndexPutPlan: indices[1] is given but dim 1 is not indexed (a full slice; has_index[1] is false)");
  a.indices[1] = TensorRef{};
  a.out = TensorMut::contiguous(self.data(), Device::cpu(), {4}, 4);  // in place: self's own view
  EXPECT_TRUE(put.can_implement(a).is_ok()) << put.can_implement(a).to_string();
  a.out = TensorMut::contiguous(self.data() + 2, Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(put.can_implement(a), StatusCode::InvalidProblem, "IndexPutPlan: out partially overlaps self");
  a.out = TensorMut::contiguous(out.data(), Device::cpu(), {4}, 4);
  a.values = TensorRef::contiguous(out.data(), Device::cpu(), {2}, 2);
  BT_EXPECT_STATUS(put.can_implement(a), StatusCode::InvalidProblem, "IndexPutPlan: out overlaps values");
  a.values = TensorRef{};
  BT_EXPECT_STATUS(put.can_implement(a), StatusCode::InvalidProblem, "IndexPutPlan: values");

  auto get = IndexGetPlan::select(kCpu, get_desc(DType::F32, ix)).value();
  IndexGetArgs g;
  g.x = TensorRef::contiguous(self.data(), Device::cpu(), {4}, 4);
  g.indices[0] = TensorRef::contiguous(idx.data(), Device::cpu(), {2}, 2);
  g.out = TensorMut::contiguous(self.data() + 1, Device::cpu(), {2}, 2);
  BT_EXPECT_STATUS(get.can_implement(g), StatusCode::InvalidProblem, "IndexGetPlan: out overlaps x");
  g.out = TensorMut::contiguous(out.data(), Device::cpu(), {2}, 2);
  EXPECT_TRUE(get.can_implement(g).is_ok());
  g.indices[0] = TensorRef::contiguous(vals.data(), Device::cpu(), {2}, 2);
  BT_EXPECT_STATUS(get.can_implement(g), StatusCode::InvalidProblem, "IndexGetPlan: indices[0] dtype f32 must be i64");
  EXPECT_EQ(IndexGetPlan().run(kCpu, Workspace::none(), {}).code(), StatusCode::InvalidProblem);
  EXPECT_EQ(IndexPutPlan().check_indices(kCpu, Workspace::none()).code(), StatusCode::InvalidProblem);
  EXPECT_TRUE(get.check_indices(kCpu, Workspace::none()).is_ok());
}

// ---- bad indices ----------------------------------------------------------------------------
TEST(AdvancedIndexCpu, BadIndexNamesTheFirstBadPositionAndWritesNothing) {
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64})
    for (const int64_t bad : {int64_t{5}, int64_t{-6}, int64_t{1000}}) {
      // x[i, :, j], x [5, 3, 4], i [2, 2], j [2]: R = [2, 2, 3]
      const AdvancedIndex ix = adv_index(it, {5, 3, 4}, {{0, {2, 2}}, {2, {2}}});
      Indices I;
      I.v[0] = {0, 1, -5, 4};
      I.v[2] = {3, -4};
      I.v[0][3] = bad;  // B position [1, 1]: R positions from 9
      I.v[2][1] = 7;    // B positions [*, 1] bad too: the first is R position 3, dim 2
      const auto x = bt::adv_values(DType::F32, 60, rng);
      const auto g = bt::run_index_get(kCpu, get_desc(DType::F32, ix), x, I.v, bt::adv_contiguous(ix, {2, 2, 3}));
      BT_EXPECT_STATUS(g.st, StatusCode::InvalidProblem,
                       "IndexGetPlan: index position [0,1,0] (position 3) of indices[2] is 7, outside [-4, 4) (the "
                       "size of dim 2; the first bad index)");
      for (uint8_t b : g.raw) EXPECT_EQ(b, 0xff) << "out written although the call failed";
      I.v[2][1] = 1;
      for (const bool in_place : {false, true}) {
        const IndexPutDescriptor d = put_desc(DType::F32, ix, {3}, true);
        const auto vals = bt::adv_values(DType::F32, 3, rng);
        const auto r = bt::run_index_put(kCpu, d, x, I.v, vals, bt::adv_contiguous(ix, {5, 3, 4}, {3}), in_place);
        BT_EXPECT_STATUS(r.st, StatusCode::InvalidProblem,
                         "IndexPutPlan: index position [1,1,0] (position 9) of indices[0] is " + std::to_string(bad) +
                             ", outside [-5, 5)");
        if (in_place) EXPECT_EQ(r.out, x) << "self changed although the call failed";
        else for (uint8_t b : r.raw) EXPECT_EQ(b, 0xff) << "out written although the call failed";
      }
    }
}

// ---- get ------------------------------------------------------------------------------------
const bt::AdvCase kCases[] = {
    {{7}, {{0, {11}}}},                        // x[i]
    {{7}, {{0, {}}}},                          // x[0-D i]: rank-0 result
    {{4, 6}, {{1, {3}}}},                      // x[:, i]
    {{4, 6}, {{0, {2, 3}}, {1, {3}}}},         // x[i, j], broadcast
    {{3, 4, 5}, {{0, {2, 1}}, {2, {3}}}},      // x[i, :, j] (not adjacent)
    {{3, 4, 5}, {{1, {2}}, {2, {1}}}},         // x[:, i, j] (adjacent)
    {{2, 3, 4, 5}, {{1, {}}, {3, {2}}}},       // x[:, i, :, j], i 0-D
    {{3, 4, 5}, {{0, {2, 2}}, {1, {2, 2}}, {2, {2}}}},
};

TEST(IndexGetCpu, MatchesNaiveModelEveryDtype) {
  Rng rng(bt::fresh_seed());
  for (const DType t : kAllDTypes)
    for (const DType it : {DType::I32, DType::I64})
      for (const bt::AdvCase& c : kCases) {
        const AdvancedIndex ix = adv_index(it, c.self, c.idx);
        const IndexGetDescriptor d = get_desc(t, ix);
        const auto p = IndexGetPlan::select(kCpu, d);
        ASSERT_TRUE(p.is_ok()) << p.status().to_string();
        ASSERT_EQ(p->out_shape(), bt::adv_model_shape(ix).R) << c.self.to_string();
        const auto x = bt::adv_values(t, bt::numel(c.self), rng);
        const Indices I = random_adv_indices(ix, rng);
        const auto r = bt::run_index_get(kCpu, d, x, I.v, bt::adv_contiguous(ix, p->out_shape()));
        ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
        EXPECT_EQ(r.out, bt::naive_index_get(ix, x, I.v)) << dtype_name(t) << " x " << c.self.to_string();
      }
}

TEST(IndexGetCpu, StridedAndBroadcastViews) {
  Rng rng(bt::fresh_seed());
  const AdvancedIndex ix = adv_index(DType::I32, {5, 6, 7}, {{0, {4, 3}}, {2, {4, 3}}});  // R = [4, 3, 6]
  const Dims R{4, 3, 6};
  const auto x = bt::adv_values(DType::BF16, 210, rng);
  for (int k = 0; k < 3; ++k) {
    bt::AdvLayouts L = bt::adv_contiguous(ix, R);
    Indices I = random_adv_indices(ix, rng);
    if (k == 0) {
      L.x = bt::transposed({5, 6, 7}), L.index[0] = bt::broadcast({4, 3}, 0), L.out = bt::padded(R, 2);
      for (size_t i = 3; i < 12; ++i) I.v[0][i] = I.v[0][i % 3];  // a broadcast tensor holds one row
    } else if (k == 1) {
      L.x = bt::padded({5, 6, 7}, 1), L.index[0] = bt::transposed({4, 3}), L.index[2] = bt::every_other({4, 3});
      L.out = bt::transposed(R);
    } else {
      L.x = bt::every_other({5, 6, 7}), L.index[2] = bt::broadcast({4, 3}, 1), L.out = bt::every_other(R);
      for (size_t i = 0; i < 12; ++i) I.v[2][i] = I.v[2][i / 3 * 3];
    }
    const auto r = bt::run_index_get(kCpu, get_desc(DType::BF16, ix), x, I.v, L);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
    EXPECT_EQ(r.out, bt::naive_index_get(ix, x, I.v)) << "layout set " << k;
    const auto cov = bt::covered(L.out);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i]) EXPECT_EQ(r.raw[2 * i], 0xff) << "gap element " << i << " written";
  }
}

TEST(AdvancedIndexCpu, ZeroSize) {
  Rng rng(bt::fresh_seed());
  // An empty index: R empty; put leaves self (out = self).
  const AdvancedIndex e = adv_index(DType::I64, {3, 4}, {{0, {0}}});
  EXPECT_EQ(IndexGetPlan::select(kCpu, get_desc(DType::F32, e)).value().sku().variant, "empty");
  EXPECT_TRUE(bt::run_index_get(kCpu, get_desc(DType::F32, e), bt::adv_values(DType::F32, 12, rng), Indices{}.v,
                                bt::adv_contiguous(e, {0, 4}))
                  .st.is_ok());
  const auto self = bt::adv_values(DType::F32, 12, rng);
  Indices none;
  const auto r = bt::run_index_put(kCpu, put_desc(DType::F32, e, {4}, true), self, none.v, {1, 2, 3, 4},
                                   bt::adv_contiguous(e, {3, 4}, {4}));
  ASSERT_TRUE(r.st.is_ok()) << r.st.to_string();
  EXPECT_EQ(r.out, self);
  // A sliced dim of extent 0: R empty, even with indices (never read).
  const AdvancedIndex s = adv_index(DType::I64, {3, 0}, {{0, {2}}});
  EXPECT_EQ(IndexPutPlan::select(kCpu, put_desc(DType::F32, s, {}, false)).value().sku().variant, "empty");
  Indices I;
  I.v[0] = {0, 9};
  EXPECT_TRUE(bt::run_index_get(kCpu, get_desc(DType::F32, s), {}, I.v, bt::adv_contiguous(s, {2, 0})).st.is_ok());
  // An indexed dim of extent 0 with a non-empty index: every index is bad.
  const AdvancedIndex z = adv_index(DType::I64, {0, 3}, {{0, {1}}});
  I.v[0] = {0};
  BT_EXPECT_STATUS(bt::run_index_get(kCpu, get_desc(DType::F32, z), {}, I.v, bt::adv_contiguous(z, {1, 3})).st,
                   StatusCode::InvalidProblem, "outside [0, 0)");
}

// ---- put ------------------------------------------------------------------------------------
void expect_put(const IndexPutDescriptor& d, const std::vector<double>& self, const Indices& I,
                const std::vector<double>& vals, const bt::AdvLayouts& L, const std::string& what) {
  const auto want = bt::naive_index_put(d, self, I.v, vals);
  for (const bool in_place : {false, true}) {
    const auto r = bt::run_index_put(kCpu, d, self, I.v, vals, L, in_place);
    ASSERT_TRUE(r.st.is_ok()) << r.st.to_string() << " " << what;
    ASSERT_EQ(r.out.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_EQ(r.out[i], want[i]) << what << (in_place ? " in place" : "") << " element " << i;
  }
}

TEST(IndexPutCpu, MatchesNaiveModel) {
  Rng rng(bt::fresh_seed());
  for (const bt::AdvCase& c : kCases)
    for (const bool acc : {false, true})
      for (const DType t : kAllDTypes) {
        if (acc && !bt::adv_accumulates(t)) continue;
        const AdvancedIndex ix = adv_index(t == DType::F32 ? DType::I32 : DType::I64, c.self, c.idx);
        const Dims R = bt::adv_model_shape(ix).R;
        // values: the full R, or its last axis broadcast (R's rank >= 1)
        for (const bool bcast : {false, true}) {
          Dims vs = R;
          if (bcast && R.rank > 0) vs[0] = 1;
          const IndexPutDescriptor d = put_desc(t, ix, vs, acc);
          const auto self = bt::adv_values(t, bt::numel(c.self), rng);
          const auto vals = bt::adv_values(t, bt::numel(vs), rng);
          expect_put(d, self, random_adv_indices(ix, rng), vals, bt::adv_contiguous(ix, c.self, vs),
                     std::string(dtype_name(t)) + (acc ? " accumulate" : "") + " self " + c.self.to_string() +
                         " values " + vs.to_string());
        }
      }
}

TEST(IndexPutCpu, HeavyDuplicatesAndStridedViews) {
  Rng rng(bt::fresh_seed());
  // x[i, :, j] = v with 40 x 3 positions onto 2 destinations per column.
  const AdvancedIndex ix = adv_index(DType::I64, {4, 5, 3}, {{0, {40, 1}}, {2, {3}}});  // R = [40, 3, 5]
  const Dims R{40, 3, 5};
  for (const DType t : bt::kAdvAccumulate)
    for (const bool acc : {false, true}) {
      Indices I;
      I.v[0].assign(40, 2);
      for (size_t i = 0; i < 40; i += 3) I.v[0][i] = -1;  // -1 wraps to 3
      I.v[2] = {0, 2, -1};                                 // 2 and -1 both name column 2
      const auto self = bt::adv_values(t, 60, rng);
      const auto vals = bt::adv_values(t, 600, rng);
      bt::AdvLayouts L = bt::adv_contiguous(ix, {4, 5, 3}, R);
      L.x = bt::transposed({4, 5, 3}), L.out = bt::padded({4, 5, 3}, 1), L.values = bt::every_other(R);
      L.index[0] = bt::padded({40, 1}, 2), L.index[2] = bt::every_other({3});
      expect_put(put_desc(t, ix, R, acc), self, I, vals, L, std::string(dtype_name(t)) + (acc ? " accumulate" : ""));
      // values broadcast with a stride-0 view
      L.values = bt::broadcast(R, 0);
      std::vector<double> bv = vals;
      for (size_t i = 0; i < 600; ++i) bv[i] = vals[i % 15];
      expect_put(put_desc(t, ix, R, acc), self, I, bv, L, std::string(dtype_name(t)) + " broadcast values");
    }
}

// The documented semantics on hand-made values.
TEST(IndexPutCpu, DocumentedSemantics) {
  const AdvancedIndex ix = adv_index(DType::I64, {4}, {{0, {4}}});
  Indices I;
  I.v[0] = {1, 3, -3, 1};  // -3 wraps to 1: three positions name element 1
  const std::vector<double> self = {10, 20, 30, 40}, vals = {1, 2, 3, 4};
  auto run = [&](DType t, bool acc, std::vector<double> s, std::vector<double> v) {
    const auto r = bt::run_index_put(kCpu, put_desc(t, ix, {4}, acc), s, I.v, v, bt::adv_contiguous(ix, {4}, {4}));
    EXPECT_TRUE(r.st.is_ok()) << r.st.to_string();
    return r.out;
  };
  EXPECT_EQ(run(DType::F64, false, self, vals), (std::vector<double>{10, 4, 30, 2})) << "the last position wins";
  EXPECT_EQ(run(DType::F64, true, self, vals), (std::vector<double>{10, 28, 30, 42})) << "sums start from self";
  // i32 accumulates in int64 and wraps once: 2^31 - 1 + 1 + 1 - 1 -> INT32_MIN after the final truncation.
  EXPECT_EQ(run(DType::I32, true, {0, 2147483647.0, 0, 0}, {1, 5, 1, -1}),
            (std::vector<double>{0, -2147483648.0, 0, 5}));
  // bf16: summed in f32, rounded once (1 + 3 * 2^-9 is not 1 in f32, rounds to 1 + 2^-7 in bf16)
  const double u = std::ldexp(1.0, -9);
  EXPECT_EQ(run(DType::BF16, true, {0, 1, 0, 0}, {u, 0, u, u})[1], 1.0 + std::ldexp(1.0, -7));
  // every dtype without accumulate: raw copies, c128 included
  EXPECT_EQ(run(DType::C128, false, self, vals), (std::vector<double>{10, 4, 30, 2}));
  EXPECT_EQ(run(DType::Bool, false, {0, 0, 0, 0}, {1, 1, 0, 0}), (std::vector<double>{0, 0, 0, 1}));
}

TEST(IndexPutCpu, RunTwiceBitIdentical) {
  Rng rng(bt::fresh_seed());
  const AdvancedIndex ix = adv_index(DType::I64, {17, 9}, {{0, {64, 1}}, {1, {5}}});
  const IndexPutDescriptor d = put_desc(DType::BF16, ix, {64, 5}, true);
  const auto self = bt::adv_values(DType::BF16, 153, rng), vals = bt::adv_values(DType::BF16, 320, rng);
  const Indices I = random_adv_indices(ix, rng);
  const auto L = bt::adv_contiguous(ix, {17, 9}, {64, 5});
  const auto a = bt::run_index_put(kCpu, d, self, I.v, vals, L, false, 0xff);
  const auto b = bt::run_index_put(kCpu, d, self, I.v, vals, L, false, 0x5a);
  ASSERT_TRUE(a.st.is_ok() && b.st.is_ok());
  EXPECT_EQ(a.raw, b.raw);
}

// ---- backward compositions vs finite differences (f64) --------------------------------------
TEST(AdvancedIndexCpu, BackwardCompositionsMatchFiniteDifferences) {
  Rng rng(bt::fresh_seed());
  const double h = 1e-6;
  // x[i, :, j]: x [4, 3, 5], i [6, 1], j [2] (duplicates): R = [6, 2, 3].
  const AdvancedIndex ix = adv_index(DType::I64, {4, 3, 5}, {{0, {6, 1}}, {2, {2}}});
  const Dims X{4, 3, 5}, R{6, 2, 3};
  Indices I;
  I.v[0] = {0, 2, 2, -1, 0, 1};
  I.v[2] = {4, -1};  // both name column 4: duplicates
  // index (get): dx = index_put accumulate of dout into zeros of x's shape.
  {
    const auto x = bt::random_values(DType::F64, 60, rng), c = bt::random_values(DType::F64, 36, rng);
    const auto dx = bt::run_index_put(kCpu, put_desc(DType::F64, ix, R, true), std::vector<double>(60, 0.0), I.v, c,
                                      bt::adv_contiguous(ix, X, R));
    ASSERT_TRUE(dx.st.is_ok()) << dx.st.to_string();
    auto loss = [&](const std::vector<double>& xv) {
      const auto o = bt::run_index_get(kCpu, get_desc(DType::F64, ix), xv, I.v, bt::adv_contiguous(ix, R)).out;
      double s = 0;
      for (size_t k = 0; k < o.size(); ++k) s += o[k] * c[k];
      return s;
    };
    for (size_t k = 0; k < 60; ++k) {
      auto p = x, m = x;
      p[k] += h, m[k] -= h;
      EXPECT_NEAR(dx.out[k], (loss(p) - loss(m)) / (2 * h), 1e-7) << "index dx " << k;
    }
  }
  // index_put: dself = dout (accumulate) or index_put(dout, 0); dvalues = index(dout).
  // Without accumulate the destinations are distinct (last-wins is not smooth
  // in an overwritten value): x[i, :, j] with i [2, 1], j [2].
  for (const bool acc : {true, false}) {
    const AdvancedIndex jx = acc ? ix : adv_index(DType::I64, {4, 3, 5}, {{0, {2, 1}}, {2, {2}}});
    const Dims JR = acc ? R : Dims{2, 2, 3};
    const size_t nv = static_cast<size_t>(bt::numel(JR));
    Indices J = I;
    if (!acc) J.v[0] = {0, -1}, J.v[2] = {4, 1};
    const auto self = bt::random_values(DType::F64, 60, rng), vals = bt::random_values(DType::F64, bt::numel(JR), rng);
    const auto c = bt::random_values(DType::F64, 60, rng);  // dout
    const auto L = bt::adv_contiguous(jx, X, JR);
    const auto dvals = bt::run_index_get(kCpu, get_desc(DType::F64, jx), c, J.v, bt::adv_contiguous(jx, JR));
    ASSERT_TRUE(dvals.st.is_ok());
    std::vector<double> dself = c;
    if (!acc) {
      const auto z = bt::run_index_put(kCpu, put_desc(DType::F64, jx, {}, false), c, J.v, {0.0},
                                       bt::adv_contiguous(jx, X, {}));
      ASSERT_TRUE(z.st.is_ok()) << z.st.to_string();
      dself = z.out;
    }
    auto loss = [&](const std::vector<double>& s, const std::vector<double>& v) {
      const auto o = bt::run_index_put(kCpu, put_desc(DType::F64, jx, JR, acc), s, J.v, v, L).out;
      double t = 0;
      for (size_t k = 0; k < o.size(); ++k) t += o[k] * c[k];
      return t;
    };
    for (size_t k = 0; k < 60; ++k) {
      auto p = self, q = self;
      p[k] += h, q[k] -= h;
      EXPECT_NEAR(dself[k], (loss(p, vals) - loss(q, vals)) / (2 * h), 1e-7) << acc << " dself " << k;
    }
    for (size_t k = 0; k < nv; ++k) {
      auto p = vals, q = vals;
      p[k] += h, q[k] -= h;
      EXPECT_NEAR(dvals.out[k], (loss(self, p) - loss(self, q)) / (2 * h), 1e-7) << acc << " dvalues " << k;
    }
  }
}

}  // namespace
