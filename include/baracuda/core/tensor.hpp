// Non-owning tensor views: data pointer, dtype, device, runtime rank (<= 8),
// int64 shape and int64 element strides (0 = broadcast), and the number of
// elements the underlying buffer holds from `data` on (for bounds checks).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "baracuda/core/dtype.hpp"

namespace baracuda {

inline constexpr int kMaxRank = 8;

struct Device {
  enum class Kind : uint8_t { Cpu, Cuda };
  Kind kind = Kind::Cpu;
  int ordinal = 0;
  static constexpr Device cpu() { return {Kind::Cpu, 0}; }
  static constexpr Device cuda(int ordinal = 0) { return {Kind::Cuda, ordinal}; }
  constexpr bool is_cpu() const { return kind == Kind::Cpu; }
  constexpr bool is_cuda() const { return kind == Kind::Cuda; }
  friend constexpr bool operator==(Device a, Device b) {
    return a.kind == b.kind && (a.kind == Kind::Cpu || a.ordinal == b.ordinal);
  }
  std::string to_string() const;
};

// A small fixed-capacity list of int64: shapes, strides, axis lists.
struct Dims {
  int rank = 0;
  std::array<int64_t, kMaxRank> v{};
  Dims() = default;
  Dims(std::initializer_list<int64_t> il);  // throws std::length_error if > kMaxRank
  static Dims of_rank(int r, int64_t fill = 0);
  int64_t& operator[](int i) { return v[static_cast<size_t>(i)]; }
  int64_t operator[](int i) const { return v[static_cast<size_t>(i)]; }
  int size() const { return rank; }
  bool push_back(int64_t x);  // false when full
  const int64_t* begin() const { return v.data(); }
  const int64_t* end() const { return v.data() + rank; }
  friend bool operator==(const Dims& a, const Dims& b);
  std::string to_string() const;  // "[4,1,7]"
};

int64_t shape_numel(const Dims& shape);               // product; 1 for rank 0
Dims contiguous_strides(const Dims& shape);           // row-major

namespace detail {
template <class Ptr>
struct TensorView {
  Ptr data = nullptr;
  DType dtype = DType::F32;
  Device device = Device::cpu();
  Dims shape;
  Dims strides;          // in elements; >= 0; 0 broadcasts along that dim
  int64_t capacity = 0;  // elements the buffer holds from `data` on

  int rank() const { return shape.rank; }
  int64_t numel() const { return shape_numel(shape); }
  // Largest element offset the view reaches + 1 (0 for an empty view).
  int64_t span() const {
    int64_t hi = 0;
    for (int i = 0; i < shape.rank; ++i) {
      if (shape[i] == 0) return 0;
      hi += (shape[i] - 1) * strides[i];
    }
    return hi + 1;
  }
  bool is_contiguous() const {
    int64_t expect = 1;
    for (int i = shape.rank - 1; i >= 0; --i) {
      if (shape[i] != 1 && strides[i] != expect) return false;
      expect *= shape[i];
    }
    return true;
  }
};
}  // namespace detail

struct TensorRef : detail::TensorView<const void*> {
  TensorRef() = default;
  TensorRef(const void* data, DType dtype, Device device, Dims shape, Dims strides, int64_t capacity);
  // Contiguous row-major view whose buffer holds exactly numel elements.
  static TensorRef contiguous(const void* data, DType dtype, Device device, Dims shape);
};

struct TensorMut : detail::TensorView<void*> {
  TensorMut() = default;
  TensorMut(void* data, DType dtype, Device device, Dims shape, Dims strides, int64_t capacity);
  static TensorMut contiguous(void* data, DType dtype, Device device, Dims shape);
  operator TensorRef() const {  // NOLINT: a mutable view is also readable
    return TensorRef(data, dtype, device, shape, strides, capacity);
  }
};

}  // namespace baracuda
