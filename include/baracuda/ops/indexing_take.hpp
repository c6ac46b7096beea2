// ---- take / put_ / one_hot: indexing through the row-major flattening ---------------------
//
// TakePlan: out = torch.take(x, index). x has any shape (rank 0..8) and any
//   non-negative strides (broadcast views included); it is read as its
//   row-major flattening flat(x) of N = numel(x) elements, whatever its
//   strides. index has any shape S (rank 0..8), out has shape S:
//     out[s] = flat(x)[index[s]]
// PutPlan: out = self.put_(index, source, accumulate). self has any shape /
//   strides and is viewed as its row-major flattening; index any shape, source
//   any shape with numel(source) == numel(index) (torch's rule: the shapes need
//   not match), both traversed in row-major order (position k):
//     out = self, then flat(out)[index[k]] <- source[k] for every k
//   accumulate = false: with duplicate destinations the LAST position wins
//     (torch leaves the choice undefined); deterministic on CPU and CUDA.
//   accumulate = true: every destination is self's value plus its
//     contributions summed in position order, accumulated in f32 for f16 /
//     bf16 / f32, in f64 for f64 and in int64 with two's-complement wrap for
//     i32 / i64, rounded (or wrapped) once to the dtype. No atomics: identical
//     bits on every run and on both backends.
//   out may be self itself (the same view: in place) or disjoint from every
//   input; destinations no index names keep self's value.
// OneHotPlan: out = torch.nn.functional.one_hot(indices, num_classes).
//   indices of any shape S (rank 0..7) hold classes; out has shape S + [C]
//   (C = num_classes) and is 1 at [s, indices[s]] and 0 elsewhere: every
//   element of out is written. out's dtype is I64 by default (torch's) or any
//   other dtype (f32, bf16, ...: 1 and 0 of that dtype, handy for losses).
//   torch takes int64 indices only; these plans take I32 too. num_classes must
//   be given (C >= 1): torch's num_classes = -1 (C = max(indices) + 1) depends
//   on the data, so callers run ReducePlan amax over the indices, read the
//   result and select the plan with C = max + 1 (two phases; torch also reads
//   the maximum back to the host).
//
// Indices (I32 or I64).
//   take / put_: in [-N, N); a negative index counts from the end (+ N), as
//     torch's take and put_ (an empty x / self has no valid index).
//   one_hot: classes in [0, C) (torch: an error for a negative class or one
//     >= num_classes).
//   CPU:  run() checks every index first and returns InvalidProblem naming
//         the first bad position (with its coordinates) before writing anything.
//   CUDA: a bad index never reads or writes out of bounds: take writes zero for
//         that output element, put_ skips the contribution, one_hot writes a
//         zero row; the lowest bad position is recorded in the workspace's
//         error word and check_indices(stream, ws) reports it (as EmbeddingPlan's).
//
// dtypes: TakePlan and PutPlan without accumulate: every dtype (the elements
// are copied as raw bits by their size: 1, 2, 4, 8 or 16 bytes); PutPlan with
// accumulate: f32, f64, f16, bf16, i32, i64; OneHotPlan: every dtype for out.
// CUDA: N and numel(index) below 2^31 for put_ (its sort keys and positions
// are 32-bit; Unsupported otherwise), numel(index) below 2^31 for take.
//
// CUDA algorithms (sku().variant):
//   take    "flat": one thread per output element; the flat index is decoded
//           into x's coordinates through its strides ("flat.contiguous" when x
//           is contiguous: the flat index is the element offset).
//   put     "sorted": each index element's destination (its wrapped flat index;
//           N for a bad one) and its position are sorted with the family's
//           stable radix sort (cuda/embedding_sort.cu), then one thread per run
//           of equal destinations combines it in position order and writes
//           once; out of place, self is copied to out first. workspace_size() =
//           the alignment pad, the error word, keys / positions
//           (double-buffered) and the sort's temporary storage.
//   one_hot "fill": when out is contiguous (any alignment), a
//           cudaMemsetAsync to zero (memset speed: the zeros are nearly all
//           the bytes), then one thread per row writes its one (a bad class
//           leaves its row zero and is recorded); "elementwise" (one thread
//           per element, reading its row's class once per row) otherwise.
//
// Backward (compositions of these plans; tested in tests/indexing/cpu_take.cpp):
//   take:  dx = PutPlan accumulate of dout into zeros of x's shape.
//   put_:  accumulate: dself = dout; not accumulate: dself = put(dout, index,
//          zeros) (the overwritten destinations get no gradient); both:
//          dsource = take(dout, index) (reshaped to source's shape).
//   one_hot: not differentiable (integer classes).

#pragma once
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct TakeDescriptor {
  DType dtype = DType::F32;        // x and out: any dtype
  DType index_dtype = DType::I64;  // I32 or I64
  Dims x_shape;                    // rank 0..8
  Dims index_shape;                // rank 0..8; out has this shape
};

struct TakeArgs {
  TensorRef x;      // x_shape
  TensorRef index;  // index_shape
  TensorMut out;    // index_shape
};

class BARACUDA_API TakePlan : public PlanBase {
 public:
  TakePlan() : PlanBase("TakePlan") {}
  static Result<TakePlan> select(const Stream& stream, const TakeDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const TakeArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const TakeArgs& args) const;  // CUDA workspace: the error word
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const TakeArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const TakeDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return desc_.index_shape; }

 private:
  TakeDescriptor desc_;
};

struct PutDescriptor {
  DType dtype = DType::F32;        // self, source, out: any dtype (accumulate: f32, f64, f16, bf16, i32, i64)
  DType index_dtype = DType::I64;  // I32 or I64
  Dims self_shape;                 // rank 0..8; out has this shape
  Dims index_shape;                // rank 0..8
  Dims source_shape;               // rank 0..8, numel(source_shape) == numel(index_shape)
  bool accumulate = false;
};

struct PutArgs {
  TensorRef self;    // self_shape
  TensorRef index;   // index_shape
  TensorRef source;  // source_shape
  TensorMut out;     // self_shape: self's own view (in place) or disjoint
};

class BARACUDA_API PutPlan : public PlanBase {
 public:
  PutPlan() : PlanBase("PutPlan") {}
  static Result<PutPlan> select(const Stream& stream, const PutDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const PutArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const PutArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const PutArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const PutDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return desc_.self_shape; }

 private:
  PutDescriptor desc_;
};

struct OneHotDescriptor {
  DType index_dtype = DType::I64;  // I32 or I64
  Dims index_shape;                // S: rank 0..7
  int64_t num_classes = 0;         // C >= 1 (torch's -1, "infer", is two-phase: see above)
  DType dtype = DType::I64;        // out: any dtype (torch: I64)
};

struct OneHotArgs {
  TensorRef indices;  // index_shape, index_dtype
  TensorMut out;      // index_shape + [num_classes], dtype
};

class BARACUDA_API OneHotPlan : public PlanBase {
 public:
  OneHotPlan() : PlanBase("OneHotPlan") {}
  static Result<OneHotPlan> select(const Stream& stream, const OneHotDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const OneHotArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const OneHotArgs& args) const;  // CUDA workspace: the error word
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const OneHotArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const OneHotDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const;  // index_shape + [num_classes]

 private:
  OneHotDescriptor desc_;
};

}  // namespace baracuda
