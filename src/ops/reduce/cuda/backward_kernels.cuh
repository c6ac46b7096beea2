// Reduction backward: kernel templates and their host-side launch logic.
//
// Kernel templates (each instantiated per dtype in backward_<dtype>.cu):
//  * ew_kernel          N-d strided elementwise pass over the input index space
//                       with up to five operands (dx, dy, x, y, aux) coalesced
//                       together; 32-bit index math and one index decode per
//                       16-byte vector when the layout allows. Sum, Mean, Norm2
//                       and LogSumExp are nothing else; Max/Min/Var/Std use it
//                       as the last pass when a slice spans several blocks.
//  * row_smem_kernel    A block per contiguous slice of 4-96 KiB: cp.async copies
//                       the slice into shared memory, the block reduces it (tie
//                       count, shifted sum, or prefix/suffix products) and writes
//                       dx from shared memory. x is read from DRAM once, and
//                       several slices per SM are in flight.
//  * tile_kernel        A block owns TX slices x (TY threads x R elements) of the
//                       reduced index space, for any strides. FUSED: the tile is
//                       the whole slice, held in registers. PARTIAL: a partial
//                       per tile goes to the workspace. APPLY (Prod): dx from the
//                       registers and the product of the other tiles.
//  * row_partial_kernel Streaming partials (Var/Std, Max/Min) of long contiguous
//    col_partial_kernel slices, or of slices strided across a contiguous kept
//                       dim (reducing a leading / middle axis: each lane owns
//                       4-8 neighbouring slices through 16-byte loads).
//  * combine_kernel     A warp per slice folds the partials in a fixed order
//                       (mean, dy / ties, or the products of the other tiles).
//  * colprod_kernel     Prod over strided columns (kept innermost dim contiguous):
//    colprod_combine_   lanes own 16-byte vectors of columns, threads hold runs
//    kernel             of rows in registers; segment products -> combine ->
//                       apply (backward_prod_col.cuh).
// Every reduction order is fixed by the launch geometry, which depends only on
// the problem (shape, strides, alignment, sm_count), so results are bitwise
// reproducible. No atomics, no allocation, no synchronisation.
//
// Private to src/ops/reduce/cuda/backward*.cu.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "ops/reduce/reduce_cuda.hpp"

namespace baracuda::cuda_reduce::bw {

template <class T>
using acc_t = dev::acc_t<T>;

// ===========================================================================
// Host-side description of one backward problem (built by backward.cu from
// BackwardLaunch, consumed by the typed launchers).
// ===========================================================================

// Operand slots of the elementwise layout.
enum EwSlot { kDx = 0, kDy = 1, kX = 2, kY = 3, kAux = 4, kEwOperands = 5 };
// Operand slots of the tile layout's kept dims (reduced dims carry x and dx only).
enum KeptSlot { kKx = 0, kKdx = 1, kKdy = 2, kKy = 3, kKeptOperands = 4 };

struct Problem {
  ReduceKind kind;
  DType dtype;
  int64_t numel;  // input elements
  int64_t M;      // slices (outputs)
  int64_t L;      // elements per slice
  int64_t correction;
  const void* dy;
  const void* x;
  const void* y;
  void* dx;
  void* ws;
  size_t ws_bytes;
  cudaStream_t stream;
  int sm_count;

  // Elementwise view: every operand coalesced together, innermost dim first.
  int ew_nd;
  int64_t ew_size[kMaxRank];
  int64_t ew_st[kEwOperands][kMaxRank];

  // Tile view: kept dims (coalesced across x, dx, dy, y) and reduced dims
  // (coalesced across x, dx), innermost first. A slice's index over the kept
  // dims (row-major) is also its index into the aux buffer.
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int nr;
  int64_t rsize[kMaxRank];
  int64_t rst[2][kMaxRank];
  bool row_order;  // reduced dims are the contiguous ones (else the kept dims are)
};

// ===========================================================================
// Small shared helpers
// ===========================================================================

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }
inline int pow2_ceil(int64_t n) {  // n in [1, 2^30]
  int p = 1;
  while (p < n) p <<= 1;
  return p;
}
inline int log2_exact(int p) {
  int l = 0;
  while ((1 << l) < p) ++l;
  return l;
}
inline bool aligned16(const void* p) { return (reinterpret_cast<uintptr_t>(p) & 15u) == 0; }
inline size_t align16(size_t b) { return (b + 15) & ~size_t{15}; }

// Unsigned 32-bit division by a run-time constant via multiply-high (the
// round-up method: exact for dividends < 2^31, which the 32-bit index path
// guarantees). Replaces ~20 instructions of integer division per dim.
struct FastDiv {
  uint32_t d = 1, mul = 0, shr = 0;
  FastDiv() = default;
  explicit FastDiv(uint32_t divisor) : d(divisor) {
    if (divisor <= 1) return;
    uint32_t l = 0;
    while ((1ull << l) < divisor) ++l;  // ceil(log2(d))
    const uint32_t p = 31 + l;
    mul = static_cast<uint32_t>(((1ull << p) + divisor - 1) / divisor);
    shr = p - 32;
  }
  __device__ __forceinline__ uint32_t div(uint32_t n) const { return d == 1 ? n : (__umulhi(n, mul) >> shr); }
};

// Bit-carriers for streaming stores / vector loads of 2/4/8/16-byte values.
template <int B>
struct Bits;
template <>
struct Bits<2> { using type = unsigned short; };
template <>
struct Bits<4> { using type = unsigned int; };
template <>
struct Bits<8> { using type = unsigned long long; };
template <>
struct Bits<16> { using type = uint4; };

template <class T, int N>
struct alignas(sizeof(T) * N <= 16 ? sizeof(T) * N : 16) Vec {
  T v[N];
};

// dx is written once and never read back here: evict-first stores keep x
// (which a following pass may re-read) in L2 instead.
template <class V>
__device__ __forceinline__ void store_cs(V* p, const V& v) {
  using U = typename Bits<sizeof(V)>::type;
  U u;
  __builtin_memcpy(&u, &v, sizeof(V));
  __stcs(reinterpret_cast<U*>(p), u);
}

// N consecutive values of S starting at p (aligned to min(16, N*sizeof(S)))
// as accumulator values, in 16-byte (or narrower) loads.
template <int N, class S, class A>
__device__ __forceinline__ void load_run(const S* p, A (&out)[N]) {
  constexpr int B = N * static_cast<int>(sizeof(S));
  if constexpr (B >= 16) {
    static_assert(B % 16 == 0, "whole 16-byte pieces");
#pragma unroll
    for (int c = 0; c < B / 16; ++c) {
      const uint4 u = reinterpret_cast<const uint4*>(p)[c];
      S tmp[16 / sizeof(S)];
      __builtin_memcpy(tmp, &u, 16);
#pragma unroll
      for (int i = 0; i < static_cast<int>(16 / sizeof(S)); ++i)
        out[c * (16 / sizeof(S)) + i] = dev::to_acc<A>(tmp[i]);
    }
  } else {
    using U = typename Bits<B>::type;
    const U u = *reinterpret_cast<const U*>(p);
    S tmp[N];
    __builtin_memcpy(tmp, &u, B);
#pragma unroll
    for (int i = 0; i < N; ++i) out[i] = dev::to_acc<A>(tmp[i]);
  }
}

template <class T>
__device__ __forceinline__ acc_t<T> ld_acc(const T* p) {
  return dev::to_acc<acc_t<T>>(*p);
}

// Fixed-order warp sum: lane 0 ends with the sum of all 32 lanes.
template <class P>
__device__ __forceinline__ P warp_sum_down(P v) {
#pragma unroll
  for (int d = 16; d >= 1; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
  return v;
}

// ===========================================================================
// Gradient formulas, split into a per-slice coefficient and a per-element
// step: when dy, y and aux are constant along a vector (a reduced innermost
// dim) the coefficient, and its division, is computed once per vector / slice.
//   Sum        coef = dy                          dx = coef
//   Mean       coef = dy / n                      dx = coef
//   Max/Min    coef = dy / ties                   dx = tied(x, y) ? coef : 0
//              (the multi-tile path stores coef per slice in aux)
//   Norm2      coef = dy / y                      dx = y == 0 ? 0 : coef * x
//   LogSumExp  coef = dy                          dx = y == -inf ? 0 : coef * exp(x - y)
//   Var        coef = dy * 2 / max(0, n - corr)   dx = coef * (x - mean)
//   Std        coef = dy / (max(0, n - corr) * y) dx = coef * (x - mean)
// Plain IEEE arithmetic: n <= correction gives inf / NaN, a constant slice
// under Std gives inf * 0 = NaN, as PyTorch's formulas do.
// ===========================================================================

enum EwOp { EW_SUMMEAN = 0, EW_TIE, EW_NORM2, EW_LSE, EW_VARSTD };

template <class A>
struct EwArgs {
  A n;       // elements per slice (Mean)
  A denom;   // max(0, n - correction) (Var / Std)
  A rn;      // 1 / n, 1 / denom (rounded)
  A rdenom;
  int flag;  // Mean (vs Sum); Std (vs Var)
  int tie_coef;  // EW_TIE: aux already holds dy / ties (the multi-tile path)
};

// a / d for a divisor shared by the whole problem, given r = RN(1 / d): one
// multiply and an FMA residual correction instead of a full division (which
// costs ~10 instructions and a branch per element, too much for 16-bit types).
// Non-finite quotients are returned uncorrected: for d == +0, r = inf and
// a * inf is exactly a / +0 (+-inf, or NaN for a == 0); inf / NaN operands
// propagate the same way. Branch-free (a select).
template <class A>
__device__ __forceinline__ A div_by_uniform(A a, A d, A r) {
  const A q = a * r;
  const A c = fma(fma(-q, d, a), r, q);
  return isfinite(q) ? c : q;
}

template <int OP>
struct EwUses {
  static constexpr bool x = OP != EW_SUMMEAN;
  static constexpr bool aux = OP == EW_TIE || OP == EW_VARSTD;
};

// aux: the tie count, or dy / ties when tie_coef (EW_TIE); the slice mean (EW_VARSTD).
template <int OP, class A>
__device__ __forceinline__ A ew_coef(A dy, A y, A aux, const EwArgs<A>& a) {
  if constexpr (OP == EW_SUMMEAN) {
    return a.flag ? div_by_uniform(dy, a.n, a.rn) : dy;
  } else if constexpr (OP == EW_TIE) {
    return a.tie_coef ? aux : dy / aux;
  } else if constexpr (OP == EW_NORM2) {
    return dy / y;
  } else if constexpr (OP == EW_LSE) {
    return dy;
  } else {
    return a.flag ? dy / (a.denom * y) : div_by_uniform(dy * A(2), a.denom, a.rdenom);
  }
}

// exp for LogSumExp: full accuracy for f32 / f64 outputs; for 16-bit outputs
// the ex2.approx-based __expf (a few f32 ulp for |x - y| < 100, far below half
// an f16 / bf16 ulp) keeps the kernel memory-bound.
template <class T, class A>
__device__ __forceinline__ A lse_exp(A v) {
  if constexpr (sizeof(T) == 2) {
    return __expf(v);
  } else {
    return dev::acc_exp(v);
  }
}

template <int OP, class T, class A>
__device__ __forceinline__ A ew_elem(A coef, A x, A y, A aux) {
  if constexpr (OP == EW_SUMMEAN) {
    return coef;
  } else if constexpr (OP == EW_TIE) {
    const bool tied = (x == y) || (x != x && y != y);
    return tied ? coef : A(0);
  } else if constexpr (OP == EW_NORM2) {
    return y == A(0) ? A(0) : coef * x;
  } else if constexpr (OP == EW_LSE) {
    return y == -A(INFINITY) ? A(0) : coef * lse_exp<T>(x - y);
  } else {
    return coef * (x - aux);
  }
}

// ===========================================================================
// Elementwise kernel
// ===========================================================================

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
    } else if (inner == 1 && base[k] != nullptr && aligned16(base[k])) {
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
  if (e != cudaSuccess) return detail::cuda_status(static_cast<int>(e), "ReduceBackwardPlan: elementwise kernel");
  return Status::ok();
}

// Picks the index width and the vector width for this problem, then launches.
template <int OP, class T>
Status launch_ew(const Problem& pb, const acc_t<T>* aux, const EwArgs<acc_t<T>>& args, bool reverse) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const bool use_x = EwUses<OP>::x;
  // 32-bit index math when the index space and every operand's reach fit.
  bool small = pb.numel < (int64_t{1} << 31);
  for (int k = 0; k < kEwOperands && small; ++k) {
    int64_t reach = 0;
    for (int d = 0; d < pb.ew_nd; ++d) reach += (pb.ew_size[d] - 1) * pb.ew_st[k][d];
    small = reach < (int64_t{1} << 31);
  }
  // Vector path: the innermost dim is contiguous for dx (and x), splits into
  // whole vectors, and every vector starts 16-byte aligned.
  bool vec = pb.ew_nd >= 1 && pb.ew_size[0] % V == 0 && pb.ew_st[kDx][0] == 1 && aligned16(pb.dx) &&
             (!use_x || (pb.ew_st[kX][0] == 1 && aligned16(pb.x)));
  for (int d = 1; d < pb.ew_nd && vec; ++d)
    vec = pb.ew_st[kDx][d] % V == 0 && (!use_x || pb.ew_st[kX][d] % V == 0);
  if (small) {
    return vec ? launch_ew_impl<OP, T, uint32_t, V, 4>(pb, aux, args, reverse)
               : launch_ew_impl<OP, T, uint32_t, 1, 4>(pb, aux, args, reverse);
  }
  return vec ? launch_ew_impl<OP, T, uint64_t, V, 4>(pb, aux, args, reverse)
             : launch_ew_impl<OP, T, uint64_t, 1, 4>(pb, aux, args, reverse);
}

// ===========================================================================
// Block-level reductions over the TY threads of each of TX slices (fixed order)
// ===========================================================================

constexpr int kTileMaxThreads = 1024;

struct TileCfg {
  int TX = 1, TY = 1, lgTX = 0, lgTY = 0;
  int iters = 1;  // R-element groups per thread (PARTIAL only; 1 otherwise)
  int64_t S = 1;  // tiles per slice
  int64_t G = 1;  // slice groups (ceil(M / TX))
  int row = 1;    // thread order: ty fastest (row) or tx fastest (column)
  int vec = 0;    // 16-byte loads along the (single, contiguous) reduced dim
};

// Sum of one value per thread over the TY threads of each slice, in a fixed
// order; every thread gets its slice's total. sm: 2 * kTileMaxThreads slots
// (row order with TY >= 32 uses only the first TX * TY / 32).
template <class P>
__device__ __forceinline__ P block_sum(P v, int tx, int ty, const TileCfg& c, P* sm) {
  if (c.row && c.TY >= 32) {
    // Every warp lies inside one slice: shuffle tree, then the warp totals in order.
    v = warp_sum_down(v);
    const int nw = c.TY >> 5, w = ty >> 5;
    if ((threadIdx.x & 31) == 0) sm[tx * nw + w] = v;
    __syncthreads();
    P t = P(0);
    for (int k = 0; k < nw; ++k) t += sm[tx * nw + k];
    return t;
  }
  sm[ty * c.TX + tx] = v;
  __syncthreads();
  if (ty == 0) {
    P t = P(0);
    for (int k = 0; k < c.TY; ++k) t += sm[k * c.TX + tx];
    sm[kTileMaxThreads + tx] = t;
  }
  __syncthreads();
  return sm[kTileMaxThreads + tx];
}

// Exclusive prefix / suffix products of one value per lane across a full
// warp, in a fixed order: pre = v_0 * ... * v_{lane-1}, suf = v_{lane+1} *
// ... * v_31 (1 at the ends). Returns the inclusive prefix (lane 31: the
// warp's product).
template <class A>
__device__ __forceinline__ A warp_exclusive_products(A v, int lane, A& pre, A& suf) {
  A ip = v, is = v;
#pragma unroll
  for (int d = 1; d < 32; d <<= 1) {
    const A a = __shfl_up_sync(0xffffffffu, ip, d);
    const A b = __shfl_down_sync(0xffffffffu, is, d);
    if (lane >= d) ip = a * ip;
    if (lane + d < 32) is = is * b;
  }
  pre = __shfl_up_sync(0xffffffffu, ip, 1);
  suf = __shfl_down_sync(0xffffffffu, is, 1);
  if (lane == 0) pre = A(1);
  if (lane == 31) suf = A(1);
  return ip;
}

// Exclusive prefix / suffix products of one value per thread over the TY
// threads of each slice (fixed order). total: the product of all TY values,
// valid in the ty == 0 thread.
template <class A>
__device__ __forceinline__ void block_scan(A v, int tx, int ty, const TileCfg& c, A* sm, A& pre, A& suf, A& total) {
  if (c.row && c.TY >= 32) {
    const int lane = threadIdx.x & 31;
    A wp, ws;
    const A ip = warp_exclusive_products(v, lane, wp, ws);
    const int nw = c.TY >> 5, w = ty >> 5;
    if (lane == 31) sm[tx * nw + w] = ip;  // the warp's product
    __syncthreads();
    A bp = A(1), bs = A(1);
    for (int k = 0; k < w; ++k) bp = bp * sm[tx * nw + k];
    for (int k = nw - 1; k > w; --k) bs = sm[tx * nw + k] * bs;
    pre = bp * wp;
    suf = ws * bs;
    total = A(1);
    if (ty == 0)
      for (int k = 0; k < nw; ++k) total = total * sm[tx * nw + k];
    return;
  }
  sm[ty * c.TX + tx] = v;
  __syncthreads();
  A bp = A(1), bs = A(1);
  for (int k = 0; k < ty; ++k) bp = bp * sm[k * c.TX + tx];
  for (int k = c.TY - 1; k > ty; --k) bs = sm[k * c.TX + tx] * bs;
  pre = bp;
  suf = bs;
  total = ty == 0 ? v * bs : A(1);
}

// ===========================================================================
// Tile kernel
// ===========================================================================

enum TileKind { TK_MEAN = 0, TK_TIE, TK_PROD };  // Var/Std, Max/Min, Prod
enum TileMode { TM_FUSED = 0, TM_PARTIAL, TM_APPLY };

// Elements per thread and R-group: 64 bytes of f32, 32 of 16-bit types (16
// values), 8 f64.
template <class T>
constexpr int tile_r() {
  return sizeof(T) == 8 ? 8 : 16;
}
inline int tile_r(DType t) { return t == DType::F64 ? 8 : 16; }

// Geometry of the register tiles with iters == 1. Row order: TY threads along
// a slice (up to 1024, so a slice of 16384 16/32-bit values is one tile), TX
// slices per block for short slices. Column order (kept dim contiguous): up to
// 32 slices across the lanes, up to 16 threads along the reduced dim.
// Depends only on (order, dtype, M, L), so the workspace bound needs no strides.
inline TileCfg choose_tile(bool row, int R, int64_t M, int64_t L) {
  TileCfg c;
  const int64_t need = ceil_div(L, R);
  if (row) {
    c.TY = pow2_ceil(std::min<int64_t>(need, kTileMaxThreads));
    c.TX = c.TY >= 256 ? 1 : std::min(256 / c.TY, pow2_ceil(std::min<int64_t>(M, 256)));
  } else {
    c.TX = pow2_ceil(std::min<int64_t>(M, 32));
    c.TY = pow2_ceil(std::min<int64_t>(need, 16));
  }
  c.row = row ? 1 : 0;
  c.lgTX = log2_exact(c.TX);
  c.lgTY = log2_exact(c.TY);
  c.S = ceil_div(L, static_cast<int64_t>(c.TY) * R);
  c.G = ceil_div(M, c.TX);
  return c;
}

// Workspace of the multi-tile path for S tiles per slice (0 when S == 1).
//   Var/Std, Max/Min: aux[M] (acc) + partials[M][S] (8 bytes each)
//   Prod:             partials[M][S] (acc) + others[M][S] (acc)
inline size_t tile_ws_bytes(ReduceKind kind, DType dtype, int64_t M, int64_t S) {
  if (S <= 1) return 0;
  const size_t a = dtype == DType::F64 ? 8 : 4;
  const size_t ms = static_cast<size_t>(M) * static_cast<size_t>(S);
  if (kind == ReduceKind::Prod) return 2 * align16(ms * a);
  return align16(static_cast<size_t>(M) * a) + align16(ms * 8);
}

template <class T>
struct TileParams {
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int nr;
  int64_t rsize[kMaxRank];
  int64_t rst[2][kMaxRank];
  int64_t M, L;
  TileCfg c;
  const T* x;
  T* dx;
  const T* dy;
  const T* y;
  void* part;     // [M][S] partials (PARTIAL)
  acc_t<T>* aux;  // TK_MEAN: [M] shift; TK_PROD: [M][S] products of the other tiles (APPLY)
  int has_y;
  EwArgs<acc_t<T>> args;
};

// Offsets of slice o for x, dx, dy, y (one decode per thread).
template <class TP>
__device__ __forceinline__ void kept_offsets(const TP& p, int64_t o, int64_t (&off)[kKeptOperands]) {
#pragma unroll
  for (int k = 0; k < kKeptOperands; ++k) off[k] = 0;
  if (p.M <= INT_MAX) {
    uint32_t rem = static_cast<uint32_t>(o);
    for (int d = 0; d < p.nk; ++d) {
      const uint32_t sz = static_cast<uint32_t>(p.ksize[d]);
      const uint32_t q = rem / sz, i = rem - q * sz;
#pragma unroll
      for (int k = 0; k < kKeptOperands; ++k) off[k] += static_cast<int64_t>(i) * p.kst[k][d];
      rem = q;
    }
  } else {
    int64_t rem = o;
    for (int d = 0; d < p.nk; ++d) {
      const int64_t q = rem / p.ksize[d], i = rem - q * p.ksize[d];
#pragma unroll
      for (int k = 0; k < kKeptOperands; ++k) off[k] += i * p.kst[k][d];
      rem = q;
    }
  }
}

// Offset of reduced element r for operand k (0: x, 1: dx).
template <class TP>
__device__ __forceinline__ int64_t red_offset(const TP& p, int64_t r, int k) {
  if (p.nr <= 1) return r * p.rst[k][0];  // nr == 0 means L == 1, r == 0
  int64_t off = 0;
  if (p.L <= INT_MAX) {
    uint32_t rem = static_cast<uint32_t>(r);
    for (int d = 0; d < p.nr; ++d) {
      const uint32_t sz = static_cast<uint32_t>(p.rsize[d]);
      const uint32_t q = rem / sz;
      off += static_cast<int64_t>(rem - q * sz) * p.rst[k][d];
      rem = q;
    }
  } else {
    int64_t rem = r;
    for (int d = 0; d < p.nr; ++d) {
      const int64_t q = rem / p.rsize[d];
      off += (rem - q * p.rsize[d]) * p.rst[k][d];
      rem = q;
    }
  }
  return off;
}

template <int TK, int MODE, class T>
__global__ void __launch_bounds__(kTileMaxThreads) tile_kernel(const TileParams<T> p) {
  using A = acc_t<T>;
  using P = std::conditional_t<TK == TK_TIE, long long, A>;
  constexpr int R = tile_r<T>();
  constexpr int V = static_cast<int>(16 / sizeof(T));
  static_assert(R % V == 0, "a thread's elements must be whole vectors");
  __shared__ P sm[2 * kTileMaxThreads];

  const TileCfg& c = p.c;
  const int tid = threadIdx.x;
  const int tx = c.row ? tid >> c.lgTY : tid & (c.TX - 1);
  const int ty = c.row ? tid & (c.TY - 1) : tid >> c.lgTX;
  // Block order follows memory order (tiles of a slice adjacent in row order,
  // slice groups adjacent in column order), so the pass after a PARTIAL pass
  // can walk memory backwards and find the most recent tiles in L2.
  int64_t g, s;
  if (c.row) {
    g = blockIdx.x / c.S;
    s = blockIdx.x - g * c.S;
  } else {
    s = blockIdx.x / c.G;
    g = blockIdx.x - s * c.G;
  }
  const int64_t o = g * c.TX + tx;
  const bool live = o < p.M;
  const int64_t seg0 = s * static_cast<int64_t>(c.TY) * R * c.iters;
  int64_t ko[kKeptOperands] = {0, 0, 0, 0};
  if (live) kept_offsets(p, o, ko);

  // Element j of group `it` of this thread: vectors of V interleaved across the
  // TY threads, so every load instruction of a warp covers consecutive memory.
  auto elem = [&](int it, int j) -> int64_t {
    return seg0 + static_cast<int64_t>(it) * c.TY * R + (j / V) * (c.TY * V) + ty * V + (j % V);
  };
  auto valid = [&](int it, int j) { return live && elem(it, j) < p.L; };
  auto load_group = [&](int it, A (&v)[R]) {
#pragma unroll
    for (int j = 0; j < R; ++j) v[j] = A(0);
    if (c.vec) {
#pragma unroll
      for (int k = 0; k < R / V; ++k) {
        const int64_t r0 = elem(it, k * V);
        if (live && r0 < p.L) {
          A w[V];
          load_run<V>(p.x + ko[kKx] + r0, w);
#pragma unroll
          for (int i = 0; i < V; ++i) v[k * V + i] = w[i];
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < R; ++j) {
        const int64_t r = elem(it, j);
        if (live && r < p.L) v[j] = ld_acc(p.x + ko[kKx] + red_offset(p, r, 0));
      }
    }
  };

  A shift = A(0);
  if constexpr (TK == TK_MEAN) {
    // Sum x - x[first] instead of x: exact mean of a constant slice (so
    // x - mean is exactly 0 there), and no cancellation when |mean| >> spread.
    shift = live ? ld_acc(p.x + ko[kKx]) : A(0);
    if (!isfinite(shift)) shift = A(0);
  }
  const A yv = live && p.has_y ? ld_acc(p.y + ko[kKy]) : A(0);

  if constexpr (MODE == TM_PARTIAL) {
    P part = TK == TK_PROD ? P(1) : P(0);
    for (int it = 0; it < c.iters; ++it) {
      A v[R];
      load_group(it, v);
      if constexpr (TK == TK_MEAN) {
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(it, j)) part += v[j] - shift;
      } else if constexpr (TK == TK_TIE) {
        int cnt = 0;
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(it, j) && (v[j] == yv || (v[j] != v[j] && yv != yv))) ++cnt;
        part += cnt;
      } else {
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(it, j)) part = part * v[j];
      }
    }
    P total;
    if constexpr (TK == TK_PROD) {
      A pre, suf;
      block_scan(part, tx, ty, c, sm, pre, suf, total);
    } else {
      total = block_sum(part, tx, ty, c, sm);
    }
    if (live && ty == 0) {
      static_cast<P*>(p.part)[o * c.S + s] = total;
      if constexpr (TK == TK_MEAN) {
        if (s == 0) p.aux[o] = shift;
      }
    }
    return;
  } else {
    // FUSED (the tile is the whole slice) or APPLY (Prod): values stay in registers.
    A v[R];
    load_group(0, v);
    const A dyv = live ? ld_acc(p.dy + ko[kKdy]) : A(0);
    if constexpr (TK == TK_MEAN || TK == TK_TIE) {
      P part = P(0);
      if constexpr (TK == TK_MEAN) {
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(0, j)) part += v[j] - shift;
      } else {
        int cnt = 0;
#pragma unroll
        for (int j = 0; j < R; ++j)
          if (valid(0, j) && (v[j] == yv || (v[j] != v[j] && yv != yv))) ++cnt;
        part = cnt;
      }
      const P total = block_sum(part, tx, ty, c, sm);
      constexpr int OP = TK == TK_MEAN ? EW_VARSTD : EW_TIE;
      const A auxv = TK == TK_MEAN ? shift + static_cast<A>(total) / p.args.n : static_cast<A>(total);
      const A cf = ew_coef<OP>(dyv, yv, auxv, p.args);
#pragma unroll
      for (int j = 0; j < R; ++j) v[j] = ew_elem<OP, T>(cf, v[j], yv, auxv);
    } else {
      // Prod: dx_j = dy * (product of every other element of the slice), as
      // (exclusive prefix) * (exclusive suffix) in the fixed order (tile,
      // thread, element): exact with any number of zeros, no division.
#pragma unroll
      for (int j = 0; j < R; ++j)
        if (!valid(0, j)) v[j] = A(1);
      A tot = A(1);
#pragma unroll
      for (int j = 0; j < R; ++j) tot = tot * v[j];
      A pre, suf, total;
      block_scan(tot, tx, ty, c, sm, pre, suf, total);
      const A others = MODE == TM_APPLY && live ? p.aux[o * c.S + s] : A(1);
      const A outside = dyv * (others * pre * suf);
      A sl[R];
      A acc = A(1);
#pragma unroll
      for (int j = R - 1; j >= 0; --j) {
        sl[j] = acc;
        acc = acc * v[j];
      }
      A pl = A(1);
#pragma unroll
      for (int j = 0; j < R; ++j) {
        const A xj = v[j];
        v[j] = outside * (pl * sl[j]);
        pl = pl * xj;
      }
    }
    if (c.vec) {
#pragma unroll
      for (int k = 0; k < R / V; ++k) {
        const int64_t r0 = elem(0, k * V);
        if (live && r0 < p.L) {
          Vec<T, V> w;
#pragma unroll
          for (int i = 0; i < V; ++i) w.v[i] = dev::from_acc<T>(v[k * V + i]);
          store_cs(reinterpret_cast<Vec<T, V>*>(p.dx + ko[kKdx] + r0), w);
        }
      }
    } else {
#pragma unroll
      for (int j = 0; j < R; ++j) {
        const int64_t r = elem(0, j);
        if (live && r < p.L) store_cs(p.dx + ko[kKdx] + red_offset(p, r, 1), dev::from_acc<T>(v[j]));
      }
    }
  }
}

// ===========================================================================
// Row kernel through shared memory: a block per contiguous slice.
// ===========================================================================

constexpr int kRowMaxThreads = 512;
constexpr int kRowMaxChunks = 16;            // 16-byte chunks per thread (Prod keeps their products)
constexpr size_t kRowMaxBytes = 96 * 1024;   // 2+ blocks per SM; larger slices take the tile path

template <class T>
struct RowParams {
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int64_t M;
  int nchunks;  // 16-byte chunks per slice (L * sizeof(T) / 16)
  const T* x;
  T* dx;
  const T* dy;
  const T* y;
  int has_y;
  EwArgs<acc_t<T>> args;
};

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem) : "memory");
}
__device__ __forceinline__ void cp_async_wait_all() {
  asm volatile("cp.async.commit_group;\ncp.async.wait_group 0;\n" ::: "memory");
}

template <int TK, class T>
__global__ void __launch_bounds__(kRowMaxThreads) row_smem_kernel(const RowParams<T> p) {
  using A = acc_t<T>;
  using P = std::conditional_t<TK == TK_TIE, long long, A>;
  constexpr int V = static_cast<int>(16 / sizeof(T));
  extern __shared__ uint4 sx[];  // the slice, nchunks * 16 bytes
  __shared__ P sm[kRowMaxThreads / 32];

  const int tid = threadIdx.x, nt = blockDim.x;
  TileCfg c;  // one slice per block: TX = 1, TY = blockDim (a multiple of 32)
  c.TY = nt;
  c.row = 1;
  int64_t ko[kKeptOperands];
  kept_offsets(p, static_cast<int64_t>(blockIdx.x), ko);
  const T* xr = p.x + ko[kKx];
  T* dr = p.dx + ko[kKdx];
  for (int ch = tid; ch < p.nchunks; ch += nt) cp_async16(&sx[ch], xr + static_cast<int64_t>(ch) * V);
  cp_async_wait_all();
  __syncthreads();

  auto chunk = [&](int ch, A (&v)[V]) {
    T tmp[V];
    const uint4 u = sx[ch];
    __builtin_memcpy(tmp, &u, 16);
#pragma unroll
    for (int i = 0; i < V; ++i) v[i] = dev::to_acc<A>(tmp[i]);
  };
  auto put = [&](int ch, const A (&v)[V]) {
    Vec<T, V> w;
#pragma unroll
    for (int i = 0; i < V; ++i) w.v[i] = dev::from_acc<T>(v[i]);
    store_cs(reinterpret_cast<Vec<T, V>*>(dr + static_cast<int64_t>(ch) * V), w);
  };
  const A dyv = ld_acc(p.dy + ko[kKdy]);
  const A yv = p.has_y ? ld_acc(p.y + ko[kKy]) : A(0);

  if constexpr (TK == TK_MEAN || TK == TK_TIE) {
    A shift = A(0);
    P part = P(0);
    if constexpr (TK == TK_MEAN) {
      T first;
      __builtin_memcpy(&first, &sx[0], sizeof(T));
      shift = dev::to_acc<A>(first);  // see tile_kernel: exact mean of a constant slice
      if (!isfinite(shift)) shift = A(0);
    }
    for (int ch = tid; ch < p.nchunks; ch += nt) {
      A v[V];
      chunk(ch, v);
      if constexpr (TK == TK_MEAN) {
#pragma unroll
        for (int i = 0; i < V; ++i) part += v[i] - shift;
      } else {
        int cnt = 0;
#pragma unroll
        for (int i = 0; i < V; ++i) cnt += (v[i] == yv || (v[i] != v[i] && yv != yv)) ? 1 : 0;
        part += cnt;
      }
    }
    const P total = block_sum(part, 0, tid, c, sm);
    constexpr int OP = TK == TK_MEAN ? EW_VARSTD : EW_TIE;
    const A auxv = TK == TK_MEAN ? shift + static_cast<A>(total) / p.args.n : static_cast<A>(total);
    const A cf = ew_coef<OP>(dyv, yv, auxv, p.args);
    for (int ch = tid; ch < p.nchunks; ch += nt) {
      A v[V];
      chunk(ch, v);
#pragma unroll
      for (int i = 0; i < V; ++i) v[i] = ew_elem<OP, T>(cf, v[i], yv, auxv);
      put(ch, v);
    }
  } else {
    // Prod. Scan order: thread, then its chunks (tid + k * nt), then the chunk's
    // elements. cp[k]: product of chunk k of this thread.
    A cp[kRowMaxChunks];
    A tot = A(1);
#pragma unroll
    for (int k = 0; k < kRowMaxChunks; ++k) {
      const int ch = tid + k * nt;
      cp[k] = A(1);
      if (ch < p.nchunks) {
        A v[V];
        chunk(ch, v);
#pragma unroll
        for (int i = 0; i < V; ++i) cp[k] = cp[k] * v[i];
      }
      tot = tot * cp[k];
    }
    A pre, suf, total;
    block_scan(tot, 0, tid, c, sm, pre, suf, total);
    const A outside = dyv * (pre * suf);
    A sc[kRowMaxChunks];  // product of this thread's chunks after k
    A run = A(1);
#pragma unroll
    for (int k = kRowMaxChunks - 1; k >= 0; --k) {
      sc[k] = run;
      run = run * cp[k];
    }
    A pc = A(1);  // product of this thread's chunks before k
#pragma unroll
    for (int k = 0; k < kRowMaxChunks; ++k) {
      const int ch = tid + k * nt;
      if (ch < p.nchunks) {
        A v[V], ls[V];
        chunk(ch, v);
        A r = A(1);
#pragma unroll
        for (int i = V - 1; i >= 0; --i) {
          ls[i] = r;
          r = r * v[i];
        }
        A lp = pc;
#pragma unroll
        for (int i = 0; i < V; ++i) {
          const A xi = v[i];
          v[i] = outside * (lp * (ls[i] * sc[k]));
          lp = lp * xi;
        }
        put(ch, v);
      }
      pc = pc * cp[k];
    }
  }
}

// ===========================================================================
// Streaming partial kernels (Var/Std, Max/Min over slices too long for one
// tile): few registers, several 16-byte loads in flight per thread, whole
// cache lines per warp. Each block writes the partial of one (slice group,
// segment) pair; combine_kernel folds the segments.
// ===========================================================================

constexpr int kPartThreads = 256;
constexpr int kPartUnroll = 4;  // 16-byte loads in flight per thread and step

template <class T>
struct PartParams {
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  int nr;
  int64_t rsize[kMaxRank];
  int64_t rst[2][kMaxRank];
  int64_t M, L;
  int64_t S;        // segments per slice
  int64_t seg;      // row kernel: 16-byte chunks per segment; column kernel: reduced elements per segment
  int64_t GV;       // column kernel: groups of 32 vectors of slices
  const T* x;
  const T* y;
  void* part;       // [M][S]
  acc_t<T>* aux;    // TK_MEAN: [M] shift
};

// Per-element partial: sum of x - shift (Var/Std) or tie count (Max/Min).
template <int TK, class Q, class A>
__device__ __forceinline__ void accumulate(Q& part, A v, A shift, A yv) {
  if constexpr (TK == TK_MEAN) {
    part += v - shift;
  } else {
    part += (v == yv || (v != v && yv != yv)) ? 1 : 0;
  }
}

// Contiguous slices (one reduced dim of stride 1, 16-byte aligned): a block per
// (slice, segment of `seg` chunks).
template <int TK, class T>
__global__ void __launch_bounds__(kPartThreads, 4) row_partial_kernel(const PartParams<T> p) {
  using A = acc_t<T>;
  using P = std::conditional_t<TK == TK_TIE, long long, A>;
  constexpr int V = static_cast<int>(16 / sizeof(T));
  __shared__ P sm[kPartThreads / 32];
  const int64_t o = blockIdx.x / p.S, s = blockIdx.x - o * p.S;
  int64_t ko[kKeptOperands];
  kept_offsets(p, o, ko);
  const T* xr = p.x + ko[kKx];
  A shift = A(0);
  if constexpr (TK == TK_MEAN) {
    shift = ld_acc(xr);  // see tile_kernel: exact mean of a constant slice
    if (!isfinite(shift)) shift = A(0);
  }
  const A yv = TK == TK_TIE ? ld_acc(p.y + ko[kKy]) : A(0);
  const int64_t nch = p.L / V;
  const int64_t b = s * p.seg, e = std::min(nch, b + p.seg);
  using Q = std::conditional_t<TK == TK_TIE, int, A>;  // per-thread partial
  Q part = Q(0);
  for (int64_t ch = b + threadIdx.x; ch < e; ch += kPartThreads * kPartUnroll) {
    uint4 v[kPartUnroll];  // raw: 4 registers per 16 bytes whatever the dtype
#pragma unroll
    for (int k = 0; k < kPartUnroll; ++k) {
      const int64_t c = ch + k * kPartThreads;
      if (c < e) v[k] = *reinterpret_cast<const uint4*>(xr + c * V);
    }
#pragma unroll
    for (int k = 0; k < kPartUnroll; ++k) {
      if (ch + k * kPartThreads < e) {
        T t[V];
        __builtin_memcpy(t, &v[k], 16);
#pragma unroll
        for (int i = 0; i < V; ++i) accumulate<TK>(part, dev::to_acc<A>(t[i]), shift, yv);
      }
    }
  }
  TileCfg c;
  c.TY = kPartThreads;
  const P total = block_sum(static_cast<P>(part), 0, static_cast<int>(threadIdx.x), c, sm);
  if (threadIdx.x == 0) {
    static_cast<P*>(p.part)[o * p.S + s] = total;
    if constexpr (TK == TK_MEAN) {
      if (s == 0) p.aux[o] = shift;
    }
  }
}

// Kept innermost dim contiguous (reducing a leading or middle axis): each lane
// owns V neighbouring slices (one 16-byte load per reduced element), a warp
// covers 32 * V slices, the 8 warps of a block take interleaved reduced
// elements of one segment.
template <int TK, class T>
__global__ void __launch_bounds__(kPartThreads, 3) col_partial_kernel(const PartParams<T> p) {
  using A = acc_t<T>;
  using P = std::conditional_t<TK == TK_TIE, long long, A>;
  constexpr int V = static_cast<int>(16 / sizeof(T));
  constexpr int kRows = kPartThreads / 32;
  __shared__ P sm[kRows][32][V];
  const int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
  const int64_t s = blockIdx.x / p.GV, vg = blockIdx.x - s * p.GV;
  const int64_t o0 = (vg * 32 + tx) * V;
  const bool live = o0 < p.M;
  int64_t ko[kKeptOperands] = {0, 0, 0, 0};
  if (live) kept_offsets(p, o0, ko);
  A shift[V], yv[V];
#pragma unroll
  for (int i = 0; i < V; ++i) shift[i] = yv[i] = A(0);
  if (live) {
    if constexpr (TK == TK_MEAN) {
      load_run<V>(p.x + ko[kKx], shift);  // reduced element 0 of the V slices
#pragma unroll
      for (int i = 0; i < V; ++i)
        if (!isfinite(shift[i])) shift[i] = A(0);
    } else {
#pragma unroll
      for (int i = 0; i < V; ++i) yv[i] = ld_acc(p.y + ko[kKy] + i * p.kst[kKy][0]);
    }
  }
  using Q = std::conditional_t<TK == TK_TIE, int, A>;  // per-thread partial
  Q part[V];
#pragma unroll
  for (int i = 0; i < V; ++i) part[i] = Q(0);
  const int64_t b = s * p.seg, e = std::min(p.L, b + p.seg);
  if (live) {
    for (int64_t r = b + ty; r < e; r += kRows * kPartUnroll) {
      uint4 v[kPartUnroll];  // raw: 4 registers per 16 bytes whatever the dtype
#pragma unroll
      for (int k = 0; k < kPartUnroll; ++k) {
        const int64_t rr = r + k * kRows;
        if (rr < e) {
          v[k] = *reinterpret_cast<const uint4*>(p.x + ko[kKx] + red_offset(p, rr, 0));
        }
      }
#pragma unroll
      for (int k = 0; k < kPartUnroll; ++k) {
        if (r + k * kRows < e) {
          T t[V];
          __builtin_memcpy(t, &v[k], 16);
#pragma unroll
          for (int i = 0; i < V; ++i) accumulate<TK>(part[i], dev::to_acc<A>(t[i]), shift[i], yv[i]);
        }
      }
    }
  }
#pragma unroll
  for (int i = 0; i < V; ++i) sm[ty][tx][i] = static_cast<P>(part[i]);
  __syncthreads();
  if (ty == 0 && live) {
#pragma unroll
    for (int i = 0; i < V; ++i) {
      P t = P(0);
#pragma unroll
      for (int k = 0; k < kRows; ++k) t += sm[k][tx][i];
      static_cast<P*>(p.part)[(o0 + i) * p.S + s] = t;
      if constexpr (TK == TK_MEAN) {
        if (s == 0) p.aux[o0 + i] = shift[i];
      }
    }
  }
}

// ===========================================================================
// Combine kernel: one warp per slice over its S tile partials, fixed order.
// ===========================================================================

constexpr int kCombineThreads = 256;

template <class T>
struct CombineParams {
  using A = acc_t<T>;
  const void* part;  // [M][S]
  A* aux;            // TK_MEAN: in shift, out mean; TK_TIE: out dy / count; TK_PROD: out [M][S]
  int64_t M, S;
  A n;
  // kept geometry, for dy (TK_TIE)
  int nk;
  int64_t ksize[kMaxRank];
  int64_t kst[kKeptOperands][kMaxRank];
  const T* dy;
};

template <int TK, class T>
__global__ void __launch_bounds__(kCombineThreads) combine_kernel(const CombineParams<T> p) {
  using A = acc_t<T>;
  const int64_t o = static_cast<int64_t>(blockIdx.x) * (kCombineThreads / 32) + (threadIdx.x >> 5);
  const int lane = threadIdx.x & 31;
  if (o >= p.M) return;  // whole warps leave together
  if constexpr (TK == TK_MEAN || TK == TK_TIE) {
    using P = std::conditional_t<TK == TK_TIE, long long, A>;
    const P* part = static_cast<const P*>(p.part) + o * p.S;
    P t = P(0);
    for (int64_t k = lane; k < p.S; k += 32) t += part[k];
    t = warp_sum_down(t);
    if (lane == 0) {
      if constexpr (TK == TK_MEAN) {
        p.aux[o] = p.aux[o] + t / p.n;
      } else {
        // The apply pass then needs no division per element.
        int64_t ko[kKeptOperands];
        kept_offsets(p, o, ko);
        p.aux[o] = ld_acc(p.dy + ko[kKdy]) / static_cast<A>(t);
      }
    }
  } else {
    // others[s] = prod_{t < s} part[t] * prod_{t > s} part[t]. Lane l owns a
    // contiguous run of tiles; a warp scan joins the runs.
    const A* part = static_cast<const A*>(p.part) + o * p.S;
    A* out = p.aux + o * p.S;
    const int64_t run = (p.S + 31) / 32;
    const int64_t b = std::min<int64_t>(p.S, lane * run), e = std::min<int64_t>(p.S, b + run);
    A prod = A(1);
    for (int64_t k = b; k < e; ++k) prod = prod * part[k];
    A pre, suf;
    warp_exclusive_products(prod, lane, pre, suf);
    for (int64_t k = e - 1; k >= b; --k) {
      out[k] = suf;
      suf = part[k] * suf;
    }
    for (int64_t k = b; k < e; ++k) {
      out[k] = pre * out[k];
      pre = pre * part[k];
    }
  }
}

// ===========================================================================
// Typed driver
// ===========================================================================

template <class T>
EwArgs<acc_t<T>> make_args(const Problem& pb) {
  using A = acc_t<T>;
  EwArgs<A> a{};
  a.n = static_cast<A>(pb.L);
  a.denom = static_cast<A>(std::max<int64_t>(0, pb.L - pb.correction));
  a.rn = A(1) / a.n;
  a.rdenom = A(1) / a.denom;
  a.flag = (pb.kind == ReduceKind::Mean || pb.kind == ReduceKind::Std) ? 1 : 0;
  a.tie_coef = 0;
  return a;
}

inline Status check_launch(const char* what) {
  const cudaError_t e = cudaGetLastError();
  if (e != cudaSuccess) return detail::cuda_status(static_cast<int>(e), what);
  return Status::ok();
}

template <int TK, int MODE, class T>
Status launch_tile(const TileParams<T>& tp, const Problem& pb) {
  const int64_t blocks = tp.c.G * tp.c.S;
  if (blocks > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: problem too large for the grid");
  tile_kernel<TK, MODE, T><<<static_cast<unsigned>(blocks), tp.c.TX * tp.c.TY, 0, pb.stream>>>(tp);
  return check_launch("ReduceBackwardPlan: tile kernel");
}

template <int TK, class T>
Status launch_combine(const CombineParams<T>& cp, const Problem& pb) {
  const int64_t blocks = ceil_div(cp.M, kCombineThreads / 32);
  if (blocks > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: too many outputs");
  combine_kernel<TK, T><<<static_cast<unsigned>(blocks), kCombineThreads, 0, pb.stream>>>(cp);
  return check_launch("ReduceBackwardPlan: combine kernel");
}

// One block per slice through shared memory, when the slice is a single
// contiguous, 16-byte aligned run of at most kRowMaxBytes.
template <int TK, class T>
bool try_row_smem(const Problem& pb, const EwArgs<acc_t<T>>& args, Status* st) {
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const size_t bytes = static_cast<size_t>(pb.L) * sizeof(T);
  if (!pb.row_order || pb.nr != 1 || pb.rst[0][0] != 1 || pb.rst[1][0] != 1 || pb.L % V != 0 ||
      bytes > kRowMaxBytes || bytes < 4096 || pb.M > INT_MAX || !aligned16(pb.x) || !aligned16(pb.dx))
    return false;
  for (int d = 0; d < pb.nk; ++d)
    if (pb.kst[kKx][d] % V != 0 || pb.kst[kKdx][d] % V != 0) return false;
  RowParams<T> rp{};
  rp.nk = pb.nk;
  for (int d = 0; d < kMaxRank; ++d) {
    rp.ksize[d] = pb.ksize[d];
    for (int k = 0; k < kKeptOperands; ++k) rp.kst[k][d] = pb.kst[k][d];
  }
  rp.M = pb.M;
  rp.nchunks = static_cast<int>(bytes / 16);
  rp.x = static_cast<const T*>(pb.x);
  rp.dx = static_cast<T*>(pb.dx);
  rp.dy = static_cast<const T*>(pb.dy);
  rp.y = static_cast<const T*>(pb.y);
  rp.has_y = pb.y != nullptr;
  rp.args = args;
  // 256 threads (16 chunks each at 64 KiB) leave room for 3 blocks per SM.
  const int threads = rp.nchunks <= 256 * kRowMaxChunks ? 256 : kRowMaxThreads;
  auto kern = row_smem_kernel<TK, T>;
  if (bytes > 48 * 1024) {
    const cudaError_t e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
    if (e != cudaSuccess) {
      *st = detail::cuda_status(static_cast<int>(e), "ReduceBackwardPlan: row kernel smem attribute");
      return true;
    }
  }
  kern<<<static_cast<unsigned>(pb.M), threads, bytes, pb.stream>>>(rp);
  *st = check_launch("ReduceBackwardPlan: row kernel");
  return true;
}

}  // namespace baracuda::cuda_reduce::bw

// Prod over strided columns (kept innermost dim contiguous): its own kernels.
#include "ops/reduce/cuda/backward_prod_col.cuh"

namespace baracuda::cuda_reduce::bw {

// Max/Min (TK_TIE), Var/Std (TK_MEAN), Prod (TK_PROD).
template <int TK, class T>
Status run_tiled(const Problem& pb) {
  using A = acc_t<T>;
  constexpr int R = tile_r<T>();
  constexpr int V = static_cast<int>(16 / sizeof(T));
  const EwArgs<A> args = make_args<T>(pb);

  {
    Status st;
    if (try_row_smem<TK, T>(pb, args, &st)) return st;
    if constexpr (TK == TK_PROD) {
      if (try_col_prod<T>(pb, &st)) return st;
    }
  }

  TileParams<T> tp{};
  tp.nk = pb.nk;
  tp.nr = pb.nr;
  for (int d = 0; d < kMaxRank; ++d) {
    tp.ksize[d] = pb.ksize[d];
    tp.rsize[d] = pb.rsize[d];
    for (int k = 0; k < kKeptOperands; ++k) tp.kst[k][d] = pb.kst[k][d];
    for (int k = 0; k < 2; ++k) tp.rst[k][d] = pb.rst[k][d];
  }
  tp.M = pb.M;
  tp.L = pb.L;
  tp.x = static_cast<const T*>(pb.x);
  tp.dx = static_cast<T*>(pb.dx);
  tp.dy = static_cast<const T*>(pb.dy);
  tp.y = static_cast<const T*>(pb.y);
  tp.has_y = pb.y != nullptr;
  tp.args = args;

  TileCfg c = choose_tile(pb.row_order, R, pb.M, pb.L);
  // backward_workspace_bytes() covers tile_ws_bytes at iters == 1, the most
  // any configuration below needs.
  if (tile_ws_bytes(pb.kind, pb.dtype, pb.M, c.S) > pb.ws_bytes)
    return Status(StatusCode::WorkspaceTooSmall, "ReduceBackwardPlan: workspace smaller than backward_workspace_bytes()",
                  tile_ws_bytes(pb.kind, pb.dtype, pb.M, c.S), pb.ws_bytes);
  bool vec = c.row && pb.nr == 1 && pb.rst[0][0] == 1 && pb.rst[1][0] == 1 && pb.L % V == 0 && aligned16(pb.x) &&
             aligned16(pb.dx);
  for (int d = 0; d < pb.nk && vec; ++d) vec = pb.kst[kKx][d] % V == 0 && pb.kst[kKdx][d] % V == 0;
  c.vec = vec ? 1 : 0;

  if (c.S == 1) {  // one tile per slice: read x once, write dx from registers
    tp.c = c;
    return launch_tile<TK, TM_FUSED, T>(tp, pb);
  }

  // Several tiles per slice: partials, a fixed-order combine, then the pass
  // that writes dx (Prod: a tile pass that applies the products of the other
  // tiles, so its PARTIAL tiles must be the APPLY tiles).
  char* ws = static_cast<char*>(pb.ws);
  A* aux;
  void* part;
  int64_t S = c.S;
  const int64_t target = 8 * static_cast<int64_t>(std::max(pb.sm_count, 1));  // 256-thread blocks
  if constexpr (TK == TK_PROD) {
    tp.c = c;
    part = ws;
    aux = reinterpret_cast<A*>(ws + align16(static_cast<size_t>(pb.M) * static_cast<size_t>(S) * sizeof(A)));
    tp.part = part;
    tp.aux = aux;
    BARACUDA_RETURN_IF_ERROR((launch_tile<TK, TM_PARTIAL, T>(tp, pb)));
  } else {
    aux = reinterpret_cast<A*>(ws);
    part = ws + align16(static_cast<size_t>(pb.M) * sizeof(A));
    PartParams<T> pp{};
    pp.nk = pb.nk;
    pp.nr = pb.nr;
    for (int d = 0; d < kMaxRank; ++d) {
      pp.ksize[d] = pb.ksize[d];
      pp.rsize[d] = pb.rsize[d];
      for (int k = 0; k < kKeptOperands; ++k) pp.kst[k][d] = pb.kst[k][d];
      for (int k = 0; k < 2; ++k) pp.rst[k][d] = pb.rst[k][d];
    }
    pp.M = pb.M;
    pp.L = pb.L;
    pp.x = tp.x;
    pp.y = tp.y;
    pp.part = part;
    pp.aux = aux;
    // Column kernel: the kept innermost dim is contiguous, splits into whole
    // vectors, and every row of V slices starts 16-byte aligned.
    bool col = !pb.row_order && pb.nk >= 1 && pb.kst[kKx][0] == 1 && pb.ksize[0] % V == 0 && aligned16(pb.x);
    for (int d = 1; d < pb.nk && col; ++d) col = pb.kst[kKx][d] % V == 0;
    for (int d = 0; d < pb.nr && col; ++d) col = pb.rst[0][d] % V == 0;
    if (c.vec && pb.M <= INT_MAX) {
      // Segments of at least 4096 chunks: never more segments than the
      // register tiles' S, which the workspace was sized for.
      const int64_t nch = pb.L / V;
      int64_t seg = ceil_div(pb.M * nch, target);
      seg = std::max<int64_t>(4096, ceil_div(seg, 1024) * 1024);
      S = ceil_div(nch, seg);
      pp.seg = seg;
      pp.S = S;
      if (pb.M * S > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: problem too large for the grid");
      row_partial_kernel<TK, T><<<static_cast<unsigned>(pb.M * S), kPartThreads, 0, pb.stream>>>(pp);
      BARACUDA_RETURN_IF_ERROR(check_launch("ReduceBackwardPlan: row partial kernel"));
    } else if (col) {
      // Segments of at least TY * R reduced elements (the column tiles' S bound).
      const int64_t GV = ceil_div(pb.M / V, 32);
      int64_t seg = ceil_div(pb.L * GV, target);
      seg = std::max<int64_t>(16 * R, ceil_div(seg, 32) * 32);
      S = ceil_div(pb.L, seg);
      pp.seg = seg;
      pp.S = S;
      pp.GV = GV;
      if (GV * S > INT_MAX) return Status(StatusCode::Unsupported, "ReduceBackwardPlan: problem too large for the grid");
      col_partial_kernel<TK, T><<<static_cast<unsigned>(GV * S), kPartThreads, 0, pb.stream>>>(pp);
      BARACUDA_RETURN_IF_ERROR(check_launch("ReduceBackwardPlan: column partial kernel"));
    } else {
      // Any other layout: register tiles, each thread looping over several
      // R-groups (fewer, longer-lived blocks).
      const int64_t iters = std::clamp<int64_t>(c.G * c.S / (target / 2), 1, c.S);
      c.iters = static_cast<int>(iters);
      c.S = S = ceil_div(c.S, iters);
      tp.c = c;
      tp.part = part;
      tp.aux = aux;
      BARACUDA_RETURN_IF_ERROR((launch_tile<TK, TM_PARTIAL, T>(tp, pb)));
    }
  }
  CombineParams<T> cp{};
  cp.part = part;
  cp.aux = aux;
  cp.M = pb.M;
  cp.S = S;
  cp.n = args.n;
  cp.nk = pb.nk;
  for (int d = 0; d < kMaxRank; ++d) {
    cp.ksize[d] = pb.ksize[d];
    for (int k = 0; k < kKeptOperands; ++k) cp.kst[k][d] = pb.kst[k][d];
  }
  cp.dy = static_cast<const T*>(pb.dy);
  BARACUDA_RETURN_IF_ERROR((launch_combine<TK, T>(cp, pb)));
  if constexpr (TK == TK_PROD) {
    return launch_tile<TK, TM_APPLY, T>(tp, pb);
  } else {
    // Walk memory backwards: the last data the partial pass read are in L2.
    constexpr int OP = TK == TK_MEAN ? EW_VARSTD : EW_TIE;
    EwArgs<A> a = args;
    a.tie_coef = 1;  // combine_kernel stored dy / ties
    return launch_ew<OP, T>(pb, aux, a, /*reverse=*/true);
  }
}

template <class T>
Status run_typed(const Problem& pb) {
  const EwArgs<acc_t<T>> args = make_args<T>(pb);
  switch (pb.kind) {
    case ReduceKind::Sum:
    case ReduceKind::Mean: return launch_ew<EW_SUMMEAN, T>(pb, nullptr, args, false);
    case ReduceKind::Norm2: return launch_ew<EW_NORM2, T>(pb, nullptr, args, false);
    case ReduceKind::LogSumExp: return launch_ew<EW_LSE, T>(pb, nullptr, args, false);
    case ReduceKind::Max:
    case ReduceKind::Min: return run_tiled<TK_TIE, T>(pb);
    case ReduceKind::Var:
    case ReduceKind::Std: return run_tiled<TK_MEAN, T>(pb);
    case ReduceKind::Prod: return run_tiled<TK_PROD, T>(pb);
    default: break;
  }
  return Status(StatusCode::Unsupported, "ReduceBackwardPlan: kind has no CUDA backward");
}

// Defined in backward_<dtype>.cu (one TU per dtype, for build parallelism).
Status run_f32(const Problem& pb);
Status run_f64(const Problem& pb);
Status run_f16(const Problem& pb);
Status run_bf16(const Problem& pb);

}  // namespace baracuda::cuda_reduce::bw
