// Host-side element access for the CPU references: load any dtype as double
// (or int64), store double/int64 rounded to the destination dtype, and a small
// parallel-for. Shared by every family's cpu.cpp.
#pragma once
#include <algorithm>
#include <cstdint>
#include <thread>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/half.hpp"

namespace baracuda::detail {

inline double load_f(const void* base, DType t, int64_t off) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(base)[off];
    case DType::F64: return static_cast<const double*>(base)[off];
    case DType::F16: return static_cast<double>(static_cast<const half*>(base)[off]);
    case DType::BF16: return static_cast<double>(static_cast<const bfloat16*>(base)[off]);
    case DType::I8: return static_cast<const int8_t*>(base)[off];
    case DType::U8: return static_cast<const uint8_t*>(base)[off];
    case DType::I32: return static_cast<const int32_t*>(base)[off];
    case DType::I64: return static_cast<double>(static_cast<const int64_t*>(base)[off]);
    case DType::Bool: return static_cast<const uint8_t*>(base)[off] != 0;
  }
  return 0;
}

inline int64_t load_i(const void* base, DType t, int64_t off) {
  switch (t) {
    case DType::I32: return static_cast<const int32_t*>(base)[off];
    case DType::I64: return static_cast<const int64_t*>(base)[off];
    case DType::I8: return static_cast<const int8_t*>(base)[off];
    case DType::U8: return static_cast<const uint8_t*>(base)[off];
    default: return static_cast<int64_t>(load_f(base, t, off));
  }
}

inline void store_f(void* base, DType t, int64_t off, double v) {
  switch (t) {
    case DType::F32: static_cast<float*>(base)[off] = static_cast<float>(v); break;
    case DType::F64: static_cast<double*>(base)[off] = v; break;
    case DType::F16: static_cast<half*>(base)[off] = half(static_cast<float>(v)); break;
    case DType::BF16: static_cast<bfloat16*>(base)[off] = bfloat16(static_cast<float>(v)); break;
    default: break;
  }
}

inline void store_i(void* base, DType t, int64_t off, int64_t v) {
  switch (t) {
    case DType::I32: static_cast<int32_t*>(base)[off] = static_cast<int32_t>(v); break;
    case DType::I64: static_cast<int64_t*>(base)[off] = v; break;
    default: break;
  }
}

// Runs fn(o) for o in [0, n) on a few threads when the work is large.
template <class F>
void parallel_for(int64_t n, int64_t work_per_item, F fn) {
  const unsigned hw = std::max(1u, std::thread::hardware_concurrency());
  const int64_t threads = std::min<int64_t>({static_cast<int64_t>(hw), n, std::max<int64_t>(1, n * work_per_item / 65536)});
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
