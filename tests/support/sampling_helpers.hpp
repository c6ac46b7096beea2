// randperm / multinomial test helpers shared by tests/random/cpu_sampling.cpp
// and cuda_sampling.cpp: runners that place the tensors in any layouts on any
// device, run a plan (with a host or a device offset) and read everything back.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "baracuda/ops/random_sampling.hpp"
#include "support/take_helpers.hpp"  // RawTensor, Bytes, bytes_of
#include "support/tensor_utils.hpp"

namespace bt {

struct SampleResult {
  baracuda::Status st, check;
  std::vector<int64_t> values;  // logical elements of out as integers
  Bytes raw;                    // out's whole storage (gaps included)
  std::string variant;
  int64_t offset_after = 0;     // the offset tensor after the run (device_offset)
};

inline std::vector<int64_t> as_ints(baracuda::DType t, const Bytes& logical) {
  const HostBuffer h = host_of(t, logical);
  std::vector<int64_t> v(logical.size() / esize(t));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = is_fp(t) ? static_cast<int64_t>(h.get(static_cast<int64_t>(i))) : h.get_i(static_cast<int64_t>(i));
  return v;
}

inline baracuda::RandpermDescriptor randperm_desc(int64_t n, baracuda::DType t = baracuda::DType::I64,
                                                  bool device_offset = false) {
  baracuda::RandpermDescriptor d;
  d.n = n;
  d.dtype = t;
  d.device_offset = device_offset;
  return d;
}

// With d.device_offset the offset tensor starts at seed.offset.
inline SampleResult run_randperm(const baracuda::Stream& s, const baracuda::RandpermDescriptor& d,
                                 baracuda::RandomSeed seed, const Layout* out_layout = nullptr, uint8_t poison = 0xff) {
  SampleResult r;
  auto plan = baracuda::RandpermPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const Layout L = out_layout ? *out_layout : contiguous(Dims{d.n});
  RawTensor O(dev, d.dtype, L, nullptr, poison);
  const Bytes off0 = index_bytes(baracuda::DType::I64, {static_cast<int64_t>(seed.offset)});
  RawTensor Off(dev, baracuda::DType::I64, contiguous(Dims{1}), &off0);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::RandpermArgs a;
  a.seed = seed;
  if (d.device_offset) a.seed.offset = 12345;  // must be ignored
  a.out = O.mut();
  if (d.device_offset) a.offset = Off.mut();
  if (auto sku = plan->sku_for(s, W, a)) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  r.values = as_ints(d.dtype, O.logical());
  r.raw = O.raw();
  r.offset_after = as_ints(baracuda::DType::I64, Off.logical())[0];
  return r;
}

inline baracuda::MultinomialDescriptor multinomial_desc(baracuda::DType t, Dims probs, int64_t S, bool replacement,
                                                        baracuda::DType out = baracuda::DType::I64,
                                                        bool device_offset = false) {
  baracuda::MultinomialDescriptor d;
  d.dtype = t;
  d.probs_shape = probs;
  d.num_samples = S;
  d.replacement = replacement;
  d.out_dtype = out;
  d.device_offset = device_offset;
  return d;
}

inline Dims multinomial_out_shape(const baracuda::MultinomialDescriptor& d) {
  return d.probs_shape.rank == 2 ? Dims{d.probs_shape[0], d.num_samples} : Dims{d.num_samples};
}

// probs: logical weights (row-major), rounded to d.dtype.
inline SampleResult run_multinomial(const baracuda::Stream& s, const baracuda::MultinomialDescriptor& d,
                                    const std::vector<double>& probs, baracuda::RandomSeed seed,
                                    const Layout* probs_layout = nullptr, const Layout* out_layout = nullptr,
                                    uint8_t poison = 0xff) {
  SampleResult r;
  auto plan = baracuda::MultinomialPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const Layout PL = probs_layout ? *probs_layout : contiguous(d.probs_shape);
  const Layout OL = out_layout ? *out_layout : contiguous(multinomial_out_shape(d));
  const Bytes pb = bytes_of(d.dtype, probs);
  RawTensor P(dev, d.dtype, PL, &pb), O(dev, d.out_dtype, OL, nullptr, poison);
  const Bytes off0 = index_bytes(baracuda::DType::I64, {static_cast<int64_t>(seed.offset)});
  RawTensor Off(dev, baracuda::DType::I64, contiguous(Dims{1}), &off0);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::MultinomialArgs a;
  a.seed = seed;
  if (d.device_offset) a.seed.offset = 12345;  // must be ignored
  a.probs = P.ref();
  a.out = O.mut();
  if (d.device_offset) a.offset = Off.mut();
  if (auto sku = plan->sku_for(s, W, a)) r.variant = sku->variant;
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_probs(s, W);
  r.values = as_ints(d.out_dtype, O.logical());
  r.raw = O.raw();
  r.offset_after = as_ints(baracuda::DType::I64, Off.logical())[0];
  return r;
}

// Pearson's chi-square of observed counts against expected counts (expected > 0).
inline double chi_square(const std::vector<double>& observed, const std::vector<double>& expected) {
  double x = 0.0;
  for (size_t i = 0; i < observed.size(); ++i)
    if (expected[i] > 0) x += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
  return x;
}

}  // namespace bt
