// The family's value conversions (float -> int truncation, NaN -> 0,
// saturation): defined in the public baracuda/core/value_convert.hpp, which
// the device-side template shares.
#pragma once
#include "baracuda/core/value_convert.hpp"

namespace baracuda::elementwise {
using baracuda::detail::float_to_int64;
}  // namespace baracuda::elementwise
