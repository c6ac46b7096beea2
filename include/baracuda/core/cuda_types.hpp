// dtype_of / dtype_v for the CUDA toolkit's element types, for translation
// units (CUDA or plain C++ with the toolkit on the include path) that hold
// their data as __half, __nv_bfloat16, __nv_fp8_e4m3 or __nv_fp8_e5m2:
//   TensorRef::contiguous(ptr_to_half, dev, shape, n)  // dtype F16
// Not part of baracuda/baracuda.hpp: public headers need no CUDA headers.
// cuda_fp16.h also declares a global `half` (= __half): next to `using
// namespace baracuda;` spell baracuda's host type `baracuda::half`.
// Each type has the size and bit layout of baracuda's host type for the same
// dtype (half, bfloat16, float8_e4m3, float8_e5m2).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include "baracuda/core/host_types.hpp"

namespace baracuda {

#define BARACUDA_CUDA_DTYPE_OF(T, E, host)                                                  \
  template <>                                                                               \
  struct dtype_of<T> {                                                                      \
    static constexpr DType value = DType::E;                                                \
    constexpr operator DType() const { return value; }                                      \
  };                                                                                        \
  static_assert(sizeof(T) == sizeof(host), #T " and baracuda::" #host " must have one size");
BARACUDA_CUDA_DTYPE_OF(__half, F16, half)
BARACUDA_CUDA_DTYPE_OF(__nv_bfloat16, BF16, bfloat16)
BARACUDA_CUDA_DTYPE_OF(__nv_fp8_e4m3, F8E4M3, float8_e4m3)
BARACUDA_CUDA_DTYPE_OF(__nv_fp8_e5m2, F8E5M2, float8_e5m2)
#undef BARACUDA_CUDA_DTYPE_OF

}  // namespace baracuda
