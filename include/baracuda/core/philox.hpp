// Philox-4x32-10 (Salmon, Moraes, Dror, Shaw: "Parallel random numbers: as
// easy as 1, 2, 3", SC 2011): a counter-based generator. A 64-bit key and a
// 128-bit counter give four 32-bit words; no state is carried from one word to
// the next, so any element of a random stream can be computed on its own, in
// any order, on any device: the CPU reference and the CUDA kernels produce the
// same bits for the same (seed, offset, element).
//
// baracuda's stream layout (every random plan, dropout and the optimizers'
// stochastic rounding use it; docs/OPS.md "Random numbers"):
//   key     = the 64-bit seed (low word, high word)
//   counter = (block low, block high, offset low, offset high)
// A draw (one run() of a random plan) is identified by (seed, offset); its
// element-wise consumers read the blocks 0, 1, 2, ... of that (seed, offset)
// pair, four words per block, in the order each plan documents. Distinct
// offsets are disjoint streams (2^64 blocks each), so a caller advances the
// offset by one per draw and consecutive draws never share numbers.
//
// Host and device: BARACUDA_HOST_DEVICE; plain integer arithmetic, identical
// on both.
#pragma once
#include <cstdint>

#include "baracuda/core/host_device.hpp"

namespace baracuda {

// The identity of one draw: every random plan's Args carry one (host values).
// A plan whose descriptor asks for a device offset reads the offset from a
// one-element I64 tensor instead and increments it by one in the same run, so
// a captured CUDA graph draws fresh numbers at every replay (the family
// headers say which plans offer it).
struct RandomSeed {
  uint64_t seed = 0;
  uint64_t offset = 0;
};

struct PhiloxWords {
  uint32_t w[4];
};

namespace philox_detail {
inline constexpr uint32_t kMul0 = 0xD2511F53u;
inline constexpr uint32_t kMul1 = 0xCD9E8D57u;
inline constexpr uint32_t kWeyl0 = 0x9E3779B9u;  // golden ratio
inline constexpr uint32_t kWeyl1 = 0xBB67AE85u;  // sqrt(3) - 1

BARACUDA_HOST_DEVICE inline void mulhilo(uint32_t a, uint32_t b, uint32_t& hi, uint32_t& lo) {
  const uint64_t p = static_cast<uint64_t>(a) * b;
  hi = static_cast<uint32_t>(p >> 32);
  lo = static_cast<uint32_t>(p);
}
}  // namespace philox_detail

// The ten rounds of Philox-4x32 on counter c with key k.
BARACUDA_HOST_DEVICE inline PhiloxWords philox4x32_10(uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3,
                                                      uint32_t k0, uint32_t k1) {
  using namespace philox_detail;
#if defined(__CUDA_ARCH__)
#pragma unroll
#endif
  for (int r = 0; r < 10; ++r) {
    uint32_t hi0, lo0, hi1, lo1;
    mulhilo(kMul0, c0, hi0, lo0);
    mulhilo(kMul1, c2, hi1, lo1);
    const uint32_t n0 = hi1 ^ c1 ^ k0;
    const uint32_t n2 = hi0 ^ c3 ^ k1;
    c0 = n0, c1 = lo1, c2 = n2, c3 = lo0;
    k0 += kWeyl0, k1 += kWeyl1;
  }
  return PhiloxWords{{c0, c1, c2, c3}};
}

// Block `block` of the draw (seed, offset): baracuda's layout above.
BARACUDA_HOST_DEVICE inline PhiloxWords philox_block(uint64_t seed, uint64_t offset, uint64_t block) {
  return philox4x32_10(static_cast<uint32_t>(block), static_cast<uint32_t>(block >> 32),
                       static_cast<uint32_t>(offset), static_cast<uint32_t>(offset >> 32),
                       static_cast<uint32_t>(seed), static_cast<uint32_t>(seed >> 32));
}

// The usual conversions of words to uniform numbers (exact on both sides:
// integer shifts and a multiplication by a power of two).
// [0, 1) with 24 random bits: k * 2^-24.
BARACUDA_HOST_DEVICE inline float uniform_f32(uint32_t w) { return static_cast<float>(w >> 8) * 0x1p-24f; }
// (0, 1] with 24 random bits: (k + 1) * 2^-24 (safe for log).
BARACUDA_HOST_DEVICE inline float uniform_open0_f32(uint32_t w) {
  return static_cast<float>((w >> 8) + 1u) * 0x1p-24f;
}
// [0, 1) with 53 random bits from two words.
BARACUDA_HOST_DEVICE inline double uniform_f64(uint32_t lo, uint32_t hi) {
  const uint64_t k = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(k) * 0x1p-53;
}
// (0, 1] with 53 random bits.
BARACUDA_HOST_DEVICE inline double uniform_open0_f64(uint32_t lo, uint32_t hi) {
  const uint64_t k = ((static_cast<uint64_t>(hi) << 32) | lo) >> 11;
  return static_cast<double>(k + 1) * 0x1p-53;
}

}  // namespace baracuda
