// FastDiv: division by a run-time invariant through a multiply-high, for
// index decoding in kernels (the elementwise engine, reductions, RoPE).
// Public because baracuda/cuda/elementwise_engine.cuh, the device-side
// template frameworks compile their own functors through, uses it. Host and
// device (tests check it on the host).
#pragma once
#include <cstdint>

#include "baracuda/core/host_device.hpp"

namespace baracuda::detail {

// The high 32 bits of the 64-bit product a * b.
BARACUDA_HOST_DEVICE inline uint32_t umulhi32(uint32_t a, uint32_t b) {
#if defined(__CUDA_ARCH__)
  return __umulhi(a, b);
#else
  return static_cast<uint32_t>((uint64_t{a} * b) >> 32);
#endif
}

// n / d for a divisor fixed at launch, 1 <= d <= 2^31, and 0 <= n < 2^31 (the
// range of the kernels' 32-bit index paths): a multiply-high, an add and a
// shift instead of the ~20 instructions of a 32-bit integer division.
// Granlund-Montgomery (division by invariant integers): with s = ceil(log2 d)
// and mult = floor(2^32 * (2^s - d) / d) + 1, n / d = (umulhi(n, mult) + n) >> s
// for every 32-bit n; n < 2^31 keeps the sum within 32 bits. d == 1 needs no
// special case (mult = 1, s = 0), so the device code is branch-free.
struct FastDiv {
  uint32_t d = 1, mult = 1, shift = 0;

  FastDiv() = default;
  BARACUDA_HOST_DEVICE explicit constexpr FastDiv(uint32_t divisor) : d(divisor) {
    while ((uint64_t{1} << shift) < divisor) ++shift;
    mult = static_cast<uint32_t>((uint64_t{1} << 32) * ((uint64_t{1} << shift) - divisor) / divisor + 1);
  }

  BARACUDA_HOST_DEVICE uint32_t div(uint32_t n) const { return (umulhi32(n, mult) + n) >> shift; }
};

}  // namespace baracuda::detail
