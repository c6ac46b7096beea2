// CPU references for SdpaPlan, SdpaBackwardPlan, FlashSdpaPlan and
// FlashSdpaBackwardPlan. One (batch, kv-head group) is one task: it owns the
// rows of y / dq of the group's query heads and the rows of dk / dv of its kv
// head, so tasks run in parallel without sharing outputs. Everything is double.
#include "ops/attention/reference.hpp"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "core/host_elements.hpp"
#include "core/strided_view.hpp"

namespace baracuda::attention::ref {
namespace {

using baracuda::detail::load_f;
using baracuda::detail::parallel_for;
using baracuda::detail::saturating_product;
using baracuda::detail::store_f;

constexpr double kInf = std::numeric_limits<double>::infinity();

// A [b, h, row, d] accessor over a dense [B,H,S,D] view, or a packed varlen
// [T,H,D] view (b ignored, row = the packed row): the view's address map and
// its dtype.
template <class Ptr>
struct View4 {
  baracuda::detail::StridedView<4, Ptr> at;
  DType dtype = DType::F32;
  double get(int64_t b, int64_t h, int64_t s, int64_t d) const { return load_f(at.data, dtype, at.offset(b, h, s, d)); }
};
template <class Ptr>
void set(const View4<Ptr>& v, int64_t b, int64_t h, int64_t s, int64_t d, double x) {
  store_f(v.at.data, v.dtype, v.at.offset(b, h, s, d), x);
}

template <class T>
View4<decltype(T::data)> dense4(const T& t) {
  return {baracuda::detail::view_of<4>(t), t.dtype};
}
// [T,H,D] (varlen) or [B,H,S,D] (dense)
template <class T>
View4<decltype(T::data)> seq4(const T& t, bool varlen) {
  if (varlen) return {{t.data, 0, t.strides[1], t.strides[0], t.strides[2]}, t.dtype};
  return dense4(t);
}
// lse: [H,T] (varlen) or [B,H,S] (dense); d ignored
template <class T>
View4<decltype(T::data)> lse4(const T& t, bool varlen) {
  if (varlen) return {{t.data, 0, t.strides[0], t.strides[1], 0}, t.dtype};
  return {{t.data, t.strides[0], t.strides[1], t.strides[2], 0}, t.dtype};
}

// Diagonal rules shared by both plans (attention.hpp).
struct Diagonal {
  bool causal = false;
  int64_t off = 0, wl = -1, wr = -1;
  bool allowed(int64_t i, int64_t j) const {
    const int64_t d = i + off;
    if (causal && j > d) return false;
    if (wr >= 0 && j > d + wr) return false;
    if (wl >= 0 && j < d - wl) return false;
    return true;
  }
};

// Softmax of one row over the allowed entries (s = -inf for excluded ones):
// p (0 for excluded / fully masked rows) and the natural-log normaliser.
double softmax_row(std::vector<double>& s) {
  double m = -kInf;
  for (double x : s) m = std::max(m, x);
  if (std::isnan(m)) {
    for (double& x : s) x = std::numeric_limits<double>::quiet_NaN();
    return m;
  }
  if (m == -kInf) {
    for (double& x : s) x = 0;
    return -kInf;
  }
  double sum = 0;
  for (double& x : s) {
    x = std::exp(x - m);
    sum += x;
  }
  for (double& x : s) x /= sum;
  return m + std::log(sum);
}

// --------------------------------------------------------------------------
// Flash: one sequence of one (batch, kv head group).
struct FlashSeq {
  int64_t b = 0;          // batch index used for mask / alibi / dense addressing
  int64_t q_len = 0, kv_len = 0;
  int64_t q_start = 0, kv_start = 0;  // packed row offsets (varlen), 0 when dense
};

struct FlashCtx {
  const FlashSdpaDescriptor* d = nullptr;
  View4<const void*> q, k, v, mask;
  const TensorRef* alibi = nullptr;
  double scale = 1;
  int64_t group = 1;

  double slope(int64_t b, int64_t h) const {
    if (d->alibi == AlibiMode::None) return 0;
    const int64_t o = d->alibi == AlibiMode::PerHead ? h * alibi->strides[0] : b * alibi->strides[0] + h * alibi->strides[1];
    return load_f(alibi->data, alibi->dtype, o);
  }
  // Scores of row i of head h (s, -inf where not allowed) and the softcap
  // derivative g = d(score)/d(scaled dot product).
  void scores(const FlashSeq& sq, int64_t h, int64_t i, std::vector<double>& s, std::vector<double>& g) const {
    const int64_t hk = h / group;
    Diagonal diag{d->causal, d->align == DiagonalAlign::BottomRight ? sq.kv_len - sq.q_len : 0, d->window_left,
                  d->window_right};
    const double sl = slope(sq.b, h);
    s.assign(static_cast<size_t>(sq.kv_len), -kInf);
    g.assign(static_cast<size_t>(sq.kv_len), 0.0);
    for (int64_t j = 0; j < sq.kv_len; ++j) {
      if (!diag.allowed(i, j)) continue;
      double qk = 0;
      for (int64_t e = 0; e < d->head_dim; ++e)
        qk += q.get(sq.b, h, sq.q_start + i, e) * k.get(sq.b, hk, sq.kv_start + j, e);
      double x = qk * scale, gj = 1;
      if (d->softcap > 0) {
        const double t = std::tanh(x / d->softcap);
        x = d->softcap * t;
        gj = 1 - t * t;
      }
      if (d->alibi != AlibiMode::None) x -= sl * std::fabs(static_cast<double>(i + diag.off - j));
      if (d->has_mask) x += mask.get(sq.b, h, i, j);
      s[static_cast<size_t>(j)] = x;
      g[static_cast<size_t>(j)] = gj;
    }
  }
};

Status flash_sequences(const char* plan, const FlashSdpaDescriptor& d, const TensorRef& cu_q, const TensorRef& cu_kv,
                       std::vector<FlashSeq>* out) {
  out->clear();
  if (!d.varlen) {
    for (int64_t b = 0; b < d.batch; ++b) out->push_back({b, d.q_len, d.kv_len, 0, 0});
    return Status::ok();
  }
  const auto* cq = static_cast<const int32_t*>(cu_q.data);
  const auto* ck = static_cast<const int32_t*>(cu_kv.data);
  auto at = [](const int32_t* p, const TensorRef& t, int64_t i) { return static_cast<int64_t>(p[i * t.strides[0]]); };
  const std::string p = std::string(plan) + " (cpu-reference): ";
  if (at(cq, cu_q, 0) != 0 || at(ck, cu_kv, 0) != 0)
    return Status(StatusCode::InvalidProblem, p + "cu_seqlens_q[0] and cu_seqlens_kv[0] must be 0");
  for (int64_t b = 0; b < d.batch; ++b) {
    const int64_t q0 = at(cq, cu_q, b), q1 = at(cq, cu_q, b + 1), k0 = at(ck, cu_kv, b), k1 = at(ck, cu_kv, b + 1);
    if (q1 < q0 || k1 < k0)
      return Status(StatusCode::InvalidProblem, p + "cu_seqlens must be non-decreasing (sequence " + std::to_string(b) + ")");
    if (q1 - q0 > d.q_len || k1 - k0 > d.kv_len)
      return Status(StatusCode::InvalidProblem, p + "sequence " + std::to_string(b) + " has lengths (" +
                                                    std::to_string(q1 - q0) + ", " + std::to_string(k1 - k0) +
                                                    ") above the descriptor's q_len/kv_len maxima (" +
                                                    std::to_string(d.q_len) + ", " + std::to_string(d.kv_len) + ")");
    out->push_back({b, q1 - q0, k1 - k0, q0, k0});
  }
  if (at(cq, cu_q, d.batch) != d.total_q || at(ck, cu_kv, d.batch) != d.total_kv)
    return Status(StatusCode::InvalidProblem, p + "cu_seqlens_q[B] must equal total_q (" + std::to_string(d.total_q) +
                                                  ") and cu_seqlens_kv[B] total_kv (" + std::to_string(d.total_kv) +
                                                  "), got " + std::to_string(at(cq, cu_q, d.batch)) + " and " +
                                                  std::to_string(at(ck, cu_kv, d.batch)));
  return Status::ok();
}

FlashCtx flash_ctx(const FlashSdpaDescriptor& d, const TensorRef& q, const TensorRef& k, const TensorRef& v,
                   const TensorRef& mask, const TensorRef& alibi) {
  FlashCtx c;
  c.d = &d;
  c.q = seq4(q, d.varlen);
  c.k = seq4(k, d.varlen);
  c.v = seq4(v, d.varlen);
  if (d.has_mask) c.mask = dense4(mask);
  c.alibi = &alibi;
  c.scale = *d.scale;
  c.group = d.heads / d.kv_heads;
  return c;
}

}  // namespace

Status flash_forward(const FlashSdpaDescriptor& d, const FlashSdpaArgs& a) {
  std::vector<FlashSeq> seqs;
  BARACUDA_RETURN_IF_ERROR(flash_sequences("FlashSdpaPlan", d, a.cu_seqlens_q, a.cu_seqlens_kv, &seqs));
  const FlashCtx c = flash_ctx(d, a.q, a.k, a.v, a.mask, a.alibi_slopes);
  const auto y = seq4(a.y, d.varlen);
  const auto lse = lse4(a.lse, d.varlen);
  const int64_t D = d.head_dim;
  const int64_t tasks = static_cast<int64_t>(seqs.size()) * d.heads;
  parallel_for(tasks, saturating_product({d.q_len, d.kv_len, D}), [&](int64_t t) {
    const FlashSeq& sq = seqs[static_cast<size_t>(t / d.heads)];
    const int64_t h = t % d.heads, hk = h / c.group;
    std::vector<double> s, g, acc(static_cast<size_t>(D));
    for (int64_t i = 0; i < sq.q_len; ++i) {
      c.scores(sq, h, i, s, g);
      const double l = softmax_row(s);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < sq.kv_len; ++j) {
        const double pj = s[static_cast<size_t>(j)];
        if (pj == 0) continue;
        for (int64_t e = 0; e < D; ++e) acc[static_cast<size_t>(e)] += pj * c.v.get(sq.b, hk, sq.kv_start + j, e);
      }
      for (int64_t e = 0; e < D; ++e) set(y, sq.b, h, sq.q_start + i, e, acc[static_cast<size_t>(e)]);
      if (d.save_lse) set(lse, sq.b, h, sq.q_start + i, 0, l);
    }
  });
  return Status::ok();
}

Status flash_backward(const FlashSdpaDescriptor& d, const FlashSdpaBackwardArgs& a) {
  std::vector<FlashSeq> seqs;
  BARACUDA_RETURN_IF_ERROR(flash_sequences("FlashSdpaBackwardPlan", d, a.cu_seqlens_q, a.cu_seqlens_kv, &seqs));
  const FlashCtx c = flash_ctx(d, a.q, a.k, a.v, a.mask, a.alibi_slopes);
  const auto dy = seq4(a.dy, d.varlen);
  const auto dq = seq4(a.dq, d.varlen), dk = seq4(a.dk, d.varlen), dv = seq4(a.dv, d.varlen);
  const int64_t D = d.head_dim, G = c.group;
  const int64_t tasks = static_cast<int64_t>(seqs.size()) * d.kv_heads;
  parallel_for(tasks, saturating_product({G, d.q_len, d.kv_len, D}), [&](int64_t t) {
    const FlashSeq& sq = seqs[static_cast<size_t>(t / d.kv_heads)];
    const int64_t hk = t % d.kv_heads;
    const size_t KD = static_cast<size_t>(sq.kv_len * D);
    std::vector<double> dk_acc(KD, 0.0), dv_acc(KD, 0.0), s, g, dp, dq_acc(static_cast<size_t>(D));
    for (int64_t h = hk * G; h < (hk + 1) * G; ++h) {  // the group's query heads, in order
      for (int64_t i = 0; i < sq.q_len; ++i) {
        c.scores(sq, h, i, s, g);
        softmax_row(s);  // s now holds p
        dp.assign(static_cast<size_t>(sq.kv_len), 0.0);
        double dsum = 0;
        for (int64_t j = 0; j < sq.kv_len; ++j) {
          if (s[static_cast<size_t>(j)] == 0) continue;
          double x = 0;
          for (int64_t e = 0; e < D; ++e) x += dy.get(sq.b, h, sq.q_start + i, e) * c.v.get(sq.b, hk, sq.kv_start + j, e);
          dp[static_cast<size_t>(j)] = x;
          dsum += s[static_cast<size_t>(j)] * x;
        }
        std::fill(dq_acc.begin(), dq_acc.end(), 0.0);
        for (int64_t j = 0; j < sq.kv_len; ++j) {
          const double pj = s[static_cast<size_t>(j)];
          if (pj == 0) continue;
          const double ds = pj * (dp[static_cast<size_t>(j)] - dsum) * g[static_cast<size_t>(j)] * c.scale;
          for (int64_t e = 0; e < D; ++e) {
            const size_t je = static_cast<size_t>(j * D + e);
            dq_acc[static_cast<size_t>(e)] += ds * c.k.get(sq.b, hk, sq.kv_start + j, e);
            dk_acc[je] += ds * c.q.get(sq.b, h, sq.q_start + i, e);
            dv_acc[je] += pj * dy.get(sq.b, h, sq.q_start + i, e);
          }
        }
        for (int64_t e = 0; e < D; ++e) set(dq, sq.b, h, sq.q_start + i, e, dq_acc[static_cast<size_t>(e)]);
      }
    }
    for (int64_t j = 0; j < sq.kv_len; ++j)
      for (int64_t e = 0; e < D; ++e) {
        set(dk, sq.b, hk, sq.kv_start + j, e, dk_acc[static_cast<size_t>(j * D + e)]);
        set(dv, sq.b, hk, sq.kv_start + j, e, dv_acc[static_cast<size_t>(j * D + e)]);
      }
  });
  return Status::ok();
}

// --------------------------------------------------------------------------
// Materialized attention.
Status sdpa_forward(const SdpaDescriptor& d, const SdpaArgs& a) {
  const auto q = dense4(a.q), k = dense4(a.k), v = dense4(a.v);
  const auto y = dense4(a.y), pr = dense4(a.probs);
  View4<const void*> mask;
  if (d.has_mask) mask = dense4(a.mask);
  const int64_t G = d.heads / d.kv_heads, Dk = d.head_dim, Dv = d.head_dim_v;
  const Diagonal diag{d.causal, d.align == DiagonalAlign::BottomRight ? d.kv_len - d.q_len : 0, -1, -1};
  const double scale = *d.scale;
  parallel_for(d.batch * d.heads, saturating_product({d.q_len, d.kv_len, Dk + Dv}), [&](int64_t t) {
    const int64_t b = t / d.heads, h = t % d.heads, hk = h / G;
    std::vector<double> s(static_cast<size_t>(d.kv_len)), acc(static_cast<size_t>(Dv));
    for (int64_t i = 0; i < d.q_len; ++i) {
      for (int64_t j = 0; j < d.kv_len; ++j) {
        double x = -kInf;
        if (diag.allowed(i, j)) {
          double qk = 0;
          for (int64_t e = 0; e < Dk; ++e) qk += q.get(b, h, i, e) * k.get(b, hk, j, e);
          x = qk * scale;
          if (d.has_mask) x += mask.get(b, h, i, j);
        }
        s[static_cast<size_t>(j)] = x;
      }
      softmax_row(s);
      std::fill(acc.begin(), acc.end(), 0.0);
      for (int64_t j = 0; j < d.kv_len; ++j) {
        const double pj = s[static_cast<size_t>(j)];
        set(pr, b, h, i, j, pj);
        if (pj == 0) continue;
        for (int64_t e = 0; e < Dv; ++e) acc[static_cast<size_t>(e)] += pj * v.get(b, hk, j, e);
      }
      for (int64_t e = 0; e < Dv; ++e) set(y, b, h, i, e, acc[static_cast<size_t>(e)]);
    }
  });
  return Status::ok();
}

Status sdpa_backward(const SdpaDescriptor& d, const SdpaBackwardArgs& a) {
  const auto q = dense4(a.q), k = dense4(a.k), v = dense4(a.v), dy = dense4(a.dy), pr = dense4(a.probs);
  const auto dq = dense4(a.dq), dk = dense4(a.dk), dv = dense4(a.dv);
  const int64_t G = d.heads / d.kv_heads, Dk = d.head_dim, Dv = d.head_dim_v, K = d.kv_len;
  const double scale = *d.scale;
  parallel_for(d.batch * d.kv_heads, saturating_product({G, d.q_len, K, Dk + Dv}), [&](int64_t t) {
    const int64_t b = t / d.kv_heads, hk = t % d.kv_heads;
    std::vector<double> dk_acc(static_cast<size_t>(K * Dk), 0.0), dv_acc(static_cast<size_t>(K * Dv), 0.0);
    std::vector<double> p(static_cast<size_t>(K)), dp(static_cast<size_t>(K)), dq_acc(static_cast<size_t>(Dk));
    for (int64_t h = hk * G; h < (hk + 1) * G; ++h) {
      for (int64_t i = 0; i < d.q_len; ++i) {
        double dsum = 0;
        for (int64_t j = 0; j < K; ++j) {
          p[static_cast<size_t>(j)] = pr.get(b, h, i, j);
          double x = 0;
          for (int64_t e = 0; e < Dv; ++e) x += dy.get(b, h, i, e) * v.get(b, hk, j, e);
          dp[static_cast<size_t>(j)] = x;
          dsum += p[static_cast<size_t>(j)] * x;
        }
        std::fill(dq_acc.begin(), dq_acc.end(), 0.0);
        for (int64_t j = 0; j < K; ++j) {
          const double pj = p[static_cast<size_t>(j)];
          const double ds = pj * (dp[static_cast<size_t>(j)] - dsum) * scale;
          for (int64_t e = 0; e < Dk; ++e) {
            dq_acc[static_cast<size_t>(e)] += ds * k.get(b, hk, j, e);
            dk_acc[static_cast<size_t>(j * Dk + e)] += ds * q.get(b, h, i, e);
          }
          for (int64_t e = 0; e < Dv; ++e) dv_acc[static_cast<size_t>(j * Dv + e)] += pj * dy.get(b, h, i, e);
        }
        for (int64_t e = 0; e < Dk; ++e) set(dq, b, h, i, e, dq_acc[static_cast<size_t>(e)]);
      }
    }
    for (int64_t j = 0; j < K; ++j) {
      for (int64_t e = 0; e < Dk; ++e) set(dk, b, hk, j, e, dk_acc[static_cast<size_t>(j * Dk + e)]);
      for (int64_t e = 0; e < Dv; ++e) set(dv, b, hk, j, e, dv_acc[static_cast<size_t>(j * Dv + e)]);
    }
  });
  return Status::ok();
}

}  // namespace baracuda::attention::ref
