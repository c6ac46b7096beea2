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
using BitsOf = std::conditional_t<
    sizeof(T) == 1, uint8_t,
    std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>>;

// The accumulator: f32 for 16-bit floats and f32, f64 for f64, int64_t
// (wrapping) for the integer dtypes.
template <class T>
using AccOf = std::conditional_t<std::is_integral_v<T>, int64_t,
                                 std::conditional_t<std::is_same_v<T, double>, double, float>>;

// The scatter value as a T (floats: already rounded on the host, exact;
// integers: the truncated value, which fits).
template <class T>
__device__ __forceinline__ T value_as(const ScatterLaunch& l) {
  if constexpr (std::is_integral_v<T>) return static_cast<T>(l.ivalue);
  else return dev::from_acc<T>(l.value);
}

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
  const T value = value_as<T>(l);
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
  using Acc = AccOf<T>;
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
    if constexpr (std::is_integral_v<T>) {
      static_cast<T*>(l.out)[oo] = static_cast<T>(detail::scatter_finish_int<T>(l.reduce, acc, count));
    } else {
      acc = detail::scatter_finish<Acc>(l.reduce, acc, count);
      static_cast<T*>(l.out)[oo] = dev::from_acc<T>(acc);
    }
  }
}

// ---- "sorted.rows": the index is constant along every axis but dim ----------
// (stride 0 or extent 1 there: index.expand-style). Only its N = index.size(dim)
// values matter: keys[k] = index[.., k, ..] (size_dim for a bad one), rows[k] = k,
// stably sorted, so each destination row's source rows lie together in
// ascending k, which is ascending position for every column.
template <class K, class I>
__global__ void __launch_bounds__(kThreads)
    scatter_row_keys_kernel(const ScatterLaunch l, K* __restrict__ keys, uint32_t* __restrict__ rows) {
  const int64_t N = l.idx_shape[l.dim], size = l.self_shape[l.dim];
  int64_t inner = 1;  // positions per step of dim in the row-major index
  for (int d = l.dim + 1; d < l.rank; ++d) inner *= l.idx_shape[d];
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; k < N; k += stride) {
    const int64_t v = load_index<I>(l.index, k * l.idx_stride[l.dim]);
    K key = static_cast<K>(size);
    if (v < 0 || v >= size) record_bad(l.workspace, k * inner);  // the lowest position holding it: column 0
    else key = static_cast<K>(v);
    keys[k] = key;
    rows[k] = static_cast<uint32_t>(k);
  }
}

// One thread per (sorted entry j, column): when j starts a run of a valid
// destination row, the thread reduces that row's contributions to its column
// in ascending k (scatter_combine.hpp, as the CPU) and writes once. Columns
// vary fastest, so a warp reads and writes consecutive elements of a row.
template <class T, class K>
__global__ void __launch_bounds__(kThreads)
    scatter_rows_kernel(const ScatterLaunch l, const K* __restrict__ keys, const uint32_t* __restrict__ rows) {
  using Acc = AccOf<T>;
  const int64_t N = l.idx_shape[l.dim];
  const int64_t cols = l.n / N;
  const K skip = static_cast<K>(l.self_shape[l.dim]);
  int64_t col_shape[kMaxRank];
  for (int d = 0; d < l.rank; ++d) col_shape[d] = d == l.dim ? 1 : l.idx_shape[d];
  const T value = value_as<T>(l);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t t = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; t < l.n; t += stride) {
    const uint32_t j = static_cast<uint32_t>(t) / static_cast<uint32_t>(cols);  // n < 2^31 (select())
    const uint32_t col = static_cast<uint32_t>(t) - j * static_cast<uint32_t>(cols);
    const K key = keys[j];
    if (key == skip || (j > 0 && keys[j - 1] == key)) continue;
    int64_t e = j + 1;
    while (e < N && keys[e] == key) ++e;
    int64_t c[kMaxRank];
    coords_of(l.rank, col_shape, col, c);
    auto contribution = [&](int64_t m) -> T {
      if (l.use_value) return value;
      c[l.dim] = rows[m];
      return static_cast<const T*>(l.src)[offset_of(l.rank, c, l.src_stride)];
    };
    if (l.reduce == detail::kReduceNone) {
      const T x = contribution(e - 1);  // the last position wins
      c[l.dim] = static_cast<int64_t>(key);
      static_cast<T*>(l.out)[offset_of(l.rank, c, l.out_stride)] = x;
      continue;
    }
    Acc acc;
    int64_t m = j;
    long long count = 1;
    if (l.include_self) {
      c[l.dim] = static_cast<int64_t>(key);
      acc = dev::to_acc<Acc>(static_cast<const T*>(l.self)[offset_of(l.rank, c, l.self_stride)]);
    } else {
      acc = dev::to_acc<Acc>(contribution(m));
      ++m;
    }
    for (; m < e; ++m, ++count) acc = detail::scatter_combine<Acc>(l.reduce, acc, dev::to_acc<Acc>(contribution(m)));
    c[l.dim] = static_cast<int64_t>(key);
    T* dst = static_cast<T*>(l.out) + offset_of(l.rank, c, l.out_stride);
    if constexpr (std::is_integral_v<T>) {
      *dst = static_cast<T>(detail::scatter_finish_int<T>(l.reduce, acc, count));
    } else {
      *dst = dev::from_acc<T>(detail::scatter_finish<Acc>(l.reduce, acc, count));
    }
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
  return value_bytes == 1   ? sort_bytes<K, uint8_t>(n, self_numel)
         : value_bytes == 2 ? sort_bytes<K, uint16_t>(n, self_numel)
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

template <class T, class K>
Status scatter_rows(const ScatterLaunch& l, cudaStream_t s) {
  constexpr const char* kWhat = "ScatterPlan: kernel launch";
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  auto* keys_in = reinterpret_cast<K*>(ws + l.ws.keys_in);
  auto* keys_out = reinterpret_cast<K*>(ws + l.ws.keys_out);
  auto* rows_in = reinterpret_cast<uint32_t*>(ws + l.ws.vals_in);
  auto* rows_out = reinterpret_cast<uint32_t*>(ws + l.ws.vals_out);
  const int64_t N = l.idx_shape[l.dim];
  if (l.index_dtype == DType::I32)
    scatter_row_keys_kernel<K, int32_t><<<grid_for(N, kThreads), kThreads, 0, s>>>(l, keys_in, rows_in);
  else
    scatter_row_keys_kernel<K, int64_t><<<grid_for(N, kThreads), kThreads, 0, s>>>(l, keys_in, rows_in);
  BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  size_t temp_bytes = l.ws.temp_bytes;
  BARACUDA_RETURN_IF_ERROR(status_of(cub::DeviceRadixSort::SortPairs(ws + l.ws.temp, temp_bytes, keys_in, keys_out,
                                                                      rows_in, rows_out, static_cast<int>(N), 0,
                                                                      key_bits(l.self_shape[l.dim]), s),
                                     "ScatterPlan: radix sort"));
  scatter_rows_kernel<T, K><<<grid_for(l.n, kThreads), kThreads, 0, s>>>(l, keys_out, rows_out);
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

// The reduction's identity, written first to every destination with a
// contribution when include_self = false: 0 for Sum, the lowest / highest
// value for Amax / Amin (integers; floats only take the Sum route).
template <class T>
__device__ __forceinline__ T identity_of(int reduce) {
  if constexpr (std::is_integral_v<T>) {
    if (reduce == detail::kReduceAmax) return std::is_same_v<T, int64_t> ? static_cast<T>(INT64_MIN) : static_cast<T>(INT32_MIN);
    if (reduce == detail::kReduceAmin) return std::is_same_v<T, int64_t> ? static_cast<T>(INT64_MAX) : static_cast<T>(INT32_MAX);
    return T{0};
  } else {
    return dev::from_acc<T>(0.0);
  }
}

// Integer atomics (int32_t / int64_t): a wrapping add, max or min. Each is
// commutative and associative on integers, so the result's bits do not
// depend on the order the threads arrive in.
template <class T>
__device__ __forceinline__ void atomic_int_to(int reduce, T* addr, T x) {
  static_assert(std::is_same_v<T, int32_t> || std::is_same_v<T, int64_t>);
  if constexpr (std::is_same_v<T, int32_t>) {
    if (reduce == detail::kReduceAmax) atomicMax(addr, x);
    else if (reduce == detail::kReduceAmin) atomicMin(addr, x);
    else atomicAdd(addr, x);  // two's complement: wraps
  } else {
    if (reduce == detail::kReduceAmax) atomicMax(reinterpret_cast<long long*>(addr), static_cast<long long>(x));
    else if (reduce == detail::kReduceAmin) atomicMin(reinterpret_cast<long long*>(addr), static_cast<long long>(x));
    else atomicAdd(reinterpret_cast<unsigned long long*>(addr), static_cast<unsigned long long>(x));
  }
}

// The atomic route. Floats (opt-in, reduce Sum): one thread per index element adds its
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
      out[offset_of(l.rank, c, l.out_stride)] = identity_of<T>(l.reduce);
    } else {
      const T x = l.use_value ? value_as<T>(l) : static_cast<const T*>(l.src)[offset_of(l.rank, c, l.src_stride)];
      c[l.dim] = v;
      if constexpr (std::is_integral_v<T>) atomic_int_to(l.reduce, out + offset_of(l.rank, c, l.out_stride), x);
      else atomic_add_to(l, out, c, x);
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
    if constexpr (std::is_integral_v<T> && sizeof(T) < 4) {
      return Status(StatusCode::Unsupported, "ScatterPlan: no atomic route for 8 / 16-bit integers");
    } else {
      return l.index_dtype == DType::I32 ? scatter_atomic<T, int32_t>(l, s) : scatter_atomic<T, int64_t>(l, s);
    }
  }
  if (l.rows) return l.ws.wide ? scatter_rows<T, uint64_t>(l, s) : scatter_rows<T, uint32_t>(l, s);
  return l.ws.wide ? scatter_sorted<T, uint64_t>(l, s) : scatter_sorted<T, uint32_t>(l, s);
}

}  // namespace
}  // namespace kern

ScatterWorkspace scatter_workspace(int64_t n, int64_t self_numel, size_t value_bytes, int64_t rows,
                                   int64_t size_dim) {
  ScatterWorkspace w;
  w.wide = self_numel >= int64_t{0xffffffff};  // the skip key (self_numel) must fit
  const size_t key_bytes = w.wide ? sizeof(uint64_t) : sizeof(uint32_t);
  const size_t items = static_cast<size_t>(n);
  size_t off = 0;
  w.keys_in = off, off += kern::align256(items * key_bytes);
  w.keys_out = off, off += kern::align256(items * key_bytes);
  // values: the contributions (n of value_bytes), or the row path's positions (rows of 4 bytes)
  const size_t vals = std::max(items * value_bytes, static_cast<size_t>(rows) * sizeof(uint32_t));
  w.vals_in = off, off += kern::align256(vals);
  w.vals_out = off, off += kern::align256(vals);
  w.temp = off;
  const size_t sort = n == 0 ? 0
                     : w.wide ? kern::sort_bytes_for<uint64_t>(n, self_numel, value_bytes)
                              : kern::sort_bytes_for<uint32_t>(n, self_numel, value_bytes);
  // The row path sorts rows (key, uint32_t position) pairs on the bits of size_dim.
  size_t row_sort = 0;
  if (n > 0 && rows > 0) {
    if (w.wide) (void)cub::DeviceRadixSort::SortPairs(nullptr, row_sort, static_cast<const uint64_t*>(nullptr),
                                                      static_cast<uint64_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
                                                      static_cast<uint32_t*>(nullptr), static_cast<int>(rows), 0,
                                                      kern::key_bits(size_dim));
    else (void)cub::DeviceRadixSort::SortPairs(nullptr, row_sort, static_cast<const uint32_t*>(nullptr),
                                               static_cast<uint32_t*>(nullptr), static_cast<const uint32_t*>(nullptr),
                                               static_cast<uint32_t*>(nullptr), static_cast<int>(rows), 0,
                                               kern::key_bits(size_dim));
  }
  w.temp_bytes = kern::align256(std::max(sort, row_sort));
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
    case DType::I8: return kern::scatter_typed<int8_t>(l, s);
    case DType::U8: return kern::scatter_typed<uint8_t>(l, s);
    case DType::I16: return kern::scatter_typed<int16_t>(l, s);
    case DType::I32: return kern::scatter_typed<int32_t>(l, s);
    case DType::I64: return kern::scatter_typed<int64_t>(l, s);
    default: break;
  }
  return Status(StatusCode::Unsupported, "ScatterPlan: CUDA kernel needs f32, f64, f16, bf16, i8, u8, i16, i32 or i64");
}

}  // namespace baracuda::indexing::cuda
