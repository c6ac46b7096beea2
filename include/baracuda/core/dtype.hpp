// DType: the runtime element type of a tensor view.
//
// BARACUDA_DTYPE_TABLE is the only place a dtype is described: its enumerator,
// printed name, size in bytes, category, signedness and host type. The enum,
// every query below, the host-type map (host_types.hpp), dispatch
// (dtype_dispatch.hpp) and the CUDA type map (src/cuda/dtype_cuda.cuh) are
// expanded from it, so a new dtype is one row here (plus its CUDA type).
//
// Predicates follow PyTorch's meanings: is_floating_point is true for f16,
// bf16, f32, f64 and both fp8 types; is_complex for c64/c128; is_integral
// excludes bool unless asked. A plan that supports a fixed set of dtypes tests
// that set explicitly (dtype_in, or a DTypeList in dtype_dispatch.hpp), never a
// category, so a new dtype of the same category is rejected until it is added.
#pragma once
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string_view>

namespace baracuda {

// Ordered: promotion (promotion.hpp) never moves to a lower category.
enum class DTypeCategory : uint8_t { Bool, Integer, Floating, Complex };

// X(enumerator, printed name, bytes, category, signed, host type)
// The host type tokens are resolved only where the column is used
// (include/baracuda/core/host_types.hpp).
#define BARACUDA_DTYPE_TABLE(X)                        \
  X(Bool, "bool", 1, Bool, false, bool)                \
  X(I8, "i8", 1, Integer, true, int8_t)                \
  X(U8, "u8", 1, Integer, false, uint8_t)              \
  X(I16, "i16", 2, Integer, true, int16_t)             \
  X(I32, "i32", 4, Integer, true, int32_t)             \
  X(I64, "i64", 8, Integer, true, int64_t)             \
  X(F16, "f16", 2, Floating, true, half)               \
  X(BF16, "bf16", 2, Floating, true, bfloat16)         \
  X(F32, "f32", 4, Floating, true, float)              \
  X(F64, "f64", 8, Floating, true, double)             \
  X(F8E4M3, "f8e4m3", 1, Floating, true, float8_e4m3)  \
  X(F8E5M2, "f8e5m2", 1, Floating, true, float8_e5m2)  \
  X(C64, "c64", 8, Complex, true, complex64)           \
  X(C128, "c128", 16, Complex, true, complex128)

enum class DType : uint8_t {
#define BARACUDA_DTYPE_ENUMERATOR(E, name, bytes, cat, sgn, host) E,
  BARACUDA_DTYPE_TABLE(BARACUDA_DTYPE_ENUMERATOR)
#undef BARACUDA_DTYPE_ENUMERATOR
};

namespace detail {
struct DTypeInfo {
  DType dtype;
  std::string_view name;
  uint8_t bytes;
  DTypeCategory category;
  bool is_signed;
};
inline constexpr DTypeInfo kDTypeInfo[] = {
#define BARACUDA_DTYPE_INFO(E, name, bytes, cat, sgn, host) {DType::E, name, bytes, DTypeCategory::cat, sgn},
    BARACUDA_DTYPE_TABLE(BARACUDA_DTYPE_INFO)
#undef BARACUDA_DTYPE_INFO
};
// A DType is a byte a caller may have filled with anything (a corrupted
// descriptor, a fuzzer): queries on a value outside the table answer
// "unknown" (size 0, name "?") instead of reading past the table.
constexpr const DTypeInfo* dtype_info(DType t) {
  const auto i = static_cast<size_t>(t);
  return i < sizeof(kDTypeInfo) / sizeof(kDTypeInfo[0]) ? &kDTypeInfo[i] : nullptr;
}
}  // namespace detail

inline constexpr size_t kDTypeCount = sizeof(detail::kDTypeInfo) / sizeof(detail::kDTypeInfo[0]);

// Every dtype, in table order (for loops in tests and tools).
inline constexpr DType kAllDTypes[] = {
#define BARACUDA_DTYPE_VALUE(E, name, bytes, cat, sgn, host) DType::E,
    BARACUDA_DTYPE_TABLE(BARACUDA_DTYPE_VALUE)
#undef BARACUDA_DTYPE_VALUE
};

// False for a byte that is no enumerator.
constexpr bool dtype_is_valid(DType t) { return detail::dtype_info(t) != nullptr; }

constexpr size_t dtype_size(DType t) {
  const auto* i = detail::dtype_info(t);
  return i ? i->bytes : 0;
}

// "f32", "bf16", "f8e4m3", "c64", ... ("?" for an invalid value).
constexpr std::string_view dtype_name(DType t) {
  const auto* i = detail::dtype_info(t);
  return i ? i->name : std::string_view("?");
}

// The inverse of dtype_name; nullopt for an unknown name.
constexpr std::optional<DType> dtype_from_name(std::string_view name) {
  for (const auto& i : detail::kDTypeInfo)
    if (i.name == name) return i.dtype;
  return std::nullopt;
}

// An invalid value reports Bool (the lowest category); check dtype_is_valid first
// where that matters.
constexpr DTypeCategory dtype_category(DType t) {
  const auto* i = detail::dtype_info(t);
  return i ? i->category : DTypeCategory::Bool;
}

// PyTorch's predicates.
constexpr bool is_floating_point(DType t) { return dtype_is_valid(t) && dtype_category(t) == DTypeCategory::Floating; }
constexpr bool is_complex(DType t) { return dtype_is_valid(t) && dtype_category(t) == DTypeCategory::Complex; }
constexpr bool is_integral(DType t, bool include_bool = false) {
  if (!dtype_is_valid(t)) return false;
  return dtype_category(t) == DTypeCategory::Integer || (include_bool && dtype_category(t) == DTypeCategory::Bool);
}
// The 8-bit floating types (storage formats: PyTorch promotes them with nothing).
constexpr bool is_float8(DType t) { return is_floating_point(t) && dtype_size(t) == 1; }
// Can the type hold negative values (false for bool and u8).
constexpr bool is_signed(DType t) {
  const auto* i = detail::dtype_info(t);
  return i && i->is_signed;
}

// `t` is one of `set`: the test a plan with a fixed list of dtypes uses, e.g.
// dtype_in(t, {DType::F32, DType::F64, DType::F16, DType::BF16}).
constexpr bool dtype_in(DType t, std::initializer_list<DType> set) {
  for (DType s : set)
    if (s == t) return true;
  return false;
}

}  // namespace baracuda
