// Validation helpers shared by every plan: each returns a Status whose message
// starts with the plan name and states the exact problem.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>

#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "core/overlap.hpp"

namespace baracuda::detail {

// Extents >= 0, rank in [0, 8], and the element count fits int64.
Status check_shape(const char* plan, const char* what, const Dims& shape);

// A derived size (workspace, table, work estimate): the product of
// non-negative `factors` must fit int64 ("<plan>: <what> (a x b x c)
// overflows int64" otherwise). Writes the product to `out` when given.
Status check_size(const char* plan, const char* what, std::initializer_list<int64_t> factors, int64_t* out = nullptr);

// Normalises `axes` (negative -> from the end; empty -> all) to a bit mask.
// Errors on out-of-range or repeated axes.
Status normalize_axes(const char* plan, const Dims& axes, int rank, uint32_t* mask);

// Checks a view against the expected dtype, shape and device, that strides are
// >= 0, the data pointer is set (unless the view is empty) and the buffer holds
// every element the view reaches (BufferTooSmall{needed, got} otherwise).
Status check_view(const char* plan, const char* name, const TensorRef& v, DType dtype, const Dims& shape, Device device);
// As check_view, and the view must not write one element twice (no stride-0
// broadcast over an extent > 1, no self-overlap).
Status check_output(const char* plan, const char* name, const TensorMut& v, DType dtype, const Dims& shape, Device device);

// The stream must be on the plan's device.
Status check_stream(const char* plan, const Stream& stream, Device plan_device);
Status check_workspace(const char* plan, size_t needed, size_t got, const void* ptr);


}  // namespace baracuda::detail
