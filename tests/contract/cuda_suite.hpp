// PlanContractCuda: the CUDA half of the contract suite (see suite.hpp); every
// check skips without a GPU.
#pragma once

#include "contract/suite.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace contract {

// ---- PlanContractCuda ------------------------------------------------------------------
template <class T>
class PlanContractCuda : public ::testing::Test {};
TYPED_TEST_SUITE_P(PlanContractCuda);

TYPED_TEST_P(PlanContractCuda, RejectsHostTensorAndCpuStream) {
  BT_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  check_wrong_device<T>(bt::kGpu, Device::cpu());
  Rng rng(bt::fresh_seed());
  const auto desc = T::valid_desc(rng);
  const auto plan = select_or_die<T>(bt::kGpu, desc);
  auto c = make_call<T>(plan, Device::cuda(0), rng);
  EXPECT_TRUE(is_plan_error<T>(plan.run(Stream::cpu(), c.workspace(), c.args), StatusCode::InvalidProblem));
  EXPECT_TRUE(is_plan_error<T>(plan.run(Stream::cuda(1), c.workspace(), c.args), StatusCode::InvalidProblem));
  EXPECT_EQ(outputs_untouched(c, kPoison), "");
}

TYPED_TEST_P(PlanContractCuda, WorkspaceTooSmall) {
  BT_SKIP_WITHOUT_GPU();
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  auto descs = T::workspace_descs();
  for (int i = 0; i < 3; ++i) descs.push_back(T::valid_desc(rng));
  check_workspace_rule<T>(bt::kGpu, descs);
}

TYPED_TEST_P(PlanContractCuda, ZeroSizeProblemsWriteNothing) {
  BT_SKIP_WITHOUT_GPU();
  check_zero_size<TypeParam>(bt::kGpu);
}

TYPED_TEST_P(PlanContractCuda, SkuForMatchesRun) {
  BT_SKIP_WITHOUT_GPU();
  check_sku_for<TypeParam>(bt::kGpu);
}

TYPED_TEST_P(PlanContractCuda, PoisonedOutputsFullyWrittenAndRunTwice) {
  BT_SKIP_WITHOUT_GPU();
  check_fully_written<TypeParam>(bt::kGpu, 6);
  check_run_twice<TypeParam>(bt::kGpu, 3);
}

// Selected before the capture; run directly, then captured in a graph and
// replayed twice into re-poisoned outputs (in-outs restored): the same bits as
// the direct run.
TYPED_TEST_P(PlanContractCuda, GraphCaptureReplayMatchesDirectRun) {
  BT_SKIP_WITHOUT_GPU();
#ifdef BARACUDA_WITH_CUDA
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  for (int rep = 0; rep < 3; ++rep) {
    const auto desc = T::valid_desc(rng);
    bt::CapturedGraph g;
    ASSERT_EQ(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), cudaSuccess);
    const Stream s = Stream::cuda(0, g.stream);
    const auto plan = select_or_die<T>(s, desc);
    auto c = make_call<T>(plan, Device::cuda(0), rng);
    ASSERT_TRUE(run_sync<T>(plan, s, c).is_ok()) << T::describe(desc);
    std::vector<std::vector<uint8_t>> direct(c.slots.size());
    for (size_t i = 0; i < c.slots.size(); ++i)
      if (c.bufs[i] && c.is_written(i)) {
        direct[i] = c.bufs[i]->read();
        if (c.is_output(i)) c.bufs[i]->fill(kPoison);
      }
    ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
    ASSERT_EQ(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    const Status st = plan.run(s, c.workspace(), c.args);
    const cudaError_t end = cudaStreamEndCapture(g.stream, &g.graph);
    ASSERT_TRUE(st.is_ok()) << "run() during capture: " << st.to_string() << "; " << T::describe(desc);
    ASSERT_EQ(end, cudaSuccess) << cudaGetErrorString(end);
    ASSERT_EQ(cudaGraphInstantiate(&g.exec, g.graph, 0), cudaSuccess);
    for (int replay = 0; replay < 2; ++replay) {
      for (size_t i = 0; i < c.slots.size(); ++i)
        if (c.bufs[i] && c.is_output(i)) c.bufs[i]->fill(kPoison);
      c.restore();  // in-outs start each replay from their initial values
      ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
      ASSERT_EQ(cudaGraphLaunch(g.exec, g.stream), cudaSuccess);
      ASSERT_EQ(cudaStreamSynchronize(g.stream), cudaSuccess);
      for (size_t i = 0; i < c.slots.size(); ++i)
        if (c.bufs[i] && c.is_written(i)) {
          const std::vector<uint8_t> got = c.bufs[i]->read();
          size_t first = 0;  // the first differing byte, for the message
          while (first < got.size() && first < direct[i].size() && got[first] == direct[i][first]) ++first;
          EXPECT_TRUE(got == direct[i]) << c.slots[i].name << ": replay " << replay << " differs from the direct run"
                                        << " (first at byte " << first << " of " << got.size() << ": replay "
                                        << (first < got.size() ? int{got[first]} : -1) << ", direct "
                                        << (first < direct[i].size() ? int{direct[i][first]} : -1) << "); "
                                        << T::describe(desc);
        }
    }
    EXPECT_EQ(c.guard_damage(), "");
  }
#endif
}

REGISTER_TYPED_TEST_SUITE_P(PlanContractCuda, RejectsHostTensorAndCpuStream, WorkspaceTooSmall,
                            ZeroSizeProblemsWriteNothing, PoisonedOutputsFullyWrittenAndRunTwice,
                            GraphCaptureReplayMatchesDirectRun, SkuForMatchesRun);

}  // namespace contract
