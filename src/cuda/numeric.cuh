// Device-side numeric helpers shared by the CUDA op families: accumulator
// types, conversions for the 16-bit float types, and comparisons whose NaN
// behaviour matches the library's semantics (NaN propagates, NaN is extreme).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace baracuda::dev {

// Acc: the type a value is accumulated in. 16-bit floats widen to f32 (their
// own precision would lose a sum after ~2^11 terms); integers widen to int64.
template <class T>
struct Numeric;
template <>
struct Numeric<float> {
  using Acc = float;
  static constexpr bool kFloat = true;
};
template <>
struct Numeric<double> {
  using Acc = double;
  static constexpr bool kFloat = true;
};
template <>
struct Numeric<__half> {
  using Acc = float;
  static constexpr bool kFloat = true;
};
template <>
struct Numeric<__nv_bfloat16> {
  using Acc = float;
  static constexpr bool kFloat = true;
};
template <>
struct Numeric<int32_t> {
  using Acc = int64_t;
  static constexpr bool kFloat = false;
};
template <>
struct Numeric<int64_t> {
  using Acc = int64_t;
  static constexpr bool kFloat = false;
};

template <class T>
using acc_t = typename Numeric<T>::Acc;
template <class T>
inline constexpr bool is_float_v = Numeric<T>::kFloat;

// ---- conversions -------------------------------------------------------------
// Bit-level 16-bit -> f32 conversions: exact, and the bf16 one is a single shift.
__device__ __forceinline__ float half_bits_to_float(uint16_t b) {
  return __half2float(__ushort_as_half(b));
}
__device__ __forceinline__ float bf16_bits_to_float(uint16_t b) {
  return __uint_as_float(static_cast<uint32_t>(b) << 16);
}

template <class Acc, class T>
__device__ __forceinline__ Acc to_acc(T v) {
  if constexpr (std::is_same_v<T, __half>) {
    return static_cast<Acc>(__half2float(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return static_cast<Acc>(__bfloat162float(v));
  } else {
    return static_cast<Acc>(v);
  }
}

// Round-to-nearest-even, NaN stays NaN: the same rules as the host types in
// baracuda/core/half.hpp, so CPU and GPU agree on the final rounding.
template <class T, class Acc>
__device__ __forceinline__ T from_acc(Acc v) {
  if constexpr (std::is_same_v<T, __half>) {
    return __float2half_rn(static_cast<float>(v));
  } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
    return __float2bfloat16_rn(static_cast<float>(v));
  } else {
    return static_cast<T>(v);
  }
}

// Read-only scalar load (the non-coherent path: inputs are never written by
// the kernel that reads them). 16-bit types go through their bit pattern so no
// overload of __ldg for __half / __nv_bfloat16 is needed.
template <class T>
__device__ __forceinline__ T load_ro(const T* p) {
  if constexpr (sizeof(T) == 2) {
    const unsigned short b = __ldg(reinterpret_cast<const unsigned short*>(p));
    T r;
    static_assert(sizeof(r) == sizeof(b));
    __builtin_memcpy(&r, &b, 2);
    return r;
  } else if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<int64_t>(__ldg(reinterpret_cast<const long long*>(p)));
  } else {
    return __ldg(p);
  }
}

// ---- NaN-aware comparisons -------------------------------------------------------
// A quiet NaN of the accumulator type (float or double), made from its bits.
template <class Acc>
__device__ __forceinline__ Acc quiet_nan() {
  if constexpr (std::is_same_v<Acc, float>) return __int_as_float(0x7fffffff);
  else return __longlong_as_double(0x7fffffffffffffffLL);
}

template <class T>
__device__ __forceinline__ bool is_nan(T x) {
  if constexpr (std::is_floating_point_v<T>) {
    return x != x;
  } else {
    return false;
  }
}

// max/min that return NaN when either operand is NaN (fmaxf would drop it).
__device__ __forceinline__ float max_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("max.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a > b || a != a) ? a : b;
#endif
}
__device__ __forceinline__ float min_nan(float a, float b) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
  float r;
  asm("min.NaN.f32 %0, %1, %2;" : "=f"(r) : "f"(a), "f"(b));
  return r;
#else
  return (a < b || a != a) ? a : b;
#endif
}
__device__ __forceinline__ double max_nan(double a, double b) { return (a > b || a != a) ? a : b; }
__device__ __forceinline__ double min_nan(double a, double b) { return (a < b || a != a) ? a : b; }
__device__ __forceinline__ int64_t max_nan(int64_t a, int64_t b) { return a > b ? a : b; }
__device__ __forceinline__ int64_t min_nan(int64_t a, int64_t b) { return a < b ? a : b; }

// Integer accumulation wraps modulo 2^64 (signed overflow would be undefined);
// wrapping is associative, so the split never changes integer results.
__device__ __forceinline__ int64_t wrap_add(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) + static_cast<uint64_t>(b));
}
__device__ __forceinline__ int64_t wrap_mul(int64_t a, int64_t b) {
  return static_cast<int64_t>(static_cast<uint64_t>(a) * static_cast<uint64_t>(b));
}

template <class T>
__host__ __device__ constexpr T lowest_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return -__builtin_huge_val();
  } else {
    return static_cast<T>(INT64_MIN);
  }
}
template <class T>
__host__ __device__ constexpr T highest_value() {
  if constexpr (std::is_floating_point_v<T>) {
    return __builtin_huge_val();
  } else {
    return static_cast<T>(INT64_MAX);
  }
}

// exp / log / sqrt at the accumulator's precision (full-accuracy versions:
// callers rely on them staying within ~1 ulp).
__device__ __forceinline__ float acc_exp(float x) { return expf(x); }
__device__ __forceinline__ double acc_exp(double x) { return exp(x); }
__device__ __forceinline__ float acc_log(float x) { return logf(x); }
__device__ __forceinline__ double acc_log(double x) { return log(x); }
__device__ __forceinline__ float acc_sqrt(float x) { return sqrtf(x); }

// e^x for x <= 0 (also -inf -> 0, NaN -> NaN) whose results get SUMMED: one
// FMUL + one MUFU.EX2 (the __expf sequence) instead of expf's ~10 instructions,
// which would make a bf16 log-sum-exp compute-bound. A term's relative error is
// ~2^-22 + |x| 2^-24, but its weight is e^x, so the error of the sum stays near
// 1e-7 relative, the size of the f32 summation error itself.
__device__ __forceinline__ float acc_exp_nonpos(float x) {
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x * 1.4426950408889634f));
  return r;
}
__device__ __forceinline__ double acc_exp_nonpos(double x) { return exp(x); }

// Division for running-mean weights (n is a count): MUFU.RCP + FMUL instead of
// the IEEE sequence; ~2 ulp, far below the accumulation error of a mean.
__device__ __forceinline__ float acc_div_approx(float a, float b) { return __fdividef(a, b); }
__device__ __forceinline__ double acc_div_approx(double a, double b) { return a / b; }
__device__ __forceinline__ double acc_sqrt(double x) { return sqrt(x); }

}  // namespace baracuda::dev
