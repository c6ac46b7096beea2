// PyTorch's promotion rules (see promotion.hpp), written as category rules
// over the dtype table rather than a 14 x 14 matrix, so a new dtype of an
// existing kind promotes without a new row.
#include "baracuda/core/promotion.hpp"

#include <optional>
#include <string>
#include <utility>

namespace baracuda {
namespace {

std::string pfx(std::string_view plan) { return std::string(plan) + ": "; }
std::string name(DType t) { return std::string(dtype_name(t)); }

Status invalid_value(std::string_view plan, DType t) {
  return Status(StatusCode::InvalidProblem,
                pfx(plan) + "dtype value " + std::to_string(static_cast<int>(t)) + " is not a DType");
}

// The smallest signed integer dtype wider than `bytes`.
std::optional<DType> signed_wider_than(size_t bytes) {
  std::optional<DType> best;
  for (DType t : kAllDTypes)
    if (is_integral(t) && is_signed(t) && dtype_size(t) > bytes && (!best || dtype_size(t) < dtype_size(*best))) best = t;
  return best;
}

// The complex dtype whose components hold floating type `f`:
// f64 -> c128; f32, f16, bf16 -> c64 (PyTorch gives complex32 for f16, which
// baracuda does not have).
std::optional<DType> complex_for(DType f) {
  if (is_float8(f)) return std::nullopt;  // PyTorch has no complex fp8 either
  return dtype_size(f) > 4 ? DType::C128 : DType::C64;
}

Result<DType> promote_pair(DType a, DType b, std::string_view plan) {
  if (!dtype_is_valid(a)) return invalid_value(plan, a);
  if (!dtype_is_valid(b)) return invalid_value(plan, b);
  if (a == b) return a;
  if (is_float8(a) || is_float8(b))
    return Status(StatusCode::Unsupported, pfx(plan) + name(a) + " and " + name(b) +
                                               " do not promote: float8 types promote only with themselves "
                                               "(as in PyTorch); convert explicitly");
  if (dtype_category(a) < dtype_category(b)) std::swap(a, b);  // a: the higher (or same) category
  const DTypeCategory ca = dtype_category(a), cb = dtype_category(b);
  if (ca != cb) {
    // Complex over floating needs components as wide as the floating type.
    if (ca == DTypeCategory::Complex && cb == DTypeCategory::Floating && dtype_size(b) > dtype_size(a) / 2)
      return DType::C128;
    return a;  // floating over integer/bool, integer over bool, complex over integer/bool
  }
  switch (ca) {
    case DTypeCategory::Integer:
      if (is_signed(a) == is_signed(b)) return dtype_size(a) >= dtype_size(b) ? a : b;
      {
        const DType s = is_signed(a) ? a : b, u = is_signed(a) ? b : a;
        if (dtype_size(s) > dtype_size(u)) return s;
        if (auto w = signed_wider_than(dtype_size(u))) return *w;  // u8 + i8 -> i16
        return Status(StatusCode::Unsupported, pfx(plan) + "no signed integer type holds both " + name(a) + " and " + name(b));
      }
    case DTypeCategory::Floating:
      // Same width, different formats (f16, bf16): neither holds the other.
      if (dtype_size(a) == dtype_size(b)) return DType::F32;
      return dtype_size(a) > dtype_size(b) ? a : b;
    case DTypeCategory::Complex:
      return dtype_size(a) > dtype_size(b) ? a : b;
    case DTypeCategory::Bool:
      break;  // only one bool dtype: a == b above
  }
  return a;
}

// One of result_type's three groups, promoted on its own.
struct Group {
  std::optional<DType> dtype;
  Status add(DType t, std::string_view plan) {
    if (!dtype) {
      if (!dtype_is_valid(t)) return invalid_value(plan, t);
      dtype = t;
      return Status::ok();
    }
    Result<DType> r = promote_pair(*dtype, t, plan);
    if (!r) return r.status();
    dtype = *r;
    return Status::ok();
  }
};

// `higher` has priority (tensors over rank-0 tensors over scalars); `lower`
// only counts when its category is higher.
Result<std::optional<DType>> combine(std::optional<DType> higher, std::optional<DType> lower, std::string_view plan) {
  if (!higher) return lower;
  if (!lower || dtype_category(*lower) <= dtype_category(*higher)) return higher;
  if (is_complex(*lower) && is_floating_point(*higher)) {
    if (auto c = complex_for(*higher)) return std::optional<DType>(*c);
    return Status(StatusCode::Unsupported, pfx(plan) + name(*higher) + " has no complex counterpart to promote with " +
                                               name(*lower) + " (as in PyTorch)");
  }
  Result<DType> r = promote_pair(*higher, *lower, plan);
  if (!r) return r.status();
  return std::optional<DType>(*r);
}

}  // namespace

Result<DType> promote_types(DType a, DType b, std::string_view plan) { return promote_pair(a, b, plan); }

Result<DType> result_type(std::span<const ResultTypeOperand> operands, std::string_view plan) {
  if (operands.empty()) return Status(StatusCode::InvalidProblem, pfx(plan) + "no operands to take a result type from");
  Group tensors, zero_dim, scalars;
  for (const ResultTypeOperand& o : operands) {
    switch (o.kind) {
      case ResultTypeOperand::Kind::Tensor: BARACUDA_RETURN_IF_ERROR(tensors.add(o.dtype, plan)); break;
      case ResultTypeOperand::Kind::ZeroDim: BARACUDA_RETURN_IF_ERROR(zero_dim.add(o.dtype, plan)); break;
      case ResultTypeOperand::Kind::Scalar:
        if (!dtype_is_valid(o.dtype)) return invalid_value(plan, o.dtype);
        BARACUDA_RETURN_IF_ERROR(scalars.add(scalar_default_dtype(dtype_category(o.dtype)), plan));
        break;
      default:
        return Status(StatusCode::InvalidProblem,
                      pfx(plan) + "unknown operand kind " + std::to_string(static_cast<int>(o.kind)));
    }
  }
  Result<std::optional<DType>> low = combine(zero_dim.dtype, scalars.dtype, plan);
  if (!low) return low.status();
  Result<std::optional<DType>> all = combine(tensors.dtype, *low, plan);
  if (!all) return all.status();
  return **all;
}

}  // namespace baracuda
