// The elementwise engine's host side, shared by the plans (UnaryPlan, ...)
// and the public device-side template (baracuda/cuda/elementwise.cuh):
//   make_ew_layout   NumPy broadcasting of the inputs to the output's shape,
//                    a memory-friendly dim order, dimension coalescing
//   choose_ew_path   which kernel of baracuda/cuda/elementwise_engine.cuh runs
//   check_ew_call    the argument rules of a call (dtypes, devices, shapes,
//                    broadcast output, overlap) for the public template
//
// Plain C++ (no CUDA header): the CPU reference uses the layout too.
//
// Why exported from the library (BARACUDA_API) rather than inline here: the
// layout and the checks are built on internals that stay private (dimension
// coalescing, shared with the reductions; the exact overlap search; ArgCheck),
// and they run once per call on the host, where an out-of-line call costs
// nothing. Exporting keeps one compiled implementation that the plans and
// every user of the template share; inline copies would freeze that code
// into each user's binary.
//
// Not stable API: namespace baracuda::detail may change between minor
// releases (docs/OPS.md, "Custom elementwise functors", lists the stable names).
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::detail {

// Up to three outputs and four inputs (a ternary op's gradients: da, db, dc
// from dy, a, b, c); the public template uses one output and up to three.
inline constexpr int kEwMaxOperands = 7;

// Operands [0, outputs) are the outputs, [outputs, operands) the inputs.
// Dims are row-major: dim rank-1 is the innermost (the smallest output
// stride). Strides are in elements; an input that broadcasts along a dim
// (extent 1 there, missing leading dims, a host scalar) has stride 0 there.
struct EwLayout {
  int rank = 0;  // after coalescing; 0 = a single element (numel 1)
  int outputs = 1;
  int operands = 0;
  int64_t numel = 0;
  int64_t shape[kMaxRank] = {};
  int64_t stride[kEwMaxOperands][kMaxRank] = {};
};

// in_shapes / in_strides: one per input; in_strides[k] == nullptr marks a host
// scalar (stride 0 everywhere). Every input shape must broadcast to
// out_shape (checked by the caller). Dims are reordered so that the output's
// strides decrease (stable: equal strides keep their order), extent-1 dims
// dropped and neighbours merged where every operand allows it.
// n_out outputs of out_shape: out_strides[m] in out_shape's rank, nullptr for
// an output not written (stride 0 everywhere: it never blocks a merge). Dims
// are ordered by the first written output's strides.
BARACUDA_API EwLayout make_ew_layout(const Dims& out_shape, int n_out, const Dims* const* out_strides, int n_in,
                                     const Dims* in_shapes, const Dims* const* in_strides);
// One output.
inline EwLayout make_ew_layout(const Dims& out_shape, const Dims& out_strides, int n_in, const Dims* in_shapes,
                               const Dims* const* in_strides) {
  const Dims* out[1] = {&out_strides};
  return make_ew_layout(out_shape, 1, out, n_in, in_shapes, in_strides);
}

// The largest element offset + 1 an operand reaches in the layout (0 for a
// stride-0-everywhere operand: one element).
BARACUDA_API int64_t ew_operand_extent(const EwLayout& L, int operand);

// True when the element count and every operand's reach are below 2^31: the
// kernels may decode indices in 32 bits (FastDiv).
BARACUDA_API bool ew_fits32(const EwLayout& L);

// The kernels of baracuda/cuda/elementwise_engine.cuh.
enum class EwPath : uint8_t {
  Vec16,      // vec_kernel: V elements per thread, 16-byte accesses
  Strided32,  // strided_kernel: 32-bit indices (FastDiv)
  Generic64,  // generic_kernel: 64-bit indices
  Transpose,  // transpose_kernel: one input, read and written through a shared-memory tile
};

// The fastest path the layout and pointers allow, for kernels whose operand
// storage types are known at compile time (the plans take Generic64 for
// mixed dtypes before asking):
//   Vec16      every operand unit-stride (an input may broadcast, stride 0)
//              along the innermost dim, its extent a multiple of vec_width,
//              every unit-stride operand's base aligned to
//              min(16, vec_width * element size) bytes and every outer stride
//              a multiple of vec_width; with outer dims (coalesced rank > 1),
//              fewer than 2^31 vectors (32-bit chunk index decoding);
//   Transpose  one tensor input, rank 2, the output unit-stride along dim 1
//              and the input along dim 0 (a transposed copy);
//   Strided32  ew_fits32;
//   Generic64  otherwise.
// in[k] == nullptr marks a scalar input (never read from memory), out[m] ==
// nullptr an output not written (L.outputs of them); sizes are in bytes per
// element. Transpose needs one output.
BARACUDA_API EwPath choose_ew_path(const EwLayout& L, int vec_width, const void* const* out, const size_t* out_size,
                                   const void* const* in, const size_t* in_size);
// One output.
inline EwPath choose_ew_path(const EwLayout& L, int vec_width, const void* out, size_t out_size, const void* const* in,
                             const size_t* in_size) {
  const void* outs[1] = {out};
  const size_t sizes[1] = {out_size};
  return choose_ew_path(L, vec_width, outs, sizes, in, in_size);
}

// The argument rules of one call of baracuda::cuda::elementwise, each failure
// an InvalidProblem (or BufferTooSmall) Status whose message starts with
// `who` and names the operand ("out", "in0", "in1", "in2"):
//   the stream is a CUDA stream; out and every tensor input are given, on the
//   stream's device, of the dtype the caller's types say, with valid views
//   (strides >= 0, capacity, element alignment); every input's shape
//   broadcasts to out's (NumPy rules); out writes no element twice (no
//   stride 0 along an extent > 1); out overlaps no input unless it is exactly
//   that input (same data, shape and strides: in place).
// in[k] == nullptr marks a scalar input (no view to check).
BARACUDA_API Status check_ew_call(const char* who, const Stream& stream, const TensorMut& out, DType out_dtype,
                                  int n_in, const TensorRef* const* in, const DType* in_dtype);

}  // namespace baracuda::detail
