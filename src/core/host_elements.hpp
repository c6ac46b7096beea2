// Host-side element access for the CPU references: load any dtype as double
// (or int64), store double/int64 rounded to the destination dtype, and a small
// parallel-for. Shared by every family's reference.cpp.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <type_traits>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/dtype_dispatch.hpp"
#include "core/checked_math.hpp"
#include "baracuda/core/host_types.hpp"

namespace baracuda::detail {

// Element `off` of a T array as double: floating types exactly (f8, f16, bf16,
// f32, f64), integers by value, bool as 0/1 (any nonzero byte is true; the
// byte is read as uint8_t since a bool object holding 2 would be UB), complex
// as its real part (what a complex -> real cast keeps).
template <class T>
double load_as_double(const void* base, int64_t off) {
  if constexpr (std::is_same_v<T, bool>) return static_cast<const uint8_t*>(base)[off] != 0 ? 1.0 : 0.0;
  else if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>)
    return static_cast<double>(static_cast<const T*>(base)[off].real());
  else return static_cast<double>(static_cast<const T*>(base)[off]);
}

inline double load_f(const void* base, DType t, int64_t off) {
  return dispatch_dtype<AllTypes>(
      t, [&](auto tag) { return load_as_double<typename decltype(tag)::type>(base, off); }, [] { return 0.0; });
}

// Integers and bool exactly; other dtypes through load_f (truncated).
inline int64_t load_i(const void* base, DType t, int64_t off) {
  if (!is_integral(t, /*include_bool=*/true)) return static_cast<int64_t>(load_f(base, t, off));
  return dispatch_dtype<AllTypes>(
      t, [&](auto tag) -> int64_t {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) return static_cast<const uint8_t*>(base)[off] != 0;
        else if constexpr (std::is_integral_v<T>) return static_cast<const T*>(base)[off];
        else return 0;
      },
      [] { return int64_t{0}; });
}

// Rounds v to nearest even into a floating or complex (imaginary 0) element.
// Integer and bool outputs are written by store_i, from exact int64 values a
// double may not hold: store_f leaves them untouched.
inline void store_f(void* base, DType t, int64_t off, double v) {
  dispatch_dtype<AllTypes>(
      t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>) static_cast<T*>(base)[off] = static_cast<T>(v);
        else if constexpr (std::is_same_v<T, half> || std::is_same_v<T, bfloat16>)  // through float, as the CUDA kernels round
          static_cast<T*>(base)[off] = T(static_cast<float>(v));
        else if constexpr (std::is_same_v<T, float8_e4m3> || std::is_same_v<T, float8_e5m2>) static_cast<T*>(base)[off] = T(v);
        else if constexpr (std::is_same_v<T, complex64> || std::is_same_v<T, complex128>)
          static_cast<T*>(base)[off] = T(static_cast<typename T::value_type>(v), 0);
      },
      [] {});
}

// Writes v (wrapped to the width, as a C++ cast) into an integer element, or
// v != 0 into a bool; other dtypes are left untouched.
inline void store_i(void* base, DType t, int64_t off, int64_t v) {
  dispatch_dtype<AllTypes>(
      t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        if constexpr (std::is_same_v<T, bool>) static_cast<uint8_t*>(base)[off] = v != 0;
        else if constexpr (std::is_integral_v<T>) static_cast<T*>(base)[off] = static_cast<T>(v);
      },
      [] {});
}

// Runs fn(o) for o in [0, n) on a few threads when the work is large.
// work_per_item is an estimate (saturate it, e.g. saturating_product): the
// total n * work_per_item saturates too, so a huge descriptor cannot overflow it.
template <class F>
void parallel_for(int64_t n, int64_t work_per_item, F fn) {
  // Asked once: glibc reads /sys/devices/system/cpu/online on every call,
  // which cost 6-9 µs of a 1-element CPU run (62-68 % of it, perf, measured
  // from Python).
  static const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int64_t total = saturating_product({n, std::max<int64_t>(work_per_item, 0)});
  const int64_t threads = std::min<int64_t>({static_cast<int64_t>(hw), n, std::max<int64_t>(1, total / 65536)});
  if (threads <= 1) {
    for (int64_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::vector<std::thread> pool;
  for (int64_t t = 0; t < threads; ++t)
    pool.emplace_back([=, &fn] {
      for (int64_t i = t * n / threads; i < (t + 1) * n / threads; ++i) fn(i);
    });
  for (auto& th : pool) th.join();
}

}  // namespace baracuda::detail
