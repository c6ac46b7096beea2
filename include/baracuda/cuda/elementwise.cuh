// Your own fused elementwise functor on baracuda's engine: NumPy broadcasting,
// 16-byte vectorized loads and stores, strided and transposed views, 32- or
// 64-bit indexing, in place — the machinery behind UnaryPlan / BinaryPlan /
// TernaryPlan, for an op that is not in their tables.
//
//   #include <baracuda/cuda/elementwise.cuh>   // a CUDA translation unit (nvcc)
//   namespace bc = baracuda::cuda;
//
//   struct SiluMulAdd {  // the compute type's values in, a compute value out
//     __device__ float operator()(float a, float b, float bias) const {
//       return a / (1.0f + __expf(-a)) * b + bias;
//     }
//   };
//   // y = silu(a) * b + bias: bf16 storage, f32 compute, bias a [n] row
//   // broadcast over y's [m, n].
//   Status st = bc::elementwise<float, __nv_bfloat16(__nv_bfloat16, __nv_bfloat16, __nv_bfloat16)>(
//       stream, SiluMulAdd{}, y, a, b, bias);
//   // A host number as an operand: bc::scalar(0.5f) in place of a view.
//
// Template arguments:
//   C    the compute type the functor takes: float, double or an integer type
//        (16-bit floats compute in float, as the plans do).
//   Sig  the storage types, written as a function type Out(In0[, In1[, In2]]):
//        bool, int8_t, uint8_t, int16_t, int32_t, int64_t, __half,
//        __nv_bfloat16, float or double. They are checked at run time against
//        the views' dtypes. A scalar operand's slot is not read (write C).
//   Fn   deduced: a trivially copyable functor with a __device__
//        operator()(C[, C[, C]]) const (a __device__ lambda needs nvcc's
//        --extended-lambda). Optional: `static constexpr bool kHeavy = true`
//        in a functor doing transcendental math lets the 16-bit vector path
//        keep 4 vectors in flight per thread instead of 2. Loads convert storage -> C; the result converts
//        to Out with the plans' rules (to_storage in elementwise_engine.cuh:
//        16-bit floats round to nearest even through float; floating ->
//        integer truncates, out-of-range saturating through int64 like
//        float_to_int64, then wraps; -> bool is != 0).
//
// Operands: each input is a TensorRef / TensorMut view (broadcast to out's
// shape by NumPy rules; any non-negative strides) or scalar(v), a host number (never the only input: a compile error)
// converted to C. The rules, each failure a Status naming
// "baracuda::cuda::elementwise" and the operand (out, in0, in1, in2), as the
// plans' argument checks (detail::check_ew_call):
//   the stream is a CUDA stream; views on its device, of Sig's dtypes, valid
//   (strides >= 0, capacity, element alignment); out does not broadcast
//   (stride 0 with extent > 1) and overlaps no input unless it is exactly
//   that input (same data, shape and strides: in place). A zero-size out
//   launches nothing.
// The kernel runs asynchronously on the stream; errors of the launch itself
// come back as CudaError.
//
// Paths (elementwise_path() reports the one a call takes), chosen as the
// plans choose (detail::choose_ew_path): Vec16 when every operand is
// unit-stride or broadcast along the innermost dim and aligned — a thread
// owns V = 16 / (the narrowest tensor storage size) consecutive elements (a
// scalar's slot does not count), fewer than 2^31 such vectors unless the
// layout coalesces to one dim; Transpose for one input read along a dim the
// output is not contiguous in (x.t().contiguous()); Strided32 below 2^31
// elements and offsets; Generic64 otherwise (64-bit indices). Each call site instantiates the kernels of
// every path for its types: compile time grows with the number of distinct
// (functor, Sig) pairs, not with the calls.
//
// Stable API (semantic versioning): baracuda::cuda::elementwise,
// elementwise_path, scalar, ScalarOperand, ElementwisePath. Everything in
// namespace detail (here, baracuda::detail and baracuda::dev::ew) may change
// in a minor release.
//
// Needs nvcc (the kernels are templates instantiated in your translation
// unit) and the library (the host helpers are exported by libbaracuda).
// With `using namespace baracuda;` in scope, spell libcu++'s namespace
// ::cuda:: (baracuda::cuda would otherwise be found too).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <type_traits>

#include "baracuda/core/cuda_types.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/cuda/detail/elementwise_host.hpp"
#include "baracuda/cuda/elementwise_engine.cuh"

namespace baracuda::cuda {

// The engine's kernels, as elementwise_path() reports them.
using ElementwisePath = baracuda::detail::EwPath;

// A host number as an operand (converted to the compute type C).
template <class S>
struct ScalarOperand {
  S value;
};
template <class S>
constexpr ScalarOperand<S> scalar(S value) {
  return {value};
}

namespace detail {

inline constexpr const char* kName = "baracuda::cuda::elementwise";

// Grid-stride iterations per thread on the vec16 path, as the plans choose
// them: 1 for V < 8 elements per vector; for 16-bit storage 2, or 4 when the
// functor declares `static constexpr bool kHeavy = true` (transcendental
// math: more independent loads in flight per thread hide its latency).
template <class Fn>
constexpr int vec_loops(int V) {
  if (V < 8) return 1;
  if constexpr (requires { Fn::kHeavy; }) return Fn::kHeavy ? 4 : 2;
  else return 2;
}

template <class T>
inline constexpr bool kStorage = std::is_same_v<T, bool> || std::is_same_v<T, int8_t> || std::is_same_v<T, uint8_t> ||
                                 std::is_same_v<T, int16_t> || std::is_same_v<T, int32_t> ||
                                 std::is_same_v<T, int64_t> || std::is_same_v<T, __half> ||
                                 std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, float> ||
                                 std::is_same_v<T, double>;

template <class X>
inline constexpr bool kScalar = false;
template <class S>
inline constexpr bool kScalar<ScalarOperand<S>> = true;
template <class X>
inline constexpr bool kTensor = std::is_convertible_v<X, TensorRef> && !kScalar<X>;

// The call's compile-time facts: Sig = R(A...) and the operand kinds Ops...
template <class C, class Sig, class... Ops>
struct Call;
template <class C, class R, class... A, class... Ops>
struct Call<C, R(A...), Ops...> {
  static constexpr int N = static_cast<int>(sizeof...(A));
  static_assert(sizeof...(Ops) == sizeof...(A),
                "baracuda::cuda::elementwise: one operand per input of the signature Out(In...)");
  static_assert(N >= 1 && N <= 3, "baracuda::cuda::elementwise: 1 to 3 inputs");
  static_assert(std::is_arithmetic_v<C> && !std::is_same_v<C, bool>,
                "baracuda::cuda::elementwise: the compute type C is float, double or an integer type");
  static_assert(kStorage<R> && (kStorage<A> && ...),
                "baracuda::cuda::elementwise: storage types are bool, int8_t, uint8_t, int16_t, int32_t, int64_t, "
                "__half, __nv_bfloat16, float or double");
  static_assert(((kScalar<Ops> || kTensor<Ops>) && ...),
                "baracuda::cuda::elementwise: an input is a TensorRef / TensorMut view or scalar(value)");
  // The inputs' storage types; unused ones repeat T0 (the kernels' convention).
  template <int K>
  using In = std::tuple_element_t<(K < N ? K : 0), std::tuple<A...>>;
  // Elements per thread on the vector path: 16 bytes of the narrowest tensor operand.
  static constexpr size_t kNarrowest = [] {
    size_t m = sizeof(R);
    ((m = (kTensor<Ops> && sizeof(A) < m) ? sizeof(A) : m), ...);
    return m;
  }();
  static constexpr int V = static_cast<int>(16 / kNarrowest);

  // What a launch needs, built on the host from the operands.
  struct Prepared {
    baracuda::detail::EwLayout layout;
    ElementwisePath path = ElementwisePath::Generic64;
    const void* in[N] = {};
    DType in_dtype[N] = {};
    dev::ew::Scalars<C, N> scalars;
  };

  static Status prepare(const Stream& stream, const TensorMut& out, const Ops&... ops, Prepared* p) {
    TensorRef views[N];
    const TensorRef* view_of[N] = {};
    Dims shapes[N];
    const Dims* strides[N] = {};
    size_t sizes[N] = {};
    int k = 0;
    auto take = [&](const auto& op, size_t size, DType dtype) {
      using X = std::decay_t<decltype(op)>;
      p->in_dtype[k] = dtype;
      sizes[k] = size;
      if constexpr (kScalar<X>) {
        p->scalars.is[k] = true;
        p->scalars.v[k] = static_cast<C>(op.value);
      } else {
        views[k] = op;
        view_of[k] = &views[k];
        shapes[k] = views[k].shape;
        strides[k] = &views[k].strides;
        p->in[k] = views[k].data;
      }
      ++k;
    };
    (take(ops, sizeof(A), dtype_v<A>), ...);
    BARACUDA_RETURN_IF_ERROR(
        baracuda::detail::check_ew_call(kName, stream, out, dtype_v<R>, N, view_of, p->in_dtype));
    p->layout = baracuda::detail::make_ew_layout(out.shape, out.strides, N, shapes, strides);
    p->path = baracuda::detail::choose_ew_path(p->layout, V, out.data, sizeof(R), p->in, sizes);
    return Status::ok();
  }

  template <class Fn>
  static cudaError_t launch(const Prepared& p, void* out, const Fn& fn, cudaStream_t st) {
    // FastDiv index decoding on every path but Generic64 (choose_ew_path
    // keeps those paths within 32-bit indices).
    const bool use32 = p.path != ElementwisePath::Generic64;
    const auto a = dev::ew::args_of_layout<N>(p.layout, use32, out, dtype_v<R>, p.in, p.in_dtype);
    using T0 = In<0>;
    using T1 = In<1>;
    using T2 = In<2>;
    switch (p.path) {
      case ElementwisePath::Vec16:
        return dev::ew::launch_vec<N, V, C, R, T0, T1, T2>(a, p.scalars, fn, st, vec_loops<Fn>(V));
      case ElementwisePath::Transpose:
        if constexpr (N == 1) return dev::ew::launch_transpose<C, R, T0>(a, fn, st);
        break;
      case ElementwisePath::Strided32: return dev::ew::launch_strided<N, C, R, T0, T1, T2>(a, p.scalars, fn, st);
      case ElementwisePath::Generic64: break;
    }
    return dev::ew::launch_generic<N, C>(a, p.scalars, fn, st);
  }
};

// Makes `ordinal` the current device for a scope (kernels launch on the
// current device; the stream must belong to it).
class CurrentDevice {
 public:
  explicit CurrentDevice(int ordinal) {
    err_ = cudaGetDevice(&prev_);
    if (err_ == cudaSuccess && prev_ != ordinal) {
      err_ = cudaSetDevice(ordinal);
      restore_ = err_ == cudaSuccess;
    }
  }
  ~CurrentDevice() {
    if (restore_) (void)cudaSetDevice(prev_);
  }
  CurrentDevice(const CurrentDevice&) = delete;
  CurrentDevice& operator=(const CurrentDevice&) = delete;
  cudaError_t error() const { return err_; }

 private:
  int prev_ = 0;
  bool restore_ = false;
  cudaError_t err_ = cudaSuccess;
};

inline Status cuda_error(cudaError_t e, const char* what) {
  return Status(StatusCode::CudaError,
                std::string(kName) + ": " + what + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}

}  // namespace detail

// y = fn(in0[, in1[, in2]]) elementwise over out's shape, on `stream`.
template <class C, class Sig, class Fn, class... Operands>
Status elementwise(const Stream& stream, Fn fn, const TensorMut& out, const Operands&... inputs) {
  static_assert(std::is_trivially_copyable_v<Fn>, "baracuda::cuda::elementwise: the functor is a kernel parameter "
                                                  "and must be trivially copyable");
  // The one-input kernels read their input as a tensor (no scalar test: it
  // cost bandwidth); a lone scalar is a fill — FactoryPlan, or pass `out`
  // itself as the input and ignore it in the functor.
  static_assert(sizeof...(Operands) != 1 || (!detail::kScalar<Operands> && ...),
                "baracuda::cuda::elementwise: a one-input call needs a tensor input, not scalar()");
  using Call = detail::Call<C, Sig, Operands...>;
  typename Call::Prepared p;
  BARACUDA_RETURN_IF_ERROR(Call::prepare(stream, out, inputs..., &p));
  if (p.layout.numel == 0) return Status::ok();
  const detail::CurrentDevice device(stream.device().ordinal);
  if (device.error() != cudaSuccess) return detail::cuda_error(device.error(), "selecting the stream's device");
  const cudaError_t e = Call::launch(p, out.data, fn, static_cast<cudaStream_t>(stream.native_handle()));
  return e == cudaSuccess ? Status::ok() : detail::cuda_error(e, "kernel launch");
}

// The path elementwise<C, Sig>(stream, fn, out, inputs...) takes for these
// operands, after the same checks (launches nothing).
template <class C, class Sig, class... Operands>
Result<ElementwisePath> elementwise_path(const Stream& stream, const TensorMut& out, const Operands&... inputs) {
  using Call = detail::Call<C, Sig, Operands...>;
  typename Call::Prepared p;
  BARACUDA_RETURN_IF_ERROR(Call::prepare(stream, out, inputs..., &p));
  return p.path;
}

}  // namespace baracuda::cuda
