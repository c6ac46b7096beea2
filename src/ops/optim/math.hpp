// The optimizers' per-element formulas (include/baracuda/ops/optim.hpp), written
// ONCE for the CPU reference and the CUDA kernels. Every f32 operation goes
// through core/exact_math.hpp (no FMA contraction on the device, none on the
// host), so both backends round identically and give the same bits. The
// per-step scalars are computed in f64 from (lr, step) by the same code on
// both sides (beta^step by exponentiation by squaring: IEEE multiplications
// only) and rounded once to f32.
//
// The formulas are checked against hand-computed torch steps in
// tests/optim/cpu_optim.cpp (so they cannot drift from torch's).
#pragma once
#include <cstdint>
#include <cstring>

#include "baracuda/core/half.hpp"
#include "baracuda/core/host_device.hpp"
#include "baracuda/core/philox.hpp"
#include "core/exact_math.hpp"

#if defined(__CUDACC__)
#include <cuda_fp16.h>
#endif

namespace baracuda::optim {

namespace xm = baracuda::exact;

// b^e for e >= 0 (e = 0: 1).
BARACUDA_HOST_DEVICE inline double pow_int(double b, int64_t e) {
  double r = 1.0;
  while (e > 0) {
    if (e & 1) r = xm::mul(r, b);
    b = xm::mul(b, b);
    e >>= 1;
  }
  return r;
}

// Adam's device step (an f32 counter) as an integer, the same on host and
// device: a plain cast is undefined for NaN and out-of-range values (x86 gives
// INT64_MIN, CUDA saturates, so a garbage step_tensor gave different updates).
// Truncated toward zero; NaN and values <= 0 count as 0, values >= 2^62 as 2^62.
BARACUDA_HOST_DEVICE inline int64_t step_from_f32(float s) {
  if (!(s > 0.0f)) return 0;
  if (s >= 4611686018427387904.0f) return int64_t{1} << 62;
  return static_cast<int64_t>(s);
}

BARACUDA_HOST_DEVICE inline float nan_max(float a, float b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

BARACUDA_HOST_DEVICE inline float sign_of(float c) {
  if (c > 0.0f) return 1.0f;
  if (c < 0.0f) return -1.0f;
  return c == 0.0f ? 0.0f : c;  // NaN stays NaN
}

// ---- rounding to the parameter dtype ----
BARACUDA_HOST_DEVICE inline uint32_t f32_bits_hd(float f) { return xm::bits(f); }

// Round to nearest even (NaN -> a quiet NaN), as detail::f32_to_bf16_bits.
BARACUDA_HOST_DEVICE inline uint16_t bf16_rne(float f) {
  const uint32_t x = f32_bits_hd(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((x >> 16) | 0x40u);
  return static_cast<uint16_t>((x + 0x7fffu + ((x >> 16) & 1u)) >> 16);
}

// Stochastic rounding with the random word r (its low 16 bits): unbiased for
// finite x; a non-finite x rounds to nearest. An addition that carries into
// the exponent rounds up to the next binade (or to inf past the largest
// finite bf16: the value was within one bf16 ulp of it).
BARACUDA_HOST_DEVICE inline uint16_t bf16_stochastic(float f, uint32_t r) {
  const uint32_t x = f32_bits_hd(f);
  if ((x & 0x7f800000u) == 0x7f800000u) return bf16_rne(f);
  return static_cast<uint16_t>((x + (r & 0xffffu)) >> 16);
}

BARACUDA_HOST_DEVICE inline uint16_t f16_rne(float f) {
#if defined(__CUDA_ARCH__)
  return __half_as_ushort(__float2half_rn(f));
#else
  return detail::f32_to_f16_bits(f);
#endif
}

BARACUDA_HOST_DEVICE inline float bf16_to_f32(uint16_t b) { return xm::from_bits(static_cast<uint32_t>(b) << 16); }

// The Philox word of global element e of a stochastic-rounding draw.
BARACUDA_HOST_DEVICE inline uint32_t sr_word(uint64_t seed, uint64_t offset, uint64_t e) {
  return philox_block(seed, offset, e / 4).w[e % 4];
}

// ---- per-step scalars ----
struct AdamConsts {
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8, wd = 0.0;
  bool decoupled = true, amsgrad = false, maximize = false;
};

struct AdamScalars {
  float step_size, bc2_sqrt, eps, beta2, omb1, omb2, decay, wd;
  bool decoupled, amsgrad, maximize, has_wd;
};

BARACUDA_HOST_DEVICE inline AdamScalars adam_scalars(const AdamConsts& c, double lr, int64_t step) {
  AdamScalars s;
  const double bc1 = xm::sub(1.0, pow_int(c.beta1, step));
  const double bc2 = xm::sub(1.0, pow_int(c.beta2, step));
  s.step_size = static_cast<float>(xm::div(lr, bc1));
  s.bc2_sqrt = static_cast<float>(xm::sqrt(bc2));
  s.eps = static_cast<float>(c.eps);
  s.beta2 = static_cast<float>(c.beta2);
  s.omb1 = static_cast<float>(xm::sub(1.0, c.beta1));
  s.omb2 = static_cast<float>(xm::sub(1.0, c.beta2));
  s.decay = static_cast<float>(xm::sub(1.0, xm::mul(lr, c.wd)));
  s.wd = static_cast<float>(c.wd);
  s.decoupled = c.decoupled, s.amsgrad = c.amsgrad, s.maximize = c.maximize, s.has_wd = c.wd != 0.0;
  return s;
}

// torch's lerp(self, end, w) with its two branches.
BARACUDA_HOST_DEVICE inline float lerp_torch(float self, float end, float w) {
  return w < 0.5f ? xm::add(self, xm::mul(w, xm::sub(end, self)))
                  : xm::sub(end, xm::mul(xm::sub(end, self), xm::sub(1.0f, w)));
}

// One Adam / AdamW element. g: the gradient already divided by grad_scale.
BARACUDA_HOST_DEVICE inline void adam_elem(const AdamScalars& s, float& p, float g, float& m, float& v, float& vmax) {
  if (s.maximize) g = -g;
  if (s.has_wd) {
    if (s.decoupled) p = xm::mul(p, s.decay);
    else g = xm::add(g, xm::mul(s.wd, p));
  }
  m = lerp_torch(m, g, s.omb1);
  v = xm::add(xm::mul(s.beta2, v), xm::mul(xm::mul(s.omb2, g), g));
  float vv = v;
  if (s.amsgrad) vv = vmax = nan_max(vmax, v);
  const float denom = xm::add(xm::div(xm::sqrt(vv), s.bc2_sqrt), s.eps);
  p = xm::sub(p, xm::div(xm::mul(s.step_size, m), denom));
}

struct SgdConsts {
  double momentum = 0.0, dampening = 0.0, wd = 0.0;
  bool nesterov = false, maximize = false, first = false;
};

struct SgdScalars {
  float lr, momentum, omd, wd;
  bool has_momentum, nesterov, maximize, has_wd, first;
};

BARACUDA_HOST_DEVICE inline SgdScalars sgd_scalars(const SgdConsts& c, double lr) {
  SgdScalars s;
  s.lr = static_cast<float>(lr);
  s.momentum = static_cast<float>(c.momentum);
  s.omd = static_cast<float>(xm::sub(1.0, c.dampening));
  s.wd = static_cast<float>(c.wd);
  s.has_momentum = c.momentum != 0.0, s.nesterov = c.nesterov, s.maximize = c.maximize, s.has_wd = c.wd != 0.0;
  s.first = c.first;
  return s;
}

BARACUDA_HOST_DEVICE inline void sgd_elem(const SgdScalars& s, float& p, float g, float& buf) {
  if (s.maximize) g = -g;
  if (s.has_wd) g = xm::add(g, xm::mul(s.wd, p));
  if (s.has_momentum) {
    buf = s.first ? g : xm::add(xm::mul(s.momentum, buf), xm::mul(s.omd, g));
    g = s.nesterov ? xm::add(g, xm::mul(s.momentum, buf)) : buf;
  }
  p = xm::sub(p, xm::mul(s.lr, g));
}

struct LionConsts {
  double beta1 = 0.9, beta2 = 0.99, wd = 0.0;
  bool maximize = false;
};

struct LionScalars {
  float lr, beta1, omb1, beta2, omb2, decay;
  bool maximize, has_wd;
};

BARACUDA_HOST_DEVICE inline LionScalars lion_scalars(const LionConsts& c, double lr) {
  LionScalars s;
  s.lr = static_cast<float>(lr);
  s.beta1 = static_cast<float>(c.beta1);
  s.omb1 = static_cast<float>(xm::sub(1.0, c.beta1));
  s.beta2 = static_cast<float>(c.beta2);
  s.omb2 = static_cast<float>(xm::sub(1.0, c.beta2));
  s.decay = static_cast<float>(xm::sub(1.0, xm::mul(lr, c.wd)));
  s.maximize = c.maximize, s.has_wd = c.wd != 0.0;
  return s;
}

BARACUDA_HOST_DEVICE inline void lion_elem(const LionScalars& s, float& p, float g, float& m) {
  if (s.maximize) g = -g;
  const float c = xm::add(xm::mul(s.beta1, m), xm::mul(s.omb1, g));
  if (s.has_wd) p = xm::mul(p, s.decay);
  p = xm::sub(p, xm::mul(s.lr, sign_of(c)));
  m = xm::add(xm::mul(s.beta2, m), xm::mul(s.omb2, g));
}

// clip_grad_norm_'s coefficient from the f32 total norm.
BARACUDA_HOST_DEVICE inline float clip_coef(float max_norm, float total) {
  const float c = xm::div(max_norm, xm::add(total, 1e-6f));
  return c > 1.0f ? 1.0f : c;  // NaN stays NaN (torch.clamp(max=1))
}

BARACUDA_HOST_DEVICE inline bool finite_f32(float x) { return (xm::bits(x) & 0x7f800000u) != 0x7f800000u; }

}  // namespace baracuda::optim
