// Test helpers of the norm family: descriptors, random inputs and a naive
// model of the forward and backward written independently of the library's
// reference (plain double loops over row-major logical values).
#pragma once
#include <cmath>
#include <vector>

#include "baracuda/ops/norm.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

inline baracuda::NormDescriptor norm_desc(baracuda::NormKind kind, baracuda::DType t, baracuda::Dims shape, int k = 1,
                                          bool weight = true, bool bias = false, bool residual = false,
                                          bool zero_centered = false, double eps = 1e-5) {
  baracuda::NormDescriptor d;
  d.kind = kind;
  d.dtype = t;
  d.shape = shape;
  d.normalized_dims = k;
  d.has_weight = weight;
  d.has_bias = bias;
  d.residual = residual;
  d.zero_centered_weight = zero_centered;
  d.eps = eps;
  return d;
}

// Rows and normalized elements of a descriptor.
inline int64_t norm_rows(const baracuda::NormDescriptor& d) {
  int64_t r = 1;
  for (int i = 0; i < d.shape.rank - d.normalized_dims; ++i) r *= d.shape[i];
  return r;
}
inline int64_t norm_len(const baracuda::NormDescriptor& d) {
  int64_t n = 1;
  for (int i = d.shape.rank - d.normalized_dims; i < d.shape.rank; ++i) n *= d.shape[i];
  return n;
}
inline baracuda::Dims norm_weight_shape(const baracuda::NormDescriptor& d) {
  baracuda::Dims w;
  w.rank = d.normalized_dims;
  for (int i = 0; i < w.rank; ++i) w[i] = d.shape[d.shape.rank - w.rank + i];
  return w;
}
inline baracuda::DType norm_stats_dtype(const baracuda::NormDescriptor& d) {
  return d.dtype == baracuda::DType::F64 ? baracuda::DType::F64 : baracuda::DType::F32;
}

// Logical inputs (values already representable in the dtype).
struct NormInputs {
  std::vector<double> x, res, w, b, dy, dh;
};

inline NormInputs norm_inputs(const baracuda::NormDescriptor& d, Rng& rng) {
  const int64_t n = numel(d.shape), c = norm_len(d);
  NormInputs in;
  // An offset per input keeps LayerNorm's mean away from 0 (the centring matters).
  in.x = random_values(d.dtype, n, rng, -1.0, 3.0);
  in.res = random_values(d.dtype, n, rng, -2.0, 2.0);
  in.w = random_values(d.dtype, c, rng, 0.5, 1.5);
  in.b = random_values(d.dtype, c, rng, -0.5, 0.5);
  in.dy = random_values(d.dtype, n, rng, -1.0, 1.0);
  in.dh = random_values(d.dtype, n, rng, -1.0, 1.0);
  return in;
}

namespace norm_model {

struct Forward {
  std::vector<double> h, y, mean, rstd;
};

inline Forward forward(const baracuda::NormDescriptor& d, const NormInputs& in) {
  const int64_t rows = norm_rows(d), n = norm_len(d);
  Forward f;
  f.h.resize(static_cast<size_t>(rows * n));
  f.y.resize(f.h.size());
  f.mean.assign(static_cast<size_t>(rows), 0.0);
  f.rstd.resize(static_cast<size_t>(rows));
  for (int64_t r = 0; r < rows; ++r) {
    double mu = 0;
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      f.h[i] = d.residual ? round_to(d.dtype, in.x[i] + in.res[i]) : in.x[i];
      mu += f.h[i];
    }
    mu = d.kind == baracuda::NormKind::LayerNorm ? mu / static_cast<double>(n) : 0.0;
    double var = 0;
    for (int64_t j = 0; j < n; ++j) var += (f.h[static_cast<size_t>(r * n + j)] - mu) * (f.h[static_cast<size_t>(r * n + j)] - mu);
    var /= static_cast<double>(n);
    const double rs = 1.0 / std::sqrt(var + d.eps);
    f.mean[static_cast<size_t>(r)] = mu;
    f.rstd[static_cast<size_t>(r)] = rs;
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      const double w = d.has_weight ? (d.zero_centered_weight ? 1.0 + in.w[static_cast<size_t>(j)] : in.w[static_cast<size_t>(j)]) : 1.0;
      f.y[i] = (f.h[i] - mu) * rs * w + (d.has_bias ? in.b[static_cast<size_t>(j)] : 0.0);
    }
  }
  return f;
}

struct Backward {
  std::vector<double> dx, dw, db;
};

// From the forward's input x (h), the saved mean / rstd and dy (and dh).
inline Backward backward(const baracuda::NormBackwardDescriptor& bd, const std::vector<double>& x,
                         const std::vector<double>& mean, const std::vector<double>& rstd, const NormInputs& in) {
  const baracuda::NormDescriptor& d = bd.forward;
  const int64_t rows = norm_rows(d), n = norm_len(d);
  const bool rms = d.kind == baracuda::NormKind::RMSNorm;
  Backward b;
  b.dx.resize(static_cast<size_t>(rows * n));
  b.dw.assign(static_cast<size_t>(n), 0.0);
  b.db.assign(static_cast<size_t>(n), 0.0);
  for (int64_t r = 0; r < rows; ++r) {
    const double mu = rms ? 0.0 : mean[static_cast<size_t>(r)], rs = rstd[static_cast<size_t>(r)];
    double sg = 0, sgx = 0;
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      const double w = d.has_weight ? (d.zero_centered_weight ? 1.0 + in.w[static_cast<size_t>(j)] : in.w[static_cast<size_t>(j)]) : 1.0;
      const double xh = (x[i] - mu) * rs;
      sg += in.dy[i] * w;
      sgx += in.dy[i] * w * xh;
      b.dw[static_cast<size_t>(j)] += in.dy[i] * xh;
      b.db[static_cast<size_t>(j)] += in.dy[i];
    }
    for (int64_t j = 0; j < n; ++j) {
      const size_t i = static_cast<size_t>(r * n + j);
      const double w = d.has_weight ? (d.zero_centered_weight ? 1.0 + in.w[static_cast<size_t>(j)] : in.w[static_cast<size_t>(j)]) : 1.0;
      const double xh = (x[i] - mu) * rs;
      b.dx[i] = rs * (in.dy[i] * w - (rms ? 0.0 : sg / static_cast<double>(n)) - xh * sgx / static_cast<double>(n)) +
                (bd.residual_grad ? in.dh[i] : 0.0);
    }
  }
  return b;
}

}  // namespace norm_model
}  // namespace bt
