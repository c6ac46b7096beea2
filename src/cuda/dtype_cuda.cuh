// The CUDA type of every dtype: cuda_type_t<DType::BF16> is __nv_bfloat16.
// Each has the size and bit layout of the dtype's host type
// (include/baracuda/core/host_types.hpp), checked below for every row of the
// dtype table, so a dtype added to the table without a CUDA type here fails
// to compile. Use with visit_dtype (include/baracuda/core/dtype_dispatch.hpp):
//   visit_dtype<FloatingTypes>(t, plan, [&](auto tag) {
//     return launch<cuda_type_t<decltype(tag)::value>>(...); });
//
// Complex: cuFloatComplex / cuDoubleComplex (float2 / double2), the types of
// cuBLAS / cuFFT; they need 8- / 16-byte aligned elements.
// fp8: CUDA's constructors from float SATURATE (__NV_SATFINITE) where the
// host types follow PyTorch (e4m3 overflow -> NaN, e5m2 overflow -> inf);
// device code that converts must pick its rule explicitly.
#pragma once
#include <cuComplex.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_fp8.h>

#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/host_types.hpp"

namespace baracuda {

template <DType D>
struct cuda_type;
template <> struct cuda_type<DType::Bool> { using type = bool; };
template <> struct cuda_type<DType::I8> { using type = int8_t; };
template <> struct cuda_type<DType::U8> { using type = uint8_t; };
template <> struct cuda_type<DType::I16> { using type = int16_t; };
template <> struct cuda_type<DType::I32> { using type = int32_t; };
template <> struct cuda_type<DType::I64> { using type = int64_t; };
template <> struct cuda_type<DType::F16> { using type = __half; };
template <> struct cuda_type<DType::BF16> { using type = __nv_bfloat16; };
template <> struct cuda_type<DType::F32> { using type = float; };
template <> struct cuda_type<DType::F64> { using type = double; };
template <> struct cuda_type<DType::F8E4M3> { using type = __nv_fp8_e4m3; };
template <> struct cuda_type<DType::F8E5M2> { using type = __nv_fp8_e5m2; };
template <> struct cuda_type<DType::C64> { using type = cuFloatComplex; };
template <> struct cuda_type<DType::C128> { using type = cuDoubleComplex; };

template <DType D>
using cuda_type_t = typename cuda_type<D>::type;

// Same size as the host type for every dtype of the table (a missing
// specialization above is an incomplete type here).
#define BARACUDA_DTYPE_CUDA_CHECK(E, name, bytes, cat, sgn, host) \
  static_assert(sizeof(cuda_type_t<DType::E>) == bytes && sizeof(host_type_t<DType::E>) == bytes, \
                "CUDA type of " name " differs from its host type");
BARACUDA_DTYPE_TABLE(BARACUDA_DTYPE_CUDA_CHECK)
#undef BARACUDA_DTYPE_CUDA_CHECK

}  // namespace baracuda
