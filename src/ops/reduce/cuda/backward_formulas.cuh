// Reduction backward: the gradient formulas every backward kernel applies
// (the elementwise pass, and the fused tile / row passes that finish a slice
// themselves). Private to src/ops/reduce/cuda/backward*.
#pragma once
#include <cuda_runtime.h>

#include "cuda/numeric.cuh"

namespace baracuda::reduce::cuda::bw {

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

}  // namespace baracuda::reduce::cuda::bw
