// SoftmaxPlan / SoftmaxBackwardPlan: descriptor validation, backend choice,
// argument checks, the row layout of the actual views and the CUDA path
// choice (plain C++, so sku() / sku_for() name what the kernels run), and
// dispatch to the CPU reference or the CUDA kernels.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/align.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/layout.hpp"
#include "core/plan_shell.hpp"
#include "ops/softmax/launch.hpp"
#include "ops/softmax/reference.hpp"

namespace baracuda {

namespace softmax::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Softmax", "softmax", BARACUDA_KERNELS_SOFTMAX};

using baracuda::detail::invalid;
using cuda::Path;

// The fields both descriptors share, validated (axis resolved).
struct Problem {
  DType dtype = DType::F32;
  Dims shape;
  int axis = 0;
  bool log = false;
  double scale = 1.0;
};

template <class D>
Status validate(const char* plan, const D& in, Problem* out) {
  if (!(in.dtype == DType::F32 || in.dtype == DType::F64 || in.dtype == DType::F16 || in.dtype == DType::BF16))
    return baracuda::detail::unsupported(plan, "dtype ", in.dtype, " is not supported (f32, f64, f16, bf16)");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "shape", in.shape));
  const int rank = in.shape.rank;
  const int lo = rank == 0 ? -1 : -rank, hi = rank == 0 ? 0 : rank - 1;  // rank 0: axis 0 or -1, as PyTorch
  if (in.axis < lo || in.axis > hi)
    return invalid(plan, "axis ", in.axis, " is out of range for shape ", in.shape, " (expected [", lo, ", ", hi, "])");
  if (!std::isfinite(in.scale) || in.scale == 0.0) return invalid(plan, "scale ", in.scale, " must be finite and != 0");
  out->dtype = in.dtype;
  out->shape = in.shape;
  out->axis = rank == 0 ? 0 : (in.axis < 0 ? in.axis + rank : in.axis);
  out->log = in.log;
  out->scale = in.scale;
  return Status::ok();
}

// ---- row layout and path ----------------------------------------------------------
// The rows of a call: `views` are the operands' strides (out, in0[, in1]);
// the other axes are coalesced across all operands.
cuda::Rows make_rows(const Problem& p, const int64_t* const* views, int n_views) {
  cuda::Rows r;
  const int rank = p.shape.rank;
  r.len = rank == 0 ? 1 : p.shape[p.axis];
  int64_t shape[kMaxRank] = {};
  int64_t strides[cuda::kOperands][kMaxRank] = {};
  int n = 0;
  for (int d = 0; d < rank; ++d) {
    if (d == p.axis) continue;
    shape[n] = p.shape[d];
    for (int k = 0; k < n_views; ++k) strides[k][n] = views[k][d];
    ++n;
  }
  r.rows = 1;
  for (int d = 0; d < n; ++d) r.rows *= shape[d];
  for (int k = 0; k < n_views; ++k) r.axis_stride[k] = rank == 0 ? 1 : views[k][p.axis];
  if (r.rows == 0 || r.len == 0) return r;
  int64_t* sp[cuda::kOperands] = {strides[0], strides[1], strides[2]};
  n = baracuda::detail::coalesce_dims(n, shape, n_views, sp);
  r.outer_rank = n;
  for (int d = 0; d < n; ++d) {
    r.outer_shape[d] = shape[d];
    for (int k = 0; k < n_views; ++k) r.outer_stride[k][d] = strides[k][d];
  }
  return r;
}

// Fills l.path, vec, lane_elems, block_threads and chunks from l.rows, the
// pointers, the dtype and the device. Shared by select() (contiguous views),
// sku_for() and run() (the actual views), so they name one choice.
void choose_path(cuda::Launch& l, int n_views, const void* const* ptrs) {
  const cuda::Rows& r = l.rows;
  const int64_t esize = static_cast<int64_t>(dtype_size(l.dtype));
  const int64_t v = 16 / esize;
  bool fast = r.outer_rank <= 1;
  for (int k = 0; k < n_views; ++k) fast = fast && (r.len == 1 || r.axis_stride[k] == 1);
  l.vec = false;
  l.lane_elems = 0;
  l.block_threads = 0;
  l.chunks = 0;
  if (!fast) {
    l.path = Path::Generic;
    return;
  }
  bool vec = r.len % v == 0;
  for (int k = 0; k < n_views; ++k) {
    vec = vec && baracuda::detail::is_aligned16(ptrs[k]);
    if (r.outer_rank == 1) vec = vec && r.outer_stride[k][0] % v == 0;
  }
  const int64_t row_bytes = (r.len * esize + 15) / 16 * 16 * (l.backward ? 2 : 1);  // the block path's staging
  if (r.len <= cuda::kWarpMaxLen) {
    l.path = Path::Warp;
    for (int e : cuda::kWarpLaneElems)
      if (32 * int64_t{e} >= r.len) {
        l.lane_elems = e;
        break;
      }
    l.vec = vec && l.lane_elems % v == 0;
  } else if (row_bytes <= cuda::block_smem_limit(l.arch) && !(r.len >= cuda::kSplitMinLen && r.rows < l.sm_count)) {
    l.path = Path::Block;
    l.block_threads = row_bytes > 48 * 1024 ? 1024 : 256;
    l.vec = vec;
  } else {
    l.path = Path::Split;
    l.chunks = (r.len + cuda::kSplitChunk - 1) / cuda::kSplitChunk;
    l.vec = vec;
  }
}

std::string variant_of(const cuda::Launch& l) {
  const char* base = l.path == Path::Warp ? "warp" : l.path == Path::Block ? "block" : l.path == Path::Split ? "split" : "generic";
  return std::string(base) + (l.vec ? ".vec16" : "");
}

// ---- arguments ----------------------------------------------------------------------
// The tensors of one call: out, in0 (x or y), in1 (dy; backward only).
struct Tensors {
  TensorMut out;
  TensorRef in0, in1;
};

baracuda::detail::ArgCheck check_args(const PlanBase& plan, const Problem& p, bool backward, const Tensors& t) {
  baracuda::detail::ArgCheck c(plan);
  if (!backward) {
    c.input("x", t.in0, p.dtype, p.shape).output("y", t.out, p.dtype, p.shape).allow_in_place("y", "x");
  } else {
    c.input("y", t.in0, p.dtype, p.shape)
        .input("dy", t.in1, p.dtype, p.shape)
        .output("dx", t.out, p.dtype, p.shape)
        .allow_in_place("dx", "dy");
  }
  return std::move(c.disjoint());
}

Status run_cpu(const Problem& p, bool backward, const Tensors& t) {
  softmax::ref::Problem r;
  r.dtype = p.dtype;
  r.shape = p.shape;
  r.axis = p.axis;
  r.log = p.log;
  r.scale = p.scale;
  r.backward = backward;
  r.in0 = t.in0;
  r.in1 = t.in1;
  r.out = t.out;
  return softmax::ref::run(r);
}

// The launch of these views (or, with t == nullptr, of contiguous views with
// aligned data: select()'s choice).
cuda::Launch make_launch(const PlanBase& plan, const Problem& p, bool backward, const Tensors* t) {
  cuda::Launch l;
  l.backward = backward;
  l.log = p.log;
  l.scale = p.scale;
  l.dtype = p.dtype;
  l.sm_count = baracuda::detail::PlanAccess::sm_count(plan);
  l.arch = plan.sku().arch;
  const int n_views = backward ? 3 : 2;
  const Dims contiguous = contiguous_strides(p.shape);
  const int64_t* views[cuda::kOperands] = {contiguous.begin(), contiguous.begin(), contiguous.begin()};
  static const char aligned[16] alignas(16) = {};
  const void* ptrs[cuda::kOperands] = {aligned, aligned, aligned};
  if (t) {
    views[0] = t->out.strides.begin();
    views[1] = t->in0.strides.begin();
    views[2] = t->in1.strides.begin();
    ptrs[0] = t->out.data;
    ptrs[1] = t->in0.data;
    ptrs[2] = t->in1.data;
    l.out = t->out.data;
    l.in[0] = t->in0.data;
    l.in[1] = backward ? t->in1.data : nullptr;
  }
  l.rows = make_rows(p, views, n_views);
  choose_path(l, n_views, ptrs);
  return l;
}

size_t workspace_of(const cuda::Launch& l) {
  return l.path == Path::Split ? static_cast<size_t>(l.rows.rows * l.chunks * cuda::kPartialBytes) : 0;
}

Status run_cuda(const PlanBase& plan, const Problem& p, bool backward, const Stream& stream, Workspace ws,
                const Tensors& t) {
#ifdef BARACUDA_WITH_CUDA
  cuda::Launch l = make_launch(plan, p, backward, &t);
  l.workspace = ws.ptr;
  l.stream = stream.native_handle();
  return cuda::launch(l);
#else
  (void)p, (void)backward, (void)stream, (void)ws, (void)t;
  return baracuda::detail::no_cuda(plan.name());
#endif
}

// The select prologue of both plans (they differ in name and op).
Status setup(PlanBase& plan, const char* name, const char* op, const Stream& stream, const PlanPreference& pref,
             const Problem& p, bool backward) {
  auto be = baracuda::detail::setup_plan(plan, name, kFamily, stream, pref, p.dtype, op);
  if (!be) return be.status();
  if (shape_numel(p.shape) == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";  // run() launches nothing (the shell's sku_for says so too)
  } else if (be->backend != Backend::CpuReference) {
    const cuda::Launch l = make_launch(plan, p, backward, nullptr);
    baracuda::detail::PlanAccess::sku(plan).variant = variant_of(l);
    BARACUDA_RETURN_IF_ERROR(
        baracuda::detail::check_size(name, "split workspace", {l.rows.rows, l.chunks, cuda::kPartialBytes}));
    baracuda::detail::PlanAccess::set_workspace(plan, workspace_of(l));
  }
  return Status::ok();
}

Result<KernelSku> sku_of_run(const PlanBase& plan, const Problem& p, bool backward, const Tensors& t) {
  KernelSku s = plan.sku();
  if (s.backend != Backend::CpuReference) s.variant = variant_of(make_launch(plan, p, backward, &t));
  return s;
}

template <class D>
D to_descriptor(const Problem& p) {
  D d;
  d.dtype = p.dtype;
  d.shape = p.shape;
  d.axis = p.axis;
  d.log = p.log;
  d.scale = p.scale;
  return d;
}

}  // namespace
}  // namespace softmax::detail

using namespace softmax::detail;

// ---- SoftmaxPlan ---------------------------------------------------------------------------
namespace {
Tensors tensors_of(const SoftmaxArgs& a) { return {a.y, a.x, {}}; }
Tensors tensors_of(const SoftmaxBackwardArgs& a) { return {a.dx, a.y, a.dy}; }
template <class D>
Problem problem_of(const D& d) {
  return {d.dtype, d.shape, d.axis, d.log, d.scale};
}
}  // namespace

Result<SoftmaxPlan> SoftmaxPlan::select(const Stream& stream, const SoftmaxDescriptor& desc, const PlanPreference& pref) {
  SoftmaxPlan plan;
  Problem p;
  BARACUDA_RETURN_IF_ERROR(validate("SoftmaxPlan", desc, &p));
  plan.desc_ = to_descriptor<SoftmaxDescriptor>(p);
  BARACUDA_RETURN_IF_ERROR(setup(plan, "SoftmaxPlan", p.log ? "softmax.log_forward" : "softmax.forward", stream, pref, p, false));
  return plan;
}

Status SoftmaxPlan::can_implement(const SoftmaxArgs& a) const {
  return check_args(*this, problem_of(desc_), false, tensors_of(a)).status();
}

Result<KernelSku> SoftmaxPlan::sku_for(const Stream& stream, Workspace ws, const SoftmaxArgs& a) const {
  const Tensors t = tensors_of(a);
  const Problem p = problem_of(desc_);
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, p, false, t),
                                       [&]() -> Result<KernelSku> { return sku_of_run(*this, p, false, t); });
}

Status SoftmaxPlan::run(const Stream& stream, Workspace ws, const SoftmaxArgs& a) const {
  const Tensors t = tensors_of(a);
  const Problem p = problem_of(desc_);
  return baracuda::detail::run_plan(*this, stream, ws, check_args(*this, p, false, t), [&] { return run_cpu(p, false, t); },
                                    [&] { return run_cuda(*this, p, false, stream, ws, t); });
}

// ---- SoftmaxBackwardPlan ----------------------------------------------------------------------
Result<SoftmaxBackwardPlan> SoftmaxBackwardPlan::select(const Stream& stream, const SoftmaxBackwardDescriptor& desc,
                                                        const PlanPreference& pref) {
  SoftmaxBackwardPlan plan;
  Problem p;
  BARACUDA_RETURN_IF_ERROR(validate("SoftmaxBackwardPlan", desc, &p));
  plan.desc_ = to_descriptor<SoftmaxBackwardDescriptor>(p);
  BARACUDA_RETURN_IF_ERROR(
      setup(plan, "SoftmaxBackwardPlan", p.log ? "softmax.log_backward" : "softmax.backward", stream, pref, p, true));
  return plan;
}

Status SoftmaxBackwardPlan::can_implement(const SoftmaxBackwardArgs& a) const {
  return check_args(*this, problem_of(desc_), true, tensors_of(a)).status();
}

Result<KernelSku> SoftmaxBackwardPlan::sku_for(const Stream& stream, Workspace ws, const SoftmaxBackwardArgs& a) const {
  const Tensors t = tensors_of(a);
  const Problem p = problem_of(desc_);
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, p, true, t),
                                       [&]() -> Result<KernelSku> { return sku_of_run(*this, p, true, t); });
}

Status SoftmaxBackwardPlan::run(const Stream& stream, Workspace ws, const SoftmaxBackwardArgs& a) const {
  const Tensors t = tensors_of(a);
  const Problem p = problem_of(desc_);
  return baracuda::detail::run_plan(*this, stream, ws, check_args(*this, p, true, t), [&] { return run_cpu(p, true, t); },
                                    [&] { return run_cuda(*this, p, true, stream, ws, t); });
}

}  // namespace baracuda
