// Adafactor's per-element and per-step arithmetic, host and device: the CPU
// reference and the CUDA kernels call these same functions, so everything
// elementwise rounds identically on both backends (exact_math's unfused
// operations; the fma's are torch's own: its lerp and add(alpha) are fused).
#pragma once
#include <cmath>
#include <cstdint>

#include "baracuda/core/host_device.hpp"
#include "core/exact_math.hpp"

namespace baracuda::optim::adafactor {

// Elements per block of the ||p||^2 / ||u||^2 partial sums, rows per chunk of
// the column partial sums, threads per block.
inline constexpr int64_t kChunk = 4096;
inline constexpr int64_t kColRows = 64;
inline constexpr int kThreads = 256;

// The per-run coefficients (from the step t and lr).
struct Scalars {
  float w = 0.f;          // f32(t ^ beta2_decay): torch's one_minus_beta2_t, the lerp weight
  float wd_factor = 1.f;  // f32(1 - lr * weight_decay)
  double rho = 0.0;       // min(lr, 1 / sqrt(t))
};

BARACUDA_HOST_DEVICE inline Scalars make_scalars(double t, double lr, double beta2_decay, double weight_decay) {
  Scalars s;
  s.w = static_cast<float>(pow(t, beta2_decay));
  s.wd_factor = static_cast<float>(exact::sub(1.0, exact::mul(lr, weight_decay)));
  const double r = exact::div(1.0, exact::sqrt(t));
  s.rho = lr < r ? lr : r;
  return s;
}

BARACUDA_HOST_DEVICE inline float fma_f(float a, float b, float c) {
#if defined(__CUDA_ARCH__)
  return __fmaf_rn(a, b, c);
#else
  return std::fma(a, b, c);
#endif
}

// torch's lerp (CPU vectorized form): fma(w, b - a, a) for |w| < 0.5, else fma(w - 1, b - a, b).
BARACUDA_HOST_DEVICE inline float lerp(float a, float b, float w) {
  const float diff = exact::sub(b, a);
  const bool small = (w < 0.f ? -w : w) < 0.5f;
  return small ? fma_f(w, diff, a) : fma_f(exact::sub(w, 1.0f), diff, b);
}

// mean of squares from a sum of squares, as torch: vector_norm(..).square_().div_(n).
BARACUDA_HOST_DEVICE inline float mean_square(float sum_sq, int64_t n) {
  const float nrm = exact::sqrt(sum_sq);
  return exact::div(exact::mul(nrm, nrm), static_cast<float>(n));
}

// u = g * rsqrt(max(v, eps1sq)) (NaN v propagates as torch's clamp_ does).
BARACUDA_HOST_DEVICE inline float update_of(float g, float v, float eps1sq) {
  const float c = v < eps1sq ? eps1sq : v;
  return exact::mul(exact::div(1.0f, exact::sqrt(c)), g);
}

// The factored estimate: row * col / divisor (divisor = max(mean(row_var), eps1)).
BARACUDA_HOST_DEVICE inline float factored_v(float row, float col, float divisor) {
  return exact::div(exact::mul(row, col), divisor);
}

// alpha / denom -> the f32 step s of p = fma(s, u, p * wd_factor).
BARACUDA_HOST_DEVICE inline float step_scale(float p_sumsq, float u_sumsq, int64_t n, double rho, double eps2, double d) {
  const double sn = exact::sqrt(static_cast<double>(n));
  const double prms = exact::div(static_cast<double>(exact::sqrt(p_sumsq)), sn);
  const double alpha = exact::mul(prms > eps2 ? prms : eps2, rho);
  const double q = exact::div(static_cast<double>(exact::sqrt(u_sumsq)), exact::mul(sn, d));
  const double denom = q > 1.0 ? q : 1.0;
  return static_cast<float>(-exact::div(alpha, denom));
}

BARACUDA_HOST_DEVICE inline float apply(float p, float u, float s, float wd_factor) {
  return fma_f(s, u, exact::mul(p, wd_factor));
}

}  // namespace baracuda::optim::adafactor
