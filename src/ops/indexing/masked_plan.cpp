// NonzeroPlan / MaskedSelectPlan / MaskedScatterPlan: descriptor rules,
// argument lists, the CUDA launch of the actual views and dispatch to the CPU
// reference or the kernels (cuda/masked_launch.cu). MaskedScatterPlan's
// check_indices reads the kernels' error word (as the other indexing plans).
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>

#include "baracuda/ops/indexing_masked.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/host_elements.hpp"
#include "core/plan_shell.hpp"
#include "ops/indexing/index_check.hpp"
#include "ops/indexing/masked_launch.hpp"
#include "ops/indexing/masked_reference.hpp"

namespace baracuda {
namespace indexing::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Indexing", "indexing", BARACUDA_KERNELS_INDEXING};
constexpr const char* kNonzero = "NonzeroPlan";
constexpr const char* kSelect = "MaskedSelectPlan";
constexpr const char* kScatter = "MaskedScatterPlan";
constexpr int64_t kCudaLimit = (int64_t{1} << 31) - 1;  // int32 positions and CUB's item count

using baracuda::detail::invalid;
using baracuda::detail::PlanAccess;
using baracuda::detail::unsupported;

Status check_dtype(const char* plan, const char* what, DType t) {
  switch (t) {
    case DType::Bool: case DType::U8: case DType::I8: case DType::I16: case DType::I32: case DType::I64:
    case DType::F16: case DType::BF16: case DType::F32: case DType::F64: return Status::ok();
    default:
      return unsupported(plan, what, " ", t, " is not supported (bool, u8, i8, i16, i32, i64, f16, bf16, f32, f64)");
  }
}

Status check_capacity(const char* plan, int64_t m, int64_t cols) {
  if (m < 0) return invalid(plan, "capacity ", m, " is negative (the number of result entries out holds)");
  return baracuda::detail::check_size(plan, "out's element count (capacity x columns)", {m, cols});
}

// torch's broadcasting: trailing axes align, each pair equal or one of them 1.
Status broadcast(const char* plan, const Dims& x, const Dims& mask, Dims* b) {
  const int r = x.rank > mask.rank ? x.rank : mask.rank;
  *b = Dims::of_rank(r);
  for (int i = 0; i < r; ++i) {
    const int jx = i - (r - x.rank), jm = i - (r - mask.rank);
    const int64_t ex = jx < 0 ? 1 : x[jx], em = jm < 0 ? 1 : mask[jm];
    if (ex != em && ex != 1 && em != 1)
      return invalid(plan, "x_shape ", x, " and mask_shape ", mask, " do not broadcast (axis ", i,
                     " of the broadcast shape: ", ex, " vs ", em, ")");
    (*b)[i] = ex == 1 ? em : ex;
  }
  return Status::ok();
}

// The CUDA plan's workspace (every plan of the file: the same rule), or the
// refusal of a walked shape too large for int32 positions.
Status cuda_workspace(PlanBase& plan, const char* name, const Stream& stream, int64_t n, int pred_bytes) {
  if (n > kCudaLimit)
    return unsupported(name, "the CUDA kernels need fewer than 2^31 positions (got ", n, ")");
  PlanAccess::sku(plan).variant = "select";
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(stream.device().ordinal);  // CUB's size queries read the current device
  BARACUDA_RETURN_IF_ERROR(guard.status());
  PlanAccess::set_workspace(plan, kWorkspaceAlign + cuda::kErrorWordBytes + cuda::masked_workspace(n, pred_bytes).total);
#else
  (void)stream;
  (void)pred_bytes;
#endif
  return Status::ok();
}

void copy_dims(const Dims& d, int64_t* to) {
  for (int i = 0; i < d.rank; ++i) to[i] = d[i];
}

// The bits of v stored as one element of t (integers truncated, as a C++ cast).
uint64_t bits_of(DType t, double v) {
  alignas(16) unsigned char buf[16] = {};
  if (is_floating_point(t)) baracuda::detail::store_f(buf, t, 0, v);
  else baracuda::detail::store_i(buf, t, 0, static_cast<int64_t>(v));
  uint64_t b = 0;
  std::memcpy(&b, buf, sizeof(b));
  return b;
}

double rounded(DType t, double v) {
  alignas(16) unsigned char buf[16] = {};
  const uint64_t b = bits_of(t, v);
  std::memcpy(buf, &b, sizeof(b));
  return is_floating_point(t) ? baracuda::detail::load_f(buf, t, 0)
                              : static_cast<double>(baracuda::detail::load_i(buf, t, 0));
}

// ---- argument lists --------------------------------------------------------------------
baracuda::detail::ArgCheck nonzero_args(const NonzeroPlan& p, const NonzeroArgs& a) {
  const NonzeroDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("x", a.x, d.dtype, d.shape)
      .output("out", a.out, DType::I64, p.out_shape())
      .optional_output("count", a.count, d.has_count, DType::I64, Dims{},
                       "count is given but descriptor.has_count is false");
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck select_args(const MaskedSelectPlan& p, const MaskedSelectArgs& a) {
  const MaskedSelectDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("x", a.x, d.dtype, d.x_shape)
      .input("mask", a.mask, DType::Bool, d.mask_shape)
      .output("out", a.out, d.dtype, p.out_shape())
      .optional_output("count", a.count, d.has_count, DType::I64, Dims{},
                       "count is given but descriptor.has_count is false");
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck scatter_args(const MaskedScatterPlan& p, const MaskedScatterArgs& a) {
  const MaskedScatterDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("self", a.self, d.dtype, d.self_shape)
      .input("mask", a.mask, DType::Bool, d.mask_shape)
      .input("source", a.source, d.dtype, d.source_shape)
      .output("out", a.out, d.dtype, p.out_shape())
      .allow_in_place("out", "self");
  return std::move(c.disjoint("out may be self itself, the same view, for masked_scatter_"));
}

// ---- CUDA launches of the actual views ---------------------------------------------------
[[maybe_unused]] cuda::MaskedLaunch base_launch(cuda::MaskedOp op, const Dims& shape, void* ws, void* stream,
                                                int pred_bytes) {
  cuda::MaskedLaunch l;
  l.op = op;
  l.rank = shape.rank;
  l.n = shape_numel(shape);
  copy_dims(shape, l.shape);
  l.pred_bytes = pred_bytes;
  l.workspace = aligned_workspace(ws);
  l.ws = cuda::masked_workspace(l.n, pred_bytes);
  l.stream = stream;
  return l;
}

}  // namespace
}  // namespace indexing::detail

using namespace indexing::detail;

// ---- NonzeroPlan -----------------------------------------------------------------------
Result<NonzeroPlan> NonzeroPlan::select(const Stream& stream, const NonzeroDescriptor& desc,
                                        const PlanPreference& pref) {
  NonzeroPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_dtype(kNonzero, "dtype", desc.dtype));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kNonzero, "shape", desc.shape));
  BARACUDA_RETURN_IF_ERROR(check_capacity(kNonzero, desc.capacity, desc.shape.rank));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kNonzero, kFamily, stream, pref, desc.dtype, "indexing.nonzero");
  if (!be) return be.status();
  // No count and an empty out ([capacity, rank] with capacity or rank 0): run()
  // writes nothing, so the plan is "empty", as sku_for() names it.
  if (!desc.has_count && (desc.capacity == 0 || desc.shape.rank == 0)) {
    PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  BARACUDA_RETURN_IF_ERROR(cuda_workspace(plan, kNonzero, stream, shape_numel(desc.shape),
                                          static_cast<int>(dtype_size(desc.dtype))));
  return plan;
}

Status NonzeroPlan::can_implement(const NonzeroArgs& a) const { return nonzero_args(*this, a).status(); }

Result<KernelSku> NonzeroPlan::sku_for(const Stream& stream, Workspace ws, const NonzeroArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, nonzero_args(*this, a));
}

Status NonzeroPlan::run(const Stream& stream, Workspace ws, const NonzeroArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, nonzero_args(*this, a), [&] { return indexing::ref::nonzero(kNonzero, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        const int bytes = static_cast<int>(dtype_size(desc_.dtype));
        indexing::cuda::MaskedLaunch l = base_launch(indexing::cuda::MaskedOp::Nonzero, desc_.shape, ws.ptr, stream.native_handle(), bytes);
        l.pred = a.x.data;
        l.pred_float = is_floating_point(desc_.dtype);
        copy_dims(a.x.strides, l.pred_stride);
        l.elem_bytes = 8;
        l.out = a.out.data;
        l.out_stride[0] = a.out.strides[0];
        l.out_stride[1] = a.out.strides[1];
        l.capacity = desc_.shape.rank > 0 ? desc_.capacity : 0;  // out [m, 0] has no element: no rows to visit
        l.fill_bits = static_cast<uint64_t>(desc_.fill_value);
        l.count = desc_.has_count ? a.count.data : nullptr;
        return indexing::cuda::launch_masked(l);
#else
        return baracuda::detail::no_cuda(kNonzero);
#endif
      });
}

// ---- MaskedSelectPlan ------------------------------------------------------------------
Result<MaskedSelectPlan> MaskedSelectPlan::select(const Stream& stream, const MaskedSelectDescriptor& desc,
                                                  const PlanPreference& pref) {
  MaskedSelectPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_dtype(kSelect, "dtype", desc.dtype));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kSelect, "x_shape", desc.x_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kSelect, "mask_shape", desc.mask_shape));
  BARACUDA_RETURN_IF_ERROR(broadcast(kSelect, desc.x_shape, desc.mask_shape, &plan.shape_));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kSelect, "the broadcast shape", plan.shape_));
  BARACUDA_RETURN_IF_ERROR(check_capacity(kSelect, desc.capacity, 1));
  if (!std::isfinite(desc.fill_value) && !is_floating_point(desc.dtype))
    return invalid(kSelect, "fill_value ", desc.fill_value, " is not finite (dtype ", desc.dtype, " is not a float)");
  if (!is_floating_point(desc.dtype) && std::fabs(desc.fill_value) >= 9.2233720368547758e18)
    return invalid(kSelect, "fill_value ", desc.fill_value, " is outside the int64 range (dtype ", desc.dtype, ")");
  plan.desc_ = desc;
  plan.desc_.fill_value = rounded(desc.dtype, desc.fill_value);
  auto be = baracuda::detail::setup_plan(plan, kSelect, kFamily, stream, pref, desc.dtype, "indexing.masked_select");
  if (!be) return be.status();
  if (!desc.has_count && desc.capacity == 0) {  // nothing to write, as NonzeroPlan's
    PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  BARACUDA_RETURN_IF_ERROR(cuda_workspace(plan, kSelect, stream, shape_numel(plan.shape_), 1));
  return plan;
}

Status MaskedSelectPlan::can_implement(const MaskedSelectArgs& a) const { return select_args(*this, a).status(); }

Result<KernelSku> MaskedSelectPlan::sku_for(const Stream& stream, Workspace ws, const MaskedSelectArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, select_args(*this, a));
}

Status MaskedSelectPlan::run(const Stream& stream, Workspace ws, const MaskedSelectArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, select_args(*this, a),
      [&] { return indexing::ref::masked_select(kSelect, desc_, shape_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::MaskedLaunch l = base_launch(indexing::cuda::MaskedOp::Select, shape_, ws.ptr, stream.native_handle(), 1);
        l.pred = a.mask.data;
        copy_dims(indexing::ref::broadcast_strides(desc_.mask_shape, a.mask.strides, shape_), l.pred_stride);
        l.elem_bytes = static_cast<int>(dtype_size(desc_.dtype));
        l.data = a.x.data;
        copy_dims(indexing::ref::broadcast_strides(desc_.x_shape, a.x.strides, shape_), l.data_stride);
        l.out = a.out.data;
        l.out_stride[0] = a.out.strides[0];
        l.capacity = desc_.capacity;
        l.fill_bits = bits_of(desc_.dtype, desc_.fill_value);
        l.count = desc_.has_count ? a.count.data : nullptr;
        return indexing::cuda::launch_masked(l);
#else
        return baracuda::detail::no_cuda(kSelect);
#endif
      });
}

// ---- MaskedScatterPlan -----------------------------------------------------------------
Result<MaskedScatterPlan> MaskedScatterPlan::select(const Stream& stream, const MaskedScatterDescriptor& desc,
                                                    const PlanPreference& pref) {
  MaskedScatterPlan plan;
  BARACUDA_RETURN_IF_ERROR(check_dtype(kScatter, "dtype", desc.dtype));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kScatter, "self_shape", desc.self_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kScatter, "mask_shape", desc.mask_shape));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kScatter, "source_shape", desc.source_shape));
  const Dims& s = desc.self_shape;
  const Dims& m = desc.mask_shape;
  if (m.rank > s.rank)
    return invalid(kScatter, "mask_shape ", m, " has more axes than self_shape ", s,
                   " (the mask broadcasts to self; self does not broadcast)");
  for (int j = 0; j < m.rank; ++j) {
    const int i = j + s.rank - m.rank;
    if (m[j] != s[i] && m[j] != 1)
      return invalid(kScatter, "mask_shape ", m, " does not broadcast to self_shape ", s, " (axis ", i, ": ", m[j],
                     " vs ", s[i], "; self does not broadcast)");
  }
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kScatter, kFamily, stream, pref, desc.dtype, "indexing.masked_scatter");
  if (!be) return be.status();
  if (shape_numel(s) == 0) {
    PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  BARACUDA_RETURN_IF_ERROR(cuda_workspace(plan, kScatter, stream, shape_numel(s), 1));
  return plan;
}

Status MaskedScatterPlan::can_implement(const MaskedScatterArgs& a) const { return scatter_args(*this, a).status(); }

Result<KernelSku> MaskedScatterPlan::sku_for(const Stream& stream, Workspace ws, const MaskedScatterArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, scatter_args(*this, a));
}

Status MaskedScatterPlan::run(const Stream& stream, Workspace ws, const MaskedScatterArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, scatter_args(*this, a), [&] { return indexing::ref::masked_scatter(kScatter, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        const Dims& s = desc_.self_shape;
        indexing::cuda::MaskedLaunch l = base_launch(indexing::cuda::MaskedOp::Scatter, s, ws.ptr, stream.native_handle(), 1);
        l.pred = a.mask.data;
        copy_dims(indexing::ref::broadcast_strides(desc_.mask_shape, a.mask.strides, s), l.pred_stride);
        l.elem_bytes = static_cast<int>(dtype_size(desc_.dtype));
        l.data = a.self.data;
        copy_dims(a.self.strides, l.data_stride);
        l.out = a.out.data;
        copy_dims(a.out.strides, l.out_stride);
        l.source = a.source.data;
        l.source_rank = desc_.source_shape.rank;
        l.source_numel = shape_numel(desc_.source_shape);
        copy_dims(desc_.source_shape, l.source_shape);
        copy_dims(a.source.strides, l.source_stride);
        l.in_place = a.out.data == a.self.data;
        return indexing::cuda::launch_masked(l);
#else
        return baracuda::detail::no_cuda(kScatter);
#endif
      });
}

Status MaskedScatterPlan::check_indices(const Stream& stream, Workspace ws) const {
  int64_t bad = -1;
  BARACUDA_RETURN_IF_ERROR(read_bad_position(*this, stream, ws, &bad));
  if (bad < 0) return Status::ok();
  return invalid(name(), "mask position ", unravel(desc_.self_shape, bad), " (position ", bad,
                 ") is true but source (source_shape ", desc_.source_shape, ", ", shape_numel(desc_.source_shape),
                 " elements) has no element left for it (the first such position, found on the GPU: it and every "
                 "later true position were skipped)");
}

}  // namespace baracuda
