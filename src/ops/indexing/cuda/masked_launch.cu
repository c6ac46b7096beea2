// The masked plans' kernels (NonzeroPlan, MaskedSelectPlan, MaskedScatterPlan)
// in one translation unit. Step 1, shared: CUB's DeviceSelect::If over the
// positions 0..n-1 of the walked row-major shape keeps those whose predicate
// element (x for nonzero, the bool mask otherwise; read through its strides,
// stride 0 where it broadcasts) is nonzero, writing them in order and their
// count into the workspace. Step 2, per op: one grid-stride kernel reads the
// count from device memory (no host sync) and writes the result. Elements move
// as raw bits: the kernels are instantiated per element SIZE, never per dtype.
#include <cub/device/device_select.cuh>
#include <thrust/iterator/counting_iterator.h>

#include <cstdint>
#include <string>

#include "core/cuda_device.hpp"
#include "ops/indexing/cuda/embedding_common.cuh"
#include "ops/indexing/masked_launch.hpp"

namespace baracuda::indexing::cuda {

namespace kern {
namespace {

constexpr int kThreads = 256;
constexpr size_t kAlign = 256;

size_t align_up(size_t b) { return (b + kAlign - 1) / kAlign * kAlign; }

unsigned blocks_for(int64_t items) {
  const int64_t b = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 1 ? 1 : (b > (int64_t{1} << 20) ? (int64_t{1} << 20) : b));
}

// A view over the walked shape: element offset of row-major position p (the
// offset is p itself when the view is row-major contiguous: no division).
struct Walk {
  int rank = 0;
  bool contiguous = false;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kMaxRank] = {};

  __device__ __forceinline__ int64_t offset(int64_t p) const {
    if (contiguous) return p;
    int64_t o = 0;
    for (int d = rank - 1; d >= 0; --d) {
      const int64_t e = shape[d];
      o += (p % e) * stride[d];
      p /= e;
    }
    return o;
  }
};

Walk make_walk(int rank, const int64_t* shape, const int64_t* stride) {
  Walk w;
  w.rank = rank;
  int64_t expect = 1;
  bool contiguous = true;
  for (int d = rank - 1; d >= 0; --d) {
    w.shape[d] = shape[d];
    w.stride[d] = stride[d];
    if (shape[d] != 1 && stride[d] != expect) contiguous = false;
    expect *= shape[d];
  }
  w.contiguous = contiguous;
  return w;
}

// torch's nonzero test on raw bits: any bit set, the sign bit excluded for
// floats (so -0.0 is zero; NaN and every other float are nonzero).
template <class E>
struct NonzeroPred {
  Walk w;
  const E* base;
  E value_mask;
  __device__ __forceinline__ bool operator()(int32_t p) const { return (base[w.offset(p)] & value_mask) != E(0); }
};

template <class E>
E value_mask(bool is_float) {
  return is_float ? static_cast<E>(~(E(1) << (8 * sizeof(E) - 1))) : static_cast<E>(~E(0));
}

template <class E>
cudaError_t select_positions(void* temp, size_t& temp_bytes, const MaskedLaunch& l, int32_t* pos, int32_t* count,
                             cudaStream_t s) {
  NonzeroPred<E> pred{make_walk(l.rank, l.shape, l.pred_stride), static_cast<const E*>(l.pred),
                      value_mask<E>(l.pred_float)};
  return cub::DeviceSelect::If(temp, temp_bytes, thrust::counting_iterator<int32_t>(0), pos, count,
                               static_cast<int64_t>(l.n), pred, s);
}

// Nonzero: row k = the coordinates of position pos[k] (k < count), fill_value
// past count; count (int64) written by thread 0.
__global__ void __launch_bounds__(kThreads)
    nonzero_rows_kernel(const MaskedLaunch l, const int32_t* __restrict__ pos, const int32_t* __restrict__ count) {
  const int64_t c = *count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (first == 0 && l.count) *static_cast<int64_t*>(l.count) = c;
  int64_t* out = static_cast<int64_t*>(l.out);
  for (int64_t k = first; k < l.capacity; k += stride) {
    int64_t* row = out + k * l.out_stride[0];
    if (k < c) {
      int64_t p = pos[k];
      for (int d = l.rank - 1; d >= 0; --d) {
        row[d * l.out_stride[1]] = p % l.shape[d];
        p /= l.shape[d];
      }
    } else {
      for (int d = 0; d < l.rank; ++d) row[d * l.out_stride[1]] = static_cast<int64_t>(l.fill_bits);
    }
  }
}

// masked_select: out[k] = x at position pos[k] (k < count), the fill past count.
template <class E>
__global__ void __launch_bounds__(kThreads)
    select_kernel(const MaskedLaunch l, const Walk x, const int32_t* __restrict__ pos,
                  const int32_t* __restrict__ count) {
  const int64_t c = *count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const int64_t first = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x;
  if (first == 0 && l.count) *static_cast<int64_t*>(l.count) = c;
  const E* in = static_cast<const E*>(l.data);
  E* out = static_cast<E*>(l.out);
  const E fill = static_cast<E>(l.fill_bits);
  for (int64_t k = first; k < l.capacity; k += stride)
    out[k * l.out_stride[0]] = k < c ? in[x.offset(pos[k])] : fill;
}

// masked_scatter, out of place: out = self (any strides).
template <class E>
__global__ void __launch_bounds__(kThreads) copy_kernel(const MaskedLaunch l, const Walk self, const Walk out) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const E* in = static_cast<const E*>(l.data);
  E* o = static_cast<E*>(l.out);
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < l.n; p += stride)
    o[out.offset(p)] = in[self.offset(p)];
}

// masked_scatter: out[pos[k]] = source[k] for k < count. The true positions
// past the source's end are skipped; the first of them (k = numel(source):
// the lowest, positions are increasing) is recorded in the error word.
template <class E>
__global__ void __launch_bounds__(kThreads)
    scatter_kernel(const MaskedLaunch l, const Walk out, const Walk src, const int32_t* __restrict__ pos,
                   const int32_t* __restrict__ count) {
  const int64_t c = *count;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  const E* source = static_cast<const E*>(l.source);
  E* o = static_cast<E*>(l.out);
  for (int64_t k = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; k < c; k += stride) {
    const int64_t p = pos[k];
    if (k >= l.source_numel) {
      if (k == l.source_numel) record_bad(l.workspace, p);
      continue;
    }
    o[out.offset(p)] = source[src.offset(k)];
  }
}

template <class E>
void launch_data(const MaskedLaunch& l, const int32_t* pos, const int32_t* count, cudaStream_t s) {
  const Walk walk_data = make_walk(l.rank, l.shape, l.data_stride);
  if (l.op == MaskedOp::Select) {
    const int64_t rows = l.capacity > 0 ? l.capacity : 1;  // one thread writes count even with no rows
    select_kernel<E><<<blocks_for(rows), kThreads, 0, s>>>(l, walk_data, pos, count);
    return;
  }
  const Walk walk_out = make_walk(l.rank, l.shape, l.out_stride);
  if (!l.in_place) copy_kernel<E><<<blocks_for(l.n), kThreads, 0, s>>>(l, walk_data, walk_out);
  const Walk walk_src = make_walk(l.source_rank, l.source_shape, l.source_stride);
  scatter_kernel<E><<<blocks_for(l.n), kThreads, 0, s>>>(l, walk_out, walk_src, pos, count);
}

cudaError_t select_by_size(int bytes, void* temp, size_t& temp_bytes, const MaskedLaunch& l, int32_t* pos,
                           int32_t* count, cudaStream_t s) {
  switch (bytes) {
    case 1: return select_positions<uint8_t>(temp, temp_bytes, l, pos, count, s);
    case 2: return select_positions<uint16_t>(temp, temp_bytes, l, pos, count, s);
    case 4: return select_positions<uint32_t>(temp, temp_bytes, l, pos, count, s);
    case 8: return select_positions<uint64_t>(temp, temp_bytes, l, pos, count, s);
    default: return cudaErrorInvalidValue;
  }
}

const char* plan_name(MaskedOp op) {
  switch (op) {
    case MaskedOp::Nonzero: return "NonzeroPlan";
    case MaskedOp::Select: return "MaskedSelectPlan";
    case MaskedOp::Scatter: return "MaskedScatterPlan";
  }
  return "masked plan";
}

}  // namespace
}  // namespace kern

MaskedWorkspace masked_workspace(int64_t n, int pred_bytes) {
  MaskedWorkspace w;
  w.positions = 0;
  w.count = kern::align_up(static_cast<size_t>(n) * sizeof(int32_t));
  w.temp = w.count + kern::kAlign;
  if (n > 0) {
    MaskedLaunch probe;
    probe.n = n;
    if (kern::select_by_size(pred_bytes, nullptr, w.temp_bytes, probe, nullptr, nullptr, nullptr) != cudaSuccess)
      w.temp_bytes = 0;
  }
  w.total = w.temp + kern::align_up(w.temp_bytes);
  return w;
}

Status launch_masked(const MaskedLaunch& l) {
  const char* name = kern::plan_name(l.op);
  const std::string what = std::string(name) + ": kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  auto* base = static_cast<unsigned char*>(l.workspace);
  auto* pos = reinterpret_cast<int32_t*>(base + kErrorWordBytes + l.ws.positions);
  auto* count = reinterpret_cast<int32_t*>(base + kErrorWordBytes + l.ws.count);
  void* temp = base + kErrorWordBytes + l.ws.temp;
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(
      static_cast<int>(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s)), what.c_str()));
  if (l.n == 0) {
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(
        static_cast<int>(cudaMemsetAsync(count, 0, sizeof(int32_t), s)), what.c_str()));
  } else {
    size_t temp_bytes = l.ws.temp_bytes;
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(
        static_cast<int>(kern::select_by_size(l.pred_bytes, temp, temp_bytes, l, pos, count, s)), what.c_str()));
  }
  switch (l.op) {
    case MaskedOp::Nonzero: {
      const int64_t rows = l.capacity > 0 ? l.capacity : 1;  // one thread writes count even with no rows
      kern::nonzero_rows_kernel<<<kern::blocks_for(rows), kern::kThreads, 0, s>>>(l, pos, count);
      break;
    }
    case MaskedOp::Select:
    case MaskedOp::Scatter:
      if (l.op == MaskedOp::Scatter && l.n == 0) break;
      switch (l.elem_bytes) {
        case 1: kern::launch_data<uint8_t>(l, pos, count, s); break;
        case 2: kern::launch_data<uint16_t>(l, pos, count, s); break;
        case 4: kern::launch_data<uint32_t>(l, pos, count, s); break;
        case 8: kern::launch_data<uint64_t>(l, pos, count, s); break;
        default: return Status(StatusCode::Unsupported, std::string(name) + ": CUDA kernels need 1, 2, 4 or 8-byte elements");
      }
      break;
  }
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what.c_str());
}

}  // namespace baracuda::indexing::cuda
