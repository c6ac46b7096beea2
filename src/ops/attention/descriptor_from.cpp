// SdpaDescriptor::from / FlashSdpaDescriptor::from: the problem's extents and
// dtype read from the views, so a caller does not restate B/H/S/D.
#include "baracuda/ops/attention.hpp"
#include "core/error.hpp"

namespace baracuda {

namespace {

using baracuda::detail::invalid;

// The view has rank `rank` (a valid one); `layout` names the axes.
Status expect_rank(const char* who, const char* name, const TensorRef& t, int rank, const char* layout) {
  if (!t.shape.rank_valid() || t.rank() != rank)
    return invalid(who, name, " has rank ", t.shape.rank, ", expected ", rank, " (", layout, ")");
  return Status::ok();
}

// Axis `ia` of `a` and axis `ib` of `b` (the same extent of the problem, `what`) agree.
Status same_extent(const char* who, const char* what, const char* na, const TensorRef& a, int ia, const char* nb,
                   const TensorRef& b, int ib) {
  if (a.shape[ia] != b.shape[ib])
    return invalid(who, na, " ", a.shape, " and ", nb, " ", b.shape, " disagree on ", what, " (", a.shape[ia], " vs ",
                   b.shape[ib], ")");
  return Status::ok();
}

Status same_dtype(const char* who, const TensorRef& q, const TensorRef& k, const TensorRef& v) {
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    return invalid(who, "q, k and v must have one dtype, got ", q.dtype, ", ", k.dtype, ", ", v.dtype);
  return Status::ok();
}

}  // namespace

Result<SdpaDescriptor> SdpaDescriptor::from(const TensorRef& q, const TensorRef& k, const TensorRef& v,
                                            const SdpaDescriptor& options) {
  constexpr const char* who = "SdpaDescriptor::from";
  BARACUDA_RETURN_IF_ERROR(expect_rank(who, "q", q, 4, "[B,H,Q,Dk]"));
  BARACUDA_RETURN_IF_ERROR(expect_rank(who, "k", k, 4, "[B,Hk,K,Dk]"));
  BARACUDA_RETURN_IF_ERROR(expect_rank(who, "v", v, 4, "[B,Hk,K,Dv]"));
  BARACUDA_RETURN_IF_ERROR(same_dtype(who, q, k, v));
  BARACUDA_RETURN_IF_ERROR(same_extent(who, "batch", "q", q, 0, "k", k, 0));
  BARACUDA_RETURN_IF_ERROR(same_extent(who, "batch", "k", k, 0, "v", v, 0));
  BARACUDA_RETURN_IF_ERROR(same_extent(who, "kv_heads", "k", k, 1, "v", v, 1));
  BARACUDA_RETURN_IF_ERROR(same_extent(who, "kv_len", "k", k, 2, "v", v, 2));
  BARACUDA_RETURN_IF_ERROR(same_extent(who, "head_dim", "q", q, 3, "k", k, 3));
  SdpaDescriptor d = options;
  d.dtype = q.dtype;
  d.batch = q.shape[0];
  d.heads = q.shape[1];
  d.q_len = q.shape[2];
  d.head_dim = q.shape[3];
  d.kv_heads = k.shape[1];
  d.kv_len = k.shape[2];
  d.head_dim_v = v.shape[3];
  return d;
}

Result<SdpaDescriptor> SdpaDescriptor::from(const TensorRef& q, const TensorRef& k, const TensorRef& v) {
  return from(q, k, v, SdpaDescriptor{});
}

Result<FlashSdpaDescriptor> FlashSdpaDescriptor::from(const TensorRef& q, const TensorRef& k, const TensorRef& v) {
  return from(q, k, v, FlashSdpaDescriptor{});
}

Result<FlashSdpaDescriptor> FlashSdpaDescriptor::from(const TensorRef& q, const TensorRef& k, const TensorRef& v,
                                                      const FlashSdpaDescriptor& options) {
  constexpr const char* who = "FlashSdpaDescriptor::from";
  FlashSdpaDescriptor d = options;
  const int rank = options.varlen ? 3 : 4;
  BARACUDA_RETURN_IF_ERROR(expect_rank(who, "q", q, rank, options.varlen ? "varlen [total_q,H,D]" : "[B,H,Q,D]"));
  BARACUDA_RETURN_IF_ERROR(expect_rank(who, "k", k, rank, options.varlen ? "varlen [total_kv,Hk,D]" : "[B,Hk,K,D]"));
  BARACUDA_RETURN_IF_ERROR(expect_rank(who, "v", v, rank, options.varlen ? "varlen [total_kv,Hk,D]" : "[B,Hk,K,D]"));
  BARACUDA_RETURN_IF_ERROR(same_dtype(who, q, k, v));
  if (!(k.shape == v.shape)) return invalid(who, "k ", k.shape, " and v ", v.shape, " must have one shape (Dk == Dv)");
  const int h = 1, dim = rank - 1;  // heads and head-dim axes: [B,H,S,D] and varlen [T,H,D]
  BARACUDA_RETURN_IF_ERROR(same_extent(who, "head_dim", "q", q, dim, "k", k, dim));
  d.dtype = q.dtype;
  d.heads = q.shape[h];
  d.kv_heads = k.shape[h];
  d.head_dim = q.shape[dim];
  if (options.varlen) {
    d.total_q = q.shape[0];
    d.total_kv = k.shape[0];
  } else {
    BARACUDA_RETURN_IF_ERROR(same_extent(who, "batch", "q", q, 0, "k", k, 0));
    d.batch = q.shape[0];
    d.q_len = q.shape[2];
    d.kv_len = k.shape[2];
  }
  return d;
}

}  // namespace baracuda
