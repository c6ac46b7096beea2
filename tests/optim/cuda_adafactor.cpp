// AdafactorPlan on the GPU against the CPU reference (several steps from zero
// state, fresh gradients each step):
//   * shapes [0], [1], [5], [], [7, 3], [2, 7, 3] (batched), [33, 70],
//     [3, 130, 5], [768, 3072] (GPT-2's MLP); f32, bf16, f16 parameters;
//   * weight decay, maximize, a clipped update (d), explicit eps1;
//   * device scalars (step_tensor / lr_tensor) and CUDA graph capture: a
//     captured run replayed with new gradients and learning rates equals the
//     CPU's steps;
//   * run twice from the same state: the same bits (fixed reduction orders);
//   * parameters above 4 Mi elements (the update's scale summed once by a
//     separate single-block kernel); 70 small vectors (two batched launches).
// Reductions round differently (f32 in a fixed tree on CUDA, double on the
// CPU), everything elementwise is shared code: f32 results agree to ~1e-6.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/ops/optim_adafactor.hpp"
#include "support/adafactor_helpers.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

const Stream kCpu = Stream::cpu();

double tol_for(DType t) { return t == DType::F32 ? 1e-5 : t == DType::F16 ? 2e-3 : 1e-2; }

void expect_close(const bt::AfResult& gpu, const bt::AfResult& cpu, double tol, const std::string& w) {
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << w;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << w;
  ASSERT_EQ(gpu.params.size(), cpu.params.size());
  for (size_t i = 0; i < cpu.params.size(); ++i) {
    EXPECT_LE(bt::rel_error(gpu.params[i], cpu.params[i]), tol) << "params[" << i << "] " << w;
    EXPECT_LE(bt::rel_error(gpu.row_vars[i], cpu.row_vars[i]), 1e-5) << "row_vars[" << i << "] " << w;
    EXPECT_LE(bt::rel_error(gpu.col_vars[i], cpu.col_vars[i]), 1e-5) << "col_vars[" << i << "] " << w;
    // variances: the same lerp of the same g * g on both backends
    EXPECT_EQ(gpu.variances[i], cpu.variances[i]) << "variances[" << i << "] " << w;
  }
  EXPECT_EQ(gpu.step, cpu.step);
}

void compare(const AdafactorDescriptor& d, int steps, const std::string& w, double grad_scale = 1.0) {
  const bt::AfProblem p = bt::af_problem(d, steps, bt::fresh_seed(), grad_scale);
  const auto gpu = bt::af_run(bt::kGpu, p, bt::bespoke());
  const auto cpu = bt::af_run(kCpu, p);
  expect_close(gpu, cpu, tol_for(d.dtype), w);
  bool any = false;
  for (const Dims& s : d.shapes) any = any || bt::numel(s) > 0;
  EXPECT_EQ(gpu.variant, any || d.device_scalars ? "factored" : "empty") << w;
}

const std::vector<Dims> kShapes = {{0}, {1}, {5}, {}, {7, 3}, {2, 7, 3}, {33, 70}, {3, 130, 5}, {4, 0}};

TEST(AdafactorCuda, MatchesCpuF32) {
  BT_SKIP_WITHOUT_GPU();
  compare(bt::af_desc(DType::F32, kShapes), 4, "f32 list");
  for (const Dims& s : kShapes) compare(bt::af_desc(DType::F32, {s}), 3, "alone " + s.to_string());
}

TEST(AdafactorCuda, MatchesCpuHalfPrecision) {
  BT_SKIP_WITHOUT_GPU();
  for (const DType t : {DType::BF16, DType::F16}) {
    compare(bt::af_desc(t, kShapes), 3, std::string(dtype_name(t)));
    AdafactorDescriptor d = bt::af_desc(t, {{64, 96}, {300}});
    d.eps1 = 1e-3;
    compare(d, 3, std::string(dtype_name(t)) + " eps1 1e-3");
  }
}

TEST(AdafactorCuda, WeightDecayMaximizeClip) {
  BT_SKIP_WITHOUT_GPU();
  for (const DType t : {DType::F32, DType::BF16}) {
    AdafactorDescriptor d = bt::af_desc(t, {{17, 40}, {2, 5, 9}, {33}});
    d.lr = 0.05, d.weight_decay = 0.2, d.maximize = true;
    compare(d, 4, "wd maximize");
    d.d = 1.0, d.lr = 0.3, d.beta2_decay = -0.5, d.eps2 = 0.1;
    compare(d, 4, "clip", 1e-3);  // small gradients: u is large where v was clamped
  }
}

TEST(AdafactorCuda, Gpt2Matrix) {
  BT_SKIP_WITHOUT_GPU();
  compare(bt::af_desc(DType::F32, {{768, 3072}, {3072}, {3072, 768}}), 2, "gpt2 f32");
  compare(bt::af_desc(DType::BF16, {{768, 3072}}), 2, "gpt2 bf16");
}

// Parameters of more than 1024 blocks of 4096 elements take the update's
// scale from one scale_kernel block (the same sum as the inline path): a
// matrix and a vector just above the limit, f32 and bf16.
TEST(AdafactorCuda, LargeParameterScaleOnce) {
  BT_SKIP_WITHOUT_GPU();
  compare(bt::af_desc(DType::F32, {{2049, 2050}, {4194305}}), 2, "large f32");
  compare(bt::af_desc(DType::BF16, {{2049, 2050}}), 1, "large bf16");
}

// Rank-0 / rank-1 parameters of <= 4096 elements go to the GPU in batches of
// 64 (one block each): 70 of them (two batches) between two matrices.
TEST(AdafactorCuda, ManySmallVectorsBatched) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Dims> shapes = {{40, 30}};
  for (int i = 0; i < 70; ++i) shapes.push_back(i % 9 == 0 ? Dims{} : Dims{(i * 613) % 4096 + 1});
  shapes.push_back(Dims{4096});
  shapes.push_back(Dims{4097});
  shapes.push_back(Dims{7, 9});
  compare(bt::af_desc(DType::F32, shapes), 2, "many vectors f32");
  compare(bt::af_desc(DType::BF16, shapes), 2, "many vectors bf16");
}

TEST(AdafactorCuda, RunTwiceSameBits) {
  BT_SKIP_WITHOUT_GPU();
  for (const DType t : {DType::F32, DType::BF16}) {
    const bt::AfProblem p = bt::af_problem(bt::af_desc(t, {{300, 257}, {2, 9, 1000}, {12345}}), 3, bt::fresh_seed());
    const auto a = bt::af_run(bt::kGpu, p), b = bt::af_run(bt::kGpu, p);
    ASSERT_TRUE(a.st.is_ok() && b.st.is_ok()) << a.st.to_string() << b.st.to_string();
    EXPECT_EQ(a.params, b.params);
    EXPECT_EQ(a.row_vars, b.row_vars);
    EXPECT_EQ(a.col_vars, b.col_vars);
    EXPECT_EQ(a.variances, b.variances);
  }
}

TEST(AdafactorCuda, DeviceScalarsMatchCpu) {
  BT_SKIP_WITHOUT_GPU();
  AdafactorDescriptor d = bt::af_desc(DType::F32, {{40, 30}, {50}, {}});
  d.device_scalars = true, d.weight_decay = 0.1;
  bt::AfProblem p = bt::af_problem(d, 4, bt::fresh_seed());
  p.lrs = {0.01f, 0.2f, 0.003f, 1.0f};
  const auto gpu = bt::af_run(bt::kGpu, p, bt::bespoke());
  const auto cpu = bt::af_run(kCpu, p);
  expect_close(gpu, cpu, 1e-5, "device scalars");
  EXPECT_EQ(gpu.step, 4.0);
  // Only empty parameters: the step still advances.
  AdafactorDescriptor e = bt::af_desc(DType::F32, {{0}});
  e.device_scalars = true;
  const auto ge = bt::af_run(bt::kGpu, bt::af_problem(e, 2, 1));
  ASSERT_TRUE(ge.st.is_ok()) << ge.st.to_string();
  EXPECT_EQ(ge.step, 2.0);
}

#ifdef BARACUDA_WITH_CUDA
// One captured run replayed once per step with new gradients and learning
// rates (copied in between, outside the graph) equals the CPU's steps.
TEST(AdafactorCuda, GraphCaptureReplaysSteps) {
  BT_SKIP_WITHOUT_GPU();
  AdafactorDescriptor d = bt::af_desc(DType::BF16, {{64, 48}, {2, 3, 33}, {77}});
  d.device_scalars = true, d.weight_decay = 0.05;
  bt::AfProblem p = bt::af_problem(d, 4, bt::fresh_seed());
  p.lrs = {0.02f, 0.5f, 0.001f, 0.1f};
  bt::CapturedGraph g;
  ASSERT_EQ(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), cudaSuccess);
  const Stream s = Stream::cuda(0, g.stream);
  auto plan = AdafactorPlan::select(s, d, bt::bespoke());
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  bt::AfSetup u(s, *plan, p);
  ASSERT_EQ(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status st = plan->run(s, u.ws, u.a);
  const cudaError_t end = cudaStreamEndCapture(g.stream, &g.graph);
  ASSERT_TRUE(st.is_ok()) << "run() failed during capture: " << st.to_string();
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorString(end);
  ASSERT_EQ(cudaGraphInstantiate(&g.exec, g.graph, 0), cudaSuccess);
  for (size_t k = 0; k < p.grads.size(); ++k) {
    ASSERT_EQ(cudaStreamSynchronize(g.stream), cudaSuccess);
    u.set_step(p, k);  // synchronous copies
    ASSERT_EQ(cudaGraphLaunch(g.exec, g.stream), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(g.stream), cudaSuccess);
  bt::AfResult gpu;
  u.read_into(gpu);
  expect_close(gpu, bt::af_run(kCpu, p), tol_for(DType::BF16), "graph replay");
  EXPECT_EQ(gpu.step, 4.0);
}
#endif

TEST(AdafactorCuda, WorkspaceAndErrors) {
  BT_SKIP_WITHOUT_GPU();
  auto plan = AdafactorPlan::select(bt::kGpu, bt::af_desc(DType::F32, {{768, 3072}, {5}}), bt::bespoke());
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->sku().variant, "factored");
  EXPECT_GT(plan->workspace_size(), 768u * 4);
  const bt::AfProblem p = bt::af_problem(plan->descriptor(), 1, 7);
  bt::AfSetup u(bt::kGpu, *plan, p);
  u.a.step = 1;
  const Status shortws = plan->run(bt::kGpu, Workspace(u.ws.ptr, u.ws.bytes - 1), u.a);
  EXPECT_EQ(shortws.code(), StatusCode::WorkspaceTooSmall) << shortws.to_string();
  AdafactorArgs host = u.a;
  std::vector<float> hp(5);
  host.params[1] = TensorMut::contiguous(hp.data(), Device::cpu(), {5}, 5);
  EXPECT_EQ(plan->run(bt::kGpu, u.ws, host).code(), StatusCode::InvalidProblem);
}

}  // namespace
