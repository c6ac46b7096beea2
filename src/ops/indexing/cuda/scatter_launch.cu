// ScatterPlan's CUDA path, without atomics (see the header comment of
// include/baracuda/ops/indexing.hpp):
//   1. reset the error word; out of place, copy self to out (raw bits);
//   2. keys: each index element's destination, the row-major offset in self's
//      shape (self_numel for a bad index: recorded, sorted last, skipped);
//      values: its contribution's raw bits (the src element or the value),
//      read here in position order, coalesced for contiguous views;
//   3. CUB's stable radix sort of (key, contribution) on the bits the keys
//      need (32-bit keys unless self has 2^32 - 1 elements or more), so each
//      destination's contributions lie together in position order;
//   4. one thread per run of equal keys reduces it in that order
//      (scatter_combine.hpp, shared with the CPU reference) and writes once.
// Carrying the values through the sort replaced sorting positions and then
// gathering src by position (a random 2-8 byte read per element).
#include <cub/device/device_radix_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/cuda/gather_scatter_common.cuh"
#include "ops/indexing/scatter_combine.hpp"

namespace baracuda::indexing::cuda {

namespace kern {
namespace {

constexpr int kThreads = 256;

// out = self element by element (raw bits of E), over self's shape.
template <class E, class U>
__global__ void __launch_bounds__(kThreads) copy_self_kernel(const ScatterLaunch l) {
  const E* self = static_cast<const E*>(l.self);
  E* out = static_cast<E*>(l.out);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; q < l.self_numel; q += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.self_shape, static_cast<U>(q), c);
    out[offset_of(l.rank, c, l.out_stride)] = self[offset_of(l.rank, c, l.self_stride)];
  }
}

// Raw bits of a T (the sort's value type).
template <class T>
using BitsOf = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;

template <class T>
__device__ __forceinline__ BitsOf<T> bits_of(T x) {
  BitsOf<T> b;
  memcpy(&b, &x, sizeof(T));
  return b;
}
template <class T>
__device__ __forceinline__ T value_of(BitsOf<T> b) {
  T x;
  memcpy(&x, &b, sizeof(T));
  return x;
}

// keys[p] = the destination of index element p, vals[p] = its contribution.
template <class T, class K, class I>
__global__ void __launch_bounds__(kThreads)
    scatter_keys_kernel(const ScatterLaunch l, K* __restrict__ keys, BitsOf<T>* __restrict__ vals, void* error_word) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const T value = dev::from_acc<T>(l.value);  // already rounded to T on the host: exact
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.idx_shape, static_cast<uint32_t>(p), c);  // n < 2^31 (select())
    const int64_t v = load_index<I>(l.index, offset_of(l.rank, c, l.idx_stride));
    const T x = l.use_value ? value : static_cast<const T*>(l.src)[offset_of(l.rank, c, l.src_stride)];
    K key = static_cast<K>(l.self_numel);
    if (v < 0 || v >= l.self_shape[l.dim]) {
      record_bad(error_word, p);
    } else {
      c[l.dim] = v;
      int64_t lin = 0;
      for (int d = 0; d < l.rank; ++d) lin = lin * l.self_shape[d] + c[d];
      key = static_cast<K>(lin);
    }
    keys[p] = key;
    vals[p] = bits_of<T>(x);
  }
}

// Thread i owns sorted entry i when it starts a run of a valid destination.
template <class T, class K>
__global__ void __launch_bounds__(kThreads)
    scatter_runs_kernel(const ScatterLaunch l, const K* __restrict__ keys, const BitsOf<T>* __restrict__ vals) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const K skip = static_cast<K>(l.self_numel);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  auto contribution = [&](int64_t j) { return dev::to_acc<Acc>(value_of<T>(vals[j])); };
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < l.n; i += stride) {
    const K key = keys[i];
    if (key == skip || (i > 0 && keys[i - 1] == key)) continue;
    int64_t e = i + 1;
    while (e < l.n && keys[e] == key) ++e;
    int64_t c[kMaxRank];
    coords_of(l.rank, l.self_shape, key, c);  // K = uint32_t unless self_numel >= 2^32 - 1
    const int64_t so = offset_of(l.rank, c, l.self_stride), oo = offset_of(l.rank, c, l.out_stride);
    if (l.reduce == detail::kReduceNone) {
      static_cast<BitsOf<T>*>(l.out)[oo] = vals[e - 1];  // the last position wins (raw bits)
      continue;
    }
    Acc acc;
    int64_t j = i;
    long long count = 1;
    if (l.include_self) {
      acc = dev::to_acc<Acc>(static_cast<const T*>(l.self)[so]);
    } else {
      acc = contribution(j);
      ++j;
    }
    for (; j < e; ++j, ++count) acc = detail::scatter_combine<Acc>(l.reduce, acc, contribution(j));
    acc = detail::scatter_finish<Acc>(l.reduce, acc, count);
    static_cast<T*>(l.out)[oo] = dev::from_acc<T>(acc);
  }
}

int key_bits(int64_t skip) {
  int bits = 1;
  while (bits < 64 && (int64_t{1} << bits) <= skip) ++bits;
  return bits;
}

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

Status status_of(cudaError_t e, const char* what) { return baracuda::detail::cuda_status(static_cast<int>(e), what); }

template <class K, class V>
size_t sort_bytes(int64_t n, int64_t self_numel) {
  size_t bytes = 0;
  // A size query (null storage): nothing runs; errors show again at run().
  (void)cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const K*>(nullptr), static_cast<K*>(nullptr),
                                        static_cast<const V*>(nullptr), static_cast<V*>(nullptr),
                                        static_cast<int>(n), 0, key_bits(self_numel));
  return bytes;
}

template <class K>
size_t sort_bytes_for(int64_t n, int64_t self_numel, size_t value_bytes) {
  return value_bytes == 2   ? sort_bytes<K, uint16_t>(n, self_numel)
         : value_bytes == 4 ? sort_bytes<K, uint32_t>(n, self_numel)
                            : sort_bytes<K, uint64_t>(n, self_numel);
}

template <class T, class K>
Status scatter_sorted(const ScatterLaunch& l, cudaStream_t s) {
  constexpr const char* kWhat = "ScatterPlan: kernel launch";
  using V = BitsOf<T>;
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  auto* keys_in = reinterpret_cast<K*>(ws + l.ws.keys_in);
  auto* keys_out = reinterpret_cast<K*>(ws + l.ws.keys_out);
  auto* vals_in = reinterpret_cast<V*>(ws + l.ws.vals_in);
  auto* vals_out = reinterpret_cast<V*>(ws + l.ws.vals_out);
  const unsigned grid = grid_for(l.n, kThreads);
  if (l.index_dtype == DType::I32)
    scatter_keys_kernel<T, K, int32_t><<<grid, kThreads, 0, s>>>(l, keys_in, vals_in, l.workspace);
  else
    scatter_keys_kernel<T, K, int64_t><<<grid, kThreads, 0, s>>>(l, keys_in, vals_in, l.workspace);
  BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  size_t temp_bytes = l.ws.temp_bytes;
  BARACUDA_RETURN_IF_ERROR(status_of(cub::DeviceRadixSort::SortPairs(ws + l.ws.temp, temp_bytes, keys_in, keys_out,
                                                                      vals_in, vals_out, static_cast<int>(l.n), 0,
                                                                      key_bits(l.self_numel), s),
                                     "ScatterPlan: radix sort"));
  scatter_runs_kernel<T, K><<<grid, kThreads, 0, s>>>(l, keys_out, vals_out);
  return status_of(cudaGetLastError(), kWhat);
}

// out[c] += x atomically. A 16-bit element whose 4-byte-aligned pair partner
// is another element of out's row (unit innermost stride) is added with a
// 32-bit packed atomic (__half2 / __nv_bfloat162) that adds -0.0 to the
// partner: 32-bit atomics run at about twice the rate of 16-bit ones in L2,
// and x + (-0.0) == x bit for bit for every x (including -0.0; +0.0 would
// turn the partner's -0.0 into +0.0). Elsewhere a plain 16-bit atomic.
template <class T>
__device__ __forceinline__ void atomic_add_to(const ScatterLaunch& l, T* out, const int64_t* c, T x) {
  T* addr = out + offset_of(l.rank, c, l.out_stride);
  if constexpr (sizeof(T) == 2) {
    using T2 = std::conditional_t<std::is_same_v<T, __half>, __half2, __nv_bfloat162>;
    const int last = l.rank - 1;
    const bool high = (reinterpret_cast<uintptr_t>(addr) & 2) != 0;  // the partner is the element before
    const bool partner_in_row =
        l.out_stride[last] == 1 && (high ? c[last] >= 1 : c[last] + 1 < l.self_shape[last]);
    if (partner_in_row) {
      const T neg0 = dev::from_acc<T>(-0.0f);
      T2 v;
      v.x = high ? neg0 : x;
      v.y = high ? x : neg0;
      atomicAdd(reinterpret_cast<T2*>(reinterpret_cast<uintptr_t>(addr) & ~uintptr_t{3}), v);
      return;
    }
  }
  atomicAdd(addr, x);
}

// The opt-in atomic route (reduce Sum): one thread per index element adds its
// contribution to its destination with a floating-point atomic in T (the
// order of the additions, so the bits, vary from run to run). kZero: the
// pass before, for include_self = false, that zeroes every destination with
// a contribution (all writers store the same 0).
template <class T, class I, bool kZero>
__global__ void __launch_bounds__(kThreads) scatter_atomic_kernel(const ScatterLaunch l) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.idx_shape, static_cast<uint32_t>(p), c);  // n < 2^31 (select())
    const int64_t v = load_index<I>(l.index, offset_of(l.rank, c, l.idx_stride));
    if (v < 0 || v >= l.self_shape[l.dim]) {
      if (!kZero) record_bad(l.workspace, p);
      continue;
    }
    T* out = static_cast<T*>(l.out);
    if constexpr (kZero) {
      c[l.dim] = v;
      out[offset_of(l.rank, c, l.out_stride)] = dev::from_acc<T>(0.0);
    } else {
      const T x = l.use_value ? dev::from_acc<T>(l.value)  // already rounded to T: exact
                              : static_cast<const T*>(l.src)[offset_of(l.rank, c, l.src_stride)];
      c[l.dim] = v;
      atomic_add_to(l, out, c, x);
    }
  }
}

template <class T, class I>
Status scatter_atomic(const ScatterLaunch& l, cudaStream_t s) {
  const unsigned grid = grid_for(l.n, kThreads);
  if (!l.include_self) {
    scatter_atomic_kernel<T, I, true><<<grid, kThreads, 0, s>>>(l);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), "ScatterPlan: kernel launch"));
  }
  scatter_atomic_kernel<T, I, false><<<grid, kThreads, 0, s>>>(l);
  return status_of(cudaGetLastError(), "ScatterPlan: kernel launch");
}

template <class T>
Status scatter_typed(const ScatterLaunch& l, cudaStream_t s) {
  if (!l.in_place) {
    if (l.self_numel < (int64_t{1} << 32))
      copy_self_kernel<BitsOf<T>, uint32_t><<<grid_for(l.self_numel, kThreads), kThreads, 0, s>>>(l);
    else
      copy_self_kernel<BitsOf<T>, uint64_t><<<grid_for(l.self_numel, kThreads), kThreads, 0, s>>>(l);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), "ScatterPlan: kernel launch"));
  }
  if (l.n == 0) return Status::ok();
  if (l.atomic) {
    return l.index_dtype == DType::I32 ? scatter_atomic<T, int32_t>(l, s) : scatter_atomic<T, int64_t>(l, s);
  }
  return l.ws.wide ? scatter_sorted<T, uint64_t>(l, s) : scatter_sorted<T, uint32_t>(l, s);
}

}  // namespace
}  // namespace kern

ScatterWorkspace scatter_workspace(int64_t n, int64_t self_numel, size_t value_bytes) {
  ScatterWorkspace w;
  w.wide = self_numel >= int64_t{0xffffffff};  // the skip key (self_numel) must fit
  const size_t key_bytes = w.wide ? sizeof(uint64_t) : sizeof(uint32_t);
  const size_t items = static_cast<size_t>(n);
  size_t off = 0;
  w.keys_in = off, off += kern::align256(items * key_bytes);
  w.keys_out = off, off += kern::align256(items * key_bytes);
  w.vals_in = off, off += kern::align256(items * value_bytes);
  w.vals_out = off, off += kern::align256(items * value_bytes);
  w.temp = off;
  const size_t sort = n == 0 ? 0
                     : w.wide ? kern::sort_bytes_for<uint64_t>(n, self_numel, value_bytes)
                              : kern::sort_bytes_for<uint32_t>(n, self_numel, value_bytes);
  w.temp_bytes = kern::align256(sort);
  w.total = off + w.temp_bytes;
  return w;
}

Status launch_scatter(const ScatterLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(
      kern::status_of(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s), "ScatterPlan: error word reset"));
  switch (l.dtype) {
    case DType::F32: return kern::scatter_typed<float>(l, s);
    case DType::F64: return kern::scatter_typed<double>(l, s);
    case DType::F16: return kern::scatter_typed<__half>(l, s);
    case DType::BF16: return kern::scatter_typed<__nv_bfloat16>(l, s);
    default: break;
  }
  return Status(StatusCode::Unsupported, "ScatterPlan: CUDA kernel needs f32, f64, f16 or bf16");
}

}  // namespace baracuda::indexing::cuda
