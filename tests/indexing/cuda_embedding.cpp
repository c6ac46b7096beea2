// EmbeddingPlan / EmbeddingBackwardPlan on the GPU against the CPU reference,
// bit for bit (the forward copies; the backward sums every row in position
// order in the same accumulator on both backends):
//   * all table dtypes, i32 / i64 indices, odd D (1, 3, 768, 4100), many
//     duplicates, padding_idx, the f32 gradient of 16-bit tables, dense and compact;
//   * strided views (the element paths) and the variant sku_for() names;
//   * bad indices: the forward writes zero rows, the backward skips them,
//     check_indices() names the first bad position, nothing outside the outputs
//     is written, and the next valid run clears the error word;
//   * run twice bit-identical; the big case V = 50304, D = 768, 8192 tokens.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
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

EmbeddingBackwardDescriptor bwd(const EmbeddingDescriptor& f, EmbeddingGradLayout layout, DType grad) {
  EmbeddingBackwardDescriptor b;
  b.forward = f;
  b.grad_dtype = grad;
  b.layout = layout;
  return b;
}

std::string what(const EmbeddingBackwardDescriptor& b) {
  return std::string(dtype_name(b.forward.dtype)) + " idx " + std::string(dtype_name(b.forward.index_dtype)) + " D " +
         std::to_string(b.forward.embedding_dim) + " n " + std::to_string(shape_numel(b.forward.index_shape)) + " grad " +
         std::string(dtype_name(b.grad_dtype)) + " " + embedding_grad_layout_name(b.layout);
}

void expect_forward_matches(const EmbeddingDescriptor& d, const bt::EmbData& e, const bt::EmbLayouts& L,
                            const std::string& w) {
  const auto gpu = bt::emb_forward(bt::kGpu, d, e, L);
  const auto cpu = bt::emb_forward(kCpu, d, e, L);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  EXPECT_EQ(gpu.raw, cpu.raw) << "forward differs from the CPU (gaps included): " << w;
}

void expect_backward_matches(const EmbeddingBackwardDescriptor& b, const bt::EmbData& e, const bt::EmbLayouts& L) {
  const auto gpu = bt::emb_backward(bt::kGpu, b, e, L);
  const auto cpu = bt::emb_backward(kCpu, b, e, L);
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << what(b);
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << what(b);
  EXPECT_TRUE(gpu.check.is_ok()) << gpu.check.to_string();
  if (b.layout == EmbeddingGradLayout::Dense) {
    EXPECT_EQ(gpu.raw, cpu.raw) << "dense gradient differs from the CPU: " << what(b);
  } else {
    EXPECT_EQ(gpu.count, cpu.count) << what(b);
    EXPECT_EQ(gpu.unique, cpu.unique) << what(b);
    EXPECT_EQ(gpu.grad, cpu.grad) << "compact gradient differs from the CPU: " << what(b);
    EXPECT_EQ(gpu.unique_all, cpu.unique_all) << "rows past count: " << what(b);
    EXPECT_EQ(gpu.raw, cpu.raw) << "compact gradient storage (rows past count: zeros): " << what(b);
  }
}

TEST(EmbeddingCuda, ForwardMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : kFloat)
    for (const DType it : {DType::I32, DType::I64})
      for (const int64_t D : {1, 3, 8, 768, 4100})
        for (const Dims& s : {Dims{37}, Dims{3, 5}, Dims{}}) {
          EmbeddingDescriptor d = desc(t, it, 100, D, s);
          d.has_padding_idx = true;
          d.padding_idx = 1;
          const bt::EmbData e = bt::emb_random(d, rng, 2);
          expect_forward_matches(d, e, bt::emb_contiguous(bwd(d, EmbeddingGradLayout::Dense, t)),
                                 std::string(dtype_name(t)) + " D " + std::to_string(D));
        }
}

TEST(EmbeddingCuda, BackwardMatchesCpu) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType t : kFloat)
    for (const DType it : {DType::I32, DType::I64})
      for (const int64_t D : {1, 3, 768, 4100})
        for (const auto layout : {EmbeddingGradLayout::Dense, EmbeddingGradLayout::Compact})
          for (const bool f32_grad : {false, true}) {
            if (f32_grad && !(t == DType::F16 || t == DType::BF16)) continue;
            EmbeddingDescriptor d = desc(t, it, 60, D, {5, 19});
            d.has_padding_idx = D != 3;
            d.padding_idx = -3;
            const bt::EmbData e = bt::emb_random(d, rng, 3);  // half the indices on 3 rows
            const auto b = bwd(d, layout, f32_grad ? DType::F32 : t);
            expect_backward_matches(b, e, bt::emb_contiguous(b));
          }
}

TEST(EmbeddingCuda, ManyDuplicatesAndEmpty) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const auto layout : {EmbeddingGradLayout::Dense, EmbeddingGradLayout::Compact}) {
    EmbeddingDescriptor d = desc(DType::BF16, DType::I64, 1000, 96, {4096});
    bt::EmbData e = bt::emb_random(d, rng);
    for (auto& v : e.idx) v = 7;  // every token on one row
    const auto b = bwd(d, layout, DType::F32);
    expect_backward_matches(b, e, bt::emb_contiguous(b));
    const EmbeddingDescriptor empty = desc(DType::F32, DType::I32, 10, 8, {0});
    const bt::EmbData ee = bt::emb_random(empty, rng);
    const auto be = bwd(empty, layout, DType::F32);
    expect_backward_matches(be, ee, bt::emb_contiguous(be));
  }
}

TEST(EmbeddingCuda, StridedViewsAndVariants) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const EmbeddingDescriptor d = desc(DType::F16, DType::I32, 40, 24, {6, 7});
  const bt::EmbData e = bt::emb_random(d, rng, 4);
  auto fp = EmbeddingPlan::select(bt::kGpu, d).value();
  EXPECT_EQ(fp.sku().variant, "warp.vec16");
  bt::EmbLayouts L = bt::emb_contiguous(bwd(d, EmbeddingGradLayout::Dense, DType::F16));
  L.weight = bt::transposed({40, 24});
  L.indices = bt::transposed({6, 7});
  L.rows = bt::every_other({6, 7, 24});
  expect_forward_matches(d, e, L, "strided forward");
  {
    bt::EmbTensor w(Device::cuda(0), d.dtype, L.weight, &e.weight, nullptr);
    bt::EmbTensor ix(Device::cuda(0), d.index_dtype, L.indices, nullptr, &e.idx);
    bt::EmbTensor out(Device::cuda(0), d.dtype, L.rows, nullptr, nullptr);
    Buffer ws(Device::cuda(0), fp.workspace_size());
    auto s = fp.sku_for(bt::kGpu, Workspace(ws.data(), fp.workspace_size()), {w.ref(), ix.ref(), out.mut()});
    ASSERT_TRUE(s.is_ok()) << s.status().to_string();
    EXPECT_EQ(s->variant, "warp");
  }
  // Padded rows keep 16-byte alignment (row stride 24 + 8 halves): still the vector path.
  bt::EmbLayouts P = bt::emb_contiguous(bwd(d, EmbeddingGradLayout::Dense, DType::F16));
  P.rows = bt::Layout{};
  P.rows.shape = {6, 7, 24};
  P.rows.strides = {7 * 32, 32, 1};
  P.rows.storage = 6 * 7 * 32;
  P.rows.name = "row-padded";
  expect_forward_matches(d, e, P, "row-padded forward");
  for (const auto layout : {EmbeddingGradLayout::Dense, EmbeddingGradLayout::Compact}) {
    const auto b = bwd(d, layout, DType::F32);
    auto bp = EmbeddingBackwardPlan::select(bt::kGpu, b).value();
    EXPECT_EQ(bp.sku().variant, "sorted.vec16");
    bt::EmbLayouts B = bt::emb_contiguous(b);
    B.indices = bt::every_other({6, 7});
    B.rows = bt::transposed({6, 7, 24});
    B.grad = bt::padded(B.grad.shape, 3);
    B.unique = bt::every_other(B.unique.shape);
    expect_backward_matches(b, e, B);
    B.rows = P.rows;  // aligned dout rows, misaligned gradient (padded view starts at element 29): element path
    expect_backward_matches(b, e, B);
  }
}

// Bad indices: no access outside the tensors, zero rows / skipped
// contributions, the first bad position reported by check_indices().
TEST(EmbeddingCuda, BadIndicesAreReportedNeverDereferenced) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  for (const DType it : {DType::I32, DType::I64}) {
    const EmbeddingDescriptor d = desc(DType::F32, it, 50, 40, {3, 11});
    bt::EmbData e = bt::emb_random(d, rng, 3);
    bt::EmbData bad = e;
    bad.idx[20] = -7;        // [1,9]
    bad.idx[12] = 50;        // [1,1]: the first bad position
    bad.idx[30] = 1 << 30;
    // Out in a padded layout: its gaps must keep their poison.
    bt::EmbLayouts L = bt::emb_contiguous(bwd(d, EmbeddingGradLayout::Dense, DType::F32));
    L.rows = bt::padded({3, 11, 40}, 4);
    const auto f = bt::emb_forward(bt::kGpu, d, bad, L);
    ASSERT_TRUE(f.st.is_ok()) << f.st.to_string();
    BT_EXPECT_STATUS(f.check, StatusCode::InvalidProblem,
                     "EmbeddingPlan: indices element [1,1] (position 12) is outside [0, 50) (num_embeddings; the first "
                     "bad index, found on the GPU: its output row was written as zeros)");
    const auto want = bt::emb_naive_forward(d, [&] {
      bt::EmbData ok = bad;
      for (size_t p : {12, 20, 30}) ok.idx[p] = e.idx[p];
      return ok;
    }());
    for (size_t p = 0; p < bad.idx.size(); ++p)
      for (int64_t j = 0; j < 40; ++j) {
        const size_t i = p * 40 + static_cast<size_t>(j);
        const bool is_bad = p == 12 || p == 20 || p == 30;
        ASSERT_EQ(f.out[i], is_bad ? 0.0 : want[i]) << "position " << p;
      }
    const auto cov = bt::covered(L.rows);
    for (size_t i = 0; i < cov.size(); ++i)
      if (!cov[i])
        for (size_t b = 0; b < 4; ++b) ASSERT_EQ(f.raw[i * 4 + b], 0xff) << "out gap element " << i << " written";

    for (const auto layout : {EmbeddingGradLayout::Dense, EmbeddingGradLayout::Compact}) {
      const auto b = bwd(d, layout, DType::F32);
      const auto g = bt::emb_backward(bt::kGpu, b, bad, bt::emb_contiguous(b));
      ASSERT_TRUE(g.st.is_ok()) << g.st.to_string();
      BT_EXPECT_STATUS(g.check, StatusCode::InvalidProblem,
                       "EmbeddingBackwardPlan: indices element [1,1] (position 12) is outside [0, 50) (num_embeddings; "
                       "the first bad index, found on the GPU: its contribution was skipped)");
      bt::EmbData skipped = bad;  // the naive model skips index -1 (no padding_idx here)
      for (size_t p : {12, 20, 30}) skipped.idx[p] = -1;
      const auto model = bt::emb_naive_backward<float>(b, skipped);
      if (layout == EmbeddingGradLayout::Dense) {
        EXPECT_EQ(g.grad, model);
      } else {
        std::vector<int64_t> rows = bt::emb_unique_rows(d, skipped);
        rows.erase(std::remove(rows.begin(), rows.end(), int64_t{-1}), rows.end());
        ASSERT_EQ(g.unique, rows);
        for (size_t k = 0; k < rows.size(); ++k)
          for (int64_t j = 0; j < 40; ++j)
            EXPECT_EQ(g.grad[k * 40 + static_cast<size_t>(j)], model[static_cast<size_t>(rows[k] * 40 + j)]);
      }
    }
  }
  // The next valid run with the same workspace clears the word.
  const EmbeddingDescriptor d = desc(DType::BF16, DType::I64, 8, 16, {5});
  auto plan = EmbeddingPlan::select(bt::kGpu, d).value();
  bt::EmbData e = bt::emb_random(d, rng);
  bt::EmbLayouts L = bt::emb_contiguous(bwd(d, EmbeddingGradLayout::Dense, DType::BF16));
  Buffer ws(Device::cuda(0), plan.workspace_size());
  const Workspace W(ws.data(), plan.workspace_size());
  for (const int64_t v : {int64_t{8}, int64_t{3}}) {
    e.idx[2] = v;
    bt::EmbTensor w(Device::cuda(0), d.dtype, L.weight, &e.weight, nullptr);
    bt::EmbTensor ix(Device::cuda(0), d.index_dtype, L.indices, nullptr, &e.idx);
    bt::EmbTensor out(Device::cuda(0), d.dtype, L.rows, nullptr, nullptr);
    ASSERT_TRUE(plan.run(bt::kGpu, W, {w.ref(), ix.ref(), out.mut()}).is_ok());
    const Status st = plan.check_indices(bt::kGpu, W);
    if (v == 8) EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << st.to_string();
    else EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  BT_EXPECT_STATUS(plan.check_indices(bt::kGpu, Workspace(ws.data(), 8)), StatusCode::WorkspaceTooSmall,
                   "EmbeddingPlan: workspace");
}

TEST(EmbeddingCuda, RunTwiceBitIdentical) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const EmbeddingDescriptor d = desc(DType::BF16, DType::I32, 500, 768, {2048});
  const bt::EmbData e = bt::emb_random(d, rng, 5);
  for (const auto layout : {EmbeddingGradLayout::Dense, EmbeddingGradLayout::Compact}) {
    const auto b = bwd(d, layout, DType::F32);
    const auto g1 = bt::emb_backward(bt::kGpu, b, e, bt::emb_contiguous(b), 0xff);
    const auto g2 = bt::emb_backward(bt::kGpu, b, e, bt::emb_contiguous(b), 0x5a);
    ASSERT_TRUE(g1.st.is_ok() && g2.st.is_ok());
    EXPECT_EQ(g1.grad, g2.grad);
    EXPECT_EQ(g1.unique, g2.unique);
    if (layout == EmbeddingGradLayout::Dense) EXPECT_EQ(g1.raw, g2.raw);
  }
}

// The benchmark's first shape: V = 50304, D = 768, 8192 tokens, bf16.
TEST(EmbeddingCuda, BigCase) {
  BT_SKIP_WITHOUT_GPU();
  Rng rng(bt::fresh_seed());
  const EmbeddingDescriptor d = desc(DType::BF16, DType::I64, 50304, 768, {4, 2048});
  const bt::EmbData e = bt::emb_random(d, rng);
  expect_forward_matches(d, e, bt::emb_contiguous(bwd(d, EmbeddingGradLayout::Dense, DType::BF16)), "big forward");
  for (const DType g : {DType::BF16, DType::F32}) {
    const auto b = bwd(d, EmbeddingGradLayout::Dense, g);
    expect_backward_matches(b, e, bt::emb_contiguous(b));
  }
  const auto c = bwd(d, EmbeddingGradLayout::Compact, DType::F32);
  expect_backward_matches(c, e, bt::emb_contiguous(c));
}

}  // namespace
