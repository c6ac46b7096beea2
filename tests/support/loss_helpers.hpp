// Helpers for the cross-entropy tests (CPU and CUDA):
//   * CeData / make_ce_data: random logits, targets (some ignored), weights;
//   * ce_model: an independent naive model in double, written the way
//     PyTorch composes it (log_softmax, then the nll term, the smoothing term
//     and their separate reductions) and the gradient derived term by term;
//   * ce_forward / ce_backward: run a plan on any stream with given row
//     strides (padded rows, strided [rows] vectors), in place or not, and
//     return every output as doubles (outputs are poisoned with NaN first).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::CrossEntropyBackwardDescriptor;
using baracuda::CrossEntropyDescriptor;
using baracuda::CrossEntropyTarget;
using baracuda::LossReduction;

struct CeData {
  std::vector<double> logits;   // rows x classes (rounded to the dtype)
  std::vector<double> probs;    // Probs: rows x classes
  std::vector<int64_t> target;  // Index: rows
  std::vector<double> weight;   // has_weight: classes
};

inline CeData make_ce_data(const CrossEntropyDescriptor& d, Rng& rng, double ignore_frac = 0.2, double scale = 3.0) {
  CeData x;
  const int64_t n = d.rows * d.classes;
  x.logits.resize(static_cast<size_t>(n));
  for (auto& v : x.logits) v = round_to(d.dtype, uniform(rng, -scale, scale));
  if (d.target == CrossEntropyTarget::Probs) {
    x.probs.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < d.rows; ++i) {
      double s = 0;
      for (int64_t c = 0; c < d.classes; ++c) s += x.probs[i * d.classes + c] = uniform(rng, 0.0, 1.0);
      for (int64_t c = 0; c < d.classes; ++c) x.probs[i * d.classes + c] = round_to(d.dtype, x.probs[i * d.classes + c] / s);
    }
  } else {
    x.target.resize(static_cast<size_t>(d.rows));
    for (auto& t : x.target) t = uniform(rng, 0.0, 1.0) < ignore_frac ? d.ignore_index : uniform_int(rng, 0, d.classes - 1);
  }
  if (d.has_weight) {
    x.weight.resize(static_cast<size_t>(d.classes));
    for (auto& w : x.weight) w = round_to(d.dtype, uniform(rng, 0.25, 2.0));
  }
  return x;
}

struct CeModel {
  std::vector<double> loss;     // None: [rows]; else one value
  std::vector<double> lse;      // [rows]
  std::vector<double> dlogits;  // rows x classes (when dloss was given)
};

// dloss: the incoming gradient (None: rows values, else one); empty: no gradient.
inline CeModel ce_model(const CrossEntropyDescriptor& d, const CeData& x, const std::vector<double>& dloss) {
  const int64_t R = d.rows, C = d.classes;
  const double eps = d.label_smoothing;
  const bool probs = d.target == CrossEntropyTarget::Probs;
  auto w = [&](int64_t c) { return d.has_weight ? x.weight[c] : 1.0; };
  auto mul = [](double coef, double v) { return coef == 0 ? 0.0 : coef * v; };  // 0 * inf counts as 0
  CeModel m;
  m.lse.resize(static_cast<size_t>(R));
  std::vector<double> nll(R, 0.0), smooth(R, 0.0), zterm(R, 0.0);
  double wsum = 0;  // Mean divisor (Index)
  for (int64_t i = 0; i < R; ++i) {
    const double* xr = &x.logits[i * C];
    double mx = -kInf;
    for (int64_t c = 0; c < C; ++c) mx = std::max(mx, xr[c]);
    double s = 0;
    for (int64_t c = 0; c < C; ++c) s += std::exp(xr[c] - mx);
    const double lse = std::isinf(mx) ? mx : mx + std::log(s);
    m.lse[i] = lse;
    if (probs) {
      for (int64_t c = 0; c < C; ++c) {
        const double pp = x.probs[i * C + c] * (1 - eps) + eps / C;
        smooth[i] += mul(w(c) * pp, -(xr[c] - lse));  // -w p' log_softmax
      }
      zterm[i] = mul(d.z_loss, lse * lse);
    } else {
      const int64_t t = x.target[i];
      if (t == d.ignore_index) continue;
      nll[i] = mul(w(t), -(xr[t] - lse));
      for (int64_t c = 0; c < C; ++c) smooth[i] += mul(w(c), -(xr[c] - lse));
      zterm[i] = mul(d.z_loss * w(t), lse * lse);
      wsum += w(t);
    }
  }
  // Per-row loss, and the reduction of each part (PyTorch reduces the nll and
  // smoothing parts separately, by the same divisor).
  auto row_loss = [&](int64_t i) {
    return probs ? smooth[i] + zterm[i] : mul(1 - eps, nll[i]) + mul(eps / C, smooth[i]) + zterm[i];
  };
  const double divisor = probs ? static_cast<double>(R) : wsum;
  if (d.reduction == LossReduction::None) {
    for (int64_t i = 0; i < R; ++i) m.loss.push_back(row_loss(i));
  } else {
    double a = 0, b = 0, z = 0;
    for (int64_t i = 0; i < R; ++i) {
      a += probs ? smooth[i] : mul(1 - eps, nll[i]);
      b += probs ? 0.0 : mul(eps / C, smooth[i]);
      z += zterm[i];
    }
    m.loss.push_back(d.reduction == LossReduction::Sum ? a + b + z : a / divisor + b / divisor + z / divisor);
  }
  if (dloss.empty()) return m;
  m.dlogits.assign(static_cast<size_t>(R * C), 0.0);
  for (int64_t i = 0; i < R; ++i) {
    const double* xr = &x.logits[i * C];
    const double lse = m.lse[i];
    double g = d.reduction == LossReduction::None ? dloss[i] : dloss[0];
    if (d.reduction == LossReduction::Mean) g /= divisor;
    if (probs) {
      double wp = 0;  // sum_c w_c p'_c
      for (int64_t c = 0; c < C; ++c) wp += w(c) * (x.probs[i * C + c] * (1 - eps) + eps / C);
      for (int64_t j = 0; j < C; ++j) {
        const double sj = std::exp(xr[j] - lse);
        const double pj = x.probs[i * C + j] * (1 - eps) + eps / C;
        m.dlogits[i * C + j] = g * (wp * sj - w(j) * pj + 2 * d.z_loss * lse * sj);
      }
    } else {
      const int64_t t = x.target[i];
      if (t == d.ignore_index) continue;
      double W = 0;
      for (int64_t c = 0; c < C; ++c) W += w(c);
      for (int64_t j = 0; j < C; ++j) {
        const double sj = std::exp(xr[j] - lse);
        const double nll_g = w(t) * (sj - (j == t ? 1.0 : 0.0));
        const double smooth_g = W * sj - w(j);
        m.dlogits[i * C + j] = g * ((1 - eps) * nll_g + eps / C * smooth_g + 2 * d.z_loss * w(t) * lse * sj);
      }
    }
  }
  return m;
}

// ---- running a plan ------------------------------------------------------------------------
struct CeLayout {
  int64_t logits_rs = 0;   // logits / dlogits / probs row stride (0: classes)
  int64_t vec_stride = 1;  // stride of target (Index), loss (None), lse, dloss (None)
  bool in_place = false;   // dlogits is the logits buffer
  bool want_lse = true;
};

struct CeResult {
  baracuda::Status st;
  std::vector<double> loss, lse, dlogits;
  std::string variant;
};

namespace ce_detail {
inline baracuda::Buffer upload(const baracuda::Stream& s, const HostBuffer& h) {
  baracuda::Buffer b(s.device(), std::max<size_t>(h.bytes(), 16));
  if (h.bytes()) (void)b.copy_from_host(h.data(), h.bytes());
  return b;
}
inline HostBuffer download(const baracuda::Buffer& b, DType t, int64_t n) {
  HostBuffer h(t, std::max<int64_t>(n, 1));
  (void)b.copy_to_host(h.data(), h.bytes());
  return h;
}
inline baracuda::Buffer poisoned(const baracuda::Stream& s, DType t, int64_t n) {
  baracuda::Buffer b(s.device(), std::max<size_t>(static_cast<size_t>(std::max<int64_t>(n, 1)) * baracuda::dtype_size(t), 16));
  (void)b.fill_bytes(0xff);
  return b;
}
inline int64_t mat_storage(int64_t rows, int64_t classes, int64_t rs) { return rows == 0 ? 0 : (rows - 1) * rs + classes; }
inline int64_t vec_storage(int64_t n, int64_t s) { return n == 0 ? 0 : (n - 1) * s + 1; }
inline std::vector<double> gather_mat(const HostBuffer& h, int64_t rows, int64_t classes, int64_t rs) {
  std::vector<double> v;
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t c = 0; c < classes; ++c) v.push_back(h.get(i * rs + c));
  return v;
}
inline std::vector<double> gather_vec(const HostBuffer& h, int64_t n, int64_t s) {
  std::vector<double> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(h.get(i * s));
  return v;
}
inline DType lse_dtype(const CrossEntropyDescriptor& d) { return d.dtype == DType::F64 ? DType::F64 : DType::F32; }

// Device copies of the inputs of d in layout L.
struct Inputs {
  baracuda::Buffer logits, target, weight;
  int64_t rs;
  Inputs(const baracuda::Stream& s, const CrossEntropyDescriptor& d, const CeData& x, const CeLayout& L) {
    rs = L.logits_rs ? L.logits_rs : d.classes;
    HostBuffer hl(d.dtype, std::max<int64_t>(mat_storage(d.rows, d.classes, rs), 1));
    hl.fill_bytes(0);
    for (int64_t i = 0; i < d.rows; ++i)
      for (int64_t c = 0; c < d.classes; ++c) hl.set(i * rs + c, x.logits[i * d.classes + c]);
    logits = upload(s, hl);
    if (d.target == CrossEntropyTarget::Probs) {
      HostBuffer hp(d.dtype, std::max<int64_t>(mat_storage(d.rows, d.classes, rs), 1));
      hp.fill_bytes(0);
      for (int64_t i = 0; i < d.rows; ++i)
        for (int64_t c = 0; c < d.classes; ++c) hp.set(i * rs + c, x.probs[i * d.classes + c]);
      target = upload(s, hp);
    } else {
      HostBuffer ht(d.index_dtype, std::max<int64_t>(vec_storage(d.rows, L.vec_stride), 1));
      ht.fill_bytes(0);
      for (int64_t i = 0; i < d.rows; ++i) ht.set_i(i * L.vec_stride, x.target[i]);
      target = upload(s, ht);
    }
    if (d.has_weight) weight = upload(s, host_from(d.dtype, x.weight));
  }
  baracuda::TensorRef logits_view(const CrossEntropyDescriptor& d) const {
    return logits.view(d.dtype, {d.rows, d.classes}, {rs, 1});
  }
  baracuda::TensorRef target_view(const CrossEntropyDescriptor& d, const CeLayout& L) const {
    if (d.target == CrossEntropyTarget::Probs) return target.view(d.dtype, {d.rows, d.classes}, {rs, 1});
    return target.view(d.index_dtype, {d.rows}, {L.vec_stride});
  }
  baracuda::TensorRef weight_view(const CrossEntropyDescriptor& d) const {
    return d.has_weight ? weight.view(d.dtype, {d.classes}) : baracuda::TensorRef();
  }
};

inline baracuda::Buffer dloss_buffer(const baracuda::Stream& s, const CrossEntropyDescriptor& d, const std::vector<double>& dloss,
                                     int64_t vs) {
  const bool none = d.reduction == LossReduction::None;
  HostBuffer h(d.loss_dtype, std::max<int64_t>(none ? vec_storage(d.rows, vs) : 1, 1));
  h.fill_bytes(0);
  for (size_t i = 0; i < dloss.size(); ++i) h.set(static_cast<int64_t>(i) * (none ? vs : 0), dloss[i]);
  return upload(s, h);
}
inline baracuda::TensorRef dloss_view(const baracuda::Buffer& b, const CrossEntropyDescriptor& d, int64_t vs) {
  if (d.reduction == LossReduction::None) return b.view(d.loss_dtype, {d.rows}, {vs});
  return b.view(d.loss_dtype, {}, {});
}
}  // namespace ce_detail

// The forward (with_grad: and dlogits from dloss) on stream s.
inline CeResult ce_forward(const baracuda::Stream& s, const CrossEntropyDescriptor& d, const CeData& x,
                           const std::vector<double>& dloss = {}, const CeLayout& L = {},
                           const baracuda::PlanPreference& pref = {}) {
  using namespace ce_detail;
  CeResult r;
  auto plan = baracuda::CrossEntropyPlan::select(s, d, pref);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  Inputs in(s, d, x, L);
  const bool none = d.reduction == LossReduction::None;
  const int64_t vs = L.vec_stride;
  baracuda::Buffer loss = poisoned(s, d.loss_dtype, none ? vec_storage(d.rows, vs) : 1);
  baracuda::Buffer lse = poisoned(s, lse_dtype(d), vec_storage(d.rows, vs));
  baracuda::Buffer dl = dloss_buffer(s, d, dloss, vs);
  baracuda::Buffer dlogits = poisoned(s, d.dtype, mat_storage(d.rows, d.classes, in.rs));
  baracuda::CrossEntropyArgs a;
  a.logits = in.logits_view(d);
  a.target = in.target_view(d, L);
  a.weight = in.weight_view(d);
  a.loss = none ? loss.view_mut(d.loss_dtype, {d.rows}, {vs}) : loss.view_mut(d.loss_dtype, {}, {});
  if (L.want_lse) a.lse = lse.view_mut(lse_dtype(d), {d.rows}, {vs});
  if (d.with_grad) {
    a.dloss = dloss_view(dl, d, vs);
    a.dlogits = L.in_place ? in.logits.view_mut(d.dtype, {d.rows, d.classes}, {in.rs, 1})
                           : dlogits.view_mut(d.dtype, {d.rows, d.classes}, {in.rs, 1});
  }
  baracuda::Buffer ws(s.device(), std::max<size_t>(plan->workspace_size(), 16));
  auto sku = plan->sku_for(s, baracuda::Workspace(ws.data(), plan->workspace_size()), a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, baracuda::Workspace(ws.data(), plan->workspace_size()), a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (!r.st.is_ok()) return r;
  r.loss = none ? gather_vec(download(loss, d.loss_dtype, vec_storage(d.rows, vs)), d.rows, vs)
                : gather_vec(download(loss, d.loss_dtype, 1), 1, 1);
  if (L.want_lse) r.lse = gather_vec(download(lse, lse_dtype(d), vec_storage(d.rows, vs)), d.rows, vs);
  if (d.with_grad) {
    const int64_t n = mat_storage(d.rows, d.classes, in.rs);
    r.dlogits = gather_mat(download(L.in_place ? in.logits : dlogits, d.dtype, n), d.rows, d.classes, in.rs);
  }
  return r;
}

// The backward on stream s from lse (the forward's, as doubles) and dloss.
inline CeResult ce_backward(const baracuda::Stream& s, const CrossEntropyDescriptor& fwd, const CeData& x,
                            const std::vector<double>& lse_vals, const std::vector<double>& dloss, const CeLayout& L = {},
                            const baracuda::PlanPreference& pref = {}) {
  using namespace ce_detail;
  CeResult r;
  CrossEntropyBackwardDescriptor bd;
  bd.forward = fwd;
  const CrossEntropyDescriptor& d = bd.forward;
  auto plan = baracuda::CrossEntropyBackwardPlan::select(s, bd, pref);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  Inputs in(s, d, x, L);
  const int64_t vs = L.vec_stride;
  HostBuffer hl(lse_dtype(d), std::max<int64_t>(vec_storage(d.rows, vs), 1));
  hl.fill_bytes(0);
  for (int64_t i = 0; i < d.rows; ++i) hl.set(i * vs, lse_vals[i]);
  baracuda::Buffer lse = upload(s, hl);
  baracuda::Buffer dl = dloss_buffer(s, d, dloss, vs);
  baracuda::Buffer dlogits = poisoned(s, d.dtype, mat_storage(d.rows, d.classes, in.rs));
  baracuda::CrossEntropyBackwardArgs a;
  a.logits = in.logits_view(d);
  a.target = in.target_view(d, L);
  a.weight = in.weight_view(d);
  a.lse = lse.view(lse_dtype(d), {d.rows}, {vs});
  a.dloss = dloss_view(dl, d, vs);
  a.dlogits = L.in_place ? in.logits.view_mut(d.dtype, {d.rows, d.classes}, {in.rs, 1})
                         : dlogits.view_mut(d.dtype, {d.rows, d.classes}, {in.rs, 1});
  baracuda::Buffer ws(s.device(), std::max<size_t>(plan->workspace_size(), 16));
  auto sku = plan->sku_for(s, baracuda::Workspace(ws.data(), plan->workspace_size()), a);
  if (sku) r.variant = sku->variant;
  r.st = plan->run(s, baracuda::Workspace(ws.data(), plan->workspace_size()), a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (!r.st.is_ok()) return r;
  const int64_t n = mat_storage(d.rows, d.classes, in.rs);
  r.dlogits = gather_mat(download(L.in_place ? in.logits : dlogits, d.dtype, n), d.rows, d.classes, in.rs);
  return r;
}

}  // namespace bt
