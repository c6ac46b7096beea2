// Elementwise family on the CPU: operand resolution (broadcasting, promotion,
// output dtypes), the documented semantics of every op class checked against
// values computed independently (Python's math module, by hand), integer and
// conversion edge cases, the engine (strided / broadcast / in-place views,
// rejected overlaps, zero-size, rank 8) and the CUDA path choice.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "ops/elementwise/problem.hpp"
#include "support/tensor_utils.hpp"

namespace {

using namespace baracuda;
using bt::HostBuffer;
using bt::kInf;
using bt::kNaN;
using Operand = ElementwiseOperand;

const Stream kCpu = Stream::cpu();

// Runs a unary op on a 1-D contiguous f64 (or `dt`) tensor; returns y as doubles.
std::vector<double> unary(UnaryDescriptor d, const std::vector<double>& x, DType dt = DType::F64) {
  const int64_t n = static_cast<int64_t>(x.size());
  d.x = Operand::tensor(dt, {n});
  auto plan = UnaryPlan::select(kCpu, d);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan) return {};
  HostBuffer hx = bt::host_from(dt, x);
  HostBuffer hy(plan->out_dtype(), n);
  hy.poison();
  const Status st = plan->run(kCpu, {}, {TensorRef::contiguous(hx.data(), dt, Device::cpu(), {n}, n),
                                         TensorMut::contiguous(hy.data(), plan->out_dtype(), Device::cpu(), {n}, n)});
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return bt::all_values(hy);
}
std::vector<double> unary(UnaryOp op, const std::vector<double>& x, DType dt = DType::F64) {
  UnaryDescriptor d;
  d.op = op;
  return unary(d, x, dt);
}

// Binary op on two 1-D tensors of one dtype (integers exactly, as int64).
std::vector<int64_t> binary_i(BinaryOp op, DType dt, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  const int64_t n = static_cast<int64_t>(a.size());
  BinaryDescriptor d;
  d.op = op;
  d.a = Operand::tensor(dt, {n});
  d.b = Operand::tensor(dt, {n});
  auto plan = BinaryPlan::select(kCpu, d);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan) return {};
  HostBuffer ha = bt::host_from_i64(dt, a), hb = bt::host_from_i64(dt, b), ho(plan->out_dtype(), n);
  BinaryArgs args;
  args.a = TensorRef::contiguous(ha.data(), dt, Device::cpu(), {n}, n);
  args.b = TensorRef::contiguous(hb.data(), dt, Device::cpu(), {n}, n);
  args.out = TensorMut::contiguous(ho.data(), plan->out_dtype(), Device::cpu(), {n}, n);
  const Status st = plan->run(kCpu, {}, args);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return bt::all_values_i64(ho);
}
std::vector<double> binary_f(BinaryOp op, const std::vector<double>& a, const std::vector<double>& b,
                             DType dt = DType::F64) {
  const int64_t n = static_cast<int64_t>(a.size());
  BinaryDescriptor d;
  d.op = op;
  d.a = Operand::tensor(dt, {n});
  d.b = Operand::tensor(dt, {n});
  auto plan = BinaryPlan::select(kCpu, d);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan) return {};
  HostBuffer ha = bt::host_from(dt, a), hb = bt::host_from(dt, b), ho(plan->out_dtype(), n);
  BinaryArgs args;
  args.a = TensorRef::contiguous(ha.data(), dt, Device::cpu(), {n}, n);
  args.b = TensorRef::contiguous(hb.data(), dt, Device::cpu(), {n}, n);
  args.out = TensorMut::contiguous(ho.data(), plan->out_dtype(), Device::cpu(), {n}, n);
  const Status st = plan->run(kCpu, {}, args);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return bt::all_values(ho);
}

void expect_values(const std::vector<double>& got, const std::vector<double>& want, double rtol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(want[i])) {
      EXPECT_TRUE(std::isnan(got[i])) << what << "[" << i << "] = " << got[i] << ", want NaN";
    } else if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << what << "[" << i << "]";
    } else {
      EXPECT_NEAR(got[i], want[i], rtol * std::max(1.0, std::fabs(want[i]))) << what << "[" << i << "]";
    }
  }
}

// ---- resolution --------------------------------------------------------------------------------
TEST(ElementwiseResolve, BroadcastPromotionAndOutputDtype) {
  struct Case {
    Operand a, b;
    BinaryOp op;
    Dims shape;
    DType out, compute;
  };
  const Case cases[] = {
      // PyTorch: a scalar does not widen a tensor's category.
      {Operand::tensor(DType::BF16, {4, 1}), Operand::scalar(DType::F64), BinaryOp::Mul, {4, 1}, DType::BF16, DType::F32},
      {Operand::tensor(DType::I32, {3}), Operand::scalar(DType::F64), BinaryOp::Mul, {3}, DType::F32, DType::F32},
      {Operand::tensor(DType::I8, {3}), Operand::tensor(DType::I64, {}), BinaryOp::Add, {3}, DType::I8, DType::I64},
      {Operand::tensor(DType::F16, {2, 3}), Operand::tensor(DType::BF16, {3}), BinaryOp::Add, {2, 3}, DType::F32, DType::F32},
      {Operand::tensor(DType::U8, {5, 1, 2}), Operand::tensor(DType::I8, {4, 1}), BinaryOp::Sub, {5, 4, 2}, DType::I16, DType::I64},
      // Division of integers is true division (f32); comparisons give bool.
      {Operand::tensor(DType::I64, {3}), Operand::tensor(DType::I64, {3}), BinaryOp::Div, {3}, DType::F32, DType::F32},
      {Operand::tensor(DType::F64, {3}), Operand::scalar(DType::I64), BinaryOp::Lt, {3}, DType::Bool, DType::F64},
      {Operand::tensor(DType::Bool, {3}), Operand::tensor(DType::Bool, {3}), BinaryOp::Add, {3}, DType::Bool, DType::I64},
  };
  for (const Case& c : cases) {
    BinaryDescriptor d;
    d.op = c.op;
    d.a = c.a;
    d.b = c.b;
    auto p = BinaryPlan::select(kCpu, d);
    ASSERT_TRUE(p.is_ok()) << p.status().to_string();
    EXPECT_EQ(p->output_shape(), c.shape) << op_name(c.op);
    EXPECT_EQ(p->out_dtype(), c.out) << op_name(c.op) << " " << dtype_name(c.a.dtype);
    EXPECT_EQ(p->compute_dtype(), c.compute) << op_name(c.op);
  }
  // Rank 8 broadcasting.
  BinaryDescriptor d;
  d.a = Operand::tensor(DType::F32, {2, 1, 3, 1, 2, 1, 2, 1});
  d.b = Operand::tensor(DType::F32, {1, 2, 1, 3, 1, 2, 1, 2});
  auto p = BinaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok()) << p.status().to_string();
  EXPECT_EQ(p->output_shape(), (Dims{2, 2, 3, 3, 2, 2, 2, 2}));
}

TEST(ElementwiseResolve, RulesNameThePlanAndTheProblem) {
  auto msg = [](auto r) { return r.is_ok() ? std::string("ok") : r.status().message(); };
  BinaryDescriptor d;
  d.a = Operand::tensor(DType::F32, {3, 4});
  d.b = Operand::tensor(DType::F32, {5});
  EXPECT_NE(msg(BinaryPlan::select(kCpu, d)).find("BinaryPlan: shapes [3,4] and [5] do not broadcast"), std::string::npos);
  d.b = Operand::scalar();
  d.a = Operand::scalar();
  EXPECT_NE(msg(BinaryPlan::select(kCpu, d)).find("at least one operand must be a tensor"), std::string::npos);
  d.a = Operand::tensor(DType::I32, {3});
  d.b = Operand::tensor(DType::I32, {3});
  d.op = BinaryOp::SwiGlu;
  auto r = BinaryPlan::select(kCpu, d);
  ASSERT_FALSE(r.is_ok());
  EXPECT_EQ(r.status().code(), StatusCode::Unsupported);
  EXPECT_NE(r.status().message().find("swiglu needs floating-point operands, got i32"), std::string::npos);
  d.op = BinaryOp::BitwiseAnd;
  d.a.dtype = d.b.dtype = DType::F32;
  EXPECT_NE(msg(BinaryPlan::select(kCpu, d)).find("bitwise_and needs integer or bool operands"), std::string::npos);
  d.op = BinaryOp::Add;
  d.out_dtype = DType::I32;  // f32 result into an integer output
  EXPECT_NE(msg(BinaryPlan::select(kCpu, d)).find("out_dtype i32 cannot hold the f32 result of add"), std::string::npos);
  d.out_dtype.reset();
  d.beta = 2.0;  // add takes alpha only
  EXPECT_NE(msg(BinaryPlan::select(kCpu, d)).find("add takes no parameter beta"), std::string::npos);
  d.beta.reset();
  d.a.dtype = d.b.dtype = DType::I32;
  d.alpha = 0.5;
  EXPECT_NE(msg(BinaryPlan::select(kCpu, d)).find("alpha must be an integer"), std::string::npos);
  d.alpha.reset();
  d.a.dtype = DType::C64;
  EXPECT_EQ(BinaryPlan::select(kCpu, d).status().code(), StatusCode::Unsupported);

  UnaryDescriptor u;
  u.op = UnaryOp::Threshold;
  u.x = Operand::tensor(DType::F32, {2});
  EXPECT_NE(msg(UnaryPlan::select(kCpu, u)).find("threshold needs descriptor.alpha"), std::string::npos);
  u.op = UnaryOp::Hardtanh;
  u.alpha = 2.0;
  u.beta = 1.0;
  EXPECT_NE(msg(UnaryPlan::select(kCpu, u)).find("max_val 1 is below min_val 2"), std::string::npos);
  u.op = UnaryOp::Exp;
  u.alpha.reset();
  u.beta.reset();
  u.x = Operand::scalar();
  EXPECT_NE(msg(UnaryPlan::select(kCpu, u)).find("x must be a tensor"), std::string::npos);
  u.x = Operand::tensor(DType::F32, {2});
  u.op = static_cast<UnaryOp>(250);
  EXPECT_NE(msg(UnaryPlan::select(kCpu, u)).find("unknown UnaryOp 250"), std::string::npos);

  TernaryDescriptor t;
  t.op = TernaryOp::Where;
  t.a = Operand::tensor(DType::F32, {2});
  t.b = t.c = Operand::tensor(DType::F32, {2});
  EXPECT_NE(msg(TernaryPlan::select(kCpu, t)).find("where's condition a must be bool"), std::string::npos);
  t.op = TernaryOp::Clamp;
  t.b = t.c = Operand::absent();
  EXPECT_NE(msg(TernaryPlan::select(kCpu, t)).find("clamp needs at least one bound"), std::string::npos);
  t.op = TernaryOp::Lerp;
  t.b = Operand::absent();
  t.c = Operand::tensor(DType::F32, {2});
  EXPECT_NE(msg(TernaryPlan::select(kCpu, t)).find("only clamp's bounds"), std::string::npos);
}

// ---- semantics against independent values -------------------------------------------------------
TEST(ElementwiseSemantics, UnaryMathMatchesPythonsMath) {
  const std::vector<double> x = {-1.5, 0.5, 2.0};
  expect_values(unary(UnaryOp::GeluErf, x), {-0.10021080190328713, 0.34573123063700656, 1.9544997361036416}, 1e-14, "gelu");
  expect_values(unary(UnaryOp::GeluTanh, {-1.5, 0.5}), {-0.10042842301976707, 0.34571400982514394}, 1e-14, "gelu_tanh");
  expect_values(unary(UnaryOp::Silu, x), {-0.2736382857095345, 0.3112296656009273, 1.7615941559557646}, 1e-14, "silu");
  expect_values(unary(UnaryOp::Mish, {-1.5, 0.5}), {-0.29809974216680674, 0.3752452113048951}, 1e-14, "mish");
  expect_values(unary(UnaryOp::Softplus, {-1.5, 0.5, 30.0}), {0.2014132779827524, 0.9740769841801067, 30.0}, 1e-14, "softplus");
  expect_values(unary(UnaryOp::Lgamma, {-1.5, 0.5, 2.0}), {0.8600470153764812, 0.5723649429247004, 0.0}, 1e-14, "lgamma");
  expect_values(unary(UnaryOp::Erf, x), {-0.9661051464753108, 0.5204998778130465, 0.9953222650189527}, 1e-15, "erf");
  expect_values(unary(UnaryOp::Erfc, {-1.5, 0.5}), {1.9661051464753108, 0.4795001221869535}, 1e-15, "erfc");
  expect_values(unary(UnaryOp::Expm1, {-1.5, 0.5}), {-0.7768698398515702, 0.6487212707001282}, 1e-15, "expm1");
  expect_values(unary(UnaryOp::LogSigmoid, {-1.5, 0.5}), {-1.7014132779827524, -0.4740769841801067}, 1e-14, "logsigmoid");
  expect_values(unary(UnaryOp::Selu, {-1.5, 2.0}), {-1.3658143533672527, 1.0507009873554804934 * 2.0}, 1e-14, "selu");
  expect_values(unary(UnaryOp::Logit, {0.25}), {-1.0986122886681098}, 1e-14, "logit");
  // digamma(1) = -Euler-Mascheroni, digamma(0.5) = -gamma - 2 ln 2; poles and zeros.
  expect_values(unary(UnaryOp::Digamma, {1.0, 0.5, -2.0, 0.0, -0.0, 10.0}),
                {-0.5772156649015329, -1.9635100260214235, kNaN, -kInf, kInf, 2.251752589066721}, 1e-13, "digamma");
  expect_values(unary(UnaryOp::I0, {0.0, 1.0, -1.0}), {1.0, 1.2660658777520082, 1.2660658777520082}, 1e-14, "i0");
  // Past the series (exact rational sums computed with Python's fractions) and past overflow.
  const auto i0 = unary(UnaryOp::I0, {31.0, -40.0, 100.0, 800.0, 1e30});
  const double i0_want[] = {2089962966491.9038, 1.48947747934199e+16, 1.0737517071310738e+42};
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(i0[i] / i0_want[i], 1.0, 1e-14) << "i0 #" << i;
  EXPECT_EQ(i0[3], kInf);
  EXPECT_EQ(i0[4], kInf);
  // erfinv: erf(erfinv(y)) == y, and the endpoints.
  const auto e = unary(UnaryOp::Erfinv, {-0.999, -0.3, 0.0, 0.7, 0.9999999, 1.0, -1.0, 1.5});
  const double ys[] = {-0.999, -0.3, 0.0, 0.7, 0.9999999};
  for (int i = 0; i < 5; ++i) EXPECT_NEAR(std::erf(e[i]), ys[i], 1e-15) << "erfinv(" << ys[i] << ")";
  EXPECT_EQ(e[5], kInf);
  EXPECT_EQ(e[6], -kInf);
  EXPECT_TRUE(std::isnan(e[7]));
  // Activations' kinks and defaults (PyTorch's values).
  expect_values(unary(UnaryOp::Relu, {-1.0, 0.0, 2.0, kNaN}), {0.0, 0.0, 2.0, kNaN}, 0, "relu");
  expect_values(unary(UnaryOp::Relu6, {-1.0, 7.0, 3.0}), {0.0, 6.0, 3.0}, 0, "relu6");
  expect_values(unary(UnaryOp::LeakyRelu, {-2.0, 3.0}), {-0.02, 3.0}, 1e-15, "leaky_relu");
  expect_values(unary(UnaryOp::Hardsigmoid, {-3.0, 0.0, 1.5, 3.0}), {0.0, 0.5, 0.75, 1.0}, 1e-15, "hardsigmoid");
  expect_values(unary(UnaryOp::Hardswish, {-3.0, 1.0, 3.5}), {0.0, 4.0 / 6.0, 3.5}, 1e-15, "hardswish");
  expect_values(unary(UnaryOp::Hardshrink, {-0.5, 0.6, -0.7}), {0.0, 0.6, -0.7}, 0, "hardshrink");
  expect_values(unary(UnaryOp::Softshrink, {-0.5, 0.75, -0.75}), {0.0, 0.25, -0.25}, 1e-15, "softshrink");
  expect_values(unary(UnaryOp::Softsign, {-3.0, 1.0}), {-0.75, 0.5}, 1e-15, "softsign");
  UnaryDescriptor th;
  th.op = UnaryOp::Threshold;
  th.alpha = 1.0;
  th.beta = -5.0;
  expect_values(unary(th, {0.5, 1.0, 1.5}), {-5.0, -5.0, 1.5}, 0, "threshold");
  UnaryDescriptor celu;
  celu.op = UnaryOp::Celu;
  celu.alpha = 0.5;
  expect_values(unary(celu, {-2.0, 1.0}), {-0.4908421805556329, 1.0}, 1e-14, "celu");
}

// Regression (contract fuzz, tests/contract/FINDINGS.md EW1): the CPU
// reference's i0 let std::cyl_bessel_i's std::runtime_error out of run() for
// |x| beyond a few million (and +-inf). i0 overflows double near 714: every
// larger argument is +inf, NaN stays NaN, and run() returns Ok.
TEST(ElementwiseSemantics, I0OfHugeAndInfiniteArgumentsIsInfinite) {
  const auto y = unary(UnaryOp::I0, {713.0, -1000.5, 1e7, -1e300, kInf, -kInf, kNaN});
  ASSERT_EQ(y.size(), 7u);
  EXPECT_TRUE(std::isfinite(y[0]) && y[0] > 1e307) << y[0];  // e^713 / sqrt(2 pi 713) ~ 6.7e307
  for (int i = 1; i < 6; ++i) EXPECT_EQ(y[i], kInf) << "element " << i;
  EXPECT_TRUE(std::isnan(y[6]));
  // Through f32 too (huge f32 values, the integer-to-float route).
  EXPECT_EQ(unary(UnaryOp::I0, {3e38}, DType::F32)[0], kInf);
}

// Regression (contract fuzz, tests/contract/FINDINGS.md EW2): isclose on
// integers converted its rtol to int64 although it only reads the double:
// rtol 1e30 or inf was a float-to-integer overflow (undefined behaviour,
// reported by UBSan's float-cast-overflow). Any rtol >= 0 is valid.
TEST(ElementwiseSemantics, IntegerIsCloseTakesAnyRtol) {
  auto isclose = [](double rtol, const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
    const int64_t n = static_cast<int64_t>(a.size());
    BinaryDescriptor d;
    d.op = BinaryOp::IsClose;
    d.a = Operand::tensor(DType::I32, {n});
    d.b = Operand::tensor(DType::I32, {n});
    d.alpha = rtol;
    d.beta = 0.0;
    auto plan = BinaryPlan::select(kCpu, d);
    EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
    if (!plan) return std::vector<int64_t>{};
    HostBuffer ha = bt::host_from_i64(DType::I32, a), hb = bt::host_from_i64(DType::I32, b), ho(DType::Bool, n);
    BinaryArgs args;
    args.a = TensorRef::contiguous(ha.data(), DType::I32, Device::cpu(), {n}, n);
    args.b = TensorRef::contiguous(hb.data(), DType::I32, Device::cpu(), {n}, n);
    args.out = TensorMut::contiguous(ho.data(), DType::Bool, Device::cpu(), {n}, n);
    const Status st = plan->run(kCpu, {}, args);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
    return bt::all_values_i64(ho);
  };
  // |a - b| <= atol + rtol * |b|
  EXPECT_EQ(isclose(0.1, {10, 10, -10}, {11, 12, -11}), (std::vector<int64_t>{1, 0, 1}));
  for (const double rtol : {1e30, kInf}) EXPECT_EQ(isclose(rtol, {1, -7, 5}, {2, 3, 5}), (std::vector<int64_t>{1, 1, 1})) << rtol;
}

TEST(ElementwiseSemantics, RoundingSignAndSpecialValues) {
  // round: half to even, with decimals.
  expect_values(unary(UnaryOp::Round, {0.5, 1.5, 2.5, -0.5, -2.5}), {0.0, 2.0, 2.0, -0.0, -2.0}, 0, "round");
  UnaryDescriptor r;
  r.op = UnaryOp::Round;
  r.alpha = 2;
  expect_values(unary(r, {1.234, -5.678}), {1.23, -5.68}, 1e-15, "round(decimals=2)");
  r.alpha = -1;
  expect_values(unary(r, {1234.0, 15.0, 25.0}), {1230.0, 20.0, 20.0}, 0, "round(decimals=-1)");
  expect_values(unary(UnaryOp::Frac, {2.75, -2.75}), {0.75, -0.75}, 0, "frac");
  expect_values(unary(UnaryOp::Sign, {-3.0, 0.0, 2.0, kNaN}), {-1.0, 0.0, 1.0, kNaN}, 0, "sign");
  expect_values(unary(UnaryOp::IsNan, {kNaN, 1.0, kInf}), {1, 0, 0}, 0, "isnan");
  expect_values(unary(UnaryOp::IsInf, {kNaN, -kInf, kInf, 1.0}), {0, 1, 1, 0}, 0, "isinf");
  expect_values(unary(UnaryOp::IsFinite, {kNaN, -kInf, 1.0}), {0, 0, 1}, 0, "isfinite");
  expect_values(unary(UnaryOp::IsNegInf, {-kInf, kInf}), {1, 0}, 0, "isneginf");
  expect_values(unary(UnaryOp::SignBit, {-0.0, 0.0, -1.0}), {1, 0, 1}, 0, "signbit");
  expect_values(unary(UnaryOp::LogicalNot, {0.0, kNaN, -0.0}), {1, 0, 1}, 0, "logical_not");
  // nan_to_num: defaults are the output dtype's extremes (bf16 keeps its max, not inf).
  expect_values(unary(UnaryOp::NanToNum, {kNaN, kInf, -kInf, 2.0}, DType::BF16),
                {0.0, 3.3895313892515355e38, -3.3895313892515355e38, 2.0}, 0, "nan_to_num bf16");
  // maximum propagates NaN, fmax ignores it.
  expect_values(binary_f(BinaryOp::Maximum, {kNaN, 1.0}, {1.0, kNaN}), {kNaN, kNaN}, 0, "maximum");
  expect_values(binary_f(BinaryOp::Fmax, {kNaN, 1.0}, {1.0, kNaN}), {1.0, 1.0}, 0, "fmax");
  // Python division and modulo for floats.
  expect_values(binary_f(BinaryOp::DivFloor, {7.0, -7.0, 7.0, 1.0}, {2.0, 2.0, -2.0, 0.0}), {3.0, -4.0, -4.0, kInf}, 0, "div_floor");
  expect_values(binary_f(BinaryOp::Remainder, {7.0, -7.0, 7.0}, {2.0, 2.0, -2.0}), {1.0, 1.0, -1.0}, 0, "remainder");
  expect_values(binary_f(BinaryOp::Fmod, {7.0, -7.0}, {2.0, 2.0}), {1.0, -1.0}, 0, "fmod");
  expect_values(binary_f(BinaryOp::DivTrunc, {7.0, -7.0}, {2.0, 2.0}), {3.0, -3.0}, 0, "div_trunc");
  expect_values(binary_f(BinaryOp::Atan2, {1.0}, {-2.0}), {2.677945044588987}, 1e-15, "atan2");
  expect_values(binary_f(BinaryOp::Hypot, {3.0}, {4.0}), {5.0}, 0, "hypot");
  expect_values(binary_f(BinaryOp::LogAddExp, {1.0, -kInf, kInf}, {2.0, -kInf, kInf}), {2.3132616875182226, -kInf, kInf}, 1e-15, "logaddexp");
  expect_values(binary_f(BinaryOp::LogAddExp2, {1.0}, {3.0}), {3.321928094887362}, 1e-15, "logaddexp2");
  expect_values(binary_f(BinaryOp::Xlogy, {0.0, 0.0, 2.0}, {0.0, kNaN, 3.0}), {0.0, kNaN, 2.1972245773362196}, 1e-15, "xlogy");
  expect_values(binary_f(BinaryOp::Xlog1py, {2.0}, {3.0}), {2.772588722239781}, 1e-15, "xlog1py");
  expect_values(binary_f(BinaryOp::Ldexp, {1.5}, {3.0}), {12.0}, 0, "ldexp");
  expect_values(binary_f(BinaryOp::Copysign, {2.0, 2.0}, {-0.0, 1.0}), {-2.0, 2.0}, 0, "copysign");
  expect_values(binary_f(BinaryOp::Glu, {1.5}, {-0.5}), {0.566311003197218}, 1e-15, "glu");
  expect_values(binary_f(BinaryOp::SwiGlu, {1.5}, {2.0}), {2.452723428580931}, 1e-14, "swiglu");
  expect_values(binary_f(BinaryOp::ReGlu, {-1.0, 2.0}, {3.0, 3.0}), {0.0, 6.0}, 0, "reglu");
  expect_values(binary_f(BinaryOp::IsClose, {1.0, kNaN, kInf, 1.0}, {1.0 + 1e-6, kNaN, kInf, 1.1}), {1, 0, 1, 0}, 0, "isclose");
  expect_values(binary_f(BinaryOp::Ne, {kNaN, 1.0}, {kNaN, 1.0}), {1, 0}, 0, "ne");
  const double nx = std::nextafter(1.0, 2.0);
  expect_values(binary_f(BinaryOp::NextAfter, {1.0}, {2.0}), {nx}, 0, "nextafter");
  // f32: the neighbour in float (the reference computes in double).
  expect_values(binary_f(BinaryOp::NextAfter, {1.0, -kInf}, {2.0, 0.0}, DType::F32),
                {static_cast<double>(std::nextafter(1.0f, 2.0f)), -3.4028234663852886e38}, 0, "nextafter f32");
}

TEST(ElementwiseSemantics, IntegerEdgeCasesAreDefined) {
  const int64_t mn = std::numeric_limits<int64_t>::min();
  // Division by zero is 0; INT64_MIN / -1 wraps; Python floor semantics.
  EXPECT_EQ(binary_i(BinaryOp::DivFloor, DType::I64, {7, -7, 7, 5, mn}, {2, 2, 0, -1, -1}),
            (std::vector<int64_t>{3, -4, 0, -5, mn}));
  EXPECT_EQ(binary_i(BinaryOp::DivTrunc, DType::I64, {-7, 7, mn}, {2, 0, -1}), (std::vector<int64_t>{-3, 0, mn}));
  EXPECT_EQ(binary_i(BinaryOp::Remainder, DType::I64, {-7, 7, 7, mn}, {2, -2, 0, -1}), (std::vector<int64_t>{1, -1, 0, 0}));
  EXPECT_EQ(binary_i(BinaryOp::Fmod, DType::I32, {-7, 7}, {2, 0}), (std::vector<int64_t>{-1, 0}));
  // i32: INT32_MIN / -1 wraps to INT32_MIN; adds wrap at 32 bits.
  EXPECT_EQ(binary_i(BinaryOp::DivTrunc, DType::I32, {INT32_MIN}, {-1}), (std::vector<int64_t>{INT32_MIN}));
  EXPECT_EQ(binary_i(BinaryOp::Add, DType::I32, {INT32_MAX}, {1}), (std::vector<int64_t>{INT32_MIN}));
  EXPECT_EQ(binary_i(BinaryOp::Add, DType::U8, {250}, {10}), (std::vector<int64_t>{4}));
  // pow: negative exponents, overflow wraps.
  EXPECT_EQ(binary_i(BinaryOp::Pow, DType::I64, {2, 1, -1, -1, 3, 2}, {10, -3, -3, -2, -1, 64}),
            (std::vector<int64_t>{1024, 1, -1, 1, 0, 0}));
  // Shifts: amounts >= width (or negative) give 0 (left) or the sign (right).
  EXPECT_EQ(binary_i(BinaryOp::ShiftLeft, DType::I8, {1, 1, 1, 3}, {7, 8, -1, 2}), (std::vector<int64_t>{-128, 0, 0, 12}));
  EXPECT_EQ(binary_i(BinaryOp::ShiftRight, DType::I16, {-8, -8, 8, 8}, {1, 16, 16, 2}), (std::vector<int64_t>{-4, -1, 0, 2}));
  EXPECT_EQ(binary_i(BinaryOp::ShiftRight, DType::U8, {200}, {3}), (std::vector<int64_t>{25}));
  EXPECT_EQ(binary_i(BinaryOp::BitwiseXor, DType::Bool, {1, 1, 0}, {1, 0, 0}), (std::vector<int64_t>{0, 1, 0}));
  // abs / neg of the most negative value wrap to itself.
  UnaryDescriptor d;
  d.op = UnaryOp::Abs;
  d.x = Operand::tensor(DType::I8, {2});
  auto p = UnaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  HostBuffer hx = bt::host_from_i64(DType::I8, {-128, -5}), hy(DType::I8, 2);
  ASSERT_TRUE(p->run(kCpu, {}, {TensorRef::contiguous(hx.data(), DType::I8, Device::cpu(), {2}, 2),
                                TensorMut::contiguous(hy.data(), DType::I8, Device::cpu(), {2}, 2)}).is_ok());
  EXPECT_EQ(bt::all_values_i64(hy), (std::vector<int64_t>{-128, 5}));
  // bitwise_not of bool is logical not.
  d.op = UnaryOp::BitwiseNot;
  d.x = Operand::tensor(DType::Bool, {2});
  p = UnaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  HostBuffer bx = bt::host_from_i64(DType::Bool, {1, 0}), by(DType::Bool, 2);
  ASSERT_TRUE(p->run(kCpu, {}, {TensorRef::contiguous(bx.data(), DType::Bool, Device::cpu(), {2}, 2),
                                TensorMut::contiguous(by.data(), DType::Bool, Device::cpu(), {2}, 2)}).is_ok());
  EXPECT_EQ(bt::all_values_i64(by), (std::vector<int64_t>{0, 1}));
}

TEST(ElementwiseSemantics, CastsFollowTheDocumentedConversions) {
  auto cast = [](DType from, DType to, const std::vector<double>& x) {
    UnaryDescriptor d;
    d.op = UnaryOp::Copy;
    d.out_dtype = to;
    const int64_t n = static_cast<int64_t>(x.size());
    d.x = Operand::tensor(from, {n});
    auto p = UnaryPlan::select(kCpu, d);
    EXPECT_TRUE(p.is_ok()) << p.status().to_string();
    HostBuffer hx = bt::host_from(from, x), hy(to, n);
    EXPECT_TRUE(p->run(kCpu, {}, {TensorRef::contiguous(hx.data(), from, Device::cpu(), {n}, n),
                                  TensorMut::contiguous(hy.data(), to, Device::cpu(), {n}, n)}).is_ok());
    return bt::all_values_i64(hy);
  };
  // float -> int: truncation, NaN -> 0, saturation at int64, then wrap.
  EXPECT_EQ(cast(DType::F64, DType::I32, {2.9, -2.9, kNaN, 1e30, -1e30}),
            (std::vector<int64_t>{2, -2, 0, -1, 0}));  // 1e30 -> INT64_MAX -> low 32 bits -1; -1e30 -> INT64_MIN -> 0
  EXPECT_EQ(cast(DType::F32, DType::U8, {-1.0, 256.0, 300.7}), (std::vector<int64_t>{255, 0, 44}));
  EXPECT_EQ(cast(DType::F32, DType::I64, {1e30, -kInf, kInf}),
            (std::vector<int64_t>{INT64_MAX, INT64_MIN, INT64_MAX}));
  // -> bool is != 0 (NaN is true).
  EXPECT_EQ(cast(DType::F32, DType::Bool, {0.0, -0.0, kNaN, 0.5}), (std::vector<int64_t>{0, 0, 1, 1}));
  // int -> int wraps.
  EXPECT_EQ(cast(DType::I32, DType::I8, {127, 128, -129, 300}), (std::vector<int64_t>{127, -128, 127, 44}));
  // f32 -> bf16 rounds to nearest even; i64 -> f32 rounds once.
  UnaryDescriptor d;
  d.op = UnaryOp::Copy;
  d.x = Operand::tensor(DType::I64, {1});
  d.out_dtype = DType::F32;
  auto p = UnaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  const int64_t big = (int64_t{1} << 53) + 1;  // not a double; the nearest f32 is 2^53
  HostBuffer hx = bt::host_from_i64(DType::I64, {big}), hy(DType::F32, 1);
  ASSERT_TRUE(p->run(kCpu, {}, {TensorRef::contiguous(hx.data(), DType::I64, Device::cpu(), {1}, 1),
                                TensorMut::contiguous(hy.data(), DType::F32, Device::cpu(), {1}, 1)}).is_ok());
  EXPECT_EQ(hy.get(0), 9007199254740992.0);
}

// ---- the engine ------------------------------------------------------------------------------
// The result of `a op b` on arbitrary layouts equals the one on contiguous copies.
TEST(ElementwiseEngine, StridedBroadcastAndPermutedViewsAgreeWithContiguous) {
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  const Dims out{3, 5, 4};
  struct Views {
    bt::Layout a, b, o;
  };
  const Views cases[] = {
      {bt::contiguous(out), bt::contiguous(out), bt::contiguous(out)},
      {bt::transposed(out), bt::every_other(out), bt::padded(out)},
      {bt::permuted(out, {2, 0, 1}), bt::contiguous({5, 1}), bt::transposed(out)},
      {bt::contiguous({3, 1, 1}), bt::contiguous({5, 4}), bt::permuted(out, {1, 2, 0})},
      {bt::contiguous({3, 5, 1}), bt::contiguous({4}), bt::every_other(out)},
  };
  for (DType dt : {DType::F32, DType::BF16, DType::I32}) {
    for (const Views& v : cases) {
      BinaryDescriptor d;
      d.op = BinaryOp::Sub;
      d.alpha = 2;
      d.a = Operand::tensor(dt, v.a.shape);
      d.b = Operand::tensor(dt, v.b.shape);
      auto p = BinaryPlan::select(kCpu, d);
      ASSERT_TRUE(p.is_ok()) << p.status().to_string();
      HostBuffer ha(dt, v.a.storage), hb(dt, v.b.storage), ho(dt, v.o.storage);
      bt::fill_random(ha, rng, -8, 8);
      bt::fill_random(hb, rng, -8, 8);
      ho.poison();
      BinaryArgs args;
      args.a = bt::view(ha, v.a);
      args.b = bt::view(hb, v.b);
      args.out = bt::view_mut(ho, v.o);
      const Status st = p->run(kCpu, {}, args);
      ASSERT_TRUE(st.is_ok()) << st.to_string() << " " << bt::describe(v.a) << " " << bt::describe(v.o);
      const auto av = bt::gather(ha, v.a), bv = bt::gather(hb, v.b), ov = bt::gather(ho, v.o);
      for (int64_t i = 0; i < bt::numel(out); ++i) {
        const Dims idx = bt::unravel(i, out);
        auto at = [&](const std::vector<double>& vals, const Dims& shape) {
          int64_t lin = 0;
          const int lead = out.rank - shape.rank;
          for (int k = 0; k < shape.rank; ++k) lin = lin * shape[k] + (shape[k] == 1 ? 0 : idx[lead + k]);
          return vals[static_cast<size_t>(lin)];
        };
        const double want = bt::round_to(dt, at(av, v.a.shape) - 2 * at(bv, v.b.shape));
        ASSERT_EQ(ov[static_cast<size_t>(i)], want) << dtype_name(dt) << " element " << i << " " << bt::describe(v.o);
      }
      EXPECT_EQ(bt::check_gaps(ho, v.o, bt::poison_byte(dt)), "");
    }
  }
}

TEST(ElementwiseEngine, InPlaceScalarsAndZeroDimTensors) {
  // a = a * 3 + ... in place; a scalar b; a 0-dim tensor c broadcasts.
  BinaryDescriptor d;
  d.op = BinaryOp::Mul;
  d.a = Operand::tensor(DType::F32, {4});
  d.b = Operand::scalar();
  auto p = BinaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  HostBuffer ha = bt::host_from(DType::F32, {1, 2, 3, 4});
  BinaryArgs args;
  args.a = TensorRef::contiguous(ha.data(), DType::F32, Device::cpu(), {4}, 4);
  args.b_value = Scalar(2.5);
  args.out = TensorMut::contiguous(ha.data(), DType::F32, Device::cpu(), {4}, 4);
  ASSERT_TRUE(p->run(kCpu, {}, args).is_ok());
  EXPECT_EQ(bt::all_values(ha), (std::vector<double>{2.5, 5, 7.5, 10}));
  // The scalar's value is required, and a tensor for it is refused.
  args.b_value.reset();
  EXPECT_NE(p->run(kCpu, {}, args).message().find("b_value is missing (descriptor.b is a scalar)"), std::string::npos);
  args.b_value = Scalar(2.5);
  args.b = args.a;
  EXPECT_NE(p->run(kCpu, {}, args).message().find("b is given but descriptor.b is a scalar"), std::string::npos);
  // An integer scalar stays an integer for an integer tensor; a float value for it is refused.
  d.a = Operand::tensor(DType::I32, {4});
  d.b = Operand::scalar(DType::I64);
  p = BinaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->out_dtype(), DType::I32);
  HostBuffer hi = bt::host_from_i64(DType::I32, {1, 2, 3, 4}), ho(DType::I32, 4);
  BinaryArgs ia;
  ia.a = TensorRef::contiguous(hi.data(), DType::I32, Device::cpu(), {4}, 4);
  ia.b_value = Scalar(1.5);
  ia.out = TensorMut::contiguous(ho.data(), DType::I32, Device::cpu(), {4}, 4);
  EXPECT_NE(p->run(kCpu, {}, ia).message().find("b_value is f64 but descriptor.b is a i64 scalar"), std::string::npos);
  ia.b_value = Scalar(-3);
  ASSERT_TRUE(p->run(kCpu, {}, ia).is_ok());
  EXPECT_EQ(bt::all_values_i64(ho), (std::vector<int64_t>{-3, -6, -9, -12}));
  // where(cond, a 0-dim tensor, a scalar).
  TernaryDescriptor t;
  t.op = TernaryOp::Where;
  t.a = Operand::tensor(DType::Bool, {3});
  t.b = Operand::tensor(DType::F64, {});
  t.c = Operand::scalar();
  auto tp = TernaryPlan::select(kCpu, t);
  ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
  EXPECT_EQ(tp->out_dtype(), DType::F64);
  HostBuffer hc = bt::host_from_i64(DType::Bool, {1, 0, 1}), hb0 = bt::host_from(DType::F64, {7.0}), hw(DType::F64, 3);
  TernaryArgs ta;
  ta.a = TensorRef::contiguous(hc.data(), DType::Bool, Device::cpu(), {3}, 3);
  ta.b = TensorRef(hb0.data(), DType::F64, Device::cpu(), {}, {}, 1);
  ta.c_value = Scalar(-1.0);
  ta.out = TensorMut::contiguous(hw.data(), DType::F64, Device::cpu(), {3}, 3);
  ASSERT_TRUE(tp->run(kCpu, {}, ta).is_ok());
  EXPECT_EQ(bt::all_values(hw), (std::vector<double>{7, -1, 7}));
  // clamp with only a max bound.
  t.op = TernaryOp::Clamp;
  t.a = Operand::tensor(DType::F32, {3});
  t.b = Operand::absent();
  t.c = Operand::scalar();
  tp = TernaryPlan::select(kCpu, t);
  ASSERT_TRUE(tp.is_ok()) << tp.status().to_string();
  HostBuffer hx = bt::host_from(DType::F32, {-5, 0.5, 9}), hy(DType::F32, 3);
  TernaryArgs ca;
  ca.a = TensorRef::contiguous(hx.data(), DType::F32, Device::cpu(), {3}, 3);
  ca.c_value = Scalar(1.0);
  ca.out = TensorMut::contiguous(hy.data(), DType::F32, Device::cpu(), {3}, 3);
  ASSERT_TRUE(tp->run(kCpu, {}, ca).is_ok());
  EXPECT_EQ(bt::all_values(hy), (std::vector<double>{-5, 0.5, 1}));
  ca.b_value = Scalar(0.0);
  EXPECT_NE(tp->run(kCpu, {}, ca).message().find("b_value is given but descriptor.b is absent"), std::string::npos);
}

TEST(ElementwiseEngine, OverlapsAndBroadcastOutputsAreRejectedZeroSizeIsFine) {
  BinaryDescriptor d;
  d.a = Operand::tensor(DType::F32, {4});
  d.b = Operand::tensor(DType::F32, {4});
  auto p = BinaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  std::vector<float> buf(8, 1.0f);
  BinaryArgs args;
  args.a = TensorRef::contiguous(buf.data(), Device::cpu(), {4}, 8);
  args.b = TensorRef::contiguous(buf.data() + 4, Device::cpu(), {4}, 4);
  // Shifted by one element: overlaps a without being a.
  args.out = TensorMut::contiguous(buf.data() + 1, Device::cpu(), {4}, 7);
  const Status st = p->run(kCpu, {}, args);
  EXPECT_EQ(st.code(), StatusCode::InvalidProblem);
  EXPECT_NE(st.message().find("BinaryPlan"), std::string::npos) << st.message();
  // An output that broadcasts writes one element twice.
  args.out = TensorMut(buf.data(), DType::F32, Device::cpu(), {4}, {0}, 8);
  EXPECT_EQ(p->run(kCpu, {}, args).code(), StatusCode::InvalidProblem);
  // Zero-size: no element touched, null data allowed.
  d.a = Operand::tensor(DType::F32, {0, 3});
  d.b = Operand::tensor(DType::F32, {3});
  p = BinaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->output_shape(), (Dims{0, 3}));
  BinaryArgs z;
  z.a = TensorRef(nullptr, DType::F32, Device::cpu(), {0, 3}, {3, 1}, 0);
  z.b = TensorRef::contiguous(buf.data(), Device::cpu(), {3}, 8);
  z.out = TensorMut(nullptr, DType::F32, Device::cpu(), {0, 3}, {3, 1}, 0);
  EXPECT_TRUE(p->run(kCpu, {}, z).is_ok());
}

// The CUDA path each layout takes (decided on the host; the kernels run in
// the CUDA suite).
TEST(ElementwiseEngine, PathChoiceFollowsLayoutAlignmentAndSize) {
  using namespace baracuda::elementwise;
  auto path = [](DType dt, const Dims& a_shape, const Dims& a_strides, const Dims& out_shape, uintptr_t a_addr = 0x1000) {
    Problem p;
    p.arity = 2;
    p.op = static_cast<uint8_t>(BinaryOp::Add);
    p.kind[0] = p.kind[1] = ElementwiseOperand::Kind::Tensor;
    p.in_dtype[0] = p.in_dtype[1] = p.common = p.out = dt;
    p.in_shape[0] = a_shape;
    p.in_shape[1] = out_shape;
    p.out_shape = out_shape;
    Call c;
    const Dims bs = contiguous_strides(out_shape), os = contiguous_strides(out_shape);
    const Dims shapes[2] = {a_shape, out_shape};
    const Dims* strides[2] = {&a_strides, &bs};
    c.layout = baracuda::detail::make_ew_layout(out_shape, os, 2, shapes, strides);
    c.in[0] = reinterpret_cast<const void*>(a_addr);
    c.in[1] = reinterpret_cast<const void*>(uintptr_t{0x2000});
    c.out[0] = reinterpret_cast<void*>(uintptr_t{0x3000});
    return choose_path(p, c);
  };
  const Dims m{64, 128};
  EXPECT_EQ(path(DType::BF16, m, contiguous_strides(m), m), Path::Vec16);
  EXPECT_EQ(path(DType::BF16, {128}, {1}, m), Path::Vec16);           // row broadcast
  EXPECT_EQ(path(DType::BF16, {64, 1}, {1, 1}, m), Path::Vec16);      // column broadcast
  EXPECT_EQ(path(DType::F32, m, {1, 64}, m), Path::Strided32);         // transposed
  EXPECT_EQ(path(DType::F32, m, contiguous_strides(m), m, 0x1004), Path::Strided32);  // misaligned
  EXPECT_EQ(path(DType::F32, {63, 127}, {127, 1}, {63, 127}), Path::Strided32);  // inner extent not a multiple of 4
  // > 2^31 elements through a stride-0 (virtual) input: 64-bit indices.
  const Dims huge{int64_t{1} << 16, int64_t{1} << 16};
  EXPECT_EQ(path(DType::F32, huge, {0, 1}, {int64_t{1} << 16, (int64_t{1} << 16) + 1}), Path::Generic64);
  // Mixed dtypes always take the generic path.
  Problem p;
  p.arity = 2;
  p.kind[0] = p.kind[1] = ElementwiseOperand::Kind::Tensor;
  p.in_dtype[0] = DType::BF16;
  p.in_dtype[1] = p.common = p.out = DType::F32;
  EXPECT_FALSE(typed_kernels_apply(p));
  // The rare special functions have typed kernels in f32 / bf16 only; in f16
  // and f64 they (and their gradients) take the generic path.
  auto typed = [](int arity, uint8_t op, DType dt, uint8_t grad = 0) {
    Problem q;
    q.arity = arity;
    q.op = op;
    q.grad = grad;
    for (int k = 0; k < arity; ++k) {
      q.kind[k] = ElementwiseOperand::Kind::Tensor;
      q.in_dtype[k] = dt;
    }
    q.common = q.out = dt;
    return typed_kernels_apply(q);
  };
  const auto lgamma = static_cast<uint8_t>(UnaryOp::Lgamma), exp = static_cast<uint8_t>(UnaryOp::Exp);
  const auto atan2 = static_cast<uint8_t>(BinaryOp::Atan2), mul = static_cast<uint8_t>(BinaryOp::Mul);
  for (DType dt : {DType::F32, DType::BF16}) {
    EXPECT_TRUE(typed(1, lgamma, dt));
    EXPECT_TRUE(typed(2, atan2, dt));
    EXPECT_TRUE(typed(2, lgamma, dt, 1));
  }
  for (DType dt : {DType::F16, DType::F64}) {
    EXPECT_FALSE(typed(1, lgamma, dt));
    EXPECT_FALSE(typed(2, atan2, dt));
    EXPECT_FALSE(typed(2, lgamma, dt, 1));  // lgamma's gradient
    EXPECT_TRUE(typed(1, exp, dt));
    EXPECT_TRUE(typed(2, mul, dt));
    EXPECT_TRUE(typed(2, exp, dt, 1));
  }
}

TEST(ElementwiseEngine, SkuNamesOpDtypeAndPrecision) {
  UnaryDescriptor d;
  d.op = UnaryOp::Silu;
  d.x = Operand::tensor(DType::BF16, {8, 8});
  auto p = UnaryPlan::select(kCpu, d);
  ASSERT_TRUE(p.is_ok());
  EXPECT_EQ(p->sku().op, "elementwise.silu");
  EXPECT_EQ(p->sku().dtype, DType::BF16);
  EXPECT_EQ(p->sku().precision.math, DType::F32);
  EXPECT_EQ(p->sku().variant, "reference");
  EXPECT_TRUE(UnaryPlan().empty());
}

}  // namespace

// ---- unary backward ---------------------------------------------------------------------------
namespace {

// Points where op is smooth (inside its domain, away from kinks and poles).
std::vector<double> smooth_points(UnaryOp op) {
  switch (op) {
    case UnaryOp::Log:
    case UnaryOp::Log2:
    case UnaryOp::Log10:
    case UnaryOp::Log1p:
    case UnaryOp::Sqrt:
    case UnaryOp::Rsqrt:
    case UnaryOp::Lgamma:
    case UnaryOp::Digamma: return {0.3, 0.9, 1.7, 3.2, 11.5};
    case UnaryOp::Asin:
    case UnaryOp::Acos:
    case UnaryOp::Atanh:
    case UnaryOp::Erfinv: return {-0.8, -0.3, 0.1, 0.6};
    case UnaryOp::Logit: return {0.1, 0.35, 0.8};
    case UnaryOp::Acosh: return {1.2, 2.5, 7.0};
    case UnaryOp::I0: return {-2.2, 0.3, 1.4, 35.0};
    default: return {-3.7, -2.3, -0.7, -0.2, 0.4, 1.3, 2.6, 4.1, 7.3};
  }
}

std::vector<double> run_unary_backward(const UnaryBackwardDescriptor& d, const std::vector<double>& dy,
                                       const std::vector<double>& xy) {
  const int64_t n = static_cast<int64_t>(dy.size());
  auto plan = UnaryBackwardPlan::select(kCpu, d);
  EXPECT_TRUE(plan.is_ok()) << plan.status().to_string();
  if (!plan) return {};
  HostBuffer hdy = bt::host_from(DType::F64, dy), hx = bt::host_from(DType::F64, xy), hdx(DType::F64, n);
  UnaryBackwardArgs a;
  a.dy = TensorRef::contiguous(hdy.data(), DType::F64, Device::cpu(), {n}, n);
  // copy's gradient reads neither x nor y (and refuses them).
  if (d.forward.op != UnaryOp::Copy)
    (d.from_output ? a.y : a.x) = TensorRef::contiguous(hx.data(), DType::F64, Device::cpu(), {n}, n);
  a.dx = TensorMut::contiguous(hdx.data(), DType::F64, Device::cpu(), {n}, n);
  const Status st = plan->run(kCpu, {}, a);
  EXPECT_TRUE(st.is_ok()) << st.to_string();
  return bt::all_values(hdx);
}

}  // namespace

// Every differentiable unary op: dx against central finite differences of the
// forward plan in f64, with random dy.
TEST(ElementwiseBackward, UnaryGradientsMatchFiniteDifferences) {
  bt::Rng rng = bt::make_rng(bt::fresh_seed());
  int checked = 0;
  for (int o = 0; o < 255; ++o) {
    const auto op = static_cast<UnaryOp>(o);
    if (std::string(op_name(op)) == "?") break;
    UnaryBackwardDescriptor d;
    d.forward.op = op;
    if (op == UnaryOp::Threshold) d.forward.alpha = 0.25, d.forward.beta = -2.0;
    if (op == UnaryOp::Logit) d.forward.alpha = 0.05;
    const auto xs = smooth_points(op);
    const int64_t n = static_cast<int64_t>(xs.size());
    d.forward.x = Operand::tensor(DType::F64, {n});
    auto plan = UnaryBackwardPlan::select(kCpu, d);
    if (!plan) {
      EXPECT_EQ(plan.status().code(), StatusCode::Unsupported) << op_name(op) << ": " << plan.status().to_string();
      continue;
    }
    std::vector<double> dy(xs.size());
    for (double& v : dy) v = bt::uniform(rng, -2.0, 2.0);
    const auto dx = run_unary_backward(d, dy, xs);
    std::vector<double> xp(xs), xm(xs);
    std::vector<double> h(xs.size());
    for (size_t i = 0; i < xs.size(); ++i) {
      h[i] = 1e-6 * std::max(1.0, std::fabs(xs[i]));
      xp[i] += h[i];
      xm[i] -= h[i];
    }
    const auto fp = unary(d.forward, xp), fm = unary(d.forward, xm);
    for (size_t i = 0; i < xs.size(); ++i) {
      const double fd = dy[i] * (fp[i] - fm[i]) / (2 * h[i]);
      EXPECT_NEAR(dx[i], fd, 1e-6 * std::max(1.0, std::fabs(fd))) << op_name(op) << " at x = " << xs[i];
    }
    ++checked;
  }
  EXPECT_GE(checked, 60);
}

TEST(ElementwiseBackward, KinksFollowPyTorchAndFromOutputAgrees) {
  auto grad = [](UnaryOp op, const std::vector<double>& x, std::optional<double> alpha = {}, std::optional<double> beta = {}) {
    UnaryBackwardDescriptor d;
    d.forward.op = op;
    d.forward.alpha = alpha;
    d.forward.beta = beta;
    d.forward.x = Operand::tensor(DType::F64, {static_cast<int64_t>(x.size())});
    return run_unary_backward(d, std::vector<double>(x.size(), 1.0), x);
  };
  EXPECT_EQ(grad(UnaryOp::Relu, {0.0, -1.0, 2.0}), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(grad(UnaryOp::Abs, {0.0, -1.0, 2.0}), (std::vector<double>{0, -1, 1}));
  EXPECT_EQ(grad(UnaryOp::Relu6, {0.0, 6.0, 3.0}), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(grad(UnaryOp::Hardtanh, {-1.0, 1.0, 0.5}), (std::vector<double>{0, 0, 1}));
  EXPECT_EQ(grad(UnaryOp::Threshold, {0.25, 0.3}, 0.25, 9.0), (std::vector<double>{0, 1}));
  EXPECT_EQ(grad(UnaryOp::Floor, {0.5, 2.0}), (std::vector<double>{0, 0}));
  // PyTorch's hardswish_backward: x < -3 -> 0, x <= 3 -> x/3 + 1/2 (so -1/2 at x = -3, its jump).
  EXPECT_EQ(grad(UnaryOp::Hardswish, {-3.0, 3.0, -3.5}), (std::vector<double>{-0.5, 1.5, 0.0}));
  // from_output: the same gradient from y.
  for (UnaryOp op : {UnaryOp::Sigmoid, UnaryOp::Tanh, UnaryOp::Exp, UnaryOp::Expm1, UnaryOp::Sqrt, UnaryOp::Reciprocal,
                     UnaryOp::Relu}) {
    const std::vector<double> x = {0.3, 1.7, 2.9}, dy = {0.5, -1.5, 2.0};
    UnaryBackwardDescriptor d;
    d.forward.op = op;
    d.forward.x = Operand::tensor(DType::F64, {3});
    const auto from_x = run_unary_backward(d, dy, x);
    d.from_output = true;
    const auto from_y = run_unary_backward(d, dy, unary(d.forward, x));
    for (int i = 0; i < 3; ++i) EXPECT_NEAR(from_y[i], from_x[i], 1e-13 * std::max(1.0, std::fabs(from_x[i]))) << op_name(op);
  }
}

TEST(ElementwiseBackward, RulesNameTheProblem) {
  auto msg = [](const UnaryBackwardDescriptor& d) {
    auto r = UnaryBackwardPlan::select(kCpu, d);
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  UnaryBackwardDescriptor d;
  d.forward.op = UnaryOp::IsNan;
  d.forward.x = Operand::tensor(DType::F32, {4});
  EXPECT_NE(msg(d).find("UnaryBackwardPlan: isnan has no gradient"), std::string::npos);
  d.forward.op = UnaryOp::Exp;
  d.forward.x.dtype = DType::I32;
  EXPECT_NE(msg(d).find("needs floating x and y"), std::string::npos);
  d.forward.x.dtype = DType::F32;
  d.forward.op = UnaryOp::Silu;
  d.from_output = true;
  EXPECT_NE(msg(d).find("from_output: the gradient of silu is not taken from y"), std::string::npos);
  d.from_output = false;
  d.forward.out_dtype = DType::F64;
  EXPECT_NE(msg(d).find("dy has the forward's out_dtype f64 but x is f32"), std::string::npos);
  // Unused tensors are refused; dx may be dy (in place).
  d.forward.out_dtype.reset();
  auto plan = UnaryBackwardPlan::select(kCpu, d);
  ASSERT_TRUE(plan.is_ok());
  std::vector<float> dy = {1, 2, 3, 4}, x = {0.5f, -1, 2, 0};
  UnaryBackwardArgs a;
  a.dy = TensorRef::contiguous(dy.data(), Device::cpu(), {4}, 4);
  a.x = TensorRef::contiguous(x.data(), Device::cpu(), {4}, 4);
  a.y = a.x;
  a.dx = TensorMut::contiguous(dy.data(), Device::cpu(), {4}, 4);
  EXPECT_NE(plan->run(kCpu, {}, a).message().find("y is given but descriptor.from_output is false"), std::string::npos);
  a.y = {};
  ASSERT_TRUE(plan->run(kCpu, {}, a).is_ok());
  EXPECT_EQ(plan->sku().op, "elementwise_backward.silu");
  // Copy's gradient casts dy (bf16) back to x's dtype (f32).
  UnaryBackwardDescriptor c;
  c.forward.op = UnaryOp::Copy;
  c.forward.x = Operand::tensor(DType::F32, {2});
  c.forward.out_dtype = DType::BF16;
  auto cp = UnaryBackwardPlan::select(kCpu, c);
  ASSERT_TRUE(cp.is_ok()) << cp.status().to_string();
  HostBuffer hdy = bt::host_from(DType::BF16, {1.5, -2.25}), hdx(DType::F32, 2);
  UnaryBackwardArgs ca;
  ca.dy = TensorRef::contiguous(hdy.data(), DType::BF16, Device::cpu(), {2}, 2);
  ca.dx = TensorMut::contiguous(hdx.data(), DType::F32, Device::cpu(), {2}, 2);
  ASSERT_TRUE(cp->run(kCpu, {}, ca).is_ok());
  EXPECT_EQ(bt::all_values(hdx), (std::vector<double>{1.5, -2.25}));
}
