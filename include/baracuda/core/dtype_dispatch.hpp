// Runtime dtype -> compile-time type, for host code.
//
//   visit_dtype<FloatingTypes>(desc.dtype, "RopePlan", [&](auto tag) {
//     using T = typename decltype(tag)::type;        // host type (half, float, ...)
//     constexpr DType D = decltype(tag)::value;      // cuda_type_t<D> on the CUDA side
//     return launch<T>(...);                         // Status, Result<X> or void
//   });
//
// calls the functor with dtype_tag<D> for the dtype D the value names when D is
// in the list, and otherwise returns
//   Status(Unsupported, "RopePlan: dtype i32 is not supported (f32, f64, f16, bf16)").
// dispatch_dtype is the same without a plan: the caller says what to return
// for a dtype outside the list. Both replace hand-written switches on DType.
#pragma once
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/host_types.hpp"
#include "baracuda/core/status.hpp"

#if defined(__GNUC__) || defined(__clang__)
#define BARACUDA_DISPATCH_INLINE inline __attribute__((always_inline))
#else
#define BARACUDA_DISPATCH_INLINE inline
#endif

namespace baracuda {

template <DType D>
struct dtype_tag {
  static constexpr DType value = D;
  using type = host_type_t<D>;
};

// A compile-time list of dtypes; its order is the order error messages print.
template <DType... Ds>
struct DTypeList {
  static constexpr bool contains(DType t) { return ((t == Ds) || ...); }
  static constexpr size_t size = sizeof...(Ds);
  // "f32, f64, f16, bf16"
  static std::string names() {
    std::string s;
    ((s += (s.empty() ? "" : ", "), s += dtype_name(Ds)), ...);
    return s;
  }
};

// The dtypes today's floating-point plans (reduce, attention, RoPE) compute in.
// The fp8 types are floating point too (is_floating_point) but are storage
// formats no plan computes in yet, so they are not part of this list.
using FloatingTypes = DTypeList<DType::F32, DType::F64, DType::F16, DType::BF16>;
using Float8Types = DTypeList<DType::F8E4M3, DType::F8E5M2>;
using IntegralTypes = DTypeList<DType::I8, DType::U8, DType::I16, DType::I32, DType::I64>;
using ComplexTypes = DTypeList<DType::C64, DType::C128>;
namespace detail {
template <size_t... I>
DTypeList<kAllDTypes[I]...> all_dtypes(std::index_sequence<I...>);
}  // namespace detail
// Every dtype of the table, in table order.
using AllTypes = decltype(detail::all_dtypes(std::make_index_sequence<kDTypeCount>{}));

namespace detail {
template <class List>
struct first_dtype;
template <DType D, DType... Rest>
struct first_dtype<DTypeList<D, Rest...>> {
  static constexpr DType value = D;
};
}  // namespace detail

// f(dtype_tag<t>) when t is in List, otherwise(): both must return the same
// type (or convert to the type f returns for the list's first dtype). One
// switch over the table (a jump table, as fast as a hand-written switch: the
// CPU references call this per element); f is instantiated only for the
// list's dtypes. Forced inline: a call per element would double the time of
// the CPU references.
template <class List, class F, class G>
BARACUDA_DISPATCH_INLINE decltype(auto) dispatch_dtype(DType t, F&& f, G&& otherwise) {
  using R = decltype(f(dtype_tag<detail::first_dtype<List>::value>{}));
  switch (t) {
#define BARACUDA_DTYPE_DISPATCH_CASE(E, name, bytes, cat, sgn, host) \
  case DType::E:                                                    \
    if constexpr (List::contains(DType::E))                         \
      return static_cast<R>(f(dtype_tag<DType::E>{}));              \
    else                                                            \
      return static_cast<R>(otherwise());
    BARACUDA_DTYPE_TABLE(BARACUDA_DTYPE_DISPATCH_CASE)
#undef BARACUDA_DTYPE_DISPATCH_CASE
  }
  return static_cast<R>(otherwise());  // a byte that is no DType
}

// The error every plan returns for a dtype outside its list.
template <class List>
Status unsupported_dtype(std::string_view plan, DType t) {
  return Status(StatusCode::Unsupported, std::string(plan) + ": dtype " + std::string(dtype_name(t)) +
                                             " is not supported (" + List::names() + ")");
}

// f(dtype_tag<t>) when t is in List, else unsupported_dtype<List>(plan, t).
// f returns Status, Result<X> (anything a Status converts to) or void (then
// visit_dtype returns Status::ok()).
template <class List, class F>
auto visit_dtype(DType t, std::string_view plan, F&& f) {
  using Ret = decltype(f(dtype_tag<detail::first_dtype<List>::value>{}));
  if constexpr (std::is_void_v<Ret>) {
    auto wrapped = [&](auto tag) -> Status {
      f(tag);
      return Status::ok();
    };
    return dispatch_dtype<List>(t, wrapped, [&]() -> Status { return unsupported_dtype<List>(plan, t); });
  } else {
    return dispatch_dtype<List>(t, f, [&]() -> Ret { return unsupported_dtype<List>(plan, t); });
  }
}

}  // namespace baracuda
