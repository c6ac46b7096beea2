// The dtype-independent half of the embedding backward: the error word, the
// (key, position) pairs, CUB's stable radix sort and the run starts
// (launch.hpp: sort_indices), and the sort / run starts IndexUpdatePlan shares
// (launch.hpp: sort_pairs, run_starts). Keys are the rows as 32-bit values, V for an
// index that contributes nothing (out of range, or padding_idx), so those sort
// last; only the bits that V needs are sorted.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_scan.cuh>

#include <algorithm>
#include <cstdint>

#include "core/cuda_device.hpp"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/launch.hpp"

namespace baracuda::indexing::cuda {

namespace kern {
namespace {

constexpr int kThreads = 256;

template <class I>
__global__ void __launch_bounds__(kThreads)
    make_keys_kernel(const BackwardLaunch l, const I* __restrict__ idx, uint32_t* __restrict__ keys,
                     int32_t* __restrict__ pos) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride) {
    const int64_t v = static_cast<int64_t>(idx[offsets_of(l.map, p).idx]);
    const bool ok = v >= 0 && v < l.V;
    if (!ok) record_bad(l.workspace, p);
    keys[p] = ok && v != l.padding_idx ? static_cast<uint32_t>(v) : static_cast<uint32_t>(l.V);
    pos[p] = static_cast<int32_t>(p);
  }
}

// flags[i] = 1 where sorted entry i starts the run of a contributing row.
__global__ void __launch_bounds__(kThreads)
    run_flags_kernel(const uint32_t* __restrict__ keys, int64_t n, uint32_t skip, int32_t* __restrict__ flags) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride)
    flags[i] = keys[i] != skip && (i == 0 || keys[i - 1] != keys[i]) ? 1 : 0;
}

// row_start[v] = the first sorted entry with key >= v, v in [0, V].
__global__ void __launch_bounds__(kThreads)
    row_start_kernel(const uint32_t* __restrict__ keys, int64_t n, int64_t V, int32_t* __restrict__ row_start) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t v = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; v <= V; v += stride)
    row_start[v] = static_cast<int32_t>(lower_bound_u32(keys, n, static_cast<uint32_t>(v)));
}

unsigned blocks_for(int64_t items) {
  const int64_t b = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(std::clamp<int64_t>(b, 1, int64_t{1} << 20));
}

}  // namespace
}  // namespace kern

namespace {

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

// Bits of the keys: enough for V (the skip key).
int key_bits(int64_t V) {
  int bits = 1;
  while (bits < 32 && (int64_t{1} << bits) <= V) ++bits;
  return bits;
}

Status status_of(cudaError_t e, const char* what) { return baracuda::detail::cuda_status(static_cast<int>(e), what); }

}  // namespace

BackwardWorkspace backward_workspace(int64_t n, int64_t V, bool compact) {
  BackwardWorkspace w;
  const size_t items = static_cast<size_t>(n) * sizeof(uint32_t);
  size_t off = 0;
  w.keys_in = off, off += align256(items);
  w.keys_out = off, off += align256(items);
  w.pos_in = off, off += align256(items);
  w.pos_out = off, off += align256(items);
  w.run_id = w.keys_in;
  if (!compact) w.row_start = off, off += align256(static_cast<size_t>(V + 1) * sizeof(int32_t));
  w.temp = off;
  size_t sort_bytes = 0, scan_bytes = 0;
  if (n > 0) {
    // Size queries only (null storage): nothing runs. Errors show again at run().
    sort_bytes = sort_pairs_temp_bytes(n, V);
    if (compact)
      (void)cub::DeviceScan::InclusiveSum(nullptr, scan_bytes, static_cast<const int32_t*>(nullptr),
                                          static_cast<int32_t*>(nullptr), static_cast<int>(n));
  }
  w.temp_bytes = align256(std::max(sort_bytes, scan_bytes));
  w.total = off + w.temp_bytes;
  return w;
}

Status sort_indices(const BackwardLaunch& l) {
  constexpr const char* kWhat = "EmbeddingBackwardPlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  auto* keys_in = reinterpret_cast<uint32_t*>(ws + l.ws.keys_in);
  auto* keys_out = reinterpret_cast<uint32_t*>(ws + l.ws.keys_out);
  auto* pos_in = reinterpret_cast<int32_t*>(ws + l.ws.pos_in);
  auto* pos_out = reinterpret_cast<int32_t*>(ws + l.ws.pos_out);
  BARACUDA_RETURN_IF_ERROR(status_of(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s), kWhat));
  if (l.n > 0) {
    if (l.index_dtype == DType::I32)
      kern::make_keys_kernel<int32_t><<<kern::blocks_for(l.n), kern::kThreads, 0, s>>>(
          l, static_cast<const int32_t*>(l.indices), keys_in, pos_in);
    else
      kern::make_keys_kernel<int64_t><<<kern::blocks_for(l.n), kern::kThreads, 0, s>>>(
          l, static_cast<const int64_t*>(l.indices), keys_in, pos_in);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
    BARACUDA_RETURN_IF_ERROR(sort_pairs(ws + l.ws.temp, l.ws.temp_bytes, keys_in, keys_out, pos_in, pos_out, l.n,
                                        l.V, s, "EmbeddingBackwardPlan: radix sort"));
  }
  if (l.compact) {
    if (l.n == 0) return status_of(cudaMemsetAsync(l.count, 0, sizeof(int64_t), s), kWhat);
    int32_t* flags = pos_in;  // free after the sort
    auto* run_id = reinterpret_cast<int32_t*>(ws + l.ws.run_id);
    kern::run_flags_kernel<<<kern::blocks_for(l.n), kern::kThreads, 0, s>>>(keys_out, l.n, static_cast<uint32_t>(l.V),
                                                                             flags);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
    size_t temp_bytes = l.ws.temp_bytes;
    return status_of(cub::DeviceScan::InclusiveSum(ws + l.ws.temp, temp_bytes, flags, run_id, static_cast<int>(l.n), s),
                     "EmbeddingBackwardPlan: scan");
  }
  return run_starts(keys_out, l.n, l.V, reinterpret_cast<int32_t*>(ws + l.ws.row_start), s, kWhat);
}

// ---- shared with IndexUpdatePlan, IndexPutPlan and PutPlan (launch.hpp) ----------------
PutWorkspace put_workspace(int64_t n, int64_t V) {
  PutWorkspace w;
  const size_t items = static_cast<size_t>(n) * sizeof(uint32_t);
  size_t off = 0;
  w.keys_in = off, off += align256(items);
  w.keys_out = off, off += align256(items);
  w.pos_in = off, off += align256(items);
  w.pos_out = off, off += align256(items);
  w.temp = off;
  w.temp_bytes = align256(sort_pairs_temp_bytes(n, V));
  w.total = off + w.temp_bytes;
  return w;
}

size_t sort_pairs_temp_bytes(int64_t n, int64_t V) {
  size_t bytes = 0;
  if (n > 0)  // a size query only (null storage): nothing runs; errors show again at the sort
    (void)cub::DeviceRadixSort::SortPairs(nullptr, bytes, static_cast<const uint32_t*>(nullptr),
                                          static_cast<uint32_t*>(nullptr), static_cast<const int32_t*>(nullptr),
                                          static_cast<int32_t*>(nullptr), static_cast<int>(n), 0, key_bits(V));
  return bytes;
}

Status sort_pairs(void* temp, size_t temp_bytes, const uint32_t* keys_in, uint32_t* keys_out, const int32_t* pos_in,
                  int32_t* pos_out, int64_t n, int64_t V, void* stream, const char* what) {
  if (n <= 0) return Status::ok();
  return status_of(cub::DeviceRadixSort::SortPairs(temp, temp_bytes, keys_in, keys_out, pos_in, pos_out,
                                                   static_cast<int>(n), 0, key_bits(V),
                                                   static_cast<cudaStream_t>(stream)),
                   what);
}

Status run_starts(const uint32_t* keys, int64_t n, int64_t V, int32_t* row_start, void* stream, const char* what) {
  kern::row_start_kernel<<<kern::blocks_for(V + 1), kern::kThreads, 0, static_cast<cudaStream_t>(stream)>>>(
      keys, n, V, row_start);
  return status_of(cudaGetLastError(), what);
}

}  // namespace baracuda::indexing::cuda
