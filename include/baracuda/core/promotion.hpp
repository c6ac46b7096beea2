// Type promotion with PyTorch's rules (torch.promote_types, torch.result_type,
// torch.can_cast). docs/DTYPES.md lists where baracuda differs and why.
//
// promote_types(a, b): the smallest dtype of at least the higher category
// (bool < integer < floating < complex) that is not smaller than either:
//   same dtype -> itself; bool + x -> x; i8 + u8 -> i16 (u8 + wider signed ->
//   the signed one); f16 + bf16 -> f32; floating + integer -> the floating one
//   (i64 + f16 -> f16); complex + floating -> complex wide enough for the
//   floating one (c64 + f64 -> c128). The fp8 types promote only with
//   themselves: any other pair with an fp8 type is Unsupported, as PyTorch
//   refuses it ("convert explicitly").
//
// result_type(operands): each operand is a tensor with rank >= 1, a rank-0
// tensor, or a wrapped scalar (a Python number). Each of the three groups is
// promoted on its own; a scalar counts as the default dtype of its category
// (bool, i64, f32, c64). A rank-0 tensor group only counts when its category
// is higher than the tensors', and the scalar group only when its category is
// higher than both others': a lower-priority group never widens the result
// within a category (i8 tensor + i64 rank-0 -> i8; f16 tensor + 2.5 -> f16;
// i32 tensor + 2.5 -> f32). A complex operand of higher category over floating
// tensors gives the complex type of the tensors' precision (f64 tensor + 1j ->
// c128; f32 tensor + c128 rank-0 -> c64).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda {

BARACUDA_API Result<DType> promote_types(DType a, DType b, std::string_view plan = "promote_types");

// The dtype a wrapped scalar of this category contributes (PyTorch with its
// default dtype f32): bool, i64, f32, c64.
constexpr DType scalar_default_dtype(DTypeCategory c) {
  switch (c) {
    case DTypeCategory::Bool: return DType::Bool;
    case DTypeCategory::Integer: return DType::I64;
    case DTypeCategory::Floating: return DType::F32;
    case DTypeCategory::Complex: return DType::C64;
  }
  return DType::F32;
}

struct ResultTypeOperand {
  enum class Kind : uint8_t { Tensor, ZeroDim, Scalar };
  Kind kind = Kind::Tensor;
  // For Scalar only its category counts (a wrapped Python float may be given
  // as f64 or f32 alike: it contributes f32).
  DType dtype = DType::F32;

  static constexpr ResultTypeOperand tensor(DType t) { return {Kind::Tensor, t}; }
  static constexpr ResultTypeOperand zero_dim(DType t) { return {Kind::ZeroDim, t}; }
  static constexpr ResultTypeOperand scalar(DTypeCategory c) { return {Kind::Scalar, scalar_default_dtype(c)}; }
};

BARACUDA_API Result<DType> result_type(std::span<const ResultTypeOperand> operands, std::string_view plan = "result_type");
inline Result<DType> result_type(std::initializer_list<ResultTypeOperand> operands, std::string_view plan = "result_type") {
  return result_type(std::span<const ResultTypeOperand>(operands.begin(), operands.size()), plan);
}

// torch.can_cast: may a value of `from` be written to a `to` output of an
// operation (same-kind casting)? Never to a lower category: no float ->
// integer, complex -> real, or non-bool -> bool.
constexpr bool can_cast(DType from, DType to) {
  return dtype_is_valid(from) && dtype_is_valid(to) && dtype_category(from) <= dtype_category(to);
}

}  // namespace baracuda
