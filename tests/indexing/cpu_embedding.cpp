// EmbeddingPlan / EmbeddingBackwardPlan on the CPU reference:
//   * every descriptor and argument rule: its StatusCode and message (naming the plan);
//   * out-of-range indices: InvalidProblem naming the first bad position, nothing written;
//   * forward against the naive model (all dtypes, both index dtypes, ranks 0..3,
//     duplicates, padding_idx rows read normally, strided weight / indices / out);
//   * backward (dense and compact) bit-identical to a naive position-order loop in
//     the documented accumulator, and close to a double model: duplicates many to
//     one, padding_idx (also negative), empty indices, strided views, the f32
//     gradient of 16-bit tables; against finite differences of the forward (f64).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/embedding_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::Rng;

namespace {

const Stream kCpu = Stream::cpu();
constexpr DType kFloat[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

EmbeddingDescriptor desc(DType t, DType it, int64_t V, int64_t D, Dims shape) {
  EmbeddingDescriptor d;
  d.dtype = t;
  d.index_dtype = it;
  d.num_embeddings = V;
  d.embedding_dim = D;
  d.index_shape = shape;
  return d;
}

EmbeddingBackwardDescriptor bwd(const EmbeddingDescriptor& f, EmbeddingGradLayout layout = EmbeddingGradLayout::Dense,
                                DType grad = DType::Bool) {
  EmbeddingBackwardDescriptor b;
  b.forward = f;
  b.grad_dtype = grad == DType::Bool ? f.dtype : grad;
  b.layout = layout;
  return b;
}

// ---- descriptor rules ---------------------------------------------------------------------
TEST(EmbeddingCpu, DescriptorRules) {
  const EmbeddingDescriptor ok = desc(DType::F32, DType::I64, 5, 3, {4});
  auto expect = [](EmbeddingDescriptor d, StatusCode code, const char* what) {
    BT_EXPECT_STATUS(EmbeddingPlan::select(kCpu, d).status(), code, std::string("EmbeddingPlan: ") + what);
    BT_EXPECT_STATUS(EmbeddingBackwardPlan::select(kCpu, bwd(d, EmbeddingGradLayout::Dense, DType::F32)).status(), code,
                     std::string("EmbeddingBackwardPlan: ") + what);
  };
  EmbeddingDescriptor d = ok;
  d.dtype = DType::I32;
  d.index_dtype = DType::I64;
  BT_EXPECT_STATUS(EmbeddingPlan::select(kCpu, d).status(), StatusCode::Unsupported,
                   "EmbeddingPlan: dtype i32 is not supported (f32, f64, f16, bf16)");
  d = ok, d.index_dtype = DType::F32;
  expect(d, StatusCode::Unsupported, "index_dtype f32 is not supported (i32, i64)");
  d = ok, d.index_dtype = DType::I16;
  expect(d, StatusCode::Unsupported, "index_dtype i16 is not supported");
  d = ok, d.num_embeddings = -1;
  expect(d, StatusCode::InvalidProblem, "num_embeddings -1 must be >= 0");
  d = ok, d.embedding_dim = -2;
  expect(d, StatusCode::InvalidProblem, "embedding_dim -2 must be >= 0");
  d = ok, d.index_shape = Dims{2, -1};
  expect(d, StatusCode::InvalidProblem, "index_shape");
  d = ok, d.index_shape = Dims{1, 1, 1, 1, 1, 1, 1, 1};
  expect(d, StatusCode::InvalidProblem, "index_shape [1,1,1,1,1,1,1,1] has rank 8 (at most 7");
  d = ok, d.num_embeddings = int64_t{1} << 40, d.embedding_dim = int64_t{1} << 40;
  expect(d, StatusCode::InvalidProblem, "weight (1099511627776 x 1099511627776) overflows int64");
  d = ok, d.has_padding_idx = true, d.padding_idx = 5;
  expect(d, StatusCode::InvalidProblem, "padding_idx 5 is outside [-5, 5) (num_embeddings 5)");
  d.padding_idx = -6;
  expect(d, StatusCode::InvalidProblem, "padding_idx -6 is outside [-5, 5)");
  d.padding_idx = -5;  // counts from the end: row 0
  auto p = EmbeddingPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->descriptor().padding_idx, 0);
  EXPECT_EQ(p->out_shape(), (Dims{4, 3}));
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_EQ(p->sku().op, "indexing.embedding");
  EXPECT_EQ(p->workspace_size(), 0u);
}

TEST(EmbeddingCpu, BackwardDescriptorRules) {
  const EmbeddingDescriptor f = desc(DType::F32, DType::I32, 5, 3, {4});
  BT_EXPECT_STATUS(EmbeddingBackwardPlan::select(kCpu, bwd(f, EmbeddingGradLayout::Dense, DType::F64)).status(),
                   StatusCode::Unsupported,
                   "EmbeddingBackwardPlan: grad_dtype f64 is not supported for a f32 table (the table's dtype, or f32 "
                   "for an f16 / bf16 table)");
  BT_EXPECT_STATUS(EmbeddingBackwardPlan::select(kCpu, bwd(desc(DType::F64, DType::I32, 5, 3, {4}),
                                                           EmbeddingGradLayout::Dense, DType::F32))
                       .status(),
                   StatusCode::Unsupported, "grad_dtype f32 is not supported for a f64 table");
  BT_EXPECT_STATUS(EmbeddingBackwardPlan::select(kCpu, bwd(desc(DType::BF16, DType::I32, 5, 3, {4}),
                                                           EmbeddingGradLayout::Dense, DType::F16))
                       .status(),
                   StatusCode::Unsupported, "grad_dtype f16 is not supported for a bf16 table");
  EmbeddingBackwardDescriptor b = bwd(f);
  b.layout = static_cast<EmbeddingGradLayout>(7);
  BT_EXPECT_STATUS(EmbeddingBackwardPlan::select(kCpu, b).status(), StatusCode::InvalidProblem,
                   "EmbeddingBackwardPlan: layout 7 is not an EmbeddingGradLayout (dense, compact)");
  auto ok = EmbeddingBackwardPlan::select(kCpu, bwd(desc(DType::BF16, DType::I32, 5, 3, {2, 2}),
                                                    EmbeddingGradLayout::Compact, DType::F32));
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->dweight_shape(), (Dims{4, 3}));
  EXPECT_EQ(ok->dout_shape(), (Dims{2, 2, 3}));
  EXPECT_EQ(ok->sku().op, "indexing.embedding_backward_compact");
  EXPECT_STREQ(embedding_grad_layout_name(EmbeddingGradLayout::Compact), "compact");
}

// ---- argument rules -------------------------------------------------------------------------
TEST(EmbeddingCpu, ArgumentRules) {
  const EmbeddingDescriptor d = desc(DType::F32, DType::I64, 5, 3, {4});
  auto plan = EmbeddingPlan::select(kCpu, d).value();
  std::vector<float> w(15, 1.f), out(12, 0.f);
  std::vector<int64_t> idx = {0, 1, 2, 3};
  std::vector<int32_t> idx32 = {0, 1, 2, 3};
  const TensorRef W = TensorRef::contiguous(w.data(), Device::cpu(), {5, 3}, 15);
  const TensorRef I = TensorRef::contiguous(idx.data(), Device::cpu(), {4}, 4);
  const TensorMut O = TensorMut::contiguous(out.data(), Device::cpu(), {4, 3}, 12);
  EXPECT_TRUE(plan.can_implement({W, I, O}).is_ok());
  BT_EXPECT_STATUS(plan.can_implement({W, TensorRef::contiguous(idx32.data(), Device::cpu(), {4}, 4), O}),
                   StatusCode::InvalidProblem, "EmbeddingPlan: indices dtype i32 must be i64");
  BT_EXPECT_STATUS(plan.can_implement({TensorRef::contiguous(w.data(), Device::cpu(), {3, 5}, 15), I, O}),
                   StatusCode::InvalidProblem, "EmbeddingPlan: weight shape [3,5] must be [5,3]");
  BT_EXPECT_STATUS(plan.can_implement({W, I, TensorMut::contiguous(out.data(), Device::cpu(), {4, 2}, 12)}),
                   StatusCode::InvalidProblem, "EmbeddingPlan: out shape [4,2] must be [4,3]");
  BT_EXPECT_STATUS(plan.can_implement({W, I, TensorMut()}), StatusCode::InvalidProblem, "EmbeddingPlan: out is missing");
  // out overlapping the table
  BT_EXPECT_STATUS(plan.can_implement({W, I, TensorMut::contiguous(w.data(), Device::cpu(), {4, 3}, 15)}),
                   StatusCode::InvalidProblem, "EmbeddingPlan: out overlaps weight");

  // Backward: the layout decides which outputs are given.
  std::vector<float> dout(12, 1.f), dw(15), dc(12);
  std::vector<int64_t> uniq(4), cnt(1);
  EmbeddingBackwardArgs a;
  a.indices = I;
  a.dout = TensorRef::contiguous(dout.data(), Device::cpu(), {4, 3}, 12);
  a.dweight = TensorMut::contiguous(dw.data(), Device::cpu(), {5, 3}, 15);
  auto dense = EmbeddingBackwardPlan::select(kCpu, bwd(d)).value();
  auto compact = EmbeddingBackwardPlan::select(kCpu, bwd(d, EmbeddingGradLayout::Compact)).value();
  EXPECT_TRUE(dense.can_implement(a).is_ok());
  BT_EXPECT_STATUS(compact.can_implement(a), StatusCode::InvalidProblem,
                   "EmbeddingBackwardPlan: dweight is given but layout is compact");
  a.unique_rows = TensorMut::contiguous(uniq.data(), Device::cpu(), {4}, 4);
  BT_EXPECT_STATUS(dense.can_implement(a), StatusCode::InvalidProblem,
                   "EmbeddingBackwardPlan: unique_rows is given but layout is dense");
  a.dweight = TensorMut();
  a.dweight_compact = TensorMut::contiguous(dc.data(), Device::cpu(), {4, 3}, 12);
  BT_EXPECT_STATUS(compact.can_implement(a), StatusCode::InvalidProblem, "EmbeddingBackwardPlan: count");
  a.count = TensorMut::contiguous(cnt.data(), Device::cpu(), {}, 1);
  EXPECT_TRUE(compact.can_implement(a).is_ok()) << compact.can_implement(a).to_string();
  a.count = TensorMut::contiguous(cnt.data(), Device::cpu(), {1}, 1);
  BT_EXPECT_STATUS(compact.can_implement(a), StatusCode::InvalidProblem, "EmbeddingBackwardPlan: count shape [1] must be []");
}

// ---- bad indices ----------------------------------------------------------------------------
TEST(EmbeddingCpu, OutOfRangeIndexNamesTheFirstBadPositionAndWritesNothing) {
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64}) {
    for (const int64_t bad : {int64_t{-1}, int64_t{5}, int64_t{1000}}) {
      const EmbeddingDescriptor d = desc(DType::F32, it, 5, 3, {2, 3});
      bt::EmbData e = bt::emb_random(d, rng);
      e.idx[4] = bad;     // [1,1]
      e.idx[5] = 7;       // a later bad one is not the one named
      const bt::EmbLayouts L = bt::emb_contiguous(bwd(d));
      const auto f = bt::emb_forward(kCpu, d, e, L);
      BT_EXPECT_STATUS(f.st, StatusCode::InvalidProblem,
                       "EmbeddingPlan: indices element [1,1] (position 4) is " + std::to_string(bad) +
                           ", outside [0, 5) (num_embeddings; the first bad index)");
      for (uint8_t b : f.raw) EXPECT_EQ(b, 0xff) << "out written although the call failed";
      for (const auto layout : {EmbeddingGradLayout::Dense, EmbeddingGradLayout::Compact}) {
        const auto g = bt::emb_backward(kCpu, bwd(d, layout), e, bt::emb_contiguous(bwd(d, layout)));
        BT_EXPECT_STATUS(g.st, StatusCode::InvalidProblem, "EmbeddingBackwardPlan: indices element [1,1] (position 4)");
        for (uint8_t b : g.raw) EXPECT_EQ(b, 0xff) << "gradient written although the call failed";
      }
    }
  }
  // check_indices on a CPU plan: Ok (run() reports bad indices itself).
  auto p = EmbeddingPlan::select(kCpu, desc(DType::F32, DType::I64, 5, 3, {2})).value();
  EXPECT_TRUE(p.check_indices(kCpu, Workspace::none()).is_ok());
  EXPECT_EQ(p.check_indices(Stream::cuda(0), Workspace::none()).code(), StatusCode::InvalidProblem);
  EXPECT_EQ(EmbeddingPlan().check_indices(kCpu, Workspace::none()).code(), StatusCode::InvalidProblem);
}

// ---- forward --------------------------------------------------------------------------------
TEST(EmbeddingCpu, ForwardMatchesNaiveModel) {
  Rng rng(bt::fresh_seed());
  const Dims shapes[] = {Dims{}, Dims{7}, Dims{3, 4}, Dims{2, 3, 2}};
  for (const DType t : kFloat)
    for (const DType it : {DType::I32, DType::I64})
      for (const Dims& s : shapes)
        for (const int64_t D : {1, 3, 8, 17}) {
          EmbeddingDescriptor d = desc(t, it, 6, D, s);
          d.has_padding_idx = true;  // read normally in the forward
          d.padding_idx = 2;
          const bt::EmbData e = bt::emb_random(d, rng, 2);  // many duplicates
          const auto f = bt::emb_forward(kCpu, d, e, bt::emb_contiguous(bwd(d)));
          ASSERT_TRUE(f.st.is_ok()) << f.st.to_string();
          EXPECT_EQ(f.out, bt::emb_naive_forward(d, e)) << dtype_name(t) << " " << s.to_string() << " D " << D;
        }
}

TEST(EmbeddingCpu, ForwardStridedViews) {
  Rng rng(bt::fresh_seed());
  const EmbeddingDescriptor d = desc(DType::BF16, DType::I32, 9, 5, {3, 4});
  const bt::EmbData e = bt::emb_random(d, rng, 3);
  const auto want = bt::emb_naive_forward(d, e);
  bt::EmbLayouts L = bt::emb_contiguous(bwd(d));
  const bt::Layout weights[] = {bt::padded({9, 5}, 3), bt::transposed({9, 5}), bt::every_other({9, 5})};
  const bt::Layout indices[] = {bt::transposed({3, 4}), bt::every_other({3, 4}), bt::broadcast({3, 4}, 0)};
  const bt::Layout outs[] = {bt::padded({3, 4, 5}, 2), bt::transposed({3, 4, 5}), bt::every_other({3, 4, 5})};
  for (int k = 0; k < 3; ++k) {
    L.weight = weights[k];
    L.indices = indices[k];
    L.rows = outs[k];
    bt::EmbData ek = e;
    if (k == 2)  // a broadcast index view holds one row of values
      for (int64_t i = 4; i < 12; ++i) ek.idx[static_cast<size_t>(i)] = ek.idx[static_cast<size_t>(i % 4)];
    const auto f = bt::emb_forward(kCpu, d, ek, L);
    ASSERT_TRUE(f.st.is_ok()) << f.st.to_string();
    EXPECT_EQ(f.out, bt::emb_naive_forward(d, ek)) << bt::describe(L.weight) << " " << bt::describe(L.rows);
    // gaps of out keep their poison
    const auto cov = bt::covered(L.rows);
    const size_t es = dtype_size(d.dtype);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i])
        for (size_t b = 0; b < es; ++b) EXPECT_EQ(f.raw[i * es + b], 0xff) << "gap element " << i << " written";
  }
  (void)want;
}

TEST(EmbeddingCpu, EmptyIndices) {
  Rng rng(bt::fresh_seed());
  const EmbeddingDescriptor d = desc(DType::F32, DType::I64, 4, 3, {0, 5});
  const bt::EmbData e = bt::emb_random(d, rng);
  const auto f = bt::emb_forward(kCpu, d, e, bt::emb_contiguous(bwd(d)));
  EXPECT_TRUE(f.st.is_ok()) << f.st.to_string();
  EXPECT_EQ(EmbeddingPlan::select(kCpu, d).value().sku().variant, "empty");
  // Dense: every row of dweight is written (zeros); compact: count 0, nothing else.
  const auto g = bt::emb_backward(kCpu, bwd(d), e, bt::emb_contiguous(bwd(d)));
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
  EXPECT_EQ(g.grad, std::vector<double>(12, 0.0));
  const auto c = bt::emb_backward(kCpu, bwd(d, EmbeddingGradLayout::Compact), e,
                                  bt::emb_contiguous(bwd(d, EmbeddingGradLayout::Compact)));
  ASSERT_TRUE(c.st.is_ok()) << c.st.to_string();
  EXPECT_EQ(c.count, 0);
}

// ---- backward -------------------------------------------------------------------------------
// Reference = the naive position-order loop in the documented accumulator, bit
// for bit; close to the double model.
void expect_backward(const EmbeddingBackwardDescriptor& b, const bt::EmbData& e, const bt::EmbLayouts& L,
                     const std::string& what) {
  const bool f64 = b.forward.dtype == DType::F64;
  const auto exact = f64 ? bt::emb_naive_backward<double>(b, e) : bt::emb_naive_backward<float>(b, e);
  const auto model = bt::emb_naive_backward<double>(b, e);
  const auto g = bt::emb_backward(kCpu, b, e, L);
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string() << " " << what;
  const int64_t D = b.forward.embedding_dim;
  if (b.layout == EmbeddingGradLayout::Dense) {
    EXPECT_EQ(g.grad, exact) << what;
  } else {
    const auto rows = bt::emb_unique_rows(b.forward, e);
    ASSERT_EQ(g.unique, rows) << what;
    for (size_t k = 0; k < rows.size(); ++k)
      for (int64_t j = 0; j < D; ++j)
        EXPECT_EQ(g.grad[k * static_cast<size_t>(D) + static_cast<size_t>(j)], exact[static_cast<size_t>(rows[k] * D + j)])
            << what << " row " << rows[k];
  }
  const double tol = b.grad_dtype == DType::F16 ? 2e-2 : b.grad_dtype == DType::BF16 ? 8e-2 : f64 ? 1e-12 : 1e-5;
  for (size_t i = 0; i < exact.size(); ++i) ASSERT_NEAR(exact[i], model[i], tol * (1 + std::fabs(model[i]))) << what;
}

TEST(EmbeddingCpu, BackwardDenseAndCompactMatchNaiveModel) {
  Rng rng(bt::fresh_seed());
  for (const DType t : kFloat)
    for (const DType it : {DType::I32, DType::I64})
      for (const auto layout : {EmbeddingGradLayout::Dense, EmbeddingGradLayout::Compact})
        for (const int64_t pad : {int64_t{-100}, int64_t{1}, int64_t{-1}}) {  // -100: none
          EmbeddingDescriptor d = desc(t, it, 7, 5, {4, 6});
          d.has_padding_idx = pad != -100;
          d.padding_idx = pad == -100 ? 0 : pad;
          const bt::EmbData e = bt::emb_random(d, rng, 2);  // many to one
          const auto b = bwd(d, layout);
          expect_backward(b, e, bt::emb_contiguous(b),
                          std::string(dtype_name(t)) + " " + embedding_grad_layout_name(layout) + " pad " + std::to_string(pad));
        }
}

TEST(EmbeddingCpu, BackwardPaddingAndUnusedRowsAreZero) {
  Rng rng(bt::fresh_seed());
  EmbeddingDescriptor d = desc(DType::F32, DType::I64, 6, 4, {5});
  d.has_padding_idx = true;
  d.padding_idx = -2;  // row 4
  bt::EmbData e = bt::emb_random(d, rng);
  e.idx = {4, 1, 4, 1, 0};  // rows 2, 3, 5 never indexed; 4 is padding
  const auto g = bt::emb_backward(kCpu, bwd(d), e, bt::emb_contiguous(bwd(d)));
  ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
  for (int64_t r : {2, 3, 4, 5})
    for (int64_t j = 0; j < 4; ++j) EXPECT_EQ(g.grad[static_cast<size_t>(r * 4 + j)], 0.0) << "row " << r;
  for (int64_t j = 0; j < 4; ++j) {
    EXPECT_EQ(g.grad[static_cast<size_t>(4 + j)], static_cast<double>(static_cast<float>(e.dout[4 + j]) + static_cast<float>(e.dout[12 + j])));
    EXPECT_EQ(g.grad[static_cast<size_t>(j)], e.dout[static_cast<size_t>(16 + j)]);
  }
  const auto c = bt::emb_backward(kCpu, bwd(d, EmbeddingGradLayout::Compact), e,
                                  bt::emb_contiguous(bwd(d, EmbeddingGradLayout::Compact)));
  ASSERT_TRUE(c.st.is_ok());
  EXPECT_EQ(c.count, 2);
  EXPECT_EQ(c.unique, (std::vector<int64_t>{0, 1}));
  // Past count: row -1 and zero gradients (every element written).
  EXPECT_EQ(c.unique_all, (std::vector<int64_t>{0, 1, -1, -1, -1}));
  for (size_t i = 8; i < c.grad_all.size(); ++i) EXPECT_EQ(c.grad_all[i], 0.0) << i;
}

TEST(EmbeddingCpu, BackwardStridedViews) {
  Rng rng(bt::fresh_seed());
  for (const auto layout : {EmbeddingGradLayout::Dense, EmbeddingGradLayout::Compact}) {
    const EmbeddingDescriptor d = desc(DType::F16, DType::I64, 8, 6, {3, 5});
    const bt::EmbData e = bt::emb_random(d, rng, 3);
    const auto b = bwd(d, layout, DType::F32);
    bt::EmbLayouts L = bt::emb_contiguous(b);
    L.indices = bt::transposed({3, 5});
    L.rows = bt::padded({3, 5, 6}, 2);
    L.grad = bt::transposed(L.grad.shape);
    L.unique = bt::every_other(L.unique.shape);
    expect_backward(b, e, L, std::string("strided ") + embedding_grad_layout_name(layout));
  }
}

// bf16 table, f32 gradient: the f32 sums unrounded, unlike the bf16 gradient.
TEST(EmbeddingCpu, Float32GradientOfBf16Table) {
  Rng rng(bt::fresh_seed());
  const EmbeddingDescriptor d = desc(DType::BF16, DType::I32, 3, 16, {64});
  const bt::EmbData e = bt::emb_random(d, rng);
  const auto g32 = bt::emb_backward(kCpu, bwd(d, EmbeddingGradLayout::Dense, DType::F32), e, bt::emb_contiguous(bwd(d)));
  const auto g16 = bt::emb_backward(kCpu, bwd(d), e, bt::emb_contiguous(bwd(d)));
  ASSERT_TRUE(g32.st.is_ok() && g16.st.is_ok());
  EXPECT_EQ(g32.grad, bt::emb_naive_backward<float>(bwd(d, EmbeddingGradLayout::Dense, DType::F32), e));
  int rounded = 0;
  for (size_t i = 0; i < g32.grad.size(); ++i) {
    EXPECT_EQ(g16.grad[i], bt::round_to(DType::BF16, g32.grad[i]));
    rounded += g16.grad[i] != g32.grad[i];
  }
  EXPECT_GT(rounded, 0) << "the f32 gradient should keep bits a bf16 one drops";
}

// d(sum(out * c))/d weight by central differences of the forward, f64.
TEST(EmbeddingCpu, BackwardMatchesFiniteDifferences) {
  Rng rng(bt::fresh_seed());
  EmbeddingDescriptor d = desc(DType::F64, DType::I64, 5, 3, {2, 4});
  d.has_padding_idx = true;
  d.padding_idx = 3;
  bt::EmbData e = bt::emb_random(d, rng, 2);
  e.idx[1] = 3;  // a padding index: no gradient
  const auto g = bt::emb_backward(kCpu, bwd(d), e, bt::emb_contiguous(bwd(d)));  // dout = c
  ASSERT_TRUE(g.st.is_ok());
  auto loss = [&](const bt::EmbData& x) {
    const auto out = bt::emb_naive_forward(d, x);
    double s = 0;
    for (size_t i = 0; i < out.size(); ++i) s += out[i] * x.dout[i];
    return s;
  };
  const double h = 1e-6;
  for (int64_t v = 0; v < 5; ++v)
    for (int64_t j = 0; j < 3; ++j) {
      bt::EmbData p = e, m = e;
      p.weight[static_cast<size_t>(v * 3 + j)] += h;
      m.weight[static_cast<size_t>(v * 3 + j)] -= h;
      const double fd = v == 3 ? 0.0 : (loss(p) - loss(m)) / (2 * h);  // padding_idx: no gradient by definition
      EXPECT_NEAR(g.grad[static_cast<size_t>(v * 3 + j)], fd, 1e-7) << "row " << v << " col " << j;
    }
}

TEST(EmbeddingCpu, RunTwiceBitIdentical) {
  Rng rng(bt::fresh_seed());
  const EmbeddingDescriptor d = desc(DType::BF16, DType::I64, 50, 33, {128});
  const bt::EmbData e = bt::emb_random(d, rng, 4);
  const auto b = bwd(d, EmbeddingGradLayout::Dense, DType::F32);
  const auto a1 = bt::emb_backward(kCpu, b, e, bt::emb_contiguous(b), 0xff);
  const auto a2 = bt::emb_backward(kCpu, b, e, bt::emb_contiguous(b), 0x5a);
  ASSERT_TRUE(a1.st.is_ok() && a2.st.is_ok());
  EXPECT_EQ(a1.raw, a2.raw);
}

}  // namespace
