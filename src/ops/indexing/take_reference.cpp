// CPU reference take / put_ / one_hot (see take_reference.hpp).
#include "ops/indexing/take_reference.hpp"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <utility>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/indexing/index_check.hpp"

namespace baracuda::indexing::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;
using baracuda::detail::store_f;
using baracuda::detail::store_i;

namespace {

// Element offset of row-major position p of `shape` through `strides`.
int64_t offset_of(const Dims& shape, const Dims& strides, int64_t p) {
  int64_t o = 0;
  for (int d = shape.rank - 1; d >= 0; --d) {
    o += (p % shape[d]) * strides[d];
    p /= shape[d];
  }
  return o;
}

// Every index value in position order, wrapped into [0, N) (take / put_: a
// negative index counts from the end); the first outside [-N, N) is an error.
Status read_flat_indices(const char* plan, const char* tensor, DType index_dtype, const Dims& shape,
                         const TensorRef& index, int64_t N, std::vector<int64_t>* out) {
  const int64_t n = shape_numel(shape);
  out->resize(static_cast<size_t>(n));
  for (int64_t p = 0; p < n; ++p) {
    int64_t v = load_i(index.data, index_dtype, offset_of(shape, index.strides, p));
    if (v < -N || v >= N)
      return baracuda::detail::invalid(plan, "index element ", detail::unravel(shape, p), " (position ", p, ") is ", v,
                                       ", outside [", -N, ", ", N, ") (", tensor, " has ", N,
                                       " elements; the first bad index)");
    if (v < 0) v += N;
    (*out)[static_cast<size_t>(p)] = v;
  }
  return Status::ok();
}

void copy_elem(void* dst, int64_t doff, const void* src, int64_t soff, size_t es) {
  std::memcpy(static_cast<char*>(dst) + doff * static_cast<int64_t>(es),
              static_cast<const char*>(src) + soff * static_cast<int64_t>(es), es);
}

// One destination's value: self's plus the contributions of positions
// run[0..] (in position order), in the documented accumulator, stored once.
void accumulate_run(const PutDescriptor& d, const PutArgs& a, int64_t self_off, int64_t out_off,
                    const std::pair<int64_t, int64_t>* run, size_t len) {
  auto src_off = [&](int64_t k) { return offset_of(d.source_shape, a.source.strides, k); };
  if (d.dtype == DType::I32 || d.dtype == DType::I64) {
    uint64_t acc = static_cast<uint64_t>(load_i(a.self.data, d.dtype, self_off));  // wraps: two's complement
    for (size_t j = 0; j < len; ++j) acc += static_cast<uint64_t>(load_i(a.source.data, d.dtype, src_off(run[j].second)));
    store_i(a.out.data, d.dtype, out_off, static_cast<int64_t>(acc));
  } else if (d.dtype == DType::F64) {
    double acc = load_f(a.self.data, d.dtype, self_off);
    for (size_t j = 0; j < len; ++j) acc += load_f(a.source.data, d.dtype, src_off(run[j].second));
    store_f(a.out.data, d.dtype, out_off, acc);
  } else {
    float acc = static_cast<float>(load_f(a.self.data, d.dtype, self_off));
    for (size_t j = 0; j < len; ++j) acc += static_cast<float>(load_f(a.source.data, d.dtype, src_off(run[j].second)));
    store_f(a.out.data, d.dtype, out_off, static_cast<double>(acc));
  }
}

}  // namespace

void one_bits(DType t, unsigned char out[16]) {
  std::memset(out, 0, 16);
  if (is_integral(t, /*include_bool=*/true)) store_i(out, t, 0, 1);
  else store_f(out, t, 0, 1.0);
}

Status take(const char* plan, const TakeDescriptor& d, const TakeArgs& a) {
  const int64_t N = shape_numel(d.x_shape);
  std::vector<int64_t> idx;
  BARACUDA_RETURN_IF_ERROR(read_flat_indices(plan, "x", d.index_dtype, d.index_shape, a.index, N, &idx));
  const size_t es = dtype_size(d.dtype);
  for (int64_t p = 0; p < static_cast<int64_t>(idx.size()); ++p)
    copy_elem(a.out.data, offset_of(d.index_shape, a.out.strides, p), a.x.data,
              offset_of(d.x_shape, a.x.strides, idx[static_cast<size_t>(p)]), es);
  return Status::ok();
}

Status put(const char* plan, const PutDescriptor& d, const PutArgs& a) {
  const int64_t N = shape_numel(d.self_shape);
  std::vector<int64_t> idx;
  BARACUDA_RETURN_IF_ERROR(read_flat_indices(plan, "self", d.index_dtype, d.index_shape, a.index, N, &idx));
  const size_t es = dtype_size(d.dtype);
  const bool in_place = a.out.data == a.self.data;
  if (!in_place)
    for (int64_t q = 0; q < N; ++q)
      copy_elem(a.out.data, offset_of(d.self_shape, a.out.strides, q), a.self.data,
                offset_of(d.self_shape, a.self.strides, q), es);
  // (destination, position) pairs sorted by destination, positions ascending
  // within one: each destination's run in position order (the CUDA route's).
  std::vector<std::pair<int64_t, int64_t>> pairs(idx.size());
  for (size_t k = 0; k < idx.size(); ++k) pairs[k] = {idx[k], static_cast<int64_t>(k)};
  std::sort(pairs.begin(), pairs.end());
  for (size_t b = 0; b < pairs.size();) {
    size_t e = b + 1;
    while (e < pairs.size() && pairs[e].first == pairs[b].first) ++e;
    const int64_t q = pairs[b].first;
    const int64_t oo = offset_of(d.self_shape, a.out.strides, q);
    if (d.accumulate) {
      accumulate_run(d, a, offset_of(d.self_shape, a.self.strides, q), oo, &pairs[b], e - b);
    } else {  // the last position wins
      copy_elem(a.out.data, oo, a.source.data, offset_of(d.source_shape, a.source.strides, pairs[e - 1].second), es);
    }
    b = e;
  }
  return Status::ok();
}

Status one_hot(const char* plan, const OneHotDescriptor& d, const OneHotArgs& a) {
  const int64_t rows = shape_numel(d.index_shape), C = d.num_classes;
  std::vector<int64_t> cls(static_cast<size_t>(rows));
  for (int64_t p = 0; p < rows; ++p) {
    const int64_t v = load_i(a.indices.data, d.index_dtype, offset_of(d.index_shape, a.indices.strides, p));
    if (v < 0 || v >= C)
      return baracuda::detail::invalid(plan, "index element ", detail::unravel(d.index_shape, p), " (position ", p,
                                       ") is ", v, ", outside [0, ", C, ") (num_classes; the first bad class)");
    cls[static_cast<size_t>(p)] = v;
  }
  unsigned char one[16], zero[16] = {};
  one_bits(d.dtype, one);
  const size_t es = dtype_size(d.dtype);
  const int r = d.index_shape.rank;
  const int64_t class_stride = a.out.strides[r];
  for (int64_t p = 0; p < rows; ++p) {
    const int64_t row = offset_of(d.index_shape, a.out.strides, p);  // the leading r strides of out
    for (int64_t c = 0; c < C; ++c)
      copy_elem(a.out.data, row + c * class_stride, c == cls[static_cast<size_t>(p)] ? one : zero, 0, es);
  }
  return Status::ok();
}

}  // namespace baracuda::indexing::ref
