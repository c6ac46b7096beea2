// Plans must be safe inside CUDA graph capture (DESIGN §1): no allocation, no
// synchronisation, no capture-illegal calls. Captures forward and backward runs
// that take the split / multi-pass paths (workspace + second kernel), replays
// the graph and requires the same bits as a direct run on the same stream.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>

using namespace baracuda;

namespace {

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(0.5f, 1.5f);  // products stay finite for Prod
  std::vector<float> v(n);
  for (auto& x : v) x = d(rng);
  return v;
}

// Runs `launch` directly, then captured in a graph and replayed, and compares
// the bytes of `out` after each.
template <class Launch>
void expect_capture_matches(Buffer& out, Launch launch) {
  bt::CapturedGraph c;
  ASSERT_EQ(cudaStreamCreateWithFlags(&c.stream, cudaStreamNonBlocking), cudaSuccess);
  const Stream s = Stream::cuda(0, c.stream);
  ASSERT_TRUE(out.fill_bytes(0xff).is_ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);  // the fill ran on the legacy stream
  Status st = launch(s);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaStreamSynchronize(c.stream), cudaSuccess);
  std::vector<unsigned char> direct(out.bytes());
  ASSERT_TRUE(out.copy_to_host(direct.data(), direct.size()).is_ok());

  ASSERT_TRUE(out.fill_bytes(0xff).is_ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(c.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  st = launch(s);
  const cudaError_t end = cudaStreamEndCapture(c.stream, &c.graph);
  ASSERT_TRUE(st.is_ok()) << "run() failed during capture: " << st.to_string();
  ASSERT_EQ(end, cudaSuccess) << cudaGetErrorString(end);
  ASSERT_EQ(cudaGraphInstantiate(&c.exec, c.graph, 0), cudaSuccess);
  for (int rep = 0; rep < 2; ++rep) ASSERT_EQ(cudaGraphLaunch(c.exec, c.stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(c.stream), cudaSuccess);
  std::vector<unsigned char> replay(out.bytes());
  ASSERT_TRUE(out.copy_to_host(replay.data(), replay.size()).is_ok());
  EXPECT_EQ(0, std::memcmp(direct.data(), replay.data(), direct.size())) << "graph replay differs from a direct run";
}

struct CaptureCase {
  ReduceKind kind;
  Dims shape;
  Dims axes;
};

const CaptureCase kCases[] = {
    {ReduceKind::Sum, {2, 1 << 20}, {1}},       // row-split: partials + finalize
    {ReduceKind::Var, {4096, 256}, {0}},        // column-split
    {ReduceKind::LogSumExp, {64, 300, 96}, {1}},
    {ReduceKind::ArgMax, {3, 50, 7}, {0, 2}},   // generic
    {ReduceKind::Max, {4096, 512}, {0}},        // backward: tie counts in the workspace
    {ReduceKind::Prod, {2000, 96}, {0}},        // backward: partial products
    {ReduceKind::Std, {8, 70000}, {1}},         // backward: large slices, multi-pass
};

}  // namespace

TEST(CudaGraphCapture, ForwardAndBackwardReplayMatchDirectRuns) {
  BT_SKIP_WITHOUT_GPU();
  for (const CaptureCase& cc : kCases) {
    SCOPED_TRACE(std::string(reduce_kind_name(cc.kind)) + " " + cc.shape.to_string() + " axes " + cc.axes.to_string());
    ReduceDescriptor d;
    d.kind = cc.kind;
    d.dtype = DType::F32;
    d.shape = cc.shape;
    d.axes = cc.axes;
    const Stream probe = Stream::cuda(0);
    auto fw = ReducePlan::select(probe, d);
    ASSERT_TRUE(fw.is_ok()) << fw.status().to_string();
    const size_t n = static_cast<size_t>(shape_numel(d.shape));
    const auto hx = random_floats(n, 1234u + static_cast<unsigned>(cc.kind));
    Buffer x(Device::cuda(0), n * 4);
    ASSERT_TRUE(x.copy_from_host(hx.data(), n * 4).is_ok());
    const size_t m = static_cast<size_t>(shape_numel(fw->output_shape()));
    Buffer y(Device::cuda(0), m * dtype_size(fw->output_dtype()));
    Buffer ws(Device::cuda(0), fw->workspace_size());
    const ReduceArgs fa{x.view(DType::F32, d.shape), y.view_mut(fw->output_dtype(), fw->output_shape())};
    expect_capture_matches(y, [&](const Stream& s) { return fw->run(s, Workspace(ws.data(), ws.bytes()), fa); });
    if (cc.kind == ReduceKind::ArgMax) continue;

    auto bw = ReduceBackwardPlan::select(probe, d);
    ASSERT_TRUE(bw.is_ok()) << bw.status().to_string();
    const auto hdy = random_floats(m, 99u);
    Buffer dy(Device::cuda(0), m * 4), dx(Device::cuda(0), n * 4), bws(Device::cuda(0), bw->workspace_size());
    ASSERT_TRUE(dy.copy_from_host(hdy.data(), m * 4).is_ok());
    // y holds the forward output from the direct run above.
    ASSERT_TRUE(fw->run(probe, Workspace(ws.data(), ws.bytes()), fa).is_ok());
    ASSERT_TRUE(synchronize(probe).is_ok());
    ReduceBackwardArgs ba;
    ba.dy = dy.view(DType::F32, fw->output_shape());
    if (bw->needs_x()) ba.x = x.view(DType::F32, d.shape);  // only what the kind reads
    if (bw->needs_y()) ba.y = y.view(DType::F32, fw->output_shape());
    ba.dx = dx.view_mut(DType::F32, d.shape);
    expect_capture_matches(dx, [&](const Stream& s) { return bw->run(s, Workspace(bws.data(), bws.bytes()), ba); });
  }
}

#else
TEST(CudaGraphCapture, ForwardAndBackwardReplayMatchDirectRuns) { GTEST_SKIP() << "built without CUDA"; }
#endif
