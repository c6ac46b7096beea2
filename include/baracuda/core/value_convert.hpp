// The value conversions that C++ leaves undefined, defined once for the CPU
// references and the CUDA kernels (docs/OPS.md, "Conversions"): floating ->
// integer truncates toward zero, NaN gives 0, values beyond int64 saturate;
// the int64 then wraps to the destination's width like any integer cast.
#pragma once
#include <cstdint>

#include "baracuda/core/host_device.hpp"

namespace baracuda::detail {

BARACUDA_HOST_DEVICE inline int64_t float_to_int64(double v) {
  if (v != v) return 0;
  if (v >= 9223372036854775808.0) return INT64_MAX;    // 2^63
  if (v <= -9223372036854775808.0) return INT64_MIN;
  return static_cast<int64_t>(v);
}

}  // namespace baracuda::detail
