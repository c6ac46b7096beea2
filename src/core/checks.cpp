#include "core/checks.hpp"

#include <cstdint>
#include <utility>

#include "core/checked_math.hpp"
#include "core/overlap.hpp"

namespace baracuda::detail {

namespace {
std::string prefix(const char* plan) { return std::string(plan) + ": "; }
}  // namespace

Status check_shape(const char* plan, const char* what, const Dims& shape) {
  if (shape.rank < 0 || shape.rank > kMaxRank)
    return Status(StatusCode::InvalidProblem, prefix(plan) + what + " rank " + std::to_string(shape.rank) + " outside [0, 8]");
  for (int i = 0; i < shape.rank; ++i)
    if (shape[i] < 0)
      return Status(StatusCode::InvalidProblem, prefix(plan) + what + " " + shape.to_string() + " has a negative extent at axis " + std::to_string(i));
  int64_t n = 0;
  if (!checked_numel(shape, &n))
    return Status(StatusCode::InvalidProblem, prefix(plan) + what + " " + shape.to_string() +
                                                  " has too many elements (the product of its extents overflows int64)");
  return Status::ok();
}

Status check_size(const char* plan, const char* what, std::initializer_list<int64_t> factors, int64_t* out) {
  int64_t n = 0;
  if (!checked_product(factors, &n)) {
    std::string f;
    for (int64_t x : factors) f += (f.empty() ? "" : " x ") + std::to_string(x);
    return Status(StatusCode::InvalidProblem, prefix(plan) + what + " (" + f + ") overflows int64");
  }
  if (out) *out = n;
  return Status::ok();
}

Status normalize_axes(const char* plan, const Dims& axes, int rank, uint32_t* mask) {
  *mask = 0;
  if (!rank_ok(axes))
    return Status(StatusCode::InvalidProblem, prefix(plan) + "axes list rank " + std::to_string(axes.rank) + " outside [0, 8]");
  if (axes.rank == 0) {
    *mask = rank >= 32 ? 0xffffffffu : ((1u << rank) - 1u);
    return Status::ok();
  }
  for (int i = 0; i < axes.rank; ++i) {
    const int64_t a = axes[i];
    if (a < -rank || a >= rank)
      return Status(StatusCode::InvalidProblem, prefix(plan) + "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank));
    const int n = static_cast<int>(a < 0 ? a + rank : a);
    if (*mask & (1u << n))
      return Status(StatusCode::InvalidProblem, prefix(plan) + "axis " + std::to_string(a) + " repeated in axes " + axes.to_string());
    *mask |= 1u << n;
  }
  return Status::ok();
}

Status check_view(const char* plan, const char* name, const TensorRef& v, DType dtype, const Dims& shape, Device device) {
  if (!rank_ok(v.shape) || !rank_ok(v.strides))
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " has a broken rank (shape rank " + std::to_string(v.shape.rank) +
                                                  ", strides rank " + std::to_string(v.strides.rank) + "; must be in [0, 8])");
  if (v.dtype != dtype)
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " dtype " + std::string(dtype_name(v.dtype)) + " must be " + std::string(dtype_name(dtype)));
  if (!(v.shape == shape))
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " shape " + v.shape.to_string() + " must be " + shape.to_string());
  if (v.strides.rank != v.shape.rank)
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " has " + std::to_string(v.strides.rank) + " strides for rank " + std::to_string(v.shape.rank));
  for (int i = 0; i < v.rank(); ++i)
    if (v.strides[i] < 0)
      return Status(StatusCode::InvalidProblem, prefix(plan) + name + " stride " + std::to_string(v.strides[i]) + " at axis " + std::to_string(i) + " is negative (unsupported)");
  for (int i = 0; i < v.rank(); ++i)
    if (v.shape[i] < 0)
      return Status(StatusCode::InvalidProblem, prefix(plan) + name + " shape " + v.shape.to_string() + " has a negative extent");
  int64_t n = 0, span = 0;
  if (!checked_numel(v.shape, &n))
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " shape " + v.shape.to_string() +
                                                  " has too many elements (the product of its extents overflows int64)");
  if (n == 0) {
    // An empty view reads nothing, but loops still form offsets along its
    // other axes (e.g. the kept axes of an empty reduction): those must fit
    // int64 like any view's, so check the span of the non-empty axes.
    int64_t reach = 0, t = 0;
    for (int i = 0; i < v.rank(); ++i)
      if (v.shape[i] > 0 && (!mul_ok(v.shape[i] - 1, v.strides[i], &t) || !add_ok(reach, t, &reach)))
        return Status(StatusCode::InvalidProblem, prefix(plan) + name + " strides " + v.strides.to_string() + " for shape " +
                                                      v.shape.to_string() + " reach past int64 elements");
    return Status::ok();
  }
  if (!checked_span(v.shape, v.strides, &span))
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " strides " + v.strides.to_string() + " for shape " +
                                                  v.shape.to_string() + " reach past int64 elements");
  if (!(v.device == device))
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " is on " + v.device.to_string() + " but the plan runs on " + device.to_string());
  if (v.data == nullptr) return Status(StatusCode::InvalidProblem, prefix(plan) + name + " data pointer is null");
  const size_t esz = dtype_size(dtype);
  if (reinterpret_cast<uintptr_t>(v.data) % esz != 0)
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " data pointer is not aligned to its " + std::to_string(esz) + "-byte element");
  int64_t bytes = 0;
  if (!mul_ok(span, static_cast<int64_t>(esz), &bytes) ||
      reinterpret_cast<uintptr_t>(v.data) > UINTPTR_MAX - static_cast<uintptr_t>(bytes))
    return Status(StatusCode::InvalidProblem, prefix(plan) + name + " view reaches " + std::to_string(span) +
                                                  " elements, past the end of the address space");
  if (span > v.capacity)
    return Status(StatusCode::BufferTooSmall,
                  prefix(plan) + name + " view reaches " + std::to_string(span) + " elements but its buffer holds " + std::to_string(v.capacity),
                  static_cast<size_t>(span), static_cast<size_t>(v.capacity < 0 ? 0 : v.capacity));
  return Status::ok();
}

Status check_output(const char* plan, const char* name, const TensorMut& v, DType dtype, const Dims& shape, Device device) {
  BARACUDA_RETURN_IF_ERROR(check_view(plan, name, v, dtype, shape, device));
  if (v.numel() == 0) return Status::ok();
  // Non-overlap: sort dims (extent > 1) by stride; each stride must be at
  // least the span of all smaller-stride dims. Sufficient and cheap.
  int idx[kMaxRank];
  int m = 0;
  for (int i = 0; i < v.rank(); ++i)
    if (v.shape[i] > 1) idx[m++] = i;
  for (int a = 1; a < m; ++a)  // insertion sort by stride (m <= 8)
    for (int b = a; b > 0 && v.strides[idx[b]] < v.strides[idx[b - 1]]; --b) std::swap(idx[b], idx[b - 1]);
  int64_t reach = 1;  // elements covered by the dims so far
  for (int k = 0; k < m; ++k) {
    const int i = idx[k];
    if (v.strides[i] < reach)
      return Status(StatusCode::InvalidProblem, prefix(plan) + name + " strides " + v.strides.to_string() + " for shape " +
                                                    v.shape.to_string() + " make elements overlap (an output must not alias itself)");
    reach = v.strides[i] * (v.shape[i] - 1) + reach;
  }
  return Status::ok();
}

Status check_stream(const char* plan, const Stream& stream, Device plan_device) {
  if (!(stream.device() == plan_device))
    return Status(StatusCode::InvalidProblem, prefix(plan) + "stream is on " + stream.device().to_string() +
                                                  " but the plan was selected for " + plan_device.to_string());
  return Status::ok();
}

Status check_workspace(const char* plan, size_t needed, size_t got, const void* ptr) {
  if (got < needed || (needed > 0 && ptr == nullptr))
    return Status(StatusCode::WorkspaceTooSmall,
                  prefix(plan) + "workspace of " + std::to_string(ptr ? got : 0) + " bytes given, " + std::to_string(needed) + " needed",
                  needed, ptr ? got : 0);
  return Status::ok();
}

}  // namespace baracuda::detail
