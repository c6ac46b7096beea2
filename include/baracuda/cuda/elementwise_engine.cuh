// The elementwise engine's kernels: one template per path, the op a functor.
//
//   vec_kernel      every tensor operand unit-stride (or broadcast, stride 0)
//                   along the innermost dim, that dim a multiple of V, bases
//                   and outer strides aligned: a thread owns V consecutive
//                   elements (16 bytes of the compute dtype), loads each
//                   unit-stride operand as one vector, a broadcast operand as
//                   one element, and stores one vector. Covers contiguous
//                   tensors (rank 1 after coalescing: no index math at all),
//                   row / column broadcasts and strided outer dims.
//   strided_kernel  anything with < 2^31 elements and offsets: per element,
//                   the index decoded with FastDiv (32-bit multiply-high).
//   generic_kernel  64-bit indices and operands of any dtype, converted at
//                   load / store by a switch on the dtype (mixed-dtype calls,
//                   > 2^31 elements).
// Operand types: T0..T3 the inputs' storage types (unused ones repeat T0),
// Tout the output's; C the compute type the functor takes (float for the
// 16-bit floats). Scalars (host numbers) are passed as C values.
//
// Outputs: M = 1 (the forward ops: the functor returns one value) or up to 3
// (an op's operand gradients: the functor returns a struct whose member
// v[M] holds the M values, e.g. baracuda::dev::ew::Outputs<C, M>). Every
// output has the full (broadcast) shape with its own strides; a null out[m]
// is not written (the M > 1 paths test it per store; M == 1 never does).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/core/fast_div.hpp"
#include "baracuda/core/value_convert.hpp"
#include "baracuda/cuda/detail/elementwise_host.hpp"

namespace baracuda::dev::ew {

inline constexpr int kThreads = 256;

// The layout as kernels take it (by value, in parameter space): N inputs, M
// outputs.
template <int N, int M = 1>
struct Args {
  int rank = 0;         // coalesced; >= 1 for a launch
  bool use32 = false;   // every index and offset below 2^31: FastDiv decoding
  int64_t numel = 0;
  int64_t shape[kMaxRank] = {};
  detail::FastDiv div[kMaxRank];
  void* out[M] = {};
  const void* in[N] = {};
  int64_t stride[M + N][kMaxRank] = {};  // [0, M) outputs, [M, M + N) inputs
  DType out_dtype[M] = {};               // generic path only
  DType in_dtype[N] = {};
  bool bcast_inner[N] = {};              // vec path: input k has stride 0 along the inner dim
};

// What a functor of M > 1 outputs may return.
template <class C, int M>
struct Outputs {
  C v[M];
};
// Every loop over dims below runs over the compile-time maximum with a guard:
// after unrolling, each access to a.shape[d] / a.stride[k][d] has a constant
// index (a run-time index into kernel parameters makes the compiler copy the
// whole parameter block to local memory).

template <class C, int N>
struct Scalars {
  C v[N] = {};
  bool is[N] = {};
};

// ---- conversions ------------------------------------------------------------------
template <class T>
inline constexpr bool kHalf = std::is_same_v<T, __half>;
template <class T>
inline constexpr bool kBf16 = std::is_same_v<T, __nv_bfloat16>;

// Storage -> compute.
template <class C, class T>
__device__ __forceinline__ C to_compute(T v) {
  if constexpr (std::is_same_v<T, bool>) return C(v ? 1 : 0);
  else if constexpr (kHalf<T>) return C(__half2float(v));
  else if constexpr (kBf16<T>) return C(__bfloat162float(v));
  else return static_cast<C>(v);
}

// Compute (or a predicate's bool) -> storage, with the family's rules
// (docs/OPS.md): 16-bit floats through f32 (as PyTorch rounds a double),
// floating -> integer through float_to_int64, then wrap; -> bool is != 0.
template <class T, class R>
__device__ __forceinline__ T to_storage(R v) {
  if constexpr (std::is_same_v<T, bool>) return v != R(0);
  else if constexpr (kHalf<T>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (kBf16<T>) return __float2bfloat16_rn(static_cast<float>(v));
  else if constexpr (std::is_integral_v<T> && std::is_floating_point_v<R>)
    return static_cast<T>(baracuda::detail::float_to_int64(static_cast<double>(v)));
  else return static_cast<T>(v);
}

// Runtime-dtype load / store for the generic path. kFloatingOnly: the
// operands are known to be f16 / bf16 / f32 / f64 or (where's condition)
// bool, the outputs floating (gradients), so the switches have five / four
// cases instead of ten (the float gradients' generic TU compiled in 54 s
// with ten).
template <class C, bool kFloatingOnly = false>
__device__ __forceinline__ C load_dyn(const void* base, DType t, int64_t off) {
  if constexpr (kFloatingOnly) {
    switch (t) {
      case DType::Bool: return to_compute<C>(static_cast<const uint8_t*>(base)[off] != 0);
      case DType::F16: return to_compute<C>(static_cast<const __half*>(base)[off]);
      case DType::BF16: return to_compute<C>(static_cast<const __nv_bfloat16*>(base)[off]);
      case DType::F32: return to_compute<C>(static_cast<const float*>(base)[off]);
      default: return to_compute<C>(static_cast<const double*>(base)[off]);
    }
  }
  switch (t) {
    case DType::Bool: return to_compute<C>(static_cast<const uint8_t*>(base)[off] != 0);
    case DType::I8: return to_compute<C>(static_cast<const int8_t*>(base)[off]);
    case DType::U8: return to_compute<C>(static_cast<const uint8_t*>(base)[off]);
    case DType::I16: return to_compute<C>(static_cast<const int16_t*>(base)[off]);
    case DType::I32: return to_compute<C>(static_cast<const int32_t*>(base)[off]);
    case DType::I64: return to_compute<C>(static_cast<const int64_t*>(base)[off]);
    case DType::F16: return to_compute<C>(static_cast<const __half*>(base)[off]);
    case DType::BF16: return to_compute<C>(static_cast<const __nv_bfloat16*>(base)[off]);
    case DType::F32: return to_compute<C>(static_cast<const float*>(base)[off]);
    case DType::F64: return to_compute<C>(static_cast<const double*>(base)[off]);
    default: return C(0);
  }
}
template <class R, bool kFloatingOnly = false>
__device__ __forceinline__ void store_dyn(void* base, DType t, int64_t off, R v) {
  if constexpr (kFloatingOnly) {
    switch (t) {
      case DType::F16: static_cast<__half*>(base)[off] = to_storage<__half>(v); return;
      case DType::BF16: static_cast<__nv_bfloat16*>(base)[off] = to_storage<__nv_bfloat16>(v); return;
      case DType::F32: static_cast<float*>(base)[off] = to_storage<float>(v); return;
      default: static_cast<double*>(base)[off] = to_storage<double>(v); return;
    }
  }
  switch (t) {
    case DType::Bool: static_cast<uint8_t*>(base)[off] = to_storage<bool>(v) ? 1 : 0; return;
    case DType::I8: static_cast<int8_t*>(base)[off] = to_storage<int8_t>(v); return;
    case DType::U8: static_cast<uint8_t*>(base)[off] = to_storage<uint8_t>(v); return;
    case DType::I16: static_cast<int16_t*>(base)[off] = to_storage<int16_t>(v); return;
    case DType::I32: static_cast<int32_t*>(base)[off] = to_storage<int32_t>(v); return;
    case DType::I64: static_cast<int64_t*>(base)[off] = to_storage<int64_t>(v); return;
    case DType::F16: static_cast<__half*>(base)[off] = to_storage<__half>(v); return;
    case DType::BF16: static_cast<__nv_bfloat16*>(base)[off] = to_storage<__nv_bfloat16>(v); return;
    case DType::F32: static_cast<float*>(base)[off] = to_storage<float>(v); return;
    case DType::F64: static_cast<double*>(base)[off] = to_storage<double>(v); return;
    default: return;
  }
}

template <int N, class Fn, class C>
__device__ __forceinline__ auto apply(const Fn& fn, const C (&v)[N]) {
  if constexpr (N == 1) return fn(v[0]);
  else if constexpr (N == 2) return fn(v[0], v[1]);
  else if constexpr (N == 3) return fn(v[0], v[1], v[2]);
  else return fn(v[0], v[1], v[2], v[3]);
}

// Output m of a functor's result (M == 1: the result itself).
template <int M, class R>
__device__ __forceinline__ auto output_of(const R& r, int m) {
  if constexpr (M == 1) return r;
  else return r.v[m];
}

// Aligned vector of V elements (one memory transaction of V * sizeof(T) bytes).
template <class T, int V>
struct alignas(sizeof(T) * V < 16 ? sizeof(T) * V : 16) Vec {
  T v[V];
};

// Offsets of the outer index `o` (dims [0, rank-1)) for every operand.
template <int N, int M>
__device__ __forceinline__ void outer_offsets(const Args<N, M>& a, int64_t o, int64_t (&off)[N + M]) {
#pragma unroll
  for (int k = 0; k < N + M; ++k) off[k] = 0;
#pragma unroll
  for (int d = kMaxRank - 2; d >= 0; --d) {
    if (d > a.rank - 2) continue;
    int64_t idx;
    if (a.use32) {
      const uint32_t q = a.div[d].div(static_cast<uint32_t>(o));
      idx = static_cast<int64_t>(static_cast<uint32_t>(o) - q * static_cast<uint32_t>(a.shape[d]));
      o = q;
    } else {
      idx = o % a.shape[d];
      o /= a.shape[d];
    }
#pragma unroll
    for (int k = 0; k < N + M; ++k) off[k] += idx * a.stride[k][d];
  }
}

// V values of input k for the chunk at element offset `base` + e: a scalar,
// one broadcast element, or one vector.
template <class T, class C, int V, int N, int M>
__device__ __forceinline__ void load_chunk(const Args<N, M>& a, const Scalars<C, N>& s, int k, int64_t base, int64_t e,
                                           C (&x)[V]) {
  // A one-operand kernel's input is always a tensor: no scalar test (it cost
  // ~2% on bf16 gelu).
  if (N > 1 && s.is[k]) {
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = s.v[k];
    return;
  }
  const T* p = static_cast<const T*>(a.in[k]) + base;
  if (a.bcast_inner[k]) {
    const C b = to_compute<C>(*p);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = b;
  } else {
    const Vec<T, V> w = *reinterpret_cast<const Vec<T, V>*>(p + e);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = to_compute<C>(w.v[v]);
  }
}

// ---- vec -----------------------------------------------------------------------------------
// Each thread owns kUnroll chunks kThreads apart per iteration and issues all
// their loads before any math: more bytes in flight per thread. Measured on
// the H100 ([8192, 16384], docs/BENCHMARKS.md): two chunks lift f32 gelu from
// 95% to 99% and clamp from 92% to 97% of copy bandwidth, but with 16-byte
// vectors of 2-byte types (8 values per chunk) the register cost wins: bf16
// where fell from 97% to 58%, clamp from 88% to 63%. So: two chunks when a
// chunk holds <= 4 values, one otherwise.
template <int V>
inline constexpr int kUnroll = V <= 4 ? 2 : 1;

template <int N, int M>
__device__ __forceinline__ int64_t chunk_offsets(const Args<N, M>& a, int64_t c, const detail::FastDiv& inner_div,
                                                 int64_t inner_chunks, int64_t (&off)[N + M]) {
  if (a.rank > 1) {
    const int64_t o = a.use32 ? static_cast<int64_t>(inner_div.div(static_cast<uint32_t>(c))) : c / inner_chunks;
    outer_offsets(a, o, off);
    return c - o * inner_chunks;
  }
#pragma unroll
  for (int k = 0; k < N + M; ++k) off[k] = 0;
  return c;
}

template <int N, int V, class C, class Tout, class T0, class T1, class T2, class T3, int M, class Fn>
__global__ void __launch_bounds__(kThreads) vec_kernel(Args<N, M> a, Scalars<C, N> s, Fn fn, int64_t chunks,
                                                        detail::FastDiv inner_div, int64_t inner_chunks) {
  constexpr int U = kUnroll<V>;
  constexpr int64_t kStep = static_cast<int64_t>(kThreads) * U;
  for (int64_t c0 = static_cast<int64_t>(blockIdx.x) * kStep + threadIdx.x; c0 < chunks;
       c0 += static_cast<int64_t>(gridDim.x) * kStep) {
    int64_t off[U][N + M];
    int64_t e[U];
    C x[U][N][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + static_cast<int64_t>(u) * kThreads;
      if (c >= chunks) continue;
      e[u] = chunk_offsets(a, c, inner_div, inner_chunks, off[u]) * V;  // first inner element of the chunk
      load_chunk<T0>(a, s, 0, off[u][M], e[u], x[u][0]);
      if constexpr (N > 1) load_chunk<T1>(a, s, 1, off[u][M + 1], e[u], x[u][1]);
      if constexpr (N > 2) load_chunk<T2>(a, s, 2, off[u][M + 2], e[u], x[u][2]);
      if constexpr (N > 3) load_chunk<T3>(a, s, 3, off[u][M + 3], e[u], x[u][3]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c0 + static_cast<int64_t>(u) * kThreads >= chunks) continue;
      Vec<Tout, V> r[M];
#pragma unroll
      for (int v = 0; v < V; ++v) {
        C xv[N];
#pragma unroll
        for (int k = 0; k < N; ++k) xv[k] = x[u][k][v];
        const auto y = apply<N>(fn, xv);
#pragma unroll
        for (int m = 0; m < M; ++m) r[m].v[v] = to_storage<Tout>(output_of<M>(y, m));
      }
#pragma unroll
      for (int m = 0; m < M; ++m)
        if (M == 1 || a.out[m] != nullptr)
          *reinterpret_cast<Vec<Tout, V>*>(static_cast<Tout*>(a.out[m]) + off[u][m] + e[u]) = r[m];
    }
  }
}

// ---- strided (32-bit indices) -----------------------------------------------------------------
template <class T, class C, int N, int M>
__device__ __forceinline__ C load_one(const Args<N, M>& a, const Scalars<C, N>& s, int k, int64_t off) {
  return (N > 1 && s.is[k]) ? s.v[k] : to_compute<C>(static_cast<const T*>(a.in[k])[off]);
}

template <int N, class C, class Tout, class T0, class T1, class T2, class T3, int M, class Fn>
__global__ void __launch_bounds__(kThreads) strided_kernel(Args<N, M> a, Scalars<C, N> s, Fn fn) {
  const uint32_t n = static_cast<uint32_t>(a.numel);
  for (uint32_t i = blockIdx.x * kThreads + threadIdx.x; i < n; i += gridDim.x * kThreads) {
    int64_t off[N + M] = {};
    uint32_t rem = i;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= a.rank) continue;
      const uint32_t q = a.div[d].div(rem);
      const int64_t idx = rem - q * static_cast<uint32_t>(a.shape[d]);
      rem = q;
#pragma unroll
      for (int k = 0; k < N + M; ++k) off[k] += idx * a.stride[k][d];
    }
    C xv[N];
    xv[0] = load_one<T0>(a, s, 0, off[M]);
    if constexpr (N > 1) xv[1] = load_one<T1>(a, s, 1, off[M + 1]);
    if constexpr (N > 2) xv[2] = load_one<T2>(a, s, 2, off[M + 2]);
    if constexpr (N > 3) xv[3] = load_one<T3>(a, s, 3, off[M + 3]);
    const auto y = apply<N>(fn, xv);
#pragma unroll
    for (int m = 0; m < M; ++m)
      if (M == 1 || a.out[m] != nullptr) static_cast<Tout*>(a.out[m])[off[m]] = to_storage<Tout>(output_of<M>(y, m));
  }
}

// ---- transposed unary (shared-memory tiles) -------------------------------------------------
// A rank-2 layout whose output is unit-stride along dim 1 and whose input is
// unit-stride along dim 0 (x.t().contiguous(), a cast of a transposed view):
// a T x T tile is read along the input's contiguous dim, transposed through
// shared memory and written along the output's, so both sides coalesce.
// T = 64 for 2-byte (and 1-byte) types so a warp still moves 128-byte rows
// (T = 32 held bf16 at 66% of copy bandwidth), 32 otherwise; the padding
// keeps the column reads free of bank conflicts.
template <class Tin, class Tout>
inline constexpr int kTileOf = (sizeof(Tin) <= 2 && sizeof(Tout) <= 2) ? 64 : 32;

template <int T, class C, class Tout, class Tin, class Fn>
__global__ void __launch_bounds__(256) transpose_kernel(Args<1> a, Fn fn) {
  constexpr int kRows = 256 / T;  // threads per tile column
  constexpr int kPad = sizeof(Tout) <= 2 ? 2 : 1;
  __shared__ Tout tile[T][T + kPad];
  const int64_t rows = a.shape[0], cols = a.shape[1];
  const int64_t i0 = static_cast<int64_t>(blockIdx.y) * T, j0 = static_cast<int64_t>(blockIdx.x) * T;
  const int tx = threadIdx.x, ty = threadIdx.y;
  const Tin* in = static_cast<const Tin*>(a.in[0]);  // a.stride[0]: the output, [1]: the input
#pragma unroll
  for (int k = 0; k < T; k += kRows) {
    const int64_t i = i0 + tx, j = j0 + ty + k;
    if (i < rows && j < cols) tile[ty + k][tx] = to_storage<Tout>(fn(to_compute<C>(in[i * a.stride[1][0] + j * a.stride[1][1]])));
  }
  __syncthreads();
  Tout* out = static_cast<Tout*>(a.out[0]);
#pragma unroll
  for (int k = 0; k < T; k += kRows) {
    const int64_t i = i0 + ty + k, j = j0 + tx;
    if (i < rows && j < cols) out[i * a.stride[0][0] + j * a.stride[0][1]] = tile[tx][ty + k];
  }
}

// ---- generic (64-bit indices, runtime dtypes) ------------------------------------------------
template <int N, int M, class C, class Fn, bool kFloatingOnly = false>
__global__ void __launch_bounds__(kThreads) generic_kernel(Args<N, M> a, Scalars<C, N> s, Fn fn) {
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < a.numel;
       i += static_cast<int64_t>(gridDim.x) * kThreads) {
    int64_t off[N + M] = {};
    int64_t rem = i;
#pragma unroll
    for (int d = kMaxRank - 1; d >= 0; --d) {
      if (d >= a.rank) continue;
      const int64_t idx = rem % a.shape[d];
      rem /= a.shape[d];
#pragma unroll
      for (int k = 0; k < N + M; ++k) off[k] += idx * a.stride[k][d];
    }
    C xv[N];
#pragma unroll
    for (int k = 0; k < N; ++k)
      xv[k] = s.is[k] ? s.v[k] : load_dyn<C, kFloatingOnly>(a.in[k], a.in_dtype[k], off[M + k]);
    const auto y = apply<N>(fn, xv);
#pragma unroll
    for (int m = 0; m < M; ++m)
      if (M == 1 || a.out[m] != nullptr)
        store_dyn<decltype(output_of<M>(y, m)), kFloatingOnly>(a.out[m], a.out_dtype[m], off[m], output_of<M>(y, m));
  }
}

// ---- host side --------------------------------------------------------------------------------
// Blocks for `items` work items of one thread each (grid-stride beyond the cap).
inline unsigned grid_for(int64_t items) {
  const int64_t b = (items + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < (int64_t{1} << 20) ? (b < 1 ? 1 : b) : (int64_t{1} << 20));
}

// T3: the fourth input's storage type (N == 4 only); M is deduced from the Args.
// loops: grid-stride iterations per thread (the grid shrinks by that factor).
// Each thread's prologue loads the layout (uniform loads, ~50 instructions)
// before its first chunk; a compute-heavy functor on 16-byte vectors of
// 2-byte types pays it per 8 values. Measured on the H100 (bf16 [8192,
// 16384], docs/BENCHMARKS.md lab notes): gelu 87% of copy bandwidth with one
// iteration, 92% with 2, 94.5% with 4; silu and clamp lose 1-3% at 4 (on the
// H200, whose bandwidth leaves less time per byte, clamp goes 94 -> 99% at 2).
template <int N, int V, class C, class Tout, class T0, class T1, class T2, class T3 = T0, int M, class Fn>
cudaError_t launch_vec(const Args<N, M>& a, const Scalars<C, N>& s, const Fn& fn, cudaStream_t stream, int loops = 1) {
  const int64_t inner_chunks = a.shape[a.rank - 1] / V;
  const int64_t chunks = a.numel / V;
  const int64_t per_block = static_cast<int64_t>(kUnroll<V>) * (loops < 1 ? 1 : loops);
  const detail::FastDiv inner_div(static_cast<uint32_t>(inner_chunks < (int64_t{1} << 31) ? inner_chunks : 1));
  vec_kernel<N, V, C, Tout, T0, T1, T2, T3, M, Fn><<<grid_for((chunks + per_block - 1) / per_block), kThreads, 0, stream>>>(
      a, s, fn, chunks, inner_div, inner_chunks);
  return cudaGetLastError();
}
template <int N, class C, class Tout, class T0, class T1, class T2, class T3 = T0, int M, class Fn>
cudaError_t launch_strided(const Args<N, M>& a, const Scalars<C, N>& s, const Fn& fn, cudaStream_t stream) {
  strided_kernel<N, C, Tout, T0, T1, T2, T3, M, Fn><<<grid_for(a.numel), kThreads, 0, stream>>>(a, s, fn);
  return cudaGetLastError();
}
template <class C, class Tout, class Tin, class Fn>
cudaError_t launch_transpose(const Args<1>& a, const Fn& fn, cudaStream_t stream) {
  constexpr int T = kTileOf<Tin, Tout>;
  const dim3 grid(static_cast<unsigned>((a.shape[1] + T - 1) / T), static_cast<unsigned>((a.shape[0] + T - 1) / T));
  transpose_kernel<T, C, Tout, Tin, Fn><<<grid, dim3(T, 256 / T), 0, stream>>>(a, fn);
  return cudaGetLastError();
}
// kFloatingOnly: every operand is f16 / bf16 / f32 / f64 (see load_dyn).
template <int N, class C, bool kFloatingOnly = false, int M, class Fn>
cudaError_t launch_generic(const Args<N, M>& a, const Scalars<C, N>& s, const Fn& fn, cudaStream_t stream) {
  generic_kernel<N, M, C, Fn, kFloatingOnly><<<grid_for(a.numel), kThreads, 0, stream>>>(a, s, fn);
  return cudaGetLastError();
}

// The kernels' Args of a host layout (detail::make_ew_layout): the output and
// N inputs (in[k] null for a scalar), FastDiv decoders when use32 (the vec
// and strided paths), the dtypes for the generic path. An extent of 2^31 or
// more gets no decoder (FastDiv takes divisors up to 2^31; 2^32 would
// truncate to 0): the paths that decode in 32 bits never divide by it (a
// rank-1 vector layout decodes nothing).
template <int N, int M = 1>
Args<N, M> args_of_layout(const baracuda::detail::EwLayout& L, bool use32, void* const* out, const DType* out_dtype,
                          const void* const* in, const DType* in_dtype) {
  Args<N, M> a;
  a.rank = L.rank;
  a.use32 = use32;
  a.numel = L.numel;
  for (int d = 0; d < L.rank; ++d) {
    a.shape[d] = L.shape[d];
    a.div[d] = detail::FastDiv(static_cast<uint32_t>(use32 && L.shape[d] < (int64_t{1} << 31) ? L.shape[d] : 1));
    for (int k = 0; k < N + M; ++k) a.stride[k][d] = L.stride[k][d];
  }
  for (int m = 0; m < M; ++m) {
    a.out[m] = out[m];
    a.out_dtype[m] = out_dtype[m];
  }
  for (int k = 0; k < N; ++k) {
    a.in[k] = in[k];
    a.in_dtype[k] = in_dtype[k];
    a.bcast_inner[k] = L.rank >= 1 && L.stride[M + k][L.rank - 1] == 0;
  }
  return a;
}
// One output.
template <int N>
Args<N> args_of_layout(const baracuda::detail::EwLayout& L, bool use32, void* out, DType out_dtype,
                       const void* const* in, const DType* in_dtype) {
  void* const outs[1] = {out};
  const DType dts[1] = {out_dtype};
  return args_of_layout<N, 1>(L, use32, outs, dts, in, in_dtype);
}

}  // namespace baracuda::dev::ew
