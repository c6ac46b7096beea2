// The plan shell's shared rules, exercised through real plans: overflow-safe
// views and descriptors, broken ranks, unused optional tensors, plan-named
// messages, the exact overlap test and the variant hint recorded at select().
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace {

using namespace baracuda;

const Stream kCpu = Stream::cpu();

void expect_error(const Status& st, StatusCode code, const std::string& needle) {
  EXPECT_EQ(st.code(), code) << st.to_string();
  EXPECT_NE(st.message().find(needle), std::string::npos) << "message: " << st.message() << "\nexpected: " << needle;
}

ReducePlan sum_plan(Dims shape, Dims axes) {
  ReduceDescriptor d;
  d.shape = shape;
  d.axes = axes;
  return ReducePlan::select(kCpu, d).value();
}

TEST(PlanShell, DescriptorElementCountOverflowIsInvalid) {
  ReduceDescriptor d;
  d.shape = {int64_t{1} << 32, int64_t{1} << 32};
  expect_error(ReducePlan::select(kCpu, d).status(), StatusCode::InvalidProblem, "ReducePlan: input shape");
  expect_error(ReducePlan::select(kCpu, d).status(), StatusCode::InvalidProblem, "overflows int64");
  // A zero extent makes the tensor empty whatever the others: still valid.
  d.shape = {0, int64_t{1} << 40, int64_t{1} << 40};
  d.axes = {0};
  EXPECT_TRUE(ReducePlan::select(kCpu, d).is_ok());
  // ... but a reduced extent that overflows on its own is not.
  d.axes = {1, 2};
  expect_error(ReducePlan::select(kCpu, d).status(), StatusCode::InvalidProblem, "reduced extent");
}

TEST(PlanShell, ViewSpanOverflowIsInvalidNotBufferTooSmall) {
  const ReducePlan p = sum_plan({2, 3}, {1});
  std::vector<float> x(6), y(2);
  ReduceArgs a;
  a.x = TensorRef(x.data(), DType::F32, Device::cpu(), {2, 3}, {INT64_MAX, 1}, 6);
  a.y = TensorMut::contiguous(y.data(), DType::F32, Device::cpu(), {2});
  expect_error(p.can_implement(a), StatusCode::InvalidProblem, "ReducePlan: x strides");
  expect_error(p.run(kCpu, Workspace::none(), a), StatusCode::InvalidProblem, "reach past int64");
  // Empty views are validated like others: offsets along their non-empty axes
  // (which the reference still forms for the kept axes) must fit int64.
  ReducePlan empty = sum_plan({3, 0}, {1});
  std::vector<float> y3(3);
  ReduceArgs e;
  e.x = TensorRef(x.data(), DType::F32, Device::cpu(), {3, 0}, {int64_t{1} << 62, 1}, 6);
  e.y = TensorMut::contiguous(y3.data(), DType::F32, Device::cpu(), {3});
  expect_error(empty.run(kCpu, Workspace::none(), e), StatusCode::InvalidProblem, "ReducePlan: x strides");
  e.x.strides = {1, 1};
  EXPECT_TRUE(empty.run(kCpu, Workspace::none(), e).is_ok());
  EXPECT_EQ(y3, (std::vector<float>{0, 0, 0}));
  // A span that fits int64 but not the address space past the pointer.
  a.x = TensorRef(x.data(), DType::F32, Device::cpu(), {2, 3}, {INT64_MAX / 4, 1}, INT64_MAX);
  expect_error(p.can_implement(a), StatusCode::InvalidProblem, "past the end of the address space");
}

TEST(PlanShell, BrokenRankIsInvalidNotACrash) {
  const ReducePlan p = sum_plan({2, 3}, {1});
  std::vector<float> x(6), y(2);
  ReduceArgs a;
  a.x = TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), {2, 3});
  a.y = TensorMut::contiguous(y.data(), DType::F32, Device::cpu(), {2});
  for (int bad : {-3, 9, 1000}) {
    ReduceArgs b = a;
    b.x.shape.rank = bad;
    expect_error(p.can_implement(b), StatusCode::InvalidProblem, "ReducePlan: x has a broken rank");
    b = a;
    b.y.strides.rank = bad;
    expect_error(p.can_implement(b), StatusCode::InvalidProblem, "ReducePlan: y has a broken rank");
  }
  ReduceDescriptor d;
  d.shape.rank = 12;
  expect_error(ReducePlan::select(kCpu, d).status(), StatusCode::InvalidProblem, "rank 12 outside [0, 8]");
  d = ReduceDescriptor();
  d.shape = {2, 3};
  d.axes.rank = 40;
  expect_error(ReducePlan::select(kCpu, d).status(), StatusCode::InvalidProblem, "ReducePlan: axes list rank 40 outside [0, 8]");
}

FlashSdpaDescriptor small_flash() {
  FlashSdpaDescriptor d;
  d.dtype = DType::F32;
  d.batch = 1;
  d.heads = 2;
  d.kv_heads = 1;
  d.q_len = 3;
  d.kv_len = 5;
  d.head_dim = 32;
  return d;
}

struct FlashBuffers {
  std::vector<float> q, k, v, y, lse, extra;
  FlashSdpaArgs args;
  explicit FlashBuffers(const FlashSdpaDescriptor& d)
      : q(d.batch * d.heads * d.q_len * d.head_dim), k(d.batch * d.kv_heads * d.kv_len * d.head_dim), v(k.size()),
        y(q.size()), lse(d.batch * d.heads * d.q_len), extra(64, 0.f) {
    for (size_t i = 0; i < q.size(); ++i) q[i] = static_cast<float>((i * 7) % 11) / 11.f;
    for (size_t i = 0; i < k.size(); ++i) k[i] = v[i] = static_cast<float>((i * 5) % 13) / 13.f;
    const Device c = Device::cpu();
    args.q = TensorRef::contiguous(q.data(), DType::F32, c, {d.batch, d.heads, d.q_len, d.head_dim});
    args.k = TensorRef::contiguous(k.data(), DType::F32, c, {d.batch, d.kv_heads, d.kv_len, d.head_dim});
    args.v = TensorRef::contiguous(v.data(), DType::F32, c, {d.batch, d.kv_heads, d.kv_len, d.head_dim});
    args.y = TensorMut::contiguous(y.data(), DType::F32, c, {d.batch, d.heads, d.q_len, d.head_dim});
    args.lse = TensorMut::contiguous(lse.data(), DType::F32, c, {d.batch, d.heads, d.q_len});
  }
};

TEST(PlanShell, UnusedOptionalTensorsAreErrors) {
  const auto d = small_flash();
  auto plan = FlashSdpaPlan::select(kCpu, d).value();
  FlashBuffers b(d);
  ASSERT_TRUE(plan.run(kCpu, Workspace::none(), b.args).is_ok());
  FlashSdpaArgs a = b.args;
  a.mask = TensorRef::contiguous(b.extra.data(), DType::F32, Device::cpu(), {1, 2, 3, 5});
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "FlashSdpaPlan: mask is given but descriptor.has_mask is false");
  a = b.args;
  a.alibi_slopes = TensorRef::contiguous(b.extra.data(), DType::F32, Device::cpu(), {2});
  expect_error(plan.can_implement(a), StatusCode::InvalidProblem, "alibi_slopes is given but descriptor.alibi is none");
  a = b.args;
  a.cu_seqlens_q = TensorRef::contiguous(b.extra.data(), DType::I32, Device::cpu(), {2});
  expect_error(plan.run(kCpu, Workspace::none(), a), StatusCode::InvalidProblem, "cu_seqlens_q is given but descriptor.varlen is false");

  SdpaDescriptor sd;
  sd.batch = 1;
  sd.q_len = 2;
  sd.kv_len = 2;
  sd.head_dim = 4;
  auto sp = SdpaPlan::select(kCpu, sd).value();
  std::vector<float> q(8), k(8), v(8), y(8), probs(4), m(4);
  SdpaArgs sa;
  const Device c = Device::cpu();
  sa.q = TensorRef::contiguous(q.data(), DType::F32, c, {1, 1, 2, 4});
  sa.k = TensorRef::contiguous(k.data(), DType::F32, c, {1, 1, 2, 4});
  sa.v = TensorRef::contiguous(v.data(), DType::F32, c, {1, 1, 2, 4});
  sa.y = TensorMut::contiguous(y.data(), DType::F32, c, {1, 1, 2, 4});
  sa.probs = TensorMut::contiguous(probs.data(), DType::F32, c, {1, 1, 2, 2});
  EXPECT_TRUE(sp.run(kCpu, Workspace::none(), sa).is_ok());
  sa.mask = TensorRef::contiguous(m.data(), DType::F32, c, {1, 1, 2, 2});
  expect_error(sp.can_implement(sa), StatusCode::InvalidProblem, "SdpaPlan: mask is given but descriptor.has_mask is false");
}

TEST(PlanShell, HugeWindowIsClampedAndExact) {
  auto d = small_flash();
  d.window_left = INT64_MAX;
  d.window_right = INT64_MAX - 1;
  auto plan = FlashSdpaPlan::select(kCpu, d).value();
  EXPECT_EQ(plan.descriptor().window_left, d.q_len + d.kv_len);
  EXPECT_EQ(plan.descriptor().window_right, d.q_len + d.kv_len);
  FlashBuffers b(d);
  ASSERT_TRUE(plan.run(kCpu, Workspace::none(), b.args).is_ok());
  // Same numbers as no window at all.
  auto open = small_flash();
  auto plan2 = FlashSdpaPlan::select(kCpu, open).value();
  FlashBuffers b2(open);
  ASSERT_TRUE(plan2.run(kCpu, Workspace::none(), b2.args).is_ok());
  EXPECT_EQ(b.y, b2.y);
  EXPECT_EQ(b.lse, b2.lse);
}

TEST(PlanShell, BackwardPlansNameThemselves) {
  auto d = small_flash();
  d.heads = 3;  // not a multiple of kv_heads... with kv_heads 2
  d.kv_heads = 2;
  expect_error(FlashSdpaBackwardPlan::select(kCpu, d).status(), StatusCode::InvalidProblem, "FlashSdpaBackwardPlan: heads");
  SdpaDescriptor sd;
  sd.head_dim = 4;
  sd.head_dim_v = -5;
  expect_error(SdpaBackwardPlan::select(kCpu, sd).status(), StatusCode::InvalidProblem,
               "SdpaBackwardPlan: head_dim_v -5 must be -1 (= head_dim) or >= 1");
  RopeDescriptor rd;
  rd.dtype = DType::I32;
  expect_error(RopeBackwardPlan::select(kCpu, rd).status(), StatusCode::Unsupported, "RopeBackwardPlan: dtype i32");
}

TEST(PlanShell, VariantHintIsValidatedAtSelect) {
  const auto d = small_flash();
  PlanPreference pref;
  pref.variant = "splits=4,wgmma=0,tile=128x64w4s2";
  EXPECT_TRUE(FlashSdpaPlan::select(kCpu, d, pref).is_ok());
  pref.variant = "wgmma=0";
  EXPECT_TRUE(FlashSdpaBackwardPlan::select(kCpu, d, pref).is_ok());
  for (const char* bad : {"bogus=1", "tile=128x64", "tile=128x64w4s2junk", "splits=-2", "wgmma=yes", "splits"}) {
    pref.variant = bad;
    expect_error(FlashSdpaPlan::select(kCpu, d, pref).status(), StatusCode::InvalidProblem, "FlashSdpaPlan: variant hint");
  }
  pref.variant = "splits=2";  // the backward has no split-KV path
  expect_error(FlashSdpaBackwardPlan::select(kCpu, d, pref).status(), StatusCode::InvalidProblem, "unknown key (wgmma)");
}

TEST(PlanShell, WorkspaceSizeOverflowIsInvalid) {
  SdpaDescriptor sd;
  sd.batch = int64_t{1} << 20;
  sd.heads = int64_t{1} << 20;
  sd.q_len = int64_t{1} << 12;
  sd.kv_len = int64_t{1} << 12;
  sd.head_dim = 1;
  expect_error(SdpaBackwardPlan::select(kCpu, sd).status(), StatusCode::InvalidProblem, "SdpaBackwardPlan: score matrix size");
}

}  // namespace
