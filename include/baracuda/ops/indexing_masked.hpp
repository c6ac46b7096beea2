// ==== Masked indexing: nonzero (argwhere), masked_select, masked_scatter ====
//
// The output size of nonzero and masked_select depends on the data. These
// plans take a CAPACITY m in the descriptor instead, so one run() does the
// whole job with no host synchronization (graph-capturable), and report the
// true size in a device-side `count` (a rank-0 I64 tensor on the plan's device):
//   rows / elements [0, min(m, count)) hold the result, [count, m) hold
//   fill_value (as jnp.nonzero(size=, fill_value=)); when count > m the result
//   is truncated to its first m entries (count still says the true number).
// Two ways to use them:
//   exact size (torch's):  plan with m = 0 (out has 0 rows), run, read count on
//                          the host, plan again with m = count and run again;
//   one phase (capturable): m = the upper bound (numel of the input / of the
//                          broadcast shape), read count later (or never).
//
// NonzeroPlan (torch.nonzero / torch.argwhere): x of any shape (rank 0..8) and
//   dtype bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64; out [m, rank] I64:
//   row k = the coordinates of the k-th nonzero element of x in row-major
//   order. "Nonzero" compares with zero as torch does: integers / bool: any
//   nonzero bits; floats: x != 0, so -0.0 counts as zero and NaN as nonzero.
//   Rank-0 x: out is [m, 0] and count is 0 or 1 (torch: [n, 0]).
//   as_tuple=True (torch.nonzero(as_tuple=True), np.nonzero): the caller takes
//   the column views out[:, d] ([m] views with out's row stride: no copy).
//   Not differentiable.
//
// MaskedSelectPlan (torch.masked_select): x (any dtype above) and mask (bool)
//   broadcast to a common shape B (torch's broadcasting rules: trailing axes
//   align, extents equal or 1; InvalidProblem otherwise). out [m] (x's dtype):
//   out[k] = the k-th element of x (broadcast to B) whose mask is true, in
//   row-major order over B; out[count..m) = fill_value (cast to the dtype as a
//   C++ cast would: integers truncated and wrapped; for an integer dtype a
//   non-finite value or one outside int64 is InvalidProblem).
// count is an output of both plans unless descriptor.has_count is false (the
// caller knows the size, e.g. the second phase); a count given while
// has_count is false is an error (as every unused optional tensor).
//
// MaskedScatterPlan (Tensor.masked_scatter / masked_scatter_): self (any dtype
//   above), mask (bool, broadcastable TO self's shape; self never broadcasts),
//   source (self's dtype, any shape). out = self, then the k-th true mask
//   position p (row-major over self's shape) gets out[p] = source.flatten()[k].
//   out is self itself (in place) or disjoint from every input. A source with
//   fewer elements than the mask has true positions is an error (torch raises):
//     CPU:  run() returns InvalidProblem naming the first mask position that has
//           no source element, before writing anything;
//     CUDA: that write (and every later one) is skipped, the lowest such
//           position is recorded in the workspace's error word and
//           check_indices(stream, ws) reports it (as the other indexing plans;
//           out-of-place, out still holds self's values there).
//
// masked_fill is not a plan of its own: x.masked_fill(mask, value) is
// ElementwiseTernary Where(mask, value, x) (elementwise.hpp, TernaryOp::Where:
// value a Scalar operand or a 0-dim tensor; mask broadcasts; out_dtype = x's
// dtype, as torch keeps it). See docs/OPS.md.
//
// Workspace (every plan of this file, the same rule): CPU plans need none;
// CUDA plans report workspace_size() from the descriptor: an alignment pad (any
// workspace pointer works) + the error word + the selected positions (int32,
// one per element of the shape the mask / x covers) + their count + CUB's
// temporary storage. Only MaskedScatterPlan has a check_indices (the others
// have no input that can be out of range).
//
// CUDA algorithm (sku().variant "select"): the predicate (mask true / x
// nonzero) over positions 0..N-1 of the row-major shape, read through the
// actual strides (stride 0 where a view broadcasts), drives CUB's
// DeviceSelect::If over a counting iterator: the selected POSITIONS, in order,
// and their count go to the workspace. Then one kernel writes the result from
// them (it reads the count from device memory: no host sync): nonzero the
// coordinates, masked_select the elements of x, both the fill past count;
// masked_scatter out[p_k] = source[k] (out of place, self is copied to out
// first). Deterministic by construction. N must be below 2^31 (Unsupported
// otherwise). Kernels move raw element bits: one per element SIZE.
//
// Backward (compositions, tested on the CPU):
//   masked_select (x and mask of one shape): dx = masked_scatter(zeros, mask,
//     dout[:count]).
//   masked_scatter: dself = where(mask, 0, dout); dsource = masked_select(dout,
//     mask) with capacity numel(source) and fill 0, viewed as source's shape
//     (torch's formula).
//   masked_fill: dx = where(mask, 0, dout).
//   nonzero: not differentiable.
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

struct NonzeroDescriptor {
  DType dtype = DType::Bool;  // bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64
  Dims shape;                 // x: rank 0..8
  int64_t capacity = 0;       // m >= 0: out has m rows
  int64_t fill_value = 0;     // the coordinates written in rows [count, m) (jnp.nonzero's fill_value)
  bool has_count = true;      // args.count is given (leave it out only when the size is known: phase two)
};

struct NonzeroArgs {
  TensorRef x;     // shape, dtype
  TensorMut out;   // [capacity, rank], I64
  TensorMut count; // rank 0, I64: the number of nonzero elements (when has_count)
};

class BARACUDA_API NonzeroPlan : public PlanBase {
 public:
  NonzeroPlan() : PlanBase("NonzeroPlan") {}
  static Result<NonzeroPlan> select(const Stream& stream, const NonzeroDescriptor& desc,
                                    const PlanPreference& pref = {});
  Status can_implement(const NonzeroArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const NonzeroArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const NonzeroArgs& args) const;

  const NonzeroDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return Dims{desc_.capacity, static_cast<int64_t>(desc_.shape.rank)}; }

 private:
  NonzeroDescriptor desc_;
};

struct MaskedSelectDescriptor {
  DType dtype = DType::F32;  // x and out: as NonzeroDescriptor's
  Dims x_shape;              // rank 0..8
  Dims mask_shape;           // rank 0..8, bool; broadcasts with x_shape
  int64_t capacity = 0;      // m >= 0
  double fill_value = 0.0;   // written to out[count..m), cast to dtype
  bool has_count = true;     // args.count is given
};

struct MaskedSelectArgs {
  TensorRef x;      // x_shape
  TensorRef mask;   // mask_shape, Bool
  TensorMut out;    // [capacity], dtype
  TensorMut count;  // rank 0, I64 (when has_count)
};

class BARACUDA_API MaskedSelectPlan : public PlanBase {
 public:
  MaskedSelectPlan() : PlanBase("MaskedSelectPlan") {}
  static Result<MaskedSelectPlan> select(const Stream& stream, const MaskedSelectDescriptor& desc,
                                         const PlanPreference& pref = {});
  Status can_implement(const MaskedSelectArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const MaskedSelectArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const MaskedSelectArgs& args) const;

  const MaskedSelectDescriptor& descriptor() const { return desc_; }  // fill_value rounded to dtype
  Dims broadcast_shape() const { return shape_; }                      // B
  Dims out_shape() const { return Dims{desc_.capacity}; }

 private:
  MaskedSelectDescriptor desc_;
  Dims shape_;
};

struct MaskedScatterDescriptor {
  DType dtype = DType::F32;  // self, source, out: as NonzeroDescriptor's
  Dims self_shape;           // rank 0..8
  Dims mask_shape;           // bool, broadcastable to self_shape
  Dims source_shape;         // any shape (rank 0..8)
};

struct MaskedScatterArgs {
  TensorRef self;    // self_shape
  TensorRef mask;    // mask_shape, Bool
  TensorRef source;  // source_shape
  TensorMut out;     // self_shape: self itself (in place) or disjoint
};

class BARACUDA_API MaskedScatterPlan : public PlanBase {
 public:
  MaskedScatterPlan() : PlanBase("MaskedScatterPlan") {}
  static Result<MaskedScatterPlan> select(const Stream& stream, const MaskedScatterDescriptor& desc,
                                          const PlanPreference& pref = {});
  Status can_implement(const MaskedScatterArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const MaskedScatterArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const MaskedScatterArgs& args) const;
  // CUDA: synchronizes the stream and reports the first mask position the
  // last run() with this workspace found without a source element (as
  // EmbeddingPlan::check_indices). CPU: Ok.
  Status check_indices(const Stream& stream, Workspace ws) const;

  const MaskedScatterDescriptor& descriptor() const { return desc_; }
  Dims out_shape() const { return desc_.self_shape; }

 private:
  MaskedScatterDescriptor desc_;
};

}  // namespace baracuda
