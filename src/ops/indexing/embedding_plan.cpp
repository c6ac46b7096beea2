// EmbeddingPlan / EmbeddingBackwardPlan: descriptor rules, argument lists,
// the CUDA launch of the actual views (row maps, vector path) and dispatch to
// the CPU reference or the kernels; check_indices reads the kernels' error word.
#include <cstdint>
#include <string>

#include "baracuda/ops/indexing.hpp"
#include "core/align.hpp"
#include "core/capture.hpp"
#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/layout.hpp"
#include "core/plan_shell.hpp"
#include "ops/indexing/index_check.hpp"
#include "ops/indexing/launch.hpp"
#include "ops/indexing/reference.hpp"

namespace baracuda {

const char* embedding_grad_layout_name(EmbeddingGradLayout l) {
  switch (l) {
    case EmbeddingGradLayout::Dense: return "dense";
    case EmbeddingGradLayout::Compact: return "compact";
  }
  return "unknown";
}

namespace indexing::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"Indexing", "indexing", BARACUDA_KERNELS_INDEXING};
constexpr const char* kFwd = "EmbeddingPlan";
constexpr const char* kBwd = "EmbeddingBackwardPlan";
// The CUDA backward sorts 32-bit keys (the row, V for a skipped index) and
// 32-bit positions.
constexpr int64_t kCudaBackwardLimit = (int64_t{1} << 31) - 1;

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

bool is_float(DType t) { return t == DType::F32 || t == DType::F64 || t == DType::F16 || t == DType::BF16; }

Dims with_dim(Dims s, int64_t d) {
  s.push_back(d);
  return s;
}

// The forward descriptor's rules (also the backward's), padding_idx resolved.
Status validate(const char* plan, const EmbeddingDescriptor& in, EmbeddingDescriptor* out) {
  if (!is_float(in.dtype)) return unsupported(plan, "dtype ", in.dtype, " is not supported (f32, f64, f16, bf16)");
  if (!(in.index_dtype == DType::I32 || in.index_dtype == DType::I64))
    return unsupported(plan, "index_dtype ", in.index_dtype, " is not supported (i32, i64)");
  if (in.num_embeddings < 0) return invalid(plan, "num_embeddings ", in.num_embeddings, " must be >= 0");
  if (in.embedding_dim < 0) return invalid(plan, "embedding_dim ", in.embedding_dim, " must be >= 0");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, "index_shape", in.index_shape));
  if (in.index_shape.rank > kMaxRank - 1)
    return invalid(plan, "index_shape ", in.index_shape, " has rank ", in.index_shape.rank, " (at most ", kMaxRank - 1,
                   ": the output adds the embedding axis)");
  BARACUDA_RETURN_IF_ERROR(
      baracuda::detail::check_size(plan, "weight", {in.num_embeddings, in.embedding_dim}));
  BARACUDA_RETURN_IF_ERROR(
      baracuda::detail::check_size(plan, "out", {shape_numel(in.index_shape), in.embedding_dim}));
  *out = in;
  if (in.has_padding_idx) {
    if (in.padding_idx < -in.num_embeddings || in.padding_idx >= in.num_embeddings)
      return invalid(plan, "padding_idx ", in.padding_idx, " is outside [", -in.num_embeddings, ", ",
                     in.num_embeddings, ") (num_embeddings ", in.num_embeddings, ")");
    if (in.padding_idx < 0) out->padding_idx = in.padding_idx + in.num_embeddings;
  } else {
    out->padding_idx = 0;
  }
  return Status::ok();
}

// ---- the row map of the actual views -------------------------------------------------
cuda::RowMap make_map(const Dims& shape, const Dims& idx_strides, const Dims& row_strides) {
  cuda::RowMap m;
  const int r = shape.rank;
  for (int i = 0; i < r; ++i) {
    m.shape[i] = shape[i];
    m.idx_stride[i] = idx_strides[i];
    m.row_stride[i] = row_strides[i];
  }
  int64_t* strides[2] = {m.idx_stride, m.row_stride};
  m.rank = shape_numel(shape) == 0 ? 0 : baracuda::detail::coalesce_dims(r, m.shape, 2, strides);
  return m;
}

// Rows of a view whose row strides (of the index axes, and `extra` for the
// table / gradient row stride) keep 16-byte alignment.
bool rows_aligned(const cuda::RowMap& m, const int64_t* row_or_null, int64_t extra, size_t esize) {
  for (int i = 0; i < m.rank; ++i)
    if (row_or_null && (row_or_null[i] * static_cast<int64_t>(esize)) % 16 != 0) return false;
  return (extra * static_cast<int64_t>(esize)) % 16 == 0;
}

Dims contiguous_row_strides(const Dims& shape, int64_t D) {
  Dims s = contiguous_strides(with_dim(shape, D));
  s.rank = shape.rank;
  return s;
}

// Forward launch of these views (t == nullptr: contiguous, aligned views: select()'s choice).
cuda::ForwardLaunch forward_launch(const EmbeddingDescriptor& d, const EmbeddingArgs* t) {
  cuda::ForwardLaunch l;
  l.dtype = d.dtype;
  l.index_dtype = d.index_dtype;
  l.V = d.num_embeddings;
  l.D = d.embedding_dim;
  l.n = shape_numel(d.index_shape);
  static const char aligned[16] alignas(16) = {};
  const int r = d.index_shape.rank;
  if (t) {
    l.map = make_map(d.index_shape, t->indices.strides, t->out.strides);
    l.out_col_stride = t->out.strides[r];
    l.w_row_stride = t->weight.strides[0];
    l.w_col_stride = t->weight.strides[1];
    l.weight = t->weight.data;
    l.indices = t->indices.data;
    l.out = t->out.data;
  } else {
    l.map = make_map(d.index_shape, contiguous_strides(d.index_shape), contiguous_row_strides(d.index_shape, l.D));
    l.w_row_stride = l.D;
    l.weight = l.out = const_cast<char*>(aligned);
  }
  const size_t es = dtype_size(d.dtype);
  l.vec = (l.D <= 1 || (l.out_col_stride == 1 && l.w_col_stride == 1)) && baracuda::detail::is_aligned16(l.weight) &&
          baracuda::detail::is_aligned16(l.out) && rows_aligned(l.map, l.map.row_stride, l.w_row_stride, es) &&
          (l.V <= 1 || (l.w_row_stride * static_cast<int64_t>(es)) % 16 == 0);
  return l;
}

cuda::BackwardLaunch backward_launch(const EmbeddingBackwardDescriptor& bd, const EmbeddingBackwardArgs* t) {
  const EmbeddingDescriptor& d = bd.forward;
  cuda::BackwardLaunch l;
  l.dtype = d.dtype;
  l.grad_dtype = bd.grad_dtype;
  l.index_dtype = d.index_dtype;
  l.V = d.num_embeddings;
  l.D = d.embedding_dim;
  l.n = shape_numel(d.index_shape);
  l.padding_idx = d.has_padding_idx ? d.padding_idx : -1;
  l.compact = bd.layout == EmbeddingGradLayout::Compact;
  static const char aligned[16] alignas(16) = {};
  const int r = d.index_shape.rank;
  if (t) {
    const TensorMut& g = l.compact ? t->dweight_compact : t->dweight;
    l.map = make_map(d.index_shape, t->indices.strides, t->dout.strides);
    l.dout_col_stride = t->dout.strides[r];
    l.indices = t->indices.data;
    l.dout = t->dout.data;
    l.grad = g.data;
    l.g_row_stride = g.strides[0];
    l.g_col_stride = g.strides[1];
    if (l.compact) {
      l.unique_rows = t->unique_rows.data;
      l.unique_stride = t->unique_rows.strides[0];
      l.count = t->count.data;
    }
  } else {
    l.map = make_map(d.index_shape, contiguous_strides(d.index_shape), contiguous_row_strides(d.index_shape, l.D));
    l.g_row_stride = l.D;
    l.dout = l.grad = const_cast<char*>(aligned);
  }
  const int64_t g_rows = l.compact ? l.n : l.V;
  l.vec = (l.D <= 1 || (l.dout_col_stride == 1 && l.g_col_stride == 1)) && baracuda::detail::is_aligned16(l.dout) &&
          baracuda::detail::is_aligned16(l.grad) && rows_aligned(l.map, l.map.row_stride, 0, dtype_size(l.dtype)) &&
          (g_rows <= 1 || (l.g_row_stride * static_cast<int64_t>(dtype_size(l.grad_dtype))) % 16 == 0);
  return l;
}

std::string forward_variant(const cuda::ForwardLaunch& l) { return l.vec ? "warp.vec16" : "warp"; }
std::string backward_variant(const cuda::BackwardLaunch& l) { return l.vec ? "sorted.vec16" : "sorted"; }

// ---- argument lists ------------------------------------------------------------------
baracuda::detail::ArgCheck forward_args(const EmbeddingPlan& p, const EmbeddingArgs& a) {
  const EmbeddingDescriptor& d = p.descriptor();
  baracuda::detail::ArgCheck c(p);
  c.input("weight", a.weight, d.dtype, Dims{d.num_embeddings, d.embedding_dim})
      .input("indices", a.indices, d.index_dtype, d.index_shape)
      .output("out", a.out, d.dtype, p.out_shape());
  return std::move(c.disjoint());
}

baracuda::detail::ArgCheck backward_args(const EmbeddingBackwardPlan& p, const EmbeddingBackwardArgs& a) {
  const EmbeddingBackwardDescriptor& bd = p.descriptor();
  const EmbeddingDescriptor& d = bd.forward;
  const bool compact = bd.layout == EmbeddingGradLayout::Compact;
  const int64_t n = shape_numel(d.index_shape);
  baracuda::detail::ArgCheck c(p);
  c.input("indices", a.indices, d.index_dtype, d.index_shape)
      .input("dout", a.dout, d.dtype, p.dout_shape())
      .optional_output("dweight", a.dweight, !compact, bd.grad_dtype, Dims{d.num_embeddings, d.embedding_dim},
                       "dweight is given but layout is compact (the gradient goes to unique_rows / dweight_compact / count)")
      .optional_output("unique_rows", a.unique_rows, compact, d.index_dtype, Dims{n},
                       "unique_rows is given but layout is dense (the gradient goes to dweight)")
      .optional_output("dweight_compact", a.dweight_compact, compact, bd.grad_dtype, Dims{n, d.embedding_dim},
                       "dweight_compact is given but layout is dense (the gradient goes to dweight)")
      .optional_output("count", a.count, compact, DType::I64, Dims{},
                       "count is given but layout is dense (the gradient goes to dweight)");
  return std::move(c.disjoint());
}

// ---- check_indices -------------------------------------------------------------------
Status check_indices_of(const PlanBase& plan, const Dims& index_shape, int64_t V, const Stream& stream, Workspace ws) {
  int64_t bad = -1;
  BARACUDA_RETURN_IF_ERROR(read_bad_position(plan, stream, ws, &bad));
  if (bad < 0) return Status::ok();
  const Dims coords = unravel(index_shape, bad);
  const bool fwd = std::string(plan.name()) == kFwd;
  return invalid(plan.name(), "indices element ", coords, " (position ", bad, ") is outside [0, ", V,
                 ") (num_embeddings; the first bad index, found on the GPU: ",
                 fwd ? "its output row was written as zeros)" : "its contribution was skipped)");
}

}  // namespace
}  // namespace indexing::detail

using namespace indexing::detail;

// ---- EmbeddingPlan -------------------------------------------------------------------
Dims EmbeddingPlan::out_shape() const { return with_dim(desc_.index_shape, desc_.embedding_dim); }

Result<EmbeddingPlan> EmbeddingPlan::select(const Stream& stream, const EmbeddingDescriptor& desc,
                                            const PlanPreference& pref) {
  EmbeddingPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate(kFwd, desc, &plan.desc_));
  auto be = baracuda::detail::setup_plan(plan, kFwd, kFamily, stream, pref, desc.dtype, "indexing.embedding");
  if (!be) return be.status();
  if (shape_numel(plan.out_shape()) == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
  } else if (be->backend != Backend::CpuReference) {
    baracuda::detail::PlanAccess::sku(plan).variant = forward_variant(forward_launch(plan.desc_, nullptr));
  }
  if (be->backend != Backend::CpuReference && plan.sku().variant != "empty")
    baracuda::detail::PlanAccess::set_workspace(plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes);
  return plan;
}

Status EmbeddingPlan::can_implement(const EmbeddingArgs& a) const { return forward_args(*this, a).status(); }

Result<KernelSku> EmbeddingPlan::sku_for(const Stream& stream, Workspace ws, const EmbeddingArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, forward_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = forward_variant(forward_launch(desc_, &a));
    return s;
  });
}

Status EmbeddingPlan::run(const Stream& stream, Workspace ws, const EmbeddingArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, forward_args(*this, a), [&] { return indexing::ref::embedding_forward(kFwd, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::ForwardLaunch l = forward_launch(desc_, &a);
        l.error_word = aligned_workspace(ws.ptr);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_forward(l);
#else
        return baracuda::detail::no_cuda(kFwd);
#endif
      });
}

Status EmbeddingPlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_indices_of(*this, desc_.index_shape, desc_.num_embeddings, stream, ws);
}

// ---- EmbeddingBackwardPlan -----------------------------------------------------------
Dims EmbeddingBackwardPlan::dout_shape() const {
  return with_dim(desc_.forward.index_shape, desc_.forward.embedding_dim);
}
Dims EmbeddingBackwardPlan::dweight_shape() const {
  const EmbeddingDescriptor& d = desc_.forward;
  return desc_.layout == EmbeddingGradLayout::Compact ? Dims{shape_numel(d.index_shape), d.embedding_dim}
                                                      : Dims{d.num_embeddings, d.embedding_dim};
}

Result<EmbeddingBackwardPlan> EmbeddingBackwardPlan::select(const Stream& stream,
                                                            const EmbeddingBackwardDescriptor& desc,
                                                            const PlanPreference& pref) {
  EmbeddingBackwardPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate(kBwd, desc.forward, &plan.desc_.forward));
  const DType t = desc.forward.dtype;
  if (!(desc.grad_dtype == t || (desc.grad_dtype == DType::F32 && (t == DType::F16 || t == DType::BF16))))
    return unsupported(kBwd, "grad_dtype ", desc.grad_dtype, " is not supported for a ", t,
                       " table (the table's dtype, or f32 for an f16 / bf16 table)");
  if (!(desc.layout == EmbeddingGradLayout::Dense || desc.layout == EmbeddingGradLayout::Compact))
    return invalid(kBwd, "layout ", desc.layout, " is not an EmbeddingGradLayout (dense, compact)");
  plan.desc_.grad_dtype = desc.grad_dtype;
  plan.desc_.layout = desc.layout;
  const bool compact = desc.layout == EmbeddingGradLayout::Compact;
  auto be = baracuda::detail::setup_plan(plan, kBwd, kFamily, stream, pref, t,
                                         compact ? "indexing.embedding_backward_compact" : "indexing.embedding_backward");
  if (!be) return be.status();
  if (be->backend == Backend::CpuReference) {
    if (shape_numel(plan.dweight_shape()) == 0 && !compact) baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  const int64_t n = shape_numel(desc.forward.index_shape);
  if (n > kCudaBackwardLimit || desc.forward.num_embeddings >= kCudaBackwardLimit)
    return unsupported(kBwd, "the CUDA backward needs fewer than 2^31 indices and num_embeddings below 2^31 - 1 (got ",
                       n, " indices, num_embeddings ", desc.forward.num_embeddings, ")");
  // An empty problem: dense with an empty dweight writes nothing; compact always writes count.
  if (!compact && shape_numel(plan.dweight_shape()) == 0) {
    baracuda::detail::PlanAccess::sku(plan).variant = "empty";
    return plan;
  }
  baracuda::detail::PlanAccess::sku(plan).variant = backward_variant(backward_launch(plan.desc_, nullptr));
#ifdef BARACUDA_WITH_CUDA
  baracuda::detail::DeviceGuard guard(stream.device().ordinal);  // CUB's size queries read the current device
  BARACUDA_RETURN_IF_ERROR(guard.status());
  baracuda::detail::PlanAccess::set_workspace(
      plan, kWorkspaceAlign + indexing::cuda::kErrorWordBytes +
                indexing::cuda::backward_workspace(n, desc.forward.num_embeddings, compact).total);
#endif
  return plan;
}

Status EmbeddingBackwardPlan::can_implement(const EmbeddingBackwardArgs& a) const {
  return backward_args(*this, a).status();
}

Result<KernelSku> EmbeddingBackwardPlan::sku_for(const Stream& stream, Workspace ws,
                                                 const EmbeddingBackwardArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, backward_args(*this, a), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = backward_variant(backward_launch(desc_, &a));
    return s;
  });
}

Status EmbeddingBackwardPlan::run(const Stream& stream, Workspace ws, const EmbeddingBackwardArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, backward_args(*this, a), [&] { return indexing::ref::embedding_backward(kBwd, desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        indexing::cuda::BackwardLaunch l = backward_launch(desc_, &a);
        l.workspace = aligned_workspace(ws.ptr);
        l.ws = indexing::cuda::backward_workspace(l.n, l.V, l.compact);
        l.stream = stream.native_handle();
        return indexing::cuda::launch_backward(l);
#else
        return baracuda::detail::no_cuda(kBwd);
#endif
      });
}

Status EmbeddingBackwardPlan::check_indices(const Stream& stream, Workspace ws) const {
  return check_indices_of(*this, desc_.forward.index_shape, desc_.forward.num_embeddings, stream, ws);
}

}  // namespace baracuda
