// What every cross-entropy kernel shares: the row state (online max /
// sum-exp plus the coefficient sums A = sum a_c x_c and B = sum a_c), the
// per-row target facts, the coefficient a_c of a class, and the loss and
// gradient formulas of baracuda/ops/loss.hpp. The kernels take the Launch
// (launch.hpp) itself as their parameter.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "cuda/numeric.cuh"
#include "cuda/row_reduce.cuh"
#include "cuda/vector_io.cuh"
#include "ops/loss/launch.hpp"

namespace baracuda::loss::cuda::kern {

using dev::load_elems;
using dev::store_elems;


// Partial state of a row (or part of one).
template <class Acc>
struct CeState {
  dev::MaxSumExp<Acc> ms;
  Acc a;  // sum of a_c * x_c (terms with a_c == 0 skipped: 0 * -inf counts as 0)
  Acc b;  // sum of a_c
};

template <class Acc>
struct CeOp {
  using State = CeState<Acc>;
  __device__ __forceinline__ static State init() { return {dev::MaxSumExp<Acc>::empty(), Acc(0), Acc(0)}; }
  __device__ __forceinline__ static State combine(const State& x, const State& y) {
    return {dev::MaxSumExp<Acc>::merge(x.ms, y.ms), x.a + y.a, x.b + y.b};
  }
  __device__ __forceinline__ static void accumulate(State&, Acc, int64_t) {}
};

// Loss / dloss elements: f32, or the logits' dtype.
template <class T, class Acc>
__device__ __forceinline__ Acc load_loss(const Launch& l, const void* p, int64_t off) {
  return l.loss_f32 ? static_cast<Acc>(static_cast<const float*>(p)[off]) : dev::to_acc<Acc>(static_cast<const T*>(p)[off]);
}
template <class T, class Acc>
__device__ __forceinline__ void store_loss(const Launch& l, void* p, int64_t off, Acc v) {
  if (l.loss_f32) static_cast<float*>(p)[off] = static_cast<float>(v);
  else static_cast<T*>(p)[off] = dev::from_acc<T>(v);
}

__device__ __forceinline__ int64_t load_index(const Launch& l, int64_t row) {
  return l.index_dtype == DType::I32 ? static_cast<int64_t>(static_cast<const int32_t*>(l.target)[row * l.target_s])
                                     : static_cast<const int64_t*>(l.target)[row * l.target_s];
}

// Per-row facts and the constants of every element's coefficient.
template <class T>
struct RowInfo {
  using Acc = dev::acc_t<T>;
  int64_t t = -1;     // Index: the target class
  bool skip = false;  // ignore_index: loss 0, gradient 0
  bool bad = false;   // target out of range: loss and gradient NaN
  Acc tw = Acc(0);    // the target term's coefficient (1 - eps) w[t]
  Acc zw = Acc(0);    // the z-loss weight (w[t]; Probs: 1)
  bool need_coef = false;  // some a_c may be non-zero
  bool const_b = false;    // B is eps exactly (Index without weights)
  Acc eps_c = Acc(0);      // eps / C
  Acc keep = Acc(1);       // 1 - eps

  __device__ __forceinline__ static RowInfo make(const Launch& l, int64_t row) {
    RowInfo r;
    r.eps_c = static_cast<Acc>(l.eps / static_cast<double>(l.classes));
    r.keep = static_cast<Acc>(1.0 - l.eps);
    if (l.probs) {
      r.zw = Acc(1);
      r.need_coef = true;
      return r;
    }
    r.need_coef = l.eps > 0;
    r.const_b = !l.has_weight;
    r.t = load_index(l, row);
    r.skip = r.t == l.ignore_index;
    r.bad = !r.skip && (r.t < 0 || r.t >= l.classes);
    if (r.skip || r.bad) return r;
    const Acc wt = l.has_weight ? dev::to_acc<Acc>(static_cast<const T*>(l.weight)[r.t * l.weight_s]) : Acc(1);
    r.tw = r.keep * wt;
    r.zw = wt;
    return r;
  }
  __device__ __forceinline__ Acc weight(const Launch& l, int64_t c) const {
    return l.has_weight ? dev::to_acc<Acc>(static_cast<const T*>(l.weight)[c * l.weight_s]) : Acc(1);
  }
  // a_c; p = the probability target of class c (Probs only).
  __device__ __forceinline__ Acc coef(const Launch& l, int64_t c, Acc p) const {
    if (l.probs) return weight(l, c) * (p * keep + eps_c);
    if (!need_coef) return Acc(0);
    return l.has_weight ? eps_c * weight(l, c) : eps_c;
  }
};

// coef * v, where a coefficient of exactly 0 contributes 0 (the header's rule).
template <class Acc>
__device__ __forceinline__ Acc term(Acc coef, Acc v) {
  return coef == Acc(0) ? Acc(0) : coef * v;
}

// The row's loss from its lse, the sums A / B and x_t.
template <class T, class Acc>
__device__ __forceinline__ Acc row_loss(const Launch& l, const RowInfo<T>& r, Acc lse, Acc a, Acc b, Acc xt) {
  if (r.skip) return Acc(0);
  if (r.bad) return dev::quiet_nan<Acc>();
  Acc v = Acc(0);
  if (!l.probs) v += term(r.tw, lse - xt);
  if (r.need_coef) v += term(b, lse) - a;
  v += term(static_cast<Acc>(l.z) * r.zw, lse * lse);
  return v;
}

// The gradient's row factor g (dloss, / the Mean divisor).
template <class T, class Acc>
__device__ __forceinline__ Acc row_grad_scale(const Launch& l, int64_t row) {
  Acc g = l.reduction == LossReduction::None ? load_loss<T, Acc>(l, l.dloss, row * l.dloss_s) : load_loss<T, Acc>(l, l.dloss, 0);
  if (l.reduction == LossReduction::Mean) g /= *static_cast<const Acc*>(l.divisor);
  return g;
}

// dlogits of one element: g * (s * K - a - [c == t] tw), s = exp(x - lse).
template <class Acc, bool kFast>
__device__ __forceinline__ Acc grad_elem(Acc x, Acc lse, Acc g, Acc K, Acc a, Acc target_term) {
  const Acc s = kFast ? dev::acc_exp_nonpos(x - lse) : dev::acc_exp(x - lse);
  return g * (s * K - a - target_term);
}

// The (max, sum-exp) of W values at once: their max, then one exp each.
template <class Acc, int W>
__device__ __forceinline__ dev::MaxSumExp<Acc> fold_max_sum(const Acc (&v)[W]) {
  Acc m = dev::lowest_value<Acc>();
#pragma unroll
  for (int w = 0; w < W; ++w) m = v[w] > m ? v[w] : m;
  Acc s = Acc(0);
#pragma unroll
  for (int w = 0; w < W; ++w) s += dev::MaxSumExp<Acc>::scale(v[w], m);
  return {m, s};
}

}  // namespace baracuda::loss::cuda::kern
