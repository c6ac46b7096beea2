// Masked-plan test helpers shared by tests/indexing/cpu_masked.cpp and
// cuda_masked.cpp: descriptors, random data with many zeros, and runners that
// upload logical values into any layouts on any device (EmbTensor), run a plan
// and read every output back (logical values and the raw storage, gaps
// included).
#pragma once

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/embedding_helpers.hpp"  // EmbTensor
#include "support/tensor_utils.hpp"

namespace bt {

// Every dtype the masked plans claim.
inline constexpr baracuda::DType kMaskedTypes[] = {
    baracuda::DType::Bool, baracuda::DType::U8,  baracuda::DType::I8,   baracuda::DType::I16, baracuda::DType::I32,
    baracuda::DType::I64,  baracuda::DType::F16, baracuda::DType::BF16, baracuda::DType::F32, baracuda::DType::F64};

// A layout per test iteration: contiguous, transposed, padded, every other element.
inline Layout masked_layout(int which, const Dims& shape) {
  switch (which % 4) {
    case 1: return transposed(shape);
    case 2: return padded(shape);
    case 3: return every_other(shape);
    default: return contiguous(shape);
  }
}

inline baracuda::NonzeroDescriptor nonzero_desc(baracuda::DType t, Dims shape, int64_t m, int64_t fill = 0) {
  baracuda::NonzeroDescriptor d;
  d.dtype = t;
  d.shape = shape;
  d.capacity = m;
  d.fill_value = fill;
  return d;
}

inline baracuda::MaskedSelectDescriptor masked_select_desc(baracuda::DType t, Dims x, Dims mask, int64_t m,
                                                           double fill = 0.0) {
  baracuda::MaskedSelectDescriptor d;
  d.dtype = t;
  d.x_shape = x;
  d.mask_shape = mask;
  d.capacity = m;
  d.fill_value = fill;
  return d;
}

inline baracuda::MaskedScatterDescriptor masked_scatter_desc(baracuda::DType t, Dims self, Dims mask, Dims source) {
  baracuda::MaskedScatterDescriptor d;
  d.dtype = t;
  d.self_shape = self;
  d.mask_shape = mask;
  d.source_shape = source;
  return d;
}

// Values with about `zeros` of them zero; floats also get -0.0 and NaN now
// and then (both have defined nonzero semantics), integers small signed
// values (bool / unsigned: what the dtype's store makes of them).
inline std::vector<double> masked_values(baracuda::DType t, int64_t n, Rng& rng, double zeros = 0.5) {
  std::vector<double> v(static_cast<size_t>(n));
  const bool fp = baracuda::is_floating_point(t);
  for (auto& x : v) {
    const double u = uniform(rng, 0.0, 1.0);
    if (u < zeros) x = (fp && uniform_int(rng, 0, 3) == 0) ? -0.0 : 0.0;
    else if (fp && u > 0.97) x = kNaN;
    else if (fp) x = round_to(t, uniform(rng, -4.0, 4.0));
    else if (t == baracuda::DType::Bool) x = 1.0;
    else x = static_cast<double>(uniform_int(rng, 1, 9) * (uniform_int(rng, 0, 1) ? 1 : -1));
  }
  return v;
}

inline std::vector<double> random_mask(int64_t n, Rng& rng, double p_true = 0.5) {
  std::vector<double> v(static_cast<size_t>(n));
  for (auto& x : v) x = uniform(rng, 0.0, 1.0) < p_true ? 1.0 : 0.0;
  return v;
}

struct MaskedResult {
  baracuda::Status st, check;
  std::vector<double> out;      // logical values (select / scatter)
  std::vector<int64_t> out_i;   // logical values (nonzero)
  int64_t count = -1;           // -1: not read (no count tensor)
  std::vector<uint8_t> raw;     // the whole out storage (gaps included)
  std::string variant;
};

inline int64_t read_count(const EmbTensor& c) { return c.ints().empty() ? -1 : c.ints()[0]; }

inline MaskedResult run_nonzero(const baracuda::Stream& s, const baracuda::NonzeroDescriptor& d,
                                const std::vector<double>& x, const Layout& Lx, const Layout& Lout,
                                uint8_t poison = 0xff) {
  MaskedResult r;
  auto plan = baracuda::NonzeroPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor X(dev, d.dtype, Lx, &x, nullptr);
  EmbTensor O(dev, baracuda::DType::I64, Lout, nullptr, nullptr, poison);
  EmbTensor C(dev, baracuda::DType::I64, contiguous({}), nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::NonzeroArgs a{X.ref(), O.mut(), {}};
  if (d.has_count) a.count = C.mut();
  auto sku = plan->sku_for(s, W, a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  r.out_i = O.ints();
  r.raw = O.raw();
  if (d.has_count) r.count = read_count(C);
  return r;
}

struct SelectLayouts {
  Layout x, mask, out;
};

// with_count = false: descriptor.has_count off, no count tensor.
inline MaskedResult run_masked_select(const baracuda::Stream& s, baracuda::MaskedSelectDescriptor d,
                                      const std::vector<double>& x, const std::vector<double>& mask,
                                      const SelectLayouts& L, bool with_count = true, uint8_t poison = 0xff) {
  MaskedResult r;
  d.has_count = with_count;
  auto plan = baracuda::MaskedSelectPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor X(dev, d.dtype, L.x, &x, nullptr);
  EmbTensor M(dev, baracuda::DType::Bool, L.mask, &mask, nullptr);
  EmbTensor O(dev, d.dtype, L.out, nullptr, nullptr, poison);
  EmbTensor C(dev, baracuda::DType::I64, contiguous({}), nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::MaskedSelectArgs a;
  a.x = X.ref();
  a.mask = M.ref();
  a.out = O.mut();
  if (with_count) a.count = C.mut();
  auto sku = plan->sku_for(s, W, a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  r.out = O.values();
  r.raw = O.raw();
  if (with_count) r.count = read_count(C);
  return r;
}

struct ScatterMaskLayouts {
  Layout self, mask, source, out;
};

// in_place: out is self's own view (L.out is ignored).
inline MaskedResult run_masked_scatter(const baracuda::Stream& s, const baracuda::MaskedScatterDescriptor& d,
                                       const std::vector<double>& self, const std::vector<double>& mask,
                                       const std::vector<double>& source, const ScatterMaskLayouts& L,
                                       bool in_place = false, uint8_t poison = 0xff) {
  MaskedResult r;
  auto plan = baracuda::MaskedScatterPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor S(dev, d.dtype, L.self, &self, nullptr);
  EmbTensor M(dev, baracuda::DType::Bool, L.mask, &mask, nullptr);
  EmbTensor X(dev, d.dtype, L.source, &source, nullptr);
  EmbTensor O(dev, d.dtype, in_place ? contiguous({}) : L.out, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::MaskedScatterArgs a;
  a.self = S.ref();
  a.mask = M.ref();
  a.source = X.ref();
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
