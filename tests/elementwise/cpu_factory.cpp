// FactoryPlan (fill / full / arange / linspace) on the CPU: lengths and values
// against expectations computed independently (by hand, with Python's
// fractions module rounding the exact value once, or with long double here),
// PyTorch's quirks (integer arange truncating its step, f16 linspace rounding
// its index), the family's conversions of fill values, strided / negative-
// stride / transposed outputs with their gaps untouched, and every refusal
// with its message.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/tensor_utils.hpp"

namespace {

using namespace baracuda;
using bt::HostBuffer;
using bt::kInf;
using bt::kNaN;

const Stream kCpu = Stream::cpu();

FactoryDescriptor fill(DType t, Dims shape, Scalar v) { return FactoryDescriptor::fill(t, shape, v); }
FactoryDescriptor arange(DType t, Scalar start, Scalar end, Scalar step) {
  return FactoryDescriptor::arange(t, start, end, step);
}
FactoryDescriptor linspace(DType t, Scalar start, Scalar end, int64_t steps) {
  return FactoryDescriptor::linspace(t, start, end, steps);
}

// Runs the plan into a contiguous output; returns the output buffer.
HostBuffer run(const FactoryDescriptor& d) {
  auto plan = FactoryPlan::select(kCpu, d);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan) return {};
  const Dims shape = plan->output_shape();
  const int64_t n = shape_numel(shape);
  HostBuffer out(plan->out_dtype(), n);
  out.poison();
  const Status st = plan->run(kCpu, {}, {TensorMut::contiguous(out.data(), plan->out_dtype(), Device::cpu(), shape, n)});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return out;
}
std::vector<double> values(const FactoryDescriptor& d) { return bt::all_values(run(d)); }
std::vector<int64_t> values_i(const FactoryDescriptor& d) { return bt::all_values_i64(run(d)); }
int64_t length(const FactoryDescriptor& d) {
  auto plan = FactoryPlan::select(kCpu, d);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  return plan ? shape_numel(plan->output_shape()) : -1;
}

// select() refuses d with `code` and a message naming the plan and containing `what`.
void expect_refused(const FactoryDescriptor& d, StatusCode code, const std::string& what) {
  auto plan = FactoryPlan::select(kCpu, d);
  ASSERT_FALSE(plan.is_ok()) << "accepted; expected: " << what;
  EXPECT_EQ(plan.status().code(), code) << plan.status().to_string();
  EXPECT_EQ(plan.status().message().rfind("FactoryPlan: ", 0), 0u) << plan.status().to_string();
  EXPECT_NE(plan.status().message().find(what), std::string::npos) << plan.status().to_string();
}

float f32(double v) { return static_cast<float>(v); }
// start + i * step rounded once to f32 (the exact value fits a long double here).
float once_f32(float start, float step, int64_t i) {
  return static_cast<float>(static_cast<long double>(start) + static_cast<long double>(step) * i);
}

const DType kAll[] = {DType::Bool, DType::I8, DType::U8, DType::I16, DType::I32,
                      DType::I64,  DType::F16, DType::BF16, DType::F32, DType::F64};

// ---- arange ---------------------------------------------------------------------------
TEST(FactoryArange, LengthsLikePyTorch) {
  EXPECT_EQ(length(arange(DType::F32, 0, 1.0, 0.1)), 10);    // 1 / 0.1 == 10.0 in double
  EXPECT_EQ(length(arange(DType::F64, 1, 1.3, 0.1)), 4);     // 0.3000000000000000444 / 0.1 > 3: PyTorch's 4
  EXPECT_EQ(length(arange(DType::F32, 1, 2.5, 0.5)), 3);
  EXPECT_EQ(length(arange(DType::I32, 5, 0, -2)), 3);
  EXPECT_EQ(length(arange(DType::F32, 10, 0, -3)), 4);
  EXPECT_EQ(length(arange(DType::F32, 3, 3, 1)), 0);
  EXPECT_EQ(length(arange(DType::F32, 0, 1, kInf)), 0);      // ceil(1 / inf) == 0 (PyTorch accepts it)
  // i64 output from i64 scalars: exact integers (2^53 + 1 is not a double).
  const long long big = (1LL << 53) + 1, step = 1LL << 53;
  EXPECT_EQ(length(arange(DType::I64, 0, big, step)), 2);
  EXPECT_EQ(values_i(arange(DType::I64, 0, big, step)), (std::vector<int64_t>{0, 1LL << 53}));
  // ... other dtypes, or a floating scalar, take the double formula: ceil(2^53 / 2^53) == 1.
  EXPECT_EQ(length(arange(DType::F64, 0, big, step)), 1);
  EXPECT_EQ(length(arange(DType::I64, 0.0, big, step)), 1);
}

TEST(FactoryArange, Values) {
  const std::vector<double> a = values(arange(DType::F64, 1, 2.5, 0.5));
  EXPECT_EQ(a, (std::vector<double>{1, 1.5, 2}));
  EXPECT_EQ(values_i(arange(DType::I32, 5, 0, -2)), (std::vector<int64_t>{5, 3, 1}));
  EXPECT_EQ(values(arange(DType::F32, 10, 0, -3)), (std::vector<double>{10, 7, 4, 1}));
  // arange(0, 1, 0.1) in f32: float(0.1) * i rounded once.
  const std::vector<double> t = values(arange(DType::F32, 0, 1.0, 0.1));
  ASSERT_EQ(t.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(t[i], once_f32(0.0f, f32(0.1), i)) << i;
  EXPECT_EQ(t[3], 0.30000001192092896);  // Python: float32(0.1) * 3 rounded to f32
}

TEST(FactoryArange, Float32IsOneFmaInF32) {
  // arange(0.1, 8, 0.7) in f32: PyTorch's CUDA kernel computes float(start) +
  // float(step) * i in f32, one fma. Python (fractions, rounded once to f32):
  // element 3 = 2.200000047683716 (two f32 roundings give another value),
  // element 4 = 2.8999998569488525 (computing in double gives another value).
  const std::vector<double> v = values(arange(DType::F32, 0.1, 8.0, 0.7));
  ASSERT_EQ(v.size(), 12u);  // ceil(7.9 / 0.7)
  for (int i = 0; i < 12; ++i) EXPECT_EQ(v[i], once_f32(f32(0.1), f32(0.7), i)) << i;
  EXPECT_EQ(v[3], 2.200000047683716);
  EXPECT_EQ(v[4], 2.8999998569488525);
  EXPECT_NE(v[4], static_cast<double>(f32(0.1 + 4 * 0.7)));
  // f16 / bf16 compute in f32, then round once: 2049 -> 2048, 2051 -> 2052 (ties to even).
  EXPECT_EQ(values(arange(DType::F16, 2049, 2052, 1)), (std::vector<double>{2048, 2050, 2052}));
  EXPECT_EQ(values(arange(DType::BF16, 257, 260, 1)), (std::vector<double>{256, 258, 260}));
}

TEST(FactoryArange, IntegerOutputsTruncateStartAndStep) {
  // PyTorch converts start and step to int64 first: a fractional step becomes 0.
  EXPECT_EQ(values_i(arange(DType::I32, 0, 2, 0.5)), (std::vector<int64_t>{0, 0, 0, 0}));
  EXPECT_EQ(values_i(arange(DType::I16, 0.5, 5, 1)), (std::vector<int64_t>{0, 1, 2, 3, 4}));  // ceil(4.5) = 5
  EXPECT_EQ(values_i(arange(DType::I64, -2.7, 1, 1.9)), (std::vector<int64_t>{-2, -1}));      // ceil(3.7 / 1.9) = 2
  // Values wrap to the output's width (int64 arithmetic, then a narrowing cast).
  EXPECT_EQ(values_i(arange(DType::I8, 120, 140, 5)), (std::vector<int64_t>{120, 125, -126, -121}));
  EXPECT_EQ(values_i(arange(DType::U8, 250, 262, 4)), (std::vector<int64_t>{250, 254, 2}));
}

TEST(FactoryArange, Refusals) {
  expect_refused(arange(DType::F32, 0, 1, 0), StatusCode::InvalidProblem, "arange's step must be nonzero");
  expect_refused(arange(DType::F32, 0, 1, kNaN), StatusCode::InvalidProblem, "arange's step must be nonzero");
  expect_refused(arange(DType::F32, 0, kInf, 1), StatusCode::InvalidProblem, "start and end must be finite");
  expect_refused(arange(DType::F64, kNaN, 1, 1), StatusCode::InvalidProblem, "start and end must be finite");
  expect_refused(arange(DType::F32, 0, -1, 1), StatusCode::InvalidProblem, "wrong side of start");
  expect_refused(arange(DType::I32, 0, 5, -1), StatusCode::InvalidProblem, "wrong side of start");
  expect_refused(arange(DType::F64, 0, 1e300, 1e-300), StatusCode::InvalidProblem, "arange's length");
  expect_refused(arange(DType::I64, static_cast<long long>(INT64_MIN), static_cast<long long>(INT64_MAX), 1),
                 StatusCode::InvalidProblem, "arange's length");
  expect_refused(arange(DType::Bool, 0, 2, 1), StatusCode::Unsupported, "arange is not implemented for bool");
  expect_refused(arange(DType::F32, 0, 1e39, 1e37), StatusCode::InvalidProblem, "overflows its accumulate type f32");
  expect_refused(arange(DType::I32, 0, 1e19, 1e17), StatusCode::InvalidProblem, "overflows its accumulate type i64");
  FactoryDescriptor d = arange(DType::F32, 0, 4, 1);
  d.end.reset();
  expect_refused(d, StatusCode::InvalidProblem, "arange needs descriptor.end");
  d = arange(DType::F32, 0, 4, 1);
  d.shape = Dims{4};
  expect_refused(d, StatusCode::InvalidProblem, "leave descriptor.shape empty");
  d = arange(DType::F32, 0, 4, 1);
  d.value = Scalar(1.0);
  expect_refused(d, StatusCode::InvalidProblem, "arange takes no value");
  d = arange(DType::F32, 0, 4, 1);
  d.steps = 4;
  expect_refused(d, StatusCode::InvalidProblem, "arange takes no steps");
  // start and step default to 0 and 1.
  FactoryDescriptor e;
  e.op = FactoryOp::Arange;
  e.dtype = DType::I64;
  e.end = Scalar(3);
  EXPECT_EQ(values_i(e), (std::vector<int64_t>{0, 1, 2}));
}

// ---- linspace -------------------------------------------------------------------------
TEST(FactoryLinspace, Values) {
  EXPECT_EQ(values(linspace(DType::F32, -1, 1, 5)), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
  EXPECT_EQ(values(linspace(DType::BF16, -1, 1, 5)), (std::vector<double>{-1, -0.5, 0, 0.5, 1}));
  EXPECT_EQ(values(linspace(DType::F16, 0, 1, 5)), (std::vector<double>{0, 0.25, 0.5, 0.75, 1}));
  // Symmetric formula in f64 (Python, fractions rounded once to double): the
  // second half counts back from end, so element 3 of 7 is 0.7 - 3 * step.
  EXPECT_EQ(values(linspace(DType::F64, 0.1, 0.7, 7)),
            (std::vector<double>{0.1, 0.2, 0.3, 0.39999999999999997, 0.5, 0.6, 0.7}));
  EXPECT_EQ(values(linspace(DType::F64, 0, 0.3, 4)), (std::vector<double>{0, 0.09999999999999999, 0.2, 0.3}));
  // Descending, and start == end.
  EXPECT_EQ(values(linspace(DType::F32, 2, -2, 3)), (std::vector<double>{2, 0, -2}));
  EXPECT_EQ(values(linspace(DType::F32, 3, 3, 4)), (std::vector<double>{3, 3, 3, 3}));
}

TEST(FactoryLinspace, StepsZeroAndOne) {
  EXPECT_EQ(length(linspace(DType::F32, 0, 1, 0)), 0);
  EXPECT_EQ(values(linspace(DType::F32, 2.5, 7, 1)), (std::vector<double>{2.5}));
  EXPECT_EQ(values_i(linspace(DType::I32, 2.7, 9, 1)), (std::vector<int64_t>{2}));  // start, truncated
  // steps 0 converts nothing: an end no dtype holds is accepted (as in PyTorch).
  EXPECT_EQ(length(linspace(DType::I32, 0, kNaN, 0)), 0);
  EXPECT_EQ(length(linspace(DType::I32, 0, kNaN, 1)), 1);
}

TEST(FactoryLinspace, IntegersComputeInF32AndTruncate) {
  // step = 10 / 4 = 2.5 in f32: 0, 2.5 -> 2, then from the end: 10 - 5, 10 - 2.5 -> 7, 10.
  EXPECT_EQ(values_i(linspace(DType::I32, 0, 10, 5)), (std::vector<int64_t>{0, 2, 5, 7, 10}));
  EXPECT_EQ(values_i(linspace(DType::I8, -100, 100, 3)), (std::vector<int64_t>{-100, 0, 100}));
  EXPECT_EQ(values_i(linspace(DType::I64, 10, 0, 4)), (std::vector<int64_t>{10, 6, 3, 0}));  // 10 - 3.33 -> 6, 0 + 3.33 -> 3
  // start and end are converted to the dtype first: 2.9 -> 2, an integer -1 into u8 wraps to 255.
  EXPECT_EQ(values_i(linspace(DType::I16, 2.9, 6.9, 5)), (std::vector<int64_t>{2, 3, 4, 5, 6}));
  EXPECT_EQ(values_i(linspace(DType::U8, -1, 0, 2)), (std::vector<int64_t>{255, 0}));
  // f32 cannot hold INT32_MAX: the end rounds to 2^31 and saturates back to INT32_MAX (CUDA's conversion).
  EXPECT_EQ(values_i(linspace(DType::I32, 0, 2147483647LL, 2)), (std::vector<int64_t>{0, 2147483647LL}));
}

TEST(FactoryLinspace, HalfRoundsEveryOperation) {
  // c10::Half arithmetic: step * half(i). With step 3 and i = 2049: half(2049)
  // = 2048, so the value is 6144, where rounding the exact 6147 would give 6148.
  const std::vector<double> v = values(linspace(DType::F16, 0, 15000, 5001));
  ASSERT_EQ(v.size(), 5001u);
  EXPECT_EQ(v[2049], 6144);
  EXPECT_EQ(v[1000], 3000);
  EXPECT_EQ(v[5000], 15000);
  EXPECT_EQ(v[0], 0);
}

TEST(FactoryLinspace, Refusals) {
  expect_refused(linspace(DType::F32, 0, 1, -1), StatusCode::InvalidProblem, "linspace's steps -1 must be >= 0");
  expect_refused(linspace(DType::Bool, 0, 1, 3), StatusCode::Unsupported, "linspace is not implemented for bool");
  expect_refused(linspace(DType::U8, 0, 300, 2), StatusCode::InvalidProblem, "linspace's end 300 does not fit u8");
  expect_refused(linspace(DType::U8, -1.0, 3, 2), StatusCode::InvalidProblem, "linspace's start -1 does not fit u8");
  expect_refused(linspace(DType::I32, 0, kNaN, 2), StatusCode::InvalidProblem, "does not fit i32");
  expect_refused(linspace(DType::I64, 0, 1e19, 2), StatusCode::InvalidProblem, "does not fit i64");
  expect_refused(linspace(DType::F16, 70000, 1, 2), StatusCode::InvalidProblem, "does not fit f16");
  // NaN and inf are values of the floating dtypes.
  EXPECT_TRUE(FactoryPlan::select(kCpu, linspace(DType::F16, 0, kInf, 3)).is_ok());
  FactoryDescriptor d = linspace(DType::F32, 0, 1, 3);
  d.steps.reset();
  expect_refused(d, StatusCode::InvalidProblem, "linspace needs descriptor.start, end and steps");
  d = linspace(DType::F32, 0, 1, 3);
  d.step = Scalar(0.5);
  expect_refused(d, StatusCode::InvalidProblem, "linspace takes no step");
  d = linspace(DType::F32, 0, 1, 3);
  d.shape = Dims{3};
  expect_refused(d, StatusCode::InvalidProblem, "leave descriptor.shape empty");
}

// ---- fill -----------------------------------------------------------------------------
TEST(FactoryFill, EveryDtype) {
  for (DType t : kAll) {
    const HostBuffer b = run(fill(t, {2, 3}, Scalar(3)));
    ASSERT_EQ(b.size(), 6);
    for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(b.get(i), t == DType::Bool ? 1.0 : 3.0) << dtype_name(t);
    const HostBuffer h = run(fill(t, {4}, Scalar(-1.5)));
    const double want = t == DType::Bool ? 1 : t == DType::U8 ? 255 : is_floating_point(t) ? -1.5 : -1;
    for (int64_t i = 0; i < 4; ++i) EXPECT_EQ(h.get(i), want) << dtype_name(t);
  }
  // A 0-dim output and an empty one.
  EXPECT_EQ(values(fill(DType::F32, {}, Scalar(7.0))), (std::vector<double>{7}));
  EXPECT_TRUE(values(fill(DType::F32, {3, 0}, Scalar(7.0))).empty());
}

TEST(FactoryFill, ConversionsOfTheValue) {
  auto one = [](DType t, Scalar v) { return run(fill(t, {1}, v)); };
  // floating -> integer: truncation, NaN 0, saturation at int64 then a wrap to the width.
  EXPECT_EQ(one(DType::U8, 300.7).get_i(0), 44);
  EXPECT_EQ(one(DType::I8, -129.9).get_i(0), 127);
  EXPECT_EQ(one(DType::I32, kNaN).get_i(0), 0);
  EXPECT_EQ(one(DType::I32, 1e20).get_i(0), -1);        // INT64_MAX's low 32 bits
  EXPECT_EQ(one(DType::I16, -kInf).get_i(0), 0);        // INT64_MIN's low 16 bits
  EXPECT_EQ(one(DType::I64, 1e30).get_i(0), INT64_MAX);
  EXPECT_EQ(one(DType::I64, -1e30).get_i(0), INT64_MIN);
  // integer -> integer wraps.
  EXPECT_EQ(one(DType::U8, 256 + 7).get_i(0), 7);
  EXPECT_EQ(one(DType::I16, 40000).get_i(0), 40000 - 65536);
  // -> bool is value != 0 (NaN is true, -0 false).
  EXPECT_EQ(one(DType::Bool, kNaN).get_i(0), 1);
  EXPECT_EQ(one(DType::Bool, -0.0).get_i(0), 0);
  EXPECT_EQ(one(DType::Bool, 0.25).get_i(0), 1);
  EXPECT_EQ(one(DType::Bool, Scalar(false)).get_i(0), 0);
  // -> f16 / bf16 through f32, nearest even; beyond the range: inf.
  EXPECT_EQ(one(DType::F16, 65519.0).get(0), 65504);
  EXPECT_EQ(one(DType::F16, 65520.0).get(0), kInf);
  EXPECT_EQ(one(DType::F16, 1e10).get(0), kInf);
  EXPECT_EQ(one(DType::BF16, 1.00390625).get(0), 1.0);  // 1 + 2^-8: a tie, to even
  EXPECT_TRUE(std::isnan(one(DType::F32, kNaN).get(0)));
  EXPECT_EQ(one(DType::F64, -0.0).raw(), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0x80}));
  // An integer scalar into f32 converts once (not through double).
  const long long odd = (1LL << 60) + (1LL << 36) + 1;  // above the halfway point between two floats
  EXPECT_EQ(one(DType::F32, odd).get(0), static_cast<double>(static_cast<float>(odd)));
  EXPECT_EQ(one(DType::I64, static_cast<long long>(INT64_MIN)).get_i(0), INT64_MIN);
}

TEST(FactoryFill, StridedViewsLeaveTheGapsAlone) {
  // A transposed [3, 4] view and an every-other-element [2, 3] view of larger storage.
  for (const bt::Layout& L : {bt::transposed(Dims{3, 4}), bt::every_other(Dims{2, 3}), bt::padded(Dims{2, 5}, 3)}) {
    for (DType t : {DType::F32, DType::I8, DType::F64, DType::BF16}) {
      auto plan = FactoryPlan::select(kCpu, fill(t, L.shape, Scalar(2.0)));
      ASSERT_TRUE(plan.is_ok()) << plan.status().to_string();
      HostBuffer b(t, L.storage);
      b.poison();
      const TensorMut out(static_cast<char*>(b.data()) + L.offset * dtype_size(t), t, Device::cpu(), L.shape,
                          L.strides, L.storage - L.offset);
      ASSERT_TRUE(plan->run(kCpu, {}, {out}).is_ok()) << L.name;
      for (double v : bt::gather(b, L)) EXPECT_EQ(v, 2.0) << L.name << " " << dtype_name(t);
      EXPECT_EQ(bt::check_gaps(b, L, bt::poison_byte(t)), "") << L.name;
    }
  }
}

TEST(FactoryFactories, StridedOneDimOutputs) {
  // The library's views have strides >= 0 (core/tensor.hpp): a reversed view
  // is refused like in every plan.
  auto plan = FactoryPlan::select(kCpu, arange(DType::I32, 0, 5, 1));
  ASSERT_TRUE(plan.is_ok());
  HostBuffer b(DType::I32, 5);
  const TensorMut rev(static_cast<int32_t*>(b.data()) + 4, DType::I32, Device::cpu(), Dims{5}, Dims{-1}, 1);
  const Status st = plan->run(kCpu, {}, {rev});
  EXPECT_FALSE(st.is_ok());
  EXPECT_EQ(st.message().rfind("FactoryPlan: ", 0), 0u) << st.to_string();
  // linspace into every third element: the others keep their poison.
  auto lin = FactoryPlan::select(kCpu, linspace(DType::F32, 0, 1, 3));
  ASSERT_TRUE(lin.is_ok());
  HostBuffer c(DType::F32, 7);
  c.fill_bytes(0x5a);
  const float poison = [&] { float p; std::memset(&p, 0x5a, 4); return p; }();
  ASSERT_TRUE(lin->run(kCpu, {}, {TensorMut(c.data(), DType::F32, Device::cpu(), Dims{3}, Dims{3}, 7)}).is_ok());
  EXPECT_EQ(bt::all_values(c), (std::vector<double>{0, poison, poison, 0.5, poison, poison, 1}));
}

TEST(FactoryFactories, OutputChecks) {
  auto plan = FactoryPlan::select(kCpu, fill(DType::F32, {4, 3}, Scalar(1.0)));
  ASSERT_TRUE(plan.is_ok());
  HostBuffer b(DType::F32, 12);
  auto refused = [&](const TensorMut& out, StatusCode code, const std::string& what) {
    const Status st = plan->run(kCpu, {}, {out});
    EXPECT_EQ(st.code(), code) << st.to_string();
    EXPECT_EQ(st.message().rfind("FactoryPlan: ", 0), 0u) << st.to_string();
    EXPECT_NE(st.message().find(what), std::string::npos) << st.to_string();
    EXPECT_EQ(plan->can_implement({out}).code(), code);
  };
  refused(TensorMut(b.data(), DType::F32, Device::cpu(), Dims{4, 3}, Dims{0, 1}, 12), StatusCode::InvalidProblem, "out");
  refused(TensorMut(b.data(), DType::F32, Device::cpu(), Dims{4, 3}, Dims{2, 1}, 12), StatusCode::InvalidProblem, "out");
  refused(TensorMut::contiguous(b.data(), DType::F32, Device::cpu(), Dims{3, 4}, 12), StatusCode::InvalidProblem, "out");
  refused(TensorMut::contiguous(b.data(), DType::F64, Device::cpu(), Dims{4, 3}, 12), StatusCode::InvalidProblem, "out");
  EXPECT_TRUE(plan->can_implement({TensorMut::contiguous(b.data(), DType::F32, Device::cpu(), Dims{4, 3}, 12)}).is_ok());
  EXPECT_EQ(plan->workspace_size(), 0u);
  EXPECT_EQ(plan->sku().op, "elementwise.fill");
}

TEST(FactoryFactories, DescriptorRefusals) {
  FactoryDescriptor d = fill(DType::F32, {2}, Scalar(1.0));
  d.value.reset();
  expect_refused(d, StatusCode::InvalidProblem, "fill needs descriptor.value");
  d = fill(DType::F32, {2}, Scalar(1.0));
  d.start = Scalar(0);
  expect_refused(d, StatusCode::InvalidProblem, "fill takes no start");
  d = fill(DType::F32, {2}, Scalar(1.0));
  d.steps = 3;
  expect_refused(d, StatusCode::InvalidProblem, "fill takes no steps");
  expect_refused(fill(DType::F32, {2, -1}, Scalar(1.0)), StatusCode::InvalidProblem, "negative extent");
  expect_refused(fill(DType::F32, {int64_t{1} << 40, int64_t{1} << 30}, Scalar(1.0)), StatusCode::InvalidProblem,
                 "too many elements");
  Dims rank9 = Dims{1};
  rank9.rank = 9;
  expect_refused(fill(DType::F32, rank9, Scalar(1.0)), StatusCode::InvalidProblem, "invalid rank");
  d = fill(DType::F32, {2}, Scalar(1.0));
  d.op = static_cast<FactoryOp>(7);
  expect_refused(d, StatusCode::InvalidProblem, "unknown FactoryOp");
  expect_refused(fill(static_cast<DType>(99), {2}, Scalar(1.0)), StatusCode::Unsupported, "is not supported");
  expect_refused(fill(DType::F8E4M3, {2}, Scalar(1.0)), StatusCode::Unsupported, "is not supported");
  expect_refused(fill(DType::C64, {2}, Scalar(1.0)), StatusCode::Unsupported, "is not supported");
  d = fill(DType::F32, {2}, Scalar(1.0));
  d.value->dtype = DType::F32;
  expect_refused(d, StatusCode::InvalidProblem, "value has dtype f32");
  EXPECT_STREQ(op_name(FactoryOp::Linspace), "linspace");
  EXPECT_STREQ(op_name(static_cast<FactoryOp>(9)), "?");
}

}  // namespace
