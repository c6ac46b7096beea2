// Loud failures (issue 9): a tensor left out is named as missing with the
// descriptor flag that asks for it; a tensor given where the descriptor does
// not use it is refused in every family; every descriptor's dtype defaults to
// f32; a CUDA stream without a GPU says so; an empty (default-constructed) plan
// refuses to run, and plans can be held as members.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

using namespace baracuda;

namespace {

void expect_invalid(const Status& st, const std::string& message) {
  EXPECT_EQ(st.code(), StatusCode::InvalidProblem) << st.to_string();
  EXPECT_EQ(st.message(), message);
}

}  // namespace

TEST(LoudFailures, RequiredTensorLeftOutIsMissing) {
  ReduceDescriptor d;
  d.shape = {2, 3};
  d.axes = {1};
  auto plan = ReducePlan::select(Stream::cpu(), d).value();
  std::vector<float> y(2);
  ReduceArgs a;  // x never filled in
  a.y = TensorMut::contiguous(y.data(), Device::cpu(), {2}, 2);
  expect_invalid(plan.can_implement(a), "ReducePlan: x is missing: expected a f32 view of shape [2,3]");
  expect_invalid(plan.run(Stream::cpu(), Workspace::none(), a), "ReducePlan: x is missing: expected a f32 view of shape [2,3]");
  // A view with a shape but no data is a different mistake, named as such.
  std::vector<float> x(6);
  a.x = TensorRef::contiguous(x.data(), Device::cpu(), {2, 3}, 6);
  a.y = TensorMut::contiguous(static_cast<float*>(nullptr), Device::cpu(), {2}, 2);
  expect_invalid(plan.can_implement(a), "ReducePlan: y data pointer is null");
}

TEST(LoudFailures, MissingTensorNamesTheDescriptorFlag) {
  RopeDescriptor d;  // has_k defaults to true
  d.seq_len = 3;
  d.head_dim = 8;
  std::vector<float> q(24), qo(24), k(24), ko(24);
  RopeArgs a;
  a.q = TensorRef::contiguous(q.data(), Device::cpu(), {1, 1, 3, 8}, 24);
  a.q_out = TensorMut::contiguous(qo.data(), Device::cpu(), {1, 1, 3, 8}, 24);
  auto fwd = RopePlan::select(Stream::cpu(), d).value();
  expect_invalid(fwd.can_implement(a),
                 "RopePlan: k is missing (descriptor.has_k is true, the default; set it to false to rotate q only): "
                 "expected a f32 view of shape [1,1,3,8]");
  a.k = TensorRef::contiguous(k.data(), Device::cpu(), {1, 1, 3, 8}, 24);
  expect_invalid(fwd.can_implement(a),
                 "RopePlan: k_out is missing (descriptor.has_k is true, the default; set it to false to rotate q only): "
                 "expected a f32 view of shape [1,1,3,8]");
  a.k_out = TensorMut::contiguous(ko.data(), Device::cpu(), {1, 1, 3, 8}, 24);
  EXPECT_TRUE(fwd.run(Stream::cpu(), Workspace::none(), a).is_ok());
  // The backward names its own tensors.
  auto bwd = RopeBackwardPlan::select(Stream::cpu(), d).value();
  RopeBackwardArgs b;
  b.dy_q = a.q;
  b.dq = a.q_out;
  expect_invalid(bwd.can_implement(b),
                 "RopeBackwardPlan: dy_k is missing (descriptor.has_k is true, the default; set it to false to rotate q "
                 "only): expected a f32 view of shape [1,1,3,8]");
}

// The reduction backward reads x / y for some kinds only; giving one to a kind
// that does not read it is refused like any unused optional tensor.
TEST(LoudFailures, ReduceBackwardRefusesTensorsItDoesNotRead) {
  std::vector<float> x(6, 1.f), y(2, 3.f), dy(2, 1.f), dx(6);
  auto args = [&](bool with_x, bool with_y) {
    return ReduceBackwardArgs{TensorRef::contiguous(dy.data(), Device::cpu(), {2}, 2),
                              with_x ? TensorRef::contiguous(x.data(), Device::cpu(), {2, 3}, 6) : TensorRef(),
                              with_y ? TensorRef::contiguous(y.data(), Device::cpu(), {2}, 2) : TensorRef(),
                              TensorMut::contiguous(dx.data(), Device::cpu(), {2, 3}, 6)};
  };
  ReduceDescriptor d;
  d.shape = {2, 3};
  d.axes = {1};
  d.kind = ReduceKind::Sum;  // reads neither
  auto sum = ReduceBackwardPlan::select(Stream::cpu(), d).value();
  EXPECT_TRUE(sum.run(Stream::cpu(), Workspace::none(), args(false, false)).is_ok());
  expect_invalid(sum.can_implement(args(true, false)),
                 "ReduceBackwardPlan: x is given but the backward of sum does not read it (needs_x() is false: leave it empty)");
  expect_invalid(sum.run(Stream::cpu(), Workspace::none(), args(false, true)),
                 "ReduceBackwardPlan: y is given but the backward of sum does not read it (needs_y() is false: leave it empty)");
  d.kind = ReduceKind::Prod;  // reads x only
  auto prod = ReduceBackwardPlan::select(Stream::cpu(), d).value();
  EXPECT_TRUE(prod.run(Stream::cpu(), Workspace::none(), args(true, false)).is_ok());
  expect_invalid(prod.can_implement(args(true, true)),
                 "ReduceBackwardPlan: y is given but the backward of prod does not read it (needs_y() is false: leave it empty)");
}

TEST(LoudFailures, EveryDescriptorDefaultsToF32) {
  EXPECT_EQ(ReduceDescriptor{}.dtype, DType::F32);
  EXPECT_EQ(ReduceToDescriptor{}.dtype, DType::F32);
  EXPECT_EQ(RopeDescriptor{}.dtype, DType::F32);
  EXPECT_EQ(SdpaDescriptor{}.dtype, DType::F32);
  EXPECT_EQ(FlashSdpaDescriptor{}.dtype, DType::F32);
  // So f32 buffers built without naming a dtype match a default descriptor.
  FlashSdpaDescriptor d;
  d.q_len = d.kv_len = 2;
  d.head_dim = 32;
  auto plan = FlashSdpaPlan::select(Stream::cpu(), d).value();
  std::vector<float> q(64), k(64), v(64), y(64), lse(2);
  for (size_t i = 0; i < q.size(); ++i) q[i] = k[i] = v[i] = static_cast<float>(i % 7) / 7.f;
  FlashSdpaArgs a;
  a.q = TensorRef::contiguous(q.data(), Device::cpu(), plan.q_shape(), 64);
  a.k = TensorRef::contiguous(k.data(), Device::cpu(), plan.kv_shape(), 64);
  a.v = TensorRef::contiguous(v.data(), Device::cpu(), plan.kv_shape(), 64);
  a.y = TensorMut::contiguous(y.data(), Device::cpu(), plan.y_shape(), 64);
  a.lse = TensorMut::contiguous(lse.data(), Device::cpu(), plan.lse_shape(), 2);
  EXPECT_TRUE(plan.run(Stream::cpu(), Workspace::none(), a).is_ok());
}

// select() on a CUDA stream: a CPU-only build says it has no CUDA; a CUDA
// build on a machine without a GPU (or without a driver) says no device is
// present, not that a driver is "insufficient".
TEST(LoudFailures, CudaStreamWithoutAGpu) {
  if (cuda_device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  ReduceDescriptor d;
  d.shape = {4};
  const auto r = ReducePlan::select(Stream::cuda(0), d);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
#ifdef BARACUDA_WITH_CUDA
  EXPECT_EQ(r.status().message().rfind("ReducePlan: no CUDA device present (", 0), 0u) << r.status().message();
  EXPECT_NE(r.status().message().find("run on Stream::cpu() instead"), std::string::npos) << r.status().message();
  EXPECT_EQ(r.status().message().find("insufficient"), std::string::npos) << r.status().message();
#else
  EXPECT_EQ(r.status().message(),
            "ReducePlan: stream is on cuda:0 but this baracuda build has no CUDA support (BARACUDA_CUDA=OFF)");
#endif
}

// A layer holds its plans as plain members: empty until init() assigns them.
namespace {
struct AttentionLayer {
  RopePlan rope;
  FlashSdpaPlan attn;
  ReducePlan reduce;
  Status init(const Stream& s, const RopeDescriptor& rd, const FlashSdpaDescriptor& fd) {
    auto r = RopePlan::select(s, rd);
    if (!r) return r.status();
    auto f = FlashSdpaPlan::select(s, fd);
    if (!f) return f.status();
    rope = std::move(*r);
    attn = std::move(*f);
    return Status::ok();
  }
};
}  // namespace

TEST(LoudFailures, PlansAsMembers) {
  AttentionLayer layer;
  EXPECT_TRUE(layer.rope.empty() && layer.attn.empty() && layer.reduce.empty());
  std::vector<float> q(24), qo(24);
  RopeArgs a;
  a.q = TensorRef::contiguous(q.data(), Device::cpu(), {1, 1, 3, 8}, 24);
  a.q_out = TensorMut::contiguous(qo.data(), Device::cpu(), {1, 1, 3, 8}, 24);
  expect_invalid(layer.rope.run(Stream::cpu(), Workspace::none(), a),
                 "RopePlan: the plan is empty (default-constructed): assign it from RopePlan::select() first");
  RopeDescriptor rd;
  rd.seq_len = 3;
  rd.head_dim = 8;
  rd.has_k = false;
  FlashSdpaDescriptor fd;
  fd.q_len = fd.kv_len = 3;
  fd.head_dim = 32;
  ASSERT_TRUE(layer.init(Stream::cpu(), rd, fd).is_ok());
  EXPECT_FALSE(layer.rope.empty() || layer.attn.empty());
  EXPECT_TRUE(layer.reduce.empty());
  EXPECT_TRUE(layer.rope.run(Stream::cpu(), Workspace::none(), a).is_ok());
  // A vector of plans default-constructs its elements empty.
  std::vector<ReducePlan> plans(3);
  for (const ReducePlan& p : plans) EXPECT_TRUE(p.empty());
}
