// take / put_ / one_hot test helpers shared by tests/indexing/cpu_take.cpp and
// cuda_take.cpp: elements handled as raw bytes (every dtype), the naive
// models (a direct loop over positions, no sort, no runs) and runners that
// place logical elements into any layouts on any device, run a plan and read
// the outputs back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

using Bytes = std::vector<uint8_t>;

inline size_t esize(baracuda::DType t) { return baracuda::dtype_size(t); }

// n random elements of t as raw bytes (any bit pattern: the data only moves).
inline Bytes random_bytes(baracuda::DType t, int64_t n, Rng& rng) {
  Bytes b(static_cast<size_t>(n) * esize(t));
  for (auto& x : b) x = static_cast<uint8_t>(uniform_int(rng, 0, 255));
  return b;
}

// Logical values <-> raw bytes (floats rounded to t; integers exact).
inline Bytes bytes_of(baracuda::DType t, const std::vector<double>& v) {
  HostBuffer h(t, static_cast<int64_t>(v.size()));
  for (size_t i = 0; i < v.size(); ++i) {
    if (is_fp(t)) h.set(static_cast<int64_t>(i), v[i]);
    else h.set_i(static_cast<int64_t>(i), static_cast<int64_t>(v[i]));
  }
  Bytes b(h.bytes());
  if (!b.empty()) std::memcpy(b.data(), h.data(), b.size());
  return b;
}
inline Bytes index_bytes(baracuda::DType it, const std::vector<int64_t>& v) { return host_from_i64(it, v).raw(); }

inline HostBuffer host_of(baracuda::DType t, const Bytes& b) {
  HostBuffer h(t, static_cast<int64_t>(b.size() / esize(t)));
  if (!b.empty()) std::memcpy(h.data(), b.data(), b.size());
  return h;
}

// The logical elements a layout holds after `logical` was written into it
// element by element (a broadcast view keeps the last write of each slot).
inline Bytes held(const Layout& L, baracuda::DType t, const Bytes& logical) {
  const size_t es = esize(t);
  Bytes storage(static_cast<size_t>(std::max<int64_t>(L.storage, 1)) * es, 0);
  for (int64_t i = 0; i < L.numel(); ++i)
    std::memcpy(&storage[static_cast<size_t>(L.offset_of(i)) * es], &logical[static_cast<size_t>(i) * es], es);
  Bytes out(static_cast<size_t>(L.numel()) * es);
  for (int64_t i = 0; i < L.numel(); ++i)
    std::memcpy(&out[static_cast<size_t>(i) * es], &storage[static_cast<size_t>(L.offset_of(i)) * es], es);
  return out;
}

// A buffer on `dev` holding layout L's storage (filled with `fill`), the
// logical elements written in.
struct RawTensor {
  Layout L;
  baracuda::DType t;
  baracuda::Buffer buf;
  RawTensor(baracuda::Device dev, baracuda::DType dtype, const Layout& layout, const Bytes* logical, uint8_t fill = 0)
      : L(layout), t(dtype), buf(dev, static_cast<size_t>(std::max<int64_t>(layout.storage, 1)) * esize(dtype)) {
    Bytes h(buf.bytes(), fill);
    const size_t es = esize(t);
    if (logical)
      for (int64_t i = 0; i < L.numel(); ++i)
        std::memcpy(&h[static_cast<size_t>(L.offset_of(i)) * es], &(*logical)[static_cast<size_t>(i) * es], es);
    (void)buf.copy_from_host(h.data(), h.size());
  }
  baracuda::TensorRef ref() const { return view(buf, t, L); }
  baracuda::TensorMut mut() { return view_mut(buf, t, L); }
  Bytes raw() const {
    Bytes h(buf.bytes());
    (void)buf.copy_to_host(h.data(), h.size());
    return h;
  }
  Bytes logical() const {
    const Bytes h = raw();
    const size_t es = esize(t);
    Bytes out(static_cast<size_t>(L.numel()) * es);
    for (int64_t i = 0; i < L.numel(); ++i)
      std::memcpy(&out[static_cast<size_t>(i) * es], &h[static_cast<size_t>(L.offset_of(i)) * es], es);
    return out;
  }
};

struct TakeResult {
  baracuda::Status st, check;
  Bytes out;          // logical elements
  Bytes raw;          // the whole out storage (gaps included)
  std::string variant;
};

// Every dtype (take / put_ without accumulate / one_hot's out) and the ones
// put_ accumulates.
inline constexpr baracuda::DType kAllDtypes[] = {
    baracuda::DType::Bool, baracuda::DType::I8,     baracuda::DType::U8,     baracuda::DType::I16,
    baracuda::DType::I32,  baracuda::DType::I64,    baracuda::DType::F16,    baracuda::DType::BF16,
    baracuda::DType::F32,  baracuda::DType::F64,    baracuda::DType::F8E4M3, baracuda::DType::F8E5M2,
    baracuda::DType::C64,  baracuda::DType::C128};
inline constexpr baracuda::DType kAccumulateDtypes[] = {baracuda::DType::F32, baracuda::DType::F64,
                                                        baracuda::DType::F16, baracuda::DType::BF16,
                                                        baracuda::DType::I32, baracuda::DType::I64};

// n flat indices of an N-element tensor in [-N, N) (a third counted from the
// end); with `hot`, half of them on the first 3 elements (duplicates).
inline std::vector<int64_t> flat_indices(int64_t n, int64_t N, Rng& rng, bool hot = false) {
  std::vector<int64_t> v(static_cast<size_t>(n), 0);
  for (auto& x : v) {
    x = hot && uniform_int(rng, 0, 1) == 0 ? uniform_int(rng, 0, std::min<int64_t>(N, 3) - 1) : uniform_int(rng, 0, N - 1);
    if (uniform_int(rng, 0, 2) == 0) x -= N;  // the same element, counted from the end
  }
  return v;
}

// Values for accumulate: integers in [-limit, limit] for integer dtypes, else
// uniform in [-1, 1) rounded to t.
inline Bytes values_for(baracuda::DType t, int64_t n, Rng& rng, int64_t limit = 1000) {
  if (!is_fp(t)) {
    std::vector<double> v(static_cast<size_t>(n));
    for (auto& x : v) x = static_cast<double>(uniform_int(rng, -limit, limit));
    return bytes_of(t, v);
  }
  return bytes_of(t, random_values(t, n, rng));
}

// The end every runner shares: the SKU for the arguments, run, synchronize,
// check_indices.
template <class Plan, class Args>
void run_and_check(const baracuda::Stream& s, const Plan& plan, const baracuda::Workspace& W, const Args& a,
                   TakeResult& r) {
  if (auto sku = plan.sku_for(s, W, a)) r.variant = sku->variant;
  r.st = plan.run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan.check_indices(s, W);
}

// ---- take -----------------------------------------------------------------------------
inline baracuda::TakeDescriptor take_desc(baracuda::DType t, baracuda::DType it, Dims x, Dims index) {
  baracuda::TakeDescriptor d;
  d.dtype = t;
  d.index_dtype = it;
  d.x_shape = x;
  d.index_shape = index;
  return d;
}

// Index outside [-N, N): a zero element (the CUDA semantics).
inline Bytes naive_take(const baracuda::TakeDescriptor& d, const Bytes& x, const std::vector<int64_t>& idx) {
  const size_t es = esize(d.dtype);
  const int64_t N = numel(d.x_shape);
  Bytes out(idx.size() * es, 0);
  for (size_t p = 0; p < idx.size(); ++p) {
    int64_t v = idx[p];
    if (v < -N || v >= N) continue;
    if (v < 0) v += N;
    std::memcpy(&out[p * es], &x[static_cast<size_t>(v) * es], es);
  }
  return out;
}

struct TakeLayouts {
  Layout x, index, out;
};
inline TakeLayouts take_contiguous(const baracuda::TakeDescriptor& d) {
  return {contiguous(d.x_shape), contiguous(d.index_shape), contiguous(d.index_shape)};
}

inline TakeResult run_take(const baracuda::Stream& s, const baracuda::TakeDescriptor& d, const Bytes& x,
                           const std::vector<int64_t>& idx, const TakeLayouts& L, uint8_t poison = 0xff) {
  TakeResult r;
  auto plan = baracuda::TakePlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const Bytes ib = index_bytes(d.index_dtype, idx);
  RawTensor X(dev, d.dtype, L.x, &x), I(dev, d.index_dtype, L.index, &ib), O(dev, d.dtype, L.out, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  const baracuda::TakeArgs a{X.ref(), I.ref(), O.mut()};
  run_and_check(s, *plan, W, a, r);
  r.out = O.logical();
  r.raw = O.raw();
  return r;
}

// ---- put_ -----------------------------------------------------------------------------
inline baracuda::PutDescriptor put_desc(baracuda::DType t, baracuda::DType it, Dims self, Dims index, Dims source,
                                        bool accumulate) {
  baracuda::PutDescriptor d;
  d.dtype = t;
  d.index_dtype = it;
  d.self_shape = self;
  d.index_shape = index;
  d.source_shape = source;
  d.accumulate = accumulate;
  return d;
}

// Position by position, each destination updated as it comes (bad indices
// skipped): assignment (so the last wins) or the documented accumulator.
inline Bytes naive_put(const baracuda::PutDescriptor& d, const Bytes& self, const std::vector<int64_t>& idx,
                       const Bytes& src) {
  const size_t es = esize(d.dtype);
  const int64_t N = numel(d.self_shape);
  auto dest = [&](size_t k) -> int64_t {
    const int64_t v = idx[k];
    if (v < -N || v >= N) return -1;
    return v < 0 ? v + N : v;
  };
  if (!d.accumulate) {
    Bytes out = self;
    for (size_t k = 0; k < idx.size(); ++k)
      if (const int64_t q = dest(k); q >= 0) std::memcpy(&out[static_cast<size_t>(q) * es], &src[k * es], es);
    return out;
  }
  const HostBuffer hs = host_of(d.dtype, self), hx = host_of(d.dtype, src);
  HostBuffer out = host_of(d.dtype, self);
  const bool ints = !is_fp(d.dtype);
  std::vector<uint64_t> ai(static_cast<size_t>(N));
  std::vector<float> af(static_cast<size_t>(N));
  std::vector<double> ad(static_cast<size_t>(N));
  for (int64_t q = 0; q < N; ++q) {
    ai[static_cast<size_t>(q)] = static_cast<uint64_t>(hs.get_i(q));
    af[static_cast<size_t>(q)] = static_cast<float>(hs.get(q));
    ad[static_cast<size_t>(q)] = hs.get(q);
  }
  std::vector<bool> hit(static_cast<size_t>(N), false);
  for (size_t k = 0; k < idx.size(); ++k) {
    const int64_t q = dest(k);
    if (q < 0) continue;
    const auto qi = static_cast<size_t>(q);
    hit[qi] = true;
    ai[qi] += static_cast<uint64_t>(hx.get_i(static_cast<int64_t>(k)));
    af[qi] += static_cast<float>(hx.get(static_cast<int64_t>(k)));
    ad[qi] += hx.get(static_cast<int64_t>(k));
  }
  for (int64_t q = 0; q < N; ++q) {
    const auto qi = static_cast<size_t>(q);
    if (!hit[qi]) continue;
    if (ints) out.set_i(q, static_cast<int64_t>(ai[qi]));
    else out.set(q, d.dtype == baracuda::DType::F64 ? ad[qi] : static_cast<double>(af[qi]));
  }
  return out.raw();
}

struct PutLayouts {
  Layout self, index, source, out;
};
inline PutLayouts put_contiguous(const baracuda::PutDescriptor& d) {
  return {contiguous(d.self_shape), contiguous(d.index_shape), contiguous(d.source_shape), contiguous(d.self_shape)};
}

// in_place: out is self's own view (L.out is ignored).
inline TakeResult run_put(const baracuda::Stream& s, const baracuda::PutDescriptor& d, const Bytes& self,
                          const std::vector<int64_t>& idx, const Bytes& src, const PutLayouts& L, bool in_place = false,
                          uint8_t poison = 0xff) {
  TakeResult r;
  auto plan = baracuda::PutPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const Bytes ib = index_bytes(d.index_dtype, idx);
  RawTensor S(dev, d.dtype, L.self, &self), I(dev, d.index_dtype, L.index, &ib), X(dev, d.dtype, L.source, &src);
  RawTensor O(dev, d.dtype, in_place ? contiguous({}) : L.out, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::PutArgs a{S.ref(), I.ref(), X.ref(), in_place ? S.mut() : O.mut()};
  run_and_check(s, *plan, W, a, r);
  r.out = in_place ? S.logical() : O.logical();
  r.raw = in_place ? S.raw() : O.raw();
  return r;
}

// ---- one_hot --------------------------------------------------------------------------
inline baracuda::OneHotDescriptor one_hot_desc(baracuda::DType t, baracuda::DType it, Dims index, int64_t C) {
  baracuda::OneHotDescriptor d;
  d.dtype = t;
  d.index_dtype = it;
  d.index_shape = index;
  d.num_classes = C;
  return d;
}

inline Dims one_hot_shape(const baracuda::OneHotDescriptor& d) {
  Dims s = d.index_shape;
  s.push_back(d.num_classes);
  return s;
}

// A class outside [0, C): a zero row (the CUDA semantics).
inline Bytes naive_one_hot(const baracuda::OneHotDescriptor& d, const std::vector<int64_t>& cls) {
  const int64_t C = d.num_classes;
  HostBuffer h(d.dtype, static_cast<int64_t>(cls.size()) * C);
  h.fill_bytes(0);
  for (size_t p = 0; p < cls.size(); ++p) {
    if (cls[p] < 0 || cls[p] >= C) continue;
    const int64_t e = static_cast<int64_t>(p) * C + cls[p];
    h.set_i(e, 1);  // integers / bool directly, the others as 1.0
  }
  return h.raw();
}

inline TakeResult run_one_hot(const baracuda::Stream& s, const baracuda::OneHotDescriptor& d,
                              const std::vector<int64_t>& cls, const Layout& index, const Layout& out,
                              uint8_t poison = 0xff) {
  TakeResult r;
  auto plan = baracuda::OneHotPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const Bytes ib = index_bytes(d.index_dtype, cls);
  RawTensor I(dev, d.index_dtype, index, &ib), O(dev, d.dtype, out, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  const baracuda::OneHotArgs a{I.ref(), O.mut()};
  run_and_check(s, *plan, W, a, r);
  r.out = O.logical();
  r.raw = O.raw();
  return r;
}

}  // namespace bt
