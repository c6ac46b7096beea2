// FactoryPlan's CUDA kernel: one thread per element (grid-stride), element
// i's value from factory_math.hpp (the CPU reference's arithmetic), its
// offset from the output's layout, 32-bit index math where the view allows.
// Typed per output dtype; a constant (fill) per element size.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstring>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "ops/elementwise/factory_launch.hpp"
#include "ops/elementwise/factory_math.hpp"

namespace baracuda::elementwise::factory::cuda {
namespace {

using baracuda::detail::EwLayout;

struct RoundHalf {
  static __device__ __forceinline__ float round(float v) { return __half2float(__float2half_rn(v)); }
};
struct RoundBf16 {
  static __device__ __forceinline__ float round(float v) { return __bfloat162float(__float2bfloat16_rn(v)); }
};

// The output view: the layout's dims (row-major, innermost last) and strides.
template <class Index>
struct View {
  int rank;
  Index shape[kMaxRank];
  Index stride[kMaxRank];
};

template <class Index>
__device__ __forceinline__ Index offset_of(const View<Index>& v, Index i) {
  if (v.rank == 1) return i * v.stride[0];
  Index off = 0;
  for (int d = v.rank - 1; d >= 0; --d) {
    off += (i % v.shape[d]) * v.stride[d];
    i /= v.shape[d];
  }
  return off;
}

template <class T, int K>
__device__ __forceinline__ T value(const Gen& g, int64_t i) {
  if constexpr (K == kArange) {
    if constexpr (std::is_same_v<T, double>) return arange_f64(g, i);
    else if constexpr (std::is_same_v<T, float>) return arange_f32(g, i);
    else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(arange_f32(g, i));
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(arange_f32(g, i));
    else return static_cast<T>(arange_i64(g, i));  // wraps to the width
  } else {
    if constexpr (std::is_same_v<T, double>) return linspace_f64(g, i);
    else if constexpr (std::is_same_v<T, float>) return linspace_f32(g, i);
    else if constexpr (std::is_same_v<T, __half>) return __float2half_rn(linspace_16<RoundHalf>(g, i));
    else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(linspace_16<RoundBf16>(g, i));
    else return saturate_to<T>(linspace_f32(g, i));
  }
}

// K: kConstant (T a same-size unsigned type holding the element's bytes), kArange, kLinspace.
// The grid-stride counter is 64-bit even with 32-bit offsets: i + stride may
// pass 2^31 on the last round.
template <class T, int K, class Index>
__global__ void factory_kernel(T* out, View<Index> v, int64_t n, Gen g, T constant) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * blockDim.x;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += step) {
    if constexpr (K == kConstant) out[offset_of(v, static_cast<Index>(i))] = constant;
    else out[offset_of(v, static_cast<Index>(i))] = value<T, K>(g, i);
  }
}

template <class T, int K, class Index>
Status launch_as(const Resolved& r, const EwLayout& L, void* out, cudaStream_t st) {
  View<Index> v{};
  v.rank = L.rank;
  for (int d = 0; d < L.rank; ++d) {
    v.shape[d] = static_cast<Index>(L.shape[d]);
    v.stride[d] = static_cast<Index>(L.stride[0][d]);
  }
  T constant{};
  if constexpr (K == kConstant) std::memcpy(&constant, &r.bits, sizeof(T));  // little-endian: the low bytes
  constexpr int kThreads = 256;
  const int64_t blocks = std::min<int64_t>((L.numel + kThreads - 1) / kThreads, int64_t{1} << 20);
  factory_kernel<T, K, Index><<<static_cast<unsigned>(blocks), kThreads, 0, st>>>(
      static_cast<T*>(out), v, L.numel, gen_of(r), constant);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "FactoryPlan kernel launch");
}

template <class T, int K>
Status launch_typed(const Resolved& r, const EwLayout& L, void* out, bool index32, cudaStream_t st) {
  return index32 ? launch_as<T, K, int32_t>(r, L, out, st) : launch_as<T, K, int64_t>(r, L, out, st);
}

template <int K>
Status launch_generated(const Resolved& r, const EwLayout& L, void* out, bool index32, cudaStream_t st) {
  switch (r.out) {
    case DType::F64: return launch_typed<double, K>(r, L, out, index32, st);
    case DType::F32: return launch_typed<float, K>(r, L, out, index32, st);
    case DType::F16: return launch_typed<__half, K>(r, L, out, index32, st);
    case DType::BF16: return launch_typed<__nv_bfloat16, K>(r, L, out, index32, st);
    case DType::I8: return launch_typed<int8_t, K>(r, L, out, index32, st);
    case DType::U8: return launch_typed<uint8_t, K>(r, L, out, index32, st);
    case DType::I16: return launch_typed<int16_t, K>(r, L, out, index32, st);
    case DType::I32: return launch_typed<int32_t, K>(r, L, out, index32, st);
    case DType::I64: return launch_typed<int64_t, K>(r, L, out, index32, st);
    default: return Status(StatusCode::Unsupported, "FactoryPlan: no kernel for this dtype");
  }
}

}  // namespace

Status launch(const Resolved& r, const EwLayout& L, void* out, bool index32, void* stream) {
  auto st = static_cast<cudaStream_t>(stream);
  if (L.numel == 0) return Status::ok();
  if (r.kind == kConstant) {
    switch (dtype_size(r.out)) {
      case 1: return launch_typed<uint8_t, kConstant>(r, L, out, index32, st);
      case 2: return launch_typed<uint16_t, kConstant>(r, L, out, index32, st);
      case 4: return launch_typed<uint32_t, kConstant>(r, L, out, index32, st);
      default: return launch_typed<uint64_t, kConstant>(r, L, out, index32, st);
    }
  }
  if (r.kind == kArange) return launch_generated<kArange>(r, L, out, index32, st);
  return launch_generated<kLinspace>(r, L, out, index32, st);
}

}  // namespace baracuda::elementwise::factory::cuda
