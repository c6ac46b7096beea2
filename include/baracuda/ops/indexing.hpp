// Indexing family. First plans: EmbeddingPlan (torch.nn.functional.embedding)
// and EmbeddingBackwardPlan (its weight gradient, deterministic).
//
// Forward. weight [V, D] (V = num_embeddings, D = embedding_dim), indices of
// any shape S (rank 0..7, zero-size allowed), out of shape S + [D]:
//   out[s..., :] = weight[indices[s...], :]
// padding_idx rows are read normally in the forward (as PyTorch: only their
// gradient is special).
//
// Backward. dout of shape S + [D] (the table's dtype); the gradient of every
// table row is the sum of the dout rows whose index names it, summed in index
// order (the position order of the row-major flattened index tensor), with no
// atomics: identical results on every run. padding_idx gets no gradient.
//   Dense:   dweight [V, D] of grad_dtype; EVERY row is written: rows never
//            indexed and the padding_idx row are zero (as PyTorch's dense
//            gradient).
//   Compact: unique_rows [n] (n = numel(S), the index dtype),
//            dweight_compact [n, D] (grad_dtype) and count (a rank-0 I64
//            tensor on the plan's device): count = the number of distinct
//            valid indices other than padding_idx; unique_rows[0..count) holds
//            them in ascending order and dweight_compact[k, :] the gradient of
//            row unique_rows[k]. Entries from count on are filled: unique_rows
//            -1 and zero gradient rows, so every element is written (read
//            count first, for sparse / row-wise optimizer updates).
// Accumulation: f16 / bf16 / f32 in f32, f64 in f64, rounded once to
// grad_dtype. grad_dtype is the table's dtype, or F32 for a 16-bit table
// ("bf16 tables with f32 gradient accumulation": the f32 sums are stored
// unrounded). The CPU reference uses the same accumulator and the same order,
// so CPU and CUDA results are bit-identical.
//
// Indices (I32 or I64) must lie in [0, V): PyTorch's embedding accepts no
// negative index. padding_idx (has_padding_idx) may be negative and then
// counts from the end (padding_idx + V), as PyTorch; it must lie in [-V, V).
//   CPU:  run() checks every index first and returns InvalidProblem naming the
//         first bad one (lowest position) before writing anything.
//   CUDA: an index cannot be checked before launch. A bad index never reads or
//         writes out of bounds: the forward writes ZEROS for its output row,
//         the backward skips its contribution. The kernels record the lowest
//         bad position in an error word in the workspace (reset by every
//         run()). check_indices(stream, ws) synchronizes the stream, reads the
//         word and returns InvalidProblem naming that position (Ok when every
//         index was valid). Call it after run() with the same workspace and
//         before another run() reuses the workspace; it is not capture-safe
//         (it synchronizes: Unsupported while the stream captures). A CPU plan's
//         check_indices returns Ok (its run() already reported bad indices).
//
// Tensors: weight and dweight may have any non-negative strides (the CUDA fast
// path wants unit column strides, 16-byte aligned rows); indices any strides;
// out / dout / dweight_compact any strides of shape S + [D] / [n, D]. Outputs
// must overlap no input and no other output.
//
// CUDA algorithms (sku().variant):
//   forward   "warp[.vec16]": one warp per output row, 16-byte vectors when
//             every row of weight and out is 16-byte aligned with unit column
//             stride, element copies otherwise.
//   backward  "sorted[.vec16]": the (index, position) pairs are sorted with a
//             stable radix sort (CUB) into the workspace, so each row's
//             contributions lie together in position order; Dense: one warp per
//             (table row, column chunk) finds its run by binary search and sums
//             it (zeros when empty); Compact: a scan numbers the runs and one
//             warp per (run, column chunk) sums it. workspace_size() = an
//             alignment pad (any workspace pointer works) + the error word +
//             keys / positions (double-buffered) + row starts (dense) + the
//             sort's (and scan's) temporary storage. The CUDA backward needs V and n below
//             2^31 (Unsupported otherwise).
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

struct EmbeddingDescriptor {
  DType dtype = DType::F32;        // weight and out: f32, f64, f16, bf16
  DType index_dtype = DType::I64;  // indices: I32 or I64
  int64_t num_embeddings = 0;      // V >= 0
  int64_t embedding_dim = 0;       // D >= 0
  Dims index_shape;                // S: rank <= 7 (out has rank + 1), any extents >= 0
  bool has_padding_idx = false;
  int64_t padding_idx = 0;         // in [-V, V); negative counts from the end
};

struct EmbeddingArgs {
  TensorRef weight;   // [V, D], dtype
  TensorRef indices;  // S, index_dtype
  TensorMut out;      // S + [D], dtype
};

class BARACUDA_API EmbeddingPlan : public PlanBase {
 public:
  EmbeddingPlan() : PlanBase("EmbeddingPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<EmbeddingPlan> select(const Stream& stream, const EmbeddingDescriptor& desc,
                                      const PlanPreference& pref = {});
  Status can_implement(const EmbeddingArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const EmbeddingArgs& args) const;  // CUDA workspace: the error word
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const EmbeddingArgs& args) const;
  // CUDA: synchronizes the stream and reports the first out-of-range index the
  // last run() with this workspace met (see the header comment). CPU: Ok.
  Status check_indices(const Stream& stream, Workspace ws) const;

  // padding_idx resolved to [0, V) when has_padding_idx.
  const EmbeddingDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const;  // index_shape + [embedding_dim]

 private:
  EmbeddingDescriptor desc_;
};

enum class EmbeddingGradLayout : uint8_t { Dense, Compact };
BARACUDA_API const char* embedding_grad_layout_name(EmbeddingGradLayout l);

struct EmbeddingBackwardDescriptor {
  EmbeddingDescriptor forward;
  DType grad_dtype = DType::F32;  // dweight / dweight_compact: forward.dtype, or F32 for a 16-bit table
  EmbeddingGradLayout layout = EmbeddingGradLayout::Dense;
};

struct EmbeddingBackwardArgs {
  TensorRef indices;          // S, index_dtype
  TensorRef dout;             // S + [D], forward.dtype
  TensorMut dweight;          // Dense: [V, D], grad_dtype (every row written)
  TensorMut unique_rows;      // Compact: [n], index_dtype (-1 from count on)
  TensorMut dweight_compact;  // Compact: [n, D], grad_dtype (zero rows from count on)
  TensorMut count;            // Compact: rank 0, I64
};

class BARACUDA_API EmbeddingBackwardPlan : public PlanBase {
 public:
  EmbeddingBackwardPlan() : PlanBase("EmbeddingBackwardPlan") {}
  static Result<EmbeddingBackwardPlan> select(const Stream& stream, const EmbeddingBackwardDescriptor& desc,
                                              const PlanPreference& pref = {});
  Status can_implement(const EmbeddingBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const EmbeddingBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const EmbeddingBackwardArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const EmbeddingBackwardDescriptor& descriptor() const { return desc_; }  // padding_idx resolved
  Dims dout_shape() const;     // index_shape + [embedding_dim]
  Dims dweight_shape() const;  // Dense: [V, D]; Compact: [n, D]

 private:
  EmbeddingBackwardDescriptor desc_;
};

}  // namespace baracuda

// ==== Gather / scatter along a dimension (torch.gather, take_along_dim, scatter, scatter_add, scatter_reduce) ====
//
// Shapes (torch's rules). x / self has rank r >= 1 (a rank-0 tensor: view it as
// [1]); index has the same rank; dim in [-r, r) (negative counts from the end).
//   GatherPlan:  index.size(d) <= x.size(d) for d != dim (index.size(dim) is any
//                extent); out has index's shape:
//                  out[c] = x[c with c[dim] = index[c]]
//   ScatterPlan: index.size(d) <= self.size(d) for d != dim and
//                index.size(d) <= src.size(d) for every d; out has self's shape:
//                  out = self, then for every position c of index (row-major
//                  order): out[c with c[dim] = index[c]] <- src[c] (or value).
// Index values lie in [0, x.size(dim)) / [0, self.size(dim)): torch's gather and
// scatter reject negative indices, so do these plans. Bad indices: as the
// embedding plans (CPU: InvalidProblem naming the first bad position before
// anything is written; CUDA: never read or written out of bounds — gather writes
// 0 for that element, scatter skips the contribution — the lowest bad position
// is recorded in the workspace's error word and check_indices(stream, ws)
// reports it).
//
// take_along_dim(x, idx, dim): torch broadcasts x and idx against each other
// over every axis but dim, then gathers. Callers do the broadcast with views:
// any input may have stride 0 on an axis (a broadcast view) and any strides at
// all, so GatherPlan over the broadcast views IS take_along_dim. (take_along_dim
// with dim = None: gather over flattened views, dim 0.)
//
// Duplicate destinations (scatter): deterministic and identical on CPU and CUDA.
//   reduce None (plain scatter of src or value): the LAST position in index
//     order wins (torch leaves the choice undefined).
//   Sum / Prod / Mean / Amax / Amin: the accumulator starts from self when
//     include_self (else from the first contribution) and combines the
//     contributions in index order (row-major position order), in f32 for f16 /
//     bf16 / f32 and f64 for f64, rounded once to dtype. Mean divides by the
//     number of contributions (+1 when include_self). Amax / Amin propagate NaN.
//     A destination with no contribution keeps self's value (every mode).
//   scatter_add(self, dim, index, src) = reduce Sum, include_self true.
//   use_value: every contribution is `value` (scatter(dim, index, value)); no src.
//   Integer dtypes (i8, u8, i16, i32, i64; torch 2.5.1's CPU results, pinned in
//     tests/indexing/cpu_gather_scatter.cpp): Sum and Prod wrap (two's
//     complement arithmetic modulo 2^bits, as torch's integer arithmetic);
//     Mean = the wrapped sum (self counted with include_self) divided by the
//     count rounding toward minus infinity (torch's div_(count,
//     rounding_mode="floor"): -14 / 3 = -5); Amax / Amin by value. The
//     reference accumulates in int64 with wrapping and wraps to the dtype at
//     the end, which equals wrapping at every step. `value` is truncated toward
//     zero (torch: scatter_(0, idx, -2.7) on int32 writes -2) and must fit the
//     dtype after truncation (InvalidProblem otherwise; i64: in [-2^63, 2^63)).
// out may be self itself (in place: the same view) or disjoint from every input.
//
// Backward (compositions of these plans; tested in tests/indexing/):
//   gather:       dx = scatter Sum (include_self) of dout into zeros of x's shape
//                 (deterministic, in position order).
//   scatter_add:  dself = dout; dsrc = gather(dout, dim, index).
//   scatter(src): dself = dout with the scattered positions zeroed (scatter of
//                 value 0 into dout); dsrc = gather(dout, dim, index) (exact for
//                 distinct destinations; torch's rule for duplicates too).
//   scatter_reduce (every mode): ScatterReduceBackwardPlan below.
//
// ScatterReduceBackwardPlan: torch's scatter_reduce backward
// (FunctionsManual.cpp scatter_reduce_backward) for reduce None (plain
// scatter), Sum, Mean, Prod, Amax, Amin and include_self either way. Inputs:
// grad (dout, self's shape), index, and for Prod / Amax / Amin also self, src
// and result (the forward's out); outputs grad_self (self's shape) and
// grad_src (src's shape), each optional (descriptor.compute_grad_self /
// compute_grad_src; at least one). For a destination q (an element of self
// that index names) with contributions s_1..s_k in position order, g =
// grad[q], r = result[q], and include_self = inc:
//   None:  grad_self[q] = 0; grad_src = g.
//   Sum:   grad_self[q] = g (inc) or 0; grad_src = g.
//   Mean:  N = k + inc; grad_self[q] = g / N (inc) or 0; grad_src = g / N.
//   Prod:  grad_self[q] = (g * P) / m (inc) or 0, m = self[q] with 0 -> 1 and
//          P = m * s_1 * ... * s_k (torch's masked_self_result); grad_src of a
//          member s_j: when s_j is the only zero among s_1..s_k,
//          g * (self[q] if inc) * prod_{i != j} s_i (torch's masked_src_result);
//          else (g * r) / (s_j, or 1 when s_j == 0). Zeros in self and src
//          give torch's values (0, 1 or 2+ zeros per destination).
//   Amax / Amin: ties share the gradient evenly: N = [inc and self[q] == r] +
//          #{j : s_j == r}, d = g / N; grad_self[q] = [self[q] == r] * d (inc)
//          or 0, grad_src of s_j = [s_j == r] * d (literally, so N = 0 — a NaN
//          result — gives NaN, as torch). Deliberate difference from torch:
//          with include_self = false torch still counts self[q] in N when it
//          equals r (a known torch bug: the excluded self takes a share that
//          is then zeroed, so the gradient no longer sums to g); here the
//          excluded self never counts.
//   Every mode: grad_self = grad at positions no index element names (torch
//   computes (g * m) / m for Prod and NaN-poisons Amax / Amin where self is
//   NaN; here it is exactly g). grad_src elements outside index's extent
//   (src larger than index) are 0 (torch refuses that shape in autograd).
// Math in f32 for f16 / bf16 / f32, f64 for f64, rounded once to dtype, the
// members combined in position order: the CPU reference and the CUDA kernels
// share the per-destination code (scatter_backward_combine.hpp), so the two
// agree bit for bit. Bad indices as ScatterPlan (CPU: InvalidProblem before
// anything is written; CUDA: skipped, check_indices reports the first; its
// grad_src elements are written as 0). Outputs overlap no input and no other
// output. CUDA "sorted": ScatterPlan's stable radix sort of (destination,
// position) (workspace sized by the same helper); out of place copies grad to
// grad_self (and zeroes grad_src when src is larger than index), then one
// thread per run of equal destinations computes its statistics in position
// order and writes grad_self[q] and every member's grad_src. No atomics.
//
// dtypes: GatherPlan f32, f64, f16, bf16, i32, i64, i16, i8, u8, bool (a copy); ScatterPlan f32,
// f64, f16, bf16, i8, u8, i16, i32, i64 (bool: Unsupported); index I32 or I64. Tensors: any non-negative strides (inputs
// may broadcast with stride 0). CUDA: numel(index) < 2^31.
// CUDA algorithms (sku().variant):
//   gather  "elementwise": one thread per output element.
//   scatter "sorted": each index element's destination (the row-major offset in
//           self's shape; self's numel for a bad index) and its position are
//           sorted with CUB's stable radix sort (only the bits the keys need),
//           then one thread per run of equal destinations reduces it in
//           position order and writes it once; out of place, self is copied to
//           out first. No atomics. workspace_size() = the alignment pad, the
//           error word, keys / positions (double-buffered) and the sort's
//           temporary storage.
//   scatter "sorted.rows" (the sorted route when the index view is constant
//           along every axis but dim: stride 0 or extent 1 there, as
//           index.expand(...) makes, and more than one column): only the
//           index.size(dim) values are sorted (key = the index value, value =
//           its step k along dim, CUB's stable radix sort), then one thread per
//           (sorted step, column) that starts a run of equal values reduces its
//           column over the run in ascending k = ascending position, so the
//           bits equal the general sorted route's and the CPU's. Chosen at
//           run() from the index's strides (sku_for() says which); the
//           workspace is the general route's, which is large enough for both.
//   scatter "atomic" (integers, deterministic): i32 / i64 with reduce Sum,
//           Amax or Amin always take integer atomics (a wrapping atomicAdd,
//           atomicMax, atomicMin: each is commutative and associative on
//           integers, so the result's bits do not depend on the order), also
//           when require_deterministic is set; sku().precision.deterministic
//           stays true. include_self = false first writes the reduction's
//           identity (0, the lowest, the highest value) to every destination
//           with a contribution. i8 / u8 / i16 (no native atomics of that
//           width) and the other reductions (Prod, Mean, None) take "sorted".
//   scatter "atomic" (floats, opt-in: PlanPreference::require_deterministic = false,
//           reduce Sum only; other reductions stay "sorted"): one thread per
//           index element adds its contribution with a floating-point atomic
//           in the dtype (16-bit sums round at every addition, as PyTorch's
//           CUDA scatter_add; a 16-bit element whose 4-byte pair partner is
//           in out's row goes through a 32-bit packed atomic that adds -0.0
//           to the partner, which leaves every value's bits unchanged);
//           include_self = false first zeroes every
//           destination that has a contribution. The order of the additions,
//           so the bits, can change from run to run: sku().precision says
//           deterministic = false, accumulator = the dtype. Workspace: the pad
//           and the error word; bad indices as the sorted route.

namespace baracuda {

struct GatherDescriptor {
  DType dtype = DType::F32;        // x and out
  DType index_dtype = DType::I64;  // I32 or I64
  Dims x_shape;                    // rank 1..8
  Dims index_shape;                // same rank; index.size(d) <= x.size(d) for d != dim
  int64_t dim = 0;                 // [-rank, rank)
};

struct GatherArgs {
  TensorRef x;      // x_shape, dtype
  TensorRef index;  // index_shape, index_dtype
  TensorMut out;    // index_shape, dtype
};

class BARACUDA_API GatherPlan : public PlanBase {
 public:
  GatherPlan() : PlanBase("GatherPlan") {}
  static Result<GatherPlan> select(const Stream& stream, const GatherDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const GatherArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const GatherArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const GatherArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const GatherDescriptor& descriptor() const { return desc_; }  // dim resolved to [0, rank)
  Dims out_shape() const { return desc_.index_shape; }

 private:
  GatherDescriptor desc_;
};

enum class ScatterReduce : uint8_t { None, Sum, Prod, Mean, Amax, Amin };
BARACUDA_API const char* scatter_reduce_name(ScatterReduce r);

struct ScatterDescriptor {
  DType dtype = DType::F32;        // self, src, out: f32, f64, f16, bf16, i8, u8, i16, i32, i64
  DType index_dtype = DType::I64;  // I32 or I64
  Dims self_shape;                 // rank 1..8; out has this shape
  Dims index_shape;                // same rank
  Dims src_shape;                  // same rank (ignored when use_value)
  int64_t dim = 0;                 // [-rank, rank)
  ScatterReduce reduce = ScatterReduce::None;
  bool include_self = true;        // reductions only (None always starts from self)
  bool use_value = false;          // contributions are `value`, no src tensor
  double value = 0.0;              // floats: rounded to dtype; integers: truncated toward zero, must fit
};

struct ScatterArgs {
  TensorRef self;   // self_shape
  TensorRef index;  // index_shape
  TensorRef src;    // src_shape (absent when use_value)
  TensorMut out;    // self_shape: self's own view (in place) or disjoint
};

class BARACUDA_API ScatterPlan : public PlanBase {
 public:
  ScatterPlan() : PlanBase("ScatterPlan") {}
  static Result<ScatterPlan> select(const Stream& stream, const ScatterDescriptor& desc, const PlanPreference& pref = {});
  Status can_implement(const ScatterArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const ScatterArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const ScatterArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const ScatterDescriptor& descriptor() const { return desc_; }  // dim resolved to [0, rank)
  Dims out_shape() const { return desc_.self_shape; }

 private:
  ScatterDescriptor desc_;
};

struct ScatterReduceBackwardDescriptor {
  DType dtype = DType::F32;        // every tensor but index: f32, f64, f16, bf16
  DType index_dtype = DType::I64;  // I32 or I64
  Dims self_shape;                 // grad, self, result, grad_self; rank 1..8
  Dims index_shape;                // same rank, as ScatterPlan's rules
  Dims src_shape;                  // src, grad_src; same rank, >= index_shape everywhere
  int64_t dim = 0;                 // [-rank, rank)
  ScatterReduce reduce = ScatterReduce::Sum;
  bool include_self = true;        // as the forward (None: ignored, always false for grad_self)
  bool compute_grad_self = true;   // grad_self given / absent
  bool compute_grad_src = true;    // grad_src given / absent (at least one of the two)
};

struct ScatterReduceBackwardArgs {
  TensorRef grad;       // self_shape (the forward out's gradient)
  TensorRef index;      // index_shape
  TensorRef self;       // self_shape: Prod / Amax / Amin only
  TensorRef src;        // src_shape: Prod / Amax / Amin only
  TensorRef result;     // self_shape, the forward's out: Amax / Amin, and Prod when compute_grad_src
  TensorMut grad_self;  // self_shape, when compute_grad_self
  TensorMut grad_src;   // src_shape, when compute_grad_src
};

class BARACUDA_API ScatterReduceBackwardPlan : public PlanBase {
 public:
  ScatterReduceBackwardPlan() : PlanBase("ScatterReduceBackwardPlan") {}
  static Result<ScatterReduceBackwardPlan> select(const Stream& stream, const ScatterReduceBackwardDescriptor& desc,
                                                  const PlanPreference& pref = {});
  Status can_implement(const ScatterReduceBackwardArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const ScatterReduceBackwardArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const ScatterReduceBackwardArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const ScatterReduceBackwardDescriptor& descriptor() const { return desc_; }  // dim resolved
  bool needs_self() const;    // self and src: Prod / Amax / Amin
  bool needs_result() const;  // Amax / Amin, Prod with compute_grad_src

 private:
  ScatterReduceBackwardDescriptor desc_;
};

}  // namespace baracuda

// ---- index_select / index_add / index_copy / index_fill / index_reduce --------------------
// torch semantics along one dimension `dim` of self (negative dims count from
// the end, as torch). self / out are viewed as [outer, S, inner] (S = the
// extent of dim), source as [outer, n, inner] (n = the index length; the index
// is 1-D, or 0-D meaning n = 1, as torch accepts). self must have rank >= 1.
//
// IndexSelectPlan: out = self.index_select(dim, index): out[o, k, i] =
//   self[o, index[k], i]. out has self's shape with extent n at dim.
// IndexUpdatePlan: out = self with the indexed slices updated (mode):
//   Add    torch.index_add_(dim, index, source, alpha)
//   Copy   torch.index_copy_(dim, index, source)
//   Fill   torch.index_fill_(dim, index, value)      (no source)
//   Prod / Mean / Amax / Amin   torch.index_reduce_(dim, index, source, reduce, include_self)
// out may be self itself (the same view: in place; slices never indexed are
// then untouched) or disjoint from every input (they are copied from self);
// no other overlap.
//
// Duplicate indices (deterministic, identical on CPU and CUDA): the
// contributions to one destination slice combine in index order (the position
// order of the index tensor), starting from self (Add; reductions with
// include_self) or from the reduction's identity (include_self = false),
// accumulating in f32 for f32 / f16 / bf16 and in f64 for f64, rounded once
// to the dtype: Add acc = fma(alpha, source, acc) per contribution; Prod
// acc *= source; Mean sum / count with count = the contributions (+ 1 with
// include_self; a slice without contributions keeps self); Amax / Amin: NaN
// propagates (a NaN operand makes the result NaN, as torch), else the larger /
// smaller, the earlier one kept on ties. Copy: the LAST position naming a
// slice wins. Fill: value (cast to the dtype) in every named slice.
//
// Indices (I32 / I64). Following torch's CPU checks: index_select, index_add,
// index_copy and index_reduce need every index in [0, S) (negatives are
// errors); index_fill accepts [-S, S) and wraps a negative index (+ S).
//   CPU:  run() checks every index first and returns InvalidProblem naming
//         the first bad position before writing anything.
//   CUDA: a bad index never reads or writes out of bounds: index_select writes
//         zeros for its output slice, the updates skip its contribution; the
//         lowest bad position is recorded in the workspace's error word and
//         check_indices(stream, ws) reports it (as EmbeddingPlan's).
//
// dtypes: f32, f64, f16, bf16 for everything; also i32 / i64 for
// IndexSelectPlan and the Copy / Fill modes. Any non-negative strides.
//
// CUDA algorithms (sku().variant):
//   select  "slice[.vec16]": one thread per output unit: a 16-byte vector of
//           an inner row when the inner dims coalesce to one contiguous,
//           16-byte aligned row in self and out, else one element.
//   update  "sorted": the (index, position) pairs are sorted with the
//           embedding backward's stable radix sort (CUB) into the workspace,
//           so each destination's contributions lie together in position
//           order; then one thread per element of a destination slice
//           combines its run in that order (no atomics). Out of place every
//           slice is written (self copied where the run is empty); in place
//           only the runs' slices are visited. S and n below 2^31 - 1.
//
// Backward (compositions, no extra plans; see docs/OPS.md):
//   index_select: dself = IndexUpdatePlan Add of dout into zeros (a zero
//     self, or Fill 0 then Add in place); duplicates sum, as torch.
//   index_add:    dself = dout; dsource = alpha * index_select(dout).
//   index_copy:   dself = index_fill(dout, 0); dsource = index_select(dout)
//     (every position gets its slice's gradient, duplicates included: torch's
//     formula, even though only the last duplicate's value survived).

namespace baracuda {

enum class IndexUpdateMode : uint8_t { Add, Copy, Fill, Prod, Mean, Amax, Amin };
BARACUDA_API const char* index_update_mode_name(IndexUpdateMode m);

struct IndexSelectDescriptor {
  DType dtype = DType::F32;        // self / out: f32, f64, f16, bf16, i32, i64
  DType index_dtype = DType::I64;  // I32 or I64
  Dims self_shape;                 // rank 1..8
  int64_t dim = 0;                 // in [-rank, rank)
  Dims index_shape;                // rank 0 (n = 1) or 1 ([n])
};

struct IndexSelectArgs {
  TensorRef self;   // self_shape
  TensorRef index;  // index_shape
  TensorMut out;    // out_shape(): self_shape with extent n at dim
};

class BARACUDA_API IndexSelectPlan : public PlanBase {
 public:
  IndexSelectPlan() : PlanBase("IndexSelectPlan") {}
  static Result<IndexSelectPlan> select(const Stream& stream, const IndexSelectDescriptor& desc,
                                        const PlanPreference& pref = {});
  Status can_implement(const IndexSelectArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const IndexSelectArgs& args) const;  // CUDA workspace: the error word
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const IndexSelectArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const IndexSelectDescriptor& descriptor() const { return desc_; }  // dim resolved to [0, rank)
  Dims out_shape() const;

 private:
  IndexSelectDescriptor desc_;
};

struct IndexUpdateDescriptor {
  IndexUpdateMode mode = IndexUpdateMode::Add;
  DType dtype = DType::F32;        // self / source / out: f32, f64, f16, bf16 (+ i32, i64 for Copy / Fill)
  DType index_dtype = DType::I64;  // I32 or I64
  Dims self_shape;                 // rank 1..8
  int64_t dim = 0;                 // in [-rank, rank)
  Dims index_shape;                // rank 0 (n = 1) or 1 ([n])
  double alpha = 1.0;              // Add only (finite)
  double value = 0.0;              // Fill only, cast to dtype (integers: truncated; must fit)
  bool include_self = true;        // Prod / Mean / Amax / Amin only
};

struct IndexUpdateArgs {
  TensorRef self;    // self_shape
  TensorRef index;   // index_shape
  TensorRef source;  // source_shape() (not for Fill)
  TensorMut out;     // self_shape: self itself (in place) or disjoint
};

class BARACUDA_API IndexUpdatePlan : public PlanBase {
 public:
  IndexUpdatePlan() : PlanBase("IndexUpdatePlan") {}
  static Result<IndexUpdatePlan> select(const Stream& stream, const IndexUpdateDescriptor& desc,
                                        const PlanPreference& pref = {});
  Status can_implement(const IndexUpdateArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const IndexUpdateArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const IndexUpdateArgs& args) const;
  Status check_indices(const Stream& stream, Workspace ws) const;  // as EmbeddingPlan's

  const IndexUpdateDescriptor& descriptor() const { return desc_; }  // dim resolved to [0, rank)
  Dims source_shape() const;  // self_shape with extent n at dim

 private:
  IndexUpdateDescriptor desc_;
};

}  // namespace baracuda
#include "baracuda/ops/indexing_masked.hpp"
#include "baracuda/ops/indexing_advanced.hpp"
#include "baracuda/ops/indexing_take.hpp"
