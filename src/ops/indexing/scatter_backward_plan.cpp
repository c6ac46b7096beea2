// ScatterReduceBackwardPlan: descriptor rules, the argument list, the CUDA
// launch of the actual views and dispatch to the CPU reference or the
// kernels; check_indices reads the kernels' error word (as ScatterPlan).
#include <cstdint>
#include <string>

#include "baracuda/ops/indexing.hpp"
#include "core/capture.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/indexing/index_check.hpp"
#include "ops/indexing/scatter_backward_launch.hpp"
#include "ops/indexing/scatter_backward_reference.hpp"

namespace baracuda {

namespace indexing::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Indexing", "indexing", BARACUDA_KERNELS_INDEXING};
constexpr const char* kPlan = "ScatterReduceBackwardPlan";
constexpr int64_t kCudaIndexLimit = (int64_t{1} << 31) - 1;  // 32-bit positions in the sort / grid

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }

[[maybe_unused]] void copy_dims(const Dims& d, int64_t* to) {
  for (int i = 0; i < d.rank; ++i) to[i] = d[i];
}

baracuda::detail::ArgCheck backward_args(const ScatterReduceBackwardPlan& p, const ScatterReduceBackwardArgs& a) {
  const ScatterReduceBackwardDescriptor& d = p.descriptor();
  const std::string mode = std::string(" (reduce ") + scatter_reduce_name(d.reduce) + ")";
  const bool values = p.needs_self(), result = p.needs_result();
  baracuda::detail::ArgCheck c(p);
  c.input("grad", a.grad, d.dtype, d.self_shape)
      .input("index", a.index, d.index_dtype, d.index_shape)
      .optional_input("self", a.self, values, d.dtype, d.self_shape, "self is missing: reduce prod / amax / amin read it",
                      "self is given but unused" + mode)
      .optional_input("src", a.src, values, d.dtype, d.src_shape, "src is missing: reduce prod / amax / amin read it",
                      "src is given but unused" + mode)
      .optional_input("result", a.result, result, d.dtype, d.self_shape,
                      "result is missing: reduce amax / amin, and prod with compute_grad_src, read the forward's out",
                      "result is given but unused" + mode + (d.compute_grad_src ? "" : " without grad_src"))
      .optional_output("grad_self", a.grad_self, d.compute_grad_self, d.dtype, d.self_shape,
                       "grad_self is given but descriptor.compute_grad_self is false")
      .optional_output("grad_src", a.grad_src, d.compute_grad_src, d.dtype, d.src_shape,
                       "grad_src is given but descriptor.compute_grad_src is false");
  return std::move(c.disjoint());
}

#ifdef BARACUDA_WITH_CUDA
cuda::ScatterBackwardLaunch backward_launch(const ScatterReduceBackwardPlan& p, const ScatterReduceBackwardArgs& a,
                                            void* ws, void* stream) {
  const ScatterReduceBackwardDescriptor& d = p.descriptor();
  cuda::ScatterBackwardLaunch l;
  l.dtype = d.dtype;
  l.index_dtype = d.index_dtype;
  l.reduce = static_cast<int>(d.reduce);
  l.include_self = d.include_self;
  l.want_self = d.compute_grad_self;
  l.want_src = d.compute_grad_src;
  l.src_larger = !(d.src_shape == d.index_shape);
  l.rank = d.self_shape.rank;
  l.dim = static_cast<int>(d.dim);
  l.n = shape_numel(d.index_shape);
  l.self_numel = shape_numel(d.self_shape);
  l.src_numel = shape_numel(d.src_shape);
  copy_dims(d.index_shape, l.idx_shape);
  copy_dims(d.self_shape, l.self_shape);
  copy_dims(d.src_shape, l.src_shape);
  copy_dims(a.index.strides, l.idx_stride);
  copy_dims(a.grad.strides, l.grad_stride);
  l.grad = a.grad.data;
  l.index = a.index.data;
  if (p.needs_self()) {
    copy_dims(a.self.strides, l.self_stride);
    copy_dims(a.src.strides, l.src_stride);
    l.self = a.self.data;
    l.src = a.src.data;
  }
  if (p.needs_result()) {
    copy_dims(a.result.strides, l.result_stride);
    l.result = a.result.data;
  }
  if (d.compute_grad_self) {
    copy_dims(a.grad_self.strides, l.gself_stride);
    l.grad_self = a.grad_self.data;
  }
  if (d.compute_grad_src) {
    copy_dims(a.grad_src.strides, l.gsrc_stride);
    l.grad_src = a.grad_src.data;
  }
  l.workspace = aligned_workspace(ws);
  l.ws = cuda::scatter_workspace(l.n, l.self_numel, 4);
  l.stream = stream;
  return l;
}
#endif

}  // namespace
}  // namespace indexing::detail

using namespace indexing::detail;

bool ScatterReduceBackwardPlan::needs_self() const {
  return desc_.reduce == ScatterReduce::Prod || desc_.reduce == ScatterReduce::Amax ||
         desc_.reduce == ScatterReduce::Amin;
}

bool ScatterReduceBackwardPlan::needs_result() const {
  return desc_.reduce == ScatterReduce::Amax || desc_.reduce == ScatterReduce::Amin ||
         (desc_.reduce == ScatterReduce::Prod && desc_.compute_grad_src);
}

Result<ScatterReduceBackwardPlan> ScatterReduceBackwardPlan::select(const Stream& stream,
                                                                    const ScatterReduceBackwardDescriptor& desc,
                                                                    const PlanPreference& pref) {
  ScatterReduceBackwardPlan plan;
  const DType t = desc.dtype;
  if (!is_float(t)) return unsupported(kPlan, "dtype ", t, " is not supported (f32, f64, f16, bf16)");
  if (desc.index_dtype != DType::I32 && desc.index_dtype != DType::I64)
    return unsupported(kPlan, "index_dtype ", desc.index_dtype, " is not supported (i32, i64)");
  if (static_cast<int>(desc.reduce) > static_cast<int>(ScatterReduce::Amin))
    return invalid(kPlan, "reduce ", static_cast<int>(desc.reduce),
                   " is not a ScatterReduce (none, sum, prod, mean, amax, amin)");
  if (!desc.compute_grad_self && !desc.compute_grad_src)
    return invalid(kPlan, "compute_grad_self and compute_grad_src are both false (nothing to compute)");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPlan, "self_shape", desc.self_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPlan, "index_shape", desc.index_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPlan, "src_shape", desc.src_shape));
  const Dims& s = desc.self_shape;
  const Dims& ix = desc.index_shape;
  if (s.rank == 0) return invalid(kPlan, "self_shape has rank 0 (view a scalar as shape [1]; torch treats it so)");
  if (ix.rank != s.rank)
    return invalid(kPlan, "index_shape ", ix, " has rank ", ix.rank, ", self_shape ", s, " has rank ", s.rank,
                   " (they must match)");
  if (desc.src_shape.rank != ix.rank)
    return invalid(kPlan, "src_shape ", desc.src_shape, " has rank ", desc.src_shape.rank, ", index_shape ", ix,
                   " has rank ", ix.rank, " (they must match)");
  if (desc.dim < -s.rank || desc.dim >= s.rank)
    return invalid(kPlan, "dim ", desc.dim, " is outside [", -s.rank, ", ", s.rank, ")");
  plan.desc_ = desc;
  plan.desc_.dim = desc.dim < 0 ? desc.dim + s.rank : desc.dim;
  for (int d = 0; d < s.rank; ++d) {
    if (d != plan.desc_.dim && ix[d] > s[d])
      return invalid(kPlan, "index_shape ", ix, " is larger than self_shape ", s, " along dim ", d, " (", ix[d],
                     " > ", s[d], "; only dim ", plan.desc_.dim, " may differ)");
    if (ix[d] > desc.src_shape[d])
      return invalid(kPlan, "index_shape ", ix, " is larger than src_shape ", desc.src_shape, " along dim ", d, " (",
                     ix[d], " > ", desc.src_shape[d], ")");
  }
  if (desc.reduce == ScatterReduce::None) plan.desc_.include_self = false;  // self is overwritten: no gradient
  auto be = baracuda::detail::setup_plan(plan, kPlan, kFamily, stream, pref, t,
                                         std::string("indexing.scatter_") + scatter_reduce_name(desc.reduce) +
                                             "_backward");
  if (!be) return be.status();
  const int64_t n = shape_numel(ix), m = shape_numel(s);
  if (m == 0 && shape_numel(desc.src_shape) == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (n > kCudaIndexLimit)
    return unsupported(kPlan, "the CUDA scatter backward needs fewer than 2^31 index elements (got ", n, ")");
  baracuda::detail::PlanAccess::sku(plan).variant = "sorted";
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(stream.device().ordinal);  // CUB's size queries read the current device
  BARACUDA_RETURN_IF_ERROR(guard.status());
  baracuda::detail::PlanAccess::set_workspace(
      plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes + indexing::cuda::scatter_workspace(n, m, 4).total);
#endif
  return plan;
}

Status ScatterReduceBackwardPlan::can_implement(const ScatterReduceBackwardArgs& a) const {
  return backward_args(*this, a).status();
}

Result<KernelSku> ScatterReduceBackwardPlan::sku_for(const Stream& stream, Workspace ws,
                                                     const ScatterReduceBackwardArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, backward_args(*this, a));
}

Status ScatterReduceBackwardPlan::run(const Stream& stream, Workspace ws, const ScatterReduceBackwardArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, backward_args(*this, a), [&] { return indexing::ref::scatter_backward(kPlan, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        return indexing::cuda::launch_scatter_backward(backward_launch(*this, a, ws.ptr, stream.native_handle()));
#else
        return baracuda::detail::no_cuda(kPlan);
#endif
      });
}

Status ScatterReduceBackwardPlan::check_indices(const Stream& stream, Workspace ws) const {
  int64_t bad = -1;
  BARACUDA_RETURN_IF_ERROR(read_bad_position(*this, stream, ws, &bad));
  if (bad < 0) return Status::ok();
  const int64_t size = desc_.self_shape.rank ? desc_.self_shape[desc_.dim] : 0;
  return invalid(name(), "index element ", unravel(desc_.index_shape, bad), " (position ", bad, ") is outside [0, ",
                 size, ") (the size of dim ", desc_.dim,
                 "; the first bad index, found on the GPU: its contribution was skipped, its grad_src written as 0)");
}

}  // namespace baracuda
