#include <stdexcept>

#include "baracuda/core/tensor.hpp"

#include <cstdint>

#include "core/checked_math.hpp"

namespace baracuda {

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(ordinal);
}

Dims::Dims(std::initializer_list<int64_t> il) {
  if (il.size() > static_cast<size_t>(kMaxRank)) throw std::length_error("baracuda::Dims: more than 8 entries");
  for (int64_t x : il) v[static_cast<size_t>(rank++)] = x;
}

Dims Dims::of_rank(int r, int64_t fill) {
  Dims d;
  d.rank = r < 0 ? 0 : (r > kMaxRank ? kMaxRank : r);
  for (int i = 0; i < d.rank; ++i) d[i] = fill;
  return d;
}

bool Dims::push_back(int64_t x) {
  if (rank >= kMaxRank) return false;
  v[static_cast<size_t>(rank++)] = x;
  return true;
}

bool operator==(const Dims& a, const Dims& b) {
  if (a.rank != b.rank) return false;
  if (!a.rank_valid()) return false;
  for (int i = 0; i < a.rank; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

std::string Dims::to_string() const {
  if (!rank_valid()) return "[<rank " + std::to_string(rank) + ">]";
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ",";
    s += std::to_string(v[static_cast<size_t>(i)]);
  }
  return s + "]";
}

int64_t shape_numel(const Dims& shape) {
  int64_t n = 0;
  if (detail::checked_numel(shape, &n)) return n;
  if (!shape.rank_valid()) return INT64_MAX;
  // Negative extents (rejected by every plan): the plain product, as before.
  for (int i = 0; i < shape.rank; ++i)
    if (shape[i] < 0) {
      n = 1;
      for (int j = 0; j < shape.rank; ++j) n = static_cast<int64_t>(static_cast<uint64_t>(n) * static_cast<uint64_t>(shape[j]));
      return n;
    }
  return INT64_MAX;  // overflow
}

Dims contiguous_strides(const Dims& shape) {
  Dims s = Dims::of_rank(shape.rank);
  if (!shape.rank_valid()) return s;
  int64_t acc = 1;
  for (int i = s.rank - 1; i >= 0; --i) {
    s[i] = acc;
    // Saturate: a shape this large is rejected by the checks anyway.
    if (!detail::mul_ok(acc, shape[i] > 0 ? shape[i] : 1, &acc)) acc = INT64_MAX;
  }
  return s;
}

namespace detail {

bool checked_numel(const Dims& shape, int64_t* out) {
  if (!rank_ok(shape)) return false;
  bool zero = false;
  for (int i = 0; i < shape.rank; ++i) {
    if (shape[i] < 0) return false;
    zero = zero || shape[i] == 0;
  }
  if (zero) {
    *out = 0;
    return true;
  }
  int64_t n = 1;
  for (int i = 0; i < shape.rank; ++i)
    if (!mul_ok(n, shape[i], &n)) return false;
  *out = n;
  return true;
}

bool checked_span(const Dims& shape, const Dims& strides, int64_t* out) {
  if (!rank_ok(shape) || !rank_ok(strides) || strides.rank != shape.rank) return false;
  for (int i = 0; i < shape.rank; ++i) {
    if (shape[i] < 0 || strides[i] < 0) return false;
    if (shape[i] == 0) {
      *out = 0;
      return true;
    }
  }
  int64_t hi = 0, t = 0;
  for (int i = 0; i < shape.rank; ++i)
    if (!mul_ok(shape[i] - 1, strides[i], &t) || !add_ok(hi, t, &hi)) return false;
  return add_ok(hi, 1, out);
}

int64_t view_span(const Dims& shape, const Dims& strides) {
  int64_t s = 0;
  return checked_span(shape, strides, &s) ? s : INT64_MAX;
}

bool view_is_contiguous(const Dims& shape, const Dims& strides) {
  if (!rank_ok(shape) || strides.rank != shape.rank) return false;
  int64_t expect = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    if (shape[i] != 1 && strides[i] != expect) return false;
    if (!mul_ok(expect, shape[i], &expect)) return false;
  }
  return true;
}

}  // namespace detail

TensorRef::TensorRef(const void* d, DType t, Device dev, Dims sh, Dims st, int64_t cap) {
  data = d; dtype = t; device = dev; shape = sh; strides = st; capacity = cap;
}
TensorRef TensorRef::contiguous(const void* d, DType t, Device dev, Dims sh, int64_t capacity) {
  return TensorRef(d, t, dev, sh, contiguous_strides(sh), capacity);
}
TensorRef TensorRef::contiguous(const void* d, DType t, Device dev, Dims sh) {
  return contiguous(d, t, dev, sh, shape_numel(sh));
}
TensorMut::TensorMut(void* d, DType t, Device dev, Dims sh, Dims st, int64_t cap) {
  data = d; dtype = t; device = dev; shape = sh; strides = st; capacity = cap;
}
TensorMut TensorMut::contiguous(void* d, DType t, Device dev, Dims sh, int64_t capacity) {
  return TensorMut(d, t, dev, sh, contiguous_strides(sh), capacity);
}
TensorMut TensorMut::contiguous(void* d, DType t, Device dev, Dims sh) {
  return contiguous(d, t, dev, sh, shape_numel(sh));
}

}  // namespace baracuda
