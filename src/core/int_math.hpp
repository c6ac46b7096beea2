// Integer helpers shared by launch logic and kernels: rounding divisions,
// powers of two, and FastDiv (division by a run-time invariant through a
// multiply-high, for index decoding in kernels; public in
// baracuda/core/fast_div.hpp because the device-side elementwise template
// uses it). No CUDA headers; every
// function works on the host too (tests check FastDiv there).
#pragma once
#include <cstdint>

#include "baracuda/core/fast_div.hpp"
#include "core/host_device.hpp"

namespace baracuda::detail {

// ceil(a / b) for a >= 0, b > 0 (a + b - 1 must not overflow).
BARACUDA_HOST_DEVICE constexpr int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// a rounded up to a multiple of b (a >= 0, b > 0).
BARACUDA_HOST_DEVICE constexpr int64_t round_up(int64_t a, int64_t b) { return ceil_div(a, b) * b; }

// The smallest power of two >= v (1 for v <= 1); v <= 2^62.
BARACUDA_HOST_DEVICE constexpr int64_t pow2_ceil(int64_t v) {
  int64_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// The largest power of two <= v (1 for v <= 1).
BARACUDA_HOST_DEVICE constexpr int64_t pow2_floor(int64_t v) {
  int64_t p = 1;
  while (p <= v / 2) p <<= 1;
  return p;
}

// The smallest l with 2^l >= v, i.e. log2(v) for a power of two (0 for v <= 1).
BARACUDA_HOST_DEVICE constexpr int log2_ceil(int64_t v) {
  int l = 0;
  while ((int64_t{1} << l) < v) ++l;
  return l;
}

}  // namespace baracuda::detail
