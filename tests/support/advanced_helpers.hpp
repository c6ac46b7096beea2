// Advanced indexing test helpers shared by tests/indexing/cpu_advanced.cpp and
// cuda_advanced.cpp: descriptors, the naive models (their own shape rule and a
// direct loop over the result's coordinates: no maps, no sort) and runners
// that upload logical values into any layouts on any device, run a plan and
// read the outputs back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/embedding_helpers.hpp"  // EmbTensor
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::AdvancedIndex;
using baracuda::IndexGetDescriptor;
using baracuda::IndexPutDescriptor;

// The dtypes IndexPutPlan accumulates.
inline constexpr baracuda::DType kAdvAccumulate[] = {baracuda::DType::F32, baracuda::DType::F64, baracuda::DType::F16,
                                                     baracuda::DType::BF16, baracuda::DType::I32, baracuda::DType::I64};
inline bool adv_accumulates(baracuda::DType t) {
  return std::find(std::begin(kAdvAccumulate), std::end(kAdvAccumulate), t) != std::end(kAdvAccumulate);
}

// A test problem: self's shape and {dim, index shape} for each indexed dim.
struct AdvCase {
  Dims self;
  std::vector<std::pair<int, Dims>> idx;
};

// {dim, index shape} for each indexed dim.
inline AdvancedIndex adv_index(baracuda::DType it, Dims self, std::vector<std::pair<int, Dims>> idx) {
  AdvancedIndex ix;
  ix.index_dtype = it;
  ix.self_shape = self;
  for (auto& [d, s] : idx) ix.has_index[d] = true, ix.index_shape[d] = s;
  return ix;
}

inline IndexGetDescriptor get_desc(baracuda::DType t, const AdvancedIndex& ix) {
  IndexGetDescriptor d;
  d.dtype = t;
  d.index = ix;
  return d;
}

inline IndexPutDescriptor put_desc(baracuda::DType t, const AdvancedIndex& ix, Dims values, bool accumulate) {
  IndexPutDescriptor d;
  d.dtype = t;
  d.index = ix;
  d.values_shape = values;
  d.accumulate = accumulate;
  return d;
}

// ---- the model's own shape rule --------------------------------------------------------
struct AdvModelShape {
  Dims B, R;
  int bpos = 0;              // first axis of B in R
  std::vector<int> sliced;   // the sliced self dims, in order
};

inline AdvModelShape adv_model_shape(const AdvancedIndex& ix) {
  AdvModelShape s;
  int rank_b = 0;
  for (int d = 0; d < ix.self_shape.rank; ++d)
    if (ix.has_index[d]) rank_b = std::max(rank_b, ix.index_shape[d].rank);
  s.B = Dims::of_rank(rank_b, 1);
  for (int d = 0; d < ix.self_shape.rank; ++d) {
    if (!ix.has_index[d]) continue;
    const Dims& x = ix.index_shape[d];
    for (int a = 0; a < x.rank; ++a) {
      int64_t& e = s.B[rank_b - x.rank + a];
      if (x[a] != 1) e = x[a];  // the shapes are valid: equal or 1
    }
  }
  std::vector<int> idx_dims;
  for (int d = 0; d < ix.self_shape.rank; ++d) (ix.has_index[d] ? idx_dims : s.sliced).push_back(d);
  const bool adjacent = idx_dims.back() - idx_dims.front() + 1 == static_cast<int>(idx_dims.size());
  s.bpos = adjacent ? idx_dims.front() : 0;
  // before B (adjacent: the sliced dims left of the first index), B, the rest
  std::vector<int64_t> before, after;
  for (int d : s.sliced) (adjacent && d < s.bpos ? before : after).push_back(ix.self_shape[d]);
  s.R = Dims::of_rank(0);
  for (int64_t e : before) s.R.push_back(e);
  for (int b = 0; b < rank_b; ++b) s.R.push_back(s.B[b]);
  for (int64_t e : after) s.R.push_back(e);
  return s;
}

// self coordinates of result position r; false when an index is out of range.
// idx[d]: the row-major values of dim d's index tensor.
inline bool adv_model_coords(const AdvancedIndex& ix, const AdvModelShape& s, const std::vector<int64_t>* idx,
                             int64_t r, Dims* self_c) {
  const Dims c = unravel(r, s.R);
  *self_c = Dims::of_rank(ix.self_shape.rank);
  // the B coordinates of r
  const int nb = s.B.rank;
  size_t k = 0;
  for (int a = 0; a < s.R.rank; ++a) {
    if (a >= s.bpos && a < s.bpos + nb) continue;
    (*self_c)[s.sliced[k++]] = c[a];
  }
  bool ok = true;
  for (int d = 0; d < ix.self_shape.rank; ++d) {
    if (!ix.has_index[d]) continue;
    const Dims& is = ix.index_shape[d];
    int64_t lin = 0;
    for (int a = 0; a < is.rank; ++a) {
      const int64_t cb = c[s.bpos + nb - is.rank + a];
      lin = lin * is[a] + (is[a] == 1 ? 0 : cb);
    }
    int64_t v = idx[d][static_cast<size_t>(lin)];
    if (v < 0) v += ix.self_shape[d];
    if (v < 0 || v >= ix.self_shape[d]) ok = false;
    (*self_c)[d] = v;
  }
  return ok;
}

inline int64_t row_major(const Dims& shape, const Dims& c) {
  int64_t o = 0;
  for (int d = 0; d < shape.rank; ++d) o = o * shape[d] + c[d];
  return o;
}

// out = x[indices]; a bad index reads 0 (the CUDA semantics).
inline std::vector<double> naive_index_get(const AdvancedIndex& ix, const std::vector<double>& x,
                                           const std::vector<int64_t>* idx) {
  const AdvModelShape s = adv_model_shape(ix);
  std::vector<double> out(static_cast<size_t>(numel(s.R)), 0.0);
  for (int64_t r = 0; r < numel(s.R); ++r) {
    Dims c;
    if (adv_model_coords(ix, s, idx, r, &c)) out[static_cast<size_t>(r)] = x[static_cast<size_t>(row_major(ix.self_shape, c))];
  }
  return out;
}

// index_put: values broadcast to R (right-aligned); position order; a bad index
// contributes nothing. Accumulate in the documented accumulator, rounded once.
inline std::vector<double> naive_index_put(const IndexPutDescriptor& d, const std::vector<double>& self,
                                           const std::vector<int64_t>* idx, const std::vector<double>& values) {
  const AdvModelShape s = adv_model_shape(d.index);
  const bool ints = d.dtype == baracuda::DType::I32 || d.dtype == baracuda::DType::I64;
  std::vector<double> out = self;
  std::vector<float> accf(self.begin(), self.end());
  std::vector<double> accd = self;
  std::vector<uint64_t> acci(self.size());
  for (size_t q = 0; q < self.size(); ++q) acci[q] = static_cast<uint64_t>(static_cast<int64_t>(self[q]));
  std::vector<bool> touched(self.size(), false);
  for (int64_t r = 0; r < numel(s.R); ++r) {
    Dims c;
    if (!adv_model_coords(d.index, s, idx, r, &c)) continue;
    const size_t q = static_cast<size_t>(row_major(d.index.self_shape, c));
    const Dims rc = unravel(r, s.R);
    Dims vc = Dims::of_rank(d.values_shape.rank);
    for (int a = 0; a < d.values_shape.rank; ++a)
      vc[a] = d.values_shape[a] == 1 ? 0 : rc[s.R.rank - d.values_shape.rank + a];
    const double v = values[static_cast<size_t>(row_major(d.values_shape, vc))];
    touched[q] = true;
    if (!d.accumulate) {
      out[q] = v;
    } else {
      accf[q] = accf[q] + static_cast<float>(v);
      accd[q] = accd[q] + v;
      acci[q] = acci[q] + static_cast<uint64_t>(static_cast<int64_t>(v));
    }
  }
  if (d.accumulate)
    for (size_t q = 0; q < self.size(); ++q) {
      if (!touched[q]) continue;
      if (ints)
        out[q] = d.dtype == baracuda::DType::I32 ? static_cast<double>(static_cast<int32_t>(static_cast<int64_t>(acci[q])))
                                                 : static_cast<double>(static_cast<int64_t>(acci[q]));
      else if (d.dtype == baracuda::DType::F64) out[q] = accd[q];
      else out[q] = round_to(d.dtype, static_cast<double>(accf[q]));
    }
  return out;
}

// Exact values of any dtype (small integers where floats would not be exact).
inline std::vector<double> adv_values(baracuda::DType t, int64_t n, Rng& rng) {
  using baracuda::DType;
  std::vector<double> v(static_cast<size_t>(n));
  if (t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16) return random_values(t, n, rng);
  for (auto& x : v) {
    if (t == DType::Bool) x = static_cast<double>(uniform_int(rng, 0, 1));
    else if (t == DType::U8) x = static_cast<double>(uniform_int(rng, 0, 200));
    else if (t == DType::F8E4M3 || t == DType::F8E5M2) x = static_cast<double>(uniform_int(rng, -8, 8));
    else x = static_cast<double>(uniform_int(rng, -100, 100));
  }
  return v;
}

// Index values in [-size, size) (negatives wrap), with duplicates.
inline std::vector<int64_t> adv_indices(int64_t n, int64_t size, Rng& rng) {
  std::vector<int64_t> v(static_cast<size_t>(n), 0);
  for (auto& x : v) x = size == 0 ? 0 : uniform_int(rng, -size, size - 1);
  return v;
}

// Index tensors' row-major values, one vector per indexed dim (random: in
// [-size, size), duplicates).
struct AdvIndices {
  std::vector<int64_t> v[baracuda::kMaxRank];
};
inline AdvIndices random_adv_indices(const AdvancedIndex& ix, Rng& rng) {
  AdvIndices I;
  for (int d = 0; d < ix.self_shape.rank; ++d)
    if (ix.has_index[d]) I.v[d] = adv_indices(numel(ix.index_shape[d]), ix.self_shape[d], rng);
  return I;
}

// ---- runners ---------------------------------------------------------------------------
struct AdvResult {
  baracuda::Status st, check;
  std::vector<double> out;
  std::vector<uint8_t> raw;
  std::string variant;
};

struct AdvLayouts {
  Layout x, out, values;
  Layout index[baracuda::kMaxRank];
};

inline AdvLayouts adv_contiguous(const AdvancedIndex& ix, const Dims& out, const Dims& values = {}) {
  AdvLayouts L;
  L.x = contiguous(ix.self_shape);
  L.out = contiguous(out);
  L.values = contiguous(values);
  for (int d = 0; d < baracuda::kMaxRank; ++d) L.index[d] = contiguous(ix.has_index[d] ? ix.index_shape[d] : Dims{});
  return L;
}

// Holds the uploaded index tensors (one per indexed dim).
struct AdvIndexTensors {
  std::vector<std::unique_ptr<EmbTensor>> t;
  AdvIndexTensors(baracuda::Device dev, const AdvancedIndex& ix, const std::vector<int64_t>* idx, const AdvLayouts& L) {
    for (int d = 0; d < baracuda::kMaxRank; ++d)
      t.push_back(d < ix.self_shape.rank && ix.has_index[d]
                      ? std::make_unique<EmbTensor>(dev, ix.index_dtype, L.index[d], nullptr, &idx[d])
                      : nullptr);
  }
  template <class Args>
  void fill(Args& a) const {
    for (int d = 0; d < baracuda::kMaxRank; ++d)
      if (t[static_cast<size_t>(d)]) a.indices[d] = t[static_cast<size_t>(d)]->ref();
  }
};

inline AdvResult run_index_get(const baracuda::Stream& s, const IndexGetDescriptor& d, const std::vector<double>& x,
                               const std::vector<int64_t>* idx, const AdvLayouts& L, uint8_t poison = 0xff) {
  AdvResult r;
  auto plan = baracuda::IndexGetPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor X(dev, d.dtype, L.x, &x, nullptr);
  AdvIndexTensors I(dev, d.index, idx, L);
  EmbTensor O(dev, d.dtype, L.out, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::IndexGetArgs a;
  a.x = X.ref();
  I.fill(a);
  a.out = O.mut();
  auto sku = plan->sku_for(s, W, a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  r.out = O.values();
  r.raw = O.raw();
  return r;
}

// in_place: out is self's own view (L.out is ignored).
inline AdvResult run_index_put(const baracuda::Stream& s, const IndexPutDescriptor& d, const std::vector<double>& self,
                               const std::vector<int64_t>* idx, const std::vector<double>& values, const AdvLayouts& L,
                               bool in_place = false, uint8_t poison = 0xff) {
  AdvResult r;
  auto plan = baracuda::IndexPutPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor S(dev, d.dtype, L.x, &self, nullptr);
  AdvIndexTensors I(dev, d.index, idx, L);
  EmbTensor V(dev, d.dtype, L.values, &values, nullptr);
  EmbTensor O(dev, d.dtype, in_place ? contiguous({}) : L.out, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::IndexPutArgs a;
  a.self = S.ref();
  I.fill(a);
  a.values = V.ref();
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

}  // namespace bt
