// GroupedLinearPlan / GroupedLinearBackwardPlan on CUDA (one cuBLASLt GEMM per
// group) against the CPU reference (the same descriptor selected on
// Stream::cpu(), fed the same values), in f32, f64, f16 and bf16:
//   * uneven groups with empty ones and unused capacity, per-group and shared
//     weights, every activation (save_aux with the GELUs), with and without
//     bias; every group empty; odd sizes (K = 1, N = 1, one-row groups);
//   * the backward: dx, dw, db from the same g (empty groups' dw / db zeros,
//     a shared weight's sums over all groups);
//   * every CUDA run twice into poisoned outputs (bt::run_twice): both succeed,
//     agree bit for bit (every element written, deterministic), and rows at
//     and past offsets[G] keep their poison (they are the layouts' gaps);
//   * graph capture: a split whose row counts were never seen is Unsupported
//     while capturing; after one eager run the capture replays the direct
//     run's bits.
// Tolerances relative to ||ref|| (bt::tolerance): f64 1e-12, f32 1e-5, f16
// 2e-3, bf16 1e-2. Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::kGpu, bt::to_device, bt::to_host;
const Stream kCpu = Stream::cpu();
constexpr DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
constexpr GemmActivation kActs[] = {GemmActivation::None, GemmActivation::Relu, GemmActivation::GeluTanh,
                                    GemmActivation::Gelu};
bool needs_aux(GemmActivation a) { return a == GemmActivation::Gelu || a == GemmActivation::GeluTanh; }

GroupedLinearDescriptor gdesc(DType t, int64_t G, int64_t K, int64_t N, int64_t T, bool shared, bool bias,
                              GemmActivation act) {
  GroupedLinearDescriptor d;
  d.dtype = t;
  d.groups = G;
  d.in_features = K;
  d.out_features = N;
  d.capacity = T;
  d.shared_weight = shared;
  d.has_bias = bias;
  d.activation = act;
  d.save_aux = needs_aux(act);
  return d;
}
Dims wshape(const GroupedLinearDescriptor& d) {
  return d.shared_weight ? Dims{d.out_features, d.in_features} : Dims{d.groups, d.out_features, d.in_features};
}
Dims bshape(const GroupedLinearDescriptor& d) {
  return d.shared_weight ? Dims{d.out_features} : Dims{d.groups, d.out_features};
}
TensorRef host_offsets(const std::vector<int64_t>& o) {
  const int64_t n = static_cast<int64_t>(o.size());
  return TensorRef::contiguous(o.data(), Device::cpu(), Dims{n}, n);
}
// [T, F] storage whose rows past `rows` are gaps (never written).
bt::Layout used_rows(int64_t rows, int64_t T, int64_t F) {
  bt::Layout L = bt::contiguous(Dims{rows, F});
  L.storage = T * F;
  L.name = "used-rows";
  return L;
}
// The first `rows` rows of a [T, F] buffer.
std::vector<double> head(const bt::HostBuffer& b, int64_t rows, int64_t F) {
  std::vector<double> v(static_cast<size_t>(rows * F));
  for (int64_t i = 0; i < rows * F; ++i) v[static_cast<size_t>(i)] = b.get(i);
  return v;
}

std::string describe(const GroupedLinearDescriptor& d, const std::vector<int64_t>& o) {
  std::string s = std::string(dtype_name(d.dtype)) + " G" + std::to_string(d.groups) + " K" +
                  std::to_string(d.in_features) + " N" + std::to_string(d.out_features) + " T" +
                  std::to_string(d.capacity) + (d.shared_weight ? " shared" : " per-group") +
                  (d.has_bias ? " +bias " : " ") + gemm_activation_name(d.activation) + " offsets [";
  for (int64_t v : o) s += std::to_string(v) + " ";
  return s + "]";
}

// Forward and backward on both devices; returns on the first failure.
void compare(const GroupedLinearDescriptor& d, const std::vector<int64_t>& offs, bt::Rng& rng) {
  const DType t = d.dtype;
  const int64_t T = d.capacity, N = d.out_features, K = d.in_features, R = offs.back();
  const std::string ctx = describe(d, offs);
  const double tol = bt::tolerance(t);
  bt::HostBuffer x = bt::host_from(t, bt::random_values(t, T * K, rng));
  bt::HostBuffer w = bt::host_from(t, bt::random_values(t, shape_numel(wshape(d)), rng));
  bt::HostBuffer b = bt::host_from(t, bt::random_values(t, shape_numel(bshape(d)), rng));
  // ---- forward: CPU reference
  auto cpu = GroupedLinearPlan::select(kCpu, d);
  ASSERT_TRUE(cpu.is_ok()) << cpu.status().to_string();
  bt::HostBuffer y(t, T * N), aux(t, T * N);
  y.fill_bytes(0);
  aux.fill_bytes(0);
  GroupedLinearArgs ha;
  ha.x = TensorRef::contiguous(x.data(), t, Device::cpu(), Dims{T, K});
  ha.offsets = host_offsets(offs);
  ha.weight = TensorRef::contiguous(w.data(), t, Device::cpu(), wshape(d));
  if (d.has_bias) ha.bias = TensorRef::contiguous(b.data(), t, Device::cpu(), bshape(d));
  ha.y = TensorMut::contiguous(y.data(), t, Device::cpu(), Dims{T, N});
  if (d.save_aux) ha.aux = TensorMut::contiguous(aux.data(), t, Device::cpu(), Dims{T, N});
  ASSERT_TRUE(cpu->run(kCpu, Workspace::none(), ha).is_ok()) << ctx;
  // ---- forward: CUDA
  auto gpu = GroupedLinearPlan::select(kGpu, d);
  ASSERT_TRUE(gpu.is_ok()) << gpu.status().to_string() << "; " << ctx;
  EXPECT_EQ(gpu->sku().backend, Backend::CuBlasLt);
  Buffer dxin = to_device(x, 16), dw_ = to_device(w, 16), db_ = to_device(b, 16);
  Buffer dyo(Device::cuda(0), std::max<int64_t>(T * N, 1) * dtype_size(t)), dauxo(Device::cuda(0), std::max<int64_t>(T * N, 1) * dtype_size(t));
  Buffer ws = bt::device_workspace(gpu->workspace_size());
  GroupedLinearArgs ga;
  ga.x = TensorRef::contiguous(dxin.data(), t, Device::cuda(0), Dims{T, K});
  ga.offsets = host_offsets(offs);
  ga.weight = TensorRef::contiguous(dw_.data(), t, Device::cuda(0), wshape(d));
  if (d.has_bias) ga.bias = TensorRef::contiguous(db_.data(), t, Device::cuda(0), bshape(d));
  ga.y = TensorMut::contiguous(dyo.data(), t, Device::cuda(0), Dims{T, N});
  if (d.save_aux) ga.aux = TensorMut::contiguous(dauxo.data(), t, Device::cuda(0), Dims{T, N});
  std::vector<bt::DeviceOut> outs{{"y", &dyo, t, used_rows(R, T, N)}};
  if (d.save_aux) outs.push_back({"aux", &dauxo, t, used_rows(R, T, N)});
  std::vector<bt::HostBuffer> got;
  const std::string fw = bt::run_twice([&] { return gpu->run(kGpu, Workspace(ws.data(), ws.bytes()), ga); }, outs, &got);
  ASSERT_EQ(fw, "") << ctx;
  double worst = 0;
  EXPECT_EQ(bt::check_close("y", head(got[0], R, N), head(y, R, N), tol, &worst), "") << ctx;
  if (d.save_aux) EXPECT_EQ(bt::check_close("aux", head(got[1], R, N), head(aux, R, N), tol, &worst), "") << ctx;

  // ---- backward (aux: the CPU's pre-activation, or y for relu)
  GroupedLinearBackwardDescriptor bd;
  bd.forward = d;
  bd.forward.save_aux = false;
  bd.need_db = d.has_bias;
  const bool act = d.activation != GemmActivation::None;
  bt::HostBuffer dy = bt::host_from(t, bt::random_values(t, T * N, rng));
  const bt::HostBuffer& pre = d.activation == GemmActivation::Relu ? y : aux;
  auto bcpu = GroupedLinearBackwardPlan::select(kCpu, bd);
  ASSERT_TRUE(bcpu.is_ok()) << bcpu.status().to_string();
  bt::HostBuffer hdx(t, T * K), hdw(t, shape_numel(wshape(d))), hdb(t, shape_numel(bshape(d)));
  hdx.fill_bytes(0);
  GroupedLinearBackwardArgs hb;
  hb.dy = TensorRef::contiguous(dy.data(), t, Device::cpu(), Dims{T, N});
  hb.offsets = host_offsets(offs);
  hb.x = ha.x;
  hb.weight = ha.weight;
  if (act) hb.aux = TensorRef::contiguous(pre.data(), t, Device::cpu(), Dims{T, N});
  hb.dx = TensorMut::contiguous(hdx.data(), t, Device::cpu(), Dims{T, K});
  hb.dw = TensorMut::contiguous(hdw.data(), t, Device::cpu(), wshape(d));
  if (bd.need_db) hb.db = TensorMut::contiguous(hdb.data(), t, Device::cpu(), bshape(d));
  ASSERT_TRUE(bcpu->run(kCpu, Workspace::none(), hb).is_ok()) << ctx;
  auto bgpu = GroupedLinearBackwardPlan::select(kGpu, bd);
  ASSERT_TRUE(bgpu.is_ok()) << bgpu.status().to_string() << "; " << ctx;
  Buffer ddy = to_device(dy, 16), dpre = to_device(pre, 16);
  Buffer ddx(Device::cuda(0), std::max<int64_t>(T * K, 1) * dtype_size(t));
  Buffer ddw(Device::cuda(0), std::max<int64_t>(shape_numel(wshape(d)), 1) * dtype_size(t));
  Buffer ddb(Device::cuda(0), std::max<int64_t>(shape_numel(bshape(d)), 1) * dtype_size(t));
  Buffer bws = bt::device_workspace(bgpu->workspace_size());
  GroupedLinearBackwardArgs gb;
  gb.dy = TensorRef::contiguous(ddy.data(), t, Device::cuda(0), Dims{T, N});
  gb.offsets = host_offsets(offs);
  gb.x = ga.x;
  gb.weight = ga.weight;
  if (act) gb.aux = TensorRef::contiguous(dpre.data(), t, Device::cuda(0), Dims{T, N});
  gb.dx = TensorMut::contiguous(ddx.data(), t, Device::cuda(0), Dims{T, K});
  gb.dw = TensorMut::contiguous(ddw.data(), t, Device::cuda(0), wshape(d));
  if (bd.need_db) gb.db = TensorMut::contiguous(ddb.data(), t, Device::cuda(0), bshape(d));
  std::vector<bt::DeviceOut> bouts{{"dx", &ddx, t, used_rows(R, T, K)}, {"dw", &ddw, t, bt::contiguous(wshape(d))}};
  if (bd.need_db) bouts.push_back({"db", &ddb, t, bt::contiguous(bshape(d))});
  const std::string bw = bt::run_twice([&] { return bgpu->run(kGpu, Workspace(bws.data(), bws.bytes()), gb); }, bouts, &got);
  ASSERT_EQ(bw, "") << ctx;
  EXPECT_EQ(bt::check_close("dx", head(got[0], R, K), head(hdx, R, K), tol, &worst), "") << ctx;
  // The device buffers hold at least one element; compare the tensors' own sizes (K = 0: dw is empty).
  EXPECT_EQ(bt::check_close("dw", head(got[1], 1, shape_numel(wshape(d))), bt::all_values(hdw), tol, &worst), "") << ctx;
  if (bd.need_db)
    EXPECT_EQ(bt::check_close("db", head(got[2], 1, shape_numel(bshape(d))), bt::all_values(hdb), tol, &worst), "") << ctx;
}

TEST(GroupedLinearCuda, EveryDtypeActivationAndWeightKind) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (DType t : kFloatTypes)
    for (bool shared : {false, true})
      for (GemmActivation act : kActs) {
        compare(gdesc(t, 5, 40, 24, 64, shared, true, act), {0, 9, 9, 30, 30, 57}, rng);  // groups 1, 3 empty; rows 57.. unused
        if (::testing::Test::HasFailure()) return;
      }
}

TEST(GroupedLinearCuda, WithoutBiasOddSizesAndEmptySplits) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  for (DType t : {DType::F32, DType::BF16}) {
    compare(gdesc(t, 3, 16, 8, 12, false, false, GemmActivation::Relu), {0, 5, 5, 12}, rng);
    compare(gdesc(t, 3, 16, 8, 12, true, true, GemmActivation::GeluTanh), {0, 0, 0, 0}, rng);  // every group empty
    compare(gdesc(t, 4, 1, 1, 7, false, true, GemmActivation::None), {0, 1, 2, 2, 7}, rng);     // K = N = 1, one-row groups
    compare(gdesc(t, 2, 33, 7, 1000, false, true, GemmActivation::Gelu), {0, 1, 999}, rng);     // M = 1 and M = 998
    compare(gdesc(t, 2, 0, 5, 6, false, true, GemmActivation::Relu), {0, 2, 6}, rng);           // K = 0
  }
}

// A split never seen is refused while capturing (the heuristics are not
// queried then); after one eager run with it, a captured graph replays the
// direct run's bits.
TEST(GroupedLinearCuda, GraphCaptureNeedsAnEagerRunFirst) {
  BT_SKIP_WITHOUT_GPU();
  bt::Rng rng(bt::fresh_seed());
  const GroupedLinearDescriptor d = gdesc(DType::BF16, 2, 72, 56, 5000, false, true, GemmActivation::GeluTanh);
  const std::vector<int64_t> offs{0, 4999, 5000};  // 4999 rows: neither the capacity nor the even split
  bt::CapturedGraph g;
  ASSERT_EQ(cudaStreamCreateWithFlags(&g.stream, cudaStreamNonBlocking), cudaSuccess);
  const Stream s = Stream::cuda(0, g.stream);
  auto plan = GroupedLinearPlan::select(s, d);
  ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
  const int64_t T = 5000, K = 72, N = 56;
  Buffer x = to_device(bt::host_from(d.dtype, bt::random_values(d.dtype, T * K, rng)));
  Buffer w = to_device(bt::host_from(d.dtype, bt::random_values(d.dtype, 2 * N * K, rng)));
  Buffer b = to_device(bt::host_from(d.dtype, bt::random_values(d.dtype, 2 * N, rng)));
  Buffer y(Device::cuda(0), T * N * 2), aux(Device::cuda(0), T * N * 2), ws = bt::device_workspace(plan->workspace_size());
  GroupedLinearArgs a;
  a.x = TensorRef::contiguous(x.data(), d.dtype, Device::cuda(0), Dims{T, K});
  a.offsets = host_offsets(offs);
  a.weight = TensorRef::contiguous(w.data(), d.dtype, Device::cuda(0), Dims{2, N, K});
  a.bias = TensorRef::contiguous(b.data(), d.dtype, Device::cuda(0), Dims{2, N});
  a.y = TensorMut::contiguous(y.data(), d.dtype, Device::cuda(0), Dims{T, N});
  a.aux = TensorMut::contiguous(aux.data(), d.dtype, Device::cuda(0), Dims{T, N});
  const Workspace wsv(ws.data(), ws.bytes());
  {
    ASSERT_EQ(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
    const Status st = plan->run(s, wsv, a);
    cudaGraph_t graph = nullptr;
    const cudaError_t end = cudaStreamEndCapture(g.stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    EXPECT_EQ(st.code(), StatusCode::Unsupported) << st.to_string();
    EXPECT_NE(st.message().find("GroupedLinearPlan"), std::string::npos) << st.to_string();
    EXPECT_EQ(end, cudaSuccess) << cudaGetErrorString(end);
  }
  ASSERT_TRUE(plan->run(s, wsv, a).is_ok());
  ASSERT_TRUE(synchronize(s).is_ok());
  const bt::HostBuffer direct = to_host(y, d.dtype, T * N);
  ASSERT_TRUE(y.fill_bytes(0xff).is_ok());
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);
  ASSERT_EQ(cudaStreamBeginCapture(g.stream, cudaStreamCaptureModeGlobal), cudaSuccess);
  const Status st = plan->run(s, wsv, a);
  const cudaError_t end = cudaStreamEndCapture(g.stream, &g.graph);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(end, cudaSuccess);
  ASSERT_EQ(cudaGraphInstantiate(&g.exec, g.graph, 0), cudaSuccess);
  ASSERT_EQ(cudaGraphLaunch(g.exec, g.stream), cudaSuccess);
  ASSERT_EQ(cudaStreamSynchronize(g.stream), cudaSuccess);
  EXPECT_TRUE(to_host(y, d.dtype, T * N).raw() == direct.raw()) << "the replay differs from the direct run";
}

}  // namespace
