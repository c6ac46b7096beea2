// Dynamic shared memory a row kernel may stage one row (or two, in a
// backward) in, per architecture: below the opt-in limits (227 KiB on sm_90 /
// sm_100, 163 KiB on sm_80 / sm_87, 99 KiB on sm_86 / sm_89 / sm_120, 48 KiB
// without opt-in elsewhere) with room for the reduction scratch. Shared by
// the softmax and norm families' path choices (plain C++, no CUDA headers).
#pragma once
#include <cstdint>

namespace baracuda::detail {

inline int64_t row_staging_limit(int arch) {
  if (arch == 90 || arch == 100 || arch == 103) return 200 * 1024;
  if (arch == 80 || arch == 87) return 160 * 1024;
  if (arch >= 86) return 96 * 1024;
  return 48 * 1024;
}

}  // namespace baracuda::detail
