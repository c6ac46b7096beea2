// CPU reference reductions. For each output element we gather its slice
// (the elements of the reduced axes) and compute the kind's formula in double
// (int64 for integer Sum/Prod/Max/Min/Arg*). Var/Std use two passes over the
// slice (mean, then squared deviations), LogSumExp shifts by the slice max.
#include "ops/reduce/reference.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>
#include <vector>

#include "baracuda/core/half.hpp"
#include "core/host_elements.hpp"

namespace baracuda::reduce::ref {
namespace {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::parallel_for;
using baracuda::detail::store_f;
using baracuda::detail::store_i;

// Enumerates output slices: for each combination of kept indices, the offsets
// of every slice element in up to 2 "full" operands (x, dx) and the offset in
// up to 2 "slice" operands (y, dy: strides on reduced axes ignored).
struct SliceWalker {
  int rank;
  Dims shape;
  uint32_t mask;
  std::vector<int> kept, red;
  int64_t num_out = 1, n = 1;

  SliceWalker(const Dims& s, uint32_t m) : rank(s.rank), shape(s), mask(m) {
    for (int i = 0; i < rank; ++i) {
      if (mask & (1u << i)) { red.push_back(i); n *= s[i]; }
      else { kept.push_back(i); num_out *= s[i]; }
    }
  }
  // Offset of kept-linear index `o` along `strides`.
  int64_t kept_offset(int64_t o, const Dims& strides) const {
    int64_t off = 0;
    for (int k = static_cast<int>(kept.size()) - 1; k >= 0; --k) {
      const int ax = kept[static_cast<size_t>(k)];
      off += (o % shape[ax]) * strides[ax];
      o /= shape[ax];
    }
    return off;
  }
  // Offsets of every slice element along `strides` (row-major over reduced axes).
  void slice_offsets(const Dims& strides, std::vector<int64_t>& out) const {
    out.assign(static_cast<size_t>(n), 0);
    for (int64_t j = 0; j < n; ++j) {
      int64_t r = j, off = 0;
      for (int k = static_cast<int>(red.size()) - 1; k >= 0; --k) {
        const int ax = red[static_cast<size_t>(k)];
        off += (r % shape[ax]) * strides[ax];
        r /= shape[ax];
      }
      out[static_cast<size_t>(j)] = off;
    }
  }
};

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

double slice_mean(const std::vector<double>& v) {
  double s = 0;
  for (double a : v) s += a;
  return v.empty() ? kNaN : s / static_cast<double>(v.size());
}

double float_result(ReduceKind kind, const std::vector<double>& v, int64_t correction) {
  const double n = static_cast<double>(v.size());
  switch (kind) {
    case ReduceKind::Sum: { double s = 0; for (double a : v) s += a; return s; }
    case ReduceKind::Mean: return slice_mean(v);
    case ReduceKind::Prod: { double p = 1; for (double a : v) p *= a; return p; }
    case ReduceKind::Norm2: { double s = 0; for (double a : v) s += a * a; return std::sqrt(s); }
    case ReduceKind::Max:
    case ReduceKind::Min: {
      double m = v[0];
      for (double a : v) {
        if (std::isnan(a)) return a;
        m = kind == ReduceKind::Max ? std::max(m, a) : std::min(m, a);
      }
      return m;
    }
    case ReduceKind::LogSumExp: {
      double m = -kInf;
      for (double a : v) {
        if (std::isnan(a)) return a;
        m = std::max(m, a);
      }
      if (std::isinf(m)) return m;  // all -inf (or empty) -> -inf; any +inf -> +inf
      double s = 0;
      for (double a : v) s += std::exp(a - m);
      return m + std::log(s);
    }
    case ReduceKind::Var:
    case ReduceKind::Std: {
      const double mean = slice_mean(v);
      double m2 = 0;
      for (double a : v) m2 += (a - mean) * (a - mean);
      const double div = std::max(0.0, n - static_cast<double>(correction));
      const double var = v.empty() ? kNaN : m2 / div;
      return kind == ReduceKind::Var ? var : std::sqrt(var);
    }
    default: return kNaN;
  }
}

// First index of the max (ArgMax) / min (ArgMin); NaN is the extreme, first NaN wins.
template <class T>
int64_t arg_result(bool is_max, const std::vector<T>& v) {
  int64_t best = 0;
  for (size_t j = 0; j < v.size(); ++j) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(v[j])) return static_cast<int64_t>(j);
    }
    if (is_max ? v[j] > v[static_cast<size_t>(best)] : v[j] < v[static_cast<size_t>(best)]) best = static_cast<int64_t>(j);
  }
  return best;
}

}  // namespace

Status forward(ReduceKind kind, const TensorRef& x, const TensorMut& y, uint32_t mask, int64_t correction) {
  const SliceWalker w(x.shape, mask);
  const bool int_in = is_integral(x.dtype);
  parallel_for(w.num_out, w.n, [&](int64_t o) {
    const int64_t xb = w.kept_offset(o, x.strides);
    const int64_t yo = w.kept_offset(o, y.strides);
    std::vector<int64_t> offs;
    w.slice_offsets(x.strides, offs);
    if (kind == ReduceKind::ArgMax || kind == ReduceKind::ArgMin) {
      int64_t r;
      if (int_in) {
        std::vector<int64_t> v(offs.size());
        for (size_t j = 0; j < offs.size(); ++j) v[j] = load_i(x.data, x.dtype, xb + offs[j]);
        r = arg_result(kind == ReduceKind::ArgMax, v);
      } else {
        std::vector<double> v(offs.size());
        for (size_t j = 0; j < offs.size(); ++j) v[j] = load_f(x.data, x.dtype, xb + offs[j]);
        r = arg_result(kind == ReduceKind::ArgMax, v);
      }
      store_i(y.data, DType::I64, yo, r);
      return;
    }
    if (int_in) {
      // Sum/Prod wrap modulo 2^64 like int64 arithmetic (computed unsigned: no UB).
      uint64_t acc = kind == ReduceKind::Prod ? 1u : 0u;
      int64_t m = 0;
      for (size_t j = 0; j < offs.size(); ++j) {
        const int64_t a = load_i(x.data, x.dtype, xb + offs[j]);
        if (kind == ReduceKind::Sum) acc += static_cast<uint64_t>(a);
        else if (kind == ReduceKind::Prod) acc *= static_cast<uint64_t>(a);
        else if (j == 0) m = a;
        else m = kind == ReduceKind::Max ? std::max(m, a) : std::min(m, a);
      }
      if (kind == ReduceKind::Sum || kind == ReduceKind::Prod) store_i(y.data, DType::I64, yo, static_cast<int64_t>(acc));
      else store_i(y.data, y.dtype, yo, m);
      return;
    }
    std::vector<double> v(offs.size());
    for (size_t j = 0; j < offs.size(); ++j) v[j] = load_f(x.data, x.dtype, xb + offs[j]);
    store_f(y.data, y.dtype, yo, float_result(kind, v, correction));
  });
  return Status::ok();
}

Status backward(ReduceKind kind, const TensorRef& dy, const TensorRef& x, const TensorRef& y, const TensorMut& dx,
                uint32_t mask, int64_t correction) {
  const SliceWalker w(dx.shape, mask);
  const DType t = dx.dtype;
  const double n = static_cast<double>(w.n);
  const double div = std::max(0.0, n - static_cast<double>(correction));
  parallel_for(w.num_out, w.n, [&](int64_t o) {
    std::vector<int64_t> dxo, xo;
    w.slice_offsets(dx.strides, dxo);
    const int64_t dxb = w.kept_offset(o, dx.strides);
    const double g = load_f(dy.data, t, w.kept_offset(o, dy.strides));
    const double yv = y.data ? load_f(y.data, t, w.kept_offset(o, y.strides)) : 0.0;
    std::vector<double> xv;
    if (x.data) {
      w.slice_offsets(x.strides, xo);
      const int64_t xb = w.kept_offset(o, x.strides);
      xv.resize(xo.size());
      for (size_t j = 0; j < xo.size(); ++j) xv[j] = load_f(x.data, t, xb + xo[j]);
    }
    const size_t len = dxo.size();
    std::vector<double> out(len);
    switch (kind) {
      case ReduceKind::Sum: std::fill(out.begin(), out.end(), g); break;
      case ReduceKind::Mean: std::fill(out.begin(), out.end(), g / n); break;
      case ReduceKind::Max:
      case ReduceKind::Min: {
        auto tied = [&](double a) { return a == yv || (std::isnan(a) && std::isnan(yv)); };
        double count = 0;
        for (double a : xv) count += tied(a) ? 1 : 0;
        for (size_t j = 0; j < len; ++j) out[j] = tied(xv[j]) ? g / count : 0.0;
        break;
      }
      case ReduceKind::Prod: {
        // prefix[j] * suffix[j+1]: the product of every other element, exact with zeros.
        std::vector<double> suffix(len + 1, 1.0);
        for (size_t j = len; j-- > 0;) suffix[j] = suffix[j + 1] * xv[j];
        double prefix = 1.0;
        for (size_t j = 0; j < len; ++j) {
          out[j] = g * prefix * suffix[j + 1];
          prefix *= xv[j];
        }
        break;
      }
      case ReduceKind::Norm2:
        for (size_t j = 0; j < len; ++j) out[j] = yv == 0 ? 0.0 : g * xv[j] / yv;
        break;
      case ReduceKind::LogSumExp:
        for (size_t j = 0; j < len; ++j) out[j] = yv == -kInf ? 0.0 : g * std::exp(xv[j] - yv);
        break;
      case ReduceKind::Var: {
        const double mean = slice_mean(xv);
        for (size_t j = 0; j < len; ++j) out[j] = g * 2.0 * (xv[j] - mean) / div;
        break;
      }
      case ReduceKind::Std: {
        const double mean = slice_mean(xv);
        for (size_t j = 0; j < len; ++j) out[j] = g * (xv[j] - mean) / (div * yv);
        break;
      }
      default: break;
    }
    for (size_t j = 0; j < len; ++j) store_f(dx.data, t, dxb + dxo[j], out[j]);
  });
  return Status::ok();
}

}  // namespace baracuda::reduce::ref
