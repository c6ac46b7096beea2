// The GEMM family's elementwise passes (launch.hpp) on the public elementwise
// template. The activation functors are the elementwise family's own
// (functors.hpp / functors_grad.hpp), so GELU here rounds exactly as GeluPlan.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "baracuda/cuda/elementwise.cuh"
#include "core/error.hpp"
#include "ops/elementwise/functors.hpp"
#include "ops/elementwise/functors_grad.hpp"
#include "ops/gemm/launch.hpp"

namespace baracuda::gemm::cuda {

namespace {

namespace ewfn = baracuda::elementwise::fn;
using baracuda::elementwise::Params;
namespace bc = baracuda::cuda;

template <class C>
__device__ C apply_act(GemmActivation act, C x, const Params& q) {
  switch (act) {
    case GemmActivation::Relu: return ewfn::unary<UnaryOp::Relu, C>(x, q);
    case GemmActivation::GeluTanh: return ewfn::unary<UnaryOp::GeluTanh, C>(x, q);
    case GemmActivation::Gelu: return ewfn::unary<UnaryOp::GeluErf, C>(x, q);
    default: return x;
  }
}

template <class C>
struct Act {
  static constexpr bool kHeavy = true;  // erf / tanh: 4 vectors in flight per thread (vec_loops)
  GemmActivation act;
  Params q;
  __device__ C operator()(C x) const { return apply_act(act, x, q); }
};

template <class C>
struct ActGrad {
  static constexpr bool kHeavy = true;
  GemmActivation act;
  Params q;
  __device__ C operator()(C dy, C pre) const {
    switch (act) {
      case GemmActivation::Relu: return ewfn::unary_grad<UnaryOp::Relu, C>(dy, pre, q);
      case GemmActivation::GeluTanh: return ewfn::unary_grad<UnaryOp::GeluTanh, C>(dy, pre, q);
      case GemmActivation::Gelu: return ewfn::unary_grad<UnaryOp::GeluErf, C>(dy, pre, q);
      default: return dy;
    }
  }
};

template <class C>
struct Identity {
  __device__ C operator()(C x) const { return x; }
};

template <class C>
struct Affine {
  C beta;
  __device__ C operator()(C c, C bias) const { return beta * c + bias; }
};

// Calls fn.template operator()<C, T>() for the dtype's storage T and compute C.
template <class F>
Status by_dtype(const char* who, DType t, F&& f) {
  switch (t) {
    case DType::F32: return f.template operator()<float, float>();
    case DType::F64: return f.template operator()<double, double>();
    case DType::F16: return f.template operator()<float, __half>();
    case DType::BF16: return f.template operator()<float, __nv_bfloat16>();
    default: return baracuda::detail::unsupported(who, "dtype ", t, " has no GEMM pass");
  }
}

Params params_of(DType t) {
  Params q;
  q.bits = static_cast<int>(dtype_size(t) * 8);
  return q;
}

bool given(const TensorRef& v) { return !(v.data == nullptr && v.shape.rank == 0); }

}  // namespace

Status activation_pass(const Stream& stream, GemmActivation act, const TensorRef& pre, const TensorMut& out) {
  return by_dtype("MatmulPlan", out.dtype, [&]<class C, class T>() {
    return bc::elementwise<C, T(T)>(stream, Act<C>{act, params_of(out.dtype)}, out, pre);
  });
}

Status activation_grad_pass(const Stream& stream, GemmActivation act, const TensorRef& dy, const TensorRef& pre,
                            const TensorMut& g) {
  return by_dtype("LinearBackwardPlan", g.dtype, [&]<class C, class T>() {
    return bc::elementwise<C, T(T, T)>(stream, ActGrad<C>{act, params_of(g.dtype)}, g, dy, pre);
  });
}

Status copy_pass(const Stream& stream, const TensorRef& c, const TensorMut& out) {
  return by_dtype("MatmulPlan", out.dtype,
                  [&]<class C, class T>() { return bc::elementwise<C, T(T)>(stream, Identity<C>{}, out, c); });
}

Status affine_pass(const Stream& stream, double beta, const TensorRef& c, const TensorRef& bias, const TensorMut& out) {
  return by_dtype("MatmulPlan", out.dtype, [&]<class C, class T>() {
    const Affine<C> fn{static_cast<C>(beta)};
    const bool hc = given(c), hb = given(bias);
    if (hc && hb) return bc::elementwise<C, T(T, T)>(stream, fn, out, c, bias);
    if (hc) return bc::elementwise<C, T(T, C)>(stream, fn, out, c, bc::scalar(C(0)));
    if (hb) return bc::elementwise<C, T(C, T)>(stream, fn, out, bc::scalar(C(0)), bias);
    return bc::elementwise<C, T(C, C)>(stream, fn, out, bc::scalar(C(0)), bc::scalar(C(0)));
  });
}

}  // namespace baracuda::gemm::cuda
