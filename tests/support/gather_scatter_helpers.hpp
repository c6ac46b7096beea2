// Gather / scatter test helpers shared by tests/indexing/cpu_gather_scatter.cpp
// and cuda_gather_scatter.cpp: descriptors, random problems, the naive models
// (a direct loop over positions updating each destination as it comes: no
// runs, no sort) and runners that upload logical values into any layouts on
// any device, run a plan and read the outputs back (EmbTensor does the
// uploads).
#pragma once

#include <cmath>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/embedding_helpers.hpp"  // EmbTensor
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::GatherDescriptor;
using baracuda::ScatterDescriptor;
using baracuda::ScatterReduce;

inline GatherDescriptor gather_desc(baracuda::DType t, baracuda::DType it, Dims x, Dims index, int64_t dim) {
  GatherDescriptor d;
  d.dtype = t;
  d.index_dtype = it;
  d.x_shape = x;
  d.index_shape = index;
  d.dim = dim;
  return d;
}

inline ScatterDescriptor scatter_desc(baracuda::DType t, baracuda::DType it, Dims self, Dims index, Dims src,
                                      int64_t dim, ScatterReduce r = ScatterReduce::None, bool include_self = true) {
  ScatterDescriptor d;
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

inline int64_t resolved_dim(int64_t dim, int rank) { return dim < 0 ? dim + rank : dim; }

// Row-major offset in `shape` of coordinates c.
inline int64_t linear(const Dims& shape, const Dims& c) {
  int64_t o = 0;
  for (int d = 0; d < shape.rank; ++d) o = o * shape[d] + c[d];
  return o;
}

// Index values in [0, size); with `hot` > 0 half of them in [0, hot) (duplicates).
inline std::vector<int64_t> random_indices(int64_t n, int64_t size, Rng& rng, int64_t hot = 0) {
  std::vector<int64_t> v(static_cast<size_t>(n), 0);
  for (auto& x : v) {
    if (size == 0) x = 0;
    else if (hot > 0 && uniform_int(rng, 0, 1) == 0) x = uniform_int(rng, 0, std::min(hot, size) - 1);
    else x = uniform_int(rng, 0, size - 1);
  }
  return v;
}

// An index outside [0, x.size(dim)) reads 0 (the CUDA semantics).
inline std::vector<double> naive_gather(const GatherDescriptor& d, const std::vector<double>& x,
                                        const std::vector<int64_t>& idx) {
  const int64_t dim = resolved_dim(d.dim, d.x_shape.rank);
  std::vector<double> out(idx.size());
  for (size_t p = 0; p < idx.size(); ++p) {
    Dims c = unravel(static_cast<int64_t>(p), d.index_shape);
    if (idx[p] < 0 || idx[p] >= d.x_shape[dim]) continue;
    c[dim] = idx[p];
    out[p] = x[static_cast<size_t>(linear(d.x_shape, c))];
  }
  return out;
}

// The scatter model in Acc (float: the documented accumulator of 16-bit / f32;
// double: f64, or a high-precision model), rounded once to dtype. An index
// outside [0, self.size(dim)) contributes nothing (the CUDA semantics).
template <class Acc>
std::vector<double> naive_scatter(const ScatterDescriptor& d, const std::vector<double>& self,
                                  const std::vector<int64_t>& idx, const std::vector<double>& src) {
  const int64_t dim = resolved_dim(d.dim, d.self_shape.rank);
  std::vector<Acc> acc(self.size());
  std::vector<int64_t> count(self.size(), 0);  // contributions met so far
  for (size_t q = 0; q < self.size(); ++q) acc[q] = static_cast<Acc>(self[q]);
  for (size_t p = 0; p < idx.size(); ++p) {
    Dims c = unravel(static_cast<int64_t>(p), d.index_shape);
    const Acc v = static_cast<Acc>(d.use_value ? round_to(d.dtype, d.value)
                                               : src[static_cast<size_t>(linear(d.src_shape, c))]);
    if (idx[p] < 0 || idx[p] >= d.self_shape[dim]) continue;
    c[dim] = idx[p];
    const size_t q = static_cast<size_t>(linear(d.self_shape, c));
    const bool first = count[q]++ == 0;
    Acc& a = acc[q];
    if (d.reduce == ScatterReduce::None || (first && !d.include_self)) {
      a = v;
      continue;
    }
    switch (d.reduce) {
      case ScatterReduce::Sum:
      case ScatterReduce::Mean: a = a + v; break;
      case ScatterReduce::Prod: a = a * v; break;
      case ScatterReduce::Amax: a = std::isnan(a) ? a : (std::isnan(v) ? v : (v > a ? v : a)); break;
      case ScatterReduce::Amin: a = std::isnan(a) ? a : (std::isnan(v) ? v : (v < a ? v : a)); break;
      default: break;
    }
  }
  std::vector<double> out(self.size());
  for (size_t q = 0; q < self.size(); ++q) {
    Acc a = acc[q];
    if (d.reduce == ScatterReduce::Mean && count[q] > 0)
      a = a / static_cast<Acc>(count[q] + (d.include_self ? 1 : 0));
    out[q] = count[q] > 0 ? round_to(d.dtype, static_cast<double>(a)) : self[q];
  }
  return out;
}

// The integer model: torch's arithmetic in the dtype itself, wrapping at every
// step (sum, prod), mean = the wrapped sum divided by the count rounding toward
// minus infinity, amax / amin by value. Values are the dtype's (wrapped) values.
inline int64_t wrap_int(baracuda::DType t, int64_t v) {
  switch (t) {
    case baracuda::DType::I8: return static_cast<int8_t>(v);
    case baracuda::DType::U8: return static_cast<uint8_t>(v);
    case baracuda::DType::I16: return static_cast<int16_t>(v);
    case baracuda::DType::I32: return static_cast<int32_t>(v);
    default: return v;
  }
}
inline std::vector<int64_t> naive_scatter_int(const ScatterDescriptor& d, const std::vector<int64_t>& self,
                                              const std::vector<int64_t>& idx, const std::vector<int64_t>& src) {
  const int64_t dim = resolved_dim(d.dim, d.self_shape.rank);
  const baracuda::DType t = d.dtype;
  std::vector<int64_t> acc(self.size());
  std::vector<int64_t> count(self.size(), 0);
  for (size_t q = 0; q < self.size(); ++q) acc[q] = wrap_int(t, self[q]);
  for (size_t p = 0; p < idx.size(); ++p) {
    Dims c = unravel(static_cast<int64_t>(p), d.index_shape);
    const int64_t v = wrap_int(t, d.use_value ? static_cast<int64_t>(d.value)
                                              : src[static_cast<size_t>(linear(d.src_shape, c))]);
    if (idx[p] < 0 || idx[p] >= d.self_shape[dim]) continue;
    c[dim] = idx[p];
    const size_t q = static_cast<size_t>(linear(d.self_shape, c));
    const bool first = count[q]++ == 0;
    int64_t& a = acc[q];
    if (d.reduce == ScatterReduce::None || (first && !d.include_self)) {
      a = v;
      continue;
    }
    const uint64_t ua = static_cast<uint64_t>(a), uv = static_cast<uint64_t>(v);
    switch (d.reduce) {
      case ScatterReduce::Sum:
      case ScatterReduce::Mean: a = wrap_int(t, static_cast<int64_t>(ua + uv)); break;
      case ScatterReduce::Prod: a = wrap_int(t, static_cast<int64_t>(ua * uv)); break;
      case ScatterReduce::Amax: a = std::max(a, v); break;
      case ScatterReduce::Amin: a = std::min(a, v); break;
      default: break;
    }
  }
  std::vector<int64_t> out(self.size());
  for (size_t q = 0; q < self.size(); ++q) {
    int64_t a = acc[q];
    if (d.reduce == ScatterReduce::Mean && count[q] > 0) {
      const int64_t n = count[q] + (d.include_self ? 1 : 0);
      a = static_cast<int64_t>(std::floor(static_cast<long double>(a) / static_cast<long double>(n)));
    }
    out[q] = count[q] > 0 ? a : wrap_int(t, self[q]);
  }
  return out;
}

inline std::vector<double> naive_scatter_exact(const ScatterDescriptor& d, const std::vector<double>& self,
                                               const std::vector<int64_t>& idx, const std::vector<double>& src) {
  return d.dtype == baracuda::DType::F64 ? naive_scatter<double>(d, self, idx, src)
                                         : naive_scatter<float>(d, self, idx, src);
}

// ---- runners -------------------------------------------------------------------------
struct GsResult {
  baracuda::Status st, check;
  std::vector<double> out;   // logical values
  std::vector<uint8_t> raw;  // the whole out storage (gaps included)
  std::string variant;       // sku_for()'s
  std::vector<int64_t> iout;  // run_scatter_int: the integer values
  baracuda::PrecisionGuarantee precision;  // sku_for()'s
};

struct GatherLayouts {
  Layout x, index, out;
};
inline GatherLayouts gather_contiguous(const GatherDescriptor& d) {
  return {contiguous(d.x_shape), contiguous(d.index_shape), contiguous(d.index_shape)};
}

inline GsResult run_gather(const baracuda::Stream& s, const GatherDescriptor& d, const std::vector<double>& x,
                           const std::vector<int64_t>& idx, const GatherLayouts& L, uint8_t poison = 0xff) {
  GsResult r;
  auto plan = baracuda::GatherPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const bool ints = d.dtype == baracuda::DType::I32 || d.dtype == baracuda::DType::I64;
  std::vector<int64_t> xi(x.size());
  for (size_t i = 0; i < x.size(); ++i) xi[i] = static_cast<int64_t>(x[i]);
  EmbTensor X(dev, d.dtype, L.x, ints ? nullptr : &x, ints ? &xi : nullptr);
  EmbTensor I(dev, d.index_dtype, L.index, nullptr, &idx);
  EmbTensor O(dev, d.dtype, L.out, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  const baracuda::GatherArgs a{X.ref(), I.ref(), O.mut()};
  auto sku = plan->sku_for(s, W, a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  if (ints) {
    for (int64_t v : O.ints()) r.out.push_back(static_cast<double>(v));
  } else {
    r.out = O.values();
  }
  r.raw = O.raw();
  return r;
}

struct ScatterLayouts {
  Layout self, index, src, out;
};
inline ScatterLayouts scatter_contiguous(const ScatterDescriptor& d) {
  return {contiguous(d.self_shape), contiguous(d.index_shape), contiguous(d.src_shape), contiguous(d.self_shape)};
}

// in_place: out is self's own view (L.out is ignored).
inline GsResult run_scatter(const baracuda::Stream& s, const ScatterDescriptor& d, const std::vector<double>& self,
                            const std::vector<int64_t>& idx, const std::vector<double>& src, const ScatterLayouts& L,
                            bool in_place = false, uint8_t poison = 0xff,
                            const baracuda::PlanPreference& pref = {}) {
  GsResult r;
  auto plan = baracuda::ScatterPlan::select(s, d, pref);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor S(dev, d.dtype, L.self, &self, nullptr);
  EmbTensor I(dev, d.index_dtype, L.index, nullptr, &idx);
  EmbTensor X(dev, d.dtype, d.use_value ? contiguous({}) : L.src, d.use_value ? nullptr : &src, nullptr);
  EmbTensor O(dev, d.dtype, in_place ? contiguous({}) : L.out, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::ScatterArgs a;
  a.self = S.ref();
  a.index = I.ref();
  if (!d.use_value) a.src = X.ref();
  a.out = in_place ? S.mut() : O.mut();
  auto sku = plan->sku_for(s, W, a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  r.out = in_place ? S.values() : O.values();
  r.raw = in_place ? S.raw() : O.raw();
  return r;
}

// run_scatter for the integer dtypes: values as int64 (wrapped into the dtype
// on upload), the result in iout.
inline GsResult run_scatter_int(const baracuda::Stream& s, const ScatterDescriptor& d, const std::vector<int64_t>& self,
                                const std::vector<int64_t>& idx, const std::vector<int64_t>& src,
                                const ScatterLayouts& L, bool in_place = false, uint8_t poison = 0xff,
                                const baracuda::PlanPreference& pref = {}) {
  GsResult r;
  auto plan = baracuda::ScatterPlan::select(s, d, pref);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor S(dev, d.dtype, L.self, nullptr, &self);
  EmbTensor I(dev, d.index_dtype, L.index, nullptr, &idx);
  EmbTensor X(dev, d.dtype, d.use_value ? contiguous({}) : L.src, nullptr, d.use_value ? nullptr : &src);
  EmbTensor O(dev, d.dtype, in_place ? contiguous({}) : L.out, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::ScatterArgs a;
  a.self = S.ref();
  a.index = I.ref();
  if (!d.use_value) a.src = X.ref();
  a.out = in_place ? S.mut() : O.mut();
  auto sku = plan->sku_for(s, W, a);
  if (sku) r.variant = sku->variant, r.precision = sku->precision;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  r.iout = in_place ? S.ints() : O.ints();
  r.raw = in_place ? S.raw() : O.raw();
  return r;
}

}  // namespace bt
