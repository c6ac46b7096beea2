// Transcendental functions that give the SAME bits on the host and in CUDA
// device code, for the random-number transforms (Box-Muller, exponential
// keys, inverse CDFs): the CPU reference must reproduce a GPU draw exactly,
// and the C library's logf / sinf and CUDA's differ in their last bits.
//
// How: only operations IEEE 754 rounds exactly the same way everywhere
// (add, sub, mul, div, sqrt, round-to-nearest-even), written through the
// helpers below. In device code they are __fadd_rn / __fmul_rn / ... so nvcc
// never contracts a*b+c into an FMA (an FMA rounds once, the host twice); host
// code is compiled in ISO C++ mode (CMAKE_CXX_EXTENSIONS OFF: GCC's
// -ffp-contract=off) for x86-64 without FMA, so it rounds every operation.
// Accuracy: within about 2 ulp of the true value (random-number transforms
// need reproducibility, not the last ulp). Arguments are the finite positive
// uniforms of core/philox.hpp; no special values are handled.
#pragma once
#include <cstdint>
#include <cstring>
#include <cmath>

#include "baracuda/core/host_device.hpp"

namespace baracuda::exact {

#if defined(__CUDA_ARCH__)
__device__ inline float add(float a, float b) { return __fadd_rn(a, b); }
__device__ inline float sub(float a, float b) { return __fsub_rn(a, b); }
__device__ inline float mul(float a, float b) { return __fmul_rn(a, b); }
__device__ inline float div(float a, float b) { return __fdiv_rn(a, b); }
__device__ inline float sqrt(float a) { return __fsqrt_rn(a); }
__device__ inline uint32_t bits(float a) { return __float_as_uint(a); }
__device__ inline float from_bits(uint32_t b) { return __uint_as_float(b); }
__device__ inline double add(double a, double b) { return __dadd_rn(a, b); }
__device__ inline double sub(double a, double b) { return __dadd_rn(a, -b); }
__device__ inline double mul(double a, double b) { return __dmul_rn(a, b); }
__device__ inline double div(double a, double b) { return __ddiv_rn(a, b); }
__device__ inline double sqrt(double a) { return __dsqrt_rn(a); }
#else
inline float add(float a, float b) { return a + b; }
inline float sub(float a, float b) { return a - b; }
inline float mul(float a, float b) { return a * b; }
inline float div(float a, float b) { return a / b; }
inline float sqrt(float a) { return std::sqrt(a); }
inline uint32_t bits(float a) {
  uint32_t b;
  std::memcpy(&b, &a, 4);
  return b;
}
inline float from_bits(uint32_t b) {
  float a;
  std::memcpy(&a, &b, 4);
  return a;
}
inline double add(double a, double b) { return a + b; }
inline double sub(double a, double b) { return a - b; }
inline double mul(double a, double b) { return a * b; }
inline double div(double a, double b) { return a / b; }
inline double sqrt(double a) { return std::sqrt(a); }
#endif

// Natural logarithm of a positive normal float: x = m * 2^e with m in
// [sqrt(1/2), sqrt(2)), log(m) = 2 atanh(s), s = (m - 1) / (m + 1), from the
// series 2s (1 + s^2/3 + s^4/5 + s^6/7 + s^8/9) (|s| <= 0.172).
BARACUDA_HOST_DEVICE inline float log(float x) {
  const uint32_t b = bits(x);
  int e = static_cast<int>(b >> 23) - 127;
  float m = from_bits((b & 0x7fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421356f) m = mul(m, 0.5f), e += 1;       // exact
  const float f = sub(m, 1.0f);                         // exact (Sterbenz)
  const float s = div(f, add(2.0f, f));
  const float z = mul(s, s);
  float p = add(0.285714298f, mul(z, 0.222222224f));  // 2/7 + z 2/9
  p = add(0.400000006f, mul(z, p));                     // 2/5
  p = add(0.666666687f, mul(z, p));                     // 2/3
  const float logm = add(mul(s, 2.0f), mul(s, mul(z, p)));
  const float ef = static_cast<float>(e);
  // ln 2 = hi + lo, hi with trailing zero bits so e * hi is exact (|e| < 2^7).
  return add(mul(ef, 0.693138123f), add(logm, mul(ef, 9.05800061e-06f)));
}

// sin(2 pi u) and cos(2 pi u) for u in [0, 1] (any float in fact, |u| < 2^22):
// u = k/4 + v with |v| <= 1/8 (exact), a = 2 pi v in [-pi/4, pi/4], Taylor
// polynomials, then the quarter-turn rotation by k.
BARACUDA_HOST_DEVICE inline void sincos_2pi(float u, float& s_out, float& c_out) {
  const float k = std::floor(add(mul(u, 4.0f), 0.5f));
  const float v = sub(u, mul(k, 0.25f));  // exact
  const float a = mul(v, 6.28318548f);
  const float a2 = mul(a, a);
  // sin a = a (1 - a^2/6 + a^4/120 - a^6/5040 + a^8/362880)
  float ps = add(-1.98412701e-04f, mul(a2, 2.75573188e-06f));
  ps = add(8.33333377e-03f, mul(a2, ps));
  ps = add(-0.166666672f, mul(a2, ps));
  const float s = add(a, mul(mul(a, a2), ps));
  // cos a = 1 - a^2/2 + a^4/24 - a^6/720 + a^8/40320 - a^10/3628800
  float pc = add(2.48015876e-05f, mul(a2, -2.75573188e-07f));
  pc = add(-1.38888892e-03f, mul(a2, pc));
  pc = add(4.16666679e-02f, mul(a2, pc));
  pc = add(-0.5f, mul(a2, pc));
  const float c = add(1.0f, mul(a2, pc));
  const int q = static_cast<int>(k) & 3;
  if (q == 0) s_out = s, c_out = c;
  else if (q == 1) s_out = c, c_out = -s;
  else if (q == 2) s_out = -s, c_out = -c;
  else s_out = -c, c_out = s;
}

}  // namespace baracuda::exact
