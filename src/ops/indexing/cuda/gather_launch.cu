// GatherPlan's kernel: one thread per output element (grid-stride). The
// element is copied as raw bits (E = an unsigned integer of the dtype's size),
// so one kernel per element size serves every dtype. A bad index writes zero
// and records its position in the error word (embedding_common.cuh).
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_device.hpp"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/cuda/gather_scatter_common.cuh"

namespace baracuda::indexing::cuda {

namespace kern {
namespace {

constexpr int kThreads = 256;

template <class E, class I>
__global__ void __launch_bounds__(kThreads) gather_kernel(const GatherLaunch l) {
  const E* x = static_cast<const E*>(l.x);
  E* out = static_cast<E*>(l.out);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride) {
    int64_t c[kMaxRank];
    coords_of(l.rank, l.shape, static_cast<uint32_t>(p), c);  // n < 2^31 (select())
    const int64_t v = load_index<I>(l.index, offset_of(l.rank, c, l.idx_stride));
    const int64_t o = offset_of(l.rank, c, l.out_stride);
    if (v < 0 || v >= l.size_dim) {
      record_bad(l.error_word, p);
      out[o] = E(0);
      continue;
    }
    c[l.dim] = v;
    out[o] = x[offset_of(l.rank, c, l.x_stride)];
  }
}

template <class E>
void launch_typed(const GatherLaunch& l, cudaStream_t s) {
  if (l.index_dtype == DType::I32) gather_kernel<E, int32_t><<<grid_for(l.n, kThreads), kThreads, 0, s>>>(l);
  else gather_kernel<E, int64_t><<<grid_for(l.n, kThreads), kThreads, 0, s>>>(l);
}

}  // namespace
}  // namespace kern

Status launch_gather(const GatherLaunch& l) {
  constexpr const char* kWhat = "GatherPlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(
      baracuda::detail::cuda_status(static_cast<int>(cudaMemsetAsync(l.error_word, 0xff, sizeof(uint64_t), s)), kWhat));
  if (l.n == 0) return Status::ok();
  switch (l.elem_bytes) {
    case 1: kern::launch_typed<uint8_t>(l, s); break;
    case 2: kern::launch_typed<uint16_t>(l, s); break;
    case 4: kern::launch_typed<uint32_t>(l, s); break;
    case 8: kern::launch_typed<uint64_t>(l, s); break;
    default: return Status(StatusCode::Unsupported, "GatherPlan: CUDA kernel needs 1, 2, 4 or 8-byte elements");
  }
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), kWhat);
}

}  // namespace baracuda::indexing::cuda
