// The multi-tensor engine: one launch over a list of tensors of different
// sizes, for any per-element functor (the optimizers, the norms, scale, zero,
// and any later list op).
//
// Table (in the KERNEL PARAMETERS, __grid_constant__: CUDA 12.1+ allows 32764
// bytes of parameters on sm_70+): for each tensor of the launch its L role
// pointers, numel, global index of its first element (the whole list's
// numbering, for counter-based random numbers), its first chunk and whether
// all its pointers are 16-byte aligned. Tensors are cut into chunks of kChunk
// elements; chunk_begin[] is the running chunk count, so the work item
// "(tensor, chunk)" of global chunk c is found by walking chunk_begin (a block
// visits its chunks c = blockIdx.x, + gridDim.x, ... in increasing order, so
// the walk is amortized over the block's life). This replaces a per-block
// (tensor, chunk) table: the grid needs no more blocks than the GPU holds at
// once, and the table's size depends on the tensor count only.
//
// The host side (TableBuilder) fills a Table on the caller's stack and calls
// the flush callback each time it is full or the list ends: no allocation, so
// a launch is capture-safe.
//
// Functor F:
//   static constexpr int kVec;               elements per vector step (16 bytes of the narrowest dtype)
//   struct Block;                            per-block state (scalars, accumulators)
//   __device__ bool begin(Block&) const;     false: the block does nothing (e.g. found_inf)
//   template <int V> __device__ void elems(Block&, const Table&, int t, int64_t i) const;
//                                            elements [i, i + V) of tensor t (V == kVec: 16-byte aligned)
//   __device__ void end(Block&, const Table&) const;  after the last chunk (reductions)
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/align.hpp"
#include "ops/optim/launch.hpp"
#include "ops/optim/math.hpp"

namespace baracuda::optim::cuda {

template <int L, int T>
struct Table {
  static constexpr int kLists = L;
  static constexpr int kTensors = T;
  void* ptr[L][T];
  int64_t numel[T];
  int64_t elem_base[T];
  int32_t chunk_begin[T + 1];
  uint8_t aligned[T];
  int n;
};

template <class F, class Tab>
__global__ void __launch_bounds__(kThreads) multi_tensor_kernel(const __grid_constant__ Tab tab,
                                                                const __grid_constant__ F f) {
  typename F::Block blk;
  if (!f.begin(blk)) return;
  const int32_t total = tab.chunk_begin[tab.n];
  int t = 0;
  for (int32_t c = blockIdx.x; c < total; c += gridDim.x) {
    while (c >= tab.chunk_begin[t + 1]) ++t;
    const int64_t lo = static_cast<int64_t>(c - tab.chunk_begin[t]) * kChunk;
    const int64_t n = tab.numel[t];
    const int64_t hi = lo + kChunk < n ? lo + kChunk : n;
    int64_t vhi = lo;
    if (tab.aligned[t]) {
      constexpr int V = F::kVec;
      vhi = lo + ((hi - lo) / V) * V;
      for (int64_t i = lo + static_cast<int64_t>(threadIdx.x) * V; i < vhi; i += static_cast<int64_t>(blockDim.x) * V)
        f.template elems<V>(blk, tab, t, i);
    }
    for (int64_t i = vhi + threadIdx.x; i < hi; i += blockDim.x) f.template elems<1>(blk, tab, t, i);
  }
  f.end(blk, tab);
}

// ---- host-side table builder -----------------------------------------------------------
// Calls flush(table) for each full table and for the last one; tensors of
// zero elements are skipped. Returns the first error of flush.
template <class Tab, class Flush>
Status build_tables(const ListLaunch& l, int n_lists, Tab& tab, Flush&& flush) {
  tab.n = 0;
  tab.chunk_begin[0] = 0;
  int64_t base = 0;
  for (int k = 0; k < l.n; ++k) {
    const int64_t n = shape_numel(l.shapes[k]);
    if (n == 0) continue;
    const int s = tab.n;
    bool aligned = true;
    for (int r = 0; r < Tab::kLists; ++r) {
      void* p = r < n_lists ? const_cast<void*>(l.lists[r].data(k)) : nullptr;
      tab.ptr[r][s] = p;
      if (p && !detail::is_aligned16(p)) aligned = false;
    }
    tab.numel[s] = n;
    tab.elem_base[s] = base;
    tab.aligned[s] = aligned ? 1 : 0;
    tab.chunk_begin[s + 1] = tab.chunk_begin[s] + static_cast<int32_t>((n + kChunk - 1) / kChunk);
    tab.n = s + 1;
    base += n;
    if (tab.n == Tab::kTensors) {
      BARACUDA_RETURN_IF_ERROR(flush(tab));
      tab.n = 0;
    }
  }
  if (tab.n > 0) return flush(tab);
  return Status::ok();
}

// ---- element I/O -----------------------------------------------------------------------
template <class T>
__device__ __forceinline__ float load1(const void* p, int64_t i) {
  const T* q = static_cast<const T*>(p) + i;
  if constexpr (std::is_same_v<T, float>) return *q;
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return bf16_to_f32(__bfloat16_as_ushort(*q));
  else return __half2float(*q);
}

// V elements of T at p + i (16-byte aligned when V > 1) as floats.
template <class T, int V>
__device__ __forceinline__ void load(const void* p, int64_t i, float (&v)[V]) {
  if constexpr (V == 1) {
    v[0] = load1<T>(p, i);
  } else {
    constexpr int kPer = 16 / static_cast<int>(sizeof(T));  // elements per uint4
    static_assert(V % kPer == 0, "whole vectors");
    const uint4* q = reinterpret_cast<const uint4*>(static_cast<const T*>(p) + i);
#pragma unroll
    for (int u = 0; u < V / kPer; ++u) {
      const uint4 r = q[u];
      const uint32_t w[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (std::is_same_v<T, float>) {
          v[u * 4 + j] = __uint_as_float(w[j]);
        } else if constexpr (std::is_same_v<T, __nv_bfloat16>) {
          v[u * 8 + 2 * j] = __uint_as_float(w[j] << 16);
          v[u * 8 + 2 * j + 1] = __uint_as_float(w[j] & 0xffff0000u);
        } else {
          v[u * 8 + 2 * j] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[j] & 0xffffu)));
          v[u * 8 + 2 * j + 1] = __half2float(__ushort_as_half(static_cast<unsigned short>(w[j] >> 16)));
        }
      }
    }
  }
}

// Raw storage bits of V elements (f32: the float bits; 16-bit types: the
// 16 bits in the low half), stored with 16-byte stores when V > 1.
template <class T, int V>
__device__ __forceinline__ void store_bits(void* p, int64_t i, const uint32_t (&b)[V]) {
  if constexpr (V == 1) {
    if constexpr (sizeof(T) == 4) *(static_cast<uint32_t*>(p) + i) = b[0];
    else *(static_cast<uint16_t*>(p) + i) = static_cast<uint16_t>(b[0]);
  } else {
    constexpr int kPer = 16 / static_cast<int>(sizeof(T));
    uint4* q = reinterpret_cast<uint4*>(static_cast<T*>(p) + i);
#pragma unroll
    for (int u = 0; u < V / kPer; ++u) {
      uint32_t w[4];
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        if constexpr (sizeof(T) == 4) w[j] = b[u * 4 + j];
        else w[j] = (b[u * 8 + 2 * j] & 0xffffu) | (b[u * 8 + 2 * j + 1] << 16);
      }
      q[u] = make_uint4(w[0], w[1], w[2], w[3]);
    }
  }
}

// f32 values rounded to T's bits (round to nearest even).
template <class T>
__device__ __forceinline__ uint32_t round_bits(float x) {
  if constexpr (std::is_same_v<T, float>) return __float_as_uint(x);
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return bf16_rne(x);
  else return f16_rne(x);
}

template <class T, int V>
__device__ __forceinline__ void store(void* p, int64_t i, const float (&v)[V]) {
  uint32_t b[V];
#pragma unroll
  for (int j = 0; j < V; ++j) b[j] = round_bits<T>(v[j]);
  store_bits<T, V>(p, i, b);
}

}  // namespace baracuda::optim::cuda
