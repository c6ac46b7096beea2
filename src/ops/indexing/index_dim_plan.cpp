// IndexSelectPlan / IndexUpdatePlan: descriptor rules, argument lists, the
// CUDA launch of the actual views ([outer, S, inner] maps, vector path) and
// dispatch to the CPU reference or the kernels; check_indices reads the
// kernels' error word.
#include <cmath>
#include <cstdint>
#include <string>

#include "baracuda/ops/indexing.hpp"
#include "core/align.hpp"
#include "core/capture.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/indexing/index_check.hpp"
#include "ops/indexing/index_dim_launch.hpp"
#include "ops/indexing/index_dim_layout.hpp"
#include "ops/indexing/index_dim_reference.hpp"
#include "ops/indexing/launch.hpp"

namespace baracuda {

const char* index_update_mode_name(IndexUpdateMode m) {
  switch (m) {
    case IndexUpdateMode::Add: return "add";
    case IndexUpdateMode::Copy: return "copy";
    case IndexUpdateMode::Fill: return "fill";
    case IndexUpdateMode::Prod: return "prod";
    case IndexUpdateMode::Mean: return "mean";
    case IndexUpdateMode::Amax: return "amax";
    case IndexUpdateMode::Amin: return "amin";
  }
  return "unknown";
}

namespace indexing::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Indexing", "indexing", BARACUDA_KERNELS_INDEXING};
constexpr const char* kSel = "IndexSelectPlan";
constexpr const char* kUpd = "IndexUpdatePlan";
// The CUDA update sorts 32-bit keys (the slice, S for a skipped index) and 32-bit positions.
constexpr int64_t kCudaUpdateLimit = (int64_t{1} << 31) - 1;

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }
bool is_int(DType t) { return t == DType::I32 || t == DType::I64; }

Dims with_extent(Dims s, int dim, int64_t e) {
  s[dim] = e;
  return s;
}

// The rules every descriptor of the family shares; *dim_out = dim resolved.
Status validate_common(const char* plan, DType dtype, bool ints_ok, DType index_dtype, const Dims& self_shape,
                       int64_t dim, const Dims& index_shape, int64_t* dim_out) {
  if (!(is_float(dtype) || (ints_ok && is_int(dtype))))
    return unsupported(plan, "dtype ", dtype, " is not supported (f32, f64, f16, bf16",
                       ints_ok ? ", i32, i64)" : "; i32 / i64 only for index_select, copy and fill)");
  if (!is_int(index_dtype)) return unsupported(plan, "index_dtype ", index_dtype, " is not supported (i32, i64)");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "self_shape", self_shape));
  if (self_shape.rank < 1) return invalid(plan, "self_shape ", self_shape, " has rank 0 (at least 1: dim names an axis)");
  const int64_t r = self_shape.rank;
  if (dim < -r || dim >= r) return invalid(plan, "dim ", dim, " is outside [", -r, ", ", r, ") (self_shape ", self_shape, ")");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "index_shape", index_shape));
  if (index_shape.rank > 1)
    return invalid(plan, "index_shape ", index_shape, " has rank ", index_shape.rank, " (0 or 1: a 0-D index is one index)");
  *dim_out = dim < 0 ? dim + r : dim;
  // The [outer, n, inner] tensor (out / source) must count its elements in int64.
  const Dims other = with_extent(self_shape, static_cast<int>(*dim_out), shape_numel(index_shape));
  return baracuda::detail::check_shape(plan, "the shape with n at dim", other);
}

int64_t index_stride_of(const TensorRef& index) { return index.shape.rank == 0 ? 0 : index.strides[0]; }

// ---- CUDA launches of the actual views (t == nullptr: contiguous, aligned views: select()'s choice)
cuda::SelectLaunch select_launch(const IndexSelectDescriptor& d, const IndexSelectArgs* t) {
  cuda::SelectLaunch l;
  l.dtype = d.dtype;
  l.index_dtype = d.index_dtype;
  const int dim = static_cast<int>(d.dim);
  const int64_t n = shape_numel(d.index_shape);
  const Dims out_shape = with_extent(d.self_shape, dim, n);
  static const char aligned[16] alignas(16) = {};
  const Dims cs = contiguous_strides(d.self_shape), co = contiguous_strides(out_shape);
  const Dims* strides[2] = {t ? &t->self.strides : &cs, t ? &t->out.strides : &co};
  const IndexDimLayout L = index_dim_layout(d.self_shape, dim, n, strides, 2);
  l.outer = L.outer, l.S = L.S, l.n = L.n, l.inner = L.inner;
  l.outer_map = L.outer_map, l.inner_map = L.inner_map;
  l.self_dim_stride = L.dim_stride[0], l.out_dim_stride = L.dim_stride[1];
  if (t) {
    l.index_stride = index_stride_of(t->index);
    l.self = t->self.data, l.index = t->index.data, l.out = t->out.data;
  } else {
    l.index_stride = 1;
    l.self = l.out = const_cast<char*>(aligned);
  }
  const int64_t es = static_cast<int64_t>(dtype_size(d.dtype));
  bool vec = l.inner_map.rank == 1 && l.inner_map.stride[0][0] == 1 && l.inner_map.stride[1][0] == 1 &&
             (l.inner * es) % 16 == 0 && baracuda::detail::is_aligned16(l.self) &&
             baracuda::detail::is_aligned16(l.out) && (l.self_dim_stride * es) % 16 == 0 &&
             (l.out_dim_stride * es) % 16 == 0;
  for (int i = 0; i < l.outer_map.rank; ++i)
    vec = vec && (l.outer_map.stride[0][i] * es) % 16 == 0 && (l.outer_map.stride[1][i] * es) % 16 == 0;
  l.vec = vec;
  return l;
}

[[maybe_unused]] cuda::UpdateLaunch update_launch(const IndexUpdateDescriptor& d, const IndexUpdateArgs& a) {
  cuda::UpdateLaunch l;
  l.mode = d.mode;
  l.dtype = d.dtype;
  l.index_dtype = d.index_dtype;
  const int dim = static_cast<int>(d.dim);
  const int64_t n = shape_numel(d.index_shape);
  const bool has_src = d.mode != IndexUpdateMode::Fill;
  const Dims* strides[3] = {&a.self.strides, &a.out.strides, has_src ? &a.source.strides : &a.self.strides};
  // The source map is built over self's shape: only its outer / inner strides are used.
  const IndexDimLayout L = index_dim_layout(d.self_shape, dim, n, strides, 3);
  l.outer = L.outer, l.S = L.S, l.n = L.n, l.inner = L.inner;
  l.outer_map = L.outer_map, l.inner_map = L.inner_map;
  l.self_dim_stride = L.dim_stride[0], l.out_dim_stride = L.dim_stride[1], l.src_dim_stride = L.dim_stride[2];
  l.index_stride = index_stride_of(a.index);
  l.alpha = d.alpha, l.value = d.value, l.include_self = d.include_self;
  l.in_place = a.out.data == a.self.data;
  l.wrap_negative = d.mode == IndexUpdateMode::Fill;
  l.self = a.self.data, l.index = a.index.data, l.source = has_src ? a.source.data : nullptr, l.out = a.out.data;
  // The vector path: the inner dims are one contiguous, 16-byte aligned row in
  // every operand (the source map carries self's strides for Fill).
  const int64_t es = static_cast<int64_t>(dtype_size(d.dtype));
  bool vec = l.inner_map.rank == 1 && (l.inner * es) % 16 == 0 && baracuda::detail::is_aligned16(l.self) &&
             baracuda::detail::is_aligned16(l.out) && (!has_src || baracuda::detail::is_aligned16(l.source));
  const int64_t dim_strides[3] = {l.self_dim_stride, l.out_dim_stride, l.src_dim_stride};
  for (int k = 0; k < 3 && vec; ++k) {
    vec = l.inner_map.stride[k][0] == 1 && (dim_strides[k] * es) % 16 == 0;
    for (int i = 0; i < l.outer_map.rank; ++i) vec = vec && (l.outer_map.stride[k][i] * es) % 16 == 0;
  }
  l.vec = vec;
  return l;
}

std::string select_variant(const cuda::SelectLaunch& l) { return l.vec ? "slice.vec16" : "slice"; }

// ---- argument lists ------------------------------------------------------------------
baracuda::detail::ArgCheck select_args(const IndexSelectPlan& p, const IndexSelectArgs& a) {
  const IndexSelectDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("self", a.self, d.dtype, d.self_shape)
      .input("index", a.index, d.index_dtype, d.index_shape)
      .output("out", a.out, d.dtype, p.out_shape());
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck update_args(const IndexUpdatePlan& p, const IndexUpdateArgs& a) {
  const IndexUpdateDescriptor& d = p.descriptor();
  const bool fill = d.mode == IndexUpdateMode::Fill;
  baracuda::detail::ArgCheck c(p);
  c.input("self", a.self, d.dtype, d.self_shape)
      .input("index", a.index, d.index_dtype, d.index_shape)
      .optional_input("source", a.source, !fill, d.dtype, p.source_shape(),
                      "source is missing (every mode but fill reads it)",
                      "source is given but mode is fill (it writes descriptor.value)")
      .output("out", a.out, d.dtype, d.self_shape)
      .allow_in_place("out", "self");
  return std::move(c.disjoint("out is self itself (in place) or disjoint from it"));
}

// ---- check_indices -------------------------------------------------------------------
Status check_indices_of(const PlanBase& plan, int64_t S, int64_t dim, bool wraps, const Stream& stream, Workspace ws) {
  int64_t bad = -1;
  BARACUDA_RETURN_IF_ERROR(read_bad_position(plan, stream, ws, &bad));
  if (bad < 0) return Status::ok();
  const bool sel = std::string(plan.name()) == kSel;
  return invalid(plan.name(), "index position ", bad, " is outside [", wraps ? -S : 0, ", ", S, ") (self's extent at dim ",
                 dim, "; the first bad index, found on the GPU: ",
                 sel ? "its output slice was written as zeros)" : "its contribution was skipped)");
}

}  // namespace
}  // namespace indexing::detail

using namespace indexing::detail;

// ---- IndexSelectPlan -----------------------------------------------------------------
Dims IndexSelectPlan::out_shape() const {
  return with_extent(desc_.self_shape, static_cast<int>(desc_.dim), shape_numel(desc_.index_shape));
}

Result<IndexSelectPlan> IndexSelectPlan::select(const Stream& stream, const IndexSelectDescriptor& desc,
                                                const PlanPreference& pref) {
  IndexSelectPlan plan;
  int64_t dim = 0;
  BARACUDA_RETURN_IF_ERROR(
      validate_common(kSel, desc.dtype, true, desc.index_dtype, desc.self_shape, desc.dim, desc.index_shape, &dim));
  plan.desc_ = desc;
  plan.desc_.dim = dim;
  auto be = baracuda::detail::setup_plan(plan, kSel, kFamily, stream, pref, desc.dtype, "indexing.index_select");
  if (!be) return be.status();
  if (shape_numel(plan.out_shape()) == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
  } else if (be->backend != Backend::CpuReference) {
    baracuda::detail::PlanAccess::sku(plan).variant = select_variant(select_launch(plan.desc_, nullptr));
  }
  if (be->backend != Backend::CpuReference && plan.sku().variant != "empty")
    baracuda::detail::PlanAccess::set_workspace(plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes);
  return plan;
}

Status IndexSelectPlan::can_implement(const IndexSelectArgs& a) const { return select_args(*this, a).status(); }

Result<KernelSku> IndexSelectPlan::sku_for(const Stream& stream, Workspace ws, const IndexSelectArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, select_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = select_variant(select_launch(desc_, &a));
    return s;
  });
}

Status IndexSelectPlan::run(const Stream& stream, Workspace ws, const IndexSelectArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, select_args(*this, a), [&] { return indexing::ref::index_select(kSel, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::SelectLaunch l = select_launch(desc_, &a);
        l.error_word = aligned_workspace(ws.ptr);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_index_select(l);
#else
        return baracuda::detail::no_cuda(kSel);
#endif
      });
}

Status IndexSelectPlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_indices_of(*this, desc_.self_shape[static_cast<int>(desc_.dim)], desc_.dim, false, stream, ws);
}

// ---- IndexUpdatePlan -----------------------------------------------------------------
Dims IndexUpdatePlan::source_shape() const {
  return with_extent(desc_.self_shape, static_cast<int>(desc_.dim), shape_numel(desc_.index_shape));
}

Result<IndexUpdatePlan> IndexUpdatePlan::select(const Stream& stream, const IndexUpdateDescriptor& desc,
                                                const PlanPreference& pref) {
  IndexUpdatePlan plan;
  const IndexUpdateMode m = desc.mode;
  if (!(m == IndexUpdateMode::Add || m == IndexUpdateMode::Copy || m == IndexUpdateMode::Fill ||
        m == IndexUpdateMode::Prod || m == IndexUpdateMode::Mean || m == IndexUpdateMode::Amax ||
        m == IndexUpdateMode::Amin))
    return invalid(kUpd, "mode ", static_cast<int>(m),
                   " is not an IndexUpdateMode (add, copy, fill, prod, mean, amax, amin)");
  const bool ints_ok = m == IndexUpdateMode::Copy || m == IndexUpdateMode::Fill;
  int64_t dim = 0;
  BARACUDA_RETURN_IF_ERROR(
      validate_common(kUpd, desc.dtype, ints_ok, desc.index_dtype, desc.self_shape, desc.dim, desc.index_shape, &dim));
  if (m == IndexUpdateMode::Add && !std::isfinite(desc.alpha))
    return invalid(kUpd, "alpha ", desc.alpha, " is not finite");
  if (m == IndexUpdateMode::Fill && is_int(desc.dtype)) {
    const double lim = desc.dtype == DType::I32 ? 2147483648.0 : 9.2233720368547758e18;  // 2^31, 2^63
    if (!(std::isfinite(desc.value) && desc.value >= -lim && desc.value < lim))
      return invalid(kUpd, "value ", desc.value, " does not fit dtype ", desc.dtype, " (truncated toward zero, it must lie in [",
                     -lim, ", ", lim, "))");
  }
  plan.desc_ = desc;
  plan.desc_.dim = dim;
  auto be = baracuda::detail::setup_plan(plan, kUpd, kFamily, stream, pref, desc.dtype,
                                         std::string("indexing.index_") + index_update_mode_name(m));
  if (!be) return be.status();
  if (shape_numel(desc.self_shape) == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  const int64_t n = shape_numel(desc.index_shape);
  const int64_t S = desc.self_shape[static_cast<int>(dim)];
  if (n > kCudaUpdateLimit || S >= kCudaUpdateLimit)
    return unsupported(kUpd, "the CUDA update needs fewer than 2^31 indices and a dim extent below 2^31 - 1 (got ", n,
                       " indices, extent ", S, ")");
  // Contiguous views take the vector path when an inner row is a whole number of 16-byte vectors.
  int64_t inner = 1;
  for (int i = static_cast<int>(dim) + 1; i < desc.self_shape.rank; ++i) inner *= desc.self_shape[i];
  const bool vec = (inner * static_cast<int64_t>(dtype_size(desc.dtype))) % 16 == 0;
  baracuda::detail::PlanAccess::sku(plan).variant = vec ? "sorted.vec16" : "sorted";
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(stream.device().ordinal);  // CUB's size queries read the current device
  BARACUDA_RETURN_IF_ERROR(guard.status());
  baracuda::detail::PlanAccess::set_workspace(
      plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes + indexing::cuda::update_workspace(n, S).total);
#endif
  return plan;
}

Status IndexUpdatePlan::can_implement(const IndexUpdateArgs& a) const { return update_args(*this, a).status(); }

Result<KernelSku> IndexUpdatePlan::sku_for(const Stream& stream, Workspace ws, const IndexUpdateArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, update_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = update_launch(desc_, a).vec ? "sorted.vec16" : "sorted";
    return s;
  });
}

Status IndexUpdatePlan::run(const Stream& stream, Workspace ws, const IndexUpdateArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, update_args(*this, a), [&] { return indexing::ref::index_update(kUpd, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::UpdateLaunch l = update_launch(desc_, a);
        l.workspace = aligned_workspace(ws.ptr);
        l.ws = indexing::cuda::update_workspace(l.n, l.S);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_index_update(l);
#else
        return baracuda::detail::no_cuda(kUpd);
#endif
      });
}

Status IndexUpdatePlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_indices_of(*this, desc_.self_shape[static_cast<int>(desc_.dim)], desc_.dim,
                          desc_.mode == IndexUpdateMode::Fill, stream, ws);
}

}  // namespace baracuda
