// CPU reference cross-entropy. The targets are checked first (an error
// writes nothing); the Mean divisor depends on targets and weights only, so
// each row is then finished on its own: read into a double buffer (so
// dlogits may be the logits buffer), its lse, loss and gradient computed in
// double. The Mean / Sum adds the per-row losses in row order.
#include "ops/loss/reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"

namespace baracuda::loss::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// coef * value, where a coefficient of exactly 0 contributes 0 even for an
// infinite value (a masked logit): the header's rule.
double term(double coef, double value) { return coef == 0.0 ? 0.0 : coef * value; }

// log(sum(exp(x))): NaN with a NaN, +-inf when the max is infinite.
double log_sum_exp(const std::vector<double>& x) {
  double m = -std::numeric_limits<double>::infinity();
  for (double v : x) {
    if (std::isnan(v)) return kNaN;
    if (v > m) m = v;
  }
  if (std::isinf(m)) return m;
  double s = 0;
  for (double v : x) s += std::exp(v - m);
  return m + std::log(s);
}

}  // namespace

Status run(const Problem& p) {
  const CrossEntropyDescriptor& d = p.d;
  const int64_t rows = d.rows, C = d.classes;
  const bool probs = d.target == CrossEntropyTarget::Probs;
  const double eps = d.label_smoothing;
  const TensorRef& x = p.logits;
  const bool grad = p.backward || d.with_grad;
  const bool write_loss = !p.backward;

  // Targets and per-row weights w[t_i] (0 for ignored rows).
  std::vector<int64_t> t(static_cast<size_t>(rows), 0);
  std::vector<bool> ignored(static_cast<size_t>(rows), false);
  if (!probs) {
    for (int64_t i = 0; i < rows; ++i) {
      t[i] = load_i(p.target.data, d.index_dtype, i * p.target.strides[0]);
      ignored[i] = t[i] == d.ignore_index;
      if (!ignored[i] && (t[i] < 0 || t[i] >= C))
        return baracuda::detail::invalid(p.plan, "target[", i, "] = ", t[i], " is out of range [0, ", C,
                                         ") and is not ignore_index ", d.ignore_index);
    }
  }
  // Per-class weights (none needed without rows: classes may then be any size).
  std::vector<double> w(static_cast<size_t>(rows > 0 ? C : 0), 1.0);
  if (d.has_weight && rows > 0)
    for (int64_t c = 0; c < C; ++c) w[c] = load_f(p.weight.data, d.dtype, c * p.weight.strides[0]);

  // Mean divisor: sum of w[t_i] over rows not ignored (Index), rows (Probs).
  double divisor = 0;
  for (int64_t i = 0; i < rows; ++i) divisor += probs ? 1.0 : (ignored[i] ? 0.0 : w[t[i]]);

  // Rows are independent (each reads and writes only its own elements):
  // parallel; the Mean / Sum adds the per-row losses in row order afterwards.
  std::vector<double> row_losses(static_cast<size_t>(rows), 0.0);
  baracuda::detail::parallel_for(rows, C * 16, [&](int64_t i) {
    std::vector<double> xr(static_cast<size_t>(C)), a(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) xr[c] = load_f(x.data, d.dtype, i * x.strides[0] + c * x.strides[1]);
    // The coefficient a_c of each x_c in the smoothing / probability term.
    for (int64_t c = 0; c < C; ++c) {
      if (probs) {
        const double pc = load_f(p.target.data, d.dtype, i * p.target.strides[0] + c * p.target.strides[1]);
        a[c] = w[c] * (pc * (1.0 - eps) + eps / static_cast<double>(C));
      } else {
        a[c] = eps > 0 ? eps / static_cast<double>(C) * w[c] : 0.0;
      }
    }
    const double lse = p.backward ? load_f(p.lse_in.data, p.lse_in.dtype, i * p.lse_in.strides[0]) : log_sum_exp(xr);
    const bool skip = !probs && ignored[i];
    const double tw = probs || skip ? 0.0 : (1.0 - eps) * w[t[i]];  // the target term's coefficient
    const double zw = probs ? 1.0 : (skip ? 0.0 : w[t[i]]);         // the z-loss weight
    double B = 0;
    for (int64_t c = 0; c < C; ++c) B += a[c];

    if (write_loss) {
      double loss = 0;
      if (!skip) {
        if (!probs) loss += term(tw, lse - xr[t[i]]);
        for (int64_t c = 0; c < C; ++c) loss += term(a[c], lse - xr[c]);
        loss += term(d.z_loss * zw, lse * lse);
      }
      if (d.reduction == LossReduction::None) store_f(p.loss.data, p.loss.dtype, i * p.loss.strides[0], loss);
      else row_losses[i] = loss;
      if (p.lse.data) store_f(p.lse.data, p.lse.dtype, i * p.lse.strides[0], lse);
    }
    if (grad) {
      double g = 0;
      if (!skip) {
        if (d.reduction == LossReduction::None) g = load_f(p.dloss.data, p.dloss.dtype, i * p.dloss.strides[0]);
        else g = load_f(p.dloss.data, p.dloss.dtype, 0);
        if (d.reduction == LossReduction::Mean) g /= divisor;
      }
      const double K = B + tw + 2.0 * d.z_loss * zw * lse;
      for (int64_t c = 0; c < C; ++c) {
        double v = 0;
        if (!skip) v = g * (std::exp(xr[c] - lse) * K - a[c] - (!probs && c == t[i] ? tw : 0.0));
        store_f(p.dlogits.data, d.dtype, i * p.dlogits.strides[0] + c * p.dlogits.strides[1], v);
      }
    }
  });
  double total = 0;
  for (double v : row_losses) total += v;
  if (write_loss && d.reduction != LossReduction::None)
    store_f(p.loss.data, p.loss.dtype, 0, d.reduction == LossReduction::Mean ? total / divisor : total);
  return Status::ok();
}

}  // namespace baracuda::loss::ref
