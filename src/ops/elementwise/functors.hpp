// The elementwise ops, one expression each, written once for the host and the
// device: unary<Op>(x, params), binary<Op>(a, b, params), ternary<Op>(a, b,
// c, params). C is the compute type: double or int64_t in the CPU reference;
// float, double or int64_t in the CUDA kernels (16-bit floats compute in
// float). Predicates and comparisons return bool, every other op returns C.
//
// Semantics are PyTorch's (docs/OPS.md lists every choice); the integer rules
// PyTorch leaves undefined or fatal are defined here, identically on both
// backends (integers always compute in int64 and wrap to the output width):
//   x / 0, x // 0, x % 0, fmod(x, 0)  -> 0 (PyTorch: an exception on the CPU,
//                                        an unspecified value on CUDA)
//   INT64_MIN / -1, INT64_MIN // -1   -> INT64_MIN (wraps); % and fmod -> 0
//   pow(x, n < 0)                     -> 1 for x = 1, +-1 for x = -1, else 0
//   x << s, s < 0 or s >= bits        -> 0; x >> s there -> -1 for x < 0, else 0
//   abs / neg of the most negative value wrap to itself
#pragma once
#include <cstdint>
#include <type_traits>

#include "baracuda/ops/elementwise.hpp"
#include "ops/elementwise/math.hpp"

namespace baracuda::elementwise {

// The op parameters, resolved at select() (defaults applied): p[0..2] are the
// descriptor's alpha / beta / gamma; `bits` the integer width of the common
// dtype (1 for bool) for the shifts and bitwise_not, or the bits of a floating
// common dtype (nextafter steps in that precision); `has` (clamp) which
// optional operands are given: bit 0 = b, bit 1 = c.
struct Params {
  double p[3] = {0, 0, 0};
  int bits = 64;
  int has = 3;
};

// ---- domains -------------------------------------------------------------------------
enum class Domain : uint8_t { IntToFloat, Floating, Numeric, Any, Integral, Predicate };

#define BARACUDA_EW_DOMAIN(Enum, E, name, dom, params) \
  case Enum::E: return Domain::dom;
#define BARACUDA_EW_DOMAIN_U(E, name, dom, params) BARACUDA_EW_DOMAIN(UnaryOp, E, name, dom, params)
#define BARACUDA_EW_DOMAIN_B(E, name, dom, params) BARACUDA_EW_DOMAIN(BinaryOp, E, name, dom, params)
#define BARACUDA_EW_DOMAIN_T(E, name, dom, params) BARACUDA_EW_DOMAIN(TernaryOp, E, name, dom, params)
constexpr Domain domain_of(UnaryOp op) {
  switch (op) { BARACUDA_UNARY_OPS(BARACUDA_EW_DOMAIN_U) }
  return Domain::Any;
}
constexpr Domain domain_of(BinaryOp op) {
  switch (op) { BARACUDA_BINARY_OPS(BARACUDA_EW_DOMAIN_B) }
  return Domain::Any;
}
constexpr Domain domain_of(TernaryOp op) {
  switch (op) { BARACUDA_TERNARY_OPS(BARACUDA_EW_DOMAIN_T) }
  return Domain::Any;
}
#undef BARACUDA_EW_DOMAIN_U
#undef BARACUDA_EW_DOMAIN_B
#undef BARACUDA_EW_DOMAIN_T
#undef BARACUDA_EW_DOMAIN

// Whether the op is computed in C at all (select() routes each dtype to its C:
// a floating op never sees int64, an integer-only op never a float).
template <class Op>
constexpr bool computes_in(Op op, bool integral_c) {
  switch (domain_of(op)) {
    case Domain::IntToFloat:
    case Domain::Floating: return !integral_c;
    case Domain::Integral: return integral_c;
    default: return true;
  }
}

// The rare special functions: their typed (vec16 / strided32) kernels, and
// those of their gradients, are built for f32 and bf16 only; in f16 and f64
// they take the generic64 path (same results, runtime dtype conversion and
// 64-bit indexing; the build-time budget in docs/ARCHITECTURE.md).
constexpr bool rare_special(UnaryOp op) {
  using U = UnaryOp;
  switch (op) {
    case U::Tan: case U::Asin: case U::Acos: case U::Atan: case U::Sinh: case U::Cosh: case U::Asinh:
    case U::Acosh: case U::Atanh: case U::Erfinv: case U::Lgamma: case U::Digamma: case U::I0: case U::Mish:
      return true;
    default: return false;
  }
}
constexpr bool rare_special(BinaryOp op) {
  using B = BinaryOp;
  switch (op) {
    case B::Atan2: case B::Hypot: case B::NextAfter: case B::Xlogy: case B::Xlog1py: case B::LogAddExp2:
    case B::Ldexp: case B::Copysign:
      return true;
    default: return false;
  }
}
constexpr bool rare_special(TernaryOp) { return false; }

// Ops whose functor costs tens of instructions per value (erf, lgamma,
// trigonometric and hyperbolic functions, the GELU family, ...): their vector
// kernels on 16-bit dtypes loop 4 chunks per thread (launch_vec's `loops`).
constexpr bool compute_heavy(UnaryOp op) {
  using U = UnaryOp;
  switch (op) {
    case U::Sin: case U::Cos: case U::Tan: case U::Asin: case U::Acos: case U::Atan: case U::Sinh: case U::Cosh:
    case U::Asinh: case U::Acosh: case U::Atanh: case U::Erf: case U::Erfc: case U::Erfinv: case U::Lgamma:
    case U::Digamma: case U::I0: case U::GeluErf: case U::GeluTanh: case U::Mish: case U::Softplus:
    case U::LogSigmoid:
      return true;
    default: return false;
  }
}
constexpr bool compute_heavy(BinaryOp op) {
  using B = BinaryOp;
  switch (op) {
    case B::Pow: case B::Atan2: case B::LogAddExp: case B::LogAddExp2: case B::Xlogy: case B::Xlog1py:
    case B::GeGlu: case B::GeGluTanh:
      return true;
    default: return false;
  }
}
constexpr bool compute_heavy(TernaryOp) { return false; }
// A gradient costs more than its op: exp / sigmoid / tanh based ones join.
constexpr bool gradient_heavy(UnaryOp op) {
  using U = UnaryOp;
  switch (op) {
    case U::Exp: case U::Exp2: case U::Expm1: case U::Sigmoid: case U::Tanh: case U::Silu: case U::Elu:
    case U::Selu: case U::Celu:
      return true;
    default: return compute_heavy(op);
  }
}

namespace fn {

#define HD BARACUDA_HOST_DEVICE

template <class C>
inline constexpr bool kInt = std::is_integral_v<C>;

// Two's-complement wrapping arithmetic on int64 (no signed-overflow UB).
HD inline int64_t wrap_add(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b)); }
HD inline int64_t wrap_sub(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) - static_cast<uint64_t>(b)); }
HD inline int64_t wrap_mul(int64_t a, int64_t b) { return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b)); }
HD inline int64_t wrap_neg(int64_t a) { return static_cast<int64_t>(uint64_t{0} - static_cast<uint64_t>(a)); }

template <class C>
HD inline C nan_v() { return C(NAN); }

// NaN-propagating max / min (torch.maximum / minimum, clamp).
template <class C>
HD inline C max_nan(C a, C b) {
  if constexpr (!kInt<C>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a > b ? a : b;
}
template <class C>
HD inline C min_nan(C a, C b) {
  if constexpr (!kInt<C>) {
    if (a != a) return a;
    if (b != b) return b;
  }
  return a < b ? a : b;
}

template <class C>
HD inline C sigmoid(C x) { return C(1) / (C(1) + ewm::exp(-x)); }
template <class C>
HD inline C silu(C x) { return x / (C(1) + ewm::exp(-x)); }
// GELU: x * Phi(x). PyTorch writes 0.5 x (1 + erf(x / sqrt 2)), which loses
// digits for x < -2 (1 + erf(.) cancels: f32 relative error ~1e-4 at x = -3.4);
// 0.5 x erfc(-x / sqrt 2) is the same function without the cancellation.
// erfc costs about twice erf: for 16-bit dtypes (bits <= 16), whose ulp
// (2^-8 for bf16) dwarfs the cancellation, PyTorch's form keeps the kernel
// at the bandwidth limit (measured on the H100, [8192, 16384] bf16: 58% of
// copy bandwidth with erfc, see docs/BENCHMARKS.md).
template <class C>
HD inline C gelu_erf(C x, int bits) {
  if (bits <= 16) return C(0.5) * x * (C(1) + ewm::erf(x * C(0.70710678118654752440)));
  return C(0.5) * x * ewm::erfc(x * C(-0.70710678118654752440));
}
// The tanh approximation: 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3),
// evaluated as x * sigmoid(2u) (equal, and free of the same cancellation).
template <class C>
HD inline C gelu_tanh(C x) {
  const C u = C(0.79788456080286535588) * (x + C(0.044715) * x * x * x);
  return x / (C(1) + ewm::exp(C(-2) * u));
}

// ---- unary ------------------------------------------------------------------------------
template <UnaryOp Op, class C>
HD inline auto unary(C x, const Params& q) {
  using U = UnaryOp;
  constexpr bool I = kInt<C>;
  // Integer ops take no parameter here (a float parameter such as
  // nan_to_num's default posinf would not even convert to int64).
  [[maybe_unused]] const C p0 = I ? C(0) : C(q.p[0]), p1 = I ? C(0) : C(q.p[1]), p2 = I ? C(0) : C(q.p[2]);
  if constexpr (Op == U::Copy) return x;
  else if constexpr (Op == U::Abs) {
    if constexpr (I) return x < 0 ? wrap_neg(x) : x;
    else return ewm::fabs(x);
  } else if constexpr (Op == U::Neg) {
    if constexpr (I) return wrap_neg(x);
    else return -x;
  } else if constexpr (Op == U::Sign || Op == U::Sgn) {
    if constexpr (I) return C((x > 0) - (x < 0));
    else return x != x ? x : C((C(0) < x) - (x < C(0)));
  } else if constexpr (Op == U::Reciprocal) return C(1) / x;
  else if constexpr (Op == U::Sqrt) return ewm::sqrt(x);
  else if constexpr (Op == U::Rsqrt) return C(1) / ewm::sqrt(x);
  else if constexpr (Op == U::Square) {
    if constexpr (I) return wrap_mul(x, x);
    else return x * x;
  } else if constexpr (Op == U::Exp) return ewm::exp(x);
  else if constexpr (Op == U::Exp2) return ewm::exp2(x);
  else if constexpr (Op == U::Expm1) return ewm::expm1(x);
  else if constexpr (Op == U::Log) return ewm::log(x);
  else if constexpr (Op == U::Log2) return ewm::log2(x);
  else if constexpr (Op == U::Log10) return ewm::log10(x);
  else if constexpr (Op == U::Log1p) return ewm::log1p(x);
  else if constexpr (Op == U::Sin) return ewm::sin(x);
  else if constexpr (Op == U::Cos) return ewm::cos(x);
  else if constexpr (Op == U::Tan) return ewm::tan(x);
  else if constexpr (Op == U::Asin) return ewm::asin(x);
  else if constexpr (Op == U::Acos) return ewm::acos(x);
  else if constexpr (Op == U::Atan) return ewm::atan(x);
  else if constexpr (Op == U::Sinh) return ewm::sinh(x);
  else if constexpr (Op == U::Cosh) return ewm::cosh(x);
  else if constexpr (Op == U::Tanh) return ewm::tanh(x);
  else if constexpr (Op == U::Asinh) return ewm::asinh(x);
  else if constexpr (Op == U::Acosh) return ewm::acosh(x);
  else if constexpr (Op == U::Atanh) return ewm::atanh(x);
  else if constexpr (Op == U::Erf) return ewm::erf(x);
  else if constexpr (Op == U::Erfc) return ewm::erfc(x);
  else if constexpr (Op == U::Erfinv) return ewm::erfinv(x);
  else if constexpr (Op == U::Lgamma) return ewm::lgamma(x);
  else if constexpr (Op == U::Digamma) return ewm::digamma(x);
  else if constexpr (Op == U::I0) return ewm::i0(x);
  else if constexpr (Op == U::Sigmoid) return sigmoid(x);
  else if constexpr (Op == U::Logit) {
    C z = x;
    if (q.p[0] >= 0) z = z < p0 ? p0 : (z > C(1) - p0 ? C(1) - p0 : z);  // eps given
    return ewm::log(z / (C(1) - z));
  } else if constexpr (Op == U::Floor || Op == U::Ceil || Op == U::Trunc || Op == U::Round) {
    if constexpr (I) return x;
    else if constexpr (Op == U::Floor) return ewm::floor(x);
    else if constexpr (Op == U::Ceil) return ewm::ceil(x);
    else if constexpr (Op == U::Trunc) return ewm::trunc(x);
    else {
      if (q.p[0] == 0) return ewm::rint(x);
      if (q.p[0] > 0) {
        const C s = C(q.p[1]);  // 10^decimals (resolved at select)
        return ewm::rint(x * s) / s;
      }
      const C s = C(q.p[1]);  // 10^-decimals
      return ewm::rint(x / s) * s;
    }
  } else if constexpr (Op == U::Frac) return x - ewm::trunc(x);
  else if constexpr (Op == U::IsNan) {
    if constexpr (I) return false;
    else return x != x;
  } else if constexpr (Op == U::IsInf) {
    if constexpr (I) return false;
    else return ewm::isinf(x);
  } else if constexpr (Op == U::IsFinite) {
    if constexpr (I) return true;
    else return ewm::isfinite(x);
  } else if constexpr (Op == U::IsPosInf) {
    if constexpr (I) return false;
    else return x == C(INFINITY);
  } else if constexpr (Op == U::IsNegInf) {
    if constexpr (I) return false;
    else return x == C(-INFINITY);
  } else if constexpr (Op == U::SignBit) {
    if constexpr (I) return x < 0;
    else return ewm::signbit(x);
  } else if constexpr (Op == U::LogicalNot) return x == C(0);
  else if constexpr (Op == U::BitwiseNot) {
    if constexpr (I) return q.bits == 1 ? C(x == 0) : C(~x);
    else return x;  // not reached (integral only)
  } else if constexpr (Op == U::NanToNum) {
    if constexpr (I) return x;
    else return x != x ? p0 : (x == C(INFINITY) ? p1 : (x == C(-INFINITY) ? p2 : x));
  } else if constexpr (Op == U::Relu) return x < C(0) ? C(0) : x;
  else if constexpr (Op == U::Relu6) return x < C(0) ? C(0) : (x > C(6) ? C(6) : x);
  else if constexpr (Op == U::LeakyRelu) return x > C(0) ? x : x * p0;
  else if constexpr (Op == U::Elu) return x > C(0) ? x : p0 * ewm::expm1(x);
  else if constexpr (Op == U::Selu) {
    constexpr double kAlpha = 1.6732632423543772848170429916717, kScale = 1.0507009873554804934193349852946;
    return C(kScale) * (x > C(0) ? x : C(kAlpha) * ewm::expm1(x));
  } else if constexpr (Op == U::Celu) return x > C(0) ? x : p0 * ewm::expm1(x / p0);
  else if constexpr (Op == U::GeluErf) return gelu_erf(x, q.bits);
  else if constexpr (Op == U::GeluTanh) return gelu_tanh(x);
  else if constexpr (Op == U::Silu) return silu(x);
  else if constexpr (Op == U::Mish) return x * ewm::tanh(ewm::log1p(ewm::exp(x)));
  else if constexpr (Op == U::Softplus) return x * p0 > p1 ? x : ewm::log1p(ewm::exp(x * p0)) / p0;
  else if constexpr (Op == U::Softsign) return x / (C(1) + ewm::fabs(x));
  else if constexpr (Op == U::Hardtanh) return x < p0 ? p0 : (x > p1 ? p1 : x);
  else if constexpr (Op == U::Hardsigmoid) return x <= C(-3) ? C(0) : (x >= C(3) ? C(1) : x / C(6) + C(0.5));
  else if constexpr (Op == U::Hardswish) return x <= C(-3) ? C(0) : (x >= C(3) ? x : x * (x + C(3)) / C(6));
  else if constexpr (Op == U::Hardshrink) return (x >= -p0 && x <= p0) ? C(0) : x;
  else if constexpr (Op == U::Softshrink) return x > p0 ? x - p0 : (x < -p0 ? x + p0 : C(0));
  else if constexpr (Op == U::Tanhshrink) return x - ewm::tanh(x);
  else if constexpr (Op == U::LogSigmoid) {
    const C m = x < C(0) ? x : C(0);
    return m - ewm::log1p(ewm::exp(-ewm::fabs(x)));
  } else if constexpr (Op == U::Threshold) return x <= p0 ? p1 : x;
  else static_assert(sizeof(C) == 0, "unary op without a functor");
}

// ---- binary -----------------------------------------------------------------------------
// Python's floor division and modulo for floats (torch.div(rounding_mode="floor"),
// torch.remainder): through fmod so that a == b * q + r holds closely.
template <class C>
HD inline C div_floor_f(C a, C b) {
  if (b == C(0)) return a / b;
  const C mod = ewm::fmod(a, b);
  C div = (a - mod) / b;
  if (mod != C(0) && (b < C(0)) != (mod < C(0))) div -= C(1);
  if (div == C(0)) return ewm::copysign(C(0), a / b);
  C fl = ewm::floor(div);
  if (div - fl > C(0.5)) fl += C(1);
  return fl;
}

template <BinaryOp Op, class C>
HD inline auto binary(C a, C b, const Params& q) {
  using B = BinaryOp;
  constexpr bool I = kInt<C>;
  // p0: add / sub's alpha, an integer for integer ops (checked at select()).
  // isclose's rtol / atol may be any double >= 0 (1e30, inf) and are read as
  // doubles for integers: converting them to int64 would be undefined behaviour.
  [[maybe_unused]] const C p0 = I && Op == B::IsClose ? C(0) : C(q.p[0]), p1 = I ? C(0) : C(q.p[1]);
  if constexpr (Op == B::Add) {
    if constexpr (I) return wrap_add(a, wrap_mul(p0, b));
    else return a + p0 * b;
  } else if constexpr (Op == B::Sub) {
    if constexpr (I) return wrap_sub(a, wrap_mul(p0, b));
    else return a - p0 * b;
  } else if constexpr (Op == B::Mul) {
    if constexpr (I) return wrap_mul(a, b);
    else return a * b;
  } else if constexpr (Op == B::Div) return a / b;
  else if constexpr (Op == B::DivFloor) {
    if constexpr (I) {
      if (b == 0) return C(0);
      if (b == -1) return wrap_neg(a);
      C d = a / b;
      if (a % b != 0 && ((a < 0) != (b < 0))) d -= 1;
      return d;
    } else return div_floor_f(a, b);
  } else if constexpr (Op == B::DivTrunc) {
    if constexpr (I) {
      if (b == 0) return C(0);
      if (b == -1) return wrap_neg(a);
      return a / b;
    } else return ewm::trunc(a / b);
  } else if constexpr (Op == B::Remainder) {
    if constexpr (I) {
      if (b == 0 || b == -1) return C(0);
      C r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return r;
    } else {
      C r = ewm::fmod(a, b);
      if (r != C(0) && ((b < C(0)) != (r < C(0)))) r += b;
      return r;
    }
  } else if constexpr (Op == B::Fmod) {
    if constexpr (I) return (b == 0 || b == -1) ? C(0) : C(a % b);
    else return ewm::fmod(a, b);
  } else if constexpr (Op == B::Pow) {
    if constexpr (I) {
      if (b < 0) return a == 1 ? C(1) : (a == -1 ? C((b & 1) ? -1 : 1) : C(0));
      C r = 1, base = a;
      for (C e = b; e > 0; e >>= 1) {
        if (e & 1) r = wrap_mul(r, base);
        base = wrap_mul(base, base);
      }
      return r;
    } else return ewm::pow(a, b);
  } else if constexpr (Op == B::Atan2) return ewm::atan2(a, b);
  else if constexpr (Op == B::Hypot) return ewm::hypot(a, b);
  else if constexpr (Op == B::Maximum) return max_nan(a, b);
  else if constexpr (Op == B::Minimum) return min_nan(a, b);
  else if constexpr (Op == B::Fmax) {
    if constexpr (I) return a > b ? a : b;
    else return ewm::fmax(a, b);
  } else if constexpr (Op == B::Fmin) {
    if constexpr (I) return a < b ? a : b;
    else return ewm::fmin(a, b);
  } else if constexpr (Op == B::Copysign) return ewm::copysign(a, b);
  else if constexpr (Op == B::NextAfter) {
    // The neighbour in the dtype's own precision (a double reference of an
    // f32 op steps in float).
    if constexpr (std::is_same_v<C, double>) {
      if (q.bits == 32) return static_cast<C>(ewm::nextafter(static_cast<float>(a), static_cast<float>(b)));
    }
    return ewm::nextafter(a, b);
  }
  else if constexpr (Op == B::LogAddExp || Op == B::LogAddExp2) {
    if (ewm::isinf(a) && a == b) return a;
    const C m = a > b ? a : b;
    const C d = -ewm::fabs(a - b);
    if constexpr (Op == B::LogAddExp) return m + ewm::log1p(ewm::exp(d));
    else return m + ewm::log1p(ewm::exp2(d)) * C(1.44269504088896340736);  // / ln 2
  } else if constexpr (Op == B::Xlogy || Op == B::Xlog1py) {
    if (b != b) return b;
    if (a == C(0)) return C(0);
    if constexpr (Op == B::Xlogy) return a * ewm::log(b);
    else return a * ewm::log1p(b);
  } else if constexpr (Op == B::Ldexp) return a * ewm::exp2(b);
  else if constexpr (Op == B::Eq) return a == b;
  else if constexpr (Op == B::Ne) return a != b;
  else if constexpr (Op == B::Lt) return a < b;
  else if constexpr (Op == B::Le) return a <= b;
  else if constexpr (Op == B::Gt) return a > b;
  else if constexpr (Op == B::Ge) return a >= b;
  else if constexpr (Op == B::IsClose) {
    if (a == b) return true;
    if constexpr (I) {
      const double d = static_cast<double>(a) - static_cast<double>(b);
      return (d < 0 ? -d : d) <= q.p[1] + q.p[0] * (b < 0 ? -static_cast<double>(b) : static_cast<double>(b));
    } else {
      if (q.p[2] != 0 && a != a && b != b) return true;
      if (!ewm::isfinite(a) || !ewm::isfinite(b)) return false;
      return ewm::fabs(a - b) <= p1 + p0 * ewm::fabs(b);
    }
  } else if constexpr (Op == B::LogicalAnd) return (a != C(0)) && (b != C(0));
  else if constexpr (Op == B::LogicalOr) return (a != C(0)) || (b != C(0));
  else if constexpr (Op == B::LogicalXor) return (a != C(0)) != (b != C(0));
  else if constexpr (Op == B::BitwiseAnd || Op == B::BitwiseOr || Op == B::BitwiseXor || Op == B::ShiftLeft ||
                     Op == B::ShiftRight) {
    if constexpr (I) {
      if constexpr (Op == B::BitwiseAnd) return C(a & b);
      else if constexpr (Op == B::BitwiseOr) return C(a | b);
      else if constexpr (Op == B::BitwiseXor) return C(a ^ b);
      else if constexpr (Op == B::ShiftLeft) return (b < 0 || b >= q.bits) ? C(0) : C(static_cast<uint64_t>(a) << b);
      else return (b < 0 || b >= q.bits) ? C(a < 0 ? -1 : 0) : C(a >> b);
    } else return a;  // not reached (integral only)
  } else if constexpr (Op == B::Glu) return a * sigmoid(b);
  else if constexpr (Op == B::SwiGlu) return silu(a) * b;
  else if constexpr (Op == B::GeGlu) return gelu_erf(a, q.bits) * b;
  else if constexpr (Op == B::GeGluTanh) return gelu_tanh(a) * b;
  else if constexpr (Op == B::ReGlu) return (a < C(0) ? C(0) : a) * b;
  else static_assert(sizeof(C) == 0, "binary op without a functor");
}

// ---- ternary ----------------------------------------------------------------------------
template <TernaryOp Op, class C>
HD inline C ternary(C a, C b, C c, const Params& q) {
  using T = TernaryOp;
  constexpr bool I = kInt<C>;
  [[maybe_unused]] const C p0 = C(q.p[0]);
  if constexpr (Op == T::Where) return a != C(0) ? b : c;
  else if constexpr (Op == T::Clamp) {
    C r = a;
    if (q.has & 1) r = max_nan(r, b);
    if (q.has & 2) r = min_nan(r, c);
    return r;
  } else if constexpr (Op == T::Lerp) {
    const C w = c;
    return ewm::fabs(w) < C(0.5) ? a + w * (b - a) : b - (b - a) * (C(1) - w);
  } else if constexpr (Op == T::Addcmul) {
    if constexpr (I) return wrap_add(a, wrap_mul(p0, wrap_mul(b, c)));
    else return a + p0 * b * c;
  } else if constexpr (Op == T::Addcdiv) return a + p0 * (b / c);
  else static_assert(sizeof(C) == 0, "ternary op without a functor");
}

#undef HD
}  // namespace fn
}  // namespace baracuda::elementwise
