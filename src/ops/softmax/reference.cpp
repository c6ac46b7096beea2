// CPU reference softmax. Every row (all coordinates but the axis) is read into
// a double buffer first, so in place (y = x, dx = dy) is safe; then the row's
// statistics and outputs are computed in double.
#include "ops/softmax/reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "core/host_elements.hpp"

namespace baracuda::softmax::ref {

using baracuda::detail::load_f;
using baracuda::detail::store_f;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Forward of one row of v = scale * x, written back into v.
void forward_row(std::vector<double>& v, bool log) {
  double m = -kInf;
  bool nan = false;
  for (double a : v) {
    if (std::isnan(a)) nan = true;
    else if (a > m) m = a;
  }
  if (nan || m == kInf) {  // NaN, or +inf (inf - inf in the shifted exponent, as PyTorch)
    for (double& a : v) a = kNaN;
    return;
  }
  if (m == -kInf) {  // all -inf: documented 0 probabilities (log: -inf)
    for (double& a : v) a = log ? -kInf : 0.0;
    return;
  }
  double sum = 0;
  for (double a : v) sum += std::exp(a - m);
  const double lse = m + std::log(sum);
  for (double& a : v) a = log ? a - lse : std::exp(a - m) / sum;
}

}  // namespace

Status run(const Problem& p) {
  const int rank = p.shape.rank;
  const int64_t len = rank == 0 ? 1 : p.shape[p.axis];
  int64_t rows = 1;
  for (int d = 0; d < rank; ++d)
    if (d != p.axis) rows *= p.shape[d];
  if (rows == 0 || len == 0) return Status::ok();
  const int64_t s0 = rank == 0 ? 0 : p.in0.strides[p.axis];
  const int64_t s1 = rank == 0 || !p.backward ? 0 : p.in1.strides[p.axis];
  const int64_t so = rank == 0 ? 0 : p.out.strides[p.axis];

  baracuda::detail::parallel_for(rows, len * 8, [&](int64_t r) {
    // Row r's offsets: its coordinates over the other axes, last axis fastest.
    int64_t o0 = 0, o1 = 0, oo = 0, rest = r;
    for (int d = rank - 1; d >= 0; --d) {
      if (d == p.axis) continue;
      const int64_t i = rest % p.shape[d];
      rest /= p.shape[d];
      o0 += i * p.in0.strides[d];
      if (p.backward) o1 += i * p.in1.strides[d];
      oo += i * p.out.strides[d];
    }
    std::vector<double> a(static_cast<size_t>(len));
    for (int64_t j = 0; j < len; ++j) a[j] = load_f(p.in0.data, p.dtype, o0 + j * s0);
    if (!p.backward) {
      for (double& v : a) v *= p.scale;
      forward_row(a, p.log);
      for (int64_t j = 0; j < len; ++j) store_f(p.out.data, p.dtype, oo + j * so, a[j]);
      return;
    }
    std::vector<double> g(static_cast<size_t>(len));  // dy
    for (int64_t j = 0; j < len; ++j) g[j] = load_f(p.in1.data, p.dtype, o1 + j * s1);
    double sum = 0;  // softmax: sum dy * y; log_softmax: sum dy
    for (int64_t j = 0; j < len; ++j) sum += p.log ? g[j] : g[j] * a[j];
    for (int64_t j = 0; j < len; ++j) {
      const double dx = p.log ? p.scale * (g[j] - std::exp(a[j]) * sum) : p.scale * a[j] * (g[j] - sum);
      store_f(p.out.data, p.dtype, oo + j * so, dx);
    }
  });
  return Status::ok();
}

}  // namespace baracuda::softmax::ref
