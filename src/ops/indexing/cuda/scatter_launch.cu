// ScatterPlan's CUDA path, without atomics (see the header comment of
// include/baracuda/ops/indexing.hpp):
//   1. reset the error word; out of place, copy self to out (raw bits);
//   2. keys: each index element's destination, the row-major offset in self's
//      shape (self_numel for a bad index: recorded, sorted last, skipped);
//      values: its position;
//   3. CUB's stable radix sort of (key, position) on the bits the keys need
//      (32-bit keys unless self has 2^32 - 1 elements or more), so each
//      destination's contributions lie together in position order;
//   4. one thread per run of equal keys reduces it in that order
//      (scatter_combine.hpp, shared with the CPU reference) and writes once.
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
template <class E>
__global__ void __launch_bounds__(kThreads) copy_self_kernel(const ScatterLaunch l) {
  const E* self = static_cast<const E*>(l.self);
  E* out = static_cast<E*>(l.out);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; q < l.self_numel; q += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.self_shape, q, c);
    out[offset_of(l.rank, c, l.out_stride)] = self[offset_of(l.rank, c, l.self_stride)];
  }
}

template <class K, class I>
__global__ void __launch_bounds__(kThreads)
    scatter_keys_kernel(const ScatterLaunch l, K* __restrict__ keys, int32_t* __restrict__ pos, void* error_word) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.idx_shape, p, c);
    const int64_t v = load_index<I>(l.index, offset_of(l.rank, c, l.idx_stride));
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
    pos[p] = static_cast<int32_t>(p);
  }
}

template <class T, class Acc>
__device__ __forceinline__ Acc contribution(const ScatterLaunch& l, int32_t p) {
  if (l.use_value) return static_cast<Acc>(l.value);
  int64_t c[kMaxRank];
  coords_of(l.rank, l.idx_shape, p, c);
  return dev::to_acc<Acc>(static_cast<const T*>(l.src)[offset_of(l.rank, c, l.src_stride)]);
}

// Thread i owns sorted entry i when it starts a run of a valid destination.
template <class T, class K>
__global__ void __launch_bounds__(kThreads)
    scatter_runs_kernel(const ScatterLaunch l, const K* __restrict__ keys, const int32_t* __restrict__ pos) {
  using Acc = std::conditional_t<std::is_same_v<T, double>, double, float>;
  const K skip = static_cast<K>(l.self_numel);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < l.n; i += stride) {
    const K key = keys[i];
    if (key == skip || (i > 0 && keys[i - 1] == key)) continue;
    int64_t e = i + 1;
    while (e < l.n && keys[e] == key) ++e;
    int64_t c[kMaxRank];
    coords_of(l.rank, l.self_shape, static_cast<int64_t>(key), c);
    const int64_t so = offset_of(l.rank, c, l.self_stride), oo = offset_of(l.rank, c, l.out_stride);
    Acc acc;
    if (l.reduce == detail::kReduceNone) {
      acc = contribution<T, Acc>(l, pos[e - 1]);  // the last position wins
    } else {
      int64_t j = i;
      long long count = 1;
      if (l.include_self) {
        acc = dev::to_acc<Acc>(static_cast<const T*>(l.self)[so]);
      } else {
        acc = contribution<T, Acc>(l, pos[j]);
        ++j;
      }
      for (; j < e; ++j, ++count) acc = detail::scatter_combine<Acc>(l.reduce, acc, contribution<T, Acc>(l, pos[j]));
      acc = detail::scatter_finish<Acc>(l.reduce, acc, count);
    }
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

template <class K>
size_t sort_bytes(int64_t n, int64_t self_numel) {
  size_t bytes = 0;
  // A size query (null storage): nothing runs; errors show again at run().
  (void)cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const K*>(nullptr), static_cast<K*>(nullptr),
                                        static_cast<const int32_t*>(nullptr), static_cast<int32_t*>(nullptr),
                                        static_cast<int>(n), 0, key_bits(self_numel));
  return bytes;
}

template <class T, class K>
Status scatter_sorted(const ScatterLaunch& l, cudaStream_t s) {
  constexpr const char* kWhat = "ScatterPlan: kernel launch";
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  auto* keys_in = reinterpret_cast<K*>(ws + l.ws.keys_in);
  auto* keys_out = reinterpret_cast<K*>(ws + l.ws.keys_out);
  auto* pos_in = reinterpret_cast<int32_t*>(ws + l.ws.pos_in);
  auto* pos_out = reinterpret_cast<int32_t*>(ws + l.ws.pos_out);
  const unsigned grid = grid_for(l.n, kThreads);
  if (l.index_dtype == DType::I32)
    scatter_keys_kernel<K, int32_t><<<grid, kThreads, 0, s>>>(l, keys_in, pos_in, l.workspace);
  else
    scatter_keys_kernel<K, int64_t><<<grid, kThreads, 0, s>>>(l, keys_in, pos_in, l.workspace);
  BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  size_t temp_bytes = l.ws.temp_bytes;
  BARACUDA_RETURN_IF_ERROR(status_of(cub::DeviceRadixSort::SortPairs(ws + l.ws.temp, temp_bytes, keys_in, keys_out,
                                                                      pos_in, pos_out, static_cast<int>(l.n), 0,
                                                                      key_bits(l.self_numel), s),
                                     "ScatterPlan: radix sort"));
  scatter_runs_kernel<T, K><<<grid, kThreads, 0, s>>>(l, keys_out, pos_out);
  return status_of(cudaGetLastError(), kWhat);
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
    coords_of(l.rank, l.idx_shape, p, c);
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
      atomicAdd(out + offset_of(l.rank, c, l.out_stride), x);
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
    using E = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;
    copy_self_kernel<E><<<grid_for(l.self_numel, kThreads), kThreads, 0, s>>>(l);
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

ScatterWorkspace scatter_workspace(int64_t n, int64_t self_numel) {
  ScatterWorkspace w;
  w.wide = self_numel >= int64_t{0xffffffff};  // the skip key (self_numel) must fit
  const size_t key_bytes = w.wide ? sizeof(uint64_t) : sizeof(uint32_t);
  const size_t items = static_cast<size_t>(n);
  size_t off = 0;
  w.keys_in = off, off += kern::align256(items * key_bytes);
  w.keys_out = off, off += kern::align256(items * key_bytes);
  w.pos_in = off, off += kern::align256(items * sizeof(int32_t));
  w.pos_out = off, off += kern::align256(items * sizeof(int32_t));
  w.temp = off;
  const size_t sort = n == 0 ? 0
                     : w.wide ? kern::sort_bytes<uint64_t>(n, self_numel)
                              : kern::sort_bytes<uint32_t>(n, self_numel);
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
