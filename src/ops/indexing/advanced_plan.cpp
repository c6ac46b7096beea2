// IndexGetPlan / IndexPutPlan: the shape rules of the indexing expression
// (advanced_index_shapes: B and R), the argument lists, the map of the actual
// views over R (shared by the CPU reference and the kernels) and dispatch;
// check_indices reads the kernels' error word.
#include <cstdint>
#include <string>

#include "baracuda/ops/indexing_advanced.hpp"
#include "core/capture.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/indexing/advanced_launch.hpp"
#include "ops/indexing/advanced_reference.hpp"
#include "ops/indexing/index_check.hpp"
#include "ops/indexing/launch.hpp"

namespace baracuda {

namespace indexing::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Indexing", "indexing", BARACUDA_KERNELS_INDEXING};
constexpr const char* kGet = "IndexGetPlan";
constexpr const char* kPut = "IndexPutPlan";
// The CUDA kernels count positions and destinations in 32 bits (the sort's
// keys and positions; numel(self) is the skip key).
constexpr int64_t kCudaLimit = (int64_t{1} << 31) - 1;
// ArgCheck keeps the names: one literal per dim.
constexpr const char* kIndexNames[kMaxRank] = {"indices[0]", "indices[1]", "indices[2]", "indices[3]",
                                               "indices[4]", "indices[5]", "indices[6]", "indices[7]"};

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

// Right-aligned broadcast of `s` into *acc (torch's rule); false (and *acc
// unchanged) when the extents disagree (neither equal nor 1).
bool broadcast_into(Dims* acc, const Dims& s) {
  Dims r = *acc;
  if (s.rank > r.rank) {
    r = Dims::of_rank(s.rank, 1);
    for (int k = 0; k < acc->rank; ++k) r[s.rank - acc->rank + k] = (*acc)[k];
  }
  for (int k = 0; k < s.rank; ++k) {
    int64_t& a = r[r.rank - s.rank + k];
    const int64_t e = s[k];
    if (e == a || e == 1) continue;
    if (a != 1) return false;
    a = e;
  }
  *acc = r;
  return true;
}

// The first and last indexed dims; *adjacent when every dim between is indexed.
void indexed_range(const AdvancedIndex& ix, int* first, int* last, bool* adjacent) {
  *first = -1, *last = -1;
  for (int d = 0; d < ix.self_shape.rank; ++d)
    if (ix.has_index[d]) {
      if (*first < 0) *first = d;
      *last = d;
    }
  *adjacent = true;
  for (int d = *first; d >= 0 && d <= *last; ++d) *adjacent = *adjacent && ix.has_index[d];
}

bool accumulate_ok(DType t) {
  return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16 || t == DType::I32 ||
         t == DType::I64;
}

// The map of R over the actual views: index tensor strides with broadcasting.
cuda::AdvancedMap make_map(const AdvancedIndex& ix, const Dims& B, const Dims& R, const TensorRef* indices) {
  cuda::AdvancedMap m;
  int first = 0, last = 0;
  bool adjacent = true;
  indexed_range(ix, &first, &last, &adjacent);
  const int bpos = adjacent ? first : 0;
  m.rank = R.rank;
  for (int k = 0; k < R.rank; ++k) m.shape[k] = R[k];
  m.numel = shape_numel(R);
  // The sliced dims, in order, fill the R axes outside [bpos, bpos + B.rank).
  int k = 0;
  for (int d = 0; d < ix.self_shape.rank; ++d) {
    if (ix.has_index[d]) continue;
    if (k == bpos) k += B.rank;
    m.axis_dim[k++] = d;
  }
  for (int b = 0; b < B.rank; ++b) m.axis_dim[bpos + b] = -1;
  for (int d = 0; d < ix.self_shape.rank; ++d) {
    if (!ix.has_index[d]) continue;
    const int j = m.n_idx++;
    m.dims[j] = d;
    m.size[j] = ix.self_shape[d];
    const Dims& s = ix.index_shape[d];
    for (int a = 0; a < s.rank; ++a)
      if (s[a] != 1) m.idx_stride[j][bpos + B.rank - s.rank + a] = indices ? indices[d].strides[a] : 0;
    m.idx[j] = indices ? indices[d].data : nullptr;
  }
  m.self_rank = ix.self_shape.rank;
  m.self_numel = shape_numel(ix.self_shape);
  const Dims rm = contiguous_strides(ix.self_shape);
  for (int d = 0; d < ix.self_shape.rank; ++d) {
    m.self_shape[d] = ix.self_shape[d];
    m.self_rm_stride[d] = rm[d];
  }
  return m;
}

// The messages of a missing / unexpected index tensor, per dim (ArgCheck keeps views of them).
struct IndexMessages {
  std::string missing[kMaxRank], unused[kMaxRank];
  IndexMessages() {
    for (int d = 0; d < kMaxRank; ++d) {
      const std::string n = std::to_string(d);
      missing[d] = "indices[" + n + "] is missing (dim " + n + " is indexed: descriptor.index.has_index[" + n + "])";
      unused[d] = "indices[" + n + "] is given but dim " + n + " is not indexed (a full slice; has_index[" + n +
                  "] is false)";
    }
  }
};

template <class Args>
void fill_indices(baracuda::detail::ArgCheck& c, const AdvancedIndex& ix, const Args& a) {
  static const IndexMessages msg;
  for (int d = 0; d < kMaxRank; ++d) {
    const bool used = d < ix.self_shape.rank && ix.has_index[d];
    c.optional_input(kIndexNames[d], a.indices[d], used, ix.index_dtype, used ? ix.index_shape[d] : Dims{},
                     msg.missing[d], msg.unused[d]);
  }
}

baracuda::detail::ArgCheck get_args(const IndexGetPlan& p, const IndexGetArgs& a) {
  const IndexGetDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("x", a.x, d.dtype, d.index.self_shape);
  fill_indices(c, d.index, a);
  c.output("out", a.out, d.dtype, p.out_shape());
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck put_args(const IndexPutPlan& p, const IndexPutArgs& a) {
  const IndexPutDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("self", a.self, d.dtype, d.index.self_shape);
  fill_indices(c, d.index, a);
  c.input("values", a.values, d.dtype, d.values_shape)
      .output("out", a.out, d.dtype, p.out_shape())
      .allow_in_place("out", "self");
  return std::move(c.disjoint("out may be self itself, the same view, for an in-place index_put_"));
}

cuda::AdvancedLaunch get_launch(const IndexGetPlan& p, const IndexGetArgs& a) {
  const IndexGetDescriptor& d = p.descriptor();
  cuda::AdvancedLaunch l;
  l.dtype = d.dtype;
  l.index_dtype = d.index.index_dtype;
  l.elem_bytes = static_cast<int>(dtype_size(d.dtype));
  l.m = make_map(d.index, p.broadcast_shape(), p.out_shape(), a.indices);
  for (int k = 0; k < d.index.self_shape.rank; ++k) l.x_stride[k] = a.x.strides[k];
  for (int k = 0; k < l.m.rank; ++k) l.out_stride[k] = a.out.strides[k];
  l.x = a.x.data;
  l.out = a.out.data;
  return l;
}

cuda::AdvancedLaunch put_launch(const IndexPutPlan& p, const IndexPutArgs& a) {
  const IndexPutDescriptor& d = p.descriptor();
  cuda::AdvancedLaunch l;
  l.dtype = d.dtype;
  l.index_dtype = d.index.index_dtype;
  l.elem_bytes = static_cast<int>(dtype_size(d.dtype));
  l.m = make_map(d.index, p.broadcast_shape(), p.result_shape(), a.indices);
  for (int k = 0; k < d.index.self_shape.rank; ++k) l.x_stride[k] = a.self.strides[k], l.out_stride[k] = a.out.strides[k];
  const Dims& vs = d.values_shape;
  for (int k = 0; k < vs.rank; ++k)
    if (vs[k] != 1) l.val_stride[l.m.rank - vs.rank + k] = a.values.strides[k];
  l.x = a.self.data;
  l.values = a.values.data;
  l.out = a.out.data;
  l.accumulate = d.accumulate;
  l.in_place = a.out.data == a.self.data;
  return l;
}

Status check_indices_of(const PlanBase& plan, const Dims& R, const Stream& stream, Workspace ws) {
  int64_t bad = -1;
  BARACUDA_RETURN_IF_ERROR(read_bad_position(plan, stream, ws, &bad));
  if (bad < 0) return Status::ok();
  const bool get = std::string(plan.name()) == kGet;
  return invalid(plan.name(), "index position ", unravel(R, bad), " (position ", bad,
                 " of the result shape ", R, ") holds an index outside [-size, size) of its dim (the first bad index, "
                 "found on the GPU: ",
                 get ? "its output element was written as zero)" : "its contribution was skipped)");
}

Status select_common(const char* plan, const AdvancedIndex& ix, Dims* B, Dims* R) {
  if (ix.index_dtype != DType::I32 && ix.index_dtype != DType::I64)
    return unsupported(plan, "index_dtype ", ix.index_dtype,
                       " is not supported (i32, i64; a boolean mask: convert it with NonzeroPlan)");
  return advanced_index_shapes(plan, ix, B, R);
}

}  // namespace
}  // namespace indexing::detail

using namespace indexing::detail;

Status advanced_index_shapes(const char* plan, const AdvancedIndex& ix, Dims* broadcast, Dims* result) {
  const Dims& s = ix.self_shape;
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "self_shape", s));
  if (s.rank < 1) return invalid(plan, "self_shape ", s, " has rank 0 (at least 1: an index names a dim)");
  Dims B;
  bool any = false;
  for (int d = 0; d < s.rank; ++d) {
    if (!ix.has_index[d]) continue;
    any = true;
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "an index_shape", ix.index_shape[d]));
    if (!broadcast_into(&B, ix.index_shape[d]))
      return invalid(plan, "index_shape[", d, "] ", ix.index_shape[d], " does not broadcast with the other index shapes (",
                     B, " so far; extents must be equal or 1)");
  }
  for (int d = s.rank; d < kMaxRank; ++d)
    if (ix.has_index[d]) return invalid(plan, "has_index[", d, "] is set past self_shape's rank ", s.rank);
  if (!any) return invalid(plan, "no dim is indexed (has_index is all false; a plain slice is a view, not a plan)");
  int first = 0, last = 0;
  bool adjacent = true;
  indexed_range(ix, &first, &last, &adjacent);
  int sliced = 0;
  for (int d = 0; d < s.rank; ++d) sliced += ix.has_index[d] ? 0 : 1;
  if (B.rank + sliced > kMaxRank)
    return invalid(plan, "the result has rank ", B.rank + sliced, " (broadcast index rank ", B.rank, " + ", sliced,
                   " sliced dims), more than ", kMaxRank);
  Dims R = Dims::of_rank(B.rank + sliced);
  const int bpos = adjacent ? first : 0;
  int k = 0;
  for (int d = 0; d < s.rank; ++d) {
    if (ix.has_index[d]) continue;
    if (k == bpos) k += B.rank;
    R[k++] = s[d];
  }
  for (int b = 0; b < B.rank; ++b) R[bpos + b] = B[b];
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "the result shape", R));
  *broadcast = B;
  *result = R;
  return Status::ok();
}

// ---- IndexGetPlan -----------------------------------------------------------------------
Result<IndexGetPlan> IndexGetPlan::select(const Stream& stream, const IndexGetDescriptor& desc,
                                          const PlanPreference& pref) {
  IndexGetPlan plan;
  if (dtype_size(desc.dtype) == 0) return unsupported(kGet, "dtype ", desc.dtype, " is not a dtype");
  BARACUDA_RETURN_IF_ERROR(select_common(kGet, desc.index, &plan.broadcast_, &plan.result_));
  plan.desc_ = desc;
  for (int d = 0; d < kMaxRank; ++d)
    if (d >= desc.index.self_shape.rank || !desc.index.has_index[d]) plan.desc_.index.index_shape[d] = Dims{};
  auto be = baracuda::detail::setup_plan(plan, kGet, kFamily, stream, pref, desc.dtype, "indexing.index");
  if (!be) return be.status();
  const int64_t n = shape_numel(plan.result_);
  if (n == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (n > kCudaLimit)
    return unsupported(kGet, "the CUDA index needs fewer than 2^31 result elements (got ", n, ")");
  baracuda::detail::PlanAccess::sku(plan).variant = "elementwise";
  baracuda::detail::PlanAccess::set_workspace(plan, error_word_workspace());
  return plan;
}

Status IndexGetPlan::can_implement(const IndexGetArgs& a) const { return get_args(*this, a).status(); }

Result<KernelSku> IndexGetPlan::sku_for(const Stream& stream, Workspace ws, const IndexGetArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, get_args(*this, a));
}

Status IndexGetPlan::run(const Stream& stream, Workspace ws, const IndexGetArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, get_args(*this, a),
      [&] { return indexing::ref::index_get(kGet, get_launch(*this, a)); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::AdvancedLaunch l = get_launch(*this, a);
        l.workspace = aligned_workspace(ws.ptr);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_index_get(l);
#else
        return baracuda::detail::no_cuda(kGet);
#endif
      });
}

Status IndexGetPlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_indices_of(*this, result_, stream, ws);
}

// ---- IndexPutPlan -----------------------------------------------------------------------
Result<IndexPutPlan> IndexPutPlan::select(const Stream& stream, const IndexPutDescriptor& desc,
                                          const PlanPreference& pref) {
  IndexPutPlan plan;
  const DType t = desc.dtype;
  if (dtype_size(t) == 0) return unsupported(kPut, "dtype ", t, " is not a dtype");
  if (desc.accumulate && !accumulate_ok(t))
    return unsupported(kPut, "dtype ", t, " cannot accumulate (f32, f64, f16, bf16, i32, i64; without accumulate every dtype)");
  BARACUDA_RETURN_IF_ERROR(select_common(kPut, desc.index, &plan.broadcast_, &plan.result_));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(kPut, "values_shape", desc.values_shape));
  Dims probe = plan.result_;
  if (desc.values_shape.rank > plan.result_.rank || !broadcast_into(&probe, desc.values_shape) ||
      !(probe == plan.result_))
    return invalid(kPut, "values_shape ", desc.values_shape, " does not broadcast to the result shape ", plan.result_);
  plan.desc_ = desc;
  for (int d = 0; d < kMaxRank; ++d)
    if (d >= desc.index.self_shape.rank || !desc.index.has_index[d]) plan.desc_.index.index_shape[d] = Dims{};
  auto be = baracuda::detail::setup_plan(plan, kPut, kFamily, stream, pref, t,
                                         desc.accumulate ? "indexing.index_put_accumulate" : "indexing.index_put");
  if (!be) return be.status();
  const int64_t n = shape_numel(plan.result_), m = shape_numel(desc.index.self_shape);
  if (m == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  if (be->backend == Backend::CpuReference) return plan;
  if (n > kCudaLimit || m >= kCudaLimit)
    return unsupported(kPut, "the CUDA index_put needs fewer than 2^31 result positions and 2^31 - 1 self elements (got ",
                       n, " and ", m, ")");
  baracuda::detail::PlanAccess::sku(plan).variant = "sorted";
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(stream.device().ordinal);  // CUB's size queries read the current device
  BARACUDA_RETURN_IF_ERROR(guard.status());
  baracuda::detail::PlanAccess::set_workspace(plan, error_word_workspace() + indexing::cuda::put_workspace(n, m).total);
#endif
  return plan;
}

Status IndexPutPlan::can_implement(const IndexPutArgs& a) const { return put_args(*this, a).status(); }

Result<KernelSku> IndexPutPlan::sku_for(const Stream& stream, Workspace ws, const IndexPutArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, put_args(*this, a));
}

Status IndexPutPlan::run(const Stream& stream, Workspace ws, const IndexPutArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, put_args(*this, a), [&] { return indexing::ref::index_put(kPut, put_launch(*this, a)); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::AdvancedLaunch l = put_launch(*this, a);
        l.workspace = aligned_workspace(ws.ptr);
        l.ws = indexing::cuda::put_workspace(l.m.numel, l.m.self_numel);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_index_put(l);
#else
        return baracuda::detail::no_cuda(kPut);
#endif
      });
}

Status IndexPutPlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_indices_of(*this, result_, stream, ws);
}

}  // namespace baracuda
