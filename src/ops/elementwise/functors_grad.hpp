// Derivatives of the unary ops (UnaryBackwardPlan): dx = dy * f'(x), written
// once for host and device like functors.hpp, with PyTorch's conventions at
// the kinks (relu'(0) = 0, abs'(0) = 0, hardtanh / relu6 pass nothing at
// their bounds, threshold passes nothing at x == threshold, floor / ceil /
// round / trunc / sign have zero gradient). unary_grad_from_y takes the
// forward's output instead of x, for the ops where that is exact and cheaper
// (sigmoid, tanh, exp, expm1, sqrt, reciprocal, relu).
#pragma once
#include <type_traits>

#include "ops/elementwise/functors.hpp"

namespace baracuda::elementwise {

// The unary ops with a gradient (floating x); the others (predicates,
// logical / bitwise not) are not differentiable.
constexpr bool has_gradient(UnaryOp op) {
  switch (op) {
    case UnaryOp::IsNan:
    case UnaryOp::IsInf:
    case UnaryOp::IsFinite:
    case UnaryOp::IsPosInf:
    case UnaryOp::IsNegInf:
    case UnaryOp::SignBit:
    case UnaryOp::LogicalNot:
    case UnaryOp::BitwiseNot: return false;
    default: return true;
  }
}
// The ops whose gradient UnaryBackwardPlan can take from the output y.
constexpr bool has_gradient_from_output(UnaryOp op) {
  switch (op) {
    case UnaryOp::Sigmoid:
    case UnaryOp::Tanh:
    case UnaryOp::Exp:
    case UnaryOp::Expm1:
    case UnaryOp::Sqrt:
    case UnaryOp::Reciprocal:
    case UnaryOp::Relu: return true;
    default: return false;
  }
}

namespace ewm {
// Trigamma psi'(x) (digamma's derivative): reflection below 0.5
// (psi'(1 - x) + psi'(x) = pi^2 / sin^2(pi x)), the recurrence
// psi'(x) = psi'(x + 1) + 1 / x^2 up to x >= 10, then the asymptotic series.
template <class T>
BARACUDA_HOST_DEVICE inline T trigamma(T x) {
  constexpr double kPi = 3.14159265358979323846;
  double v = static_cast<double>(x), sign = 1, result = 0;
  if (v != v) return x;
  if (v < 0.5) {
    if (v == std::floor(v)) return T(INFINITY);
    const double s = std::sin(kPi * v);
    result = kPi * kPi / (s * s);
    sign = -1;
    v = 1.0 - v;
  }
  double acc = 0;
  while (v < 10.0) {
    acc += 1.0 / (v * v);
    v += 1.0;
  }
  const double inv = 1.0 / v, inv2 = inv * inv;
  acc += inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (1.0 / 42 - inv2 * (1.0 / 30))));
  return static_cast<T>(result + sign * acc);
}

// I1 (the modified Bessel function of order 1, i0's derivative): the series
// sum (x/2)^(2k+1) / (k! (k+1)!) up to |x| = 30, the asymptotic expansion
// beyond; odd in x.
template <class T>
BARACUDA_HOST_DEVICE inline T i1(T xin) {
  const double x = static_cast<double>(xin), a = x < 0 ? -x : x;
  if (a != a) return xin;
  if (a == INFINITY) return xin;
  double r;
  if (a <= 30.0) {
    const double q = a * a / 4.0;
    double term = a / 2, sum = term;
    for (int k = 1; k < 200 && term > sum * 1e-18; ++k) {
      term *= q / (static_cast<double>(k) * (k + 1));
      sum += term;
    }
    r = sum;
  } else {
    double term = 1.0, sum = 1.0;
    for (int k = 1; k < 30; ++k) {
      term *= -(4.0 - (2.0 * k - 1) * (2.0 * k - 1)) / (8.0 * a * k);
      sum += term;
    }
    const double h = std::exp(a / 2);
    r = h * (h * sum / std::sqrt(2 * 3.14159265358979323846 * a));
  }
  return static_cast<T>(x < 0 ? -r : r);
}
}  // namespace ewm

namespace fn {

#define HD BARACUDA_HOST_DEVICE

// dx for dy and x. C is float or double (backward plans are floating only).
template <UnaryOp Op, class C>
HD inline C unary_grad(C dy, C x, const Params& q) {
  using U = UnaryOp;
  const C p0 = C(q.p[0]), p1 = C(q.p[1]);
  constexpr C kInvSqrtPi2 = C(1.12837916709551257390);  // 2 / sqrt(pi)
  constexpr C kLn2 = C(0.69314718055994530942), kLn10 = C(2.30258509299404568402);
  if constexpr (Op == U::Copy || Op == U::Frac) return dy;
  else if constexpr (Op == U::Abs) return x > C(0) ? dy : (x < C(0) ? -dy : (x != x ? x : C(0)));
  else if constexpr (Op == U::Neg) return -dy;
  else if constexpr (Op == U::Sign || Op == U::Sgn || Op == U::Floor || Op == U::Ceil || Op == U::Round ||
                     Op == U::Trunc)
    return C(0);
  else if constexpr (Op == U::Reciprocal) return -(dy / x) / x;  // not dy / (x * x): x * x underflows in f32 for tiny x
  else if constexpr (Op == U::Sqrt) return dy / (C(2) * ewm::sqrt(x));
  else if constexpr (Op == U::Rsqrt) {
    const C r = C(1) / ewm::sqrt(x);
    return C(-0.5) * dy * r * r * r;
  } else if constexpr (Op == U::Square) return C(2) * x * dy;
  else if constexpr (Op == U::Exp || Op == U::Expm1) return dy * ewm::exp(x);
  else if constexpr (Op == U::Exp2) return dy * ewm::exp2(x) * kLn2;
  else if constexpr (Op == U::Log) return dy / x;
  else if constexpr (Op == U::Log2) return dy / x / kLn2;  // dy / x first: x * ln2 loses bits for subnormal x
  else if constexpr (Op == U::Log10) return dy / x / kLn10;
  else if constexpr (Op == U::Log1p) return dy / (C(1) + x);
  else if constexpr (Op == U::Sin) return dy * ewm::cos(x);
  else if constexpr (Op == U::Cos) return -dy * ewm::sin(x);
  else if constexpr (Op == U::Tan) {
    const C t = ewm::tan(x);
    return dy * (C(1) + t * t);
  } else if constexpr (Op == U::Asin) return dy / ewm::sqrt(C(1) - x * x);
  else if constexpr (Op == U::Acos) return -dy / ewm::sqrt(C(1) - x * x);
  else if constexpr (Op == U::Atan) {
    if (ewm::fabs(x) < C(1)) return dy / (C(1) + x * x);
    const C r = C(1) / x;  // |x| >= 1: x * x would overflow f32 long before the result underflows
    return dy * r * r / (C(1) + r * r);
  }
  else if constexpr (Op == U::Sinh) return dy * ewm::cosh(x);
  else if constexpr (Op == U::Cosh) return dy * ewm::sinh(x);
  else if constexpr (Op == U::Tanh) {
    const C t = ewm::tanh(x);
    return dy * (C(1) - t * t);
  } else if constexpr (Op == U::Asinh) return dy / ewm::hypot(x, C(1));  // sqrt(x^2 + 1) without overflow
  else if constexpr (Op == U::Acosh) return dy / (ewm::sqrt(x - C(1)) * ewm::sqrt(x + C(1)));
  else if constexpr (Op == U::Atanh) {
    if (ewm::fabs(x) < C(2)) return dy / (C(1) - x * x);
    const C r = C(1) / x;
    return dy * r * r / (r * r - C(1));
  }
  else if constexpr (Op == U::Erf) return dy * kInvSqrtPi2 * ewm::exp(-x * x);
  else if constexpr (Op == U::Erfc) return -dy * kInvSqrtPi2 * ewm::exp(-x * x);
  else if constexpr (Op == U::Erfinv) {
    const C y = ewm::erfinv(x);
    return dy * C(0.88622692545275801365) * ewm::exp(y * y);  // sqrt(pi) / 2
  } else if constexpr (Op == U::Lgamma)  // in double: psi(x) of a subnormal x overflows f32 while dy * psi(x) does not
    return static_cast<C>(static_cast<double>(dy) * ewm::digamma(static_cast<double>(x)));
  else if constexpr (Op == U::Digamma)
    return static_cast<C>(static_cast<double>(dy) * ewm::trigamma(static_cast<double>(x)));
  else if constexpr (Op == U::I0) return static_cast<C>(static_cast<double>(dy) * ewm::i1(static_cast<double>(x)));
  else if constexpr (Op == U::Sigmoid) {
    const C s = sigmoid(x);
    return dy * s * (C(1) - s);
  } else if constexpr (Op == U::Logit) {
    if (q.p[0] >= 0 && (x < p0 || x > C(1) - p0)) return C(0);
    return dy / x / (C(1) - x);
  } else if constexpr (Op == U::NanToNum) return ewm::isfinite(x) ? dy : C(0);
  else if constexpr (Op == U::Relu) return x > C(0) ? dy : C(0);
  else if constexpr (Op == U::Relu6) return (x <= C(0) || x >= C(6)) ? C(0) : dy;
  else if constexpr (Op == U::LeakyRelu) return x > C(0) ? dy : dy * p0;
  else if constexpr (Op == U::Elu) return x > C(0) ? dy : dy * p0 * ewm::exp(x);
  else if constexpr (Op == U::Selu) {
    constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
    return x > C(0) ? C(kScale) * dy : dy * C(kScale * kAlpha) * ewm::exp(x);
  } else if constexpr (Op == U::Celu) return x > C(0) ? dy : dy * ewm::exp(x / p0);
  else if constexpr (Op == U::GeluErf) {
    constexpr C kInvSqrt2Pi = C(0.39894228040143267794);  // 1 / sqrt(2 pi)
    const C cdf = C(0.5) * ewm::erfc(x * C(-0.70710678118654752440));
    return dy * (cdf + x * kInvSqrt2Pi * ewm::exp(C(-0.5) * x * x));
  } else if constexpr (Op == U::GeluTanh) {
    constexpr C kB = C(0.79788456080286535588), kK = C(0.044715);
    const C t = ewm::tanh(kB * (x + kK * x * x * x));
    const C s = C(1) - t * t;  // 0 once tanh saturates: skip the term (0 * inf would be NaN in f32)
    return dy * (C(0.5) * (C(1) + t) + (s == C(0) ? C(0) : C(0.5) * x * s * kB * (C(1) + C(3) * kK * x * x)));
  } else if constexpr (Op == U::Silu) {
    const C s = sigmoid(x);
    return dy * s * (C(1) + x * (C(1) - s));
  } else if constexpr (Op == U::Mish) {
    const C t = ewm::tanh(ewm::log1p(ewm::exp(x)));
    return dy * (t + x * sigmoid(x) * (C(1) - t * t));
  } else if constexpr (Op == U::Softplus) return x * p0 > p1 ? dy : dy * sigmoid(x * p0);
  else if constexpr (Op == U::Softsign) {
    const C d = C(1) + ewm::fabs(x);
    return dy / d / d;  // d * d overflows f32 for huge x
  } else if constexpr (Op == U::Hardtanh) return (x <= p0 || x >= p1) ? C(0) : dy;
  else if constexpr (Op == U::Hardsigmoid) return (x > C(-3) && x < C(3)) ? dy / C(6) : C(0);
  else if constexpr (Op == U::Hardswish) return x < C(-3) ? C(0) : (x <= C(3) ? dy * (x / C(3) + C(0.5)) : dy);
  else if constexpr (Op == U::Hardshrink || Op == U::Softshrink) return (x >= -p0 && x <= p0) ? C(0) : dy;
  else if constexpr (Op == U::Tanhshrink) {
    const C t = ewm::tanh(x);
    return dy * t * t;
  } else if constexpr (Op == U::LogSigmoid) return dy / (C(1) + ewm::exp(x));
  else if constexpr (Op == U::Threshold) return x <= p0 ? C(0) : dy;
  else return dy * C(0) * x;  // not differentiable: never selected (has_gradient)
}

// dx for dy and the forward's output y (has_gradient_from_output).
template <UnaryOp Op, class C>
HD inline C unary_grad_from_y(C dy, C y, const Params&) {
  using U = UnaryOp;
  if constexpr (Op == U::Sigmoid) return dy * y * (C(1) - y);
  else if constexpr (Op == U::Tanh) return dy * (C(1) - y * y);
  else if constexpr (Op == U::Exp) return dy * y;
  else if constexpr (Op == U::Expm1) return dy * (y + C(1));
  else if constexpr (Op == U::Sqrt) return dy / (C(2) * y);
  else if constexpr (Op == U::Reciprocal) return -dy * y * y;
  else if constexpr (Op == U::Relu) return y > C(0) ? dy : C(0);
  else return dy * C(0) * y;  // never selected (has_gradient_from_output)
}

#undef HD
}  // namespace fn
}  // namespace baracuda::elementwise
