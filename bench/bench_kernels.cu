// Random fill and spin kernels for baracuda_bench.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <type_traits>

#include "bench_kernels.hpp"

namespace {

__device__ __forceinline__ uint64_t splitmix64(uint64_t z) {
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

template <class T>
__device__ __forceinline__ T from_f32(float v);
template <>
__device__ __forceinline__ float from_f32<float>(float v) { return v; }
template <>
__device__ __forceinline__ __half from_f32<__half>(float v) { return __float2half_rn(v); }
template <>
__device__ __forceinline__ __nv_bfloat16 from_f32<__nv_bfloat16>(float v) { return __float2bfloat16_rn(v); }

template <>
__device__ __forceinline__ __nv_fp8_e4m3 from_f32<__nv_fp8_e4m3>(float v) { return __nv_fp8_e4m3(v); }
template <>
__device__ __forceinline__ __nv_fp8_e5m2 from_f32<__nv_fp8_e5m2>(float v) { return __nv_fp8_e5m2(v); }

// Bool (stored as one byte 0 / 1): true where u > 0.5, a fair coin per element.
struct BoolByte {
  uint8_t v;
};
template <>
__device__ __forceinline__ BoolByte from_f32<BoolByte>(float v) { return BoolByte{static_cast<uint8_t>(v > 0.5f)}; }

template <class T>
__global__ void fill_uniform_kernel(T* p, size_t n, float lo, float span, uint64_t seed) {
  const size_t step = static_cast<size_t>(gridDim.x) * blockDim.x;
  for (size_t i = static_cast<size_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    // 23 random bits + 0.5: u is exact in float, strictly inside (0, 1) and never 0.5.
    const uint32_t r = static_cast<uint32_t>(splitmix64(seed * 0x100000001B3ull + i) >> 41);
    const float u = (static_cast<float>(r) + 0.5f) * (1.0f / 8388608.0f);
    p[i] = from_f32<T>(std::is_same_v<T, BoolByte> ? u : lo + span * u);
  }
}

template <class T>
cudaError_t launch_fill(void* dst, size_t n, float lo, float hi, uint64_t seed, cudaStream_t s) {
  if (n == 0) return cudaSuccess;
  const size_t want = (n + 255) / 256;
  const unsigned blocks = static_cast<unsigned>(want < 8192 ? want : 8192);
  fill_uniform_kernel<T><<<blocks, 256, 0, s>>>(static_cast<T*>(dst), n, lo, hi - lo, seed);
  return cudaGetLastError();
}

__global__ void spin_kernel(uint64_t ns) {
  uint64_t t0, t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
  do {
    __nanosleep(1000);
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  } while (t - t0 < ns);
}

}  // namespace

cudaError_t bench_fill_uniform(void* dst, baracuda::DType dtype, size_t n, float lo, float hi, uint64_t seed,
                               cudaStream_t stream) {
  switch (dtype) {
    case baracuda::DType::F32: return launch_fill<float>(dst, n, lo, hi, seed, stream);
    case baracuda::DType::F16: return launch_fill<__half>(dst, n, lo, hi, seed, stream);
    case baracuda::DType::BF16: return launch_fill<__nv_bfloat16>(dst, n, lo, hi, seed, stream);
    case baracuda::DType::F8E4M3: return launch_fill<__nv_fp8_e4m3>(dst, n, lo, hi, seed, stream);
    case baracuda::DType::F8E5M2: return launch_fill<__nv_fp8_e5m2>(dst, n, lo, hi, seed, stream);
    case baracuda::DType::Bool: return launch_fill<BoolByte>(dst, n, lo, hi, seed, stream);
    default: return cudaErrorInvalidValue;
  }
}

cudaError_t bench_spin(uint64_t ns, cudaStream_t stream) {
  spin_kernel<<<1, 1, 0, stream>>>(ns);
  return cudaGetLastError();
}
