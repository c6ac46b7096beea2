// The host type of every dtype, from the dtype table: host_type_t<DType::F16>
// is baracuda::half; dtype_v<float> (also dtype_of_v<float>, dtype_of<float>())
// is DType::F32. The CUDA toolkit's __half / __nv_bfloat16 / __nv_fp8_* map
// through baracuda/core/cuda_types.hpp (it needs the toolkit's headers). All of them are plain
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
#include <type_traits>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/float8.hpp"
#include "baracuda/core/half.hpp"

namespace baracuda {

using complex64 = std::complex<float>;
using complex128 = std::complex<double>;

template <DType D>
struct host_type;

namespace detail {
template <class T>
inline constexpr bool kNoDType = false;
}
// dtype_of<T>::value, or dtype_of<T>() (converts to the DType): defined for
// the host type of every dtype; any other T is a compile error saying so.
template <class T>
struct dtype_of {
  static_assert(detail::kNoDType<T>,
                "baracuda::dtype_of<T>: T has no DType (bool, int8_t..int64_t, uint8_t, half, bfloat16, float, double, "
                "float8_e4m3, float8_e5m2, complex64, complex128; CUDA types: baracuda/core/cuda_types.hpp)");
};

#define BARACUDA_DTYPE_HOST_TYPE(E, name, bytes, cat, sgn, host)          \
  template <>                                                             \
  struct host_type<DType::E> {                                            \
    using type = host;                                                    \
  };                                                                      \
  template <>                                                             \
  struct dtype_of<host> {                                                 \
    static constexpr DType value = DType::E;                              \
    constexpr operator DType() const { return value; }                    \
  };                                                                      \
  static_assert(sizeof(host) == bytes, "host type of " name " has the wrong size");
BARACUDA_DTYPE_TABLE(BARACUDA_DTYPE_HOST_TYPE)
#undef BARACUDA_DTYPE_HOST_TYPE

template <DType D>
using host_type_t = typename host_type<D>::type;
template <class T>
inline constexpr DType dtype_of_v = dtype_of<T>::value;
// The DType of host type T, ignoring const / volatile: dtype_v<const half> is F16.
template <class T>
inline constexpr DType dtype_v = dtype_of<std::remove_cv_t<T>>::value;

}  // namespace baracuda
