// CPU reference of the masked plans (see masked_reference.hpp).
#include "ops/indexing/masked_reference.hpp"

#include <cstdint>
#include <cstring>
#include <vector>

#include "core/error.hpp"
#include "core/host_elements.hpp"
#include "ops/indexing/index_check.hpp"

namespace baracuda::indexing::ref {

using baracuda::detail::load_f;
using baracuda::detail::load_i;

Dims broadcast_strides(const Dims& shape, const Dims& strides, const Dims& to) {
  Dims s = Dims::of_rank(to.rank);
  const int lead = to.rank - shape.rank;
  for (int i = 0; i < to.rank; ++i) {
    const int j = i - lead;
    s[i] = (j < 0 || shape[j] == 1) ? 0 : strides[j];
  }
  return s;
}

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

// torch's nonzero test: floats compare with zero (-0.0 is zero, NaN is not),
// integers and bool: any nonzero bits.
bool nonzero_at(const void* base, DType t, int64_t off) {
  if (is_floating_point(t)) return load_f(base, t, off) != 0.0;
  if (t == DType::Bool) return static_cast<const uint8_t*>(base)[off] != 0;
  return load_i(base, t, off) != 0;
}

// The positions (row-major over `shape`) whose predicate element is nonzero.
std::vector<int64_t> selected(const Dims& shape, const void* base, DType t, const Dims& strides) {
  std::vector<int64_t> pos;
  const int64_t n = shape_numel(shape);
  for (int64_t p = 0; p < n; ++p)
    if (nonzero_at(base, t, offset_of(shape, strides, p))) pos.push_back(p);
  return pos;
}

void copy_elem(void* dst, int64_t doff, const void* src, int64_t soff, size_t bytes) {
  std::memcpy(static_cast<char*>(dst) + doff * static_cast<int64_t>(bytes),
              static_cast<const char*>(src) + soff * static_cast<int64_t>(bytes), bytes);
}

void store_count(const TensorMut& count, int64_t n) {
  if (count.data) static_cast<int64_t*>(count.data)[0] = n;
}

}  // namespace

Status nonzero(const char*, const NonzeroDescriptor& d, const NonzeroArgs& a) {
  const std::vector<int64_t> pos = selected(d.shape, a.x.data, d.dtype, a.x.strides);
  const int64_t count = static_cast<int64_t>(pos.size()), r = d.shape.rank;
  auto* out = static_cast<int64_t*>(a.out.data);
  // A rank-0 x gives out [m, 0]: no element to write, whatever m is (a huge
  // capacity must not become a loop of m empty rows).
  const int64_t rows = r > 0 ? d.capacity : 0;
  for (int64_t k = 0; k < rows; ++k) {
    const Dims c = k < count ? detail::unravel(d.shape, pos[static_cast<size_t>(k)]) : Dims{};
    for (int64_t j = 0; j < r; ++j)
      out[k * a.out.strides[0] + j * a.out.strides[1]] = k < count ? c[static_cast<int>(j)] : d.fill_value;
  }
  store_count(a.count, count);
  return Status::ok();
}

Status masked_select(const char*, const MaskedSelectDescriptor& d, const Dims& shape, const MaskedSelectArgs& a) {
  const std::vector<int64_t> pos =
      selected(shape, a.mask.data, DType::Bool, broadcast_strides(d.mask_shape, a.mask.strides, shape));
  const Dims xs = broadcast_strides(d.x_shape, a.x.strides, shape);
  const size_t bytes = dtype_size(d.dtype);
  alignas(16) unsigned char fill[16] = {};
  if (is_floating_point(d.dtype)) baracuda::detail::store_f(fill, d.dtype, 0, d.fill_value);
  else baracuda::detail::store_i(fill, d.dtype, 0, static_cast<int64_t>(d.fill_value));
  const int64_t count = static_cast<int64_t>(pos.size());
  for (int64_t k = 0; k < d.capacity; ++k) {
    if (k < count) copy_elem(a.out.data, k * a.out.strides[0], a.x.data, offset_of(shape, xs, pos[static_cast<size_t>(k)]), bytes);
    else copy_elem(a.out.data, k * a.out.strides[0], fill, 0, bytes);
  }
  store_count(a.count, count);
  return Status::ok();
}

Status masked_scatter(const char* plan, const MaskedScatterDescriptor& d, const MaskedScatterArgs& a) {
  const Dims& shape = d.self_shape;
  const std::vector<int64_t> pos =
      selected(shape, a.mask.data, DType::Bool, broadcast_strides(d.mask_shape, a.mask.strides, shape));
  const int64_t ns = shape_numel(d.source_shape);
  if (static_cast<int64_t>(pos.size()) > ns) {
    const int64_t p = pos[static_cast<size_t>(ns)];
    return baracuda::detail::invalid(plan, "mask position ", detail::unravel(shape, p), " (position ", p,
                                     ") is true number ", ns + 1, " but source has only ", ns,
                                     " elements (source_shape ", d.source_shape,
                                     "; torch raises: the source must have at least as many elements as the mask "
                                     "has true positions)");
  }
  const size_t bytes = dtype_size(d.dtype);
  const int64_t n = shape_numel(shape);
  if (a.out.data != a.self.data)
    for (int64_t p = 0; p < n; ++p)
      copy_elem(a.out.data, offset_of(shape, a.out.strides, p), a.self.data, offset_of(shape, a.self.strides, p), bytes);
  for (size_t k = 0; k < pos.size(); ++k)
    copy_elem(a.out.data, offset_of(shape, a.out.strides, pos[k]), a.source.data,
              offset_of(d.source_shape, a.source.strides, static_cast<int64_t>(k)), bytes);
  return Status::ok();
}

}  // namespace baracuda::indexing::ref
