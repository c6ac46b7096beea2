// CPU reference gather / scatter (see gather_scatter_reference.hpp).
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/indexing/gather_scatter_reference.hpp"
#include "ops/indexing/scatter_combine.hpp"

namespace baracuda::indexing::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;

namespace {

// Coordinates of position p of the row-major flattened `shape`.
void coords_of(const Dims& shape, int64_t p, int64_t* c) {
  for (int d = shape.rank - 1; d >= 0; --d) {
    c[d] = p % shape[d];
    p /= shape[d];
  }
}

int64_t offset(const int64_t* c, const Dims& strides, int rank) {
  int64_t o = 0;
  for (int d = 0; d < rank; ++d) o += c[d] * strides[d];
  return o;
}

Dims coords_dims(const int64_t* c, int rank) {
  Dims r = Dims::of_rank(rank);
  for (int d = 0; d < rank; ++d) r[d] = c[d];
  return r;
}

// Every index value, in position order; the first outside [0, size) is an error.
Status read_indices(const char* plan, DType index_dtype, const Dims& shape, const TensorRef& index, int dim,
                    int64_t size, std::vector<int64_t>* out) {
  const int64_t n = shape_numel(shape);
  out->resize(static_cast<size_t>(n));
  int64_t c[kMaxRank] = {};
  for (int64_t p = 0; p < n; ++p) {
    coords_of(shape, p, c);
    const int64_t v = load_i(index.data, index_dtype, offset(c, index.strides, shape.rank));
    if (v < 0 || v >= size)
      return baracuda::detail::invalid(plan, "index element ", coords_dims(c, shape.rank), " (position ", p, ") is ", v,
                                       ", outside [0, ", size, ") (the size of dim ", dim, "; the first bad index)");
    (*out)[static_cast<size_t>(p)] = v;
  }
  return Status::ok();
}

template <class Acc>
void scatter_typed(const ScatterDescriptor& d, const ScatterArgs& a, const std::vector<int64_t>& idx) {
  const int r = d.self_shape.rank;
  const int64_t m = shape_numel(d.self_shape), n = shape_numel(d.index_shape);
  const bool in_place = a.out.data == a.self.data;
  int64_t c[kMaxRank] = {};
  // Each destination's contributing positions, in position order.
  std::vector<std::vector<int64_t>> runs(static_cast<size_t>(m));
  for (int64_t p = 0; p < n; ++p) {
    coords_of(d.index_shape, p, c);
    c[d.dim] = idx[static_cast<size_t>(p)];
    int64_t lin = 0;
    for (int k = 0; k < r; ++k) lin = lin * d.self_shape[k] + c[k];
    runs[static_cast<size_t>(lin)].push_back(p);
  }
  const int reduce = static_cast<int>(d.reduce);
  for (int64_t q = 0; q < m; ++q) {
    coords_of(d.self_shape, q, c);
    const int64_t so = offset(c, a.self.strides, r), oo = offset(c, a.out.strides, r);
    const std::vector<int64_t>& run = runs[static_cast<size_t>(q)];
    if (run.empty()) {
      if (!in_place) store_f(a.out.data, d.dtype, oo, load_f(a.self.data, d.dtype, so));
      continue;
    }
    auto contribution = [&](int64_t p) -> Acc {
      if (d.use_value) return static_cast<Acc>(d.value);
      int64_t cc[kMaxRank] = {};
      coords_of(d.index_shape, p, cc);
      return static_cast<Acc>(load_f(a.src.data, d.dtype, offset(cc, a.src.strides, r)));
    };
    Acc acc;
    long long count = 0;
    size_t k = 0;
    if (d.reduce == ScatterReduce::None) {
      acc = contribution(run.back());
    } else {
      if (d.include_self) {
        acc = static_cast<Acc>(load_f(a.self.data, d.dtype, so));
        count = 1;
      } else {
        acc = contribution(run[0]);
        count = 1;
        k = 1;
      }
      for (; k < run.size(); ++k, ++count) acc = detail::scatter_combine<Acc>(reduce, acc, contribution(run[k]));
      acc = detail::scatter_finish<Acc>(reduce, acc, count);
    }
    store_f(a.out.data, d.dtype, oo, static_cast<double>(acc));
  }
}

}  // namespace

Status gather(const char* plan, const GatherDescriptor& d, const GatherArgs& a) {
  std::vector<int64_t> idx;
  BARACUDA_RETURN_IF_ERROR(
      read_indices(plan, d.index_dtype, d.index_shape, a.index, static_cast<int>(d.dim), d.x_shape[d.dim], &idx));
  const int r = d.index_shape.rank;
  const size_t es = dtype_size(d.dtype);
  const auto* x = static_cast<const char*>(a.x.data);
  auto* out = static_cast<char*>(a.out.data);
  int64_t c[kMaxRank] = {};
  for (int64_t p = 0; p < static_cast<int64_t>(idx.size()); ++p) {
    coords_of(d.index_shape, p, c);
    const int64_t oo = offset(c, a.out.strides, r);
    c[d.dim] = idx[static_cast<size_t>(p)];
    std::memcpy(out + oo * static_cast<int64_t>(es), x + offset(c, a.x.strides, r) * static_cast<int64_t>(es), es);
  }
  return Status::ok();
}

Status scatter(const char* plan, const ScatterDescriptor& d, const ScatterArgs& a) {
  std::vector<int64_t> idx;
  BARACUDA_RETURN_IF_ERROR(read_indices(plan, d.index_dtype, d.index_shape, a.index, static_cast<int>(d.dim),
                                        d.self_shape[d.dim], &idx));
  if (d.dtype == DType::F64) scatter_typed<double>(d, a, idx);
  else scatter_typed<float>(d, a, idx);
  return Status::ok();
}

}  // namespace baracuda::indexing::ref
