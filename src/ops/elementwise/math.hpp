// Math functions for the elementwise functors, callable from host and device
// code with one spelling: ewm::exp(x) is expf / exp in device code and
// std::exp on the host, for float and double. The functors (functors.hpp) are
// written once against these and instantiated for double / int64 by the CPU
// reference and for float / double / int64 by the CUDA kernels.
//
// Where CUDA has no function (digamma) or the host has none (erfinv), the
// missing side is written here: erfinv on the host refines Giles' single-
// precision approximation by two Newton steps on erf (accurate to a few ulp
// of double); digamma (both sides) uses the reflection formula for x < 0.5,
// the recurrence psi(x) = psi(x + 1) - 1/x up to x >= 10 and the asymptotic
// series there.
#pragma once
#include <cmath>
#include <cstdint>

#include "core/host_device.hpp"

namespace baracuda::elementwise::ewm {

#define BARACUDA_HD BARACUDA_HOST_DEVICE

#if defined(__CUDA_ARCH__)
#define BARACUDA_EWM1(name, fname)                                      \
  __device__ inline float name(float x) { return ::fname(x); }          \
  __device__ inline double name(double x) { return ::name(x); }
#define BARACUDA_EWM2(name, fname)                                               \
  __device__ inline float name(float x, float y) { return ::fname(x, y); }       \
  __device__ inline double name(double x, double y) { return ::name(x, y); }
#else
#define BARACUDA_EWM1(name, fname)                            \
  inline float name(float x) { return std::name(x); }         \
  inline double name(double x) { return std::name(x); }
#define BARACUDA_EWM2(name, fname)                                         \
  inline float name(float x, float y) { return std::name(x, y); }          \
  inline double name(double x, double y) { return std::name(x, y); }
#endif

BARACUDA_EWM1(fabs, fabsf)
BARACUDA_EWM1(sqrt, sqrtf)
BARACUDA_EWM1(exp, expf)
BARACUDA_EWM1(exp2, exp2f)
BARACUDA_EWM1(expm1, expm1f)
BARACUDA_EWM1(log, logf)
BARACUDA_EWM1(log2, log2f)
BARACUDA_EWM1(log10, log10f)
BARACUDA_EWM1(log1p, log1pf)
BARACUDA_EWM1(sin, sinf)
BARACUDA_EWM1(cos, cosf)
BARACUDA_EWM1(tan, tanf)
BARACUDA_EWM1(asin, asinf)
BARACUDA_EWM1(acos, acosf)
BARACUDA_EWM1(atan, atanf)
BARACUDA_EWM1(sinh, sinhf)
BARACUDA_EWM1(cosh, coshf)
BARACUDA_EWM1(tanh, tanhf)
BARACUDA_EWM1(asinh, asinhf)
BARACUDA_EWM1(acosh, acoshf)
BARACUDA_EWM1(atanh, atanhf)
BARACUDA_EWM1(erf, erff)
BARACUDA_EWM1(erfc, erfcf)
BARACUDA_EWM1(lgamma, lgammaf)
BARACUDA_EWM1(floor, floorf)
BARACUDA_EWM1(ceil, ceilf)
BARACUDA_EWM1(trunc, truncf)
BARACUDA_EWM1(rint, rintf)  // round half to even (default rounding mode)
BARACUDA_EWM2(fmod, fmodf)
BARACUDA_EWM2(pow, powf)
BARACUDA_EWM2(atan2, atan2f)
BARACUDA_EWM2(hypot, hypotf)
BARACUDA_EWM2(fmax, fmaxf)
BARACUDA_EWM2(fmin, fminf)
BARACUDA_EWM2(copysign, copysignf)
BARACUDA_EWM2(nextafter, nextafterf)
#undef BARACUDA_EWM1
#undef BARACUDA_EWM2

template <class T>
BARACUDA_HD inline bool isnan(T x) { return x != x; }
template <class T>
BARACUDA_HD inline bool isinf(T x) { return x == T(INFINITY) || x == T(-INFINITY); }
template <class T>
BARACUDA_HD inline bool isfinite(T x) { return !isnan(x) && !isinf(x); }

#if defined(__CUDA_ARCH__)
__device__ inline bool signbit(float x) { return ::signbit(x); }
__device__ inline bool signbit(double x) { return ::signbit(x); }
__device__ inline float erfinv(float x) { return ::erfinvf(x); }
__device__ inline double erfinv(double x) { return ::erfinv(x); }
__device__ inline float ldexp(float x, int e) { return ::ldexpf(x, e); }
__device__ inline double ldexp(double x, int e) { return ::ldexp(x, e); }
__device__ inline float i0(float x) { return ::cyl_bessel_i0f(x); }
__device__ inline double i0(double x) { return ::cyl_bessel_i0(x); }
#else
inline bool signbit(float x) { return std::signbit(x); }
inline bool signbit(double x) { return std::signbit(x); }
// std::cyl_bessel_i throws (std::runtime_error from its series) for |x|
// beyond a few million; i0 overflows double from |x| ~ 713.99 on, so larger
// arguments (and +-inf) are +inf without calling it (NaN still propagates).
inline double i0(double x) {
  const double ax = std::fabs(x);
  return ax > 1000.0 ? HUGE_VAL : std::cyl_bessel_i(0.0, ax);
}
inline float i0(float x) { return static_cast<float>(i0(static_cast<double>(x))); }
// Host erfinv: a rational first guess (Giles 2010, "Approximating the erfinv
// function") then two Newton steps on erf(y) - x, each roughly doubling the
// correct digits.
inline double erfinv(double x) {
  if (x != x || x < -1 || x > 1) return NAN;
  if (x == 1) return INFINITY;
  if (x == -1) return -INFINITY;
  double w = -std::log((1.0 - x) * (1.0 + x)), p;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = std::sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  double y = p * x;
  constexpr double kTwoOverSqrtPi = 1.1283791670955126;
  for (int i = 0; i < 2; ++i) y -= (std::erf(y) - x) / (kTwoOverSqrtPi * std::exp(-y * y));
  return y;
}
inline float erfinv(float x) { return static_cast<float>(erfinv(static_cast<double>(x))); }
inline float ldexp(float x, int e) { return std::ldexp(x, e); }
inline double ldexp(double x, int e) { return std::ldexp(x, e); }
#endif

// digamma (psi), PyTorch's conventions: psi(+0) = -inf, psi(-0) = +inf, psi
// of a negative integer = NaN, psi(-inf) = NaN, psi(inf) = inf. Computed in
// double for every T.
template <class T>
BARACUDA_HD inline T digamma(T x) {
  constexpr double kPi = 3.14159265358979323846;
  if (x == T(0)) return signbit(x) ? T(INFINITY) : T(-INFINITY);
  if (isnan(x)) return x;
  if (x == T(INFINITY)) return x;
  double v = static_cast<double>(x);
  double result = 0;
  if (v < 0.5) {
    if (v == std::floor(v)) return T(NAN);  // negative integer (and -inf)
    // psi(1 - x) - psi(x) = pi / tan(pi x)
    const double r = kPi / std::tan(kPi * v);
    result = -r;
    v = 1.0 - v;
  }
  while (v < 10.0) {
    result -= 1.0 / v;
    v += 1.0;
  }
  const double inv = 1.0 / v, inv2 = inv * inv;
  // Asymptotic series: ln v - 1/(2v) - sum B_2k / (2k v^2k).
  const double series =
      inv2 * (1.0 / 12 -
              inv2 * (1.0 / 120 - inv2 * (1.0 / 252 - inv2 * (1.0 / 240 - inv2 * (1.0 / 132 - inv2 * (691.0 / 32760))))));
  result += std::log(v) - 0.5 * inv - series;
  return static_cast<T>(result);
}

}  // namespace baracuda::elementwise::ewm
