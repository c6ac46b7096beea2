// Device helpers shared by the random family's kernels: the conversion policy
// of transform.hpp for device types, strided offsets, the grid and the
// device-offset increment.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "ops/random/launch.hpp"

namespace baracuda::random::cuda::kern {

constexpr int kThreads = 256;

// Round-to-nearest-even conversions (the host's HostCvt in reference.cpp does the same).
template <class T>
struct DevCvt {
  __device__ static T from_f(float v) {
    if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
    else return static_cast<T>(v);
  }
  __device__ static T from_d(double v) {
    if constexpr (std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>) return from_f(__double2float_rn(v));
    else return static_cast<T>(v);
  }
  __device__ static T from_i(int64_t v) {
    if constexpr (std::is_integral_v<T>) return static_cast<T>(v);
    else if constexpr (std::is_same_v<T, double>) return __ll2double_rn(v);
    else return from_f(__ll2float_rn(v));
  }
  __device__ static float to_f(T v) {
    if constexpr (std::is_same_v<T, __half>) return __half2float(v);
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
    else return static_cast<float>(v);
  }
};

// Element offset of row-major position p of m's shape through m's strides.
__device__ __forceinline__ int64_t flat_offset(const FlatMap& m, int64_t p) {
  int64_t o = 0;
  for (int d = m.rank - 1; d > 0; --d) {
    o += (p % m.shape[d]) * m.stride[d];
    p /= m.shape[d];
  }
  return m.rank > 0 ? o + p * m.stride[0] : 0;
}

__device__ __forceinline__ double load_p(const void* p, DType t, int64_t off) {
  switch (t) {
    case DType::F32: return static_cast<const float*>(p)[off];
    case DType::F64: return static_cast<const double*>(p)[off];
    case DType::F16: return __half2float(static_cast<const __half*>(p)[off]);
    default: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[off]);
  }
}

// Blocks of `kernel` resident on one SM at kThreads threads (at least 1).
template <class Kernel>
inline int resident_blocks(Kernel kernel) {
  int b = 0;
  if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, kernel, kThreads, 0) != cudaSuccess) {
    (void)cudaGetLastError();
    b = 4;
  }
  return b > 0 ? b : 1;
}

// A grid-stride grid: one full wave (per_sm resident blocks on every SM) at
// most, so every block does the same number of chunks and no partial second
// wave runs.
inline unsigned grid_for(int64_t items, int sm_count, int per_sm) {
  const int64_t need = (items + kThreads - 1) / kThreads;
  const int64_t cap = static_cast<int64_t>(sm_count > 0 ? sm_count : 132) * per_sm;
  return static_cast<unsigned>(need < cap ? (need > 0 ? need : 1) : cap);
}

namespace {  // one copy per TU (a __global__ function cannot be inline)
__global__ void bump_offset_kernel(int64_t* p) { *p = static_cast<int64_t>(static_cast<uint64_t>(*p) + 1u); }
}  // namespace

inline Status bump_offset(int64_t* p, cudaStream_t s, const char* what) {
  bump_offset_kernel<<<1, 1, 0, s>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::random::cuda::kern
