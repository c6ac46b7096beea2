// TakePlan / PutPlan / OneHotPlan kernels (see the header comment of
// include/baracuda/ops/indexing_take.hpp). Data moves as raw bits: one kernel
// per element size (1, 2, 4, 8, 16 bytes) serves every dtype; only put_'s
// accumulation is instantiated per dtype (it computes).
//   take:    one thread per output element; its flat index is decoded into x's
//            coordinates through x's strides (the offset itself when x is
//            contiguous); a bad index writes zero and is recorded.
//   put_:    reset the error word; out of place, copy self to out; keys = the
//            wrapped flat destination (N for a bad index: recorded, sorted
//            last, skipped), values = positions; the family's stable radix sort
//            (embedding_sort.cu); then one thread per run of equal keys writes
//            its destination once: the run's last source element, or self plus
//            the run's sources summed in position order.
//   one_hot: a contiguous out: cudaMemsetAsync to zero (memset speed), then one
//            thread per row writes its one (or records a bad class); else one
//            thread per element, reading a row's class once per row it meets.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/cuda/gather_scatter_common.cuh"
#include "ops/indexing/launch.hpp"
#include "ops/indexing/take_launch.hpp"

namespace baracuda::indexing::cuda {

namespace kern {
namespace {

constexpr int kThreads = 256;

// The 16-byte element (c128): two words, so only 8-byte alignment is assumed.
struct alignas(8) Bytes16 {
  uint64_t lo, hi;
};

struct Offsets2 {
  int64_t a, b;
};

// Element offset of row-major position p of m's shape through m's strides
// (rank 0: the single element).
__device__ __forceinline__ int64_t flat_offset(const FlatMap& m, int64_t p) {
  int64_t o = 0;
  for (int d = m.rank - 1; d > 0; --d) {
    o += (p % m.shape[d]) * m.stride[d];
    p /= m.shape[d];
  }
  return m.rank > 0 ? o + p * m.stride[0] : 0;
}

// The same position through two operands of one shape (a's): one decode.
__device__ __forceinline__ Offsets2 flat_offsets(const FlatMap& a, const FlatMap& b, int64_t p) {
  Offsets2 o{0, 0};
  for (int d = a.rank - 1; d > 0; --d) {
    const int64_t c = p % a.shape[d];
    p /= a.shape[d];
    o.a += c * a.stride[d];
    o.b += c * b.stride[d];
  }
  if (a.rank > 0) {
    o.a += p * a.stride[0];
    o.b += p * b.stride[0];
  }
  return o;
}

Status status_of(cudaError_t e, const char* what) { return baracuda::detail::cuda_status(static_cast<int>(e), what); }


// ---- take -----------------------------------------------------------------------------
template <class E, class I>
__global__ void __launch_bounds__(kThreads) take_kernel(const TakeLaunch l) {
  const E* x = static_cast<const E*>(l.x_data);
  const I* idx = static_cast<const I*>(l.index_data);
  E* out = static_cast<E*>(l.out_data);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride) {
    const Offsets2 o = flat_offsets(l.index, l.out, p);
    int64_t v = static_cast<int64_t>(idx[o.a]);
    if (v < -l.N || v >= l.N) {
      record_bad(l.error_word, p);
      out[o.b] = E{};
      continue;
    }
    if (v < 0) v += l.N;
    out[o.b] = x[l.x_contiguous ? v : flat_offset(l.x, v)];
  }
}

template <class E>
Status take_sized(const TakeLaunch& l, cudaStream_t s) {
  const unsigned grid = grid_for(l.n, kThreads);
  if (l.index_dtype == DType::I32) take_kernel<E, int32_t><<<grid, kThreads, 0, s>>>(l);
  else take_kernel<E, int64_t><<<grid, kThreads, 0, s>>>(l);
  return status_of(cudaGetLastError(), "TakePlan: kernel launch");
}

// ---- put_ -----------------------------------------------------------------------------
// out = self element by element (raw bits), over self's shape.
template <class E>
__global__ void __launch_bounds__(kThreads) put_copy_kernel(const PutLaunch l) {
  const E* self = static_cast<const E*>(l.self_data);
  E* out = static_cast<E*>(l.out_data);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; q < l.N; q += stride) {
    const Offsets2 o = flat_offsets(l.self, l.out, q);
    out[o.b] = self[o.a];
  }
}

template <class I>
__global__ void __launch_bounds__(kThreads)
    put_keys_kernel(const PutLaunch l, uint32_t* __restrict__ keys, int32_t* __restrict__ pos) {
  const I* idx = static_cast<const I*>(l.index_data);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride) {
    int64_t v = static_cast<int64_t>(idx[flat_offset(l.index, p)]);
    const bool ok = v >= -l.N && v < l.N;
    if (!ok) record_bad(l.workspace, p);
    if (ok && v < 0) v += l.N;
    keys[p] = ok ? static_cast<uint32_t>(v) : static_cast<uint32_t>(l.N);
    pos[p] = static_cast<int32_t>(p);
  }
}

// Without accumulate: the thread of the LAST sorted entry of a run (the
// highest position: the sort is stable) writes its source element.
template <class E>
__global__ void __launch_bounds__(kThreads)
    put_last_kernel(const PutLaunch l, const uint32_t* __restrict__ keys, const int32_t* __restrict__ pos) {
  const E* src = static_cast<const E*>(l.source_data);
  E* out = static_cast<E*>(l.out_data);
  const uint32_t skip = static_cast<uint32_t>(l.N);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < l.n; i += stride) {
    const uint32_t key = keys[i];
    if (key == skip || (i + 1 < l.n && keys[i + 1] == key)) continue;
    out[flat_offset(l.out, static_cast<int64_t>(key))] = src[flat_offset(l.source, static_cast<int64_t>(pos[i]))];
  }
}

// Integers accumulate in 64-bit two's complement (unsigned: wrapping is defined).
template <class T>
using PutAcc = std::conditional_t<std::is_integral_v<T>, uint64_t, dev::acc_t<T>>;

template <class T>
__device__ __forceinline__ PutAcc<T> put_load(T v) {
  if constexpr (std::is_integral_v<T>) return static_cast<uint64_t>(static_cast<int64_t>(v));
  else return dev::to_acc<PutAcc<T>>(v);
}

template <class T>
__device__ __forceinline__ T put_store(PutAcc<T> a) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(static_cast<std::make_unsigned_t<T>>(a));
  else return dev::from_acc<T>(a);
}

// With accumulate: the thread of the FIRST sorted entry of a run sums self and
// the run's sources in position order and writes once.
template <class T>
__global__ void __launch_bounds__(kThreads)
    put_accumulate_kernel(const PutLaunch l, const uint32_t* __restrict__ keys, const int32_t* __restrict__ pos) {
  const T* self = static_cast<const T*>(l.self_data);
  const T* src = static_cast<const T*>(l.source_data);
  T* out = static_cast<T*>(l.out_data);
  const uint32_t skip = static_cast<uint32_t>(l.N);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < l.n; i += stride) {
    const uint32_t key = keys[i];
    if (key == skip || (i > 0 && keys[i - 1] == key)) continue;
    const Offsets2 o = flat_offsets(l.self, l.out, static_cast<int64_t>(key));
    PutAcc<T> acc = put_load<T>(self[o.a]);  // in place, self is out's own view: still unwritten
    for (int64_t j = i; j < l.n && keys[j] == key; ++j)
      acc = acc + put_load<T>(src[flat_offset(l.source, static_cast<int64_t>(pos[j]))]);
    out[o.b] = put_store<T>(acc);
  }
}

template <class E>
Status put_copy(const PutLaunch& l, cudaStream_t s) {
  put_copy_kernel<E><<<grid_for(l.N, kThreads), kThreads, 0, s>>>(l);
  return status_of(cudaGetLastError(), "PutPlan: kernel launch");
}

template <class E>
Status put_last(const PutLaunch& l, const uint32_t* keys, const int32_t* pos, cudaStream_t s) {
  put_last_kernel<E><<<grid_for(l.n, kThreads), kThreads, 0, s>>>(l, keys, pos);
  return status_of(cudaGetLastError(), "PutPlan: kernel launch");
}

template <class T>
Status put_accumulate(const PutLaunch& l, const uint32_t* keys, const int32_t* pos, cudaStream_t s) {
  put_accumulate_kernel<T><<<grid_for(l.n, kThreads), kThreads, 0, s>>>(l, keys, pos);
  return status_of(cudaGetLastError(), "PutPlan: kernel launch");
}

// ---- one_hot --------------------------------------------------------------------------
template <class E>
__device__ __forceinline__ E one_of(const OneHotLaunch& l) {
  E one;
  __builtin_memcpy(&one, l.one, sizeof(E));  // l.one is only byte-aligned
  return one;
}

template <class I>
__device__ __forceinline__ int64_t class_of(const OneHotLaunch& l, int64_t row) {
  return static_cast<int64_t>(static_cast<const I*>(l.index_data)[flat_offset(l.index, row)]);
}

// Any strides: one thread per element of out.
template <class E, class I>
__global__ void __launch_bounds__(kThreads) one_hot_elem_kernel(const OneHotLaunch l) {
  E* out = static_cast<E*>(l.out_data);
  const E one = one_of<E>(l);
  const int64_t total = l.rows * l.C;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  int64_t row = -1, cls = -1, row_off = 0;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < total; t += stride) {
    const int64_t r = t / l.C, c = t - r * l.C;
    if (r != row) {
      row = r;
      const Offsets2 o = flat_offsets(l.index, l.out_rows, r);
      cls = static_cast<int64_t>(static_cast<const I*>(l.index_data)[o.a]);
      row_off = o.b;
      if ((cls < 0 || cls >= l.C) && c == 0) record_bad(l.error_word, r);  // every row has one c == 0 visitor
    }
    out[row_off + c * l.out_class_stride] = c == cls ? one : E{};  // a bad class matches no column
  }
}

// Contiguous out, already zeroed (cudaMemsetAsync): one thread per row writes
// its one; a bad class writes nothing (the row stays zero) and is recorded.
template <class E, class I>
__global__ void __launch_bounds__(kThreads) one_hot_ones_kernel(const OneHotLaunch l) {
  E* out = static_cast<E*>(l.out_data);
  const E one = one_of<E>(l);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; r < l.rows; r += stride) {
    const Offsets2 o = flat_offsets(l.index, l.out_rows, r);
    const int64_t cls = static_cast<int64_t>(static_cast<const I*>(l.index_data)[o.a]);
    if (cls < 0 || cls >= l.C) record_bad(l.error_word, r);
    else out[o.b + cls * l.out_class_stride] = one;
  }
}

template <class E>
Status one_hot_sized(const OneHotLaunch& l, cudaStream_t s) {
  const int64_t total = l.rows * l.C;
  if (l.vec) {
    BARACUDA_RETURN_IF_ERROR(status_of(
        cudaMemsetAsync(l.out_data, 0, static_cast<size_t>(total) * sizeof(E), s), "OneHotPlan: zero fill"));
    if (l.index_dtype == DType::I32) one_hot_ones_kernel<E, int32_t><<<grid_for(l.rows, kThreads), kThreads, 0, s>>>(l);
    else one_hot_ones_kernel<E, int64_t><<<grid_for(l.rows, kThreads), kThreads, 0, s>>>(l);
  } else {
    if (l.index_dtype == DType::I32) one_hot_elem_kernel<E, int32_t><<<grid_for(total, kThreads), kThreads, 0, s>>>(l);
    else one_hot_elem_kernel<E, int64_t><<<grid_for(total, kThreads), kThreads, 0, s>>>(l);
  }
  return status_of(cudaGetLastError(), "OneHotPlan: kernel launch");
}

}  // namespace
}  // namespace kern

// Calls FN<E>(args...) with E the unsigned word of `bytes` bytes.
#define BARACUDA_BY_SIZE(bytes, FN, ...)                   \
  switch (bytes) {                                         \
    case 1: return FN<uint8_t>(__VA_ARGS__);               \
    case 2: return FN<uint16_t>(__VA_ARGS__);              \
    case 4: return FN<uint32_t>(__VA_ARGS__);              \
    case 8: return FN<uint64_t>(__VA_ARGS__);              \
    case 16: return FN<kern::Bytes16>(__VA_ARGS__);        \
    default: break;                                        \
  }

namespace {
Status copy_self(const PutLaunch& l, cudaStream_t s) {
  BARACUDA_BY_SIZE(static_cast<int>(dtype_size(l.dtype)), kern::put_copy, l, s)
  return Status(StatusCode::Unsupported, "PutPlan: CUDA kernel needs 1, 2, 4, 8 or 16-byte elements");
}

Status put_combine(const PutLaunch& l, const uint32_t* keys, const int32_t* pos, cudaStream_t s) {
  if (!l.accumulate) {
    BARACUDA_BY_SIZE(static_cast<int>(dtype_size(l.dtype)), kern::put_last, l, keys, pos, s)
  } else {
    switch (l.dtype) {
      case DType::F32: return kern::put_accumulate<float>(l, keys, pos, s);
      case DType::F64: return kern::put_accumulate<double>(l, keys, pos, s);
      case DType::F16: return kern::put_accumulate<__half>(l, keys, pos, s);
      case DType::BF16: return kern::put_accumulate<__nv_bfloat16>(l, keys, pos, s);
      case DType::I32: return kern::put_accumulate<int32_t>(l, keys, pos, s);
      case DType::I64: return kern::put_accumulate<int64_t>(l, keys, pos, s);
      default: break;
    }
  }
  return Status(StatusCode::Unsupported, "PutPlan: CUDA kernel does not support this dtype");
}
}  // namespace

Status launch_take(const TakeLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(
      kern::status_of(cudaMemsetAsync(l.error_word, 0xff, sizeof(uint64_t), s), "TakePlan: error word reset"));
  if (l.n == 0) return Status::ok();
  BARACUDA_BY_SIZE(l.elem_bytes, kern::take_sized, l, s)
  return Status(StatusCode::Unsupported, "TakePlan: CUDA kernel needs 1, 2, 4, 8 or 16-byte elements");
}

Status launch_put(const PutLaunch& l) {
  constexpr const char* kWhat = "PutPlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(kern::status_of(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s), kWhat));
  if (l.N == 0) return Status::ok();
  if (!l.in_place) BARACUDA_RETURN_IF_ERROR(copy_self(l, s));
  if (l.n == 0) return Status::ok();
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  auto* keys_in = reinterpret_cast<uint32_t*>(ws + l.ws.keys_in);
  auto* keys_out = reinterpret_cast<uint32_t*>(ws + l.ws.keys_out);
  auto* pos_in = reinterpret_cast<int32_t*>(ws + l.ws.pos_in);
  auto* pos_out = reinterpret_cast<int32_t*>(ws + l.ws.pos_out);
  const unsigned grid = kern::grid_for(l.n, kern::kThreads);
  if (l.index_dtype == DType::I32) kern::put_keys_kernel<int32_t><<<grid, kern::kThreads, 0, s>>>(l, keys_in, pos_in);
  else kern::put_keys_kernel<int64_t><<<grid, kern::kThreads, 0, s>>>(l, keys_in, pos_in);
  BARACUDA_RETURN_IF_ERROR(kern::status_of(cudaGetLastError(), kWhat));
  BARACUDA_RETURN_IF_ERROR(sort_pairs(ws + l.ws.temp, l.ws.temp_bytes, keys_in, keys_out, pos_in, pos_out, l.n, l.N,
                                      l.stream, "PutPlan: radix sort"));
  return put_combine(l, keys_out, pos_out, s);
}

Status launch_one_hot(const OneHotLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(
      kern::status_of(cudaMemsetAsync(l.error_word, 0xff, sizeof(uint64_t), s), "OneHotPlan: error word reset"));
  if (l.rows * l.C == 0) return Status::ok();
  BARACUDA_BY_SIZE(l.elem_bytes, kern::one_hot_sized, l, s)
  return Status(StatusCode::Unsupported, "OneHotPlan: CUDA kernel needs 1, 2, 4, 8 or 16-byte elements");
}

#undef BARACUDA_BY_SIZE

}  // namespace baracuda::indexing::cuda
