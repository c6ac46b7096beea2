// IndexSelectPlan / IndexUpdatePlan test helpers shared by
// tests/indexing/cpu_index_dim.cpp and cuda_index_dim.cpp: random problems,
// the naive models (direct loops over logical coordinates: no sort, no runs,
// no [outer, S, inner] split) and runners that upload logical values into any
// layouts on any device, run a plan and read the output back.
#pragma once

#include <cmath>
#include <cstdint>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/embedding_helpers.hpp"  // EmbTensor
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::IndexSelectDescriptor;
using baracuda::IndexUpdateDescriptor;
using baracuda::IndexUpdateMode;

struct IdxData {
  std::vector<double> self;    // self_shape, row-major logical values
  std::vector<int64_t> index;  // n
  std::vector<double> source;  // self_shape with n at dim (empty for Fill)
};

inline baracuda::Dims idx_with_n(baracuda::Dims s, int64_t dim, int64_t n) {
  s[static_cast<int>(dim < 0 ? dim + s.rank : dim)] = n;
  return s;
}

// Indices uniform in [lo, S) (lo < 0 for Fill's negatives); with `hot`, half of
// them fall on slice 0 (many duplicates).
inline IdxData idx_random(baracuda::DType t, const baracuda::Dims& self_shape, int64_t dim, int64_t n, bool source,
                          Rng& rng, bool hot = false, int64_t lo = 0) {
  IdxData e;
  const int r = self_shape.rank;
  const int64_t S = self_shape[static_cast<int>(dim < 0 ? dim + r : dim)];
  const bool ints = t == baracuda::DType::I32 || t == baracuda::DType::I64;
  e.self = random_values(t, numel(self_shape), rng, ints ? -50 : -1.0, ints ? 50 : 1.0);
  if (source) e.source = random_values(t, numel(idx_with_n(self_shape, dim, n)), rng, ints ? -50 : -1.0, ints ? 50 : 1.0);
  e.index.resize(static_cast<size_t>(n));
  for (auto& v : e.index) v = S == 0 ? 0 : (hot && uniform_int(rng, 0, 1) == 0 ? 0 : uniform_int(rng, lo, S - 1));
  return e;
}

// ---- naive models ------------------------------------------------------------------------
inline std::vector<double> idx_naive_select(const IndexSelectDescriptor& d, const IdxData& e) {
  const int r = d.self_shape.rank, dim = static_cast<int>(d.dim < 0 ? d.dim + r : d.dim);
  const baracuda::Dims out_shape = idx_with_n(d.self_shape, dim, static_cast<int64_t>(e.index.size()));
  const baracuda::Dims ss = baracuda::contiguous_strides(d.self_shape);
  std::vector<double> out(static_cast<size_t>(numel(out_shape)));
  for (int64_t i = 0; i < numel(out_shape); ++i) {
    baracuda::Dims c = unravel(i, out_shape);
    c[dim] = e.index[static_cast<size_t>(c[dim])];
    int64_t off = 0;
    for (int a = 0; a < r; ++a) off += c[a] * ss[a];
    out[static_cast<size_t>(i)] = e.self[static_cast<size_t>(off)];
  }
  return out;
}

// The documented update: per element of self, the contributions of the
// positions naming its slice, in position order, in Acc (Add as fma), rounded
// once to the dtype.
template <class Acc>
std::vector<double> idx_naive_update(const IndexUpdateDescriptor& d, const IdxData& e) {
  const int r = d.self_shape.rank, dim = static_cast<int>(d.dim < 0 ? d.dim + r : d.dim);
  const int64_t S = d.self_shape[dim];
  const int64_t n = static_cast<int64_t>(e.index.size());
  const baracuda::Dims src_strides = baracuda::contiguous_strides(idx_with_n(d.self_shape, dim, n));
  std::vector<double> out = e.self;
  for (int64_t i = 0; i < numel(d.self_shape); ++i) {
    const baracuda::Dims c = unravel(i, d.self_shape);
    std::vector<Acc> contrib;
    int64_t last = -1;
    for (int64_t k = 0; k < n; ++k) {
      const int64_t v = e.index[static_cast<size_t>(k)] < 0 ? e.index[static_cast<size_t>(k)] + S : e.index[static_cast<size_t>(k)];
      if (v != c[dim]) continue;
      last = k;
      if (d.mode == IndexUpdateMode::Fill) continue;
      int64_t off = 0;
      for (int a = 0; a < r; ++a) off += (a == dim ? k : c[a]) * src_strides[a];
      contrib.push_back(static_cast<Acc>(e.source[static_cast<size_t>(off)]));
    }
    if (last < 0) continue;
    const Acc self_v = static_cast<Acc>(e.self[static_cast<size_t>(i)]);
    Acc acc = self_v;
    switch (d.mode) {
      case IndexUpdateMode::Fill: out[static_cast<size_t>(i)] = round_to(d.dtype, d.value); continue;
      case IndexUpdateMode::Copy: out[static_cast<size_t>(i)] = static_cast<double>(contrib.back()); continue;
      case IndexUpdateMode::Add:
        for (Acc v : contrib) acc = std::fma(static_cast<Acc>(d.alpha), v, acc);
        break;
      case IndexUpdateMode::Prod:
        acc = d.include_self ? self_v : Acc(1);
        for (Acc v : contrib) acc *= v;
        break;
      case IndexUpdateMode::Mean:
        acc = d.include_self ? self_v : Acc(0);
        for (Acc v : contrib) acc += v;
        acc /= static_cast<Acc>(contrib.size() + (d.include_self ? 1 : 0));
        break;
      case IndexUpdateMode::Amax:
      case IndexUpdateMode::Amin: {
        const bool mx = d.mode == IndexUpdateMode::Amax;
        if (!d.include_self) acc = contrib[0];
        for (Acc v : contrib)
          if (std::isnan(v) || (mx ? v > acc : v < acc)) acc = v;
        break;
      }
    }
    out[static_cast<size_t>(i)] = round_to(d.dtype, static_cast<double>(acc));
  }
  return out;
}

// ---- layouts and runners -----------------------------------------------------------------
struct IdxLayouts {
  Layout self, index, source;
  Layout out;     // index_select's out (n at dim)
  Layout result;  // the update's out (self's shape; unused in place)
};

inline IdxLayouts idx_contiguous(const baracuda::Dims& self_shape, int64_t dim, const baracuda::Dims& index_shape) {
  IdxLayouts L;
  const baracuda::Dims other = idx_with_n(self_shape, dim, numel(index_shape));
  L.self = contiguous(self_shape);
  L.index = contiguous(index_shape);
  L.source = contiguous(other);
  L.out = contiguous(other);
  L.result = contiguous(self_shape);
  return L;
}

struct IdxResult {
  baracuda::Status st, check;
  std::vector<double> out;
  std::vector<uint8_t> raw;  // the whole out storage (gaps included)
  std::string variant;       // sku_for()'s
};

inline IdxResult idx_select(const baracuda::Stream& s, const IndexSelectDescriptor& d, const IdxData& e,
                            const IdxLayouts& L, uint8_t poison = 0xff) {
  IdxResult r;
  auto plan = baracuda::IndexSelectPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor self(dev, d.dtype, L.self, &e.self, nullptr), ix(dev, d.index_dtype, L.index, nullptr, &e.index);
  EmbTensor out(dev, d.dtype, L.out, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  const baracuda::IndexSelectArgs a{self.ref(), ix.ref(), out.mut()};
  auto sku = plan->sku_for(s, W, a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  r.out = out.values();
  r.raw = out.raw();
  return r;
}

// Out of place: out in L.result. In place: out is self's view; the result is self's values.
inline IdxResult idx_update(const baracuda::Stream& s, const IndexUpdateDescriptor& d, const IdxData& e,
                            const IdxLayouts& L, bool in_place, uint8_t poison = 0xff) {
  IdxResult r;
  auto plan = baracuda::IndexUpdatePlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const bool fill = d.mode == IndexUpdateMode::Fill;
  EmbTensor self(dev, d.dtype, L.self, &e.self, nullptr), ix(dev, d.index_dtype, L.index, nullptr, &e.index);
  EmbTensor src(dev, d.dtype, L.source, fill ? nullptr : &e.source, nullptr);
  EmbTensor out(dev, d.dtype, L.result, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::IndexUpdateArgs a;
  a.self = self.ref();
  a.index = ix.ref();
  if (!fill) a.source = src.ref();
  a.out = in_place ? self.mut() : out.mut();
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  r.out = in_place ? self.values() : out.values();
  r.raw = in_place ? self.raw() : out.raw();
  return r;
}

}  // namespace bt
