// TakePlan / PutPlan / OneHotPlan: descriptor rules, argument lists, the CUDA
// launch of the actual views and dispatch to the CPU reference or the kernels;
// check_indices reads the kernels' error word (index_check.hpp).
#include <cstdint>
#include <cstring>
#include <string>

#include "baracuda/ops/indexing_take.hpp"
#include "core/align.hpp"
#include "core/capture.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/indexing/index_check.hpp"
#include "ops/indexing/launch.hpp"
#include "ops/indexing/take_launch.hpp"
#include "ops/indexing/take_reference.hpp"

namespace baracuda {
namespace indexing::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Indexing", "indexing", BARACUDA_KERNELS_INDEXING};
constexpr const char* kTake = "TakePlan";
constexpr const char* kPut = "PutPlan";
constexpr const char* kOneHot = "OneHotPlan";
// put_'s sort: 32-bit keys (N for a bad index) and 32-bit positions.
constexpr int64_t kCudaLimit = (int64_t{1} << 31) - 1;

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

Status check_dtype(const char* plan, const char* what, DType t) {
  if (dtype_is_valid(t)) return Status::ok();
  return unsupported(plan, what, " ", static_cast<int>(t), " is not a dtype");
}

Status check_index_dtype(const char* plan, DType t) {
  if (t == DType::I32 || t == DType::I64) return Status::ok();
  return unsupported(plan, "index_dtype ", t, " is not supported (i32, i64)");
}

bool accumulates(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16 || t == DType::I32 ||
         t == DType::I64;
}

[[maybe_unused]] cuda::FlatMap flat_map(const Dims& shape, const Dims& strides) {
  cuda::FlatMap m;
  m.rank = shape.rank;
  for (int i = 0; i < shape.rank; ++i) m.shape[i] = shape[i], m.stride[i] = strides[i];
  return m;
}

// The lowest bad position the last CUDA run recorded, worded for `plan`.
Status check_flat_indices(const PlanBase& plan, const Dims& index_shape, int64_t lo, int64_t hi, const char* range,
                          const char* effect, const Stream& stream, Workspace ws) {
  int64_t bad = -1;
  BARACUDA_RETURN_IF_ERROR(read_bad_position(plan, stream, ws, &bad));
  if (bad < 0) return Status::ok();
  return invalid(plan.name(), "index element ", unravel(index_shape, bad), " (position ", bad, ") is outside [", lo,
                 ", ", hi, ") (", range, "; the first bad index, found on the GPU: ", effect, ")");
}

// ---- argument lists --------------------------------------------------------------------
baracuda::detail::ArgCheck take_args(const TakePlan& p, const TakeArgs& a) {
  const TakeDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("x", a.x, d.dtype, d.x_shape)
      .input("index", a.index, d.index_dtype, d.index_shape)
      .output("out", a.out, d.dtype, p.out_shape());
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck put_args(const PutPlan& p, const PutArgs& a) {
  const PutDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("self", a.self, d.dtype, d.self_shape)
      .input("index", a.index, d.index_dtype, d.index_shape)
      .input("source", a.source, d.dtype, d.source_shape)
      .output("out", a.out, d.dtype, p.out_shape())
      .allow_in_place("out", "self");
  return std::move(c.disjoint("out may be self itself, the same view, for an in-place put_"));
}

baracuda::detail::ArgCheck one_hot_args(const OneHotPlan& p, const OneHotArgs& a) {
  const OneHotDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("indices", a.indices, d.index_dtype, d.index_shape).output("out", a.out, d.dtype, p.out_shape());
  return std::move(c.disjoint());
}

// ---- CUDA launches of the actual views ---------------------------------------------------
[[maybe_unused]] cuda::TakeLaunch take_launch(const TakeDescriptor& d, const TakeArgs& a) {
  cuda::TakeLaunch l;
  l.elem_bytes = static_cast<int>(dtype_size(d.dtype));
  l.index_dtype = d.index_dtype;
  l.N = shape_numel(d.x_shape);
  l.n = shape_numel(d.index_shape);
  l.x = flat_map(d.x_shape, a.x.strides);
  l.x_contiguous = baracuda::detail::view_is_contiguous(d.x_shape, a.x.strides);
  l.index = flat_map(d.index_shape, a.index.strides);
  l.out = flat_map(d.index_shape, a.out.strides);
  l.x_data = a.x.data, l.index_data = a.index.data, l.out_data = a.out.data;
  return l;
}

[[maybe_unused]] cuda::PutLaunch put_launch(const PutDescriptor& d, const PutArgs& a) {
  cuda::PutLaunch l;
  l.dtype = d.dtype;
  l.index_dtype = d.index_dtype;
  l.accumulate = d.accumulate;
  l.in_place = a.out.data == a.self.data;
  l.N = shape_numel(d.self_shape);
  l.n = shape_numel(d.index_shape);
  l.self = flat_map(d.self_shape, a.self.strides);
  l.out = flat_map(d.self_shape, a.out.strides);
  l.index = flat_map(d.index_shape, a.index.strides);
  l.source = flat_map(d.source_shape, a.source.strides);
  l.self_data = a.self.data, l.index_data = a.index.data, l.source_data = a.source.data, l.out_data = a.out.data;
  return l;
}

// t == nullptr: the plan's choice for contiguous, aligned views (select()).
cuda::OneHotLaunch one_hot_launch(const OneHotDescriptor& d, const OneHotArgs* t) {
  cuda::OneHotLaunch l;
  l.elem_bytes = static_cast<int>(dtype_size(d.dtype));
  ref::one_bits(d.dtype, l.one);
  l.index_dtype = d.index_dtype;
  l.C = d.num_classes;
  l.rows = shape_numel(d.index_shape);
  Dims out_shape = d.index_shape;
  out_shape.push_back(d.num_classes);
  const Dims cs = contiguous_strides(out_shape);
  const Dims& os = t ? t->out.strides : cs;
  l.index = flat_map(d.index_shape, t ? t->indices.strides : contiguous_strides(d.index_shape));
  l.out_rows = flat_map(d.index_shape, os);
  l.out_class_stride = os[d.index_shape.rank];
  l.vec = baracuda::detail::view_is_contiguous(out_shape, os);  // "fill": a memset, any alignment
  if (t) l.index_data = t->indices.data, l.out_data = t->out.data;
  return l;
}

}  // namespace
}  // namespace indexing::detail

using namespace indexing::detail;

// ---- TakePlan --------------------------------------------------------------------------
Result<TakePlan> TakePlan::select(const Stream& stream, const TakeDescriptor& desc, const PlanPreference& pref) {
  TakePlan plan;
  BARACUDA_RETURN_IF_ERROR(check_dtype(kTake, "dtype", desc.dtype));
  BARACUDA_RETURN_IF_ERROR(check_index_dtype(kTake, desc.index_dtype));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kTake, "x_shape", desc.x_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kTake, "index_shape", desc.index_shape));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kTake, kFamily, stream, pref, desc.dtype, "indexing.take");
  if (!be) return be.status();
  const int64_t n = shape_numel(desc.index_shape);
  if (n == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (n > kCudaLimit)
    return unsupported(kTake, "the CUDA take needs fewer than 2^31 index elements (got ", n, ")");
  baracuda::detail::PlanAccess::sku(plan).variant = "flat";
  baracuda::detail::PlanAccess::set_workspace(plan, error_word_workspace());
  return plan;
}

Status TakePlan::can_implement(const TakeArgs& a) const { return take_args(*this, a).status(); }

Result<KernelSku> TakePlan::sku_for(const Stream& stream, Workspace ws, const TakeArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, take_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    if (baracuda::detail::view_is_contiguous(desc_.x_shape, a.x.strides)) s.variant = "flat.contiguous";
    return s;
  });
}

Status TakePlan::run(const Stream& stream, Workspace ws, const TakeArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, take_args(*this, a), [&] { return indexing::ref::take(kTake, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::TakeLaunch l = take_launch(desc_, a);
        l.error_word = aligned_workspace(ws.ptr);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_take(l);
#else
        return baracuda::detail::no_cuda(kTake);
#endif
      });
}

Status TakePlan::check_indices(const Stream& stream, Workspace ws) const {
  const int64_t N = shape_numel(desc_.x_shape);
  return check_flat_indices(*this, desc_.index_shape, -N, N, "x's element count",
                            "its output element was written as zero", stream, ws);
}

// ---- PutPlan ---------------------------------------------------------------------------
Result<PutPlan> PutPlan::select(const Stream& stream, const PutDescriptor& desc, const PlanPreference& pref) {
  PutPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_dtype(kPut, "dtype", desc.dtype));
  if (desc.accumulate && !accumulates(desc.dtype))
    return unsupported(kPut, "dtype ", desc.dtype, " is not supported with accumulate (f32, f64, f16, bf16, i32, i64)");
  BARACUDA_RETURN_IF_ERROR(check_index_dtype(kPut, desc.index_dtype));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPut, "self_shape", desc.self_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPut, "index_shape", desc.index_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPut, "source_shape", desc.source_shape));
  const int64_t n = shape_numel(desc.index_shape), N = shape_numel(desc.self_shape);
  if (shape_numel(desc.source_shape) != n)
    return invalid(kPut, "source_shape ", desc.source_shape, " has ", shape_numel(desc.source_shape),
                   " elements, index_shape ", desc.index_shape, " has ", n, " (they must have the same number)");
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kPut, kFamily, stream, pref, desc.dtype,
                                         desc.accumulate ? "indexing.put_accumulate" : "indexing.put");
  if (!be) return be.status();
  if (N == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (n > kCudaLimit || N >= kCudaLimit)
    return unsupported(kPut, "the CUDA put_ needs fewer than 2^31 index elements and self below 2^31 - 1 elements (got ",
                       n, " and ", N, ")");
  baracuda::detail::PlanAccess::sku(plan).variant = "sorted";
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(stream.device().ordinal);  // CUB's size queries read the current device
  BARACUDA_RETURN_IF_ERROR(guard.status());
  baracuda::detail::PlanAccess::set_workspace(plan, error_word_workspace() + indexing::cuda::put_workspace(n, N).total);
#endif
  return plan;
}

Status PutPlan::can_implement(const PutArgs& a) const { return put_args(*this, a).status(); }

Result<KernelSku> PutPlan::sku_for(const Stream& stream, Workspace ws, const PutArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, put_args(*this, a));
}

Status PutPlan::run(const Stream& stream, Workspace ws, const PutArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, put_args(*this, a), [&] { return indexing::ref::put(kPut, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::PutLaunch l = put_launch(desc_, a);
        l.workspace = aligned_workspace(ws.ptr);
        l.ws = indexing::cuda::put_workspace(l.n, l.N);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_put(l);
#else
        return baracuda::detail::no_cuda(kPut);
#endif
      });
}

Status PutPlan::check_indices(const Stream& stream, Workspace ws) const {
  const int64_t N = shape_numel(desc_.self_shape);
  return check_flat_indices(*this, desc_.index_shape, -N, N, "self's element count", "its contribution was skipped",
                            stream, ws);
}

// ---- OneHotPlan ------------------------------------------------------------------------
Dims OneHotPlan::out_shape() const {
  Dims s = desc_.index_shape;
  s.push_back(desc_.num_classes);
  return s;
}

Result<OneHotPlan> OneHotPlan::select(const Stream& stream, const OneHotDescriptor& desc, const PlanPreference& pref) {
  OneHotPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_dtype(kOneHot, "dtype", desc.dtype));
  BARACUDA_RETURN_IF_ERROR(check_index_dtype(kOneHot, desc.index_dtype));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kOneHot, "index_shape", desc.index_shape));
  if (desc.index_shape.rank >= kMaxRank)
    return invalid(kOneHot, "index_shape ", desc.index_shape, " has rank ", desc.index_shape.rank, " (at most ",
                   kMaxRank - 1, ": out adds the class axis)");
  if (desc.num_classes < 1)
    return invalid(kOneHot, "num_classes ", desc.num_classes,
                   " must be at least 1 (torch's -1, infer from the data, is two-phase: run ReducePlan amax over the "
                   "indices and select with max + 1)");
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kOneHot, "out shape", plan.out_shape()));
  auto be = baracuda::detail::setup_plan(plan, kOneHot, kFamily, stream, pref, desc.dtype, "indexing.one_hot");
  if (!be) return be.status();
  const int64_t rows = shape_numel(desc.index_shape);
  if (rows == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  baracuda::detail::PlanAccess::sku(plan).variant = one_hot_launch(plan.desc_, nullptr).vec ? "fill" : "elementwise";
  baracuda::detail::PlanAccess::set_workspace(plan, error_word_workspace());
  return plan;
}

Status OneHotPlan::can_implement(const OneHotArgs& a) const { return one_hot_args(*this, a).status(); }

Result<KernelSku> OneHotPlan::sku_for(const Stream& stream, Workspace ws, const OneHotArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, one_hot_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = one_hot_launch(desc_, &a).vec ? "fill" : "elementwise";
    return s;
  });
}

Status OneHotPlan::run(const Stream& stream, Workspace ws, const OneHotArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, one_hot_args(*this, a), [&] { return indexing::ref::one_hot(kOneHot, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::OneHotLaunch l = one_hot_launch(desc_, &a);
        l.error_word = aligned_workspace(ws.ptr);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_one_hot(l);
#else
        return baracuda::detail::no_cuda(kOneHot);
#endif
      });
}

Status OneHotPlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_flat_indices(*this, desc_.index_shape, 0, desc_.num_classes, "num_classes",
                            "its output row was written as zeros", stream, ws);
}

}  // namespace baracuda
