// Helpers of the random family's tests (CPU and CUDA): run a plan on either
// backend into a (possibly strided) buffer and return the whole buffer's
// bytes, the values as doubles in logical order, and the offset tensor after.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace rt {

using namespace baracuda;

// Row-major position p of shape through strides -> element offset.
inline int64_t offset_of(const Dims& shape, const Dims& strides, int64_t p) {
  int64_t o = 0;
  for (int d = shape.rank - 1; d >= 0; --d) {
    o += (p % shape[d]) * strides[d];
    p /= shape[d];
  }
  return o;
}

inline int64_t storage_of(const Dims& shape, const Dims& strides) {
  int64_t s = 1;
  for (int d = 0; d < shape.rank; ++d) {
    if (shape[d] == 0) return 0;
    s += (shape[d] - 1) * strides[d];
  }
  return s;
}

// Element `off` of a host buffer of dtype t as double.
inline double value_at(const std::vector<uint8_t>& raw, DType t, int64_t off) {
  const uint8_t* p = raw.data() + off * static_cast<int64_t>(dtype_size(t));
  switch (t) {
    case DType::F32: { float v; std::memcpy(&v, p, 4); return v; }
    case DType::F64: { double v; std::memcpy(&v, p, 8); return v; }
    case DType::F16: { half v; std::memcpy(&v, p, 2); return static_cast<float>(v); }
    case DType::BF16: { bfloat16 v; std::memcpy(&v, p, 2); return static_cast<float>(v); }
    case DType::I32: { int32_t v; std::memcpy(&v, p, 4); return v; }
    case DType::I64: { int64_t v; std::memcpy(&v, p, 8); return static_cast<double>(v); }
    case DType::U8: return p[0];
    default: return NAN;
  }
}

// Host bytes of n elements of dtype t holding `vals`.
inline std::vector<uint8_t> bytes_of(DType t, const std::vector<double>& vals) {
  std::vector<uint8_t> raw(vals.size() * dtype_size(t));
  for (size_t i = 0; i < vals.size(); ++i) {
    uint8_t* p = raw.data() + i * dtype_size(t);
    switch (t) {
      case DType::F32: { float v = static_cast<float>(vals[i]); std::memcpy(p, &v, 4); break; }
      case DType::F64: std::memcpy(p, &vals[i], 8); break;
      case DType::F16: { half v(static_cast<float>(vals[i])); std::memcpy(p, &v, 2); break; }
      case DType::BF16: { bfloat16 v(static_cast<float>(vals[i])); std::memcpy(p, &v, 2); break; }
      default: break;
    }
  }
  return raw;
}

inline Buffer upload(const Device& dev, const std::vector<uint8_t>& raw) {
  Buffer b(dev, std::max<size_t>(raw.size(), 16));
  if (!raw.empty()) EXPECT_TRUE(b.copy_from_host(raw.data(), raw.size()).is_ok());
  return b;
}

inline std::vector<uint8_t> download(const Buffer& b, size_t bytes) {
  std::vector<uint8_t> raw(bytes);
  if (bytes) EXPECT_TRUE(b.copy_to_host(raw.data(), bytes).is_ok());
  return raw;
}

struct Result {
  Status st;
  std::string variant;
  std::vector<uint8_t> raw;     // the whole out buffer (gaps included)
  std::vector<double> values;   // logical order
  std::vector<uint8_t> mask;    // dropout with save_mask
  int64_t offset_after = 0;     // device_offset
};

// Optional inputs of run_random.
struct RandomInputs {
  Dims strides;                     // empty: contiguous
  std::vector<uint8_t> p;           // bernoulli p_tensor: p's storage
  Dims p_strides;                   // empty: contiguous
  int64_t offset_value = 0;         // device_offset: the tensor's initial value
};

inline Result run_random(const Stream& s, const RandomDescriptor& d, RandomSeed seed, const RandomInputs& in = {}) {
  Result r;
  const Device dev = s.device();
  const Dims st = in.strides.rank ? in.strides : contiguous_strides(d.shape);
  const int64_t storage = std::max<int64_t>(storage_of(d.shape, st), 0);
  const size_t es = dtype_size(d.dtype);
  std::vector<uint8_t> init(static_cast<size_t>(storage) * es, 0x5a);
  Buffer out = upload(dev, init);
  Buffer p, off;
  auto plan = RandomPlan::select(s, d);
  if (!plan.is_ok()) {
    r.st = plan.status();
    return r;
  }
  RandomArgs a;
  a.seed = seed;
  a.out = TensorMut(out.data(), d.dtype, dev, d.shape, st, storage);
  if (d.p_tensor) {
    p = upload(dev, in.p);
    const Dims ps = in.p_strides.rank ? in.p_strides : contiguous_strides(d.shape);
    a.p = TensorRef(p.data(), d.p_dtype, dev, d.shape, ps,
                    static_cast<int64_t>(in.p.size() / dtype_size(d.p_dtype)));
  }
  if (d.device_offset) {
    std::vector<uint8_t> o(8);
    std::memcpy(o.data(), &in.offset_value, 8);
    off = upload(dev, o);
    a.offset = TensorMut(off.data(), DType::I64, dev, Dims{1}, Dims{1}, 1);
  }
  auto sku = plan->sku_for(s, {}, a);
  if (sku.is_ok()) r.variant = sku->variant;
  r.st = plan->run(s, {}, a);
  if (!r.st.is_ok()) return r;
  r.raw = download(out, static_cast<size_t>(storage) * es);
  const int64_t n = shape_numel(d.shape);
  r.values.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r.values[i] = value_at(r.raw, d.dtype, offset_of(d.shape, st, i));
  if (d.device_offset) {
    auto o = download(off, 8);
    std::memcpy(&r.offset_after, o.data(), 8);
  }
  return r;
}

struct DropoutInputs {
  Dims x_strides, out_strides;  // empty: contiguous
  int64_t offset_value = 0;
};

// Forward: x's storage is x_raw (contiguous when x_strides is empty).
inline Result run_dropout(const Stream& s, const DropoutDescriptor& d, RandomSeed seed, const std::vector<uint8_t>& x_raw,
                          const DropoutInputs& in = {}) {
  Result r;
  const Device dev = s.device();
  const Dims cs = contiguous_strides(d.shape);
  const Dims xs = in.x_strides.rank ? in.x_strides : cs, os = in.out_strides.rank ? in.out_strides : cs;
  const int64_t ostorage = std::max<int64_t>(storage_of(d.shape, os), 0);
  const size_t es = dtype_size(d.dtype);
  Buffer x = upload(dev, x_raw);
  Buffer out = upload(dev, std::vector<uint8_t>(static_cast<size_t>(ostorage) * es, 0x5a));
  const int64_t nm = (shape_numel(d.shape) + 7) / 8;
  Buffer mask = upload(dev, std::vector<uint8_t>(static_cast<size_t>(nm), 0xa5));
  Buffer off = upload(dev, std::vector<uint8_t>(8, 0));
  auto plan = DropoutPlan::select(s, d);
  if (!plan.is_ok()) {
    r.st = plan.status();
    return r;
  }
  DropoutArgs a;
  a.seed = seed;
  a.x = TensorRef(x.data(), d.dtype, dev, d.shape, xs, static_cast<int64_t>(x_raw.size() / es));
  a.out = TensorMut(out.data(), d.dtype, dev, d.shape, os, ostorage);
  if (d.save_mask) a.mask = TensorMut(mask.data(), DType::U8, dev, Dims{nm}, Dims{1}, nm);
  if (d.device_offset) {
    std::vector<uint8_t> o(8);
    std::memcpy(o.data(), &in.offset_value, 8);
    off = upload(dev, o);
    a.offset = TensorMut(off.data(), DType::I64, dev, Dims{1}, Dims{1}, 1);
  }
  auto sku = plan->sku_for(s, {}, a);
  if (sku.is_ok()) r.variant = sku->variant;
  r.st = plan->run(s, {}, a);
  if (!r.st.is_ok()) return r;
  r.raw = download(out, static_cast<size_t>(ostorage) * es);
  const int64_t n = shape_numel(d.shape);
  r.values.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r.values[i] = value_at(r.raw, d.dtype, offset_of(d.shape, os, i));
  if (d.save_mask) r.mask = download(mask, static_cast<size_t>(nm));
  if (d.device_offset) {
    auto o = download(off, 8);
    std::memcpy(&r.offset_after, o.data(), 8);
  }
  return r;
}

// Backward: dy's storage dy_raw (contiguous), mask given when use_mask;
// device_offset: the tensor holds offset_value (the forward's offset + 1).
inline Result run_dropout_backward(const Stream& s, const DropoutBackwardDescriptor& d, RandomSeed seed,
                                   const std::vector<uint8_t>& dy_raw, const std::vector<uint8_t>& mask_raw,
                                   int64_t offset_value = 0) {
  Result r;
  const Device dev = s.device();
  const Dims cs = contiguous_strides(d.shape);
  const int64_t n = shape_numel(d.shape), nm = (n + 7) / 8;
  const size_t es = dtype_size(d.dtype);
  Buffer dy = upload(dev, dy_raw);
  Buffer dx = upload(dev, std::vector<uint8_t>(static_cast<size_t>(n) * es, 0x5a));
  Buffer mask = upload(dev, mask_raw);
  std::vector<uint8_t> o(8);
  std::memcpy(o.data(), &offset_value, 8);
  Buffer off = upload(dev, o);
  auto plan = DropoutBackwardPlan::select(s, d);
  if (!plan.is_ok()) {
    r.st = plan.status();
    return r;
  }
  DropoutBackwardArgs a;
  a.seed = seed;
  a.dy = TensorRef(dy.data(), d.dtype, dev, d.shape, cs, n);
  a.dx = TensorMut(dx.data(), d.dtype, dev, d.shape, cs, n);
  if (d.use_mask) a.mask = TensorRef(mask.data(), DType::U8, dev, Dims{nm}, Dims{1}, nm);
  if (d.device_offset) a.offset = TensorRef(off.data(), DType::I64, dev, Dims{1}, Dims{1}, 1);
  r.st = plan->run(s, {}, a);
  if (!r.st.is_ok()) return r;
  r.raw = download(dx, static_cast<size_t>(n) * es);
  r.values.resize(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) r.values[i] = value_at(r.raw, d.dtype, i);
  return r;
}

// Kolmogorov-Smirnov statistic of the samples against a CDF.
template <class Cdf>
double ks_statistic(std::vector<double> v, Cdf cdf) {
  std::sort(v.begin(), v.end());
  const double n = static_cast<double>(v.size());
  double dmax = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const double f = cdf(v[i]);
    dmax = std::max({dmax, f - i / n, (i + 1) / n - f});
  }
  return dmax;
}

inline double normal_cdf(double x) { return 0.5 * std::erfc(-x / std::sqrt(2.0)); }

inline void mean_var(const std::vector<double>& v, double* mean, double* var) {
  double s = 0, s2 = 0;
  for (double x : v) s += x;
  *mean = s / v.size();
  for (double x : v) s2 += (x - *mean) * (x - *mean);
  *var = s2 / v.size();
}

inline RandomDescriptor desc(RandomDistribution dist, DType t, Dims shape) {
  RandomDescriptor d;
  d.distribution = dist;
  d.dtype = t;
  d.shape = shape;
  return d;
}

}  // namespace rt
