// Shared by the softmax tests (CPU and CUDA): an independent naive model of
// the documented semantics in double (baracuda/ops/softmax.hpp), written
// without the library's row layout: it walks logical row-major values.
#pragma once
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace bt::softmax_model {

// Row j of axis `axis` in a row-major [outer, len, inner] split of `shape`.
struct Split {
  int64_t outer = 1, len = 1, inner = 1;
};
inline Split split(const baracuda::Dims& shape, int axis) {
  Split s;
  for (int d = 0; d < shape.rank; ++d) {
    if (d < axis) s.outer *= shape[d];
    else if (d == axis) s.len = shape[d];
    else s.inner *= shape[d];
  }
  return s;
}

// Forward of logical values x (row-major over shape).
inline std::vector<double> forward(const std::vector<double>& x, const baracuda::Dims& shape, int axis, bool log,
                                   double scale) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
  const Split s = split(shape, axis < 0 ? axis + shape.rank : axis);
  std::vector<double> y(x.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * s.len + j) * s.inner + i); };
      bool has_nan = false, has_pinf = false;
      double m = -inf;
      for (int64_t j = 0; j < s.len; ++j) {
        const double v = scale * x[at(j)];
        has_nan |= std::isnan(v);
        has_pinf |= v == inf;
        m = std::max(m, v);
      }
      double z = 0;
      for (int64_t j = 0; j < s.len; ++j) z += std::exp(scale * x[at(j)] - m);
      for (int64_t j = 0; j < s.len; ++j) {
        const double v = scale * x[at(j)];
        double r;
        if (has_nan || has_pinf) r = nan;
        else if (m == -inf) r = log ? -inf : 0.0;
        else r = log ? v - m - std::log(z) : std::exp(v - m) / z;
        y[at(j)] = r;
      }
    }
  return y;
}

// Backward from the forward's output y and the gradient dy.
inline std::vector<double> backward(const std::vector<double>& y, const std::vector<double>& dy,
                                    const baracuda::Dims& shape, int axis, bool log, double scale) {
  const Split s = split(shape, axis < 0 ? axis + shape.rank : axis);
  std::vector<double> dx(y.size());
  for (int64_t o = 0; o < s.outer; ++o)
    for (int64_t i = 0; i < s.inner; ++i) {
      auto at = [&](int64_t j) { return static_cast<size_t>((o * s.len + j) * s.inner + i); };
      double sum = 0;
      for (int64_t j = 0; j < s.len; ++j) sum += log ? dy[at(j)] : dy[at(j)] * y[at(j)];
      for (int64_t j = 0; j < s.len; ++j)
        dx[at(j)] = log ? scale * (dy[at(j)] - std::exp(y[at(j)]) * sum) : scale * y[at(j)] * (dy[at(j)] - sum);
    }
  return dx;
}

}  // namespace bt::softmax_model
