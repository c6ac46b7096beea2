// Non-owning tensor views: data pointer, dtype, device, runtime rank (<= 8),
// int64 shape and int64 element strides (0 = broadcast), and the number of
// elements the underlying buffer holds from `data` on (for bounds checks).
#pragma once
#include <array>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/host_types.hpp"

namespace baracuda {

inline constexpr int kMaxRank = 8;

struct BARACUDA_API Device {
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
// Invariant: 0 <= rank <= kMaxRank. The fields are public (aggregate-like use
// from frameworks), so every library function that reads a Dims clamps or
// rejects a broken rank instead of indexing past `v`.
struct BARACUDA_API Dims {
  int rank = 0;
  std::array<int64_t, kMaxRank> v{};
  Dims() = default;
  Dims(std::initializer_list<int64_t> il);  // throws std::length_error if > kMaxRank
  static Dims of_rank(int r, int64_t fill = 0);
  int64_t& operator[](int i) { return v[static_cast<size_t>(i)]; }
  int64_t operator[](int i) const { return v[static_cast<size_t>(i)]; }
  int size() const { return rank; }
  bool push_back(int64_t x);  // false when full
  bool rank_valid() const { return rank >= 0 && rank <= kMaxRank; }
  const int64_t* begin() const { return v.data(); }
  const int64_t* end() const { return v.data() + (rank_valid() ? rank : 0); }
  friend bool operator==(const Dims& a, const Dims& b);
  std::string to_string() const;  // "[4,1,7]"
};
// The friend above, declared again where the export attribute is allowed.
BARACUDA_API bool operator==(const Dims& a, const Dims& b);

// Product of the extents; 1 for rank 0. Never wraps: INT64_MAX when the
// product overflows (or the rank is broken), so an overflowing shape can
// never look empty. Plans reject such shapes before using them.
BARACUDA_API int64_t shape_numel(const Dims& shape);
BARACUDA_API Dims contiguous_strides(const Dims& shape);           // row-major

namespace detail {
BARACUDA_API int64_t view_span(const Dims& shape, const Dims& strides);
BARACUDA_API bool view_is_contiguous(const Dims& shape, const Dims& strides);

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
  // Never wraps: INT64_MAX when the arithmetic overflows, a stride or extent
  // is negative or a rank is broken (such views fail every plan's checks).
  int64_t span() const { return view_span(shape, strides); }
  bool is_contiguous() const { return view_is_contiguous(shape, strides); }
};
}  // namespace detail

// A default-constructed view (null data, rank 0) is "not given": optional
// tensors a descriptor does not use are left that way, and a plan reports a
// required one left that way as missing.
struct BARACUDA_API TensorRef : detail::TensorView<const void*> {
  TensorRef() = default;
  TensorRef(const void* data, DType dtype, Device device, Dims shape, Dims strides, int64_t capacity);
  // Contiguous row-major view of a buffer that holds `capacity` elements from
  // `data` on: a shape needing more fails every plan's checks with
  // BufferTooSmall{needed, got} instead of reading past the buffer.
  static TensorRef contiguous(const void* data, DType dtype, Device device, Dims shape, int64_t capacity);
  // The same with capacity = numel(shape): the buffer is taken to be exactly
  // as long as the view, so a too-short buffer cannot be caught. Prefer the
  // overload above (or the typed one) where the buffer's length is known.
  static TensorRef contiguous(const void* data, DType dtype, Device device, Dims shape);
  // Typed: the dtype is dtype_v<T> (float -> F32, half -> F16, ...).
  template <class T>
  static TensorRef contiguous(const T* data, Device device, Dims shape, int64_t capacity) {
    return contiguous(static_cast<const void*>(data), dtype_v<T>, device, shape, capacity);
  }
};

struct BARACUDA_API TensorMut : detail::TensorView<void*> {
  TensorMut() = default;
  TensorMut(void* data, DType dtype, Device device, Dims shape, Dims strides, int64_t capacity);
  // As TensorRef::contiguous: with the buffer's capacity in elements, without
  // it (capacity = numel), and typed.
  static TensorMut contiguous(void* data, DType dtype, Device device, Dims shape, int64_t capacity);
  static TensorMut contiguous(void* data, DType dtype, Device device, Dims shape);
  template <class T>
  static TensorMut contiguous(T* data, Device device, Dims shape, int64_t capacity) {
    return contiguous(static_cast<void*>(data), dtype_v<T>, device, shape, capacity);
  }
  operator TensorRef() const {  // NOLINT: a mutable view is also readable
    return TensorRef(data, dtype, device, shape, strides, capacity);
  }
};

}  // namespace baracuda
