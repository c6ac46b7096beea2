// The normal generator's f32 transcendental functions (Box-Muller for f32,
// f16 and bf16 outputs, transform.hpp): like core/exact_math.hpp, they give
// the SAME bits on the host and in CUDA device code, but with fewer
// operations: explicit fused multiply-adds (fmaf in device code, std::fma on
// the host: both round the exact a * b + c once, so both sides agree), no
// division, and a range reduction of the angle in integer arithmetic on the
// Philox word itself. core/exact_math.hpp keeps its own (unfused) functions:
// other code depends on their exact results.
//
// Accuracy (checked over all 2^24 inputs of each function against exact
// values): log_u24 within 0.9 ulp; sincos_word within 2 ulp (8.5e-8
// absolute, mostly the rounding of the angle a = v 2 pi 2^-24).
#pragma once
#include <cmath>
#include <cstdint>

#include "baracuda/core/host_device.hpp"
#include "core/exact_math.hpp"

namespace baracuda::random::fast {

#if defined(__CUDA_ARCH__)
__device__ inline float fma(float a, float b, float c) { return __fmaf_rn(a, b, c); }
#else
inline float fma(float a, float b, float c) { return std::fma(a, b, c); }
#endif

// log(k 2^-24) for an integer k in [1, 2^24] (core/philox.hpp's
// uniform_open0_f32 before its scaling): x = float(k) (exact) = m 2^e with m
// in [sqrt(1/2), sqrt(2)), f = m - 1 (exact), log(1 + f) = f - f^2 / 2 +
// f^3 P(f) with P a degree-7 polynomial fitted (least squares, reweighted
// towards minimax) to the relative error on [sqrt(1/2) - 1, sqrt(2) - 1];
// (e - 24) ln 2 added with ln 2 = hi + lo.
BARACUDA_HOST_DEVICE inline float log_u24(uint32_t k) {
  using namespace baracuda::exact;
  const uint32_t b = bits(static_cast<float>(k));
  int e = static_cast<int>(b >> 23) - 127 - 24;
  float m = from_bits((b & 0x7fffffu) | 0x3f800000u);  // [1, 2)
  if (m > 1.41421356f) m = mul(m, 0.5f), e += 1;       // exact
  const float f = sub(m, 1.0f);                         // exact (Sterbenz)
  float p = -0.080836221575737f;
  p = fast::fma(p, f, 0.12918221950531006f);
  p = fast::fma(p, f, -0.13059744238853455f);
  p = fast::fma(p, f, 0.1417100876569748f);
  p = fast::fma(p, f, -0.1663072556257248f);
  p = fast::fma(p, f, 0.20002968609333038f);
  p = fast::fma(p, f, -0.25000643730163574f);
  p = fast::fma(p, f, 0.3333330750465393f);
  const float r = fast::fma(f, p, -0.5f);
  const float logm = fast::fma(mul(f, f), r, f);
  const float ef = static_cast<float>(e);
  return fast::fma(ef, 0.693145752f, fast::fma(ef, 1.42860677e-06f, logm));
}

// sin and cos of 2 pi u for u = (w >> 8) 2^-24 (core/philox.hpp's
// uniform_f32 of the word w): with K = (w >> 8) + 2^21, the quarter turn is
// q = (K >> 22) mod 4 and the rest v = (K mod 2^22) - 2^21 in [-2^21, 2^21)
// (units of 2^-24 turns, exact integers), a = v (2 pi 2^-24) in [-pi/4, pi/4)
// (one rounding), polynomials in a^2 by Horner's rule with FMAs: sin a =
// a + a^3 S(a^2), cos a = 1 - a^2 / 2 + a^4 K(a^2), S and K of degree 2
// fitted (least squares, reweighted towards minimax) to the relative error
// on [-pi/4, pi/4], then the rotation by q quarter turns.
BARACUDA_HOST_DEVICE inline void sincos_word(uint32_t w, float& s_out, float& c_out) {
  using namespace baracuda::exact;
  const uint32_t k = (w >> 8) + (1u << 21);
  const int q = static_cast<int>(k >> 22) & 3;
  // v as a float without an int-to-float conversion (a quarter-rate
  // instruction on the GPU): 1.5 2^23 + v has v in its low mantissa bits
  // (|v| <= 2^21, one binade, ulp 1), minus 1.5 2^23 exactly.
  const float v = sub(from_bits(0x4b400000u + (k & 0x3fffffu) - (1u << 21)), 12582912.0f);  // exact
  const float a = mul(v, 0x1.921fb6p-22f);  // 2 pi 2^-24 (f32 2 pi, scaled exactly)
  const float a2 = mul(a, a);
  float ps = fast::fma(a2, -0.0001951528392964974f, 0.00833216030150652f);
  ps = fast::fma(a2, ps, -0.16666655242443085f);
  const float s = fast::fma(mul(a, a2), ps, a);
  float pc = fast::fma(a2, 2.44331567955669e-05f, -0.0013887316454201937f);
  pc = fast::fma(a2, pc, 0.04166664555668831f);
  pc = fast::fma(a2, pc, -0.5f);
  const float c = fast::fma(a2, pc, 1.0f);
  if (q == 0) s_out = s, c_out = c;
  else if (q == 1) s_out = c, c_out = -s;
  else if (q == 2) s_out = -s, c_out = -c;
  else s_out = -c, c_out = s;
}

}  // namespace baracuda::random::fast
