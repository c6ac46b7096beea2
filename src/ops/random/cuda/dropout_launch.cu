// DropoutPlan / DropoutBackwardPlan's kernel (include/baracuda/ops/random.hpp):
// one thread per chunk of 8 elements (two Philox blocks or one saved mask
// byte) in a grid-stride loop; 16-byte loads and stores when x and out are
// contiguous and aligned, element by element through the strides otherwise.
#include "ops/random/cuda/random_common.cuh"

namespace baracuda::random::cuda {
namespace kern {
namespace {

enum Mode : int { kRegen = 0, kRegenSave = 1, kReadMask = 2 };

template <class T>
__device__ __forceinline__ T scaled(T x, const DropoutLaunch& l) {
  if constexpr (std::is_same_v<T, double>) return __dmul_rn(x, l.scale);
  else return DevCvt<T>::from_f(__fmul_rn(DevCvt<T>::to_f(x), l.scale_f));
}

template <class T, int M>
__global__ void __launch_bounds__(kThreads) dropout_kernel(const DropoutLaunch l) {
  const uint64_t offset =
      l.offset + (l.offset_ptr ? static_cast<uint64_t>(*l.offset_ptr) + static_cast<uint64_t>(l.offset_bias) : 0u);
  const int64_t chunks = (l.n + 7) / 8;
  const T* x = static_cast<const T*>(l.x);
  T* out = static_cast<T*>(l.out);
  const T zero = DevCvt<T>::from_f(0.0f);
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    uint32_t m;
    if constexpr (M == kReadMask) m = static_cast<const uint8_t*>(l.mask_in)[c * l.mask_stride];
    else m = dropout_bits8(l.seed, offset, static_cast<uint64_t>(c), l.keep_thr);
    if (l.zero) m = 0;
    const int64_t i0 = c * 8;
    if (l.vec && i0 + 8 <= l.n) {
      constexpr int Q = static_cast<int>(8 * sizeof(T) / 16);
      alignas(16) T v[8];
      const uint4* src = reinterpret_cast<const uint4*>(x + i0);
#pragma unroll
      for (int q = 0; q < Q; ++q) reinterpret_cast<uint4*>(v)[q] = src[q];
#pragma unroll
      for (int j = 0; j < 8; ++j) v[j] = (m >> j) & 1u ? scaled(v[j], l) : zero;
      uint4* dst = reinterpret_cast<uint4*>(out + i0);
#pragma unroll
      for (int q = 0; q < Q; ++q) dst[q] = reinterpret_cast<const uint4*>(v)[q];
    } else {
      for (int j = 0; j < 8; ++j) {
        const int64_t i = i0 + j;
        if (i >= l.n) {
          m &= ~(1u << j);
          continue;
        }
        out[flat_offset(l.out_map, i)] = (m >> j) & 1u ? scaled(x[flat_offset(l.x_map, i)], l) : zero;
      }
    }
    if constexpr (M == kRegenSave) static_cast<uint8_t*>(l.mask_out)[c * l.mask_stride] = static_cast<uint8_t>(m);
  }
}

template <class T>
Status launch_typed(const DropoutLaunch& l, cudaStream_t s, const char* what) {
  static const int per_sm[3] = {resident_blocks(dropout_kernel<T, kRegen>), resident_blocks(dropout_kernel<T, kRegenSave>),
                                resident_blocks(dropout_kernel<T, kReadMask>)};  // queried once
  const int64_t chunks = (l.n + 7) / 8;
  if (l.mask_in) dropout_kernel<T, kReadMask><<<grid_for(chunks, l.sm_count, per_sm[2]), kThreads, 0, s>>>(l);
  else if (l.mask_out) dropout_kernel<T, kRegenSave><<<grid_for(chunks, l.sm_count, per_sm[1]), kThreads, 0, s>>>(l);
  else dropout_kernel<T, kRegen><<<grid_for(chunks, l.sm_count, per_sm[0]), kThreads, 0, s>>>(l);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace
}  // namespace kern

namespace {
Status dropout_dispatch(const DropoutLaunch& l, cudaStream_t s, const char* what) {
  if (l.n == 0) return Status::ok();
  switch (l.dtype) {
    case DType::F32: return kern::launch_typed<float>(l, s, what);
    case DType::F64: return kern::launch_typed<double>(l, s, what);
    case DType::F16: return kern::launch_typed<__half>(l, s, what);
    case DType::BF16: return kern::launch_typed<__nv_bfloat16>(l, s, what);
    default: break;
  }
  return Status(StatusCode::Unsupported, "DropoutPlan: CUDA kernel needs f32, f64, f16 or bf16");
}
}  // namespace

Status launch_dropout(const DropoutLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(
      dropout_dispatch(l, s, l.backward ? "DropoutBackwardPlan: kernel launch" : "DropoutPlan: kernel launch"));
  if (l.increment && l.offset_ptr) return kern::bump_offset(l.offset_ptr, s, "DropoutPlan: offset increment");
  return Status::ok();
}

}  // namespace baracuda::random::cuda
