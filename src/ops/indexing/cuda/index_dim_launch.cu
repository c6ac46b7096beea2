// IndexSelectPlan / IndexUpdatePlan launches: the error word, the update's
// (slice, position) keys, the shared stable radix sort and run starts
// (embedding_sort.cu), and dtype dispatch to the kernel templates
// (index_dim_kernels.cuh, one generated TU per dtype listed in ../manifest.cmake).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>

#include "core/cuda_device.hpp"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/index_dim_launch.hpp"
#include "ops/indexing/launch.hpp"
#include "ops/indexing/manifest.hpp"  // generated from ops/indexing/manifest.cmake

namespace baracuda::indexing::cuda {

namespace kern {
template <class T>
Status launch_index_select_typed(const SelectLaunch& l);
template <class T>
Status launch_index_update_typed(const UpdateLaunch& l);

namespace {
constexpr int kKeyThreads = 256;

// keys[k] = the destination slice of position k (S for a bad index, which is
// recorded), pos[k] = k.
template <class I>
__global__ void __launch_bounds__(kKeyThreads)
    update_keys_kernel(const UpdateLaunch l, const I* __restrict__ idx, uint32_t* __restrict__ keys,
                       int32_t* __restrict__ pos) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kKeyThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kKeyThreads + threadIdx.x; p < l.n; p += stride) {
    int64_t v = static_cast<int64_t>(idx[p * l.index_stride]);
    if (l.wrap_negative && v < 0 && v >= -l.S) v += l.S;
    const bool ok = v >= 0 && v < l.S;
    if (!ok) record_bad(l.workspace, p);
    keys[p] = ok ? static_cast<uint32_t>(v) : static_cast<uint32_t>(l.S);
    pos[p] = static_cast<int32_t>(p);
  }
}
}  // namespace
}  // namespace kern

namespace {
size_t align256(size_t b) { return (b + 255) / 256 * 256; }
Status status_of(cudaError_t e, const char* what) { return baracuda::detail::cuda_status(static_cast<int>(e), what); }
}  // namespace

UpdateWorkspace update_workspace(int64_t n, int64_t S) {
  UpdateWorkspace w;
  const size_t items = static_cast<size_t>(n) * sizeof(uint32_t);
  size_t off = 0;
  w.keys_in = off, off += align256(items);
  w.keys_out = off, off += align256(items);
  w.pos_in = off, off += align256(items);
  w.pos_out = off, off += align256(items);
  w.row_start = off, off += align256(static_cast<size_t>(S + 1) * sizeof(int32_t));
  w.temp = off;
  w.temp_bytes = align256(sort_pairs_temp_bytes(n, S));
  w.total = off + w.temp_bytes;
  return w;
}

Status launch_index_select(const SelectLaunch& l) {
  constexpr const char* kWhat = "IndexSelectPlan: error word reset";
  BARACUDA_RETURN_IF_ERROR(
      status_of(cudaMemsetAsync(l.error_word, 0xff, sizeof(uint64_t), static_cast<cudaStream_t>(l.stream)), kWhat));
  if (l.outer * l.n * l.inner == 0) return Status::ok();
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_index_select_typed<T>(l);
    BARACUDA_INDEX_DIM_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "IndexSelectPlan: CUDA kernel needs f32, f64, f16, bf16, i32 or i64");
}

Status launch_index_update(const UpdateLaunch& l) {
  constexpr const char* kWhat = "IndexUpdatePlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  char* ws = static_cast<char*>(l.workspace) + kErrorWordBytes;
  auto* keys_in = reinterpret_cast<uint32_t*>(ws + l.ws.keys_in);
  auto* keys_out = reinterpret_cast<uint32_t*>(ws + l.ws.keys_out);
  auto* pos_in = reinterpret_cast<int32_t*>(ws + l.ws.pos_in);
  auto* pos_out = reinterpret_cast<int32_t*>(ws + l.ws.pos_out);
  BARACUDA_RETURN_IF_ERROR(status_of(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s), kWhat));
  if (l.n > 0) {
    const unsigned blocks = static_cast<unsigned>(std::clamp<int64_t>((l.n + 255) / 256, 1, int64_t{1} << 20));
    if (l.index_dtype == DType::I32)
      kern::update_keys_kernel<int32_t><<<blocks, kern::kKeyThreads, 0, s>>>(l, static_cast<const int32_t*>(l.index),
                                                                               keys_in, pos_in);
    else
      kern::update_keys_kernel<int64_t><<<blocks, kern::kKeyThreads, 0, s>>>(l, static_cast<const int64_t*>(l.index),
                                                                               keys_in, pos_in);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
    BARACUDA_RETURN_IF_ERROR(sort_pairs(ws + l.ws.temp, l.ws.temp_bytes, keys_in, keys_out, pos_in, pos_out, l.n, l.S,
                                        l.stream, "IndexUpdatePlan: radix sort"));
  }
  BARACUDA_RETURN_IF_ERROR(run_starts(keys_out, l.n, l.S, reinterpret_cast<int32_t*>(ws + l.ws.row_start), l.stream,
                                      kWhat));
  if (l.outer * l.S * l.inner == 0) return Status::ok();
  switch (l.dtype) {
#define CASE(DT, T) \
  case DType::DT: return kern::launch_index_update_typed<T>(l);
    BARACUDA_INDEX_DIM_KERNELS(CASE)
#undef CASE
    default: break;
  }
  return Status(StatusCode::Unsupported, "IndexUpdatePlan: CUDA kernel needs f32, f64, f16, bf16, i32 or i64");
}

}  // namespace baracuda::indexing::cuda
