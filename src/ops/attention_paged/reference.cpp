// CPU reference of the paged-KV plans. Both first check every index they will
// use (seq_lens, then the block-table entries of the pages each sequence
// touches), so an error leaves the outputs untouched; then plain loops with
// double accumulation (attention: two passes per query row, max then
// exp-sum and P.V, recomputing the scores).
#include "ops/attention_paged/reference.hpp"

#include <cmath>
#include <limits>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"

namespace baracuda::attention_paged::ref {

using baracuda::detail::invalid;
using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;

namespace {

int64_t len_of(const TensorRef& lens, int64_t b) { return load_i(lens.data, DType::I32, b * lens.strides[0]); }
int64_t page_of(const TensorRef& t, int64_t b, int64_t p) {
  return load_i(t.data, DType::I32, b * t.strides[0] + p * t.strides[1]);
}

// Pages [first_page, last_page) of sequence b must be in [0, num_pages).
Status check_pages(const char* plan, const TensorRef& table, int64_t b, int64_t first, int64_t last, int64_t num_pages) {
  for (int64_t p = first; p < last; ++p) {
    const int64_t pg = page_of(table, b, p);
    if (pg < 0 || pg >= num_pages)
      return invalid(plan, "block_table[", b, ", ", p, "] = ", pg, " is outside [0, num_pages = ", num_pages, ")");
  }
  return Status::ok();
}

}  // namespace

Status attention(const char* plan, const PagedAttentionDescriptor& d, const PagedAttentionArgs& a) {
  const int64_t B = d.batch, Hq = d.heads, Hkv = d.kv_heads, Lq = d.q_len, D = d.head_dim, P = d.page_size;
  const int64_t cap = d.max_pages * P;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = len_of(a.seq_lens, b);
    if (n > cap) return invalid(plan, "seq_lens[", b, "] = ", n, " exceeds max_pages * page_size = ", cap);
    if (n < Lq) return invalid(plan, "seq_lens[", b, "] = ", n, " is less than q_len ", Lq, " (it counts the new queries' keys)");
    BARACUDA_RETURN_IF_ERROR(check_pages(plan, a.block_table, b, 0, (n + P - 1) / P, d.num_pages));
  }
  if (B == 0 || Hq == 0 || Lq == 0) return Status::ok();
  const int64_t G = Hq / Hkv;
  const double scale = *d.scale;
  const auto& q = a.q;
  const auto& k = a.k_pages;
  const auto& v = a.v_pages;
  const auto& o = a.out;
  const auto& lse = a.lse;
  const double kNegInf = -std::numeric_limits<double>::infinity();
  std::vector<double> acc(static_cast<size_t>(D));
  auto score = [&](int64_t b, int64_t h, int64_t i, int64_t kh, int64_t j) {
    const int64_t pg = page_of(a.block_table, b, j / P), slot = j % P;
    double dot = 0;
    for (int64_t e = 0; e < D; ++e)
      dot += load_f(q.data, q.dtype, b * q.strides[0] + h * q.strides[1] + i * q.strides[2] + e * q.strides[3]) *
             load_f(k.data, k.dtype, pg * k.strides[0] + slot * k.strides[1] + kh * k.strides[2] + e * k.strides[3]);
    double sc = dot * scale;
    if (d.softcap > 0) sc = d.softcap * std::tanh(sc / d.softcap);
    return sc;
  };
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = len_of(a.seq_lens, b);
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kh = h / G;
      for (int64_t i = 0; i < Lq; ++i) {
        const int64_t pos = n - Lq + i;
        const int64_t hi = d.causal ? std::min(n, pos + 1) : n;  // keys [0, hi)
        // Two passes (the scores are recomputed rather than stored: no
        // allocation that grows with seq_lens).
        double m = kNegInf;
        for (int64_t j = 0; j < hi; ++j) m = std::max(m, score(b, h, i, kh, j));
        std::fill(acc.begin(), acc.end(), 0.0);
        double l = 0;
        if (hi > 0 && m != kNegInf) {
          for (int64_t j = 0; j < hi; ++j) {
            const double p = std::exp(score(b, h, i, kh, j) - m);
            l += p;
            const int64_t pg = page_of(a.block_table, b, j / P), slot = j % P;
            for (int64_t e = 0; e < D; ++e)
              acc[static_cast<size_t>(e)] +=
                  p * load_f(v.data, v.dtype, pg * v.strides[0] + slot * v.strides[1] + kh * v.strides[2] + e * v.strides[3]);
          }
        }
        for (int64_t e = 0; e < D; ++e)
          store_f(o.data, o.dtype, b * o.strides[0] + h * o.strides[1] + i * o.strides[2] + e * o.strides[3],
                  l > 0 ? acc[static_cast<size_t>(e)] / l : 0.0);
        if (d.save_lse)
          store_f(lse.data, DType::F32, b * lse.strides[0] + h * lse.strides[1] + i * lse.strides[2],
                  l > 0 ? m + std::log(l) : kNegInf);
      }
    }
  }
  return Status::ok();
}

Status append(const char* plan, const PagedKvAppendDescriptor& d, const PagedKvAppendArgs& a) {
  const int64_t B = d.batch, Hkv = d.kv_heads, L = d.new_len, D = d.head_dim, P = d.page_size;
  const int64_t cap = d.max_pages * P;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = len_of(a.seq_lens, b);
    if (n < 0) return invalid(plan, "seq_lens[", b, "] = ", n, " is negative");
    if (n + L > cap)
      return invalid(plan, "seq_lens[", b, "] + new_len = ", n + L, " exceeds max_pages * page_size = ", cap);
    if (L > 0) BARACUDA_RETURN_IF_ERROR(check_pages(plan, a.block_table, b, n / P, (n + L + P - 1) / P, d.num_pages));
  }
  for (int64_t b = 0; b < B; ++b) {
    const int64_t n = len_of(a.seq_lens, b);
    for (int64_t i = 0; i < L; ++i) {
      const int64_t j = n + i, pg = page_of(a.block_table, b, j / P), slot = j % P;
      for (int64_t h = 0; h < Hkv; ++h)
        for (int64_t e = 0; e < D; ++e) {
          const int64_t src_k = b * a.k_new.strides[0] + h * a.k_new.strides[1] + i * a.k_new.strides[2] + e * a.k_new.strides[3];
          const int64_t src_v = b * a.v_new.strides[0] + h * a.v_new.strides[1] + i * a.v_new.strides[2] + e * a.v_new.strides[3];
          const auto& K = a.k_pages;
          const auto& V = a.v_pages;
          store_f(K.data, K.dtype, pg * K.strides[0] + slot * K.strides[1] + h * K.strides[2] + e * K.strides[3],
                  load_f(a.k_new.data, a.k_new.dtype, src_k));
          store_f(V.data, V.dtype, pg * V.strides[0] + slot * V.strides[1] + h * V.strides[2] + e * V.strides[3],
                  load_f(a.v_new.data, a.v_new.dtype, src_v));
        }
    }
  }
  return Status::ok();
}

}  // namespace baracuda::attention_paged::ref
