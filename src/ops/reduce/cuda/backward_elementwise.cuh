// Reduction backward: the elementwise pass. An N-d strided walk over the
// input index space with up to five operands (dx, dy, x, y, aux) coalesced
// together; 32-bit index math (FastDiv) and one index decode per 16-byte
// vector when plan_elementwise() allows. Sum, Mean, Norm2 and LogSumExp are
// nothing else; Max/Min/Var/Std use it as the last pass when a slice spans
// several blocks. Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "ops/reduce/cuda/backward_common.cuh"
#include "ops/reduce/cuda/backward_formulas.cuh"
#include "ops/reduce/cuda/backward_planner.cuh"

namespace baracuda::reduce::cuda::bw {


constexpr int kEwThreads = 256;

// How a vector's values of dy / y / aux are fetched along the innermost dim.
enum OpMode { OM_BCAST = 0, OM_VEC = 1, OM_STRIDED = 2 };

template <class T, class I>
struct EwParams {
  T* dx;
  const T* dy;
  const T* x;
  const T* y;
  const acc_t<T>* aux;
  int nd;
  I size[kMaxRank];             // innermost first; size[0] counted in vectors
  FastDiv fd[kMaxRank];         // size[d] as a FastDiv (32-bit path only)
  I st[kEwOperands][kMaxRank];  // strides; st[k][0] already multiplied by VEC
  I inner[kEwOperands];         // element stride of the innermost dim
  int mode[kEwOperands];        // OpMode of dy, y, aux
  int coef_once;                // dy, y, aux all broadcast along the vector
  I items;                      // vectors in the whole index space
  I chunks;                     // ceil(items / (threads * U))
  int reverse;                  // walk the chunks from the end (L2 reuse after a pass over x)
  int has_y;
  EwArgs<acc_t<T>> args;
};

// Linear vector index -> element offset of every operand (one decode per vector).
template <bool kUseX, class T, class I>
__device__ __forceinline__ void ew_decode(const EwParams<T, I>& p, I item, I (&off)[kEwOperands]) {
#pragma unroll
  for (int k = 0; k < kEwOperands; ++k) off[k] = 0;
#pragma unroll
  for (int d = 0; d < kMaxRank; ++d) {
    if (d >= p.nd) break;
    I r;
    if (d == p.nd - 1) {
      r = item;
    } else {
      I q;
      if constexpr (std::is_same_v<I, uint32_t>) {
        q = p.fd[d].div(item);
      } else {
        q = item / p.size[d];
      }
      r = item - q * p.size[d];
      item = q;
    }
    off[kDx] += r * p.st[kDx][d];
    off[kDy] += r * p.st[kDy][d];
    if constexpr (kUseX) off[kX] += r * p.st[kX][d];
    off[kY] += r * p.st[kY][d];
    off[kAux] += r * p.st[kAux][d];
  }
}

// VEC values of dy / y / aux along the innermost dim.
template <int VEC, class S, class A, class I>
__device__ __forceinline__ void load_op(const S* ptr, I off, I inner, int mode, A (&out)[VEC]) {
  if (VEC == 1 || mode == OM_BCAST) {
    const A v = dev::to_acc<A>(ptr[off]);
#pragma unroll
    for (int j = 0; j < VEC; ++j) out[j] = v;
  } else if (mode == OM_VEC) {
    load_run<VEC>(ptr + off, out);
  } else {
#pragma unroll
    for (int j = 0; j < VEC; ++j) out[j] = dev::to_acc<A>(ptr[off + static_cast<I>(j) * inner]);
  }
}

// One chunk of kEwThreads * U vectors per block (a grid-stride loop only when
// the grid would exceed its limit). Each thread handles U vectors of VEC
// contiguous elements and issues its loads before its first store (stores could
// alias the loads as far as the compiler knows, which would serialise them).
// Two paths: dy, y, aux broadcast along the vector (a reduced innermost dim:
// one value and one coefficient per vector), or per-element operands (handled
// two vectors at a time to bound the registers).
template <int OP, class T, class I, int VEC, int U>
__device__ __forceinline__ void ew_general(const EwParams<T, I>& p, I first) {
  using A = acc_t<T>;
  constexpr bool kUseX = EwUses<OP>::x;
  constexpr bool kUseAux = EwUses<OP>::aux;
  I odx[U];
  A xv[U][VEC], dyv[U][VEC], yv[U][VEC], av[U][VEC];
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const I item = first + static_cast<I>(u * kEwThreads);
    odx[u] = 0;
#pragma unroll
    for (int j = 0; j < VEC; ++j) xv[u][j] = yv[u][j] = av[u][j] = dyv[u][j] = A(0);
    if (item < p.items) {
      I off[kEwOperands];
      ew_decode<kUseX>(p, item, off);
      odx[u] = off[kDx];
      if constexpr (kUseX) load_run<VEC>(p.x + off[kX], xv[u]);
      load_op<VEC>(p.dy, off[kDy], p.inner[kDy], p.mode[kDy], dyv[u]);
      if (p.has_y) load_op<VEC>(p.y, off[kY], p.inner[kY], p.mode[kY], yv[u]);
      if constexpr (kUseAux) load_op<VEC>(p.aux, off[kAux], p.inner[kAux], p.mode[kAux], av[u]);
    }
  }
#pragma unroll
  for (int u = 0; u < U; ++u) {
    const I item = first + static_cast<I>(u * kEwThreads);
    if (item >= p.items) continue;
    Vec<T, VEC> out;
#pragma unroll
    for (int j = 0; j < VEC; ++j) {
      const A cf = ew_coef<OP>(dyv[u][j], yv[u][j], av[u][j], p.args);
      out.v[j] = dev::from_acc<T>(ew_elem<OP, T>(cf, xv[u][j], yv[u][j], av[u][j]));
    }
    store_cs(reinterpret_cast<Vec<T, VEC>*>(p.dx + odx[u]), out);
  }
}

template <int OP, class T, class I, int VEC, int U>
__global__ void __launch_bounds__(kEwThreads) ew_kernel(const EwParams<T, I> p) {
  using A = acc_t<T>;
  constexpr bool kUseX = EwUses<OP>::x;
  constexpr bool kUseAux = EwUses<OP>::aux;
  for (I chunk = blockIdx.x; chunk < p.chunks; chunk += gridDim.x) {
    const I c = p.reverse ? p.chunks - 1 - chunk : chunk;
    const I first = c * static_cast<I>(kEwThreads * U) + threadIdx.x;
    if (VEC == 1 || p.coef_once) {
      // x stays packed (16 bytes per vector) until it is used: half the
      // registers for 16-bit types, so more vectors are in flight per SM.
      I odx[U];
      Vec<T, VEC> xv[U];
      A dyv[U], yv[U], av[U];
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const I item = first + static_cast<I>(u * kEwThreads);
        odx[u] = 0;
        dyv[u] = yv[u] = av[u] = A(0);
        if (item < p.items) {
          I off[kEwOperands];
          ew_decode<kUseX>(p, item, off);
          odx[u] = off[kDx];
          if constexpr (kUseX) {
            using Ux = typename Bits<sizeof(Vec<T, VEC>)>::type;
            const Ux raw = *reinterpret_cast<const Ux*>(p.x + off[kX]);
            __builtin_memcpy(&xv[u], &raw, sizeof(raw));
          }
          dyv[u] = ld_acc(p.dy + off[kDy]);
          if (p.has_y) yv[u] = ld_acc(p.y + off[kY]);
          if constexpr (kUseAux) av[u] = p.aux[off[kAux]];
        }
      }
#pragma unroll
      for (int u = 0; u < U; ++u) {
        const I item = first + static_cast<I>(u * kEwThreads);
        if (item >= p.items) continue;
        const A cf = ew_coef<OP>(dyv[u], yv[u], av[u], p.args);
        Vec<T, VEC> out;
#pragma unroll
        for (int j = 0; j < VEC; ++j) {
          const A xj = kUseX ? dev::to_acc<A>(xv[u].v[j]) : A(0);
          out.v[j] = dev::from_acc<T>(ew_elem<OP, T>(cf, xj, yv[u], av[u]));
        }
        if constexpr (VEC > 1) {
          store_cs(reinterpret_cast<Vec<T, VEC>*>(p.dx + odx[u]), out);
        } else {
          store_cs(p.dx + odx[u], out.v[0]);
        }
      }
    } else if constexpr (VEC > 1) {
      constexpr int kStep = sizeof(T) == 2 ? 1 : 2;  // 8-wide vectors of 4 operands: one at a time
#pragma unroll
      for (int h = 0; h < U; h += kStep) ew_general<OP, T, I, VEC, kStep>(p, first + static_cast<I>(h * kEwThreads));
    }
  }
}

template <int OP, class T, class I, int VEC, int U>
Status launch_ew_impl(const Problem& pb, const acc_t<T>* aux, const EwArgs<acc_t<T>>& args, bool reverse) {
  EwParams<T, I> p{};
  p.dx = static_cast<T*>(pb.dx);
  p.dy = static_cast<const T*>(pb.dy);
  p.x = static_cast<const T*>(pb.x);
  p.y = static_cast<const T*>(pb.y);
  p.aux = aux;
  p.nd = pb.ew_nd;
  for (int d = 0; d < pb.ew_nd; ++d) {
    const int64_t sz = d == 0 ? pb.ew_size[0] / VEC : pb.ew_size[d];
    p.size[d] = static_cast<I>(sz);
    if constexpr (std::is_same_v<I, uint32_t>) p.fd[d] = FastDiv(static_cast<uint32_t>(sz));
    for (int k = 0; k < kEwOperands; ++k) p.st[k][d] = static_cast<I>(pb.ew_st[k][d] * (d == 0 ? VEC : 1));
  }
  const void* base[kEwOperands] = {pb.dx, pb.dy, pb.x, pb.y, aux};
  p.coef_once = 1;
  for (int k = kDy; k < kEwOperands; ++k) {
    const int64_t inner = pb.ew_nd > 0 ? pb.ew_st[k][0] : 0;
    p.inner[k] = static_cast<I>(inner);
    int m = OM_STRIDED;
    if (inner == 0) {
      m = OM_BCAST;
    } else if (inner == 1 && base[k] != nullptr && is_aligned16(base[k])) {
      m = OM_VEC;
      for (int d = 1; d < pb.ew_nd; ++d)
        if (pb.ew_st[k][d] % VEC != 0) m = OM_STRIDED;
    }
    p.mode[k] = m;
    const bool used = k == kDy || (k == kY && pb.y != nullptr) || (k == kAux && EwUses<OP>::aux);
    if (used && m != OM_BCAST) p.coef_once = 0;
  }
  p.items = static_cast<I>(pb.numel / VEC);
  p.chunks = static_cast<I>(ceil_div(pb.numel / VEC, static_cast<int64_t>(kEwThreads) * U));
  p.reverse = reverse ? 1 : 0;
  p.has_y = pb.y != nullptr;
  p.args = args;
  const unsigned grid = static_cast<unsigned>(std::min<int64_t>(static_cast<int64_t>(p.chunks), INT_MAX));
  ew_kernel<OP, T, I, VEC, U><<<grid, kEwThreads, 0, pb.stream>>>(p);
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "ReduceBackwardPlan: elementwise kernel");
  return Status::ok();
}

// Picks the index width and the vector width for this problem, then launches.
template <int OP, class T>
Status launch_ew(const Problem& pb, const acc_t<T>* aux, const EwArgs<acc_t<T>>& args, bool reverse) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const EwPlan e = plan_elementwise(pb, EwUses<OP>::x);
  if (e.idx32) {
    return e.vec ? launch_ew_impl<OP, T, uint32_t, V, 4>(pb, aux, args, reverse)
                 : launch_ew_impl<OP, T, uint32_t, 1, 4>(pb, aux, args, reverse);
  }
  return e.vec ? launch_ew_impl<OP, T, uint64_t, V, 4>(pb, aux, args, reverse)
               : launch_ew_impl<OP, T, uint64_t, 1, 4>(pb, aux, args, reverse);
}

}  // namespace baracuda::reduce::cuda::bw
