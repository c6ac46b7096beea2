// Embedding test helpers shared by tests/indexing/cpu_embedding.cpp and
// cuda_embedding.cpp: random problems, the naive model (a direct loop over
// positions: no sort, no runs) and runners that upload logical values into
// any layouts on any device, run a plan and read the outputs back.
#pragma once

#include <cstdint>
#include <cstring>
#include <map>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/tensor_utils.hpp"

namespace bt {

using baracuda::EmbeddingBackwardDescriptor;
using baracuda::EmbeddingDescriptor;
using baracuda::EmbeddingGradLayout;

struct EmbData {
  std::vector<double> weight;  // [V, D] row-major logical values
  std::vector<int64_t> idx;    // n, row-major over index_shape
  std::vector<double> dout;    // [n, D]
};

inline int64_t emb_pad(const EmbeddingDescriptor& d) {
  if (!d.has_padding_idx) return -1;
  return d.padding_idx < 0 ? d.padding_idx + d.num_embeddings : d.padding_idx;
}

// Indices uniform in [0, V); with `hot` > 0, half of them fall on the first
// `hot` rows (many duplicates).
inline EmbData emb_random(const EmbeddingDescriptor& d, Rng& rng, int64_t hot = 0) {
  EmbData e;
  const int64_t n = numel(d.index_shape), V = d.num_embeddings, D = d.embedding_dim;
  e.weight = random_values(d.dtype, V * D, rng);
  e.dout = random_values(d.dtype, n * D, rng);
  e.idx.resize(static_cast<size_t>(n));
  for (auto& v : e.idx) {
    if (V == 0) v = 0;
    else if (hot > 0 && uniform_int(rng, 0, 1) == 0) v = uniform_int(rng, 0, std::min(hot, V) - 1);
    else v = uniform_int(rng, 0, V - 1);
  }
  return e;
}

inline std::vector<double> emb_naive_forward(const EmbeddingDescriptor& d, const EmbData& e) {
  const int64_t D = d.embedding_dim;
  std::vector<double> out(e.idx.size() * static_cast<size_t>(D));
  for (size_t p = 0; p < e.idx.size(); ++p)
    for (int64_t j = 0; j < D; ++j)
      out[p * static_cast<size_t>(D) + static_cast<size_t>(j)] = e.weight[static_cast<size_t>(e.idx[p] * D + j)];
  return out;
}

// Dense gradient, every row summed in position order in Acc and rounded once
// to grad_dtype (Acc = double: the exact-ish model for tolerance checks).
template <class Acc>
std::vector<double> emb_naive_backward(const EmbeddingBackwardDescriptor& bd, const EmbData& e) {
  const EmbeddingDescriptor& d = bd.forward;
  const int64_t V = d.num_embeddings, D = d.embedding_dim, pad = emb_pad(d);
  std::vector<Acc> acc(static_cast<size_t>(V * D), Acc(0));
  for (size_t p = 0; p < e.idx.size(); ++p) {
    if (e.idx[p] == pad) continue;
    for (int64_t j = 0; j < D; ++j)
      acc[static_cast<size_t>(e.idx[p] * D + j)] += static_cast<Acc>(e.dout[p * static_cast<size_t>(D) + static_cast<size_t>(j)]);
  }
  std::vector<double> g(acc.size());
  for (size_t i = 0; i < g.size(); ++i) g[i] = round_to(bd.grad_dtype, static_cast<double>(acc[i]));
  return g;
}

// The rows the compact layout lists: distinct indices other than padding_idx, ascending.
inline std::vector<int64_t> emb_unique_rows(const EmbeddingDescriptor& d, const EmbData& e) {
  std::map<int64_t, bool> seen;
  for (int64_t v : e.idx)
    if (v != emb_pad(d)) seen[v] = true;
  std::vector<int64_t> r;
  for (const auto& [v, _] : seen) r.push_back(v);
  return r;
}

// ---- layouts and runners ---------------------------------------------------------------
struct EmbLayouts {
  Layout weight;   // [V, D] (forward)
  Layout indices;  // index_shape
  Layout rows;     // out (forward) / dout (backward): index_shape + [D]
  Layout grad;     // dweight [V, D] or dweight_compact [n, D]
  Layout unique;   // unique_rows [n]
};

inline baracuda::Dims emb_rows_shape(const EmbeddingDescriptor& d) {
  baracuda::Dims s = d.index_shape;
  s.push_back(d.embedding_dim);
  return s;
}

inline EmbLayouts emb_contiguous(const EmbeddingBackwardDescriptor& bd) {
  const EmbeddingDescriptor& d = bd.forward;
  const int64_t n = numel(d.index_shape);
  EmbLayouts L;
  L.weight = contiguous({d.num_embeddings, d.embedding_dim});
  L.indices = contiguous(d.index_shape);
  L.rows = contiguous(emb_rows_shape(d));
  L.grad = bd.layout == EmbeddingGradLayout::Compact ? contiguous({n, d.embedding_dim})
                                                     : contiguous({d.num_embeddings, d.embedding_dim});
  L.unique = contiguous({n});
  return L;
}

// A device buffer holding layout L's storage, logical values written in.
struct EmbTensor {
  Layout L;
  baracuda::DType t;
  baracuda::Buffer buf;
  EmbTensor(baracuda::Device dev, baracuda::DType dtype, const Layout& layout, const std::vector<double>* fp,
            const std::vector<int64_t>* ints, uint8_t fill = 0)
      : L(layout), t(dtype), buf(dev, static_cast<size_t>(std::max<int64_t>(layout.storage, 1)) * baracuda::dtype_size(dtype)) {
    HostBuffer h(dtype, std::max<int64_t>(layout.storage, 1));
    h.fill_bytes(fill);
    for (int64_t i = 0; i < L.numel(); ++i) {
      if (fp) h.set(L.offset_of(i), (*fp)[static_cast<size_t>(i)]);
      if (ints) h.set_i(L.offset_of(i), (*ints)[static_cast<size_t>(i)]);
    }
    (void)buf.copy_from_host(h.data(), buf.bytes());
  }
  baracuda::TensorRef ref() const { return view(buf, t, L); }
  baracuda::TensorMut mut() { return view_mut(buf, t, L); }
  HostBuffer host() const {
    HostBuffer h(t, std::max<int64_t>(L.storage, 1));
    (void)buf.copy_to_host(h.data(), buf.bytes());
    return h;
  }
  std::vector<double> values() const { return gather(host(), L); }
  std::vector<int64_t> ints() const { return gather_i64(host(), L); }
  std::vector<uint8_t> raw() const { return host().raw(); }
};

struct EmbFwdResult {
  baracuda::Status st, check;
  std::vector<double> out;
  std::vector<uint8_t> raw;  // the whole out storage (gaps included)
};

inline EmbFwdResult emb_forward(const baracuda::Stream& s, const EmbeddingDescriptor& d, const EmbData& e,
                                const EmbLayouts& L, uint8_t poison = 0xff) {
  EmbFwdResult r;
  auto plan = baracuda::EmbeddingPlan::select(s, d);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  EmbTensor w(dev, d.dtype, L.weight, &e.weight, nullptr), ix(dev, d.index_dtype, L.indices, nullptr, &e.idx);
  EmbTensor out(dev, d.dtype, L.rows, nullptr, nullptr, poison);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  r.st = plan->run(s, W, {w.ref(), ix.ref(), out.mut()});
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  r.out = out.values();
  r.raw = out.raw();
  return r;
}

struct EmbBwdResult {
  baracuda::Status st, check;
  std::vector<double> grad;     // dense: [V, D]; compact: the first count rows
  std::vector<int64_t> unique;  // compact: the first count entries
  int64_t count = -1;
  std::vector<uint8_t> raw;     // the gradient's whole storage
  std::vector<double> grad_all;     // compact: all n rows (past count: zeros)
  std::vector<int64_t> unique_all;  // compact: all n entries (past count: -1)
};

inline EmbBwdResult emb_backward(const baracuda::Stream& s, const EmbeddingBackwardDescriptor& bd, const EmbData& e,
                                 const EmbLayouts& L, uint8_t poison = 0xff) {
  EmbBwdResult r;
  const EmbeddingDescriptor& d = bd.forward;
  auto plan = baracuda::EmbeddingBackwardPlan::select(s, bd);
  if (!plan) {
    r.st = plan.status();
    return r;
  }
  const baracuda::Device dev = s.device();
  const bool compact = bd.layout == EmbeddingGradLayout::Compact;
  EmbTensor ix(dev, d.index_dtype, L.indices, nullptr, &e.idx), dout(dev, d.dtype, L.rows, &e.dout, nullptr);
  EmbTensor grad(dev, bd.grad_dtype, L.grad, nullptr, nullptr, poison);
  EmbTensor uniq(dev, d.index_dtype, L.unique, nullptr, nullptr, 0x7f);
  EmbTensor count(dev, baracuda::DType::I64, contiguous({}), nullptr, nullptr, 0x7f);
  baracuda::Buffer ws(dev, std::max<size_t>(plan->workspace_size(), 1));
  const baracuda::Workspace W(ws.data(), plan->workspace_size());
  baracuda::EmbeddingBackwardArgs a;
  a.indices = ix.ref();
  a.dout = dout.ref();
  if (compact) {
    a.dweight_compact = grad.mut();
    a.unique_rows = uniq.mut();
    a.count = count.mut();
  } else {
    a.dweight = grad.mut();
  }
  r.st = plan->run(s, W, a);
  if (r.st.is_ok()) r.st = baracuda::synchronize(s);
  if (r.st.is_ok()) r.check = plan->check_indices(s, W);
  r.raw = grad.raw();
  const std::vector<double> g = grad.values();
  if (!compact) {
    r.grad = g;
    return r;
  }
  r.count = count.ints()[0];
  const std::vector<int64_t> u = uniq.ints();
  r.grad_all = g;
  r.unique_all = u;
  if (r.count < 0 || r.count > static_cast<int64_t>(u.size())) return r;
  r.unique.assign(u.begin(), u.begin() + r.count);
  r.grad.assign(g.begin(), g.begin() + r.count * d.embedding_dim);
  return r;
}

}  // namespace bt
