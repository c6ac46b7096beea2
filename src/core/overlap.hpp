// Memory-overlap tests between tensor views, shared by every plan's argument
// checks (core/arg_check.hpp).
#pragma once
#include "baracuda/core/tensor.hpp"

namespace baracuda::detail {

// True when two views' byte ranges [data, data + span * element size)
// intersect (views on different devices never do). Cheap and conservative.
bool views_overlap(const TensorRef& a, const TensorRef& b);

// True when some byte of one view's elements is also a byte of the other's.
// Exact for two views of one dtype whose strides nest (e.g. the q / k / v
// slices of one fused qkv buffer, or every other row of a matrix), found by a
// bounded search over the index differences; otherwise (or when the search
// budget runs out) as conservative as views_overlap.
bool views_overlap_exact(const TensorRef& a, const TensorRef& b);

// The same elements in the same order: equal data pointers, shapes and
// strides on every axis of extent > 1. An output may be its input (in place)
// only in this sense.
bool same_view(const TensorRef& a, const TensorRef& b);

}  // namespace baracuda::detail
