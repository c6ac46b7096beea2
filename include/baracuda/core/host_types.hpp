// The host type of every dtype, from the dtype table: host_type_t<DType::F16>
// is baracuda::half, dtype_of_v<float> is DType::F32. All of them are plain
// C++ (no CUDA headers) and have the size, layout and bit patterns of the
// CUDA types in src/cuda/dtype_cuda.cuh, so a host buffer can be copied to and
// from the device as is.
//
// complex64 / complex128 are std::complex<float> / <double>: two components,
// real first, the layout of cuFloatComplex / cuDoubleComplex (float2 /
// double2). std::complex<float> is only 4-byte aligned where float2 is 8:
// device code that loads c64 as float2 needs 8-byte aligned elements.
#pragma once
#include <complex>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/float8.hpp"
#include "baracuda/core/half.hpp"

namespace baracuda {

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

template <DType D>
struct host_type;
template <class T>
struct dtype_of;

#define BARACUDA_DTYPE_HOST_TYPE(E, name, bytes, cat, sgn, host)          \
  template <>                                                             \
  struct host_type<DType::E> {                                            \
    using type = host;                                                    \
  };                                                                      \
  template <>                                                             \
  struct dtype_of<host> {                                                 \
    static constexpr DType value = DType::E;                              \
  };                                                                      \
  static_assert(sizeof(host) == bytes, "host type of " name " has the wrong size");
BARACUDA_DTYPE_TABLE(BARACUDA_DTYPE_HOST_TYPE)
#undef BARACUDA_DTYPE_HOST_TYPE

template <DType D>
using host_type_t = typename host_type<D>::type;
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;

}  // namespace baracuda
