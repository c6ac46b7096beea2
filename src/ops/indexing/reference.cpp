// CPU reference embedding forward / backward (see reference.hpp).
#include "ops/indexing/reference.hpp"

#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"

namespace baracuda::indexing::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;
using baracuda::detail::store_i;

namespace {

// Element offsets, per position of the row-major flattened index shape, of
// the index and of the first element of its row in a [S..., D] tensor.
struct Positions {
  std::vector<int64_t> idx, row;
};

Positions positions(const Dims& shape, const Dims& idx_strides, const Dims& row_strides) {
  const int64_t n = shape_numel(shape);
  Positions p;
  p.idx.resize(static_cast<size_t>(n));
  p.row.resize(static_cast<size_t>(n));
  for (int64_t pos = 0; pos < n; ++pos) {
    int64_t rest = pos, oi = 0, orow = 0;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const int64_t c = rest % shape[d];
      rest /= shape[d];
      oi += c * idx_strides[d];
      orow += c * row_strides[d];
    }
    p.idx[static_cast<size_t>(pos)] = oi;
    p.row[static_cast<size_t>(pos)] = orow;
  }
  return p;
}

Dims coordinates(const Dims& shape, int64_t pos) {
  Dims c = Dims::of_rank(shape.rank);
  for (int d = shape.rank - 1; d >= 0; --d) {
    c[d] = pos % shape[d];
    pos /= shape[d];
  }
  return c;
}

// Reads every index; the first one outside [0, V) is an error.
Status read_indices(const char* plan, const EmbeddingDescriptor& d, const TensorRef& indices, const Positions& at,
                    std::vector<int64_t>* out) {
  out->resize(at.idx.size());
  for (size_t pos = 0; pos < at.idx.size(); ++pos) {
    const int64_t v = load_i(indices.data, d.index_dtype, at.idx[pos]);
    if (v < 0 || v >= d.num_embeddings)
      return baracuda::detail::invalid(plan, "indices element ", coordinates(d.index_shape, static_cast<int64_t>(pos)),
                                       " (position ", pos, ") is ", v, ", outside [0, ", d.num_embeddings,
                                       ") (num_embeddings; the first bad index)");
    (*out)[pos] = v;
  }
  return Status::ok();
}

// The row-stride part of a [S..., D] view's strides.
Dims row_strides(const Dims& strides, int rank) {
  Dims s = Dims::of_rank(rank);
  for (int i = 0; i < rank; ++i) s[i] = strides[i];
  return s;
}

template <class Acc>
Status backward_typed(const char* plan, const EmbeddingBackwardDescriptor& bd, const EmbeddingBackwardArgs& a) {
  const EmbeddingDescriptor& d = bd.forward;
  const int r = d.index_shape.rank;
  const int64_t D = d.embedding_dim;
  const Positions at = positions(d.index_shape, a.indices.strides, row_strides(a.dout.strides, r));
  std::vector<int64_t> idx;
  BARACUDA_RETURN_IF_ERROR(read_indices(plan, d, a.indices, at, &idx));
  // (row, position) pairs of the contributing indices, stably sorted by row:
  // each row's run keeps position order.
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (size_t pos = 0; pos < idx.size(); ++pos)
    if (!(d.has_padding_idx && idx[pos] == d.padding_idx)) pairs.push_back({idx[pos], static_cast<int64_t>(pos)});
  std::stable_sort(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) { return x.first < y.first; });

  const bool dense = bd.layout == EmbeddingGradLayout::Dense;
  const TensorMut& g = dense ? a.dweight : a.dweight_compact;
  const int64_t gr = g.strides[0], gc = g.strides[1], dc = a.dout.strides[r];
  if (dense)
    for (int64_t v = 0; v < d.num_embeddings; ++v)
      for (int64_t j = 0; j < D; ++j) store_f(g.data, bd.grad_dtype, v * gr + j * gc, 0.0);
  std::vector<Acc> acc(pairs.empty() ? 0 : static_cast<size_t>(D));
  int64_t runs = 0;
  for (size_t b = 0; b < pairs.size();) {
    size_t e = b;
    while (e < pairs.size() && pairs[e].first == pairs[b].first) ++e;
    std::fill(acc.begin(), acc.end(), Acc(0));
    for (size_t k = b; k < e; ++k) {
      const int64_t o = at.row[static_cast<size_t>(pairs[k].second)];
      for (int64_t j = 0; j < D; ++j) acc[static_cast<size_t>(j)] += static_cast<Acc>(load_f(a.dout.data, d.dtype, o + j * dc));
    }
    const int64_t out_row = dense ? pairs[b].first : runs;
    for (int64_t j = 0; j < D; ++j)
      store_f(g.data, bd.grad_dtype, out_row * gr + j * gc, static_cast<double>(acc[static_cast<size_t>(j)]));
    if (!dense) store_i(a.unique_rows.data, d.index_dtype, runs * a.unique_rows.strides[0], pairs[b].first);
    ++runs;
    b = e;
  }
  if (!dense) {  // entries from count on: row -1, zero gradient (every element written)
    store_i(a.count.data, DType::I64, 0, runs);
    for (int64_t k = runs; k < static_cast<int64_t>(idx.size()); ++k) {
      store_i(a.unique_rows.data, d.index_dtype, k * a.unique_rows.strides[0], -1);
      for (int64_t j = 0; j < D; ++j) store_f(g.data, bd.grad_dtype, k * gr + j * gc, 0.0);
    }
  }
  return Status::ok();
}

}  // namespace

Status embedding_forward(const char* plan, const EmbeddingDescriptor& d, const EmbeddingArgs& a) {
  const int r = d.index_shape.rank;
  const Positions at = positions(d.index_shape, a.indices.strides, row_strides(a.out.strides, r));
  std::vector<int64_t> idx;
  BARACUDA_RETURN_IF_ERROR(read_indices(plan, d, a.indices, at, &idx));
  const int64_t wr = a.weight.strides[0], wc = a.weight.strides[1], oc = a.out.strides[r];
  for (size_t pos = 0; pos < idx.size(); ++pos)
    for (int64_t j = 0; j < d.embedding_dim; ++j)
      store_f(a.out.data, d.dtype, at.row[pos] + j * oc, load_f(a.weight.data, d.dtype, idx[pos] * wr + j * wc));
  return Status::ok();
}

Status embedding_backward(const char* plan, const EmbeddingBackwardDescriptor& d, const EmbeddingBackwardArgs& a) {
  return d.forward.dtype == DType::F64 ? backward_typed<double>(plan, d, a) : backward_typed<float>(plan, d, a);
}

}  // namespace baracuda::indexing::ref
