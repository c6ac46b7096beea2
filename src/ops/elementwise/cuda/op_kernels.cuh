// The elementwise ops on the engine (baracuda/cuda/elementwise_engine.cuh): each op
// of the tables becomes a functor (functors.hpp) wrapped for the kernels.
//   launch_typed<Arity, T>    the vec / strided paths for operands of storage
//                             type T (where: a bool condition), the output the
//                             op's natural dtype; one generated TU per (arity,
//                             dtype) instantiates it for every op (manifest.cmake)
//   launch_generic<Arity, C>  the generic path in compute type C (float,
//                             double, int64), operands of any dtype
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <type_traits>

#include "core/cuda_device.hpp"
#include "baracuda/cuda/elementwise_engine.cuh"
#include "ops/elementwise/functors.hpp"
#include "ops/elementwise/functors_grad.hpp"
#include "ops/elementwise/problem.hpp"

namespace baracuda::elementwise::cuda {

// The compute type of a storage type: 16-bit floats compute in float,
// integers in int64.
template <class T>
using compute_of = std::conditional_t<std::is_integral_v<T>, int64_t,
                                      std::conditional_t<std::is_same_v<T, double>, double, float>>;

template <UnaryOp Op, class C>
struct UnaryFn {
  static constexpr bool kHeavy = compute_heavy(Op);
  Params q;
  __device__ __forceinline__ auto operator()(C x) const { return fn::unary<Op, C>(x, q); }
};
template <BinaryOp Op, class C>
struct BinaryFn {
  static constexpr bool kHeavy = compute_heavy(Op);
  Params q;
  __device__ __forceinline__ auto operator()(C a, C b) const { return fn::binary<Op, C>(a, b, q); }
};
template <TernaryOp Op, class C>
struct TernaryFn {
  Params q;
  __device__ __forceinline__ auto operator()(C a, C b, C c) const { return fn::ternary<Op, C>(a, b, c, q); }
};

// A unary op's gradient: dx from (dy, x), or from (dy, y) when FromY.
template <UnaryOp Op, class C, bool FromY>
struct UnaryGradFn {
  static constexpr bool kHeavy = gradient_heavy(Op);
  Params q;
  __device__ __forceinline__ C operator()(C dy, C v) const {
    if constexpr (FromY) return fn::unary_grad_from_y<Op, C>(dy, v, q);
    else return fn::unary_grad<Op, C>(dy, v, q);
  }
};

// An op's operand gradients (Binary/TernaryBackwardPlan): da, db[, dc] from
// (dy, a, b[, c]), as the engine's M-output struct.
template <BinaryOp Op, class C>
struct BinaryGradFn {
  Params q;
  __device__ __forceinline__ dev::ew::Outputs<C, 2> operator()(C dy, C a, C b) const {
    const auto g = fn::binary_grad<Op, C>(dy, a, b, q);
    return {{g.v[0], g.v[1]}};
  }
};
template <TernaryOp Op, class C>
struct TernaryGradFn {
  Params q;
  __device__ __forceinline__ dev::ew::Outputs<C, 3> operator()(C dy, C a, C b, C c) const {
    const auto g = fn::ternary_grad<Op, C>(dy, a, b, c, q);
    return {{g.v[0], g.v[1], g.v[2]}};
  }
};

template <int N, int M = 1>
dev::ew::Args<N, M> make_args(const Problem& p, const Call& c, bool use32) {
  DType out_dt[M];
  for (int m = 0; m < M; ++m) out_dt[m] = out_dtype_of(p, m);
  return dev::ew::args_of_layout<N, M>(c.layout, use32, c.out, out_dt, c.in, p.in_dtype);
}

template <class C, int N>
dev::ew::Scalars<C, N> make_scalars(const Problem& p, const Call& c) {
  dev::ew::Scalars<C, N> s;
  for (int k = 0; k < N; ++k) {
    s.is[k] = c.in[k] == nullptr;  // a scalar, or an absent clamp bound (never read)
    if constexpr (std::is_integral_v<C>) s.v[k] = static_cast<C>(c.value_i[k]);
    else s.v[k] = static_cast<C>(c.value_f[k]);
    (void)p;
  }
  return s;
}

inline Status launched(cudaError_t e) { return baracuda::detail::cuda_status(static_cast<int>(e), "elementwise kernel launch"); }

// A ternary op whose b and c are host scalars (or absent clamp bounds) as a
// unary functor: clamp(x, lo, hi), where(cond, 1.0, 0.0), lerp(a, 0, w)...
// run as one-operand kernels. Measured on the H100 (bf16 clamp [8192, 16384],
// docs/BENCHMARKS.md lab notes): the three-operand kernel that skips its
// scalar operands at run time held 89% of copy bandwidth, the bound unary
// one 99.7%.
template <class Fn, class C>
struct BindScalarsBC {
  static constexpr bool kHeavy = false;
  Fn fn;
  C b, c;
  __device__ __forceinline__ auto operator()(C a) const { return fn(a, b, c); }
};

// Grid-stride iterations per thread of the vector path (launch_vec's
// `loops`) on 8-value chunks (16-bit dtypes): 4 for a compute-heavy functor,
// 2 otherwise; one on wider chunks (f32 / f64 already take two chunks per
// iteration). Measured with bench/experiments/ew_vec_variants.cu (bf16
// [8192, 16384], % of copy bandwidth for 1 / 2 / 4 iterations): H100 gelu
// 87 / 91.5 / 94.5, silu 98.3 / 99.3 / 98.0, clamp 100.5 / 99.3 / 97.7;
// H200 gelu 64 / 68 / 70, silu 83 / 87 / 88, clamp 94 / 98.8 / 98.2.
template <class Fn>
constexpr int vec_loops(int V) {
  if (V < 8) return 1;
  if constexpr (requires { Fn::kHeavy; }) return Fn::kHeavy ? 4 : 2;
  else return 2;
}

// One op, typed paths. T0..T2: the inputs' storage types; Tc: the common one.
template <int N, class Fn, class Tout, class Tc, class T0, class T1, class T2>
Status run_typed(const Problem& p, const Call& c, Path path, cudaStream_t st, const Fn& fn) {
  using C = compute_of<Tc>;
  const auto a = make_args<N>(p, c, path != Path::Generic64);
  const auto s = make_scalars<C, N>(p, c);
  constexpr int V = static_cast<int>(16 / sizeof(Tc));
  if constexpr (N == 3) {
    if (c.in[1] == nullptr && c.in[2] == nullptr && (path == Path::Vec16 || path == Path::Strided32)) {
      const auto a1 = make_args<1>(p, c, true);
      const dev::ew::Scalars<C, 1> s1;  // a is a tensor
      const BindScalarsBC<Fn, C> bound{fn, s.v[1], s.v[2]};
      if (path == Path::Vec16) return launched(dev::ew::launch_vec<1, V, C, Tout, T0, T0, T0>(a1, s1, bound, st, vec_loops<Fn>(V)));
      return launched(dev::ew::launch_strided<1, C, Tout, T0, T0, T0>(a1, s1, bound, st));
    }
  }
  if (path == Path::Vec16) return launched(dev::ew::launch_vec<N, V, C, Tout, T0, T1, T2>(a, s, fn, st, vec_loops<Fn>(V)));
  if constexpr (N == 1)
    if (path == Path::Transpose) return launched(dev::ew::launch_transpose<C, Tout, T0>(a, fn, st));
  return launched(dev::ew::launch_strided<N, C, Tout, T0, T1, T2>(a, s, fn, st));
}

// UnaryOp::Copy from Tin into Tout (a cast): V elements of the narrower type per thread.
template <class Tin, class Tout>
Status run_cast(const Problem& p, const Call& c, Path path, cudaStream_t st) {
  using C = compute_of<Tin>;
  const UnaryFn<UnaryOp::Copy, C> fn{params_of(p)};
  const auto a = make_args<1>(p, c, path != Path::Generic64);
  const auto s = make_scalars<C, 1>(p, c);
  constexpr int V = static_cast<int>(16 / (sizeof(Tin) < sizeof(Tout) ? sizeof(Tin) : sizeof(Tout)));
  if (path == Path::Vec16) return launched(dev::ew::launch_vec<1, V, C, Tout, Tin, Tin, Tin>(a, s, fn, st));
  if (path == Path::Transpose) return launched(dev::ew::launch_transpose<C, Tout, Tin>(a, fn, st));
  return launched(dev::ew::launch_strided<1, C, Tout, Tin, Tin, Tin>(a, s, fn, st));
}

template <class Tin>
Status launch_cast(const Problem& p, const Call& c, Path path, cudaStream_t st) {
  switch (p.out) {
    case DType::F32: return run_cast<Tin, float>(p, c, path, st);
    case DType::F64: return run_cast<Tin, double>(p, c, path, st);
    case DType::F16: return run_cast<Tin, __half>(p, c, path, st);
    case DType::BF16: return run_cast<Tin, __nv_bfloat16>(p, c, path, st);
    case DType::I32: return run_cast<Tin, int32_t>(p, c, path, st);
    case DType::I64: return run_cast<Tin, int64_t>(p, c, path, st);
    default: return Status(StatusCode::Unsupported, "elementwise: no typed cast kernel for this output dtype");
  }
}

// Typed kernels of an op: the dtypes it computes in, less f16 / f64 for the
// rare special functions (typed_kernel_for: those take generic64).
template <class Op, class T>
constexpr bool typed_op_exists(Op op) {
  constexpr bool narrow_set = std::is_same_v<T, __half> || std::is_same_v<T, double>;
  return computes_in(op, std::is_integral_v<T>) && !(narrow_set && rare_special(op));
}

template <int Arity, class T>
Status launch_typed(const Problem& p, const Call& c, Path path, cudaStream_t st) {
  using C = compute_of<T>;
  const Params q = params_of(p);
  if constexpr (Arity == 1) {
    switch (static_cast<UnaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                                          \
  case UnaryOp::E:                                                                                      \
    if constexpr (typed_op_exists<UnaryOp, T>(UnaryOp::E)) {                                            \
      using Out = std::conditional_t<domain_of(UnaryOp::E) == Domain::Predicate, bool, T>;             \
      return run_typed<1, UnaryFn<UnaryOp::E, C>, Out, T, T, T, T>(p, c, path, st, {q});               \
    }                                                                                                   \
    break;
      BARACUDA_UNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  } else if constexpr (Arity == 2) {
    switch (static_cast<BinaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                                          \
  case BinaryOp::E:                                                                                     \
    if constexpr (typed_op_exists<BinaryOp, T>(BinaryOp::E)) {                                          \
      using Out = std::conditional_t<domain_of(BinaryOp::E) == Domain::Predicate, bool, T>;            \
      return run_typed<2, BinaryFn<BinaryOp::E, C>, Out, T, T, T, T>(p, c, path, st, {q});             \
    }                                                                                                   \
    break;
      BARACUDA_BINARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  } else {
    switch (static_cast<TernaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                                          \
  case TernaryOp::E:                                                                                    \
    if constexpr (TernaryOp::E == TernaryOp::Where)                                                     \
      return run_typed<3, TernaryFn<TernaryOp::E, C>, T, T, bool, T, T>(p, c, path, st, {q});          \
    else if constexpr (typed_op_exists<TernaryOp, T>(TernaryOp::E))                                     \
      return run_typed<3, TernaryFn<TernaryOp::E, C>, T, T, T, T, T>(p, c, path, st, {q});             \
    break;
      BARACUDA_TERNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  }
  return Status(StatusCode::Unsupported, "elementwise: no typed kernel for this op and dtype");
}

template <int Arity, class C>
Status launch_generic(const Problem& p, const Call& c, cudaStream_t st) {
  const Params q = params_of(p);
  const auto a = make_args<Arity>(p, c, false);
  const auto s = make_scalars<C, Arity>(p, c);
  constexpr bool I = std::is_integral_v<C>;
  if constexpr (Arity == 1) {
    switch (static_cast<UnaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                           \
  case UnaryOp::E:                                                                       \
    if constexpr (computes_in(UnaryOp::E, I))                                            \
      return launched(dev::ew::launch_generic<1, C>(a, s, UnaryFn<UnaryOp::E, C>{q}, st)); \
    break;
      BARACUDA_UNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  } else if constexpr (Arity == 2) {
    switch (static_cast<BinaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                             \
  case BinaryOp::E:                                                                        \
    if constexpr (computes_in(BinaryOp::E, I))                                             \
      return launched(dev::ew::launch_generic<2, C>(a, s, BinaryFn<BinaryOp::E, C>{q}, st)); \
    break;
      BARACUDA_BINARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  } else {
    switch (static_cast<TernaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                               \
  case TernaryOp::E:                                                                         \
    if constexpr (computes_in(TernaryOp::E, I))                                              \
      return launched(dev::ew::launch_generic<3, C>(a, s, TernaryFn<TernaryOp::E, C>{q}, st)); \
    break;
      BARACUDA_TERNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  }
  return Status(StatusCode::Unsupported, "elementwise: no generic kernel for this op and compute type");
}

// Unary gradients (UnaryBackwardPlan): typed paths for floating T, and the
// generic path (64-bit indices) in C.
template <class T>
Status launch_unary_grad(const Problem& p, const Call& c, Path path, cudaStream_t st) {
  using C = compute_of<T>;
  const Params q = params_of(p);
  switch (static_cast<UnaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                                              \
  case UnaryOp::E:                                                                                          \
    if constexpr (has_gradient(UnaryOp::E) && UnaryOp::E != UnaryOp::Copy &&                                \
                  typed_op_exists<UnaryOp, T>(UnaryOp::E)) {                                                \
      if constexpr (has_gradient_from_output(UnaryOp::E))                                                   \
        if (p.grad == 2) return run_typed<2, UnaryGradFn<UnaryOp::E, C, true>, T, T, T, T, T>(p, c, path, st, {q}); \
      return run_typed<2, UnaryGradFn<UnaryOp::E, C, false>, T, T, T, T, T>(p, c, path, st, {q});          \
    }                                                                                                       \
    break;
    BARACUDA_UNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
  }
  return Status(StatusCode::Unsupported, "elementwise: no gradient kernel for this op");
}

template <class C>
Status launch_generic_grad(const Problem& p, const Call& c, cudaStream_t st) {
  const Params q = params_of(p);
  const auto a = make_args<2>(p, c, false);
  const auto s = make_scalars<C, 2>(p, c);
  switch (static_cast<UnaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                                                  \
  case UnaryOp::E:                                                                                              \
    if constexpr (has_gradient(UnaryOp::E) && UnaryOp::E != UnaryOp::Copy) {                                    \
      if constexpr (has_gradient_from_output(UnaryOp::E))                                                       \
        if (p.grad == 2)                                                                                        \
          return launched(dev::ew::launch_generic<2, C, true>(a, s, UnaryGradFn<UnaryOp::E, C, true>{q}, st)); \
      return launched(dev::ew::launch_generic<2, C, true>(a, s, UnaryGradFn<UnaryOp::E, C, false>{q}, st));   \
    }                                                                                                           \
    break;
    BARACUDA_UNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
  }
  return Status(StatusCode::Unsupported, "elementwise: no generic gradient kernel for this op");
}

// Operand gradients of binary / ternary ops (grad 3 / 4): typed vec16 /
// strided32 for floating T (where's condition bool), every output T.
template <int N, int M, class Fn, class T, class T1>
Status run_grad_typed(const Problem& p, const Call& c, Path path, cudaStream_t st, const Fn& fn) {
  using C = compute_of<T>;
  const auto a = make_args<N, M>(p, c, true);
  const auto s = make_scalars<C, N>(p, c);
  constexpr int V = static_cast<int>(16 / sizeof(T));
  if (path == Path::Vec16) return launched(dev::ew::launch_vec<N, V, C, T, T, T1, T, T>(a, s, fn, st));
  return launched(dev::ew::launch_strided<N, C, T, T, T1, T, T>(a, s, fn, st));
}

template <class T>
Status launch_nary_grad(const Problem& p, const Call& c, Path path, cudaStream_t st) {
  using C = compute_of<T>;
  const Params q = params_of(p);
  if (p.grad == 3) {
    switch (static_cast<BinaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                                    \
  case BinaryOp::E:                                                                               \
    if constexpr (has_gradient(BinaryOp::E))                                                      \
      return run_grad_typed<3, 2, BinaryGradFn<BinaryOp::E, C>, T, T>(p, c, path, st, {q});       \
    break;
      BARACUDA_BINARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  } else {
    switch (static_cast<TernaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                                    \
  case TernaryOp::E:                                                                              \
    if constexpr (TernaryOp::E == TernaryOp::Where)                                               \
      return run_grad_typed<4, 3, TernaryGradFn<TernaryOp::E, C>, T, bool>(p, c, path, st, {q});  \
    else return run_grad_typed<4, 3, TernaryGradFn<TernaryOp::E, C>, T, T>(p, c, path, st, {q});
      BARACUDA_TERNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  }
  return Status(StatusCode::Unsupported, "elementwise: no operand-gradient kernel for this op");
}

// The same on the generic path (64-bit indices, any operand and output dtypes) in C.
template <class C>
Status launch_generic_nary_grad(const Problem& p, const Call& c, cudaStream_t st) {
  const Params q = params_of(p);
  const auto s = make_scalars<C, 4>(p, c);
  if (p.grad == 3) {
    const auto a = make_args<3, 2>(p, c, false);
    const auto s3 = make_scalars<C, 3>(p, c);
    switch (static_cast<BinaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params)                                                      \
  case BinaryOp::E:                                                                                 \
    if constexpr (has_gradient(BinaryOp::E))                                                        \
      return launched(dev::ew::launch_generic<3, C, true>(a, s3, BinaryGradFn<BinaryOp::E, C>{q}, st));   \
    break;
      BARACUDA_BINARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  } else {
    const auto a = make_args<4, 3>(p, c, false);
    switch (static_cast<TernaryOp>(p.op)) {
#define BARACUDA_EW_CASE(E, name, dom, params) \
  case TernaryOp::E: return launched(dev::ew::launch_generic<4, C, true>(a, s, TernaryGradFn<TernaryOp::E, C>{q}, st));
      BARACUDA_TERNARY_OPS(BARACUDA_EW_CASE)
#undef BARACUDA_EW_CASE
    }
  }
  return Status(StatusCode::Unsupported, "elementwise: no generic operand-gradient kernel for this op");
}

}  // namespace baracuda::elementwise::cuda
