#include <stdexcept>

#include "baracuda/core/tensor.hpp"

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
  for (int i = 0; i < a.rank; ++i)
    if (a[i] != b[i]) return false;
  return true;
}

std::string Dims::to_string() const {
  std::string s = "[";
  for (int i = 0; i < rank; ++i) {
    if (i) s += ",";
    s += std::to_string(v[static_cast<size_t>(i)]);
  }
  return s + "]";
}

int64_t shape_numel(const Dims& shape) {
  int64_t n = 1;
  for (int i = 0; i < shape.rank; ++i) n *= shape[i];
  return n;
}

Dims contiguous_strides(const Dims& shape) {
  Dims s = Dims::of_rank(shape.rank);
  int64_t acc = 1;
  for (int i = shape.rank - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape[i] > 0 ? shape[i] : 1;
  }
  return s;
}

TensorRef::TensorRef(const void* d, DType t, Device dev, Dims sh, Dims st, int64_t cap) {
  data = d; dtype = t; device = dev; shape = sh; strides = st; capacity = cap;
}
TensorRef TensorRef::contiguous(const void* d, DType t, Device dev, Dims sh) {
  return TensorRef(d, t, dev, sh, contiguous_strides(sh), shape_numel(sh));
}
TensorMut::TensorMut(void* d, DType t, Device dev, Dims sh, Dims st, int64_t cap) {
  data = d; dtype = t; device = dev; shape = sh; strides = st; capacity = cap;
}
TensorMut TensorMut::contiguous(void* d, DType t, Device dev, Dims sh) {
  return TensorMut(d, t, dev, sh, contiguous_strides(sh), shape_numel(sh));
}

}  // namespace baracuda
