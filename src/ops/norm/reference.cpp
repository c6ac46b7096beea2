// CPU reference layer / RMS norm. Each row is read into double buffers before
// anything of it is written, so the in-place pairs (y = x, h = residual,
// dx = dy, dx = dh_in) are safe; the backward sums dweight / dbias before it
// writes dx for the same reason.
#include "ops/norm/reference.hpp"

#include <cmath>
#include <vector>

#include "core/host_elements.hpp"

namespace baracuda::norm::ref {

using baracuda::detail::load_f;
using baracuda::detail::store_f;

namespace {

// Element offset of linear index i (row-major over shape[first, first + n)).
int64_t offset_of(const Dims& shape, int first, int n, const int64_t* strides, int64_t i) {
  int64_t off = 0;
  for (int d = first + n - 1; d >= first; --d) {
    off += (i % shape[d]) * strides[d - first];
    i /= shape[d];
  }
  return off;
}

// v rounded to dtype t (what storing and reloading it gives).
double round_to(DType t, double v) {
  alignas(16) unsigned char buf[16] = {};
  store_f(buf, t, 0, v);
  return load_f(buf, t, 0);
}

struct Layout {
  int lead = 0;  // leading axes
  int k = 0;     // normalized axes
  int64_t rows = 1, n = 1;
};

Layout layout_of(const NormDescriptor& d) {
  Layout l;
  l.k = d.normalized_dims;
  l.lead = d.shape.rank - l.k;
  for (int i = 0; i < l.lead; ++i) l.rows *= d.shape[i];
  for (int i = l.lead; i < d.shape.rank; ++i) l.n *= d.shape[i];
  return l;
}

// Offset of element j of row r in a tensor of the descriptor's shape.
int64_t elem(const Dims& shape, const Layout& l, const TensorRef& t, int64_t r, int64_t j) {
  return offset_of(shape, 0, l.lead, t.strides.begin(), r) + offset_of(shape, l.lead, l.k, t.strides.begin() + l.lead, j);
}
// Offset of element j of a normalized-shape tensor (weight, bias, their gradients).
int64_t col(const Dims& shape, const Layout& l, const TensorRef& t, int64_t j) {
  return offset_of(shape, l.lead, l.k, t.strides.begin(), j);
}

// w' (the effective weight) of column j.
double weight_of(const NormDescriptor& d, const Layout& l, const TensorRef& w, int64_t j) {
  if (!d.has_weight) return 1.0;
  const double v = load_f(w.data, d.dtype, col(d.shape, l, w, j));
  return d.zero_centered_weight ? 1.0 + v : v;
}

}  // namespace

Status forward(const NormDescriptor& d, const NormArgs& a) {
  const Layout l = layout_of(d);
  if (l.rows == 0 || l.n == 0) return Status::ok();
  const DType st = d.dtype == DType::F64 ? DType::F64 : DType::F32;
  const bool rms = d.kind == NormKind::RMSNorm;
  baracuda::detail::parallel_for(l.rows, l.n * 8, [&](int64_t r) {
    std::vector<double> h(static_cast<size_t>(l.n));
    for (int64_t j = 0; j < l.n; ++j) {
      double v = load_f(a.x.data, d.dtype, elem(d.shape, l, a.x, r, j));
      if (d.residual) v = round_to(d.dtype, v + load_f(a.residual.data, d.dtype, elem(d.shape, l, a.residual, r, j)));
      h[j] = v;
    }
    double mean = 0;
    if (!rms) {
      for (double v : h) mean += v;
      mean /= static_cast<double>(l.n);
    }
    double ss = 0;
    for (double v : h) ss += (v - mean) * (v - mean);
    const double rstd = 1.0 / std::sqrt(ss / static_cast<double>(l.n) + d.eps);
    if (d.residual)
      for (int64_t j = 0; j < l.n; ++j) store_f(a.h.data, d.dtype, elem(d.shape, l, a.h, r, j), h[j]);
    for (int64_t j = 0; j < l.n; ++j) {
      double y = (h[j] - mean) * rstd * weight_of(d, l, a.weight, j);
      if (d.has_bias) y += load_f(a.bias.data, d.dtype, col(d.shape, l, a.bias, j));
      store_f(a.y.data, d.dtype, elem(d.shape, l, a.y, r, j), y);
    }
    if (d.save_stats) {
      if (!rms) store_f(a.mean.data, st, r * a.mean.strides[0], mean);
      store_f(a.rstd.data, st, r * a.rstd.strides[0], rstd);
    }
  });
  return Status::ok();
}

Status backward(const NormBackwardDescriptor& bd, const NormBackwardArgs& a) {
  const NormDescriptor& d = bd.forward;
  const Layout l = layout_of(d);
  if (l.n == 0) return Status::ok();  // zero rows still write dweight / dbias (zeros)
  const DType st = d.dtype == DType::F64 ? DType::F64 : DType::F32;
  const bool rms = d.kind == NormKind::RMSNorm;
  const bool dw = bd.need_dweight && d.has_weight, db = bd.need_dbias && d.has_bias;
  auto x_hat = [&](int64_t r, int64_t j) {
    const double mean = rms ? 0.0 : load_f(a.mean.data, st, r * a.mean.strides[0]);
    const double rstd = load_f(a.rstd.data, st, r * a.rstd.strides[0]);
    return (load_f(a.x.data, d.dtype, elem(d.shape, l, a.x, r, j)) - mean) * rstd;
  };
  // dweight / dbias first: dx may overwrite dy.
  if (dw || db) {
    baracuda::detail::parallel_for(l.n, l.rows * 8, [&](int64_t j) {
      double sw = 0, sb = 0;
      for (int64_t r = 0; r < l.rows; ++r) {
        const double g = load_f(a.dy.data, d.dtype, elem(d.shape, l, a.dy, r, j));
        if (dw) sw += g * x_hat(r, j);
        sb += g;
      }
      if (dw) store_f(a.dweight.data, d.dtype, col(d.shape, l, a.dweight, j), sw);
      if (db) store_f(a.dbias.data, d.dtype, col(d.shape, l, a.dbias, j), sb);
    });
  }
  if (!bd.need_dx) return Status::ok();
  baracuda::detail::parallel_for(l.rows, l.n * 8, [&](int64_t r) {
    std::vector<double> g(static_cast<size_t>(l.n)), xh(static_cast<size_t>(l.n)), extra(static_cast<size_t>(l.n), 0.0);
    double sum_g = 0, sum_gx = 0;
    for (int64_t j = 0; j < l.n; ++j) {
      g[j] = load_f(a.dy.data, d.dtype, elem(d.shape, l, a.dy, r, j)) * weight_of(d, l, a.weight, j);
      xh[j] = x_hat(r, j);
      if (bd.residual_grad) extra[j] = load_f(a.dh_in.data, d.dtype, elem(d.shape, l, a.dh_in, r, j));
      sum_g += g[j];
      sum_gx += g[j] * xh[j];
    }
    const double rstd = load_f(a.rstd.data, st, r * a.rstd.strides[0]);
    const double inv_n = 1.0 / static_cast<double>(l.n);
    const double mg = rms ? 0.0 : sum_g * inv_n, mgx = sum_gx * inv_n;
    for (int64_t j = 0; j < l.n; ++j)
      store_f(a.dx.data, d.dtype, elem(d.shape, l, a.dx, r, j), rstd * (g[j] - mg - xh[j] * mgx) + extra[j]);
  });
  return Status::ok();
}

}  // namespace baracuda::norm::ref
