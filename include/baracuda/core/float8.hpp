// Host 8-bit float types: 1-byte storage with the bit layouts of CUDA's
// __nv_fp8_e4m3 / __nv_fp8_e5m2 (the OCP FP8 formats), usable without the CUDA
// toolkit.
//
//   float8_e4m3: sign, 4 exponent bits (bias 7), 3 mantissa bits. No infinity;
//                NaN is S.1111.111 (0x7f / 0xff); largest finite 448 (0x7e);
//                smallest subnormal 2^-9 (0x01). PyTorch: torch.float8_e4m3fn.
//   float8_e5m2: sign, 5 exponent bits (bias 15), 2 mantissa bits, IEEE-like:
//                infinity 0x7c, NaN 0x7d..0x7f; largest finite 57344 (0x7b);
//                smallest subnormal 2^-16 (0x01). PyTorch: torch.float8_e5m2.
//
// Conversions to fp8 round to nearest even, from the float or double value
// itself (one rounding: a double is not rounded to float first). Out-of-range
// values follow PyTorch's Float8_e4m3fn / Float8_e5m2 casts, NOT CUDA's
// saturating __nv_fp8 constructors:
//   e4m3: a value that rounds past 448 (|x| > 464 after rounding, i.e. from
//         464 exclusive), +-infinity and NaN all become NaN (0x7f, sign kept).
//   e5m2: a value that rounds past 57344 (|x| >= 61440) and +-infinity become
//         +-infinity (0x7c / 0xfc); NaN becomes 0x7f (sign kept).
// Conversions from fp8 to float/double are exact (NaN stays NaN).
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace baracuda {

namespace detail {

// A small binary float format: E exponent bits, M mantissa bits, bias 2^(E-1)-1.
template <int E, int M>
struct MiniFloat {
  static constexpr int kBias = (1 << (E - 1)) - 1;
  static constexpr int kMinExp = 1 - kBias;  // exponent of the smallest normal

  // The rounded magnitude of |x| as an unsigned code (exponent field << M |
  // mantissa), before any overflow rule; may exceed the format's range.
  // Requires x finite.
  static uint32_t round_magnitude(double x) {
    uint64_t bits;
    std::memcpy(&bits, &x, 8);
    const int exp_field = static_cast<int>((bits >> 52) & 0x7ff);
    if (exp_field == 0) return 0;  // zero or a double subnormal: far below half the smallest fp8 subnormal
    const uint64_t sig = (bits & ((uint64_t{1} << 52) - 1)) | (uint64_t{1} << 52);  // 53-bit significand
    const int e = exp_field - 1023;  // |x| = sig * 2^(e - 52)
    // The result's quantum is 2^(max(e, kMinExp) - M): drop `shift` bits of sig.
    const int shift = 52 - M + (e < kMinExp ? kMinExp - e : 0);
    if (shift > 53) return 0;  // below half the smallest subnormal
    uint64_t q = sig >> shift;
    const uint64_t rem = sig & ((uint64_t{1} << shift) - 1);
    const uint64_t halfway = uint64_t{1} << (shift - 1);
    if (rem > halfway || (rem == halfway && (q & 1))) ++q;  // to nearest, ties to even
    // Subnormal range: q is the code itself (q == 2^M carries into the smallest
    // normal). Normal range: q in [2^M, 2^(M+1)] and the implicit leading one
    // adds one to the exponent field, so the code is ((e + bias - 1) << M) + q;
    // a carry to 2^(M+1) moves to the next exponent.
    if (e < kMinExp) return static_cast<uint32_t>(q);
    return (static_cast<uint32_t>(e + kBias - 1) << M) + static_cast<uint32_t>(q);
  }

  // Exact value of a code (sign bit excluded; NaN / infinity codes are the caller's).
  static double magnitude(uint32_t code) {
    const uint32_t exp_field = code >> M, man = code & ((1u << M) - 1);
    if (exp_field == 0) return std::ldexp(static_cast<double>(man), kMinExp - M);  // subnormal
    return std::ldexp(static_cast<double>(man | (1u << M)), static_cast<int>(exp_field) - kBias - M);
  }
};

inline uint64_t f64_bits(double d) { uint64_t u; std::memcpy(&u, &d, 8); return u; }

inline uint8_t f64_to_e4m3_bits(double x) {
  const uint8_t sign = (f64_bits(x) >> 63) ? 0x80 : 0x00;
  const uint64_t abs_bits = f64_bits(x) & ~(uint64_t{1} << 63);
  if (abs_bits >= 0x7ff0000000000000ull) return sign | 0x7f;  // inf, NaN -> NaN
  double a; std::memcpy(&a, &abs_bits, 8);
  const uint32_t code = MiniFloat<4, 3>::round_magnitude(a);
  return code > 0x7e ? (sign | 0x7f) : static_cast<uint8_t>(sign | code);  // past 448 -> NaN
}
inline uint8_t f64_to_e5m2_bits(double x) {
  const uint8_t sign = (f64_bits(x) >> 63) ? 0x80 : 0x00;
  const uint64_t abs_bits = f64_bits(x) & ~(uint64_t{1} << 63);
  if (abs_bits > 0x7ff0000000000000ull) return sign | 0x7f;    // NaN
  if (abs_bits == 0x7ff0000000000000ull) return sign | 0x7c;   // inf
  double a; std::memcpy(&a, &abs_bits, 8);
  const uint32_t code = MiniFloat<5, 2>::round_magnitude(a);
  return code >= 0x7c ? (sign | 0x7c) : static_cast<uint8_t>(sign | code);  // past 57344 -> inf
}

inline double signed_value(uint8_t b, double magnitude) { return (b & 0x80) ? -magnitude : magnitude; }

inline double e4m3_bits_to_f64(uint8_t b) {
  const uint32_t code = b & 0x7fu;
  if (code == 0x7f) return signed_value(b, std::numeric_limits<double>::quiet_NaN());
  return signed_value(b, MiniFloat<4, 3>::magnitude(code));
}
inline double e5m2_bits_to_f64(uint8_t b) {
  const uint32_t code = b & 0x7fu;
  if (code == 0x7c) return signed_value(b, std::numeric_limits<double>::infinity());
  if (code > 0x7c) return signed_value(b, std::numeric_limits<double>::quiet_NaN());
  return signed_value(b, MiniFloat<5, 2>::magnitude(code));
}

}  // namespace detail

struct float8_e4m3 {
  uint8_t bits = 0;
  float8_e4m3() = default;
  explicit float8_e4m3(float f) : bits(detail::f64_to_e4m3_bits(static_cast<double>(f))) {}
  explicit float8_e4m3(double d) : bits(detail::f64_to_e4m3_bits(d)) {}
  explicit operator float() const { return static_cast<float>(detail::e4m3_bits_to_f64(bits)); }
  explicit operator double() const { return detail::e4m3_bits_to_f64(bits); }
  static float8_e4m3 from_bits(uint8_t b) { float8_e4m3 h; h.bits = b; return h; }
};

struct float8_e5m2 {
  uint8_t bits = 0;
  float8_e5m2() = default;
  explicit float8_e5m2(float f) : bits(detail::f64_to_e5m2_bits(static_cast<double>(f))) {}
  explicit float8_e5m2(double d) : bits(detail::f64_to_e5m2_bits(d)) {}
  explicit operator float() const { return static_cast<float>(detail::e5m2_bits_to_f64(bits)); }
  explicit operator double() const { return detail::e5m2_bits_to_f64(bits); }
  static float8_e5m2 from_bits(uint8_t b) { float8_e5m2 h; h.bits = b; return h; }
};

static_assert(sizeof(float8_e4m3) == 1 && sizeof(float8_e5m2) == 1);
static_assert(alignof(float8_e4m3) == 1 && alignof(float8_e5m2) == 1);

}  // namespace baracuda
