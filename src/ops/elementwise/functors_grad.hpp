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

// The binary ops with a gradient (floating operands): all but the
// comparisons, isclose, the logical and bitwise ops, the shifts and nextafter.
constexpr bool has_gradient(BinaryOp op) {
  switch (op) {
    case BinaryOp::Eq:
    case BinaryOp::Ne:
    case BinaryOp::Lt:
    case BinaryOp::Le:
    case BinaryOp::Gt:
    case BinaryOp::Ge:
    case BinaryOp::IsClose:
    case BinaryOp::LogicalAnd:
    case BinaryOp::LogicalOr:
    case BinaryOp::LogicalXor:
    case BinaryOp::BitwiseAnd:
    case BinaryOp::BitwiseOr:
    case BinaryOp::BitwiseXor:
    case BinaryOp::ShiftLeft:
    case BinaryOp::ShiftRight:
    case BinaryOp::NextAfter: return false;
    default: return true;
  }
}
constexpr bool has_gradient(TernaryOp) { return true; }

// The forward operands (bit k = operand k: a 1, b 2, c 4) that the gradient
// of operand m reads besides dy. A backward plan takes exactly the union over
// the gradients it computes (a tensor it does not read is refused).
constexpr int grad_reads(BinaryOp op, int m) {
  using B = BinaryOp;
  switch (op) {
    case B::Add:
    case B::Sub:
    case B::DivFloor:
    case B::DivTrunc: return 0;
    case B::Mul: return m == 0 ? 2 : 1;
    case B::Div:
    case B::Ldexp:
    case B::Glu: return m == 0 ? 2 : 3;
    case B::Remainder:
    case B::Fmod: return m == 0 ? 0 : 3;
    case B::Copysign: return m == 0 ? 3 : 0;
    case B::SwiGlu:
    case B::GeGlu:
    case B::GeGluTanh:
    case B::ReGlu: return m == 0 ? 3 : 1;
    default: return 3;
  }
}
constexpr int grad_reads(TernaryOp op, int m) {
  using T = TernaryOp;
  switch (op) {
    case T::Where: return m == 0 ? 0 : 1;
    case T::Clamp: return 7;
    case T::Lerp: return m == 2 ? 3 : 4;
    case T::Addcmul: return m == 0 ? 0 : (m == 1 ? 4 : 2);
    case T::Addcdiv: return m == 0 ? 0 : (m == 1 ? 4 : 6);
  }
  return 7;
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
    // The forward's forms: erfc for f32 / f64 (no cancellation for x < -2),
    // PyTorch's 1 + erf for 16-bit dtypes (erfc costs about twice erf: the
    // bf16 backward ran at 74% of copy bandwidth with it).
    const C cdf = q.bits <= 16 ? C(0.5) * (C(1) + ewm::erf(x * C(0.70710678118654752440)))
                               : C(0.5) * ewm::erfc(x * C(-0.70710678118654752440));
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

// The gradients of a binary / ternary op's operands, one per operand (v[m]):
// what the kernels store into da, db, dc (the ones not needed are computed
// from placeholder zeros and never stored).
template <class C, int M>
struct Grads {
  C v[M];
};

// PyTorch's formulas (elementwise.hpp lists them); g = dy.
template <BinaryOp Op, class C>
HD inline Grads<C, 2> binary_grad(C g, C a, C b, const Params& q) {
  using B = BinaryOp;
  using U = UnaryOp;
  const C p0 = C(q.p[0]);
  constexpr C kLn2 = C(0.69314718055994530942);
  if constexpr (Op == B::Add) return {{g, g * p0}};
  else if constexpr (Op == B::Sub) return {{g, -(g * p0)}};
  else if constexpr (Op == B::Mul) return {{g * b, g * a}};
  else if constexpr (Op == B::Div) return {{g / b, -(g / b) * (a / b)}};  // not a / (b * b): b * b overflows f32
  else if constexpr (Op == B::DivFloor || Op == B::DivTrunc) return {{C(0), C(0)}};
  else if constexpr (Op == B::Remainder) return {{g, -g * div_floor_f(a, b)}};
  else if constexpr (Op == B::Fmod) return {{g, -g * ewm::trunc(a / b)}};
  else if constexpr (Op == B::Pow) {
    // PyTorch's grouping: g times the whole derivative (g * b first would
    // overflow f32 where b * a^(b-1) underflows to 0).
    const C da = b == C(0) ? C(0) : g * (b * ewm::pow(a, b - C(1)));
    const C db = (a == C(0) && b >= C(0)) ? C(0) : g * (ewm::pow(a, b) * ewm::log(a));
    return {{da, db}};
  } else if constexpr (Op == B::Atan2) {
    const C h = ewm::hypot(a, b);  // a^2 + b^2 as h * h without overflow
    return {{g * (b / h) / h, -g * (a / h) / h}};
  } else if constexpr (Op == B::Hypot) {
    const C h = ewm::hypot(a, b);
    return {{g * (a / h), g * (b / h)}};
  } else if constexpr (Op == B::Maximum || Op == B::Minimum) {
    // The chosen operand gets g; ties split it; unordered (NaN) pairs give it to both.
    const bool a_loses = Op == B::Maximum ? a < b : a > b;
    const bool b_loses = Op == B::Maximum ? a > b : a < b;
    if (a == b) return {{g / C(2), g / C(2)}};
    return {{a_loses ? C(0) : g, b_loses ? C(0) : g}};
  } else if constexpr (Op == B::Fmax || Op == B::Fmin) {
    const bool to_a = (Op == B::Fmax ? a >= b : a <= b) || b != b;
    return {{to_a ? g : C(0), to_a ? C(0) : g}};
  } else if constexpr (Op == B::Copysign) return {{a == C(0) ? C(0) : g * (ewm::copysign(a, b) / a), C(0)}};
  else if constexpr (Op == B::LogAddExp) return {{g / (C(1) + ewm::exp(b - a)), g / (C(1) + ewm::exp(a - b))}};
  else if constexpr (Op == B::LogAddExp2) return {{g / (C(1) + ewm::exp2(b - a)), g / (C(1) + ewm::exp2(a - b))}};
  else if constexpr (Op == B::Xlogy || Op == B::Xlog1py) {
    constexpr bool L1p = Op == B::Xlog1py;
    // xlogy(g, b): NaN for NaN b, 0 for g == 0; masked to 0 where a == 0 and b is outside the domain.
    C da = b != b ? b : (g == C(0) ? C(0) : g * (L1p ? ewm::log1p(b) : ewm::log(b)));
    if (a == C(0) && b <= C(L1p ? -1 : 0)) da = C(0);
    return {{da, g * a / (L1p ? C(1) + b : b)}};
  } else if constexpr (Op == B::Ldexp) {
    const C e = ewm::exp2(b);
    return {{g * e, g * a * e * kLn2}};
  } else if constexpr (Op == B::Glu) {
    const C s = sigmoid(b);
    return {{g * s, g * a * s * (C(1) - s)}};
  } else if constexpr (Op == B::SwiGlu) return {{unary_grad<U::Silu, C>(g * b, a, q), g * silu(a)}};
  else if constexpr (Op == B::GeGlu) return {{unary_grad<U::GeluErf, C>(g * b, a, q), g * gelu_erf(a, q.bits)}};
  else if constexpr (Op == B::GeGluTanh) return {{unary_grad<U::GeluTanh, C>(g * b, a, q), g * gelu_tanh(a)}};
  else if constexpr (Op == B::ReGlu) return {{a > C(0) ? g * b : C(0), g * (a < C(0) ? C(0) : a)}};
  else return {{g * C(0) * a, g * C(0) * b}};  // not differentiable: never selected (has_gradient)
}

template <TernaryOp Op, class C>
HD inline Grads<C, 3> ternary_grad(C g, C a, C b, C c, const Params& q) {
  using T = TernaryOp;
  const C p0 = C(q.p[0]);
  if constexpr (Op == T::Where) {
    const bool take_b = a != C(0);
    return {{C(0), take_b ? g : C(0), take_b ? C(0) : g}};
  } else if constexpr (Op == T::Clamp) {
    const bool lo = q.has & 1, hi = q.has & 2;
    const bool pass = (!lo || a >= b) && (!hi || a <= c);
    const bool to_min = lo && a < b && (!hi || b < c);
    const bool to_max = hi && (a > c || (lo && c < b));
    return {{pass ? g : C(0), to_min ? g : C(0), to_max ? g : C(0)}};
  } else if constexpr (Op == T::Lerp) return {{g * (C(1) - c), g * c, g * (b - a)}};
  else if constexpr (Op == T::Addcmul) return {{g, g * p0 * c, g * p0 * b}};
  else if constexpr (Op == T::Addcdiv) return {{g, g * (p0 / c), -g * p0 * (b / c) / c}};
  else return {{g, g, g}};
}

#undef HD
}  // namespace fn
}  // namespace baracuda::elementwise
