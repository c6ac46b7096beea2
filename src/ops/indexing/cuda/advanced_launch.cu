// IndexGetPlan / IndexPutPlan on CUDA (see include/baracuda/ops/indexing_advanced.hpp).
//   get: one thread per output element (grid-stride; 32-bit coordinate
//        arithmetic when every offset fits, fits_int32): R coordinates, each
//        index tensor through its broadcast strides, wrap, bounds check, copy
//        the element's raw bits (E = an unsigned type of the dtype's size);
//        a bad index writes zero and is recorded.
//   put: reset the error word; out of place, copy self to out (raw bits);
//        keys = each position's destination (self's row-major offset; the
//        skip key numel(self) for a bad index, recorded), values = the
//        position; the family's stable radix sort (embedding_sort.cu); then
//        one thread per run of equal keys: the run's last position is written
//        (plain), or the run summed in position order from out's value
//        (accumulate, the only per-dtype kernel).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "ops/indexing/advanced_launch.hpp"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::cuda {

namespace kern {
namespace {

constexpr int kThreads = 256;

// A 16-byte element (c128) moved as two words.
struct Bytes16 {
  uint64_t lo, hi;
};

unsigned grid_of(int64_t items) {
  const int64_t b = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (int64_t{1} << 20) ? (int64_t{1} << 20) : b));
}

// r < numel(R): what is left after the inner axes is axis 0's coordinate (no
// division for a rank-1 R). Int: int64_t, or int32_t when every coordinate
// and offset of the launch fits (fits_int32: 32-bit division is several
// times cheaper than 64-bit, and the get is index arithmetic, not bytes).
template <class Int = int64_t>
__device__ __forceinline__ void decode(const AdvancedMap& m, Int r, Int* c) {
  for (int k = m.rank - 1; k > 0; --k) {
    const Int e = static_cast<Int>(m.shape[k]);
    c[k] = r % e;
    r /= e;
  }
  if (m.rank > 0) c[0] = r;
}

// The offset through `stride` (per self dim) of position c, indices wrapped;
// false (nothing computed) when an index is outside [-size, size).
template <class I, class Int = int64_t>
__device__ __forceinline__ bool base_offset(const AdvancedMap& m, const Int* c, const int64_t* stride, Int* off) {
  Int o = 0;
  for (int k = 0; k < m.rank; ++k)
    if (m.axis_dim[k] >= 0) o += c[k] * static_cast<Int>(stride[m.axis_dim[k]]);
  for (int j = 0; j < m.n_idx; ++j) {
    Int io = 0;
    for (int k = 0; k < m.rank; ++k) io += c[k] * static_cast<Int>(m.idx_stride[j][k]);
    int64_t v = static_cast<int64_t>(static_cast<const I*>(m.idx[j])[io]);
    if (v < 0) v += m.size[j];
    if (v < 0 || v >= m.size[j]) return false;
    o += static_cast<Int>(v) * static_cast<Int>(stride[m.dims[j]]);
  }
  *off = o;
  return true;
}

template <class Int = int64_t>
__device__ __forceinline__ Int r_offset(int rank, const Int* c, const int64_t* stride) {
  Int o = 0;
  for (int k = 0; k < rank; ++k) o += c[k] * static_cast<Int>(stride[k]);
  return o;
}

// Self's row-major element q -> offset through `stride` (per self dim).
__device__ __forceinline__ int64_t self_offset(const AdvancedMap& m, int64_t q, const int64_t* stride) {
  int64_t o = 0;
  for (int d = m.self_rank - 1; d >= 0; --d) {
    o += (q % m.self_shape[d]) * stride[d];
    q /= m.self_shape[d];
  }
  return o;
}

template <class E, class I, class Int>
__global__ void __launch_bounds__(kThreads) get_kernel(const AdvancedLaunch l) {
  const E* x = static_cast<const E*>(l.x);
  E* out = static_cast<E*>(l.out);
  const Int n = static_cast<Int>(l.m.numel);
  const Int step = static_cast<Int>(gridDim.x) * kThreads;
  for (Int r = static_cast<Int>(blockIdx.x) * kThreads + static_cast<Int>(threadIdx.x); r < n; r += step) {
    Int c[kMaxRank];
    decode<Int>(l.m, r, c);
    Int xo = 0;
    const Int oo = r_offset<Int>(l.m.rank, c, l.out_stride);
    if (base_offset<I, Int>(l.m, c, l.x_stride, &xo)) {
      out[oo] = x[xo];
    } else {
      record_bad(l.workspace, static_cast<int64_t>(r));
      out[oo] = E{};
    }
  }
}

template <class E>
__global__ void __launch_bounds__(kThreads) copy_self_kernel(const AdvancedLaunch l) {
  const E* self = static_cast<const E*>(l.x);
  E* out = static_cast<E*>(l.out);
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; q < l.m.self_numel; q += step)
    out[self_offset(l.m, q, l.out_stride)] = self[self_offset(l.m, q, l.x_stride)];
}

template <class I>
__global__ void __launch_bounds__(kThreads)
    put_keys_kernel(const AdvancedLaunch l, uint32_t* __restrict__ keys, int32_t* __restrict__ pos) {
  const int64_t step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; r < l.m.numel; r += step) {
    int64_t c[kMaxRank];
    decode<int64_t>(l.m, r, c);
    int64_t q = 0;
    const bool ok = base_offset<I>(l.m, c, l.m.self_rm_stride, &q);
    if (!ok) record_bad(l.workspace, r);
    keys[r] = static_cast<uint32_t>(ok ? q : l.m.self_numel);
    pos[r] = static_cast<int32_t>(r);
  }
}

// The values offset of position p.
__device__ __forceinline__ int64_t values_offset(const AdvancedLaunch& l, int32_t p) {
  int64_t c[kMaxRank];
  decode<int64_t>(l.m, p, c);
  return r_offset(l.m.rank, c, l.val_stride);
}

// Plain put: the last entry of each run (the highest position) writes.
template <class E>
__global__ void __launch_bounds__(kThreads)
    put_last_kernel(const AdvancedLaunch l, const uint32_t* __restrict__ keys, const int32_t* __restrict__ pos) {
  const uint32_t skip = static_cast<uint32_t>(l.m.self_numel);
  const int64_t n = l.m.numel, step = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) {
    const uint32_t key = keys[i];
    if (key == skip || (i + 1 < n && keys[i + 1] == key)) continue;
    static_cast<E*>(l.out)[self_offset(l.m, key, l.out_stride)] =
        static_cast<const E*>(l.values)[values_offset(l, pos[i])];
  }
}

// Accumulate: the thread at each run's start sums it in position order from
// out's value (self), then stores once. Integers: int64 wrap-around (uint64).
template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double,
                                 std::conditional_t<std::is_integral_v<T>, uint64_t, float>>;

template <class T>
__device__ __forceinline__ AccOf<T> acc_of(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<uint64_t>(static_cast<int64_t>(v));
  else return dev::to_acc<AccOf<T>>(v);
}

template <class T>
__device__ __forceinline__ T stored(AccOf<T> a) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<int64_t>(a));
  else return dev::from_acc<T>(a);
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    put_sum_kernel(const AdvancedLaunch l, const uint32_t* __restrict__ keys, const int32_t* __restrict__ pos) {
  const uint32_t skip = static_cast<uint32_t>(l.m.self_numel);
  const int64_t n = l.m.numel, step = static_cast<int64_t>(gridDim.x) * kThreads;
  const T* values = static_cast<const T*>(l.values);
  T* out = static_cast<T*>(l.out);
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += step) {
    const uint32_t key = keys[i];
    if (key == skip || (i > 0 && keys[i - 1] == key)) continue;
    const int64_t oo = self_offset(l.m, key, l.out_stride);
    AccOf<T> acc = acc_of<T>(out[oo]);
    for (int64_t e = i; e < n && keys[e] == key; ++e) acc = acc + acc_of<T>(values[values_offset(l, pos[e])]);
    out[oo] = stored<T>(acc);
  }
}

Status status_of(cudaError_t e, const char* what) { return baracuda::detail::cuda_status(static_cast<int>(e), what); }

// Every position, coordinate and offset the get computes is below 2^31 (the
// largest offset through a stride table is sum (extent - 1) * |stride|;
// grid-stride steps stay below numel + grid * kThreads).
bool fits_int32(const AdvancedLaunch& l) {
  constexpr int64_t kMax = (int64_t{1} << 31) - 1;
  auto reach = [](int n, const int64_t* shape, auto stride_of) {
    int64_t o = 0;
    for (int k = 0; k < n; ++k) {
      const int64_t st = stride_of(k) < 0 ? -stride_of(k) : stride_of(k);
      if (shape[k] > 1 && st > kMax / shape[k]) return kMax;
      o += (shape[k] > 0 ? shape[k] - 1 : 0) * st;
      if (o >= kMax) return kMax;
    }
    return o;
  };
  if (l.m.numel + int64_t{grid_of(l.m.numel)} * kThreads >= kMax) return false;
  if (reach(l.m.self_rank, l.m.self_shape, [&](int d) { return l.x_stride[d]; }) >= kMax) return false;
  if (reach(l.m.rank, l.m.shape, [&](int k) { return l.out_stride[k]; }) >= kMax) return false;
  for (int j = 0; j < l.m.n_idx; ++j)
    if (reach(l.m.rank, l.m.shape, [&](int k) { return l.m.idx_stride[j][k]; }) >= kMax) return false;
  return true;
}


// Calls f(E{}) with E the unsigned type of the element size.
template <class F>
Status by_size(int bytes, const char* plan, F&& f) {
  switch (bytes) {
    case 1: f(uint8_t{}); return Status::ok();
    case 2: f(uint16_t{}); return Status::ok();
    case 4: f(uint32_t{}); return Status::ok();
    case 8: f(uint64_t{}); return Status::ok();
    case 16: f(Bytes16{}); return Status::ok();
    default: break;
  }
  return Status(StatusCode::Unsupported, std::string(plan) + ": CUDA kernel needs 1, 2, 4, 8 or 16-byte elements");
}

Status put_sum(const AdvancedLaunch& l, const uint32_t* keys, const int32_t* pos, cudaStream_t s) {
  const unsigned grid = grid_of(l.m.numel);
  switch (l.dtype) {
    case DType::F32: put_sum_kernel<float><<<grid, kThreads, 0, s>>>(l, keys, pos); break;
    case DType::F64: put_sum_kernel<double><<<grid, kThreads, 0, s>>>(l, keys, pos); break;
    case DType::F16: put_sum_kernel<__half><<<grid, kThreads, 0, s>>>(l, keys, pos); break;
    case DType::BF16: put_sum_kernel<__nv_bfloat16><<<grid, kThreads, 0, s>>>(l, keys, pos); break;
    case DType::I32: put_sum_kernel<int32_t><<<grid, kThreads, 0, s>>>(l, keys, pos); break;
    case DType::I64: put_sum_kernel<int64_t><<<grid, kThreads, 0, s>>>(l, keys, pos); break;
    default: return Status(StatusCode::Unsupported, "IndexPutPlan: CUDA accumulate needs f32, f64, f16, bf16, i32 or i64");
  }
  return status_of(cudaGetLastError(), "IndexPutPlan: kernel launch");
}

}  // namespace
}  // namespace kern

Status launch_index_get(const AdvancedLaunch& l) {
  constexpr const char* kWhat = "IndexGetPlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(kern::status_of(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s), kWhat));
  if (l.m.numel == 0) return Status::ok();
  const unsigned grid = kern::grid_of(l.m.numel);
  BARACUDA_RETURN_IF_ERROR(kern::by_size(l.elem_bytes, "IndexGetPlan", [&](auto e) {
    using E = decltype(e);
    const bool narrow = kern::fits_int32(l);
    if (l.index_dtype == DType::I32) {
      if (narrow) kern::get_kernel<E, int32_t, int32_t><<<grid, kern::kThreads, 0, s>>>(l);
      else kern::get_kernel<E, int32_t, int64_t><<<grid, kern::kThreads, 0, s>>>(l);
    } else {
      if (narrow) kern::get_kernel<E, int64_t, int32_t><<<grid, kern::kThreads, 0, s>>>(l);
      else kern::get_kernel<E, int64_t, int64_t><<<grid, kern::kThreads, 0, s>>>(l);
    }
  }));
  return kern::status_of(cudaGetLastError(), kWhat);
}

Status launch_index_put(const AdvancedLaunch& l) {
  constexpr const char* kWhat = "IndexPutPlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(kern::status_of(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s), kWhat));
  if (l.m.self_numel == 0) return Status::ok();
  if (!l.in_place) {
    BARACUDA_RETURN_IF_ERROR(kern::by_size(l.elem_bytes, "IndexPutPlan", [&](auto e) {
      kern::copy_self_kernel<decltype(e)><<<kern::grid_of(l.m.self_numel), kern::kThreads, 0, s>>>(l);
    }));
    BARACUDA_RETURN_IF_ERROR(kern::status_of(cudaGetLastError(), kWhat));
  }
  const int64_t n = l.m.numel;
  if (n == 0) return Status::ok();
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  auto* keys_in = reinterpret_cast<uint32_t*>(ws + l.ws.keys_in);
  auto* keys_out = reinterpret_cast<uint32_t*>(ws + l.ws.keys_out);
  auto* pos_in = reinterpret_cast<int32_t*>(ws + l.ws.pos_in);
  auto* pos_out = reinterpret_cast<int32_t*>(ws + l.ws.pos_out);
  const unsigned grid = kern::grid_of(n);
  if (l.index_dtype == DType::I32) kern::put_keys_kernel<int32_t><<<grid, kern::kThreads, 0, s>>>(l, keys_in, pos_in);
  else kern::put_keys_kernel<int64_t><<<grid, kern::kThreads, 0, s>>>(l, keys_in, pos_in);
  BARACUDA_RETURN_IF_ERROR(kern::status_of(cudaGetLastError(), kWhat));
  BARACUDA_RETURN_IF_ERROR(sort_pairs(ws + l.ws.temp, l.ws.temp_bytes, keys_in, keys_out, pos_in, pos_out, n,
                                      l.m.self_numel, l.stream, "IndexPutPlan: radix sort"));
  if (l.accumulate) return kern::put_sum(l, keys_out, pos_out, s);
  BARACUDA_RETURN_IF_ERROR(kern::by_size(l.elem_bytes, "IndexPutPlan", [&](auto e) {
    kern::put_last_kernel<decltype(e)><<<grid, kern::kThreads, 0, s>>>(l, keys_out, pos_out);
  }));
  return kern::status_of(cudaGetLastError(), kWhat);
}

}  // namespace baracuda::indexing::cuda
