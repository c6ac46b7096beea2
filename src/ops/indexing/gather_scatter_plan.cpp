// GatherPlan / ScatterPlan: descriptor rules, argument lists, the CUDA launch
// of the actual views and dispatch to the CPU reference or the kernels;
// check_indices reads the kernels' error word (as the embedding plans).
#include <cmath>
#include <cstdint>
#include <string>

#include "baracuda/ops/indexing.hpp"
#include "core/capture.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/host_elements.hpp"
#include "core/plan_shell.hpp"
#include "ops/indexing/gather_scatter_launch.hpp"
#include "ops/indexing/index_check.hpp"
#include "ops/indexing/gather_scatter_reference.hpp"

namespace baracuda {

const char* scatter_reduce_name(ScatterReduce r) {
  switch (r) {
    case ScatterReduce::None: return "none";
    case ScatterReduce::Sum: return "sum";
    case ScatterReduce::Prod: return "prod";
    case ScatterReduce::Mean: return "mean";
    case ScatterReduce::Amax: return "amax";
    case ScatterReduce::Amin: return "amin";
  }
  return "unknown";
}

namespace indexing::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Indexing", "indexing", BARACUDA_KERNELS_INDEXING};
constexpr const char* kGather = "GatherPlan";
constexpr const char* kScatter = "ScatterPlan";
constexpr int64_t kCudaIndexLimit = (int64_t{1} << 31) - 1;  // 32-bit positions in the sort / grid

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }
// ScatterPlan's integer dtypes (wrapping arithmetic, floored mean).
bool is_scatter_int(DType t) {
  return t == DType::I8 || t == DType::U8 || t == DType::I16 || t == DType::I32 || t == DType::I64;
}
// [lo, hi] of an integer dtype, as doubles (I64's hi is 2^63, excluded by the caller).
void int_range(DType t, double* lo, double* hi) {
  switch (t) {
    case DType::I8: *lo = -128.0, *hi = 127.0; return;
    case DType::U8: *lo = 0.0, *hi = 255.0; return;
    case DType::I16: *lo = -32768.0, *hi = 32767.0; return;
    case DType::I32: *lo = -2147483648.0, *hi = 2147483647.0; return;
    default: *lo = -9.2233720368547758e18, *hi = 9.2233720368547758e18; return;  // -2^63, 2^63
  }
}

// Shapes and dim shared by both plans: `a` (x / self) and index of one rank
// >= 1, dim resolved, index.size(d) <= a.size(d) for d != dim.
Status check_dims(const char* plan, const char* a_name, const Dims& a, const Dims& index, int64_t dim,
                  int64_t* resolved) {
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, a_name, a));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "index_shape", index));
  if (a.rank == 0)
    return invalid(plan, a_name, " has rank 0 (view a scalar as shape [1]; torch treats it so)");
  if (index.rank != a.rank)
    return invalid(plan, "index_shape ", index, " has rank ", index.rank, ", ", a_name, " ", a, " has rank ", a.rank,
                   " (they must match)");
  if (dim < -a.rank || dim >= a.rank) return invalid(plan, "dim ", dim, " is outside [", -a.rank, ", ", a.rank, ")");
  *resolved = dim < 0 ? dim + a.rank : dim;
  for (int d = 0; d < a.rank; ++d)
    if (d != *resolved && index[d] > a[d])
      return invalid(plan, "index_shape ", index, " is larger than ", a_name, " ", a, " along dim ", d, " (", index[d],
                     " > ", a[d], "; only dim ", *resolved, " may differ)");
  return Status::ok();
}

Status check_index_dtype(const char* plan, DType t) {
  if (t == DType::I32 || t == DType::I64) return Status::ok();
  return unsupported(plan, "index_dtype ", t, " is not supported (i32, i64)");
}

void copy_dims(const Dims& d, int64_t* to) {
  for (int i = 0; i < d.rank; ++i) to[i] = d[i];
}

// The value rounded to dtype (as the CPU stores it), so both backends start
// from the same number.
double rounded(DType t, double v) {
  alignas(16) unsigned char buf[16] = {};  // room for any dtype (the compiler sees them all)
  baracuda::detail::store_f(buf, t, 0, v);
  return baracuda::detail::load_f(buf, t, 0);
}

Status check_indices_of(const PlanBase& plan, const Dims& index_shape, int64_t size, int64_t dim,
                        const Stream& stream, Workspace ws) {
  int64_t bad = -1;
  BARACUDA_RETURN_IF_ERROR(read_bad_position(plan, stream, ws, &bad));
  if (bad < 0) return Status::ok();
  const Dims coords = unravel(index_shape, bad);
  const bool gather = std::string(plan.name()) == kGather;
  return invalid(plan.name(), "index element ", coords, " (position ", bad, ") is outside [0, ", size,
                 ") (the size of dim ", dim, "; the first bad index, found on the GPU: ",
                 gather ? "its output element was written as zero)" : "its contribution was skipped)");
}

// ---- argument lists --------------------------------------------------------------------
baracuda::detail::ArgCheck gather_args(const GatherPlan& p, const GatherArgs& a) {
  const GatherDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("x", a.x, d.dtype, d.x_shape)
      .input("index", a.index, d.index_dtype, d.index_shape)
      .output("out", a.out, d.dtype, p.out_shape());
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck scatter_args(const ScatterPlan& p, const ScatterArgs& a) {
  const ScatterDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("self", a.self, d.dtype, d.self_shape)
      .input("index", a.index, d.index_dtype, d.index_shape)
      .optional_input("src", a.src, !d.use_value, d.dtype, d.src_shape,
                      "src is missing (descriptor.use_value is false): expected the contributions",
                      "src is given but descriptor.use_value is true (every contribution is descriptor.value)")
      .output("out", a.out, d.dtype, p.out_shape())
      .allow_in_place("out", "self");
  return std::move(c.disjoint("out may be self itself, the same view, for an in-place scatter"));
}

// ---- CUDA launches of the actual views ---------------------------------------------------
[[maybe_unused]] cuda::GatherLaunch gather_launch(const GatherDescriptor& d, const GatherArgs& a, void* ws,
                                                  void* stream) {
  cuda::GatherLaunch l;
  l.elem_bytes = static_cast<int>(dtype_size(d.dtype));
  l.index_dtype = d.index_dtype;
  l.rank = d.index_shape.rank;
  l.dim = static_cast<int>(d.dim);
  l.n = shape_numel(d.index_shape);
  l.size_dim = d.x_shape[d.dim];
  copy_dims(d.index_shape, l.shape);
  copy_dims(a.x.strides, l.x_stride);
  copy_dims(a.index.strides, l.idx_stride);
  copy_dims(a.out.strides, l.out_stride);
  l.x = a.x.data;
  l.index = a.index.data;
  l.out = a.out.data;
  l.error_word = aligned_workspace(ws);
  l.stream = stream;
  return l;
}

// The sorted route's row path: the index is constant along every axis but dim
// (stride 0 or extent 1 there, e.g. index.expand(...)), so only its
// index.size(dim) values need sorting (see scatter_launch.cu).
bool index_is_rows(const ScatterDescriptor& d, const TensorRef& index) {
  const int64_t n = shape_numel(d.index_shape);
  if (n == 0 || n == d.index_shape[d.dim]) return false;  // one column: the general path is the same work
  for (int k = 0; k < d.index_shape.rank; ++k)
    if (k != d.dim && d.index_shape[k] != 1 && index.strides[k] != 0) return false;
  return true;
}

[[maybe_unused]] cuda::ScatterLaunch scatter_launch(const ScatterDescriptor& d, const ScatterArgs& a, void* ws,
                                                    void* stream, bool atomic) {
  cuda::ScatterLaunch l;
  l.dtype = d.dtype;
  l.index_dtype = d.index_dtype;
  l.reduce = static_cast<int>(d.reduce);
  l.include_self = d.include_self;
  l.use_value = d.use_value;
  l.value = d.value;
  l.ivalue = is_scatter_int(d.dtype) ? static_cast<int64_t>(d.value) : 0;  // select() truncated it, it fits
  l.in_place = a.out.data == a.self.data;
  l.rank = d.self_shape.rank;
  l.dim = static_cast<int>(d.dim);
  l.n = shape_numel(d.index_shape);
  l.self_numel = shape_numel(d.self_shape);
  copy_dims(d.index_shape, l.idx_shape);
  copy_dims(a.index.strides, l.idx_stride);
  if (!d.use_value) copy_dims(a.src.strides, l.src_stride);
  copy_dims(d.self_shape, l.self_shape);
  copy_dims(a.self.strides, l.self_stride);
  copy_dims(a.out.strides, l.out_stride);
  l.self = a.self.data;
  l.index = a.index.data;
  l.src = d.use_value ? nullptr : a.src.data;
  l.out = a.out.data;
  l.workspace = aligned_workspace(ws);
  l.atomic = atomic;
  if (!atomic) {
    l.ws = cuda::scatter_workspace(l.n, l.self_numel, dtype_size(d.dtype), d.index_shape[d.dim], d.self_shape[d.dim]);
    l.rows = index_is_rows(d, a.index);
  }
  l.stream = stream;
  return l;
}

}  // namespace
}  // namespace indexing::detail

using namespace indexing::detail;

// ---- GatherPlan ------------------------------------------------------------------------
Result<GatherPlan> GatherPlan::select(const Stream& stream, const GatherDescriptor& desc, const PlanPreference& pref) {
  GatherPlan plan;
  const DType t = desc.dtype;
  // A copy: every real dtype of 1, 2, 4 or 8 bytes the library's integer / float set has.
  if (!(is_float(t) || t == DType::I32 || t == DType::I64 || t == DType::Bool || t == DType::I8 || t == DType::U8 ||
        t == DType::I16))
    return unsupported(kGather, "dtype ", t, " is not supported (f32, f64, f16, bf16, i32, i64, i16, i8, u8, bool)");
  BARACUDA_RETURN_IF_ERROR(check_index_dtype(kGather, desc.index_dtype));
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(check_dims(kGather, "x_shape", desc.x_shape, desc.index_shape, desc.dim, &plan.desc_.dim));
  auto be = baracuda::detail::setup_plan(plan, kGather, kFamily, stream, pref, t, "indexing.gather");
  if (!be) return be.status();
  const int64_t n = shape_numel(desc.index_shape);
  if (n == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (n > kCudaIndexLimit)
    return unsupported(kGather, "the CUDA gather needs fewer than 2^31 index elements (got ", n, ")");
  baracuda::detail::PlanAccess::sku(plan).variant = "elementwise";
  baracuda::detail::PlanAccess::set_workspace(plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes);
  return plan;
}

Status GatherPlan::can_implement(const GatherArgs& a) const { return gather_args(*this, a).status(); }

Result<KernelSku> GatherPlan::sku_for(const Stream& stream, Workspace ws, const GatherArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, gather_args(*this, a));
}

Status GatherPlan::run(const Stream& stream, Workspace ws, const GatherArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, gather_args(*this, a), [&] { return indexing::ref::gather(kGather, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        return indexing::cuda::launch_gather(gather_launch(desc_, a, ws.ptr, stream.native_handle()));
#else
        return baracuda::detail::no_cuda(kGather);
#endif
      });
}

Status GatherPlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_indices_of(*this, desc_.index_shape, desc_.x_shape.rank ? desc_.x_shape[desc_.dim] : 0, desc_.dim,
                          stream, ws);
}

// ---- ScatterPlan -----------------------------------------------------------------------
Result<ScatterPlan> ScatterPlan::select(const Stream& stream, const ScatterDescriptor& desc,
                                        const PlanPreference& pref) {
  ScatterPlan plan;
  const DType t = desc.dtype;
  if (!is_float(t) && !is_scatter_int(t))
    return unsupported(kScatter, "dtype ", t, " is not supported (f32, f64, f16, bf16, i8, u8, i16, i32, i64)");
  BARACUDA_RETURN_IF_ERROR(check_index_dtype(kScatter, desc.index_dtype));
  if (static_cast<int>(desc.reduce) > static_cast<int>(ScatterReduce::Amin))
    return invalid(kScatter, "reduce ", static_cast<int>(desc.reduce),
                   " is not a ScatterReduce (none, sum, prod, mean, amax, amin)");
  plan.desc_ = desc;
  BARACUDA_RETURN_IF_ERROR(
      check_dims(kScatter, "self_shape", desc.self_shape, desc.index_shape, desc.dim, &plan.desc_.dim));
  if (desc.use_value) {
    plan.desc_.src_shape = Dims{};
    if (is_scatter_int(t)) {  // truncated toward zero (torch's scatter(value) on an integer tensor); must fit
      double lo = 0, hi = 0;
      int_range(t, &lo, &hi);
      const double v = std::trunc(desc.value);
      if (!(std::isfinite(desc.value) && v >= lo && (t == DType::I64 ? v < hi : v <= hi)))
        return invalid(kScatter, "value ", desc.value, " does not fit dtype ", t, " (truncated toward zero, it must lie in [",
                       lo, ", ", hi, t == DType::I64 ? "))" : "])");
      plan.desc_.value = v;
    } else {
      plan.desc_.value = rounded(t, desc.value);
    }
  } else {
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kScatter, "src_shape", desc.src_shape));
    if (desc.src_shape.rank != desc.index_shape.rank)
      return invalid(kScatter, "src_shape ", desc.src_shape, " has rank ", desc.src_shape.rank, ", index_shape ",
                     desc.index_shape, " has rank ", desc.index_shape.rank, " (they must match)");
    for (int d = 0; d < desc.index_shape.rank; ++d)
      if (desc.index_shape[d] > desc.src_shape[d])
        return invalid(kScatter, "index_shape ", desc.index_shape, " is larger than src_shape ", desc.src_shape,
                       " along dim ", d, " (", desc.index_shape[d], " > ", desc.src_shape[d], ")");
    plan.desc_.value = 0.0;
  }
  if (desc.reduce == ScatterReduce::None) plan.desc_.include_self = true;  // plain scatter always starts from self
  auto be = baracuda::detail::setup_plan(plan, kScatter, kFamily, stream, pref, t,
                                         std::string("indexing.scatter_") + scatter_reduce_name(desc.reduce));
  if (!be) return be.status();
  const int64_t n = shape_numel(desc.index_shape), m = shape_numel(desc.self_shape);
  if (m == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (n > kCudaIndexLimit)
    return unsupported(kScatter, "the CUDA scatter needs fewer than 2^31 index elements (got ", n, ")");
  // Opt-in (require_deterministic = false), reduce Sum only: floating-point
  // atomics in the dtype, PyTorch's own route; the precision guarantee says
  // it is not deterministic.
  // Integers, reduce Sum / Amax / Amin with I32 / I64: integer atomics (wrapping
  // add, max, min) give the same bits in any order, so this route is
  // deterministic and taken whatever require_deterministic says.
  const bool int_atomic = (t == DType::I32 || t == DType::I64) &&
                          (desc.reduce == ScatterReduce::Sum || desc.reduce == ScatterReduce::Amax ||
                           desc.reduce == ScatterReduce::Amin);
  if (int_atomic) {
    baracuda::detail::PlanAccess::sku(plan).variant = "atomic";
    baracuda::detail::PlanAccess::set_workspace(plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes);
    return plan;
  }
  if (!pref.require_deterministic && desc.reduce == ScatterReduce::Sum && is_float(t)) {
    auto& sku = baracuda::detail::PlanAccess::sku(plan);
    sku.variant = "atomic";
    sku.precision.deterministic = false;
    sku.precision.bit_stable_on_same_hardware = false;
    sku.precision.accumulator = t;
    baracuda::detail::PlanAccess::set_workspace(plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes);
    return plan;
  }
  baracuda::detail::PlanAccess::sku(plan).variant = "sorted";
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(stream.device().ordinal);  // CUB's size queries read the current device
  BARACUDA_RETURN_IF_ERROR(guard.status());
  baracuda::detail::PlanAccess::set_workspace(
      plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes + indexing::cuda::scatter_workspace(n, m, dtype_size(desc.dtype), desc.index_shape[plan.desc_.dim],
                                                   desc.self_shape[plan.desc_.dim]).total);
#endif
  return plan;
}

Status ScatterPlan::can_implement(const ScatterArgs& a) const { return scatter_args(*this, a).status(); }

Result<KernelSku> ScatterPlan::sku_for(const Stream& stream, Workspace ws, const ScatterArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, scatter_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    if (s.variant == "sorted" && index_is_rows(desc_, a.index)) s.variant = "sorted.rows";
    return s;
  });
}

Status ScatterPlan::run(const Stream& stream, Workspace ws, const ScatterArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, scatter_args(*this, a), [&] { return indexing::ref::scatter(kScatter, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        return indexing::cuda::launch_scatter(
            scatter_launch(desc_, a, ws.ptr, stream.native_handle(), sku().variant == "atomic"));
#else
        return baracuda::detail::no_cuda(kScatter);
#endif
      });
}

Status ScatterPlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_indices_of(*this, desc_.index_shape, desc_.self_shape.rank ? desc_.self_shape[desc_.dim] : 0,
                          desc_.dim, stream, ws);
}

}  // namespace baracuda
