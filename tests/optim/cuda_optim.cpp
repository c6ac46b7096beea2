// The optim family on the GPU against the CPU reference:
//   * Adam / AdamW / SGD / Lion bit for bit (the same per-element formulas,
//     no FMA contraction): every param dtype, master weights, stochastic
//     rounding, weight-decay variants, amsgrad, maximize, nesterov,
//     grad_scale; mixed sizes (0, 1, odd, 10^5), one ~10^7 tensor, 16-byte
//     aligned (vector path) and misaligned (scalar path) lists, a list longer
//     than one kernel-parameter table (several launches);
//   * device scalars under CUDA graph capture, replayed with a changing lr
//     (the step tensor advances by one per replay); found_inf skips;
//   * run twice: the same bits;
//   * the gradient utilities: norms within f32 rounding of the CPU's f64 sum
//     and run-to-run identical, clip, unscale + found_inf, scale, zero.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/ops/optim.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/optim_helpers.hpp"

using namespace baracuda;
using namespace bt::optim;
using bt::kGpu;

namespace {

const Stream kCpu = Stream::cpu();

void expect_same(const Outcome& gpu, const Outcome& cpu, const std::string& what) {
  ASSERT_TRUE(gpu.st.is_ok()) << gpu.st.to_string() << " " << what;
  ASSERT_TRUE(cpu.st.is_ok()) << cpu.st.to_string() << " " << what;
  ASSERT_EQ(gpu.lists.size(), cpu.lists.size());
  for (size_t k = 0; k < gpu.lists.size(); ++k) EXPECT_TRUE(gpu.lists[k] == cpu.lists[k]) << what << ": list " << k << " differs";
  EXPECT_EQ(gpu.step, cpu.step) << what;
}

TEST(OptimCuda, AdamMatchesCpuBitForBit) {
  BT_SKIP_WITHOUT_GPU();
  struct V {
    bool decoupled, amsgrad, maximize, grad_scale;
    double wd;
  };
  const V vs[] = {{true, false, false, false, 0.01}, {false, true, false, true, 0.05}, {true, true, true, false, 0.0}};
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (int mode = 0; mode < (t == DType::F32 ? 1 : (t == DType::BF16 ? 3 : 2)); ++mode)
      for (const V& v : vs)
        for (bool mis : {false, true}) {
          AdamDescriptor d;
          d.shapes = mixed_shapes(true);
          d.param_dtype = t;
          d.master_weights = mode >= 1;
          d.stochastic_rounding = mode == 2 || (t == DType::BF16 && mode == 0 && v.amsgrad);
          d.decoupled_weight_decay = v.decoupled, d.amsgrad = v.amsgrad, d.maximize = v.maximize;
          d.weight_decay = v.wd, d.has_grad_scale = v.grad_scale;
          const Problem pb = make_problem(d.shapes, t, 3, 21);
          Extras x;
          x.misalign = mis;
          x.grad_scale = 2.0f;
          const std::string what = std::string(dtype_name(t)) + " mode " + std::to_string(mode) + " amsgrad " +
                                   std::to_string(v.amsgrad) + (mis ? " misaligned" : " aligned");
          expect_same(run_adam(kGpu, d, pb, x), run_adam(kCpu, d, pb, x), what);
        }
}

TEST(OptimCuda, SgdAndLionMatchCpuBitForBit) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (bool mis : {false, true}) {
      const Problem pb = make_problem(mixed_shapes(true), t, 3, 23);
      Extras x;
      x.misalign = mis;
      for (int v = 0; v < 4; ++v) {
        SgdDescriptor d;
        d.shapes = pb.shapes;
        d.param_dtype = t;
        d.master_weights = t != DType::F32 && v % 2 == 0;
        d.stochastic_rounding = t == DType::BF16 && v == 2;
        d.momentum = v == 0 ? 0.0 : 0.9;
        d.nesterov = v == 3;
        d.dampening = v == 1 ? 0.1 : 0.0;
        d.weight_decay = v == 1 ? 0.0 : 0.01;
        d.maximize = v == 2;
        d.device_scalars = v == 1;
        expect_same(run_sgd(kGpu, d, pb, x), run_sgd(kCpu, d, pb, x), "sgd " + std::to_string(v));
      }
      for (int v = 0; v < 2; ++v) {
        LionDescriptor d;
        d.shapes = pb.shapes;
        d.param_dtype = t;
        d.master_weights = t != DType::F32 && v == 1;
        d.stochastic_rounding = t == DType::BF16 && v == 1;
        d.weight_decay = v == 0 ? 0.1 : 0.0;
        d.maximize = v == 1;
        d.device_scalars = v == 0;
        expect_same(run_lion(kGpu, d, pb, x), run_lion(kCpu, d, pb, x), "lion " + std::to_string(v));
      }
    }
}

TEST(OptimCuda, TenMillionElementTensor) {
  BT_SKIP_WITHOUT_GPU();
  AdamDescriptor d;
  d.shapes = {Dims{10000019}, Dims{5}};
  d.param_dtype = DType::BF16;
  d.master_weights = true;
  d.stochastic_rounding = true;
  const Problem pb = make_problem(d.shapes, DType::BF16, 2, 29);
  expect_same(run_adam(kGpu, d, pb), run_adam(kCpu, d, pb), "10^7 bf16 + master + SR");
}

TEST(OptimCuda, ListLongerThanOneTableSplits) {
  BT_SKIP_WITHOUT_GPU();
  std::vector<Dims> shapes;
  for (int k = 0; k < 1000; ++k) shapes.push_back(Dims{(k * 37) % 300});  // zero-size ones included
  AdamDescriptor d;
  d.shapes = shapes;
  d.amsgrad = true;
  auto plan = AdamPlan::select(kGpu, d);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  EXPECT_EQ(plan->sku().variant.rfind("multi_tensor.split", 0), 0u) << plan->sku().variant;
  const Problem pb = make_problem(shapes, DType::F32, 2, 31);
  expect_same(run_adam(kGpu, d, pb), run_adam(kCpu, d, pb), "1000 tensors");
  GlobalNormDescriptor nd;
  nd.shapes = shapes;
  auto np = GlobalNormPlan::select(kGpu, nd);
  ASSERT_TRUE(np.is_ok());
  EXPECT_NE(np->sku().variant, "multi_tensor");
}

TEST(OptimCuda, DeterministicRunToRun) {
  BT_SKIP_WITHOUT_GPU();
  AdamDescriptor d;
  d.shapes = mixed_shapes(true);
  d.param_dtype = DType::BF16;
  d.stochastic_rounding = true;
  const Problem pb = make_problem(d.shapes, DType::BF16, 3, 37);
  const Outcome a = run_adam(kGpu, d, pb), b = run_adam(kGpu, d, pb);
  expect_same(a, b, "run twice");
}

TEST(OptimCuda, FoundInfSkipsOnTheDevice) {
  BT_SKIP_WITHOUT_GPU();
  AdamDescriptor d;
  d.shapes = mixed_shapes(false);
  d.device_scalars = true;
  d.has_found_inf = true;
  const Problem pb = make_problem(d.shapes, DType::F32, 2, 41);
  for (float inf : {0.0f, 1.0f}) {
    Extras x;
    x.found_inf = inf;
    expect_same(run_adam(kGpu, d, pb, x), run_adam(kCpu, d, pb, x), "found_inf " + std::to_string(inf));
  }
}

#ifdef BARACUDA_WITH_CUDA
TEST(OptimCuda, GraphCaptureReplaysWithChangingLr) {
  BT_SKIP_WITHOUT_GPU();
  AdamDescriptor d;
  d.shapes = mixed_shapes(true);
  d.param_dtype = DType::BF16;
  d.master_weights = true;
  d.device_scalars = true;
  d.has_grad_scale = true;
  const int steps = 3;
  Problem pb = make_problem(d.shapes, DType::BF16, steps, 43);
  for (int s = 1; s < steps; ++s) pb.grads[s] = pb.grads[0];  // the graph reads one grads list
  pb.lrs = {1e-3, 5e-4, 2e-3};
  for (double& lr : pb.lrs) lr = static_cast<float>(lr);
  Extras x;
  x.grad_scale = 2.0f;
  const Outcome cpu = run_adam(kCpu, d, pb, x);

  const Device dev = Device::cuda(0);
  List p(dev, DType::BF16, pb.shapes, pb.p0), g(dev, DType::BF16, pb.shapes, pb.grads[0]),
      m(dev, DType::F32, pb.shapes, pb.s0), v(dev, DType::F32, pb.shapes, pb.s1),
      master(dev, DType::F32, pb.shapes, pb.p0);
  ScalarBuf lr(dev, 0), step(dev, 0), gs(dev, 2.0f);
  bt::CapturedGraph cg;
  ASSERT_EQ(cudaStreamCreateWithFlags(&cg.stream, cudaStreamNonBlocking), cudaSuccess);
  const Stream s = Stream::cuda(0, cg.stream);
  auto plan = AdamPlan::select(s, d);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  AdamArgs a;
  {
    // Warm-up outside the capture (module loading, the occupancy query) on
    // throwaway copies.
    List p2(dev, DType::BF16, pb.shapes, pb.p0), m2(dev, DType::F32, pb.shapes, pb.s0),
        v2(dev, DType::F32, pb.shapes, pb.s1), master2(dev, DType::F32, pb.shapes, pb.p0);
    ScalarBuf step2(dev, 0);
    a.params = p2.muts(), a.grads = g.refs(), a.exp_avg = m2.muts(), a.exp_avg_sq = v2.muts(), a.master = master2.muts();
    a.lr_tensor = lr.ref(), a.step_tensor = step2.mut(), a.grad_scale = gs.ref();
    ASSERT_TRUE(plan->run(s, {}, a).is_ok());
    ASSERT_EQ(cudaStreamSynchronize(cg.stream), cudaSuccess);
  }
  a.params = p.muts(), a.grads = g.refs(), a.exp_avg = m.muts(), a.exp_avg_sq = v.muts(), a.master = master.muts();
  a.lr_tensor = lr.ref(), a.step_tensor = step.mut(), a.grad_scale = gs.ref();
  ASSERT_EQ(cudaStreamBeginCapture(cg.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status st = plan->run(s, {}, a);
  ASSERT_EQ(cudaStreamEndCapture(cg.stream, &cg.graph), cudaSuccess);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaGraphInstantiate(&cg.exec, cg.graph, 0), cudaSuccess);
  for (int k = 0; k < steps; ++k) {
    ASSERT_EQ(cudaStreamSynchronize(cg.stream), cudaSuccess);
    lr.set(static_cast<float>(pb.lrs[k]));  // a new value for the same graph
    ASSERT_EQ(cudaGraphLaunch(cg.exec, cg.stream), cudaSuccess);
  }
  ASSERT_EQ(cudaStreamSynchronize(cg.stream), cudaSuccess);
  EXPECT_EQ(step.get(), 3.0f);
  EXPECT_TRUE(p.bytes() == cpu.lists[0]) << "params after 3 replays";
  EXPECT_TRUE(master.bytes() == cpu.lists[1]) << "master after 3 replays";
  EXPECT_TRUE(m.bytes() == cpu.lists[2] && v.bytes() == cpu.lists[3]) << "state after 3 replays";
}
#endif

// ---- utilities ----------------------------------------------------------------------------
TEST(OptimCuda, NormsMatchCpu) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(47);
  std::vector<Dims> shapes = mixed_shapes(true);
  shapes.push_back(Dims{3000001});
  for (DType t : {DType::F32, DType::BF16, DType::F16})
    for (NormType nt : {NormType::L2, NormType::Inf}) {
      const Values vals = random_values(shapes, rng, -3, 3);
      float got[2] = {0, 0};
      for (int side = 0; side < 3; ++side) {
        const Stream& s = side == 0 ? kCpu : kGpu;
        List l(s.device(), t, shapes, vals);
        ScalarBuf out(s.device(), -1);
        GlobalNormDescriptor d;
        d.shapes = shapes, d.dtype = t, d.norm_type = nt;
        auto plan = GlobalNormPlan::select(s, d);
        ASSERT_TRUE(plan.is_ok());
        Buffer ws(s.device(), std::max<size_t>(plan->workspace_size(), 16));
        ASSERT_TRUE(plan->run(s, {ws.data(), ws.bytes()}, GlobalNormArgs{l.refs(), out.mut()}).is_ok());
        ASSERT_TRUE(synchronize(s).is_ok());
        const float n = out.get();
        if (side == 0) {
          got[0] = n;
        } else if (side == 1) {
          got[1] = n;
          EXPECT_NEAR(n, got[0], 2e-7 * got[0]) << dtype_name(t);
          if (nt == NormType::Inf) EXPECT_EQ(n, got[0]);
        } else {
          EXPECT_EQ(n, got[1]) << "run to run";
        }
      }
    }
}

TEST(OptimCuda, NormOfEmptyTensorsIsZero) {
  BT_SKIP_WITHOUT_GPU();
  const std::vector<Dims> shapes = {Dims{0}, Dims{4, 0}};
  List l(Device::cuda(0), DType::F32, shapes, zeros(shapes));
  ScalarBuf out(Device::cuda(0), 7), total(Device::cuda(0), 7);
  GlobalNormDescriptor d;
  d.shapes = shapes;
  auto plan = GlobalNormPlan::select(kGpu, d);
  ASSERT_TRUE(plan.is_ok());
  Buffer ws(Device::cuda(0), plan->workspace_size());
  ASSERT_TRUE(plan->run(kGpu, {ws.data(), ws.bytes()}, GlobalNormArgs{l.refs(), out.mut()}).is_ok());
  ClipGradNormDescriptor cd;
  cd.shapes = shapes;
  auto clip = ClipGradNormPlan::select(kGpu, cd);
  ASSERT_TRUE(clip.is_ok());
  Buffer cws(Device::cuda(0), clip->workspace_size());
  ASSERT_TRUE(clip->run(kGpu, {cws.data(), cws.bytes()}, ClipGradNormArgs{l.muts(), total.mut(), TensorMut{}}).is_ok());
  ASSERT_TRUE(synchronize(kGpu).is_ok());
  EXPECT_EQ(out.get(), 0.0f);
  EXPECT_EQ(total.get(), 0.0f);
}

TEST(OptimCuda, ClipUnscaleScaleZeroMatchCpu) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(53);
  const std::vector<Dims> shapes = mixed_shapes(true);
  for (DType t : {DType::F32, DType::BF16, DType::F16}) {
    Values vals = random_values(shapes, rng, -3, 3);
    vals[2][3] = INFINITY;  // for unscale's flag
    std::vector<Bytes> res[2];
    float flags[2][3] = {};
    for (int side = 0; side < 2; ++side) {
      const Stream& s = side == 0 ? kCpu : kGpu;
      const Device dev = s.device();
      List g(dev, t, shapes, vals);
      ScalarBuf inv(dev, 0.25f), found(dev, 0), total(dev, 0), clip_inf(dev, 0);
      TensorListDescriptor d;
      d.shapes = shapes, d.dtype = t;
      auto un = NonFiniteCheckUnscalePlan::select(s, d);
      ASSERT_TRUE(un->run(s, {}, NonFiniteCheckUnscaleArgs{g.muts(), inv.ref(), found.mut()}).is_ok());
      MultiTensorScaleDescriptor sd;
      sd.shapes = shapes, sd.dtype = t;
      auto sc = MultiTensorScalePlan::select(s, sd);
      MultiTensorScaleArgs sa;
      sa.tensors = g.muts(), sa.scale = 1.5;
      ASSERT_TRUE(sc->run(s, {}, sa).is_ok());
      ASSERT_TRUE(synchronize(s).is_ok());
      res[side].push_back(g.bytes());
      // clip on finite values
      vals[2][3] = 1.0f;
      g.set(vals);
      ClipGradNormDescriptor cd;
      cd.shapes = shapes, cd.dtype = t, cd.max_norm = 2.0, cd.has_found_inf = true;
      auto cp = ClipGradNormPlan::select(s, cd);
      Buffer ws(dev, std::max<size_t>(cp->workspace_size(), 16));
      ASSERT_TRUE(cp->run(s, {ws.data(), ws.bytes()}, ClipGradNormArgs{g.muts(), total.mut(), clip_inf.mut()}).is_ok());
      ASSERT_TRUE(synchronize(s).is_ok());
      res[side].push_back(g.bytes());
      vals[2][3] = INFINITY;
      flags[side][0] = found.get(), flags[side][1] = total.get(), flags[side][2] = clip_inf.get();
      auto z = MultiTensorZeroPlan::select(s, d);
      ASSERT_TRUE(z->run(s, {}, MultiTensorZeroArgs{g.muts()}).is_ok());
      ASSERT_TRUE(synchronize(s).is_ok());
      res[side].push_back(g.bytes());
    }
    EXPECT_TRUE(res[0][0] == res[1][0]) << "unscale + scale " << dtype_name(t);
    EXPECT_EQ(flags[0][0], 1.0f);
    EXPECT_EQ(flags[1][0], 1.0f);
    EXPECT_NEAR(flags[1][1], flags[0][1], 2e-7 * flags[0][1]);
    EXPECT_EQ(flags[1][2], 0.0f);
    // The clipped grads: the coefficients may differ by an ulp with the norm.
    const std::vector<float> a = decode(t, res[0][1]), b = decode(t, res[1][1]);
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_NEAR(b[i], a[i], 1e-6 + (t == DType::F32 ? 1e-6 : 8e-3) * std::fabs(a[i])) << i;
    EXPECT_TRUE(res[0][2] == res[1][2]) << "zero";
  }
}

}  // namespace
