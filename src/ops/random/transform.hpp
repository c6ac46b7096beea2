// The random family's transforms from Philox words to values, shared by the
// CPU reference (reference.cpp) and the CUDA kernels (cuda/*.cu): the same
// source, compiled for both sides, with every float operation written through
// exact:: (core/exact_math.hpp), the f32 normal's explicit-FMA functions
// (exact_fast.hpp) or the f64 functions below, so a CUDA run and
// the CPU reference produce the same bits (include/baracuda/ops/random.hpp,
// "Stream layout").
//
// A generator `Gen` maps one Philox block (four words) to K consecutive
// elements of out: element i uses block i / K and the words of slot i % K:
//   K = 4: slot j uses word j (one-word transforms; Box-Muller f32: slots
//          2q, 2q+1 share words 2q, 2q+1)
//   K = 2: slot j uses words 2j (low) and 2j + 1 (high) (f64 uniform, f64
//          truncated normal, randint over ranges above 2^32; f64 Box-Muller:
//          both slots share all four words).
// Conversions to the output type go through a policy C (host: half /
// bfloat16 host types; device: __half / __nv_bfloat16), both rounding to
// nearest even: C::from_f(float), C::from_d(double), C::from_i(int64_t),
// C::to_f(T) (back to float, for the uniform's upper-bound rule).
#pragma once
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "baracuda/core/host_device.hpp"
#include "baracuda/core/philox.hpp"
#include "core/exact_math.hpp"
#include "ops/random/exact_fast.hpp"

namespace baracuda::random {

// Internal generators (RandomDistribution plus the randint word count and
// bernoulli's p source).
enum class Gen : int { Uniform, Normal, TruncNormal, Bernoulli, BernoulliTensor, RandInt32, RandInt64 };

template <Gen G, class T>
BARACUDA_HOST_DEVICE constexpr int gen_k() {
  if constexpr (G == Gen::Uniform || G == Gen::Normal || G == Gen::TruncNormal) return std::is_same_v<T, double> ? 2 : 4;
  else if constexpr (G == Gen::RandInt64) return 2;
  else return 4;
}

// Parameters of one draw, computed once on the host at select() (f64 fields
// for f64 outputs, f32 fields for f32 / f16 / bf16 outputs).
struct FillParams {
  // Uniform: v = low + width * u; a result equal to `high` in the output
  // dtype becomes `low` (torch's rule).
  double low = 0, width = 0, high = 0;
  float low_f = 0, width_f = 0, high_f = 0;
  // Normal: v = mean + std * z.
  double mean = 0, std = 0;
  float mean_f = 0, std_f = 0;
  // TruncNormal: x = tlo + twidth * u, y = erfinv(x), v = mean + tscale * y,
  // clamped to [a, b] (f32 fields for f32 / f16 / bf16, f64 fields for f64).
  float tlo_f = 0, twidth_f = 0, tscale_f = 0, a_f = 0, b_f = 0;
  double tlo = 0, twidth = 0, tscale = 0, a = 0, b = 0;
  // Bernoulli (scalar p): 1 where (w >> 8) < p_thr = ceil(p 2^24), i.e. u < p.
  uint32_t p_thr = 0;
  // RandInt: low + floor(word(s) * range / 2^32 (2^64)).
  int64_t ilow = 0;
  uint64_t irange = 0;
};

// ---- exact f64 functions (same technique as core/exact_math.hpp) -------------------------
namespace exact64 {

BARACUDA_HOST_DEVICE inline uint64_t bits(double a) {
#if defined(__CUDA_ARCH__)
  return static_cast<uint64_t>(__double_as_longlong(a));
#else
  uint64_t b;
  std::memcpy(&b, &a, 8);
  return b;
#endif
}
BARACUDA_HOST_DEVICE inline double from_bits(uint64_t b) {
#if defined(__CUDA_ARCH__)
  return __longlong_as_double(static_cast<long long>(b));
#else
  double a;
  std::memcpy(&a, &b, 8);
  return a;
#endif
}

// log of a positive normal double: m in [sqrt(1/2), sqrt(2)), s = (m-1)/(m+1),
// log m = 2s (1 + z/3 + z^2/5 + ... + z^12/25), z = s^2 <= 0.0295; ln 2 split
// in hi + lo with hi's low 32 bits zero (e * hi exact for |e| < 2^11).
BARACUDA_HOST_DEVICE inline double log(double x) {
  using namespace baracuda::exact;
  const uint64_t b = bits(x);
  int e = static_cast<int>(b >> 52) - 1023;
  double m = from_bits((b & 0xfffffffffffffull) | 0x3ff0000000000000ull);
  if (m > 1.4142135623730951) m = mul(m, 0.5), e += 1;
  const double f = sub(m, 1.0);
  const double s = div(f, add(2.0, f));
  const double z = mul(s, s);
  double p = 1.0 / 25;
  p = add(1.0 / 23, mul(z, p));
  p = add(1.0 / 21, mul(z, p));
  p = add(1.0 / 19, mul(z, p));
  p = add(1.0 / 17, mul(z, p));
  p = add(1.0 / 15, mul(z, p));
  p = add(1.0 / 13, mul(z, p));
  p = add(1.0 / 11, mul(z, p));
  p = add(1.0 / 9, mul(z, p));
  p = add(1.0 / 7, mul(z, p));
  p = add(1.0 / 5, mul(z, p));
  p = add(1.0 / 3, mul(z, p));
  const double s2 = mul(s, 2.0);
  const double logm = add(s2, mul(s2, mul(z, p)));
  const double ed = static_cast<double>(e);
  return add(mul(ed, 6.93147180369123816490e-01), add(logm, mul(ed, 1.90821492927058770002e-10)));
}

// sin(2 pi u), cos(2 pi u) for u in [0, 1]: quarter turns as exact::sincos_2pi,
// Taylor polynomials to a^19 / a^20 on [-pi/4, pi/4].
BARACUDA_HOST_DEVICE inline void sincos_2pi(double u, double& s_out, double& c_out) {
  using namespace baracuda::exact;
  const double k = std::floor(add(mul(u, 4.0), 0.5));
  const double v = sub(u, mul(k, 0.25));
  const double a = mul(v, 6.283185307179586);
  const double a2 = mul(a, a);
  double ps = -1.0 / 121645100408832000.0;             // -1/19!
  ps = add(1.0 / 355687428096000.0, mul(a2, ps));      // 1/17!
  ps = add(-1.0 / 1307674368000.0, mul(a2, ps));       // -1/15!
  ps = add(1.0 / 6227020800.0, mul(a2, ps));           // 1/13!
  ps = add(-1.0 / 39916800.0, mul(a2, ps));            // -1/11!
  ps = add(1.0 / 362880.0, mul(a2, ps));               // 1/9!
  ps = add(-1.0 / 5040.0, mul(a2, ps));                // -1/7!
  ps = add(1.0 / 120.0, mul(a2, ps));                  // 1/5!
  ps = add(-1.0 / 6.0, mul(a2, ps));                   // -1/3!
  const double s = add(a, mul(mul(a, a2), ps));
  double pc = 1.0 / 2432902008176640000.0;             // 1/20!
  pc = add(-1.0 / 6402373705728000.0, mul(a2, pc));    // -1/18!
  pc = add(1.0 / 20922789888000.0, mul(a2, pc));       // 1/16!
  pc = add(-1.0 / 87178291200.0, mul(a2, pc));         // -1/14!
  pc = add(1.0 / 479001600.0, mul(a2, pc));            // 1/12!
  pc = add(-1.0 / 3628800.0, mul(a2, pc));             // -1/10!
  pc = add(1.0 / 40320.0, mul(a2, pc));                // 1/8!
  pc = add(-1.0 / 720.0, mul(a2, pc));                 // -1/6!
  pc = add(1.0 / 24.0, mul(a2, pc));                   // 1/4!
  pc = add(-0.5, mul(a2, pc));
  const double c = add(1.0, mul(a2, pc));
  const int q = static_cast<int>(k) & 3;
  if (q == 0) s_out = s, c_out = c;
  else if (q == 1) s_out = c, c_out = -s;
  else if (q == 2) s_out = -s, c_out = -c;
  else s_out = -c, c_out = s;
}

// exp(x) for x in [-708, 0]: x = k ln 2 + r, |r| <= ln 2 / 2 (ln 2 in hi + lo
// as log), Taylor to r^13, times 2^k built from its bits.
BARACUDA_HOST_DEVICE inline double exp(double x) {
  using namespace baracuda::exact;
  if (x < -708.0) x = -708.0;
  const double k = std::floor(add(mul(x, 1.4426950408889634), 0.5));
  const double r = sub(sub(x, mul(k, 6.93147180369123816490e-01)), mul(k, 1.90821492927058770002e-10));
  double p = 1.0 / 6227020800.0;                      // 1/13!
  p = add(1.0 / 479001600.0, mul(r, p));              // 1/12!
  p = add(1.0 / 39916800.0, mul(r, p));               // 1/11!
  p = add(1.0 / 3628800.0, mul(r, p));                // 1/10!
  p = add(1.0 / 362880.0, mul(r, p));                 // 1/9!
  p = add(1.0 / 40320.0, mul(r, p));                  // 1/8!
  p = add(1.0 / 5040.0, mul(r, p));                   // 1/7!
  p = add(1.0 / 720.0, mul(r, p));                    // 1/6!
  p = add(1.0 / 120.0, mul(r, p));                    // 1/5!
  p = add(1.0 / 24.0, mul(r, p));                     // 1/4!
  p = add(1.0 / 6.0, mul(r, p));                      // 1/3!
  p = add(0.5, mul(r, p));
  p = add(1.0, mul(r, p));
  p = add(1.0, mul(r, p));
  return mul(p, from_bits(static_cast<uint64_t>(static_cast<int64_t>(k) + 1023) << 52));
}

// erf(y) for |y| <= 2: the Maclaurin series (2/sqrt(pi)) sum (-1)^n
// y^(2n+1) / (n! (2n+1)), 40 terms (about 1e-15 relative).
BARACUDA_HOST_DEVICE inline double erf_small(double y) {
  using namespace baracuda::exact;
  const double m = -mul(y, y);
  double t = y, sum = y;
  for (int n = 1; n <= 40; ++n) {
    t = div(mul(t, m), static_cast<double>(n));
    sum = add(sum, div(t, static_cast<double>(2 * n + 1)));
  }
  return mul(sum, 1.1283791670955126);  // 2 / sqrt(pi)
}

// erfc(y) for y >= 2: exp(-y^2) / (sqrt(pi) K), K = y + (1/2) / (y + 1 / (y +
// (3/2) / (y + ...))), the continued fraction evaluated from 60 levels up
// (about 4e-15 relative).
BARACUDA_HOST_DEVICE inline double erfc_large(double y, double* fraction = nullptr) {
  using namespace baracuda::exact;
  double f = y;
  for (int k = 60; k >= 1; --k) f = add(y, div(mul(0.5, static_cast<double>(k)), f));
  if (fraction) *fraction = f;
  return div(exact64::exp(-mul(y, y)), mul(1.7724538509055159, f));  // sqrt(pi)
}

}  // namespace exact64

// erfinv(x) for x in [-1, 1] in f32 (M. Giles, "Approximating the erfinv
// function", GPU Computing Gems, 2010: single-precision polynomials in
// w = -log((1 - x)(1 + x))), through exact:: operations; about 4e-7
// relative error. x = +-1 gives a large finite value (the caller clamps).
BARACUDA_HOST_DEVICE inline float erfinv_f32(float x) {
  using namespace baracuda::exact;
  float t = mul(sub(1.0f, x), add(1.0f, x));
  if (!(t > 1.17549435e-38f)) t = 1.17549435e-38f;  // smallest normal: exact::log needs a normal float
  float w = -baracuda::exact::log(t);
  float p;
  if (w < 5.0f) {
    w = sub(w, 2.5f);
    p = 2.81022636e-08f;
    p = add(3.43273939e-07f, mul(p, w));
    p = add(-3.5233877e-06f, mul(p, w));
    p = add(-4.39150654e-06f, mul(p, w));
    p = add(0.00021858087f, mul(p, w));
    p = add(-0.00125372503f, mul(p, w));
    p = add(-0.00417768164f, mul(p, w));
    p = add(0.246640727f, mul(p, w));
    p = add(1.50140941f, mul(p, w));
  } else {
    w = sub(baracuda::exact::sqrt(w), 3.0f);
    p = -0.000200214257f;
    p = add(0.000100950558f, mul(p, w));
    p = add(0.00134934322f, mul(p, w));
    p = add(-0.00367342844f, mul(p, w));
    p = add(0.00573950773f, mul(p, w));
    p = add(-0.0076224613f, mul(p, w));
    p = add(0.00943887047f, mul(p, w));
    p = add(1.00167406f, mul(p, w));
    p = add(2.83297682f, mul(p, w));
  }
  return mul(p, x);
}

// erfinv(x) in f64: Giles' f32 polynomials (evaluated in f64, w from the f64
// log) as the start, then four Newton steps on erf(y) = x with the f64 erf
// above (for |y| > 2 on log erfc and the exact 1 - |x|, so the tails keep
// their precision): within 3e-14 relative (near |y| = 2, from erf_small),
// about 1e-15 elsewhere. x <= -1 / >= 1 give -inf / +inf.
// (Four steps, always: the same operations on both backends.)
BARACUDA_HOST_DEVICE inline double erfinv_f64(double x) {
  using namespace baracuda::exact;
  if (!(x > -1.0)) return exact64::from_bits(0xfff0000000000000ull);
  if (!(x < 1.0)) return exact64::from_bits(0x7ff0000000000000ull);
  double w = -exact64::log(mul(sub(1.0, x), add(1.0, x)));
  double p;
  if (w < 5.0) {
    w = sub(w, 2.5);
    p = 2.81022636e-08;
    p = add(3.43273939e-07, mul(p, w));
    p = add(-3.5233877e-06, mul(p, w));
    p = add(-4.39150654e-06, mul(p, w));
    p = add(0.00021858087, mul(p, w));
    p = add(-0.00125372503, mul(p, w));
    p = add(-0.00417768164, mul(p, w));
    p = add(0.246640727, mul(p, w));
    p = add(1.50140941, mul(p, w));
  } else {
    w = sub(sqrt(w), 3.0);
    p = -0.000200214257;
    p = add(0.000100950558, mul(p, w));
    p = add(0.00134934322, mul(p, w));
    p = add(-0.00367342844, mul(p, w));
    p = add(0.00573950773, mul(p, w));
    p = add(-0.0076224613, mul(p, w));
    p = add(0.00943887047, mul(p, w));
    p = add(1.00167406, mul(p, w));
    p = add(2.83297682, mul(p, w));
  }
  double y = mul(p, x);
  // |y| > 2: Newton on log erfc(|y|) = log(1 - |x|) (1 - |x| exact there),
  // nearly linear in y^2, whose derivative is -2K (erfc_large's fraction);
  // else Newton on erf(y) = x.
  const double ax = x < 0 ? -x : x;
  const double log_t = exact64::log(sub(1.0, ax));
  for (int it = 0; it < 4; ++it) {
    const double ay = y < 0 ? -y : y;
    if (ay > 2.0) {
      double k;
      const double e = exact64::erfc_large(ay, &k);
      const double step = div(sub(exact64::log(e), log_t), mul(2.0, k));
      y = y < 0 ? sub(y, step) : add(y, step);
    } else {
      const double d = mul(1.1283791670955126, exact64::exp(-mul(y, y)));  // erf'(y)
      y = sub(y, div(sub(exact64::erf_small(y), x), d));
    }
  }
  return y;
}

// floor(x * r / 2^64) (randint over ranges above 2^32).
BARACUDA_HOST_DEVICE inline uint64_t mulhi64(uint64_t x, uint64_t r) {
#if defined(__CUDA_ARCH__)
  return __umul64hi(x, r);
#else
  return static_cast<uint64_t>((static_cast<unsigned __int128>(x) * r) >> 64);
#endif
}

// The K elements of one block. p: bernoulli tensor probabilities of the K
// elements (BernoulliTensor only; elements past the end hold anything).
template <Gen G, class T, class C>
BARACUDA_HOST_DEVICE inline void gen_block(const FillParams& q, const PhiloxWords& w, const double* p, T* out) {
  using namespace baracuda::exact;
  constexpr bool kF64 = std::is_same_v<T, double>;
  if constexpr (G == Gen::Uniform) {
    if constexpr (kF64) {
      for (int j = 0; j < 2; ++j) {
        double v = add(q.low, mul(q.width, uniform_f64(w.w[2 * j], w.w[2 * j + 1])));
        out[j] = v == q.high ? q.low : v;
      }
    } else {
      const float hi = C::to_f(C::from_f(q.high_f));
      for (int j = 0; j < 4; ++j) {
        const T v = C::from_f(add(q.low_f, mul(q.width_f, uniform_f32(w.w[j]))));
        out[j] = C::to_f(v) == hi ? C::from_f(q.low_f) : v;
      }
    }
  } else if constexpr (G == Gen::Normal) {
    if constexpr (kF64) {
      const double u1 = uniform_open0_f64(w.w[0], w.w[1]), u2 = uniform_f64(w.w[2], w.w[3]);
      const double r = sqrt(mul(-2.0, exact64::log(u1)));
      double s, c;
      exact64::sincos_2pi(u2, s, c);
      out[0] = add(q.mean, mul(q.std, mul(r, c)));
      out[1] = add(q.mean, mul(q.std, mul(r, s)));
    } else {
      // u1 = uniform_open0_f32(word 2h), u2 = uniform_f32(word 2h + 1); the
      // functions of exact_fast.hpp (explicit FMAs), then mean + (std r) cos
      // and mean + (std r) sin with one rounding each.
      for (int h = 0; h < 2; ++h) {
        const float r = sqrt(mul(-2.0f, fast::log_u24((w.w[2 * h] >> 8) + 1u)));
        float s, c;
        fast::sincos_word(w.w[2 * h + 1], s, c);
        const float rs = mul(q.std_f, r);
        out[2 * h] = C::from_f(fast::fma(rs, c, q.mean_f));
        out[2 * h + 1] = C::from_f(fast::fma(rs, s, q.mean_f));
      }
    }
  } else if constexpr (G == Gen::TruncNormal) {
    if constexpr (kF64) {
      for (int j = 0; j < 2; ++j) {
        const double y = erfinv_f64(add(q.tlo, mul(q.twidth, uniform_f64(w.w[2 * j], w.w[2 * j + 1]))));
        double v = add(q.mean, mul(q.tscale, y));
        out[j] = v < q.a ? q.a : (v > q.b ? q.b : v);
      }
    } else {
      for (int j = 0; j < 4; ++j) {
        const float y = erfinv_f32(add(q.tlo_f, mul(q.twidth_f, uniform_f32(w.w[j]))));
        float v = add(q.mean_f, mul(q.tscale_f, y));
        v = v < q.a_f ? q.a_f : (v > q.b_f ? q.b_f : v);
        out[j] = C::from_f(v);
      }
    }
  } else if constexpr (G == Gen::Bernoulli) {
    for (int j = 0; j < 4; ++j) out[j] = C::from_f((w.w[j] >> 8) < q.p_thr ? 1.0f : 0.0f);
  } else if constexpr (G == Gen::BernoulliTensor) {
    for (int j = 0; j < 4; ++j)
      out[j] = C::from_f(static_cast<double>(uniform_f32(w.w[j])) < p[j] ? 1.0f : 0.0f);
  } else if constexpr (G == Gen::RandInt32) {
    for (int j = 0; j < 4; ++j)
      out[j] = C::from_i(q.ilow + static_cast<int64_t>((static_cast<uint64_t>(w.w[j]) * q.irange) >> 32));
  } else {  // RandInt64
    for (int j = 0; j < 2; ++j) {
      const uint64_t x = (static_cast<uint64_t>(w.w[2 * j + 1]) << 32) | w.w[2 * j];
      out[j] = C::from_i(static_cast<int64_t>(static_cast<uint64_t>(q.ilow) + mulhi64(x, q.irange)));
    }
  }
}

// Dropout: element i keeps x where (word i % 4 of block i / 4) >> 8 >= keep_thr
// (keep_thr = ceil(p 2^24): u >= p); 8 elements (one mask byte) per two blocks.
BARACUDA_HOST_DEVICE inline uint32_t dropout_bits8(uint64_t seed, uint64_t offset, uint64_t chunk, uint32_t keep_thr) {
  uint32_t m = 0;
  for (int h = 0; h < 2; ++h) {
    const PhiloxWords w = philox_block(seed, offset, 2 * chunk + h);
    for (int j = 0; j < 4; ++j) m |= ((w.w[j] >> 8) >= keep_thr ? 1u : 0u) << (4 * h + j);
  }
  return m;
}

}  // namespace baracuda::random
