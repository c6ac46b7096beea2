// IndexSelectPlan / IndexUpdatePlan kernels of one dtype T:
//   launch_index_select_typed<T>: one thread per output unit (a 16-byte vector
//     of an inner row on the vector path, else an element); a bad index writes
//     zeros and records its position;
//   launch_index_update_typed<T>: after index_dim_launch.cu sorted the (slice,
//     position) pairs, one thread per element of a destination slice combines
//     the slice's run in position order (f32 accumulator, f64 for f64; the
//     CPU reference does the same operations in the same order).
// Instantiated per dtype as listed in ../manifest.cmake (set index_dim).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/index_dim_launch.hpp"

namespace baracuda::indexing::cuda::kern {

inline constexpr int kDimThreads = 256;

template <class T>
inline constexpr bool kIsFloat = std::is_same_v<T, float> || std::is_same_v<T, double> ||
                                 std::is_same_v<T, __half> || std::is_same_v<T, __nv_bfloat16>;

template <class T>
using DimAcc = std::conditional_t<std::is_same_v<T, double>, double, float>;

template <class T>
__device__ __forceinline__ DimAcc<T> load_acc(T v) {
  if constexpr (std::is_same_v<T, __half>) return __half2float(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __bfloat162float(v);
  else return static_cast<DimAcc<T>>(v);
}

template <class T>
__device__ __forceinline__ T store_acc(DimAcc<T> v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(v);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(v);
  else return static_cast<T>(v);
}

// The fill value as the host reference rounds it (double -> float -> 16-bit;
// integers truncated).
template <class T>
__device__ __forceinline__ T fill_value(double v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<int64_t>(v));
  else return static_cast<T>(v);
}

// Offsets of linear index p of a DimMap for operands a and b.
struct Pair64 {
  int64_t a, b;
};
__device__ __forceinline__ Pair64 map_offsets(const DimMap& m, int64_t p, int a, int b) {
  Pair64 o{0, 0};
  for (int d = m.rank - 1; d > 0; --d) {
    const int64_t c = p % m.shape[d];
    p /= m.shape[d];
    o.a += c * m.stride[a][d];
    o.b += c * m.stride[b][d];
  }
  if (m.rank > 0) {
    o.a += p * m.stride[a][0];
    o.b += p * m.stride[b][0];
  }
  return o;
}
__device__ __forceinline__ int64_t map_offset(const DimMap& m, int64_t p, int a) {
  int64_t o = 0;
  for (int d = m.rank - 1; d > 0; --d) {
    const int64_t c = p % m.shape[d];
    p /= m.shape[d];
    o += c * m.stride[a][d];
  }
  return m.rank > 0 ? o + p * m.stride[a][0] : o;
}

__host__ __device__ inline unsigned dim_blocks(int64_t items) {
  const int64_t b = (items + kDimThreads - 1) / kDimThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (int64_t{1} << 20) ? (int64_t{1} << 20) : b));
}

// ---- index_select -----------------------------------------------------------------
// Unit = U (uint4 on the vector path, T otherwise); `units` per inner row.
template <class T, class U, class I>
__global__ void __launch_bounds__(kDimThreads)
    index_select_kernel(const SelectLaunch l, const T* __restrict__ self, const I* __restrict__ index,
                        T* __restrict__ out, int64_t units) {
  const int64_t total = l.outer * l.n * units;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kDimThreads;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kDimThreads + threadIdx.x; t < total; t += stride) {
    const int64_t u = t % units;
    const int64_t rest = t / units;
    const int64_t k = rest % l.n, o = rest / l.n;
    const int64_t v = static_cast<int64_t>(index[k * l.index_stride]);
    const bool ok = v >= 0 && v < l.S;
    if (!ok && u == 0) record_bad(l.error_word, k);
    const Pair64 oo = map_offsets(l.outer_map, o, 0, 1);
    if constexpr (std::is_same_v<U, uint4>) {
      // Vector path: inner is one contiguous row in both views.
      const uint4* src = reinterpret_cast<const uint4*>(self + oo.a + v * l.self_dim_stride);
      uint4* dst = reinterpret_cast<uint4*>(out + oo.b + k * l.out_dim_stride);
      dst[u] = ok ? __ldg(src + u) : make_uint4(0, 0, 0, 0);
    } else {
      const Pair64 io = map_offsets(l.inner_map, u, 0, 1);
      out[oo.b + k * l.out_dim_stride + io.b] = ok ? self[oo.a + v * l.self_dim_stride + io.a] : T(0.0f);
    }
  }
}

// Vector path, rows of at least a warp's worth of vectors: one warp per
// output row (o, k). The index, the bounds check and the outer offsets are
// worked out once per row instead of once per 16 bytes, and each lane keeps
// four 16-byte loads in flight.
template <class T, class I>
__global__ void __launch_bounds__(kDimThreads)
    index_select_rows_kernel(const SelectLaunch l, const T* __restrict__ self, const I* __restrict__ index,
                             T* __restrict__ out, int64_t units) {
  constexpr int kWarps = kDimThreads / 32;
  const int lane = threadIdx.x & 31;
  const int64_t rows = l.outer * l.n;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarps;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; r < rows; r += step) {
    const int64_t k = r % l.n, o = r / l.n;
    const int64_t v = static_cast<int64_t>(index[k * l.index_stride]);
    const bool ok = v >= 0 && v < l.S;
    if (!ok && lane == 0) record_bad(l.error_word, k);
    const Pair64 oo = map_offsets(l.outer_map, o, 0, 1);
    uint4* dst = reinterpret_cast<uint4*>(out + oo.b + k * l.out_dim_stride);
    if (!ok) {
      for (int64_t u = lane; u < units; u += 32) dst[u] = make_uint4(0, 0, 0, 0);
      continue;
    }
    const uint4* src = reinterpret_cast<const uint4*>(self + oo.a + v * l.self_dim_stride);
    int64_t u = lane;
    for (; u + 96 < units; u += 128) {
      const uint4 a = __ldg(src + u), b = __ldg(src + u + 32), c = __ldg(src + u + 64), d = __ldg(src + u + 96);
      dst[u] = a, dst[u + 32] = b, dst[u + 64] = c, dst[u + 96] = d;
    }
    for (; u < units; u += 32) dst[u] = __ldg(src + u);
  }
}

template <class T, class I>
Status launch_select_index(const SelectLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  const T* self = static_cast<const T*>(l.self);
  const I* idx = static_cast<const I*>(l.index);
  T* out = static_cast<T*>(l.out);
  if (l.vec && l.inner * static_cast<int64_t>(sizeof(T)) >= 16 * 32) {
    const int64_t units = l.inner * static_cast<int64_t>(sizeof(T)) / 16;
    index_select_rows_kernel<T, I><<<dim_blocks(l.outer * l.n * 32), kDimThreads, 0, s>>>(l, self, idx, out, units);
  } else if (l.vec) {
    const int64_t units = l.inner * static_cast<int64_t>(sizeof(T)) / 16;
    index_select_kernel<T, uint4, I><<<dim_blocks(l.outer * l.n * units), kDimThreads, 0, s>>>(l, self, idx, out, units);
  } else {
    index_select_kernel<T, T, I><<<dim_blocks(l.outer * l.n * l.inner), kDimThreads, 0, s>>>(l, self, idx, out, l.inner);
  }
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "IndexSelectPlan: kernel launch");
}

template <class T>
Status launch_index_select_typed(const SelectLaunch& l) {
  return l.index_dtype == DType::I32 ? launch_select_index<T, int32_t>(l) : launch_select_index<T, int64_t>(l);
}

// ---- index updates ----------------------------------------------------------------
// The new value of one element of destination slice s: self element `self_v`,
// contributions source[o, pos[j], i] for j in [b, e) (e > b).
template <class T>
__device__ __forceinline__ T combine_run(const UpdateLaunch& l, T self_v, const T* __restrict__ src_base,
                                         const int32_t* __restrict__ pos, int64_t b, int64_t e) {
  if (l.mode == IndexUpdateMode::Fill) return fill_value<T>(l.value);
  if (l.mode == IndexUpdateMode::Copy) return src_base[static_cast<int64_t>(pos[e - 1]) * l.src_dim_stride];
  if constexpr (kIsFloat<T>) {
    using Acc = DimAcc<T>;
    const Acc self_a = load_acc<T>(self_v);
    switch (l.mode) {
      case IndexUpdateMode::Add: {
        const Acc alpha = static_cast<Acc>(l.alpha);
        Acc acc = self_a;
        for (int64_t j = b; j < e; ++j) {
          const Acc v = load_acc<T>(src_base[pos[j] * l.src_dim_stride]);
          if constexpr (std::is_same_v<Acc, double>) acc = ::fma(alpha, v, acc);
          else acc = fmaf(alpha, v, acc);
        }
        return store_acc<T>(acc);
      }
      case IndexUpdateMode::Prod: {
        Acc acc = l.include_self ? self_a : Acc(1);
        for (int64_t j = b; j < e; ++j) acc = acc * load_acc<T>(src_base[pos[j] * l.src_dim_stride]);
        return store_acc<T>(acc);
      }
      case IndexUpdateMode::Mean: {
        Acc sum = l.include_self ? self_a : Acc(0);
        for (int64_t j = b; j < e; ++j) sum = sum + load_acc<T>(src_base[pos[j] * l.src_dim_stride]);
        const int64_t count = (e - b) + (l.include_self ? 1 : 0);
        return store_acc<T>(sum / static_cast<Acc>(count));
      }
      case IndexUpdateMode::Amax:
      case IndexUpdateMode::Amin: {
        const bool mx = l.mode == IndexUpdateMode::Amax;
        int64_t j = b;
        Acc acc = l.include_self ? self_a : load_acc<T>(src_base[pos[j++] * l.src_dim_stride]);
        for (; j < e; ++j) {
          const Acc v = load_acc<T>(src_base[pos[j] * l.src_dim_stride]);
          if (v != v || (mx ? v > acc : v < acc)) acc = v;  // a NaN acc stays (no comparison is true)
        }
        return store_acc<T>(acc);
      }
      default: break;
    }
  }
  return self_v;  // not reached: select() admits integers for Copy / Fill only
}

// Out of place: one thread per element (s, o, i) of out; an empty run copies self.
template <class T>
__global__ void __launch_bounds__(kDimThreads)
    index_update_all_kernel(const UpdateLaunch l, const int32_t* __restrict__ row_start,
                            const int32_t* __restrict__ pos) {
  const T* self = static_cast<const T*>(l.self);
  const T* src = static_cast<const T*>(l.source);
  T* out = static_cast<T*>(l.out);
  const int64_t total = l.outer * l.S * l.inner;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kDimThreads;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kDimThreads + threadIdx.x; t < total; t += stride) {
    const int64_t i = t % l.inner;
    const int64_t rest = t / l.inner;
    const int64_t sl = rest % l.S, o = rest / l.S;
    const int64_t b = row_start[sl], e = row_start[sl + 1];
    const int64_t self_off = map_offset(l.outer_map, o, 0) + sl * l.self_dim_stride + map_offset(l.inner_map, i, 0);
    const int64_t out_off = map_offset(l.outer_map, o, 1) + sl * l.out_dim_stride + map_offset(l.inner_map, i, 1);
    const T self_v = self[self_off];
    if (b == e) {
      out[out_off] = self_v;
      continue;
    }
    const T* src_base = src ? src + map_offset(l.outer_map, o, 2) + map_offset(l.inner_map, i, 2) : nullptr;
    out[out_off] = combine_run<T>(l, self_v, src_base, pos, b, e);
  }
}

// In place: one thread per (sorted entry j, o, i); the entry that starts a run
// updates its slice's element, the others return.
template <class T>
__global__ void __launch_bounds__(kDimThreads)
    index_update_runs_kernel(const UpdateLaunch l, const uint32_t* __restrict__ keys,
                             const int32_t* __restrict__ row_start, const int32_t* __restrict__ pos) {
  const T* src = static_cast<const T*>(l.source);
  T* out = static_cast<T*>(l.out);
  const int64_t total = l.outer * l.n * l.inner;
  const uint32_t skip = static_cast<uint32_t>(l.S);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kDimThreads;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kDimThreads + threadIdx.x; t < total; t += stride) {
    const int64_t i = t % l.inner;
    const int64_t rest = t / l.inner;
    const int64_t j = rest % l.n, o = rest / l.n;
    const uint32_t key = keys[j];
    if (key == skip || (j > 0 && keys[j - 1] == key)) continue;  // not the start of a run
    const int64_t sl = key, e = row_start[sl + 1];
    const int64_t out_off = map_offset(l.outer_map, o, 1) + sl * l.out_dim_stride + map_offset(l.inner_map, i, 1);
    const T* src_base = src ? src + map_offset(l.outer_map, o, 2) + map_offset(l.inner_map, i, 2) : nullptr;
    out[out_off] = combine_run<T>(l, out[out_off], src_base, pos, j, e);
  }
}

// ---- vector path of the updates: one warp per destination row ------------------------
// A lane owns 16-byte vectors u = lane, lane + 32, ... of the row; each vector's
// E elements go through combine_run's operations in the same order (so the
// bits equal the element path's and the CPU reference's).
template <class T>
struct alignas(16) VecOf {
  static constexpr int E = 16 / static_cast<int>(sizeof(T));
  T e[E];
  __device__ __forceinline__ void set(uint4 w) { *reinterpret_cast<uint4*>(e) = w; }
  __device__ __forceinline__ uint4 get() const { return *reinterpret_cast<const uint4*>(e); }
};

template <class T>
__device__ __forceinline__ uint4 combine_run_vec(const UpdateLaunch& l, uint4 self_w, const char* __restrict__ src_base,
                                                 const int32_t* __restrict__ pos, int64_t b, int64_t e, int64_t u) {
  constexpr int E = VecOf<T>::E;
  const int64_t row_bytes = l.src_dim_stride * static_cast<int64_t>(sizeof(T));
  auto src_vec = [&](int64_t j) {
    return __ldg(reinterpret_cast<const uint4*>(src_base + static_cast<int64_t>(pos[j]) * row_bytes) + u);
  };
  VecOf<T> out;
  if (l.mode == IndexUpdateMode::Fill) {
    const T f = fill_value<T>(l.value);
#pragma unroll
    for (int i = 0; i < E; ++i) out.e[i] = f;
    return out.get();
  }
  if (l.mode == IndexUpdateMode::Copy) return src_vec(e - 1);
  if constexpr (kIsFloat<T>) {
    using Acc = DimAcc<T>;
    VecOf<T> s;
    s.set(self_w);
    Acc acc[E];
    int64_t j = b;
    const bool mx = l.mode == IndexUpdateMode::Amax;
    switch (l.mode) {
      case IndexUpdateMode::Add:
#pragma unroll
        for (int i = 0; i < E; ++i) acc[i] = load_acc<T>(s.e[i]);
        break;
      case IndexUpdateMode::Prod:
#pragma unroll
        for (int i = 0; i < E; ++i) acc[i] = l.include_self ? load_acc<T>(s.e[i]) : Acc(1);
        break;
      case IndexUpdateMode::Mean:
#pragma unroll
        for (int i = 0; i < E; ++i) acc[i] = l.include_self ? load_acc<T>(s.e[i]) : Acc(0);
        break;
      default: {  // Amax / Amin
        VecOf<T> first;
        first.set(l.include_self ? self_w : src_vec(j++));
#pragma unroll
        for (int i = 0; i < E; ++i) acc[i] = load_acc<T>(first.e[i]);
      }
    }
    const Acc alpha = static_cast<Acc>(l.alpha);
    for (; j < e; ++j) {
      VecOf<T> v;
      v.set(src_vec(j));
#pragma unroll
      for (int i = 0; i < E; ++i) {
        const Acc x = load_acc<T>(v.e[i]);
        switch (l.mode) {
          case IndexUpdateMode::Add:
            if constexpr (std::is_same_v<Acc, double>) acc[i] = ::fma(alpha, x, acc[i]);
            else acc[i] = fmaf(alpha, x, acc[i]);
            break;
          case IndexUpdateMode::Prod: acc[i] = acc[i] * x; break;
          case IndexUpdateMode::Mean: acc[i] = acc[i] + x; break;
          default:
            if (x != x || (mx ? x > acc[i] : x < acc[i])) acc[i] = x;
        }
      }
    }
    if (l.mode == IndexUpdateMode::Mean) {
      const Acc count = static_cast<Acc>((e - b) + (l.include_self ? 1 : 0));
#pragma unroll
      for (int i = 0; i < E; ++i) acc[i] = acc[i] / count;
    }
#pragma unroll
    for (int i = 0; i < E; ++i) out.e[i] = store_acc<T>(acc[i]);
    return out.get();
  }
  return self_w;  // not reached: select() admits integers for Copy / Fill only
}

// Out of place: one warp per (o, slice) row of out; an empty run copies self's row.
template <class T>
__global__ void __launch_bounds__(kDimThreads)
    index_update_all_rows_kernel(const UpdateLaunch l, const int32_t* __restrict__ row_start,
                                 const int32_t* __restrict__ pos, int64_t units) {
  constexpr int kWarps = kDimThreads / 32;
  const int lane = threadIdx.x & 31;
  const int64_t rows = l.outer * l.S;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t es = static_cast<int64_t>(sizeof(T));
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; r < rows; r += step) {
    const int64_t sl = r % l.S, o = r / l.S;
    const int64_t b = row_start[sl], e = row_start[sl + 1];
    const uint4* self_row = reinterpret_cast<const uint4*>(static_cast<const char*>(l.self) +
                                                           (map_offset(l.outer_map, o, 0) + sl * l.self_dim_stride) * es);
    uint4* out_row = reinterpret_cast<uint4*>(static_cast<char*>(l.out) +
                                              (map_offset(l.outer_map, o, 1) + sl * l.out_dim_stride) * es);
    if (b == e) {
      for (int64_t u = lane; u < units; u += 32) out_row[u] = __ldg(self_row + u);
      continue;
    }
    const char* src_base = l.source ? static_cast<const char*>(l.source) + map_offset(l.outer_map, o, 2) * es : nullptr;
    for (int64_t u = lane; u < units; u += 32) out_row[u] = combine_run_vec<T>(l, __ldg(self_row + u), src_base, pos, b, e, u);
  }
}

// In place: one warp per (sorted entry j, o); the entry that starts a run
// updates its slice's row, the others move on.
template <class T>
__global__ void __launch_bounds__(kDimThreads)
    index_update_runs_rows_kernel(const UpdateLaunch l, const uint32_t* __restrict__ keys,
                                  const int32_t* __restrict__ row_start, const int32_t* __restrict__ pos,
                                  int64_t units) {
  constexpr int kWarps = kDimThreads / 32;
  const int lane = threadIdx.x & 31;
  const int64_t rows = l.outer * l.n;
  const int64_t step = static_cast<int64_t>(gridDim.x) * kWarps;
  const int64_t es = static_cast<int64_t>(sizeof(T));
  const uint32_t skip = static_cast<uint32_t>(l.S);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / 32; r < rows; r += step) {
    const int64_t j = r % l.n, o = r / l.n;
    const uint32_t key = keys[j];
    if (key == skip || (j > 0 && keys[j - 1] == key)) continue;  // not the start of a run
    const int64_t sl = key, e = row_start[sl + 1];
    uint4* out_row = reinterpret_cast<uint4*>(static_cast<char*>(l.out) +
                                              (map_offset(l.outer_map, o, 1) + sl * l.out_dim_stride) * es);
    const char* src_base = l.source ? static_cast<const char*>(l.source) + map_offset(l.outer_map, o, 2) * es : nullptr;
    for (int64_t u = lane; u < units; u += 32) out_row[u] = combine_run_vec<T>(l, out_row[u], src_base, pos, j, e, u);
  }
}

template <class T>
Status launch_index_update_typed(const UpdateLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  const auto* keys = reinterpret_cast<const uint32_t*>(ws + l.ws.keys_out);
  const auto* pos = reinterpret_cast<const int32_t*>(ws + l.ws.pos_out);
  const auto* row_start = reinterpret_cast<const int32_t*>(ws + l.ws.row_start);
  if (l.vec) {
    const int64_t units = l.inner * static_cast<int64_t>(sizeof(T)) / 16;
    if (l.in_place) {
      if (l.outer * l.n * l.inner == 0) return Status::ok();
      index_update_runs_rows_kernel<T><<<dim_blocks(l.outer * l.n * 32), kDimThreads, 0, s>>>(l, keys, row_start, pos, units);
    } else {
      index_update_all_rows_kernel<T><<<dim_blocks(l.outer * l.S * 32), kDimThreads, 0, s>>>(l, row_start, pos, units);
    }
  } else if (l.in_place) {
    if (l.outer * l.n * l.inner == 0) return Status::ok();
    index_update_runs_kernel<T><<<dim_blocks(l.outer * l.n * l.inner), kDimThreads, 0, s>>>(l, keys, row_start, pos);
  } else {
    index_update_all_kernel<T><<<dim_blocks(l.outer * l.S * l.inner), kDimThreads, 0, s>>>(l, row_start, pos);
  }
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "IndexUpdatePlan: kernel launch");
}

}  // namespace baracuda::indexing::cuda::kern
