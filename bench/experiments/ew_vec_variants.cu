// Experiment (not built by CMake): how should the engine's vector path split
// work for 2-byte dtypes? Times bf16 gelu / silu / clamp on [8192, 16384]
// through the engine's vec_kernel (baseline) and through variants of the
// same loop: chunk size V, chunks per thread U, and a persistent grid that
// prefetches its next chunk before computing the current one. Results go to
// docs/BENCHMARKS.md (lab notes).
//   nvcc -O3 -std=c++20 -arch=sm_90a --expt-relaxed-constexpr -Isrc -Iinclude \
//        bench/experiments/ew_vec_variants.cu -o /tmp/ewv && /tmp/ewv
#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <vector>

#include "baracuda/cuda/elementwise_engine.cuh"
#include "ops/elementwise/functors.hpp"

using namespace baracuda;
using bf16 = __nv_bfloat16;
namespace ew = baracuda::dev::ew;

#define CK(x)                                                              \
  do {                                                                     \
    cudaError_t e_ = (x);                                                  \
    if (e_ != cudaSuccess) {                                               \
      std::printf("CUDA error %s at %d\n", cudaGetErrorString(e_), __LINE__); \
      std::exit(1);                                                        \
    }                                                                      \
  } while (0)

struct Gelu {
  elementwise::Params q;
  __device__ float operator()(float x) const { return elementwise::fn::unary<UnaryOp::GeluErf, float>(x, q); }
};
struct Silu {
  elementwise::Params q;
  __device__ float operator()(float x) const { return elementwise::fn::unary<UnaryOp::Silu, float>(x, q); }
};
struct Clamp1 {  // clamp(x, -0.5, 0.5) as a unary functor
  elementwise::Params q;
  __device__ float operator()(float x) const {
    return elementwise::fn::ternary<TernaryOp::Clamp, float>(x, -0.5f, 0.5f, q);
  }
};
struct Clamp3 {
  elementwise::Params q;
  __device__ float operator()(float a, float b, float c) const {
    return elementwise::fn::ternary<TernaryOp::Clamp, float>(a, b, c, q);
  }
};

// U chunks of V per thread, blocks of Threads; all loads first.
template <int V, int U, int Threads, class Fn>
__global__ void __launch_bounds__(Threads) simple_kernel(const bf16* __restrict__ x, bf16* __restrict__ y, int64_t chunks, Fn fn) {
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * Threads * U + threadIdx.x;
  ew::Vec<bf16, V> in[U];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t c = c0 + u * Threads;
    if (c < chunks) in[u] = reinterpret_cast<const ew::Vec<bf16, V>*>(x)[c];
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t c = c0 + u * Threads;
    if (c >= chunks) continue;
    ew::Vec<bf16, V> r;
#pragma unroll
    for (int v = 0; v < V; ++v) r.v[v] = __float2bfloat16_rn(fn(__bfloat162float(in[u].v[v])));
    reinterpret_cast<ew::Vec<bf16, V>*>(y)[c] = r;
  }
}

// Persistent grid-stride loop; the next chunk's load is issued before the
// current chunk is computed.
template <int V, int Threads, class Fn>
__global__ void __launch_bounds__(Threads) prefetch_kernel(const bf16* __restrict__ x, bf16* __restrict__ y, int64_t chunks, Fn fn) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * Threads;
  int64_t c = static_cast<int64_t>(blockIdx.x) * Threads + threadIdx.x;
  if (c >= chunks) return;
  ew::Vec<bf16, V> cur = reinterpret_cast<const ew::Vec<bf16, V>*>(x)[c];
  for (; c < chunks; c += stride) {
    const int64_t n = c + stride;
    ew::Vec<bf16, V> nxt;
    if (n < chunks) nxt = reinterpret_cast<const ew::Vec<bf16, V>*>(x)[n];
    ew::Vec<bf16, V> r;
#pragma unroll
    for (int v = 0; v < V; ++v) r.v[v] = __float2bfloat16_rn(fn(__bfloat162float(cur.v[v])));
    reinterpret_cast<ew::Vec<bf16, V>*>(y)[c] = r;
    cur = nxt;
  }
}


// A copy of the engine's vec_kernel with knobs: U chunks per thread, Nc:
// loads through the read-only path (ld.global.nc), Once: no grid-stride loop
// (the grid covers every chunk).
template <class T, class C, int V, int N, bool Nc>
__device__ __forceinline__ void load_chunk2(const ew::Args<N>& a, const ew::Scalars<C, N>& s, int k, int64_t base,
                                            int64_t e, C (&x)[V]) {
  if (s.is[k]) {
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = s.v[k];
    return;
  }
  const T* p = static_cast<const T*>(a.in[k]) + base;
  if (a.bcast_inner[k]) {
    const C b = ew::to_compute<C>(*p);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = b;
  } else {
    ew::Vec<T, V> w;
    if constexpr (Nc) {
      if constexpr (sizeof(w) == 16) {
        const int4 r = __ldg(reinterpret_cast<const int4*>(p + e));
        w = *reinterpret_cast<const ew::Vec<T, V>*>(&r);
      } else {
        const int2 r = __ldg(reinterpret_cast<const int2*>(p + e));
        w = *reinterpret_cast<const ew::Vec<T, V>*>(&r);
      }
    } else {
      w = *reinterpret_cast<const ew::Vec<T, V>*>(p + e);
    }
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = ew::to_compute<C>(w.v[v]);
  }
}

template <int N, int V, int U, bool Nc, bool Once, class C, class Tout, class T0, class Fn>
__global__ void __launch_bounds__(ew::kThreads) vec2_kernel(ew::Args<N> a, ew::Scalars<C, N> s, Fn fn, int64_t chunks,
                                                          detail::FastDiv inner_div, int64_t inner_chunks) {
  constexpr int64_t kStep = static_cast<int64_t>(ew::kThreads) * U;
  for (int64_t c0 = static_cast<int64_t>(blockIdx.x) * kStep + threadIdx.x; c0 < chunks;
       c0 += static_cast<int64_t>(gridDim.x) * kStep) {
    int64_t off[U][N + 1];
    int64_t e[U];
    C x[U][N][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + static_cast<int64_t>(u) * ew::kThreads;
      if (c >= chunks) continue;
      e[u] = ew::chunk_offsets(a, c, inner_div, inner_chunks, off[u]) * V;
#pragma unroll
      for (int k = 0; k < N; ++k) load_chunk2<T0, C, V, N, Nc>(a, s, k, off[u][1 + k], e[u], x[u][k]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c0 + static_cast<int64_t>(u) * ew::kThreads >= chunks) continue;
      ew::Vec<Tout, V> r;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        C xv[N];
#pragma unroll
        for (int k = 0; k < N; ++k) xv[k] = x[u][k][v];
        r.v[v] = ew::to_storage<Tout>(ew::apply<N>(fn, xv));
      }
      *reinterpret_cast<ew::Vec<Tout, V>*>(static_cast<Tout*>(a.out[0]) + off[u][0] + e[u]) = r;
    }
    if constexpr (Once) break;
  }
}
template <int N, int V, int U, bool Nc, bool Once, class Fn>
void launch2(const ew::Args<N>& a, const ew::Scalars<float, N>& s, const Fn& fn) {
  const int64_t chunks = a.numel / V;
  const int64_t blocks = (chunks + ew::kThreads * U - 1) / (ew::kThreads * U);
  vec2_kernel<N, V, U, Nc, Once, float, bf16, bf16, Fn><<<static_cast<unsigned>(blocks), ew::kThreads>>>(
      a, s, fn, chunks, detail::FastDiv(1), chunks);
}

// Dense: every tensor operand contiguous with the output's shape (rank 1
// after coalescing), scalars allowed; pointers as __restrict__ kernel
// parameters, no index math, U chunks per thread, the grid covers all.
template <int N, class C>
struct DensePtrs {
  const void* in[N];
};
template <class T, int V>
__device__ __forceinline__ ew::Vec<T, V> ldg_vec(const T* p) {
  if constexpr (sizeof(ew::Vec<T, V>) == 16) {
    const int4 r = __ldg(reinterpret_cast<const int4*>(p));
    return *reinterpret_cast<const ew::Vec<T, V>*>(&r);
  } else {
    const int2 r = __ldg(reinterpret_cast<const int2*>(p));
    return *reinterpret_cast<const ew::Vec<T, V>*>(&r);
  }
}
template <int N, int V, int U, class C, class Tout, class T0, class Fn>
__global__ void __launch_bounds__(256) dense_kernel(const T0* __restrict__ i0, const T0* __restrict__ i1,
                                                    const T0* __restrict__ i2, Tout* __restrict__ out,
                                                    ew::Scalars<C, N> s, Fn fn, int64_t chunks) {
  const int64_t c0 = static_cast<int64_t>(blockIdx.x) * 256 * U + threadIdx.x;
  ew::Vec<T0, V> w[U][N];
  const T0* ins[3] = {i0, i1, i2};
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t c = c0 + u * 256;
    if (c >= chunks) continue;
#pragma unroll
    for (int k = 0; k < N; ++k)
      if (!s.is[k]) w[u][k] = ldg_vec<T0, V>(ins[k] + c * V);
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const int64_t c = c0 + u * 256;
    if (c >= chunks) continue;
    ew::Vec<Tout, V> r;
#pragma unroll
    for (int v = 0; v < V; ++v) {
      C xv[N];
#pragma unroll
      for (int k = 0; k < N; ++k) xv[k] = s.is[k] ? s.v[k] : ew::to_compute<C>(w[u][k].v[v]);
      r.v[v] = ew::to_storage<Tout>(ew::apply<N>(fn, xv));
    }
    reinterpret_cast<ew::Vec<Tout, V>*>(out)[c] = r;
  }
}
template <int N, int V, int U, class Fn>
void launch_dense(const ew::Args<N>& a, const ew::Scalars<float, N>& s, const Fn& fn) {
  const int64_t chunks = a.numel / V;
  const int64_t blocks = (chunks + 256 * U - 1) / (256 * U);
  const bf16* p[3] = {};
  for (int k = 0; k < N; ++k) p[k] = static_cast<const bf16*>(a.in[k]);
  dense_kernel<N, V, U, float, bf16, bf16, Fn><<<static_cast<unsigned>(blocks), 256>>>(
      p[0], p[1], p[2], static_cast<bf16*>(a.out[0]), s, fn, chunks);
}

// The engine's vec_kernel with the scalar check compiled out for N == 1 (a
// unary op's x is always a tensor) and U chunks per thread.
template <class T, class C, int V, int N>
__device__ __forceinline__ void load_chunk3(const ew::Args<N>& a, const ew::Scalars<C, N>& s, int k, int64_t base,
                                            int64_t e, C (&x)[V]) {
  if constexpr (N > 1) {
    if (s.is[k]) {
#pragma unroll
      for (int v = 0; v < V; ++v) x[v] = s.v[k];
      return;
    }
  }
  const T* p = static_cast<const T*>(a.in[k]) + base;
  if (a.bcast_inner[k]) {
    const C b = ew::to_compute<C>(*p);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = b;
  } else {
    const ew::Vec<T, V> w = *reinterpret_cast<const ew::Vec<T, V>*>(p + e);
#pragma unroll
    for (int v = 0; v < V; ++v) x[v] = ew::to_compute<C>(w.v[v]);
  }
}
template <int N, int V, int U, class C, class Tout, class T0, class Fn>
__global__ void __launch_bounds__(ew::kThreads) vec3_kernel(ew::Args<N> a, ew::Scalars<C, N> s, Fn fn, int64_t chunks,
                                                          detail::FastDiv inner_div, int64_t inner_chunks) {
  constexpr int64_t kStep = static_cast<int64_t>(ew::kThreads) * U;
  for (int64_t c0 = static_cast<int64_t>(blockIdx.x) * kStep + threadIdx.x; c0 < chunks;
       c0 += static_cast<int64_t>(gridDim.x) * kStep) {
    int64_t off[U][N + 1];
    int64_t e[U];
    C x[U][N][V];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      const int64_t c = c0 + static_cast<int64_t>(u) * ew::kThreads;
      if (c >= chunks) continue;
      e[u] = ew::chunk_offsets(a, c, inner_div, inner_chunks, off[u]) * V;
#pragma unroll
      for (int k = 0; k < N; ++k) load_chunk3<T0, C, V, N>(a, s, k, off[u][1 + k], e[u], x[u][k]);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (c0 + static_cast<int64_t>(u) * ew::kThreads >= chunks) continue;
      ew::Vec<Tout, V> r;
#pragma unroll
      for (int v = 0; v < V; ++v) {
        C xv[N];
#pragma unroll
        for (int k = 0; k < N; ++k) xv[k] = x[u][k][v];
        r.v[v] = ew::to_storage<Tout>(ew::apply<N>(fn, xv));
      }
      *reinterpret_cast<ew::Vec<Tout, V>*>(static_cast<Tout*>(a.out[0]) + off[u][0] + e[u]) = r;
    }
  }
}
template <int N, int V, int U, class Fn>
void launch3(const ew::Args<N>& a, const ew::Scalars<float, N>& s, const Fn& fn) {
  const int64_t chunks = a.numel / V;
  const int64_t blocks = (chunks + ew::kThreads * U - 1) / (ew::kThreads * U);
  vec3_kernel<N, V, U, float, bf16, bf16, Fn><<<static_cast<unsigned>(blocks), ew::kThreads>>>(
      a, s, fn, chunks, detail::FastDiv(1), chunks);
}
struct ClampBound {  // ternary clamp with its scalar bounds bound into a unary functor
  elementwise::Params q;
  float lo, hi;
  __device__ float operator()(float x) const { return elementwise::fn::ternary<TernaryOp::Clamp, float>(x, lo, hi, q); }
};

// The engine's vec_kernel with a grid of 1 / div of the chunks' blocks: each
// thread loops div times, amortising the kernel's prologue (uniform loads
// of the layout) over several chunks.
template <int N, int V, class Fn>
void launch_engine_div(const ew::Args<N>& a, const ew::Scalars<float, N>& s, const Fn& fn, int div) {
  const int64_t chunks = a.numel / V;
  const int64_t blocks = (chunks + ew::kThreads * ew::kUnroll<V> * div - 1) / (ew::kThreads * ew::kUnroll<V> * div);
  ew::vec_kernel<N, V, float, bf16, bf16, bf16, bf16, bf16, 1, Fn><<<static_cast<unsigned>(blocks), ew::kThreads>>>(
      a, s, fn, chunks, detail::FastDiv(1), chunks);
}

template <class F>
float time_us(F&& launch, int reps = 40) {
  cudaEvent_t a, b;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  for (int i = 0; i < 5; ++i) launch();
  std::vector<float> t;
  for (int i = 0; i < reps; ++i) {
    CK(cudaEventRecord(a));
    launch();
    CK(cudaEventRecord(b));
    CK(cudaEventSynchronize(b));
    float ms = 0;
    CK(cudaEventElapsedTime(&ms, a, b));
    t.push_back(ms * 1000.f);
  }
  CK(cudaGetLastError());
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

int main() {
  const int64_t n = int64_t{8192} * 16384;
  bf16 *x, *y;
  CK(cudaMalloc(&x, n * 2));
  CK(cudaMalloc(&y, n * 2));
  std::vector<bf16> h(n);
  for (int64_t i = 0; i < n; ++i) h[i] = __float2bfloat16(static_cast<float>((i * 7919) % 2001 - 1000) / 250.f);
  CK(cudaMemcpy(x, h.data(), n * 2, cudaMemcpyHostToDevice));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const double bytes = 2.0 * n * 2;
  const float copy = time_us([&] { CK(cudaMemcpyAsync(y, x, n * 2, cudaMemcpyDeviceToDevice)); });
  std::printf("copy: %.1f us (%.0f GB/s)\n", copy, bytes / copy / 1e3);

  auto report = [&](const char* op, const char* var, float us) {
    std::printf("%-6s %-28s %7.1f us  %5.1f%% of copy\n", op, var, us, 100.0 * copy / us);
  };
  auto run_all = [&](const char* op, auto fn) {
    using Fn = decltype(fn);
    ew::Args<1> a;
    a.rank = 1;
    a.use32 = true;
    a.numel = n;
    a.shape[0] = n;
    a.stride[0][0] = a.stride[1][0] = 1;
    a.out[0] = y;
    a.in[0] = x;
    ew::Scalars<float, 1> s;
    report(op, "engine vec V8 U1", time_us([&] { CK((ew::launch_vec<1, 8, float, bf16, bf16, bf16, bf16>(a, s, fn, 0))); }));
    for (int dv : {1, 2, 4, 8}) {
      char nm[64];
      std::snprintf(nm, sizeof nm, "engine grid/%d", dv);
      report(op, nm, time_us([&] { launch_engine_div<1, 8>(a, s, fn, dv); }));
    }
    report(op, "dense V8 U1", time_us([&] { launch_dense<1, 8, 1>(a, s, fn); }));
    report(op, "dense V8 U2", time_us([&] { launch_dense<1, 8, 2>(a, s, fn); }));
    report(op, "dense V4 U2", time_us([&] { launch_dense<1, 4, 2>(a, s, fn); }));
    report(op, "vec3 V8 U1", time_us([&] { launch3<1, 8, 1>(a, s, fn); }));
    report(op, "vec3 V8 U2", time_us([&] { launch3<1, 8, 2>(a, s, fn); }));
    report(op, "simple V8 U1 T256", time_us([&] { simple_kernel<8, 1, 256><<<(n / 8 + 255) / 256, 256>>>(x, y, n / 8, fn); }));
    report(op, "simple V8 U2 T256", time_us([&] { simple_kernel<8, 2, 256><<<(n / 8 + 511) / 512, 256>>>(x, y, n / 8, fn); }));
  };
  elementwise::Params q;
  q.bits = 16;  // bf16: the 1 + erf form, like PyTorch
  run_all("gelu", Gelu{q});
  run_all("silu", Silu{q});
  run_all("clamp", Clamp1{q});
  {  // the real clamp path: ternary, scalar bounds
    ew::Args<3> a;
    a.rank = 1;
    a.use32 = true;
    a.numel = n;
    a.shape[0] = n;
    a.stride[0][0] = a.stride[1][0] = 1;
    a.out[0] = y;
    a.in[0] = x;
    ew::Scalars<float, 3> s;
    s.is[1] = s.is[2] = true;
    s.v[1] = -0.5f;
    s.v[2] = 0.5f;
    q.has = 3;
    report("clamp", "engine ternary (scalars)",
           time_us([&] { CK((ew::launch_vec<3, 8, float, bf16, bf16, bf16, bf16>(a, s, Clamp3{q}, 0))); }));
    report("clamp", "ternary dense V8 U1", time_us([&] { launch_dense<3, 8, 1>(a, s, Clamp3{q}); }));
    {
      ew::Args<1> a1;
      a1.rank = 1; a1.use32 = true; a1.numel = n; a1.shape[0] = n;
      a1.stride[0][0] = a1.stride[1][0] = 1; a1.out[0] = y; a1.in[0] = x;
      ew::Scalars<float, 1> s1;
      report("clamp", "bound vec3 V8 U1", time_us([&] { launch3<1, 8, 1>(a1, s1, ClampBound{q, -0.5f, 0.5f}); }));
      report("clamp", "bound vec3 V8 U2", time_us([&] { launch3<1, 8, 2>(a1, s1, ClampBound{q, -0.5f, 0.5f}); }));
      report("clamp", "bound engine", time_us([&] { CK((ew::launch_vec<1, 8, float, bf16, bf16, bf16, bf16>(a1, s1, ClampBound{q, -0.5f, 0.5f}, 0))); }));
    }
    report("clamp", "ternary dense V8 U2", time_us([&] { launch_dense<3, 8, 2>(a, s, Clamp3{q}); }));
    report("clamp", "ternary dense V4 U2", time_us([&] { launch_dense<3, 4, 2>(a, s, Clamp3{q}); }));
  }
  return 0;
}
