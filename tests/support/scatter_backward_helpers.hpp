// ScatterReduceBackwardPlan test helpers shared by
// tests/indexing/cpu_scatter_backward.cpp and cuda_scatter_backward.cpp: the
// descriptor, an independent model written the way torch's
// scatter_reduce_backward is (whole-tensor steps: counts by scatter_add,
// masked forward products, gathers; FunctionsManual.cpp) with this library's
// two documented differences (an excluded self never counts among amax / amin
// ties; unscattered positions get grad exactly), and a runner that uploads
// logical values into any layouts on any device.
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/embedding_helpers.hpp"  // EmbTensor
#include "support/gather_scatter_helpers.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::ScatterReduceBackwardDescriptor;

inline ScatterReduceBackwardDescriptor sbw_desc(baracuda::DType t, baracuda::DType it, Dims self, Dims index, Dims src,
                                                int64_t dim, ScatterReduce r, bool include_self = true) {
  ScatterReduceBackwardDescriptor d;
  d.dtype = t;
  d.index_dtype = it;
  d.self_shape = self;
  d.index_shape = index;
  d.src_shape = src;
  d.dim = dim;
  d.reduce = r;
  d.include_self = include_self;
  return d;
}

inline bool sbw_needs_values(ScatterReduce r) {
  return r == ScatterReduce::Prod || r == ScatterReduce::Amax || r == ScatterReduce::Amin;
}

inline std::string sbw_what(const ScatterReduceBackwardDescriptor& d) {
  return std::string(baracuda::dtype_name(d.dtype)) + " idx " + std::string(baracuda::dtype_name(d.index_dtype)) + " " +
         baracuda::scatter_reduce_name(d.reduce) + (d.include_self ? " include_self" : " exclude_self") + " self " +
         d.self_shape.to_string() + " index " + d.index_shape.to_string() + " src " + d.src_shape.to_string() +
         " dim " + std::to_string(d.dim) + (d.compute_grad_self ? "" : " no grad_self") +
         (d.compute_grad_src ? "" : " no grad_src");
}

struct SbwGrads {
  std::vector<double> self, src;  // logical values of grad_self / grad_src (src's shape)
};

// The model in Acc (float for f16 / bf16 / f32, double for f64), each output
// rounded once to dtype. An index outside [0, self.size(dim)) contributes
// nothing and gets grad_src 0 (the CUDA semantics).
template <class Acc>
SbwGrads sbw_model(const ScatterReduceBackwardDescriptor& d, const std::vector<double>& grad,
                   const std::vector<double>& self, const std::vector<int64_t>& idx, const std::vector<double>& src,
                   const std::vector<double>& result) {
  const int64_t dim = resolved_dim(d.dim, d.self_shape.rank);
  const size_t m = static_cast<size_t>(numel(d.self_shape));
  const bool inc = d.include_self && d.reduce != ScatterReduce::None;
  std::vector<size_t> dest, spos, bad;  // destination and src element of every valid index position
  std::vector<char> scattered(m, 0);
  for (size_t p = 0; p < idx.size(); ++p) {
    Dims c = unravel(static_cast<int64_t>(p), d.index_shape);
    const size_t sp = static_cast<size_t>(linear(d.src_shape, c));
    if (idx[p] < 0 || idx[p] >= d.self_shape[dim]) {
      bad.push_back(sp);
      continue;
    }
    spos.push_back(sp);
    c[dim] = idx[p];
    dest.push_back(static_cast<size_t>(linear(d.self_shape, c)));
    scattered[dest.back()] = 1;
  }
  const size_t n = dest.size();
  auto S = [&](size_t p) { return static_cast<Acc>(src[spos[p]]); };
  std::vector<Acc> G(m), gself(m), gsrc(n);
  for (size_t q = 0; q < m; ++q) G[q] = static_cast<Acc>(grad[q]);
  // A forward scatter-prod in Acc (index order), starting from `start` (inc)
  // or from the first contribution: torch's scatter_reduce(..., "prod", inc).
  auto scatter_prod = [&](const std::vector<Acc>& start, auto contribution) {
    std::vector<Acc> acc = start;
    std::vector<int64_t> count(m, 0);
    for (size_t p = 0; p < n; ++p) {
      Acc& a = acc[dest[p]];
      a = (count[dest[p]]++ == 0 && !inc) ? contribution(p) : a * contribution(p);
    }
    return acc;
  };
  switch (d.reduce) {
    case ScatterReduce::None:
    case ScatterReduce::Sum:
      gself = G;
      for (size_t p = 0; p < n; ++p) gsrc[p] = G[dest[p]];
      break;
    case ScatterReduce::Mean: {
      std::vector<Acc> N(m, inc ? Acc(1) : Acc(0));
      for (size_t p = 0; p < n; ++p) N[dest[p]] += Acc(1);
      for (auto& x : N) x = x == Acc(0) ? Acc(1) : x;
      for (size_t q = 0; q < m; ++q) gself[q] = G[q] / N[q];
      for (size_t p = 0; p < n; ++p) gsrc[p] = G[dest[p]] / N[dest[p]];
      break;
    }
    case ScatterReduce::Prod: {
      std::vector<Acc> masked_self(m), self_acc(m);
      for (size_t q = 0; q < m; ++q) {
        self_acc[q] = static_cast<Acc>(self[q]);
        masked_self[q] = self_acc[q] == Acc(0) ? Acc(1) : self_acc[q];
      }
      const auto msr = scatter_prod(masked_self, S);
      for (size_t q = 0; q < m; ++q) gself[q] = G[q] * msr[q] / masked_self[q];
      std::vector<int64_t> zeros(m, 0);
      for (size_t p = 0; p < n; ++p) zeros[dest[p]] += S(p) == Acc(0);
      auto single = [&](size_t p) { return S(p) == Acc(0) && zeros[dest[p]] == 1; };
      const auto msrc = scatter_prod(self_acc, [&](size_t p) { return single(p) ? Acc(1) : S(p); });
      for (size_t p = 0; p < n; ++p) {
        const size_t q = dest[p];
        gsrc[p] = single(p) ? G[q] * msrc[q]
                            : (G[q] * static_cast<Acc>(result[q])) / (S(p) == Acc(0) ? Acc(1) : S(p));
      }
      break;
    }
    case ScatterReduce::Amax:
    case ScatterReduce::Amin: {
      std::vector<Acc> self_is(m), N(m);
      for (size_t q = 0; q < m; ++q) {
        self_is[q] = static_cast<Acc>(self[q]) == static_cast<Acc>(result[q]) ? Acc(1) : Acc(0);
        if (!inc && scattered[q]) self_is[q] = Acc(0);  // the excluded self never counts (torch counts it)
      }
      N = self_is;
      for (size_t p = 0; p < n; ++p) N[dest[p]] += S(p) == static_cast<Acc>(result[dest[p]]) ? Acc(1) : Acc(0);
      std::vector<Acc> gd(m);
      for (size_t q = 0; q < m; ++q) gd[q] = G[q] / N[q];
      for (size_t q = 0; q < m; ++q) gself[q] = self_is[q] * gd[q];
      for (size_t p = 0; p < n; ++p)
        gsrc[p] = (S(p) == static_cast<Acc>(result[dest[p]]) ? Acc(1) : Acc(0)) * gd[dest[p]];
      break;
    }
  }
  SbwGrads r;
  r.self.resize(m);
  for (size_t q = 0; q < m; ++q) {
    Acc v = gself[q];
    if (!scattered[q]) v = G[q];  // exactly grad where nothing was scattered
    else if (!inc) v = Acc(0);    // torch: grad_self.scatter(dim, index, 0)
    r.self[q] = round_to(d.dtype, static_cast<double>(v));
  }
  r.src.assign(static_cast<size_t>(numel(d.src_shape)), 0.0);
  for (size_t p = 0; p < n; ++p) r.src[spos[p]] = round_to(d.dtype, static_cast<double>(gsrc[p]));
  return r;
}

inline SbwGrads sbw_model_exact(const ScatterReduceBackwardDescriptor& d, const std::vector<double>& grad,
                                const std::vector<double>& self, const std::vector<int64_t>& idx,
                                const std::vector<double>& src, const std::vector<double>& result) {
  return d.dtype == baracuda::DType::F64 ? sbw_model<double>(d, grad, self, idx, src, result)
                                         : sbw_model<float>(d, grad, self, idx, src, result);
}

// The forward's out (ScatterPlan on the CPU, same reduce / include_self).
inline std::vector<double> sbw_forward(const ScatterReduceBackwardDescriptor& d, const std::vector<double>& self,
                                       const std::vector<int64_t>& idx, const std::vector<double>& src) {
  const ScatterDescriptor f = scatter_desc(d.dtype, d.index_dtype, d.self_shape, d.index_shape, d.src_shape, d.dim,
                                           d.reduce, d.include_self);
  return run_scatter(baracuda::Stream::cpu(), f, self, idx, src, scatter_contiguous(f)).out;
}

struct SbwLayouts {
  Layout grad, index, self, src, result, grad_self, grad_src;
};
inline SbwLayouts sbw_contiguous(const ScatterReduceBackwardDescriptor& d) {
  const Layout s = contiguous(d.self_shape), x = contiguous(d.src_shape);
  return {s, contiguous(d.index_shape), s, x, s, s, x};
}

struct SbwResult {
  baracuda::Status st, check;
  SbwGrads g;
  std::vector<uint8_t> raw_self, raw_src;  // whole output storages (gaps included)
  std::string variant;
};

// Runs the plan with every tensor the descriptor uses; `extra` (tests of the
// argument rules) is not used here.
inline SbwResult run_sbw(const baracuda::Stream& s, const ScatterReduceBackwardDescriptor& d,
                         const std::vector<double>& grad, const std::vector<double>& self,
                         const std::vector<int64_t>& idx, const std::vector<double>& src,
                         const std::vector<double>& result, const SbwLayouts& L, uint8_t poison = 0xff) {
  SbwResult r;
  auto plan = baracuda::ScatterReduceBackwardPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const bool values = plan->needs_self(), with_result = plan->needs_result();
  EmbTensor G(dev, d.dtype, L.grad, &grad, nullptr);
  EmbTensor I(dev, d.index_dtype, L.index, nullptr, &idx);
  EmbTensor S(dev, d.dtype, values ? L.self : contiguous({}), values ? &self : nullptr, nullptr);
  EmbTensor X(dev, d.dtype, values ? L.src : contiguous({}), values ? &src : nullptr, nullptr);
  EmbTensor R(dev, d.dtype, with_result ? L.result : contiguous({}), with_result ? &result : nullptr, nullptr);
  EmbTensor GS(dev, d.dtype, d.compute_grad_self ? L.grad_self : contiguous({}), nullptr, nullptr, poison);
  EmbTensor GX(dev, d.dtype, d.compute_grad_src ? L.grad_src : contiguous({}), nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::ScatterReduceBackwardArgs a;
  a.grad = G.ref();
  a.index = I.ref();
  if (values) a.self = S.ref(), a.src = X.ref();
  if (with_result) a.result = R.ref();
  if (d.compute_grad_self) a.grad_self = GS.mut();
  if (d.compute_grad_src) a.grad_src = GX.mut();
  auto sku = plan->sku_for(s, W, a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  if (d.compute_grad_self) r.g.self = GS.values(), r.raw_self = GS.raw();
  if (d.compute_grad_src) r.g.src = GX.values(), r.raw_src = GX.raw();
  return r;
}

}  // namespace bt
