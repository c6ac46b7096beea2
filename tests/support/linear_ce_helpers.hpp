// Helpers for the fused linear + cross-entropy tests (CPU and CUDA):
//   * LceData / make_lce_data: random H, W, b, targets (some ignored), class
//     weights and dloss, rounded to the dtype;
//   * lce_naive: an independent naive model in double (logits = H W^T + b,
//     then loss_helpers' ce_model, then dH = dl W, dW = dl^T H, db = sum dl);
//   * lce_run: runs a FusedLinearCrossEntropyPlan on any stream with a given
//     row stride of H / dH and returns every output as doubles (outputs are
//     poisoned first).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/loss_helpers.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::FusedLinearCrossEntropyDescriptor;
using baracuda::FusedLinearCrossEntropyPlan;

struct LceData {
  std::vector<double> h, w, b;   // [N, D], [V, D], [V]
  std::vector<int64_t> target;   // [N]
  std::vector<double> cw;        // class weight [V]
  std::vector<double> dloss;     // None: [N]; else one value
};

inline bool lce_grad(const FusedLinearCrossEntropyDescriptor& d) { return d.need_dh || d.need_dw || d.need_db; }

inline LceData make_lce_data(const FusedLinearCrossEntropyDescriptor& d, Rng& rng, double ignore_frac = 0.2) {
  LceData x;
  const DType t = d.dtype;
  x.h = random_values(t, d.rows * d.in_features, rng);
  x.w = random_values(t, d.classes * d.in_features, rng);
  if (d.has_bias) x.b = random_values(t, d.classes, rng);
  x.target.resize(static_cast<size_t>(d.rows));
  for (auto& v : x.target) v = uniform(rng, 0.0, 1.0) < ignore_frac ? d.ignore_index : uniform_int(rng, 0, d.classes - 1);
  if (d.has_weight) {
    x.cw.resize(static_cast<size_t>(d.classes));
    for (auto& v : x.cw) v = round_to(t, uniform(rng, 0.25, 2.0));
  }
  x.dloss.resize(d.reduction == LossReduction::None ? static_cast<size_t>(d.rows) : 1);
  for (auto& v : x.dloss) v = round_to(d.loss_dtype, uniform(rng, 0.5, 1.5));
  return x;
}

// The cross-entropy descriptor of the fused problem's logits.
inline CrossEntropyDescriptor lce_ce_desc(const FusedLinearCrossEntropyDescriptor& d) {
  CrossEntropyDescriptor c;
  c.dtype = d.dtype;
  c.rows = d.rows;
  c.classes = d.classes;
  c.index_dtype = d.index_dtype;
  c.ignore_index = d.ignore_index;
  c.label_smoothing = d.label_smoothing;
  c.has_weight = d.has_weight;
  c.reduction = d.reduction;
  c.z_loss = d.z_loss;
  c.loss_dtype = d.loss_dtype;
  return c;
}

struct LceResult {
  baracuda::Status st;
  std::vector<double> loss, lse, dh, dw, db;
  std::string variant;
};

// Naive model in double, no rounding of the logits (exact math; compare f64).
inline LceResult lce_naive(const FusedLinearCrossEntropyDescriptor& d, const LceData& x) {
  const int64_t N = d.rows, D = d.in_features, V = d.classes;
  CeData c;
  c.logits.assign(static_cast<size_t>(N * V), 0.0);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t v = 0; v < V; ++v) {
      double s = d.has_bias ? x.b[v] : 0.0;
      for (int64_t k = 0; k < D; ++k) s += x.h[i * D + k] * x.w[v * D + k];
      c.logits[i * V + v] = s;
    }
  c.target = x.target;
  c.weight = x.cw;
  const CeModel m = ce_model(lce_ce_desc(d), c, lce_grad(d) ? x.dloss : std::vector<double>{});
  LceResult r;
  r.loss = m.loss;
  r.lse = m.lse;
  if (!lce_grad(d)) return r;
  if (d.need_dh) {
    r.dh.assign(static_cast<size_t>(N * D), 0.0);
    for (int64_t i = 0; i < N; ++i)
      for (int64_t k = 0; k < D; ++k)
        for (int64_t v = 0; v < V; ++v) r.dh[i * D + k] += m.dlogits[i * V + v] * x.w[v * D + k];
  }
  if (d.need_dw) {
    r.dw.assign(static_cast<size_t>(V * D), 0.0);
    for (int64_t v = 0; v < V; ++v)
      for (int64_t k = 0; k < D; ++k)
        for (int64_t i = 0; i < N; ++i) r.dw[v * D + k] += m.dlogits[i * V + v] * x.h[i * D + k];
  }
  if (d.need_db) {
    r.db.assign(static_cast<size_t>(V), 0.0);
    for (int64_t v = 0; v < V; ++v)
      for (int64_t i = 0; i < N; ++i) r.db[v] += m.dlogits[i * V + v];
  }
  return r;
}

struct LceLayout {
  int64_t h_rs = 0;       // row stride of H and dH (0: D)
  bool want_lse = true;
};

// Runs the plan (selected by the caller) on stream s.
inline LceResult lce_run(const baracuda::Stream& s, const FusedLinearCrossEntropyPlan& plan, const LceData& x,
                         const LceLayout& L = {}, int repeats = 1) {
  using namespace ce_detail;
  const FusedLinearCrossEntropyDescriptor& d = plan.descriptor();
  const int64_t N = d.rows, D = d.in_features, V = d.classes;
  const int64_t hrs = L.h_rs ? L.h_rs : D;
  const DType t = d.dtype;
  const bool none = d.reduction == LossReduction::None;
  LceResult r;
  HostBuffer hh(t, std::max<int64_t>(mat_storage(N, D, hrs), 1));
  hh.fill_bytes(0);
  for (int64_t i = 0; i < N; ++i)
    for (int64_t k = 0; k < D; ++k) hh.set(i * hrs + k, x.h[i * D + k]);
  baracuda::Buffer h = upload(s, hh), w = upload(s, host_from(t, x.w));
  baracuda::Buffer b = upload(s, host_from(t, d.has_bias ? x.b : std::vector<double>{}));
  baracuda::Buffer cw = upload(s, host_from(t, d.has_weight ? x.cw : std::vector<double>{}));
  baracuda::Buffer tg = upload(s, host_from_i64(d.index_dtype, x.target));
  baracuda::Buffer dl = upload(s, host_from(d.loss_dtype, x.dloss));
  baracuda::Buffer loss = poisoned(s, d.loss_dtype, none ? N : 1), lse = poisoned(s, plan.lse_dtype(), N);
  baracuda::Buffer dh = poisoned(s, t, mat_storage(N, D, hrs)), dw = poisoned(s, t, V * D), db = poisoned(s, t, V);
  baracuda::FusedLinearCrossEntropyArgs a;
  a.hidden = h.view(t, {N, D}, {hrs, 1});
  a.weight = w.view(t, {V, D});
  if (d.has_bias) a.bias = b.view(t, {V});
  a.target = tg.view(d.index_dtype, {N});
  if (d.has_weight) a.class_weight = cw.view(t, {V});
  if (lce_grad(d)) a.dloss = none ? dl.view(d.loss_dtype, {N}) : dl.view(d.loss_dtype, {}, {});
  a.loss = none ? loss.view_mut(d.loss_dtype, {N}) : loss.view_mut(d.loss_dtype, {}, {});
  if (L.want_lse) a.lse = lse.view_mut(plan.lse_dtype(), {N});
  if (d.need_dh) a.dhidden = dh.view_mut(t, {N, D}, {hrs, 1});
  if (d.need_dw) a.dweight = dw.view_mut(t, {V, D});
  if (d.need_db) a.dbias = db.view_mut(t, {V});
  baracuda::Buffer ws(s.device(), std::max<size_t>(plan.workspace_size(), 16));
  const baracuda::Workspace wsv(ws.data(), plan.workspace_size());
  auto sku = plan.sku_for(s, wsv, a);
  if (sku) r.variant = sku->variant;
  for (int rep = 0; rep < repeats && r.st.is_ok(); ++rep) r.st = plan.run(s, wsv, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (!r.st.is_ok()) return r;
  r.loss = gather_vec(download(loss, d.loss_dtype, none ? N : 1), none ? N : 1, 1);
  if (L.want_lse) r.lse = gather_vec(download(lse, plan.lse_dtype(), N), N, 1);
  if (d.need_dh) r.dh = gather_mat(download(dh, t, mat_storage(N, D, hrs)), N, D, hrs);
  if (d.need_dw) r.dw = gather_vec(download(dw, t, V * D), V * D, 1);
  if (d.need_db) r.db = gather_vec(download(db, t, V), V, 1);
  return r;
}

inline FusedLinearCrossEntropyDescriptor lce_desc(DType t, int64_t N, int64_t D, int64_t V, bool bias = true) {
  FusedLinearCrossEntropyDescriptor d;
  d.dtype = t;
  d.rows = N;
  d.in_features = D;
  d.classes = V;
  d.has_bias = bias;
  d.need_db = bias;
  d.loss_dtype = t == DType::F64 ? DType::F64 : DType::F32;
  return d;
}

}  // namespace bt
