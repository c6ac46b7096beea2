// CPU reference gather / scatter (see gather_scatter_reference.hpp).
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/indexing/gather_scatter_reference.hpp"
#include "ops/indexing/scatter_combine.hpp"

namespace baracuda::indexing::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;
using baracuda::detail::store_i;

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

// Acc: float (f16 / bf16 / f32), double (f64) or int64_t (the integer dtypes,
// T their storage type: wrapping arithmetic, mean floored, scatter_combine.hpp).
template <class Acc, class T = void>
void scatter_typed(const ScatterDescriptor& d, const ScatterArgs& a, const std::vector<int64_t>& idx) {
  constexpr bool kInt = std::is_integral_v<Acc>;
  const int r = d.self_shape.rank;
  const int64_t m = shape_numel(d.self_shape), n = shape_numel(d.index_shape);
  const bool in_place = a.out.data == a.self.data;
  auto load = [&](const void* base, int64_t off) -> Acc {
    if constexpr (kInt) return load_i(base, d.dtype, off);
    else return static_cast<Acc>(load_f(base, d.dtype, off));
  };
  auto store = [&](int64_t off, Acc v) {
    if constexpr (kInt) store_i(a.out.data, d.dtype, off, v);
    else store_f(a.out.data, d.dtype, off, static_cast<double>(v));
  };
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
      if (!in_place) store(oo, load(a.self.data, so));
      continue;
    }
    auto contribution = [&](int64_t p) -> Acc {
      if (d.use_value) return static_cast<Acc>(d.value);  // integers: select() truncated it
      int64_t cc[kMaxRank] = {};
      coords_of(d.index_shape, p, cc);
      return load(a.src.data, offset(cc, a.src.strides, r));
    };
    Acc acc;
    long long count = 0;
    size_t k = 0;
    if (d.reduce == ScatterReduce::None) {
      acc = contribution(run.back());
    } else {
      if (d.include_self) {
        acc = load(a.self.data, so);
        count = 1;
      } else {
        acc = contribution(run[0]);
        count = 1;
        k = 1;
      }
      for (; k < run.size(); ++k, ++count) acc = detail::scatter_combine<Acc>(reduce, acc, contribution(run[k]));
      if constexpr (kInt) acc = detail::scatter_finish_int<T>(reduce, acc, count);
      else acc = detail::scatter_finish<Acc>(reduce, acc, count);
    }
    store(oo, acc);
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
  switch (d.dtype) {
    case DType::F64: scatter_typed<double>(d, a, idx); break;
    case DType::I8: scatter_typed<int64_t, int8_t>(d, a, idx); break;
    case DType::U8: scatter_typed<int64_t, uint8_t>(d, a, idx); break;
    case DType::I16: scatter_typed<int64_t, int16_t>(d, a, idx); break;
    case DType::I32: scatter_typed<int64_t, int32_t>(d, a, idx); break;
    case DType::I64: scatter_typed<int64_t, int64_t>(d, a, idx); break;
    default: scatter_typed<float>(d, a, idx); break;
  }
  return Status::ok();
}

}  // namespace baracuda::indexing::ref
