// Reduction backward: device helpers shared by every backward kernel — the
// auxiliary kinds and tile modes the kernels are templated on, vector loads
// and streaming stores, slice offset decoding — and the launch-error check.
// Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <climits>
#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "core/int_math.hpp"
#include "cuda/numeric.cuh"
#include "ops/reduce/cuda/backward_planner.cuh"

namespace baracuda::reduce::cuda::bw {

using baracuda::detail::FastDiv;

// The per-slice auxiliary a kind needs, and what a tile pass does with it.
enum TileKind { TK_MEAN = 0, TK_TIE, TK_PROD };  // Var/Std, Max/Min, Prod
enum TileMode { TM_FUSED = 0, TM_PARTIAL, TM_APPLY };

inline Status check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), what);
  return Status::ok();
}

// Bit-carriers for streaming stores / vector loads of 2/4/8/16-byte values.
template <int B>
struct Bits;
template <>
struct Bits<2> { using type = unsigned short; };
template <>
struct Bits<4> { using type = unsigned int; };
template <>
struct Bits<8> { using type = unsigned long long; };
template <>
struct Bits<16> { using type = uint4; };

template <class T, int N>
struct alignas(sizeof(T) * N <= 16 ? sizeof(T) * N : 16) Vec {
  T v[N];
};

// dx is written once and never read back here: evict-first stores keep x
// (which a following pass may re-read) in L2 instead.
template <class V>
__device__ __forceinline__ void store_cs(V* p, const V& v) {
  using U = typename Bits<sizeof(V)>::type;
  U u;
  __builtin_memcpy(&u, &v, sizeof(V));
  __stcs(reinterpret_cast<U*>(p), u);
}

// N consecutive values of S starting at p (aligned to min(16, N*sizeof(S)))
// as accumulator values, in 16-byte (or narrower) loads.
template <int N, class S, class A>
__device__ __forceinline__ void load_run(const S* p, A (&out)[N]) {
  constexpr int B = N * static_cast<int>(sizeof(S));
  if constexpr (B >= 16) {
    static_assert(B % 16 == 0, "whole 16-byte pieces");
#pragma unroll
    for (int c = 0; c < B / 16; ++c) {
      const uint4 u = reinterpret_cast<const uint4*>(p)[c];
      S tmp[16 / sizeof(S)];
      __builtin_memcpy(tmp, &u, 16);
#pragma unroll
      for (int i = 0; i < static_cast<int>(16 / sizeof(S)); ++i)
        out[c * (16 / sizeof(S)) + i] = dev::to_acc<A>(tmp[i]);
    }
  } else {
    using U = typename Bits<B>::type;
    const U u = *reinterpret_cast<const U*>(p);
    S tmp[N];
    __builtin_memcpy(tmp, &u, B);
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = dev::to_acc<A>(tmp[i]);
  }
}

template <class T>
__device__ __forceinline__ acc_t<T> ld_acc(const T* p) {
  return dev::to_acc<acc_t<T>>(*p);
}

// Offsets of slice o for x, dx, dy, y (one decode per thread). TP: any
// parameter struct with the kept geometry (nk, ksize, kst) and M.
template <class TP>
__device__ __forceinline__ void kept_offsets(const TP& p, int64_t o, int64_t (&off)[kKeptOperands]) {
#pragma unroll
  for (int k = 0; k < kKeptOperands; ++k) off[k] = 0;
  if (p.M <= INT_MAX) {
    uint32_t rem = static_cast<uint32_t>(o);
    for (int d = 0; d < p.nk; ++d) {
      const uint32_t sz = static_cast<uint32_t>(p.ksize[d]);
      const uint32_t q = rem / sz, i = rem - q * sz;
#pragma unroll
      for (int k = 0; k < kKeptOperands; ++k) off[k] += static_cast<int64_t>(i) * p.kst[k][d];
      rem = q;
    }
  } else {
    int64_t rem = o;
    for (int d = 0; d < p.nk; ++d) {
      const int64_t q = rem / p.ksize[d], i = rem - q * p.ksize[d];
#pragma unroll
      for (int k = 0; k < kKeptOperands; ++k) off[k] += i * p.kst[k][d];
      rem = q;
    }
  }
}

// Offset of reduced element r for operand k (0: x, 1: dx). TP: any parameter
// struct with the reduced geometry (nr, rsize, rst) and L.
template <class TP>
__device__ __forceinline__ int64_t red_offset(const TP& p, int64_t r, int k) {
  if (p.nr <= 1) return r * p.rst[k][0];  // nr == 0 means L == 1, r == 0
  int64_t off = 0;
  if (p.L <= INT_MAX) {
    uint32_t rem = static_cast<uint32_t>(r);
    for (int d = 0; d < p.nr; ++d) {
      const uint32_t sz = static_cast<uint32_t>(p.rsize[d]);
      const uint32_t q = rem / sz;
      off += static_cast<int64_t>(rem - q * sz) * p.rst[k][d];
      rem = q;
    }
  } else {
    int64_t rem = r;
    for (int d = 0; d < p.nr; ++d) {
      const int64_t q = rem / p.rsize[d];
      off += (rem - q * p.rsize[d]) * p.rst[k][d];
      rem = q;
    }
  }
  return off;
}

}  // namespace baracuda::reduce::cuda::bw
