// ---- advanced indexing: x[i, :, j] (aten::index) and index_put_ (accumulate) -------------
// torch's advanced indexing with integer index tensors.
//
// Shapes. self / x has rank 1..8. Every dim d of self either carries an index
// tensor (has_index[d], of shape index_shape[d]) or is a full slice `:`; at
// least one dim is indexed. The index tensors broadcast together (torch's
// broadcasting: right-aligned, extents equal or 1) to the shape B. The result
// shape R (out of IndexGetPlan, the positions of IndexPutPlan):
//   * the indexed dims adjacent (x[:, i, j]): self[:first] + B + self[last+1:];
//   * not adjacent (x[i, :, j]): B + the non-indexed dims in order (torch /
//     numpy's rule: the broadcast dims move to the front).
// R must have rank <= 8. A rank-0 index tensor broadcasts as a scalar
// (x[i] with a 0-D i drops the dim).
//
// Indices (I32 or I64, every index tensor of one dtype): values in
// [-size, size) of their dim; a negative value counts from the end (+ size),
// as torch. Boolean masks are not taken: convert a mask with NonzeroPlan and
// index with its columns (torch's own rewrite of x[mask]).
//   CPU:  run() checks every index first and returns InvalidProblem naming the
//         first bad position of R (lowest row-major position; within it, the
//         lowest indexed dim) and its index tensor, before writing anything.
//   CUDA: a bad index never reads or writes out of bounds: get writes ZERO for
//         that output element, put skips that contribution. The lowest bad
//         position of R is recorded in the workspace's error word and
//         check_indices(stream, ws) reports it with its coordinates in R (as
//         EmbeddingPlan's check_indices: synchronizes, not capture-safe).
//
// IndexGetPlan: out (shape R) = x[indices]: out[r] = x at the coordinates that
//   take, on each indexed dim, its index tensor's value at r's broadcast
//   position, and on each sliced dim r's coordinate of that dim. Every dtype
//   (bool, integers, floats, complex): the elements are copied as raw bits.
//
// IndexPutPlan: out = self; then for every position r of R in row-major order:
//   out[dest(r)] = values[r]   (accumulate = false), or
//   out[dest(r)] += values[r]  (accumulate = true).
//   values has values_shape, broadcastable to R (torch's rule; a rank-0 or [1]
//   values is one value for every position).
//   Duplicates (several positions with one destination), deterministic and
//   identical on CPU and CUDA:
//     accumulate = false: the LAST position in row-major order of R wins
//       (torch leaves the choice undefined);
//     accumulate = true: the contributions are summed in position order,
//       starting from self's value, in f32 for f16 / bf16 / f32 (f64 for f64),
//       rounded once to dtype; integers in int64 with wrap-around, then
//       truncated (wrapped) to the dtype.
//   dtypes: every dtype without accumulate (a raw copy); accumulate: f32, f64,
//   f16, bf16, i32, i64 (bool and the others: Unsupported).
//   out is self itself (the same view: in place) or disjoint from every input.
//
// Tensors: any non-negative strides (inputs may broadcast with stride 0).
// CUDA: numel(R) below 2^31, and for put numel(self) below 2^31 - 1 (its
// sort's 32-bit keys; Unsupported otherwise). Offsets are 64-bit.
//
// CUDA algorithms (sku().variant):
//   get  "elementwise": one thread per output element (grid-stride, 64-bit
//        offsets): decode r into R's coordinates, read each index tensor
//        through its broadcast strides, wrap, bounds-check, copy the element
//        by its size (1, 2, 4, 8 or 16 bytes).
//   put  "sorted": keys = each position's destination (the row-major offset
//        in self's shape; numel(self) for a bad index, sorted last and
//        skipped), values = the position; the indexing family's stable radix
//        sort (CUB); then one thread per run of equal keys writes it once: the
//        run's last position (accumulate = false) or the sum in position order
//        from self (accumulate = true). Out of place, self is copied to out
//        first. No atomics. workspace_size() = the alignment pad, the error
//        word, keys / positions (double-buffered) and the sort's storage.
//
// Backward (compositions of these two plans; tested in tests/indexing/):
//   index (get):  dx = IndexPutPlan accumulate of dout into zeros of x's shape
//                 (duplicates sum).
//   index_put:    dself = dout (accumulate), or index_put(dout, indices, 0)
//                 (not accumulate: the overwritten positions get no gradient);
//                 dvalues = index(dout) (IndexGetPlan, shape R). When values
//                 broadcast to R, the caller sums that result over the
//                 broadcast dims (a ReducePlan sum) to get values_shape.

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

// The indexing expression both plans share: self's shape and, per dim, an
// index tensor or a full slice.
struct AdvancedIndex {
  DType index_dtype = DType::I64;  // I32 or I64, every index tensor alike
  Dims self_shape;                 // x (get) / self (put): rank 1..8
  bool has_index[kMaxRank] = {};   // dim d indexed (else `:`); at least one
  Dims index_shape[kMaxRank];      // the index tensor of dim d (has_index[d] only)
};

// B (the index tensors broadcast together) and R (the result shape), or
// InvalidProblem naming `plan` and the rule broken.
BARACUDA_API Status advanced_index_shapes(const char* plan, const AdvancedIndex& ix, Dims* broadcast, Dims* result);

struct IndexGetDescriptor {
  DType dtype = DType::F32;  // x and out: any dtype
  AdvancedIndex index;       // index.self_shape is x's shape
};

struct IndexGetArgs {
  TensorRef x;                   // index.self_shape, dtype
  TensorRef indices[kMaxRank];   // indices[d]: index_shape[d] where has_index[d], else absent
  TensorMut out;                 // out_shape() (R), dtype
};

class BARACUDA_API IndexGetPlan : public PlanBase {
 public:
  IndexGetPlan() : PlanBase("IndexGetPlan") {}
  static Result<IndexGetPlan> select(const Stream& stream, const IndexGetDescriptor& desc,
                                     const PlanPreference& pref = {});
  Status can_implement(const IndexGetArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const IndexGetArgs& args) const;  // CUDA workspace: the error word
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const IndexGetArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const IndexGetDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return result_; }        // R
  Dims broadcast_shape() const { return broadcast_; }  // B

 private:
  IndexGetDescriptor desc_;
  Dims broadcast_, result_;
};

struct IndexPutDescriptor {
  DType dtype = DType::F32;  // self / values / out: any (accumulate: f32, f64, f16, bf16, i32, i64)
  AdvancedIndex index;       // index.self_shape is self's shape
  Dims values_shape;         // broadcastable to R
  bool accumulate = false;
};

struct IndexPutArgs {
  TensorRef self;                // index.self_shape
  TensorRef indices[kMaxRank];   // as IndexGetArgs
  TensorRef values;              // values_shape
  TensorMut out;                 // index.self_shape: self's own view (in place) or disjoint
};

class BARACUDA_API IndexPutPlan : public PlanBase {
 public:
  IndexPutPlan() : PlanBase("IndexPutPlan") {}
  static Result<IndexPutPlan> select(const Stream& stream, const IndexPutDescriptor& desc,
                                     const PlanPreference& pref = {});
  Status can_implement(const IndexPutArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const IndexPutArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const IndexPutArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const IndexPutDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return desc_.index.self_shape; }
  Dims result_shape() const { return result_; }        // R: the positions
  Dims broadcast_shape() const { return broadcast_; }  // B

 private:
  IndexPutDescriptor desc_;
  Dims broadcast_, result_;
};

}  // namespace baracuda
