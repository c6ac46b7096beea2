// DLPack interop: DLTensor <-> TensorRef / TensorMut. Available when this
// header is compiled with dlpack/dlpack.h on the include path (the library
// itself is built with it when the build finds the header).
#pragma once
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>

#include "baracuda/core/export.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

// Views a DLTensor. `capacity` (elements from the first element on) defaults to
// the view's span, the most a DLTensor tells. Fails for dtypes baracuda lacks,
// rank > 8, negative strides, or devices other than CPU / CUDA.
BARACUDA_API Result<TensorRef> from_dlpack(const DLTensor& t, int64_t capacity = -1);
BARACUDA_API Result<TensorMut> from_dlpack_mut(const DLTensor& t, int64_t capacity = -1);

// Fills `out` to describe `v`; `shape_storage` / `strides_storage` must hold
// rank int64 values and outlive `out` (DLTensor does not own them).
BARACUDA_API Status to_dlpack(const TensorRef& v, DLTensor* out, int64_t* shape_storage, int64_t* strides_storage);

}  // namespace baracuda
#endif
