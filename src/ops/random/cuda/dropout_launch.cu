// DropoutPlan / DropoutBackwardPlan's kernel (include/baracuda/ops/random.hpp):
// the elements are cut in chunks of 8 (two Philox blocks or one saved mask
// byte) and the chunks in tiles of kThreads * U (U = 4 for 2-byte types, 2 for
// f32, 1 for f64); a block takes whole tiles in a grid-stride loop over a grid
// of at most one wave, sized so every block takes the same number of tiles.
// In a full tile (x and out contiguous and 16-byte aligned) thread t handles
// chunks t, t + kThreads, ..., t + (U - 1) kThreads: all its 16-byte loads (and
// mask bytes) are issued first, then the 2U independent Philox blocks run
// (instruction-level parallelism that hides the loads' latency), then the
// 16-byte stores. Other tiles (the last one, strided views) go chunk by chunk,
// with 16-byte vectors where they can, else element by element through the
// strides. The bits are those of transform.hpp's dropout_bits8, as before.
// The saved mask stays one byte store per chunk: a warp's 32 consecutive bytes
// are one 32-byte sector, which packing them into words would not shrink.
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

// Chunks per thread per tile.
template <class T>
constexpr int tile_u() {
  return sizeof(T) <= 2 ? 4 : (sizeof(T) == 4 ? 2 : 1);
}

// One chunk on its own (a tile's tail, strided views): 16-byte vectors when
// the views allow it and the chunk is whole, else element by element through
// the strides; the saved mask byte has the bits past n cleared.
template <class T, int M>
__device__ __forceinline__ void chunk_one(const DropoutLaunch& l, uint64_t offset, int64_t c) {
  const T* x = static_cast<const T*>(l.x);
  T* out = static_cast<T*>(l.out);
  const T zero = DevCvt<T>::from_f(0.0f);
  uint32_t m;
  if constexpr (M == kReadMask) m = static_cast<const uint8_t*>(l.mask_in)[c * l.mask_stride];
  else m = dropout_bits8(l.seed, offset, static_cast<uint64_t>(c), l.keep_thr);
  if (l.zero) m = 0;
  const int64_t i0 = c * 8;
  if (l.vec && i0 + 8 <= l.n) {
    constexpr int Q = static_cast<int>(8 * sizeof(T) / 16);
    uint4 v[Q];
    const uint4* src = reinterpret_cast<const uint4*>(x + i0);
#pragma unroll
    for (int q = 0; q < Q; ++q) v[q] = src[q];
    T* e = reinterpret_cast<T*>(v);
#pragma unroll
    for (int j = 0; j < 8; ++j) e[j] = (m >> j) & 1u ? scaled(e[j], l) : zero;
    uint4* dst = reinterpret_cast<uint4*>(out + i0);
#pragma unroll
    for (int q = 0; q < Q; ++q) dst[q] = v[q];
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

template <class T, int M>
__global__ void __launch_bounds__(kThreads) dropout_kernel(const DropoutLaunch l) {
  constexpr int U = tile_u<T>();
  constexpr int Q = static_cast<int>(8 * sizeof(T) / 16);  // 16-byte vectors per chunk
  constexpr int64_t kTile = static_cast<int64_t>(kThreads) * U;  // chunks
  const uint64_t offset =
      l.offset + (l.offset_ptr ? static_cast<uint64_t>(*l.offset_ptr) + static_cast<uint64_t>(l.offset_bias) : 0u);
  const int64_t chunks = (l.n + 7) / 8;
  const int64_t tiles = (chunks + kTile - 1) / kTile;
  const T* x = static_cast<const T*>(l.x);
  T* out = static_cast<T*>(l.out);
  const T zero = DevCvt<T>::from_f(0.0f);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t c0 = t * kTile + threadIdx.x;
    if (l.vec && (t + 1) * kTile * 8 <= l.n) {  // block-uniform
      uint4 v[U][Q];
      uint32_t m[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint4* src = reinterpret_cast<const uint4*>(x + (c0 + u * kThreads) * 8);
#pragma unroll
        for (int q = 0; q < Q; ++q) v[u][q] = src[q];
        if constexpr (M == kReadMask) m[u] = static_cast<const uint8_t*>(l.mask_in)[(c0 + u * kThreads) * l.mask_stride];
      }
      if constexpr (M != kReadMask) {
#pragma unroll
        for (int u = 0; u < U; ++u) m[u] = dropout_bits8(l.seed, offset, static_cast<uint64_t>(c0 + u * kThreads), l.keep_thr);
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const uint32_t mu = l.zero ? 0u : m[u];
        T* e = reinterpret_cast<T*>(v[u]);
#pragma unroll
        for (int j = 0; j < 8; ++j) e[j] = (mu >> j) & 1u ? scaled(e[j], l) : zero;
        uint4* dst = reinterpret_cast<uint4*>(out + (c0 + u * kThreads) * 8);
#pragma unroll
        for (int q = 0; q < Q; ++q) dst[q] = v[u][q];
        if constexpr (M == kRegenSave)
          static_cast<uint8_t*>(l.mask_out)[(c0 + u * kThreads) * l.mask_stride] = static_cast<uint8_t>(mu);
      }
    } else {
#pragma unroll 1
      for (int u = 0; u < U; ++u)
        if (c0 + u * kThreads < chunks) chunk_one<T, M>(l, offset, c0 + u * kThreads);
    }
  }
}

// At most one wave (per_sm resident blocks on every SM), with the tiles spread
// evenly: ceil(tiles / wave) rounds, then as few blocks as give every block
// that many tiles (no block idles through a last partial round).
inline unsigned tile_grid(int64_t tiles, int sm_count, int per_sm) {
  const int64_t wave = static_cast<int64_t>(sm_count > 0 ? sm_count : 132) * per_sm;
  if (tiles <= wave) return static_cast<unsigned>(tiles > 0 ? tiles : 1);
  const int64_t rounds = (tiles + wave - 1) / wave;
  return static_cast<unsigned>((tiles + rounds - 1) / rounds);
}

template <class T>
Status launch_typed(const DropoutLaunch& l, cudaStream_t s, const char* what) {
  static const int per_sm[3] = {resident_blocks(dropout_kernel<T, kRegen>), resident_blocks(dropout_kernel<T, kRegenSave>),
                                resident_blocks(dropout_kernel<T, kReadMask>)};  // queried once
  constexpr int64_t kTile = static_cast<int64_t>(kThreads) * tile_u<T>();
  const int64_t tiles = ((l.n + 7) / 8 + kTile - 1) / kTile;
  if (l.mask_in) dropout_kernel<T, kReadMask><<<tile_grid(tiles, l.sm_count, per_sm[2]), kThreads, 0, s>>>(l);
  else if (l.mask_out) dropout_kernel<T, kRegenSave><<<tile_grid(tiles, l.sm_count, per_sm[1]), kThreads, 0, s>>>(l);
  else dropout_kernel<T, kRegen><<<tile_grid(tiles, l.sm_count, per_sm[0]), kThreads, 0, s>>>(l);
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
