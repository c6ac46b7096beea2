// Host 16-bit float types. Storage-only (16 bits), binary compatible with
// CUDA's __half / __nv_bfloat16, usable without the CUDA toolkit.
// Conversions from float round to nearest even; NaN stays NaN. Conversions
// from double go through float, so they can round twice (off by one ulp of
// the 16-bit type in rare halfway cases).
#pragma once
#include <cstdint>
#include <cstring>

namespace baracuda {

namespace detail {
inline uint32_t f32_bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bits_f32(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t f32_to_f16_bits(float f) {
  const uint32_t x = f32_bits(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  const uint32_t absx = x & 0x7fffffffu;
  if (absx > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (absx >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u); // overflow -> inf
  if (absx < 0x38800000u) {  // result is subnormal or zero in half
    // value = absx as float; half subnormal unit = 2^-24.
    const float v = bits_f32(absx);
    // scale to units of 2^-24 and round to nearest even via float arithmetic
    const float scaled = v * 16777216.0f;  // exact (power of two)
    // rint-half-even of scaled (scaled < 1024 so float holds it exactly enough)
    float r = static_cast<float>(static_cast<int32_t>(scaled));
    const float frac = scaled - r;
    if (frac > 0.5f || (frac == 0.5f && (static_cast<int32_t>(r) & 1))) r += 1.0f;
    return static_cast<uint16_t>(sign | static_cast<uint32_t>(r));
  }
  // normal: rebias exponent 127 -> 15, round mantissa 23 -> 10 bits (RNE)
  uint32_t m = absx + 0xfff + ((absx >> 13) & 1);  // round-to-nearest-even on bit 13
  m -= (112u << 23);
  return static_cast<uint16_t>(sign | (m >> 13));
}

inline float f16_bits_to_f32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exp = (h >> 10) & 0x1f;
  const uint32_t man = h & 0x3ffu;
  if (exp == 0) {
    const float v = static_cast<float>(man) * (1.0f / 16777216.0f);  // man * 2^-24
    return sign ? -v : v;
  }
  if (exp == 31) return bits_f32(sign | 0x7f800000u | (man << 13));
  return bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}

inline uint16_t f32_to_bf16_bits(float f) {
  const uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);  // quiet NaN
  const uint32_t rounding = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<uint16_t>((x + rounding) >> 16);
}
inline float bf16_bits_to_f32(uint16_t b) { return bits_f32(static_cast<uint32_t>(b) << 16); }
}  // namespace detail

struct half {
  uint16_t bits = 0;
  half() = default;
  explicit half(float f) : bits(detail::f32_to_f16_bits(f)) {}
  explicit half(double d) : half(static_cast<float>(d)) {}
  explicit operator float() const { return detail::f16_bits_to_f32(bits); }
  explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }
  static half from_bits(uint16_t b) { half h; h.bits = b; return h; }
};

struct bfloat16 {
  uint16_t bits = 0;
  bfloat16() = default;
  explicit bfloat16(float f) : bits(detail::f32_to_bf16_bits(f)) {}
  explicit bfloat16(double d) : bfloat16(static_cast<float>(d)) {}
  explicit operator float() const { return detail::bf16_bits_to_f32(bits); }
  explicit operator double() const { return static_cast<double>(static_cast<float>(*this)); }
  static bfloat16 from_bits(uint16_t b) { bfloat16 h; h.bits = b; return h; }
};

static_assert(sizeof(half) == 2 && sizeof(bfloat16) == 2);

}  // namespace baracuda
