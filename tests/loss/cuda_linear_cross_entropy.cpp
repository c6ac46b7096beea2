// FusedLinearCrossEntropyPlan on the GPU against the CPU reference (fresh
// random data, NaN-poisoned outputs): every dtype, shapes up to 262,144
// classes, chunk_rows sweeps (1, 7, 64, N - 1, N in f32 / f64; at most 8
// chunks in f16 / bf16, whose dW and db round once per chunk), the split
// cross-entropy path inside chunks, ignore_index on some / every row,
// smoothing + weights + z-loss, every reduction, bias on / off, each need_*
// combination, strided H / dH, zero rows, bit-identical reruns, the unfused
// CUDA composition, the workspace limit and WorkspaceTooSmall. Skips without
// a GPU, or when the build left the gemm family out.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/linear_ce_helpers.hpp"
#include "support/reduce_helpers.hpp"  // BT_EXPECT_STATUS
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::kGpu;
using bt::lce_desc;
using bt::LceData;
using bt::LceLayout;
using bt::LceResult;

namespace {

const Stream kCpu = Stream::cpu();

// The CUDA plan needs the gemm family's kernels (LinearPlan / LinearBackwardPlan).
#define SKIP_WITHOUT_GEMM()                                                                              \
  do {                                                                                                   \
    const Status _st = FusedLinearCrossEntropyPlan::select(kGpu, lce_desc(DType::F32, 2, 4, 3)).status(); \
    if (_st.code() == StatusCode::Unsupported && _st.message().find("CUDA kernels") != std::string::npos) \
      GTEST_SKIP() << _st.to_string();                                                                   \
  } while (0)

std::string describe(const FusedLinearCrossEntropyDescriptor& d) {
  return std::string(dtype_name(d.dtype)) + " N " + std::to_string(d.rows) + " D " + std::to_string(d.in_features) +
         " V " + std::to_string(d.classes) + " " + loss_reduction_name(d.reduction) + (d.has_bias ? " bias" : "") +
         (d.has_weight ? " weight" : "") + (d.label_smoothing > 0 ? " smooth" : "") + (d.z_loss > 0 ? " z" : "") +
         " need" + (d.need_dh ? " dh" : "") + (d.need_dw ? " dw" : "") + (d.need_db ? " db" : "") + " chunk_rows " +
         std::to_string(d.chunk_rows);
}

std::string compare(const char* what, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
  const double e = bt::rel_error(got, ref);
  if (e <= tol) return "";
  return std::string(what) + " rel error " + std::to_string(e) + " > " + std::to_string(tol) + "; " +
         bt::describe_mismatch(got, ref) + " ";
}

std::string compare_all(const LceResult& got, const LceResult& ref, double tol) {
  return compare("loss", got.loss, ref.loss, tol) + compare("lse", got.lse, ref.lse, tol) + compare("dh", got.dh, ref.dh, tol) +
         compare("dw", got.dw, ref.dw, tol) + compare("db", got.db, ref.db, tol);
}

// GPU vs CPU reference tolerances (relative L2), those of the cross-entropy
// kernels' tests (tests/loss/cuda_cross_entropy.cpp): the loss and lse are
// accumulated in f32 (f64), dlogits rounded to the dtype, and the GEMMs
// accumulate in f32 (f64) where the reference sums in double.
double tol_of(DType t) { return t == DType::F64 ? 1e-10 : t == DType::F32 ? 2e-5 : t == DType::F16 ? 2e-3 : 1e-2; }

// Runs d on the GPU twice (bit-identical) and against the CPU reference.
::testing::AssertionResult check(const FusedLinearCrossEntropyDescriptor& d, const LceLayout& L = {},
                                 double ignore_frac = 0.2, int64_t expect_chunks = -1) {
  bt::Rng rng(bt::fresh_seed(describe(d)));
  const LceData x = bt::make_lce_data(d, rng, ignore_frac);
  auto cpu = FusedLinearCrossEntropyPlan::select(kCpu, d);
  if (!cpu) return ::testing::AssertionFailure() << describe(d) << ": CPU select: " << cpu.status().to_string();
  const LceResult ref = bt::lce_run(kCpu, *cpu, x, L);
  if (!ref.st.is_ok()) return ::testing::AssertionFailure() << describe(d) << ": CPU: " << ref.st.to_string();
  auto gpu = FusedLinearCrossEntropyPlan::select(kGpu, d);
  if (!gpu) return ::testing::AssertionFailure() << describe(d) << ": CUDA select: " << gpu.status().to_string();
  if (expect_chunks >= 0 && gpu->chunks() != expect_chunks)
    return ::testing::AssertionFailure() << describe(d) << ": " << gpu->chunks() << " chunks, expected " << expect_chunks;
  const LceResult a = bt::lce_run(kGpu, *gpu, x, L), b = bt::lce_run(kGpu, *gpu, x, L);
  if (!a.st.is_ok()) return ::testing::AssertionFailure() << describe(d) << ": CUDA: " << a.st.to_string();
  if (!b.st.is_ok()) return ::testing::AssertionFailure() << describe(d) << ": CUDA rerun: " << b.st.to_string();
  const std::string rerun = compare_all(b, a, 0.0);
  if (!rerun.empty()) return ::testing::AssertionFailure() << describe(d) << ": rerun not bit-identical: " << rerun;
  const std::string e = compare_all(a, ref, tol_of(d.dtype));
  if (!e.empty()) return ::testing::AssertionFailure() << describe(d) << " (" << gpu->sku().variant << "): " << e;
  return ::testing::AssertionSuccess();
}

FusedLinearCrossEntropyDescriptor options(FusedLinearCrossEntropyDescriptor d, LossReduction r = LossReduction::Mean) {
  d.reduction = r;
  d.label_smoothing = 0.1;
  d.has_weight = true;
  d.z_loss = 1e-3;
  return d;
}

constexpr DType kTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

TEST(CudaLinearCrossEntropy, ShapesAndDtypes) {
  BT_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_GEMM();
  struct Shape {
    int64_t n, d, v;
  };
  for (const Shape s : {Shape{1, 8, 7}, Shape{37, 64, 1000}, Shape{300, 128, 4096}, Shape{200, 64, 50304}, Shape{40, 32, 262144}})
    for (DType t : kTypes) {
      auto d = options(lce_desc(t, s.n, s.d, s.v));
      d.chunk_rows = (s.n + 3) / 4;  // up to 4 chunks, the last one shorter
      EXPECT_TRUE(check(d));
    }
}

TEST(CudaLinearCrossEntropy, ChunkRowsSweep) {
  BT_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_GEMM();
  for (DType t : {DType::F32, DType::F64}) {
    const int64_t N = 150;
    for (int64_t c : {int64_t{1}, int64_t{7}, int64_t{64}, N - 1, N}) {
      auto d = options(lce_desc(t, N, 48, 700));
      d.chunk_rows = c;
      EXPECT_TRUE(check(d, {}, 0.2, (N + c - 1) / c));
    }
  }
  for (DType t : {DType::F16, DType::BF16})
    for (int64_t c : {int64_t{19}, int64_t{64}, int64_t{150}}) {  // 8, 3 and 1 chunks
      auto d = options(lce_desc(t, 150, 48, 700));
      d.chunk_rows = c;
      EXPECT_TRUE(check(d, {}, 0.2, (150 + c - 1) / c));
    }
}

TEST(CudaLinearCrossEntropy, SplitPathInsideChunks) {
  BT_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_GEMM();
  // 7-row chunks (fewer rows than SMs) of 131,072 classes take the split path.
  for (DType t : {DType::F32, DType::BF16}) {
    auto d = options(lce_desc(t, 20, 32, 131072));
    d.chunk_rows = 7;
    EXPECT_TRUE(check(d, {}, 0.2, 3));
    auto p = FusedLinearCrossEntropyPlan::select(kGpu, d);
    ASSERT_TRUE(p);
    EXPECT_NE(p->sku().variant.find("ce:split"), std::string::npos) << p->sku().variant;
  }
}

TEST(CudaLinearCrossEntropy, EveryReductionBiasAndNeed) {
  BT_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_GEMM();
  for (LossReduction r : {LossReduction::None, LossReduction::Mean, LossReduction::Sum})
    for (bool bias : {false, true})
      for (int mask = 0; mask < 8; ++mask) {
        if ((mask & 4) && !bias) continue;
        auto d = options(lce_desc(DType::F32, 70, 40, 3000, bias), r);
        d.need_dh = mask & 1;
        d.need_dw = mask & 2;
        d.need_db = mask & 4;
        d.chunk_rows = 32;
        EXPECT_TRUE(check(d));
      }
  // Plain cross-entropy (no options), i32 targets, loss in the dtype.
  auto d = lce_desc(DType::BF16, 70, 40, 3000);
  d.index_dtype = DType::I32;
  d.loss_dtype = DType::BF16;
  d.chunk_rows = 32;
  EXPECT_TRUE(check(d));
}

TEST(CudaLinearCrossEntropy, IgnoredRows) {
  BT_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_GEMM();
  // Every row ignored: Mean is 0 / 0 = NaN (as PyTorch) and every gradient 0.
  auto d = options(lce_desc(DType::F32, 50, 16, 500));
  d.chunk_rows = 16;
  EXPECT_TRUE(check(d, {}, 1.0));
  EXPECT_TRUE(check(d, {}, 0.5));
}

TEST(CudaLinearCrossEntropy, StridedHiddenAndZeroRows) {
  BT_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_GEMM();
  auto d = options(lce_desc(DType::F32, 60, 40, 900));
  d.chunk_rows = 25;
  EXPECT_TRUE(check(d, LceLayout{56, true}));  // H / dH rows padded to 56
  EXPECT_TRUE(check(d, LceLayout{0, false}));  // no lse
  for (LossReduction r : {LossReduction::Mean, LossReduction::Sum, LossReduction::None}) {
    auto z = lce_desc(DType::F32, 0, 16, 300);
    z.reduction = r;
    EXPECT_TRUE(check(z));  // dW = db = 0; Mean NaN, Sum 0
  }
}

// Our own unfused composition on the GPU: LinearPlan, CrossEntropyPlan with_grad
// in place, LinearBackwardPlan.
LceResult unfused_cuda(const FusedLinearCrossEntropyDescriptor& d, const LceData& x) {
  using namespace bt::ce_detail;
  const int64_t N = d.rows, D = d.in_features, V = d.classes;
  const DType t = d.dtype;
  LceResult r;
  Buffer h = upload(kGpu, bt::host_from(t, x.h)), w = upload(kGpu, bt::host_from(t, x.w)),
         tg = upload(kGpu, bt::host_from_i64(d.index_dtype, x.target)), dl = upload(kGpu, bt::host_from(d.loss_dtype, x.dloss));
  Buffer logits = poisoned(kGpu, t, N * V), loss = poisoned(kGpu, d.loss_dtype, 1), dh = poisoned(kGpu, t, N * D),
         dw = poisoned(kGpu, t, V * D);
  LinearDescriptor ld;
  ld.dtype = t;
  ld.x_shape = Dims{N, D};
  ld.out_features = V;
  ld.has_bias = false;
  auto lin = LinearPlan::select(kGpu, ld);
  CrossEntropyDescriptor cd = bt::lce_ce_desc(d);
  cd.with_grad = true;
  auto ce = CrossEntropyPlan::select(kGpu, cd);
  LinearBackwardDescriptor bd;
  bd.forward = ld;
  bd.need_db = false;
  auto bwd = LinearBackwardPlan::select(kGpu, bd);
  if (!lin || !ce || !bwd) {
    r.st = !lin ? lin.status() : !ce ? ce.status() : bwd.status();
    return r;
  }
  Buffer ws(kGpu.device(), std::max({lin->workspace_size(), ce->workspace_size(), bwd->workspace_size(), size_t{16}}));
  LinearArgs la;
  la.x = h.view(t, {N, D});
  la.weight = w.view(t, {V, D});
  la.y = logits.view_mut(t, {N, V});
  r.st = lin->run(kGpu, Workspace(ws.data(), lin->workspace_size()), la);
  CrossEntropyArgs ca;
  ca.logits = logits.view(t, {N, V});
  ca.target = tg.view(d.index_dtype, {N});
  ca.loss = loss.view_mut(d.loss_dtype, {}, {});
  ca.dloss = dl.view(d.loss_dtype, {}, {});
  ca.dlogits = logits.view_mut(t, {N, V});
  if (r.st.is_ok()) r.st = ce->run(kGpu, Workspace(ws.data(), ce->workspace_size()), ca);
  LinearBackwardArgs ba;
  ba.dy = logits.view(t, {N, V});
  ba.x = la.x;
  ba.weight = la.weight;
  ba.dx = dh.view_mut(t, {N, D});
  ba.dw = dw.view_mut(t, {V, D});
  if (r.st.is_ok()) r.st = bwd->run(kGpu, Workspace(ws.data(), bwd->workspace_size()), ba);
  if (r.st.is_ok()) r.st = synchronize(kGpu);
  if (!r.st.is_ok()) return r;
  r.loss = gather_vec(download(loss, d.loss_dtype, 1), 1, 1);
  r.dh = gather_vec(download(dh, t, N * D), N * D, 1);
  r.dw = gather_vec(download(dw, t, V * D), V * D, 1);
  return r;
}

TEST(CudaLinearCrossEntropy, MatchesTheUnfusedComposition) {
  BT_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_GEMM();
  auto d = lce_desc(DType::BF16, 512, 256, 32000, /*bias=*/false);
  d.chunk_rows = 128;  // 4 chunks
  bt::Rng rng(bt::fresh_seed("lce unfused cuda"));
  const LceData x = bt::make_lce_data(d, rng);
  auto plan = FusedLinearCrossEntropyPlan::select(kGpu, d);
  ASSERT_TRUE(plan) << plan.status().to_string();
  const LceResult fused = bt::lce_run(kGpu, *plan, x, LceLayout{0, false}), ref = unfused_cuda(d, x);
  ASSERT_TRUE(fused.st.is_ok()) << fused.st.to_string();
  ASSERT_TRUE(ref.st.is_ok()) << ref.st.to_string();
  const double tol = tol_of(d.dtype);
  const std::string e = compare("loss", fused.loss, ref.loss, tol) + compare("dh", fused.dh, ref.dh, tol) +
                        compare("dw", fused.dw, ref.dw, tol);
  EXPECT_TRUE(e.empty()) << plan->sku().variant << ": " << e;
}

TEST(CudaLinearCrossEntropy, WorkspaceLimitAndTooSmall) {
  BT_SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_GEMM();
  // A limit of a quarter of the logits: the plan's whole workspace fits it, in several chunks.
  auto d = lce_desc(DType::BF16, 4096, 64, 65536, false);
  d.need_db = false;
  d.workspace_limit = static_cast<size_t>(4096) * 65536 * 2 / 4;
  auto p = FusedLinearCrossEntropyPlan::select(kGpu, d);
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_LE(p->workspace_size(), d.workspace_limit);
  EXPECT_GT(p->chunks(), 1);
  EXPECT_LT(p->chunk_rows() * (p->chunks() - 1), d.rows);
  // A limit below one row of logits plus the fixed scratch.
  d.workspace_limit = 1 << 20;
  BT_EXPECT_STATUS(FusedLinearCrossEntropyPlan::select(kGpu, d).status(), StatusCode::InvalidProblem, "workspace_limit");
  // chunk_rows that cannot fit a non-zero limit.
  d.workspace_limit = static_cast<size_t>(64) << 20;
  d.chunk_rows = 4096;
  BT_EXPECT_STATUS(FusedLinearCrossEntropyPlan::select(kGpu, d).status(), StatusCode::InvalidProblem, "chunk_rows 4096");
  // run() with less than workspace_size().
  auto small = lce_desc(DType::F32, 8, 16, 100);
  auto q = FusedLinearCrossEntropyPlan::select(kGpu, small);
  ASSERT_TRUE(q);
  Buffer ws(kGpu.device(), 16);
  EXPECT_EQ(q->run(kGpu, Workspace(ws.data(), 16), FusedLinearCrossEntropyArgs{}).code(), StatusCode::InvalidProblem);
  bt::Rng rng(bt::fresh_seed("lce ws"));
  const LceData x = bt::make_lce_data(small, rng);
  using namespace bt::ce_detail;
  Buffer h = upload(kGpu, bt::host_from(DType::F32, x.h)), w = upload(kGpu, bt::host_from(DType::F32, x.w)),
         b = upload(kGpu, bt::host_from(DType::F32, x.b)), tg = upload(kGpu, bt::host_from_i64(DType::I64, x.target)),
         dl = upload(kGpu, bt::host_from(DType::F32, x.dloss)), loss = poisoned(kGpu, DType::F32, 1),
         dh = poisoned(kGpu, DType::F32, 8 * 16), dw = poisoned(kGpu, DType::F32, 100 * 16), db = poisoned(kGpu, DType::F32, 100);
  FusedLinearCrossEntropyArgs a;
  a.hidden = h.view(DType::F32, {8, 16});
  a.weight = w.view(DType::F32, {100, 16});
  a.bias = b.view(DType::F32, {100});
  a.target = tg.view(DType::I64, {8});
  a.dloss = dl.view(DType::F32, {}, {});
  a.loss = loss.view_mut(DType::F32, {}, {});
  a.dhidden = dh.view_mut(DType::F32, {8, 16});
  a.dweight = dw.view_mut(DType::F32, {100, 16});
  a.dbias = db.view_mut(DType::F32, {100});
  ASSERT_TRUE(q->can_implement(a).is_ok()) << q->can_implement(a).to_string();
  EXPECT_EQ(q->run(kGpu, Workspace(ws.data(), 16), a).code(), StatusCode::WorkspaceTooSmall);
}

}  // namespace
