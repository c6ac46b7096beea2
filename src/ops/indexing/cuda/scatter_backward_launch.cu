// ScatterReduceBackwardPlan's CUDA path, without atomics (see the header
// comment of include/baracuda/ops/indexing.hpp):
//   1. reset the error word; grad_self = grad everywhere (raw bits: the value
//      of every destination without a contribution); grad_src = 0 where src
//      is larger than index (elements no index position covers);
//   2. keys: each index element's destination, the row-major offset in self's
//      shape (self_numel for a bad index: recorded, its grad_src written 0,
//      sorted last, skipped); values: its position;
//   3. CUB's stable radix sort of (key, position) on the bits the keys need,
//      in ScatterPlan's workspace layout (scatter_workspace(n, numel(self), 4)),
//      so each destination's members lie together in position order;
//   4. one thread per run of equal keys runs scatter_backward_run (shared with
//      the CPU reference) over its members and writes grad_self[dest] and every
//      member's grad_src.
#include <cub/device/device_radix_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/cuda/gather_scatter_common.cuh"
#include "ops/indexing/scatter_backward_combine.hpp"
#include "ops/indexing/scatter_backward_launch.hpp"

namespace baracuda::indexing::cuda {

namespace kern {
namespace {

constexpr int kThreads = 256;
constexpr const char* kWhat = "ScatterReduceBackwardPlan: kernel launch";

template <class T>
using AccOf = std::conditional_t<std::is_same_v<T, double>, double, float>;

// grad_self = grad over self's shape (raw bits of E).
template <class E, class U>
__global__ void __launch_bounds__(kThreads) copy_grad_kernel(const ScatterBackwardLaunch l) {
  const E* grad = static_cast<const E*>(l.grad);
  E* out = static_cast<E*>(l.grad_self);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t q = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; q < l.self_numel; q += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.self_shape, static_cast<U>(q), c);
    out[offset_of(l.rank, c, l.gself_stride)] = grad[offset_of(l.rank, c, l.grad_stride)];
  }
}

// grad_src = 0 at the elements of src outside index's extent.
template <class E, class U>
__global__ void __launch_bounds__(kThreads) zero_outside_kernel(const ScatterBackwardLaunch l) {
  E* out = static_cast<E*>(l.grad_src);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.src_numel; p += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.src_shape, static_cast<U>(p), c);
    bool inside = true;
    for (int d = 0; d < l.rank; ++d) inside = inside && c[d] < l.idx_shape[d];
    if (!inside) out[offset_of(l.rank, c, l.gsrc_stride)] = E(0);
  }
}

// keys[p] = the destination of index element p, pos[p] = p.
template <class E, class K, class I>
__global__ void __launch_bounds__(kThreads)
    keys_kernel(const ScatterBackwardLaunch l, K* __restrict__ keys, uint32_t* __restrict__ pos) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.idx_shape, static_cast<uint32_t>(p), c);  // n < 2^31 (select())
    const int64_t v = load_index<I>(l.index, offset_of(l.rank, c, l.idx_stride));
    K key = static_cast<K>(l.self_numel);
    if (v < 0 || v >= l.self_shape[l.dim]) {
      record_bad(l.workspace, p);
      if (l.want_src) static_cast<E*>(l.grad_src)[offset_of(l.rank, c, l.gsrc_stride)] = E(0);
    } else {
      c[l.dim] = v;
      int64_t lin = 0;
      for (int d = 0; d < l.rank; ++d) lin = lin * l.self_shape[d] + c[d];
      key = static_cast<K>(lin);
    }
    keys[p] = key;
    pos[p] = static_cast<uint32_t>(p);
  }
}

// Thread i owns sorted entry i when it starts a run of a valid destination.
template <class T, class K>
__global__ void __launch_bounds__(kThreads)
    runs_kernel(const ScatterBackwardLaunch l, const K* __restrict__ keys, const uint32_t* __restrict__ pos) {
  using Acc = AccOf<T>;
  const K skip = static_cast<K>(l.self_numel);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < l.n; i += stride) {
    const K key = keys[i];
    if (key == skip || (i > 0 && keys[i - 1] == key)) continue;
    int64_t e = i + 1;
    while (e < l.n && keys[e] == key) ++e;
    int64_t c[kMaxRank];
    coords_of(l.rank, l.self_shape, key, c);  // K = uint32_t unless self_numel >= 2^32 - 1
    const Acc g = dev::to_acc<Acc>(static_cast<const T*>(l.grad)[offset_of(l.rank, c, l.grad_stride)]);
    const Acc self =
        l.self ? dev::to_acc<Acc>(static_cast<const T*>(l.self)[offset_of(l.rank, c, l.self_stride)]) : Acc(0);
    const Acc res =
        l.result ? dev::to_acc<Acc>(static_cast<const T*>(l.result)[offset_of(l.rank, c, l.result_stride)]) : Acc(0);
    auto member_coords = [&](long long j, int64_t* cc) {
      coords_of(l.rank, l.idx_shape, pos[i + j], cc);  // positions < 2^31
    };
    auto src_at = [&](long long j) -> Acc {
      int64_t cc[kMaxRank];
      member_coords(j, cc);
      return dev::to_acc<Acc>(static_cast<const T*>(l.src)[offset_of(l.rank, cc, l.src_stride)]);
    };
    auto put_src = [&](long long j, Acc v) {
      int64_t cc[kMaxRank];
      member_coords(j, cc);
      static_cast<T*>(l.grad_src)[offset_of(l.rank, cc, l.gsrc_stride)] = dev::from_acc<T>(v);
    };
    const Acc gs = detail::scatter_backward_run<Acc>(l.reduce, l.include_self, l.want_src, g, self, res,
                                                     static_cast<long long>(e - i), src_at, put_src);
    if (l.want_self) static_cast<T*>(l.grad_self)[offset_of(l.rank, c, l.gself_stride)] = dev::from_acc<T>(gs);
  }
}

template <class T>
using BitsOf = std::conditional_t<sizeof(T) == 2, uint16_t, std::conditional_t<sizeof(T) == 4, uint32_t, uint64_t>>;

int key_bits(int64_t skip) {
  int bits = 1;
  while (bits < 64 && (int64_t{1} << bits) <= skip) ++bits;
  return bits;
}

Status status_of(cudaError_t e, const char* what) { return baracuda::detail::cuda_status(static_cast<int>(e), what); }

template <class T, class K>
Status backward_sorted(const ScatterBackwardLaunch& l, cudaStream_t s) {
  using E = BitsOf<T>;
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  auto* keys_in = reinterpret_cast<K*>(ws + l.ws.keys_in);
  auto* keys_out = reinterpret_cast<K*>(ws + l.ws.keys_out);
  auto* pos_in = reinterpret_cast<uint32_t*>(ws + l.ws.vals_in);
  auto* pos_out = reinterpret_cast<uint32_t*>(ws + l.ws.vals_out);
  const unsigned grid = grid_for(l.n, kThreads);
  if (l.index_dtype == DType::I32)
    keys_kernel<E, K, int32_t><<<grid, kThreads, 0, s>>>(l, keys_in, pos_in);
  else
    keys_kernel<E, K, int64_t><<<grid, kThreads, 0, s>>>(l, keys_in, pos_in);
  BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  size_t temp_bytes = l.ws.temp_bytes;
  BARACUDA_RETURN_IF_ERROR(status_of(cub::DeviceRadixSort::SortPairs(ws + l.ws.temp, temp_bytes, keys_in, keys_out,
                                                                      pos_in, pos_out, static_cast<int>(l.n), 0,
                                                                      key_bits(l.self_numel), s),
                                     "ScatterReduceBackwardPlan: radix sort"));
  runs_kernel<T, K><<<grid, kThreads, 0, s>>>(l, keys_out, pos_out);
  return status_of(cudaGetLastError(), kWhat);
}

template <class T>
Status backward_typed(const ScatterBackwardLaunch& l, cudaStream_t s) {
  using E = BitsOf<T>;
  if (l.want_self && l.self_numel > 0) {
    if (l.self_numel < (int64_t{1} << 32))
      copy_grad_kernel<E, uint32_t><<<grid_for(l.self_numel, kThreads), kThreads, 0, s>>>(l);
    else
      copy_grad_kernel<E, uint64_t><<<grid_for(l.self_numel, kThreads), kThreads, 0, s>>>(l);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  }
  if (l.want_src && l.src_larger && l.src_numel > 0) {
    if (l.src_numel < (int64_t{1} << 32))
      zero_outside_kernel<E, uint32_t><<<grid_for(l.src_numel, kThreads), kThreads, 0, s>>>(l);
    else
      zero_outside_kernel<E, uint64_t><<<grid_for(l.src_numel, kThreads), kThreads, 0, s>>>(l);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  }
  if (l.n == 0) return Status::ok();
  return l.ws.wide ? backward_sorted<T, uint64_t>(l, s) : backward_sorted<T, uint32_t>(l, s);
}

}  // namespace
}  // namespace kern

Status launch_scatter_backward(const ScatterBackwardLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(kern::status_of(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s),
                                           "ScatterReduceBackwardPlan: error word reset"));
  switch (l.dtype) {
    case DType::F32: return kern::backward_typed<float>(l, s);
    case DType::F64: return kern::backward_typed<double>(l, s);
    case DType::F16: return kern::backward_typed<__half>(l, s);
    case DType::BF16: return kern::backward_typed<__nv_bfloat16>(l, s);
    default: break;
  }
  return Status(StatusCode::Unsupported, "ScatterReduceBackwardPlan: CUDA kernel needs f32, f64, f16 or bf16");
}

}  // namespace baracuda::indexing::cuda
