// The definitions RandpermPlan and MultinomialPlan share between the CPU
// reference and the CUDA kernels (host and device): which Philox words each
// element reads and the integer / IEEE operations on them, so both backends
// produce the same bits (include/baracuda/ops/random_sampling.hpp documents
// them as the plans' stream layout).
#pragma once
#include <cstdint>

#include "baracuda/core/host_device.hpp"
#include "baracuda/core/philox.hpp"
#include "core/exact_math.hpp"

namespace baracuda::random::sampling {

// randperm: element i's sort key, words 0 (low half) and 1 (high half) of
// block i of the draw (seed, offset).
BARACUDA_HOST_DEVICE inline uint64_t randperm_key(uint64_t seed, uint64_t offset, uint64_t i) {
  const PhiloxWords w = philox_block(seed, offset, i);
  return (static_cast<uint64_t>(w.w[1]) << 32) | w.w[0];
}

// multinomial with replacement: sample s of row r reads block r * S + s, words
// 0 (low) and 1 (high) -> uniform_f64 in [0, 1).
BARACUDA_HOST_DEVICE inline double multinomial_uniform(uint64_t seed, uint64_t offset, uint64_t block) {
  const PhiloxWords w = philox_block(seed, offset, block);
  return uniform_f64(w.w[0], w.w[1]);
}

// multinomial without replacement: category j of row r reads block r * C + j,
// word 0 -> u = uniform_open0_f32 in (0, 1], E = 0 - exact::log(u) (an f32
// Exp(1) variate, +0 for u = 1), key = min(E / w, DBL_MAX) in f64 (exact::div;
// the clamp only matters for subnormal f64 weights). A weight of zero (or
// less, or NaN: the row is invalid anyway) gets +inf, so a row has fewer than
// S positive weights exactly when its S-th smallest key is +inf. The key's
// bits as an unsigned integer order like the (non-negative) keys: the sort key.
inline constexpr uint64_t kInfKey = 0x7ff0000000000000ull;  // +inf's bits
BARACUDA_HOST_DEVICE inline uint64_t race_key(uint64_t seed, uint64_t offset, uint64_t block, double w) {
  if (!(w > 0.0)) return kInfKey;
  const PhiloxWords pw = philox_block(seed, offset, block);
  const float e = exact::sub(0.0f, exact::log(uniform_open0_f32(pw.w[0])));
  double k = exact::div(static_cast<double>(e), w);
  if (k > 1.7976931348623157e308) k = 1.7976931348623157e308;  // DBL_MAX: +inf is kept for w <= 0
  uint64_t b;
#if defined(__CUDA_ARCH__)
  b = static_cast<uint64_t>(__double_as_longlong(k));
#else
  __builtin_memcpy(&b, &k, sizeof(b));
#endif
  return b;
}

// multinomial with replacement: the row's cumulative sums in f64, in a fixed
// blocked order (the CUDA kernel's; the CPU reference computes the same):
//   K = chunk length = max(1, ceil(C / kScanChunks)), M = ceil(C / K) chunks;
//   loc[j] = w[cK] + w[cK+1] + ... + w[j] summed left to right within chunk c;
//   off[0] = 0, off[c+1] = off[c] + loc[last of chunk c]  (left to right);
//   cdf[j] = off[c] + loc[j] (cdf[j] = loc[j] in chunk 0); total = off[M].
// cdf is non-decreasing, cdf[last] = total, and a zero weight repeats its
// predecessor's value, so "the first j with cdf[j] > u * total" never picks it.
inline constexpr int64_t kScanChunks = 1024;
BARACUDA_HOST_DEVICE inline int64_t scan_chunk_len(int64_t C) {
  const int64_t k = (C + kScanChunks - 1) / kScanChunks;
  return k < 1 ? 1 : k;
}

}  // namespace baracuda::random::sampling
