// Every validation rule of ReducePlan / ReduceBackwardPlan / ReduceToPlan:
// the StatusCode AND a substring of the message (which names the plan).
// Also the SKU each CPU plan reports.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/reduce_helpers.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;
using bt::make_desc;

namespace {

const Stream kCpu = Stream::cpu();

Status select_status(const ReduceDescriptor& d, const PlanPreference& p = {}) {
  auto r = ReducePlan::select(kCpu, d, p);
  return r.is_ok() ? Status::ok() : r.status();
}
Status select_bw_status(const ReduceDescriptor& d, const PlanPreference& p = {}) {
  auto r = ReduceBackwardPlan::select(kCpu, d, p);
  return r.is_ok() ? Status::ok() : r.status();
}
Status select_to_status(DType t, Dims shape, Dims target, const Stream& s = kCpu, const PlanPreference& p = {}) {
  ReduceToDescriptor d;
  d.dtype = t;
  d.shape = shape;
  d.target = target;
  auto r = ReduceToPlan::select(s, d, p);
  return r.is_ok() ? Status::ok() : r.status();
}

PlanPreference require(Backend b) {
  PlanPreference p;
  p.backend = b;
  p.require_backend = true;
  return p;
}

// A [2,3] f32 Sum over axis 1 on the CPU with valid args; tests break one thing.
struct SumFixture {
  ReduceDescriptor d = make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {1});
  std::vector<float> x = std::vector<float>(6, 1.0f);
  std::vector<float> y = std::vector<float>(2, 0.0f);
  ReducePlan plan = ReducePlan::select(kCpu, d).value();
  ReduceArgs args() {
    return {TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), {2, 3}),
            TensorMut::contiguous(y.data(), DType::F32, Device::cpu(), {2})};
  }
  // Checks can_implement and run report the same error.
  void expect(const ReduceArgs& a, StatusCode code, const std::string& substr) {
    BT_EXPECT_STATUS(plan.can_implement(a), code, substr);
    BT_EXPECT_STATUS(plan.run(kCpu, Workspace::none(), a), code, substr);
  }
};

}  // namespace

// ---------------------------------------------------------------------------
// Descriptor rules (select)
// ---------------------------------------------------------------------------
TEST(ReduceValidation, AxisOutOfRange) {
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {2})), StatusCode::InvalidProblem,
                   "ReducePlan: axis 2 out of range for rank 2");
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {-3})), StatusCode::InvalidProblem,
                   "ReducePlan: axis -3 out of range for rank 2");
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Max, DType::F32, {}, {0})), StatusCode::InvalidProblem,
                   "ReducePlan: axis 0 out of range for rank 0");
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {0, 7})), StatusCode::InvalidProblem,
                   "axis 7 out of range");
  // Boundaries are fine.
  EXPECT_TRUE(select_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {-2})).is_ok());
  EXPECT_TRUE(select_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {1})).is_ok());
}

TEST(ReduceValidation, AxisRepeated) {
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {1, 1})), StatusCode::InvalidProblem,
                   "ReducePlan: axis 1 repeated in axes [1,1]");
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {1, -1})), StatusCode::InvalidProblem,
                   "ReducePlan: axis -1 repeated in axes [1,-1]");
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Mean, DType::F64, {2, 3, 4}, {0, 2, -3})), StatusCode::InvalidProblem,
                   "repeated");
}

TEST(ReduceValidation, NegativeExtent) {
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Sum, DType::F32, {2, -1}, {1})), StatusCode::InvalidProblem,
                   "ReducePlan: input shape [2,-1] has a negative extent at axis 1");
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::Sum, DType::F32, {-4}, {})), StatusCode::InvalidProblem,
                   "ReduceBackwardPlan: input shape [-4] has a negative extent at axis 0");
}

TEST(ReduceValidation, RankAboveEight) {
  // Dims cannot be built with more than 8 entries ...
  EXPECT_THROW((Dims{1, 1, 1, 1, 1, 1, 1, 1, 1}), std::length_error);
  // ... but a hand-made rank is still checked.
  ReduceDescriptor d = make_desc(ReduceKind::Sum, DType::F32, {1, 1, 1, 1, 1, 1, 1, 1}, {});
  d.shape.rank = 9;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "ReducePlan: input shape rank 9 outside [0, 8]");
  BT_EXPECT_STATUS(select_bw_status(d), StatusCode::InvalidProblem, "ReduceBackwardPlan: input shape rank 9 outside [0, 8]");
  d.shape.rank = -1;
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "rank -1 outside [0, 8]");
  // Rank 8 works.
  EXPECT_TRUE(select_status(make_desc(ReduceKind::Sum, DType::F32, {1, 2, 1, 2, 1, 2, 1, 2}, {1, 3, -1})).is_ok());
}

TEST(ReduceValidation, UnsupportedDTypeForKind) {
  for (ReduceKind k : {ReduceKind::Mean, ReduceKind::Norm2, ReduceKind::LogSumExp, ReduceKind::Var, ReduceKind::Std}) {
    for (DType t : {DType::I32, DType::I64}) {
      const std::string msg = std::string("ReducePlan: kind ") + reduce_kind_name(k) + " does not support dtype " +
                              std::string(dtype_name(t));
      BT_EXPECT_STATUS(select_status(make_desc(k, t, {2, 3}, {1})), StatusCode::Unsupported, msg);
    }
  }
  for (ReduceKind k : bt::kAllKinds) {
    for (DType t : {DType::U8, DType::I8, DType::Bool}) {
      const std::string msg = std::string("kind ") + reduce_kind_name(k) + " does not support dtype " + std::string(dtype_name(t));
      BT_EXPECT_STATUS(select_status(make_desc(k, t, {2, 3}, {1})), StatusCode::Unsupported, msg);
    }
  }
  // The integer-capable kinds accept i32 / i64.
  for (ReduceKind k : bt::kAllKinds)
    for (DType t : {DType::I32, DType::I64})
      EXPECT_EQ(select_status(make_desc(k, t, {2, 3}, {1})).is_ok(), bt::int_capable(k)) << bt::kname(k) << " " << bt::tname(t);
}

TEST(ReduceValidation, UnknownKind) {
  ReduceDescriptor d = make_desc(ReduceKind::Sum, DType::F32, {2}, {});
  d.kind = static_cast<ReduceKind>(42);
  BT_EXPECT_STATUS(select_status(d), StatusCode::InvalidProblem, "ReducePlan: unknown ReduceKind 42");
}

TEST(ReduceValidation, NegativeCorrection) {
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Var, DType::F32, {2, 3}, {1}, false, -1)), StatusCode::InvalidProblem,
                   "ReducePlan: correction -1 must be >= 0");
  BT_EXPECT_STATUS(select_status(make_desc(ReduceKind::Std, DType::F64, {2, 3}, {1}, false, -5)), StatusCode::InvalidProblem,
                   "correction -5 must be >= 0");
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::Var, DType::F32, {2, 3}, {1}, false, -1)), StatusCode::InvalidProblem,
                   "ReduceBackwardPlan: correction -1 must be >= 0");
  EXPECT_TRUE(select_status(make_desc(ReduceKind::Var, DType::F32, {2, 3}, {1}, false, 0)).is_ok());
  EXPECT_TRUE(select_status(make_desc(ReduceKind::Var, DType::F32, {2, 3}, {1}, false, 100)).is_ok());
}

TEST(ReduceValidation, SelectionKindsOverAnEmptyAxis) {
  for (ReduceKind k : {ReduceKind::Max, ReduceKind::Min, ReduceKind::ArgMax, ReduceKind::ArgMin}) {
    for (DType t : {DType::F32, DType::BF16, DType::I32}) {
      SCOPED_TRACE(bt::kname(k) + " " + bt::tname(t));
      BT_EXPECT_STATUS(select_status(make_desc(k, t, {0, 3}, {0})), StatusCode::InvalidProblem,
                       std::string("ReducePlan: ") + reduce_kind_name(k) + " over an empty axis of shape [0,3] has no identity");
      BT_EXPECT_STATUS(select_status(make_desc(k, t, {2, 0}, {})), StatusCode::InvalidProblem, "over an empty axis");
      BT_EXPECT_STATUS(select_status(make_desc(k, t, {2, 0, 3}, {1, 2}, true)), StatusCode::InvalidProblem, "over an empty axis");
      // Empty output, non-empty reduction: fine.
      EXPECT_TRUE(select_status(make_desc(k, t, {0, 3}, {1})).is_ok());
    }
  }
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::Max, DType::F32, {0, 3}, {0})), StatusCode::InvalidProblem,
                   "ReduceBackwardPlan: max over an empty axis");
  // Kinds with an identity accept it.
  for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Prod, ReduceKind::Norm2, ReduceKind::LogSumExp,
                       ReduceKind::Var, ReduceKind::Std})
    EXPECT_TRUE(select_status(make_desc(k, DType::F32, {0, 3}, {0})).is_ok()) << bt::kname(k);
}

// ---------------------------------------------------------------------------
// Argument rules (can_implement / run)
// ---------------------------------------------------------------------------
TEST(ReduceValidation, WrongDType) {
  SumFixture f;
  auto a = f.args();
  a.x.dtype = DType::F64;
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: x dtype f64 must be f32");
  a = f.args();
  a.y.dtype = DType::F16;
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: y dtype f16 must be f32");
  // Integer Sum writes I64; ArgMax writes I64.
  std::vector<int32_t> xi(6, 1);
  std::vector<int64_t> yi(2);
  auto p = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::I32, {2, 3}, {1})).value();
  EXPECT_EQ(p.output_dtype(), DType::I64);
  ReduceArgs ai{TensorRef::contiguous(xi.data(), DType::I32, Device::cpu(), {2, 3}),
                TensorMut::contiguous(yi.data(), DType::I32, Device::cpu(), {2})};
  BT_EXPECT_STATUS(p.can_implement(ai), StatusCode::InvalidProblem, "ReducePlan: y dtype i32 must be i64");
  ai.y.dtype = DType::I64;
  EXPECT_TRUE(p.can_implement(ai).is_ok());
  auto am = ReducePlan::select(kCpu, make_desc(ReduceKind::ArgMax, DType::F32, {2, 3}, {1})).value();
  EXPECT_EQ(am.output_dtype(), DType::I64);
  a = f.args();
  BT_EXPECT_STATUS(am.can_implement(a), StatusCode::InvalidProblem, "ReducePlan: y dtype f32 must be i64");
}

TEST(ReduceValidation, WrongShape) {
  SumFixture f;
  auto a = f.args();
  a.x.shape = {2, 4};
  a.x.strides = {4, 1};
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: x shape [2,4] must be [2,3]");
  a = f.args();
  a.y.shape = {2, 1};
  a.y.strides = {1, 1};
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: y shape [2,1] must be [2]");
  // keepdim plan wants [2,1].
  auto pk = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {1}, true)).value();
  BT_EXPECT_STATUS(pk.can_implement(f.args()), StatusCode::InvalidProblem, "ReducePlan: y shape [2] must be [2,1]");
  // Strides of the wrong rank.
  a = f.args();
  a.x.strides = {1};
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: x has 1 strides for rank 2");
}

TEST(ReduceValidation, NegativeStride) {
  SumFixture f;
  auto a = f.args();
  a.x.strides = {3, -1};
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: x stride -1 at axis 1 is negative (unsupported)");
  a = f.args();
  a.y.strides = {-1};
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: y stride -1 at axis 0 is negative");
}

TEST(ReduceValidation, NullData) {
  SumFixture f;
  auto a = f.args();
  a.x.data = nullptr;
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: x data pointer is null");
  a = f.args();
  a.y.data = nullptr;
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: y data pointer is null");
  // Empty views may be null.
  auto pe = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {0, 3}, {1})).value();
  ReduceArgs e{TensorRef::contiguous(nullptr, DType::F32, Device::cpu(), {0, 3}),
               TensorMut::contiguous(nullptr, DType::F32, Device::cpu(), {0})};
  EXPECT_TRUE(pe.can_implement(e).is_ok());
  EXPECT_TRUE(pe.run(kCpu, Workspace::none(), e).is_ok());
  // Empty input, non-empty output: x may be null, y may not.
  auto pz = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {0, 3}, {0})).value();
  std::vector<float> y3(3, -1.0f);
  ReduceArgs z{TensorRef::contiguous(nullptr, DType::F32, Device::cpu(), {0, 3}),
               TensorMut::contiguous(y3.data(), DType::F32, Device::cpu(), {3})};
  ASSERT_TRUE(pz.run(kCpu, Workspace::none(), z).is_ok());
  EXPECT_EQ(y3, (std::vector<float>{0, 0, 0}));
  z.y.data = nullptr;
  BT_EXPECT_STATUS(pz.run(kCpu, Workspace::none(), z), StatusCode::InvalidProblem, "ReducePlan: y data pointer is null");
}

TEST(ReduceValidation, MisalignedPointer) {
  SumFixture f;
  auto a = f.args();
  a.x.data = reinterpret_cast<const char*>(f.x.data()) + 1;
  a.x.capacity = 5;
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: x data pointer is not aligned to its 4-byte element");
}

TEST(ReduceValidation, BufferTooSmall) {
  SumFixture f;
  auto a = f.args();
  a.x.capacity = 5;
  Status st = f.plan.can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall) << st.to_string();
  EXPECT_EQ(st.needed(), 6u);
  EXPECT_EQ(st.got(), 5u);
  EXPECT_NE(st.message().find("ReducePlan: x view reaches 6 elements but its buffer holds 5"), std::string::npos) << st.message();
  st = f.plan.run(kCpu, Workspace::none(), a);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);
  EXPECT_EQ(st.needed(), 6u);
  EXPECT_EQ(st.got(), 5u);
  // A strided view: the span counts, not numel.
  a = f.args();
  a.x.strides = {4, 1};  // reaches 4 + 2 + 1 = 7 elements
  a.x.capacity = 6;
  st = f.plan.can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);
  EXPECT_EQ(st.needed(), 7u);
  EXPECT_EQ(st.got(), 6u);
  // Output.
  a = f.args();
  a.y.capacity = 1;
  st = f.plan.can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);
  EXPECT_EQ(st.needed(), 2u);
  EXPECT_EQ(st.got(), 1u);
  EXPECT_NE(st.message().find("ReducePlan: y view reaches 2 elements but its buffer holds 1"), std::string::npos) << st.message();
  // Negative capacity reports got = 0.
  a = f.args();
  a.x.capacity = -3;
  st = f.plan.can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);
  EXPECT_EQ(st.got(), 0u);
  // Through Buffer::view: capacity = bytes / dtype size.
  Buffer small(Device::cpu(), 5 * sizeof(float));
  a = f.args();
  a.x = small.view(DType::F32, {2, 3});
  st = f.plan.can_implement(a);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);
  EXPECT_EQ(st.needed(), 6u);
  EXPECT_EQ(st.got(), 5u);
}

TEST(ReduceValidation, OutputSelfOverlap) {
  auto p = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {3, 2}, {1})).value();
  std::vector<float> x(6, 1.0f), y(8, 0.0f);
  ReduceArgs a{TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), {3, 2}),
               TensorMut(y.data(), DType::F32, Device::cpu(), {3}, {0}, 8)};
  BT_EXPECT_STATUS(p.can_implement(a), StatusCode::InvalidProblem,
                   "ReducePlan: y strides [0] for shape [3] make elements overlap (an output must not alias itself)");
  BT_EXPECT_STATUS(p.run(kCpu, Workspace::none(), a), StatusCode::InvalidProblem, "an output must not alias itself");
  // Two axes whose strides interleave.
  auto p2 = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {2, 2, 3}, {2})).value();
  std::vector<float> x2(12, 1.0f);
  ReduceArgs b{TensorRef::contiguous(x2.data(), DType::F32, Device::cpu(), {2, 2, 3}),
               TensorMut(y.data(), DType::F32, Device::cpu(), {2, 2}, {1, 1}, 8)};
  BT_EXPECT_STATUS(p2.can_implement(b), StatusCode::InvalidProblem, "make elements overlap");
  // Stride 0 on an extent-1 output axis is fine (nothing is written twice).
  auto pk = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {3, 2}, {1}, true)).value();
  ReduceArgs c{TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), {3, 2}),
               TensorMut(y.data(), DType::F32, Device::cpu(), {3, 1}, {1, 0}, 8)};
  EXPECT_TRUE(pk.can_implement(c).is_ok());
  // Input broadcast (stride 0) is fine.
  ReduceArgs d{TensorRef(x.data(), DType::F32, Device::cpu(), {3, 2}, {0, 1}, 6),
               TensorMut::contiguous(y.data(), DType::F32, Device::cpu(), {3})};
  EXPECT_TRUE(p.can_implement(d).is_ok());
}

TEST(ReduceValidation, OutputOverlapsInput) {
  auto p = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {1})).value();
  std::vector<float> buf(8, 1.0f);
  ReduceArgs a{TensorRef::contiguous(buf.data(), DType::F32, Device::cpu(), {2, 3}),
               TensorMut::contiguous(buf.data() + 5, DType::F32, Device::cpu(), {2})};
  a.y.capacity = 3;
  BT_EXPECT_STATUS(p.can_implement(a), StatusCode::InvalidProblem,
                   "ReducePlan: y overlaps x in memory (in-place reduction is not supported)");
  BT_EXPECT_STATUS(p.run(kCpu, Workspace::none(), a), StatusCode::InvalidProblem, "y overlaps x");
  // Adjacent, not overlapping: fine.
  a.y.data = buf.data() + 6;
  a.y.capacity = 2;
  EXPECT_TRUE(p.can_implement(a).is_ok());
}

TEST(ReduceValidation, WorkspaceOnTheCpu) {
  // No CPU plan needs scratch, so WorkspaceTooSmall cannot be provoked here;
  // every CPU plan must report 0 and run with Workspace::none().
  for (ReduceKind k : bt::kAllKinds) {
    auto p = ReducePlan::select(kCpu, make_desc(k, DType::F32, {64, 1000}, {}));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ(p->workspace_size(), 0u) << bt::kname(k);
  }
  for (ReduceKind k : bt::kGradKinds) {
    auto p = ReduceBackwardPlan::select(kCpu, make_desc(k, DType::F32, {64, 1000}, {1}));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ(p->workspace_size(), 0u) << bt::kname(k);
  }
  ReduceToDescriptor td;
  td.shape = {64, 1000};
  td.target = {1};
  EXPECT_EQ(ReduceToPlan::select(kCpu, td).value().workspace_size(), 0u);
  // Extra scratch is harmless.
  SumFixture f;
  std::vector<char> ws(64);
  EXPECT_TRUE(f.plan.run(kCpu, Workspace(ws.data(), ws.size()), f.args()).is_ok());
  EXPECT_EQ(f.y, (std::vector<float>{3, 3}));
}

TEST(ReduceValidation, StreamAndDeviceMismatch) {
  SumFixture f;
  // Plan on the CPU, run on a CUDA stream.
  BT_EXPECT_STATUS(f.plan.run(Stream::cuda(0), Workspace::none(), f.args()), StatusCode::InvalidProblem,
                   "ReducePlan: stream is on cuda:0 but the plan was selected for cpu");
  // Views claiming a CUDA device.
  auto a = f.args();
  a.x.device = Device::cuda(0);
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: x is on cuda:0 but the plan runs on cpu");
  a = f.args();
  a.y.device = Device::cuda(1);
  f.expect(a, StatusCode::InvalidProblem, "ReducePlan: y is on cuda:1 but the plan runs on cpu");
#ifndef BARACUDA_WITH_CUDA
  // A CUDA stream in a CPU-only build.
  auto r = ReducePlan::select(Stream::cuda(0), f.d);
  BT_EXPECT_STATUS(r.status(), StatusCode::Unsupported, "ReducePlan: stream is on cuda:0 but this baracuda build has no CUDA support");
  auto rb = ReduceBackwardPlan::select(Stream::cuda(0), f.d);
  BT_EXPECT_STATUS(rb.status(), StatusCode::Unsupported, "ReduceBackwardPlan: stream is on cuda:0");
  BT_EXPECT_STATUS(select_to_status(DType::F32, {2, 3}, {3}, Stream::cuda(0)), StatusCode::Unsupported, "ReduceToPlan");
#endif
}

TEST(ReduceValidation, RequiredBackends) {
  const auto d = make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {1});
  BT_EXPECT_STATUS(select_status(d, require(Backend::Bespoke)), StatusCode::Unsupported,
                   "ReducePlan: backend bespoke-cuda required but the stream is on the CPU");
  BT_EXPECT_STATUS(select_status(d, require(Backend::CuDnn)), StatusCode::Unsupported,
                   "ReducePlan: backend cudnn has no reduction implementation");
  BT_EXPECT_STATUS(select_status(d, require(Backend::CuBlasLt)), StatusCode::Unsupported,
                   "ReducePlan: backend cublaslt has no reduction implementation");
  BT_EXPECT_STATUS(select_bw_status(d, require(Backend::Bespoke)), StatusCode::Unsupported,
                   "ReduceBackwardPlan: backend bespoke-cuda required");
  BT_EXPECT_STATUS(select_bw_status(d, require(Backend::CuDnn)), StatusCode::Unsupported,
                   "ReduceBackwardPlan: backend cudnn has no reduction implementation");
  BT_EXPECT_STATUS(select_to_status(DType::F32, {2, 3}, {3}, kCpu, require(Backend::Bespoke)), StatusCode::Unsupported,
                   "ReduceToPlan: ReducePlan: backend bespoke-cuda required");
  // Requiring the CPU reference on the CPU works; a mere preference falls back.
  auto ok = ReducePlan::select(kCpu, d, require(Backend::CpuReference));
  ASSERT_TRUE(ok.is_ok()) << ok.status().to_string();
  EXPECT_EQ(ok->sku().backend, Backend::CpuReference);
  for (Backend b : {Backend::Bespoke, Backend::CuDnn, Backend::CuBlasLt}) {
    PlanPreference hint;
    hint.backend = b;
    auto h = ReducePlan::select(kCpu, d, hint);
    ASSERT_TRUE(h.is_ok()) << backend_name(b) << ": " << h.status().to_string();
    EXPECT_EQ(h->sku().backend, Backend::CpuReference);
  }
  // Requiring the CPU reference on a CUDA stream is refused (CUDA builds; a
  // CPU-only build refuses the CUDA stream anyway).
  auto c = ReducePlan::select(Stream::cuda(0), d, require(Backend::CpuReference));
  EXPECT_EQ(c.status().code(), StatusCode::Unsupported) << c.status().to_string();
  EXPECT_NE(c.status().message().find("ReducePlan: "), std::string::npos) << c.status().message();
}

// ---------------------------------------------------------------------------
// Backward rules
// ---------------------------------------------------------------------------
TEST(ReduceBackwardValidation, ArgKindsAndIntegerDTypesRejected) {
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::ArgMax, DType::F32, {2, 3}, {1})), StatusCode::InvalidProblem,
                   "ReduceBackwardPlan: argmax has no gradient (its output is an index)");
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::ArgMin, DType::F64, {2, 3}, {1})), StatusCode::InvalidProblem,
                   "ReduceBackwardPlan: argmin has no gradient");
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::Sum, DType::I32, {2, 3}, {1})), StatusCode::Unsupported,
                   "ReduceBackwardPlan: dtype i32 has no gradient (f32, f64, f16, bf16 only)");
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::Max, DType::I64, {2, 3}, {1})), StatusCode::Unsupported,
                   "dtype i64 has no gradient");
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {3})), StatusCode::InvalidProblem,
                   "ReduceBackwardPlan: axis 3 out of range for rank 2");
  BT_EXPECT_STATUS(select_bw_status(make_desc(ReduceKind::Sum, DType::F32, {2, 3}, {0, 0})), StatusCode::InvalidProblem,
                   "ReduceBackwardPlan: axis 0 repeated");
}

namespace {
struct BwFixture {
  ReduceKind kind;
  ReduceDescriptor d;
  std::vector<float> x = std::vector<float>{1, 2, 3, 4, 5, 6};
  std::vector<float> y = std::vector<float>{3, 6};
  std::vector<float> dy = std::vector<float>{1, 1};
  std::vector<float> dx = std::vector<float>(6);
  ReduceBackwardPlan plan;
  explicit BwFixture(ReduceKind k)
      : kind(k), d(make_desc(k, DType::F32, {2, 3}, {1})), plan(ReduceBackwardPlan::select(kCpu, d).value()) {}
  // x and y only where the kind reads them (giving one it does not read is an error).
  ReduceBackwardArgs args() {
    return {TensorRef::contiguous(dy.data(), DType::F32, Device::cpu(), {2}),
            plan.needs_x() ? TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), {2, 3}) : TensorRef(),
            plan.needs_y() ? TensorRef::contiguous(y.data(), DType::F32, Device::cpu(), {2}) : TensorRef(),
            TensorMut::contiguous(dx.data(), DType::F32, Device::cpu(), {2, 3})};
  }
  void expect(const ReduceBackwardArgs& a, StatusCode code, const std::string& substr) {
    BT_EXPECT_STATUS(plan.can_implement(a), code, substr);
    BT_EXPECT_STATUS(plan.run(kCpu, Workspace::none(), a), code, substr);
  }
};
}  // namespace

TEST(ReduceBackwardValidation, MissingXOrY) {
  for (ReduceKind k : bt::kGradKinds) {
    SCOPED_TRACE(bt::kname(k));
    BwFixture f(k);
    EXPECT_TRUE(f.plan.can_implement(f.args()).is_ok());
    auto a = f.args();
    a.x = TensorRef();  // not given
    if (f.plan.needs_x())
      f.expect(a, StatusCode::InvalidProblem,
               std::string("ReduceBackwardPlan: backward of ") + reduce_kind_name(k) + " needs the saved forward input x, which is missing");
    else
      EXPECT_TRUE(f.plan.run(kCpu, Workspace::none(), a).is_ok());
    a = f.args();
    a.x.data = nullptr;  // right shape, null data
    if (f.plan.needs_x()) f.expect(a, StatusCode::InvalidProblem, "needs the saved forward input x, which is missing");
    a = f.args();
    a.y = TensorRef();
    if (f.plan.needs_y())
      f.expect(a, StatusCode::InvalidProblem,
               std::string("ReduceBackwardPlan: backward of ") + reduce_kind_name(k) + " needs the saved forward output y, which is missing");
    else
      EXPECT_TRUE(f.plan.run(kCpu, Workspace::none(), a).is_ok());
    a = f.args();
    a.y.data = nullptr;
    if (f.plan.needs_y()) f.expect(a, StatusCode::InvalidProblem, "needs the saved forward output y, which is missing");
  }
}

TEST(ReduceBackwardValidation, ShapesDTypesOverlaps) {
  BwFixture f(ReduceKind::Max);
  auto a = f.args();
  a.dy.shape = {3};
  a.dy.strides = {1};
  a.dy.capacity = 3;
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dy shape [3] must be [2]");
  a = f.args();
  a.dy.shape = {2, 1};
  a.dy.strides = {1, 1};
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dy shape [2,1] must be [2]");
  a = f.args();
  a.y.shape = {1, 2};
  a.y.strides = {2, 1};
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: y shape [1,2] must be [2]");
  a = f.args();
  a.x.shape = {3, 2};
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: x shape [3,2] must be [2,3]");
  a = f.args();
  a.dx.shape = {6};
  a.dx.strides = {1};
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dx shape [6] must be [2,3]");
  a = f.args();
  a.dy.dtype = DType::F64;
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dy dtype f64 must be f32");
  a = f.args();
  a.dx.dtype = DType::BF16;
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dx dtype bf16 must be f32");
  a = f.args();
  a.dx.strides = {0, 1};
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dx strides [0,1] for shape [2,3] make elements overlap");
  a = f.args();
  a.dx.capacity = 4;
  BT_EXPECT_STATUS(f.plan.can_implement(a), StatusCode::BufferTooSmall, "ReduceBackwardPlan: dx view reaches 6 elements but its buffer holds 4");
  a = f.args();
  a.x.device = Device::cuda(0);
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: x is on cuda:0 but the plan runs on cpu");
  BT_EXPECT_STATUS(f.plan.run(Stream::cuda(0), Workspace::none(), f.args()), StatusCode::InvalidProblem,
                   "ReduceBackwardPlan: stream is on cuda:0 but the plan was selected for cpu");
  // dx aliasing an input.
  std::vector<float> big(16, 1.0f);
  a = f.args();
  a.dx = TensorMut::contiguous(big.data(), DType::F32, Device::cpu(), {2, 3});
  a.dy = TensorRef::contiguous(big.data() + 4, DType::F32, Device::cpu(), {2});
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dx overlaps dy in memory");
  a = f.args();
  a.dx = TensorMut::contiguous(big.data(), DType::F32, Device::cpu(), {2, 3});
  a.x = TensorRef::contiguous(big.data(), DType::F32, Device::cpu(), {2, 3});
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dx overlaps x in memory");
  a = f.args();
  a.dx = TensorMut::contiguous(big.data(), DType::F32, Device::cpu(), {2, 3});
  a.y = TensorRef::contiguous(big.data() + 5, DType::F32, Device::cpu(), {2});
  f.expect(a, StatusCode::InvalidProblem, "ReduceBackwardPlan: dx overlaps y in memory");
  // keepdim plans want [2,1] for dy and y.
  auto pk = ReduceBackwardPlan::select(kCpu, make_desc(ReduceKind::Max, DType::F32, {2, 3}, {1}, true)).value();
  EXPECT_EQ(pk.output_shape(), (Dims{2, 1}));
  BT_EXPECT_STATUS(pk.can_implement(f.args()), StatusCode::InvalidProblem, "ReduceBackwardPlan: dy shape [2] must be [2,1]");
}

// ---------------------------------------------------------------------------
// ReduceToPlan rules
// ---------------------------------------------------------------------------
TEST(ReduceToValidation, Rules) {
  BT_EXPECT_STATUS(select_to_status(DType::F32, {4, 3, 5}, {2, 5}), StatusCode::InvalidProblem,
                   "ReduceToPlan: target [2,5] is not broadcast-compatible with input [4,3,5] (axis 1: 2 is neither 3 nor 1)");
  BT_EXPECT_STATUS(select_to_status(DType::F32, {4, 3, 5}, {4, 3, 6}), StatusCode::InvalidProblem, "not broadcast-compatible");
  BT_EXPECT_STATUS(select_to_status(DType::F32, {4, 3, 5}, {1, 4, 3, 5}), StatusCode::InvalidProblem,
                   "ReduceToPlan: target [1,4,3,5] has more axes than the input [4,3,5]");
  BT_EXPECT_STATUS(select_to_status(DType::I32, {4, 3}, {3}), StatusCode::Unsupported,
                   "ReduceToPlan: dtype i32 not supported (f32, f64, f16, bf16)");
  BT_EXPECT_STATUS(select_to_status(DType::F32, {4, -3}, {3}), StatusCode::InvalidProblem,
                   "ReduceToPlan: input shape [4,-3] has a negative extent at axis 1");
  BT_EXPECT_STATUS(select_to_status(DType::F32, {4, 3}, {-3}), StatusCode::InvalidProblem,
                   "ReduceToPlan: target shape [-3] has a negative extent at axis 0");
  BT_EXPECT_STATUS(select_to_status(DType::F32, {1, 2, 1, 2, 1, 2, 1, 2}, {1, 2, 1, 2, 1, 2, 1, 2}), StatusCode::Unsupported,
                   "ReduceToPlan: identity reduction of a rank-8 tensor is not supported");
  EXPECT_TRUE(select_to_status(DType::F32, {1, 2, 1, 2, 1, 2, 1, 2}, {2}).is_ok());
  EXPECT_TRUE(select_to_status(DType::F32, {4, 3, 5}, {}).is_ok());
  EXPECT_TRUE(select_to_status(DType::BF16, {4, 3, 5}, {1, 1}).is_ok());

  ReduceToDescriptor d;
  d.dtype = DType::F32;
  d.shape = {4, 3};
  d.target = {3};
  auto p = ReduceToPlan::select(kCpu, d).value();
  EXPECT_EQ(p.descriptor().target, Dims{3});
  std::vector<float> x(12, 1.0f), y(3);
  ReduceToArgs a{TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), {4, 3}),
                 TensorMut::contiguous(y.data(), DType::F32, Device::cpu(), {3})};
  ASSERT_TRUE(p.run(kCpu, Workspace::none(), a).is_ok());
  EXPECT_EQ(y, (std::vector<float>{4, 4, 4}));
  auto b = a;
  b.y.shape = {1, 3};
  b.y.strides = {3, 1};
  BT_EXPECT_STATUS(p.can_implement(b), StatusCode::InvalidProblem, "ReduceToPlan: y shape [1,3] must be [3]");
  b = a;
  b.x.dtype = DType::F64;
  BT_EXPECT_STATUS(p.can_implement(b), StatusCode::InvalidProblem, "ReduceToPlan: x dtype f64 must be f32");
  b = a;
  b.x.capacity = 11;
  Status st = p.can_implement(b);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall) << st.to_string();
  EXPECT_EQ(st.needed(), 12u);
  EXPECT_EQ(st.got(), 11u);
  EXPECT_NE(st.message().find("ReduceToPlan"), std::string::npos) << st.message();
  b = a;
  b.y.strides = {0};
  BT_EXPECT_STATUS(p.run(kCpu, Workspace::none(), b), StatusCode::InvalidProblem, "ReduceToPlan: y strides [0] for shape [3] make elements overlap");
  b = a;
  b.y = TensorMut::contiguous(x.data() + 9, DType::F32, Device::cpu(), {3});
  BT_EXPECT_STATUS(p.run(kCpu, Workspace::none(), b), StatusCode::InvalidProblem, "overlaps x");
  b = a;
  b.y.device = Device::cuda(0);
  BT_EXPECT_STATUS(p.can_implement(b), StatusCode::InvalidProblem, "ReduceToPlan: y is on cuda:0 but the plan runs on cpu");
  b = a;
  b.x.device = Device::cuda(0);
  BT_EXPECT_STATUS(p.can_implement(b), StatusCode::InvalidProblem, "x is on cuda:0 but the plan runs on cpu");
  BT_EXPECT_STATUS(p.run(kCpu, Workspace::none(), b), StatusCode::InvalidProblem, "x is on cuda:0 but the plan runs on cpu");
  BT_EXPECT_STATUS(p.run(Stream::cuda(0), Workspace::none(), a), StatusCode::InvalidProblem, "ReduceToPlan");
  BT_EXPECT_STATUS(p.run(Stream::cuda(0), Workspace::none(), a), StatusCode::InvalidProblem, "stream is on cuda:0");
}

// ---------------------------------------------------------------------------
// SKU and plan accessors
// ---------------------------------------------------------------------------
TEST(ReduceSku, CpuPlansReportTheReference) {
  for (ReduceKind k : bt::kAllKinds) {
    for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64}) {
      if (!bt::is_fp(t) && !bt::int_capable(k)) continue;
      SCOPED_TRACE(bt::kname(k) + " " + bt::tname(t));
      auto p = ReducePlan::select(kCpu, make_desc(k, t, {4, 5}, {1}));
      ASSERT_TRUE(p.is_ok()) << p.status().to_string();
      const KernelSku& s = p->sku();
      EXPECT_EQ(s.backend, Backend::CpuReference);
      EXPECT_EQ(s.arch, 0);
      EXPECT_EQ(s.dtype, t);
      EXPECT_EQ(s.op, std::string("reduce.") + reduce_kind_name(k));
      EXPECT_FALSE(s.variant.empty());
      EXPECT_EQ(s.precision.accumulator, bt::is_fp(t) ? DType::F64 : DType::I64);
      EXPECT_EQ(s.precision.math, bt::is_fp(t) ? DType::F64 : DType::I64);
      EXPECT_TRUE(s.precision.deterministic);
      EXPECT_EQ(p->output_dtype(), bt::expected_out_dtype(k, t));
      EXPECT_NE(s.to_string().find(std::string("reduce.") + reduce_kind_name(k) + " [cpu-reference, " + bt::tname(t)),
                std::string::npos)
          << s.to_string();
    }
  }
  EXPECT_EQ(ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {2}, {})).value().sku().op, "reduce.sum");
  EXPECT_EQ(ReducePlan::select(kCpu, make_desc(ReduceKind::LogSumExp, DType::F32, {2}, {})).value().sku().op, "reduce.logsumexp");
  for (ReduceKind k : bt::kGradKinds) {
    auto p = ReduceBackwardPlan::select(kCpu, make_desc(k, DType::BF16, {4, 5}, {0}));
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ(p->sku().backend, Backend::CpuReference);
    EXPECT_EQ(p->sku().op, std::string("reduce_backward.") + reduce_kind_name(k));
    EXPECT_EQ(p->sku().dtype, DType::BF16);
  }
  ReduceToDescriptor td;
  td.dtype = DType::F16;
  td.shape = {4, 3};
  td.target = {3};
  auto tp = ReduceToPlan::select(kCpu, td).value();
  EXPECT_EQ(tp.sku().op, "reduce_to.sum");
  EXPECT_EQ(tp.sku().backend, Backend::CpuReference);
  EXPECT_EQ(tp.sku().dtype, DType::F16);
}

TEST(ReduceSku, DescriptorIsNormalised) {
  auto p = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {2, 3, 4, 5}, {-1, 1})).value();
  EXPECT_EQ(p.descriptor().axes, (Dims{1, 3}));  // non-negative, sorted
  EXPECT_EQ(p.axis_mask(), 0b1010u);
  EXPECT_EQ(p.output_shape(), (Dims{2, 4}));
  EXPECT_EQ(p.descriptor().shape, (Dims{2, 3, 4, 5}));
  auto all = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {2, 3, 4}, {}, true)).value();
  EXPECT_EQ(all.descriptor().axes, (Dims{0, 1, 2}));
  EXPECT_EQ(all.axis_mask(), 0b111u);
  EXPECT_EQ(all.output_shape(), (Dims{1, 1, 1}));
  auto scalar = ReducePlan::select(kCpu, make_desc(ReduceKind::Sum, DType::F32, {}, {})).value();
  EXPECT_EQ(scalar.output_shape(), Dims{});
  EXPECT_EQ(scalar.axis_mask(), 0u);
  auto bw = ReduceBackwardPlan::select(kCpu, make_desc(ReduceKind::Max, DType::F32, {2, 3, 4}, {2, -3}, true)).value();
  EXPECT_EQ(bw.descriptor().axes, (Dims{0, 2}));
  EXPECT_EQ(bw.output_shape(), (Dims{1, 3, 1}));
}
