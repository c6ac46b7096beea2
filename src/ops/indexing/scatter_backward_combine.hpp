// ScatterReduceBackwardPlan's per-destination arithmetic: the one definition
// the CPU reference and the CUDA run kernel both compile, so the two backends
// agree bit for bit (see the ScatterReduceBackwardPlan part of the header
// comment of include/baracuda/ops/indexing.hpp for the formulas).
//
// One destination q with k >= 1 contributions (members j = 0..k-1 in position
// order): g = grad[q], self = self[q], r = result[q] in Acc; src_at(j) returns
// member j's src value in Acc, put_src(j, v) stores member j's gradient.
// Returns grad_self[q] (the caller writes it when asked).
#pragma once

#include "ops/indexing/scatter_combine.hpp"  // kReduce*, BARACUDA_SCATTER_HD

namespace baracuda::indexing::detail {

template <class Acc, class SrcAt, class PutSrc>
BARACUDA_SCATTER_HD Acc scatter_backward_run(int reduce, bool include_self, bool want_src, Acc g, Acc self, Acc r,
                                             long long k, const SrcAt& src_at, const PutSrc& put_src) {
  const Acc zero = Acc(0), one = Acc(1);
  Acc gs = zero;  // grad_self[q]
  switch (reduce) {
    case kReduceMean: {
      const Acc n = static_cast<Acc>(k + (include_self ? 1 : 0));
      const Acc d = g / n;
      if (include_self) gs = d;
      if (want_src)
        for (long long j = 0; j < k; ++j) put_src(j, d);
      break;
    }
    case kReduceProd: {
      // masked self (0 -> 1); P = m * s_1 ... s_k; Q = (self if include_self)
      // times every nonzero member; zeros = how many members are zero.
      const Acc m = self == zero ? one : self;
      Acc p = m, q = include_self ? self : one;
      long long zeros = 0;
      for (long long j = 0; j < k; ++j) {
        const Acc v = src_at(j);
        p = p * v;
        if (v == zero) ++zeros;
        else q = q * v;
      }
      if (include_self) gs = (g * p) / m;
      if (want_src) {
        const Acc gr = g * r;
        for (long long j = 0; j < k; ++j) {
          const Acc v = src_at(j);
          put_src(j, v == zero ? (zeros == 1 ? g * q : gr / one) : gr / v);
        }
      }
      break;
    }
    case kReduceAmax:
    case kReduceAmin: {
      long long ties = include_self && self == r ? 1 : 0;
      for (long long j = 0; j < k; ++j) ties += src_at(j) == r ? 1 : 0;
      const Acc d = g / static_cast<Acc>(ties);
      if (include_self) gs = (self == r ? one : zero) * d;
      if (want_src)
        for (long long j = 0; j < k; ++j) put_src(j, (src_at(j) == r ? one : zero) * d);
      break;
    }
    case kReduceSum:
    default: {  // None: the plain scatter; self is overwritten
      if (reduce == kReduceSum && include_self) gs = g;
      if (want_src)
        for (long long j = 0; j < k; ++j) put_src(j, g);
      break;
    }
  }
  return gs;
}

}  // namespace baracuda::indexing::detail
