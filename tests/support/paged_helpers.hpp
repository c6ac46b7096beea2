// Paged-KV test problems (tests/attention_paged/): a random page pool, a
// shuffled, non-contiguous block table (unused entries hold garbage that must
// never be read), seq_lens, q / out views in [B,H,L,D] or [B,L,H,D] storage, and
// a DENSE model in double: the keys / values of every sequence are gathered
// into a dense [Hkv, n, D] array first (through the table the helper built),
// then plain attention with bottom-right causal alignment.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numeric>
#include <vector>

#include "baracuda/ops/attention_paged.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

struct PagedSpec {
  DType t = DType::F32;
  int64_t B = 2, Hq = 4, Hkv = 2, Lq = 1, D = 32, P = 16, max_pages = 4, extra_pages = 3;
  bool causal = true;
  double softcap = 0;
  bool save_lse = true;
  bool bshd = false;                 // q / out in [B, L, H, D] storage
  std::vector<int64_t> lens;         // seq_lens; empty: random in [Lq, max_pages * P]
};

struct PagedProblem {
  PagedSpec s;
  baracuda::PagedAttentionDescriptor desc;
  Layout Lq_, Lpages, Ltable, Llens, Llse;
  HostBuffer q, kp, vp, table, lens, out, lse;
  std::vector<std::vector<double>> kd, vd;  // per sequence: dense [Hkv][n][D]

  std::vector<int64_t> len_vec() const { return all_values_i64(lens); }
  baracuda::PagedAttentionArgs args() {
    baracuda::PagedAttentionArgs a;
    a.q = view(q, Lq_);
    a.k_pages = view(kp, Lpages);
    a.v_pages = view(vp, Lpages);
    a.block_table = view(table, Ltable);
    a.seq_lens = view(lens, Llens);
    a.out = view_mut(out, Lq_);
    if (s.save_lse) a.lse = view_mut(lse, Llse);
    return a;
  }
};

inline Layout qo_layout(const PagedSpec& s) {
  const Dims d{s.B, s.Hq, s.Lq, s.D};
  return s.bshd ? permuted(d, {0, 2, 1, 3}) : contiguous(d);
}

inline PagedProblem make_paged(const PagedSpec& s, Rng& rng) {
  PagedProblem p;
  p.s = s;
  std::vector<int64_t> lens = s.lens;
  if (lens.empty())
    for (int64_t b = 0; b < s.B; ++b) lens.push_back(uniform_int(rng, s.Lq, s.max_pages * s.P));
  int64_t used = 0;
  for (int64_t n : lens) used += (n + s.P - 1) / s.P;
  const int64_t num_pages = used + s.extra_pages;
  auto& d = p.desc;
  d.dtype = s.t;
  d.batch = s.B;
  d.heads = s.Hq;
  d.kv_heads = s.Hkv;
  d.q_len = s.Lq;
  d.head_dim = s.D;
  d.num_pages = num_pages;
  d.page_size = s.P;
  d.max_pages = s.max_pages;
  d.causal = s.causal;
  d.softcap = s.softcap;
  d.save_lse = s.save_lse;

  p.Lq_ = qo_layout(s);
  p.Lpages = contiguous({num_pages, s.P, s.Hkv, s.D});
  p.Ltable = contiguous({s.B, s.max_pages});
  p.Llens = contiguous({s.B});
  p.Llse = contiguous({s.B, s.Hq, s.Lq});
  p.q = HostBuffer(s.t, p.Lq_.storage);
  scatter(p.q, p.Lq_, random_values(s.t, p.Lq_.numel(), rng, -1.0, 1.0));
  p.kp = host_from(s.t, random_values(s.t, p.Lpages.numel(), rng, -1.0, 1.0));
  p.vp = host_from(s.t, random_values(s.t, p.Lpages.numel(), rng, -1.0, 1.0));
  p.out = HostBuffer(s.t, p.Lq_.storage);
  p.out.poison();
  p.lse = HostBuffer(DType::F32, p.Llse.storage);
  p.lse.poison();
  p.lens = host_from_i64(DType::I32, lens);

  // Shuffled pages: sequence blocks get a random permutation of the pool.
  std::vector<int64_t> perm(static_cast<size_t>(num_pages));
  std::iota(perm.begin(), perm.end(), int64_t{0});
  std::shuffle(perm.begin(), perm.end(), rng);
  std::vector<int64_t> tab(static_cast<size_t>(s.B * s.max_pages));
  size_t next = 0;
  const int64_t garbage[] = {-1, num_pages, std::numeric_limits<int32_t>::max(), std::numeric_limits<int32_t>::min()};
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t pg = 0; pg < s.max_pages; ++pg)
      tab[static_cast<size_t>(b * s.max_pages + pg)] =
          pg < (lens[static_cast<size_t>(b)] + s.P - 1) / s.P ? perm[next++] : garbage[(b + pg) % 4];
  p.table = host_from_i64(DType::I32, tab);

  // Dense gather.
  for (int64_t b = 0; b < s.B; ++b) {
    const int64_t n = lens[static_cast<size_t>(b)];
    std::vector<double> kd(static_cast<size_t>(s.Hkv * n * s.D)), vd(kd.size());
    for (int64_t j = 0; j < n; ++j) {
      const int64_t pg = tab[static_cast<size_t>(b * s.max_pages + j / s.P)], slot = j % s.P;
      for (int64_t h = 0; h < s.Hkv; ++h)
        for (int64_t e = 0; e < s.D; ++e) {
          const int64_t src = ((pg * s.P + slot) * s.Hkv + h) * s.D + e;
          kd[static_cast<size_t>((h * n + j) * s.D + e)] = p.kp.get(src);
          vd[static_cast<size_t>((h * n + j) * s.D + e)] = p.vp.get(src);
        }
    }
    p.kd.push_back(std::move(kd));
    p.vd.push_back(std::move(vd));
  }
  return p;
}

// Dense model: out [B,Hq,Lq,D] and lse [B,Hq,Lq] (row-major logical values).
inline void paged_model(const PagedProblem& p, double scale, std::vector<double>* out, std::vector<double>* lse) {
  const PagedSpec& s = p.s;
  const std::vector<double> qv = gather(p.q, p.Lq_);
  const std::vector<int64_t> lens = all_values_i64(p.lens);
  out->assign(static_cast<size_t>(s.B * s.Hq * s.Lq * s.D), 0.0);
  lse->assign(static_cast<size_t>(s.B * s.Hq * s.Lq), -std::numeric_limits<double>::infinity());
  const int64_t G = s.Hq / s.Hkv;
  for (int64_t b = 0; b < s.B; ++b) {
    const int64_t n = lens[static_cast<size_t>(b)];
    const auto& K = p.kd[static_cast<size_t>(b)];
    const auto& V = p.vd[static_cast<size_t>(b)];
    for (int64_t h = 0; h < s.Hq; ++h)
      for (int64_t i = 0; i < s.Lq; ++i) {
        const int64_t kh = h / G, pos = n - s.Lq + i;
        std::vector<double> sc;
        for (int64_t j = 0; j < n; ++j) {
          if (s.causal && j > pos) break;
          double dot = 0;
          for (int64_t e = 0; e < s.D; ++e)
            dot += qv[static_cast<size_t>(((b * s.Hq + h) * s.Lq + i) * s.D + e)] * K[static_cast<size_t>((kh * n + j) * s.D + e)];
          double x = dot * scale;
          if (s.softcap > 0) x = s.softcap * std::tanh(x / s.softcap);
          sc.push_back(x);
        }
        if (sc.empty()) continue;
        const double m = *std::max_element(sc.begin(), sc.end());
        double l = 0;
        for (double& x : sc) l += (x = std::exp(x - m));
        const size_t row = static_cast<size_t>((b * s.Hq + h) * s.Lq + i);
        (*lse)[row] = m + std::log(l);
        for (size_t j = 0; j < sc.size(); ++j)
          for (int64_t e = 0; e < s.D; ++e)
            (*out)[row * static_cast<size_t>(s.D) + static_cast<size_t>(e)] +=
                sc[j] / l * V[static_cast<size_t>((kh * n + static_cast<int64_t>(j)) * s.D + e)];
      }
  }
}

}  // namespace bt
