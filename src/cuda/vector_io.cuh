// Vector global loads (16 bytes: the widest a thread can issue; 8 bytes where
// a thread keeps one large state per element) and their unpacking into
// accumulator values. Memory-bound kernels use them to keep enough bytes in
// flight per thread.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

#include "core/align.hpp"
#include "cuda/numeric.cuh"

namespace baracuda::dev {

// Elements of T in one 16-byte vector.
template <class T>
inline constexpr int kVec16 = static_cast<int>(16 / sizeof(T));

// The vector width's alignment test (core/align.hpp), here for kernels.
using detail::is_aligned16;

// Streaming read-only vector load of Bytes (8 or 16) into 32-bit words.
// no_allocate keeps once-read data from evicting L1 lines other warps still
// use; the caller guarantees Bytes alignment and that nothing writes the data
// during the kernel.
template <int Bytes>
struct Words {
  static_assert(Bytes == 8 || Bytes == 16, "8- or 16-byte vectors");
  uint32_t w[Bytes / 4];
};

template <int Bytes>
__device__ __forceinline__ Words<Bytes> load_stream(const void* p) {
  Words<Bytes> r;
  if constexpr (Bytes == 16) {
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
        : "=r"(r.w[0]), "=r"(r.w[1]), "=r"(r.w[2]), "=r"(r.w[3])
        : "l"(p));
  } else {
    asm("ld.global.nc.L1::no_allocate.v2.u32 {%0, %1}, [%2];" : "=r"(r.w[0]), "=r"(r.w[1]) : "l"(p));
  }
  return r;
}

// Splits a vector of T into Bytes / sizeof(T) accumulator values, in memory order.
template <class T, class Acc, int Bytes>
__device__ __forceinline__ void unpack(const Words<Bytes>& r, Acc (&out)[Bytes / sizeof(T)]) {
  constexpr int NW = Bytes / 4;
  const uint32_t* w = r.w;
  if constexpr (std::is_same_v<T, float>) {
#pragma unroll
    for (int i = 0; i < NW; ++i) out[i] = static_cast<Acc>(__uint_as_float(w[i]));
  } else if constexpr (std::is_same_v<T, double>) {
#pragma unroll
    for (int i = 0; i < NW / 2; ++i) {
      out[i] = static_cast<Acc>(__hiloint2double(static_cast<int>(w[2 * i + 1]), static_cast<int>(w[2 * i])));
    }
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
#pragma unroll
    for (int i = 0; i < NW; ++i) {
      out[2 * i] = static_cast<Acc>(__uint_as_float(w[i] << 16));
      out[2 * i + 1] = static_cast<Acc>(__uint_as_float(w[i] & 0xffff0000u));
    }
  } else if constexpr (std::is_same_v<T, __half>) {
#pragma unroll
    for (int i = 0; i < NW; ++i) {
      out[2 * i] = static_cast<Acc>(half_bits_to_float(static_cast<uint16_t>(w[i] & 0xffffu)));
      out[2 * i + 1] = static_cast<Acc>(half_bits_to_float(static_cast<uint16_t>(w[i] >> 16)));
    }
  } else if constexpr (std::is_same_v<T, int32_t>) {
#pragma unroll
    for (int i = 0; i < NW; ++i) out[i] = static_cast<Acc>(static_cast<int32_t>(w[i]));
  } else if constexpr (std::is_same_v<T, int64_t>) {
#pragma unroll
    for (int i = 0; i < NW / 2; ++i) {
      out[i] = static_cast<Acc>(static_cast<int64_t>((static_cast<uint64_t>(w[2 * i + 1]) << 32) | w[2 * i]));
    }
  } else {
    static_assert(sizeof(T) == 0, "unpack: unsupported element type");
  }
}

// W consecutive elements at p (16-byte aligned when W > 1) as accumulator
// values, and back (rounded once); plain loads and stores, so a kernel may
// read back what it wrote earlier. Shared by the softmax and norm kernels.
template <class T, int W, class Acc>
__device__ __forceinline__ void load_elems(const T* p, Acc (&v)[W]) {
  if constexpr (W == 1) {
    v[0] = to_acc<Acc>(p[0]);
  } else {
    static_assert(W * sizeof(T) == 16, "a vector is 16 bytes");
    const uint4 raw = *reinterpret_cast<const uint4*>(p);
    Words<16> w;
    w.w[0] = raw.x, w.w[1] = raw.y, w.w[2] = raw.z, w.w[3] = raw.w;
    unpack<T, Acc, 16>(w, v);
  }
}

template <class T, int W, class Acc>
__device__ __forceinline__ void store_elems(T* p, const Acc (&v)[W]) {
  if constexpr (W == 1) {
    p[0] = from_acc<T>(v[0]);
  } else {
    union {
      T t[W];
      uint4 raw;
    } u;
#pragma unroll
    for (int i = 0; i < W; ++i) u.t[i] = from_acc<T>(v[i]);
    *reinterpret_cast<uint4*>(p) = u.raw;
  }
}

}  // namespace baracuda::dev
