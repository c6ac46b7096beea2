// RopePlan / RopeBackwardPlan: descriptor validation, backend choice, argument
// checks (shapes, dtypes, devices, buffers, aliasing) and dispatch to the CPU
// reference or the CUDA kernel. Forward and backward share everything but the
// tensor names and the sign of the angle.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/checked_math.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/rope/reference.hpp"
#include "ops/rope/launch.hpp"

namespace baracuda {

const char* rope_pairs_name(RopePairs p) {
  switch (p) {
    case RopePairs::Interleaved: return "interleaved";
    case RopePairs::HalfSplit: return "halfsplit";
  }
  return "?";
}
const char* rope_positions_name(RopePositions p) {
  switch (p) {
    case RopePositions::None: return "none";
    case RopePositions::PerSequence: return "per-sequence";
    case RopePositions::PerBatch: return "per-batch";
  }
  return "?";
}

Result<RopeDescriptor> RopeDescriptor::from(const TensorRef& q, const TensorRef& k, const RopeDescriptor& options) {
  constexpr const char* who = "RopeDescriptor::from";
  RopeDescriptor d = options;
  if (!q.shape.rank_valid() || q.rank() != 4)
    return baracuda::detail::invalid(who, "q has rank ", q.shape.rank, ", expected 4 ([B, H, S, D])");
  d.dtype = q.dtype;
  d.batch = q.shape[0];
  d.heads = q.shape[1];
  d.seq_len = q.shape[2];
  d.head_dim = q.shape[3];
  d.has_k = !(k.data == nullptr && k.shape.rank == 0);  // an empty view: rotate q only
  if (!d.has_k) {
    d.kv_heads = 1;
    return d;
  }
  if (!k.shape.rank_valid() || k.rank() != 4)
    return baracuda::detail::invalid(who, "k has rank ", k.shape.rank, ", expected 4 ([B, Hk, S, D])");
  if (k.dtype != q.dtype) return baracuda::detail::invalid(who, "q and k must have one dtype, got ", q.dtype, " and ", k.dtype);
  if (k.shape[0] != q.shape[0] || k.shape[2] != q.shape[2] || k.shape[3] != q.shape[3])
    return baracuda::detail::invalid(who, "q ", q.shape, " and k ", k.shape, " must agree on B, S and D");
  d.kv_heads = k.shape[1];
  return d;
}

Result<RopeDescriptor> RopeDescriptor::from(const TensorRef& q, const TensorRef& k) { return from(q, k, RopeDescriptor{}); }

namespace rope::detail {
namespace {

constexpr baracuda::detail::Family kFamily{"RoPE", "rope", BARACUDA_KERNELS_ROPE};

using baracuda::detail::invalid;

// ---- descriptor --------------------------------------------------------------
Status validate(const char* plan, const RopeDescriptor& in, RopeDescriptor* out) {
  if (!(in.dtype == DType::F32 || in.dtype == DType::F64 || in.dtype == DType::F16 || in.dtype == DType::BF16))
    return baracuda::detail::unsupported(plan, "dtype ", in.dtype, " is not supported (f32, f64, f16, bf16)");
  if (static_cast<int>(in.pairs) > static_cast<int>(RopePairs::HalfSplit))
    return invalid(plan, "unknown RopePairs ", in.pairs);
  if (static_cast<int>(in.positions) > static_cast<int>(RopePositions::PerBatch))
    return invalid(plan, "unknown RopePositions ", in.positions);
  const std::pair<const char*, int64_t> extents[] = {
      {"batch", in.batch}, {"heads", in.heads}, {"kv_heads", in.has_k ? in.kv_heads : 0},
      {"seq_len", in.seq_len}, {"head_dim", in.head_dim}};
  for (const auto& [name, v] : extents)
    if (v < 0) return invalid(plan, name, " ", v, " must be >= 0");
  if (in.rotary_dim < -1)
    return invalid(plan, "rotary_dim ", in.rotary_dim, " must be -1 (= head_dim) or in [2, head_dim]");
  const int64_t R = in.rotary_dim == -1 ? in.head_dim : in.rotary_dim;
  const std::string rname = "rotary_dim " + std::to_string(R) + (in.rotary_dim == -1 ? " (= head_dim)" : "");
  if (R % 2 != 0) return invalid(plan, rname, " must be even");
  if (R < 2) return invalid(plan, rname, " must be >= 2");
  if (R > in.head_dim) return invalid(plan, rname, " must be <= head_dim ", in.head_dim);
  if (!std::isfinite(in.theta) || !(in.theta > 0)) return invalid(plan, "theta ", in.theta, " must be finite and > 0");
  if (in.positions != RopePositions::None && in.position_dtype != DType::I32 && in.position_dtype != DType::I64)
    return invalid(plan, "position_dtype ", in.position_dtype, " must be i32 or i64");
  if (in.use_cache && in.cache_len < 1)
    return invalid(plan, "cache_len ", in.cache_len, " must be >= 1 when use_cache is set");
  for (int64_t h : {in.heads, in.has_k ? in.kv_heads : 0}) {
    int64_t n = 0;
    if (!baracuda::detail::checked_product({in.batch, h, in.seq_len, in.head_dim}, &n) || n > (int64_t{1} << 62))
      return invalid(plan, "tensor ", Dims{in.batch, h, in.seq_len, in.head_dim}, " has too many elements");
  }
  if (in.use_cache) BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(plan, "cos/sin cache size", {in.cache_len, R / 2}));
  *out = in;
  out->rotary_dim = R;
  if (!in.has_k) out->kv_heads = 0;
  return Status::ok();
}

// ---- shapes ----------------------------------------------------------------------
Dims shape4(const RopeDescriptor& d, int64_t heads) { return {d.batch, heads, d.seq_len, d.head_dim}; }
Dims pos_shape(const RopeDescriptor& d) {
  switch (d.positions) {
    case RopePositions::PerSequence: return {d.seq_len};
    case RopePositions::PerBatch: return {d.batch, d.seq_len};
    default: return {};
  }
}
Dims cache_shape_of(const RopeDescriptor& d) { return {d.cache_len, d.rotary_dim / 2}; }
DType cache_dtype_of(const RopeDescriptor& d) { return d.dtype == DType::F64 ? DType::F64 : DType::F32; }

// ---- arguments ------------------------------------------------------------------------
// Forward and backward differ only in their tensor names.
struct Names {
  const char* x[2];
  const char* y[2];
};
constexpr Names kForwardNames{{"q", "k"}, {"q_out", "k_out"}};
constexpr Names kBackwardNames{{"dy_q", "dy_k"}, {"dq", "dk"}};

// The tensors of one call, in the order they are checked.
struct Tensors {
  TensorRef x[2];
  TensorMut y[2];
  TensorRef pos, cos, sin;
};

baracuda::detail::ArgCheck check_args(const PlanBase& plan, const Names& nm, const RopeDescriptor& d, const Tensors& t) {
  baracuda::detail::ArgCheck c(plan);
  const int64_t heads[2] = {d.heads, d.kv_heads};
  const std::string no_k = " is given but the descriptor has has_k = false";
  c.input(nm.x[0], t.x[0], d.dtype, shape4(d, heads[0])).output(nm.y[0], t.y[0], d.dtype, shape4(d, heads[0]));
  if (d.has_k) {
    const char* why = "descriptor.has_k is true, the default; set it to false to rotate q only";
    c.input(nm.x[1], t.x[1], d.dtype, shape4(d, heads[1]), why).output(nm.y[1], t.y[1], d.dtype, shape4(d, heads[1]), why);
  } else {
    c.optional_input(nm.x[1], t.x[1], false, d.dtype, {}, "", nm.x[1] + no_k)
        .optional_output(nm.y[1], t.y[1], false, d.dtype, {}, nm.y[1] + no_k);
  }
  c.optional_input("positions", t.pos, d.positions != RopePositions::None, d.position_dtype, pos_shape(d),
                   std::string("positions tensor is missing (descriptor.positions = ") + rope_positions_name(d.positions) + ")",
                   "positions is given but descriptor.positions is none (position = s)");
  for (const auto& [name, table] : {std::pair<const char*, const TensorRef*>{"cos", &t.cos}, {"sin", &t.sin}})
    c.optional_input(name, *table, d.use_cache, cache_dtype_of(d), cache_shape_of(d),
                     std::string(name) + " tensor is missing (descriptor.use_cache is set)",
                     std::string(name) + " is given but descriptor.use_cache is false");
  // An output may only be its own input, exactly.
  return std::move(c.allow_in_place(nm.y[0], nm.x[0]).allow_in_place(nm.y[1], nm.x[1]).disjoint());
}

Status run_cpu(const RopeDescriptor& d, bool backward, const Tensors& t) {
  rope::ref::Problem p;
  p.desc = d;
  p.backward = backward;
  for (int w = 0; w < 2; ++w) {
    p.x[w] = t.x[w];
    p.y[w] = t.y[w];
  }
  p.positions = t.pos;
  p.cos = t.cos;
  p.sin = t.sin;
  return rope::ref::run(p);
}

rope::cuda::Launch make_launch(int sm_count, const RopeDescriptor& d, bool backward, const Stream& stream,
                              const Tensors& t) {
  rope::cuda::Launch l;
  l.desc = d;
  l.backward = backward;
  l.heads[0] = d.heads;
  l.heads[1] = d.has_k ? d.kv_heads : 0;
  for (int w = 0; w < 2; ++w) {
    const TensorRef& x = t.x[w];
    const TensorMut& y = t.y[w];
    if (l.heads[w] == 0 || shape_numel(x.shape) == 0) {
      l.heads[w] = 0;  // nothing to rotate on this side
      continue;
    }
    l.x[w] = {x.data, x.strides[0], x.strides[1], x.strides[2], x.strides[3]};
    l.y[w] = {y.data, y.strides[0], y.strides[1], y.strides[2], y.strides[3]};
    l.in_place[w] = baracuda::detail::same_view(y, x);
  }
  if (d.positions == RopePositions::PerSequence) {
    l.positions = t.pos.data;
    l.pos_ss = t.pos.strides[0];
  } else if (d.positions == RopePositions::PerBatch) {
    l.positions = t.pos.data;
    l.pos_sb = t.pos.strides[0];
    l.pos_ss = t.pos.strides[1];
  }
  if (d.use_cache) {
    l.cos = t.cos.data;
    l.sin = t.sin.data;
    l.cos_sp = t.cos.strides[0];
    l.cos_si = t.cos.strides[1];
    l.sin_sp = t.sin.strides[0];
    l.sin_si = t.sin.strides[1];
  }
  l.stream = stream.native_handle();
  l.sm_count = sm_count;
  return l;
}

Status run_cuda(const PlanBase& plan, int sm_count, const RopeDescriptor& d, bool backward, const Stream& stream,
                const Tensors& t) {
#ifdef BARACUDA_WITH_CUDA
  (void)plan;
  return rope::cuda::launch(make_launch(sm_count, d, backward, stream, t));
#else
  (void)sm_count, (void)d, (void)backward, (void)stream, (void)t;
  return baracuda::detail::no_cuda(plan.name());
#endif
}

// The select prologue of both plans (they differ in name and op).
Status setup(PlanBase& plan, const char* name, const char* op, const Stream& stream, const PlanPreference& pref,
             const RopeDescriptor& d) {
  auto be = baracuda::detail::setup_plan(plan, name, kFamily, stream, pref, d.dtype, op);
  if (!be) return be.status();
  if (be->backend != Backend::CpuReference) baracuda::detail::PlanAccess::sku(plan).variant = rope::cuda::variant_for(d);
  return Status::ok();
}

}  // namespace
}  // namespace rope::detail

using namespace rope::detail;

// ---- RopePlan ---------------------------------------------------------------------------
Result<RopePlan> RopePlan::select(const Stream& stream, const RopeDescriptor& desc, const PlanPreference& pref) {
  RopePlan plan;
  BARACUDA_RETURN_IF_ERROR(validate("RopePlan", desc, &plan.desc_));
  BARACUDA_RETURN_IF_ERROR(setup(plan, "RopePlan", "rope.forward", stream, pref, plan.desc_));
  return plan;
}

Dims RopePlan::q_shape() const { return shape4(desc_, desc_.heads); }
Dims RopePlan::k_shape() const { return shape4(desc_, desc_.kv_heads); }
Dims RopePlan::positions_shape() const { return pos_shape(desc_); }
Dims RopePlan::cache_shape() const { return cache_shape_of(desc_); }
DType RopePlan::cache_dtype() const { return cache_dtype_of(desc_); }

namespace {
Tensors tensors_of(const RopeArgs& a) { return {{a.q, a.k}, {a.q_out, a.k_out}, a.positions, a.cos, a.sin}; }
Tensors tensors_of(const RopeBackwardArgs& a) { return {{a.dy_q, a.dy_k}, {a.dq, a.dk}, a.positions, a.cos, a.sin}; }
}  // namespace

Status RopePlan::can_implement(const RopeArgs& a) const {
  return check_args(*this, kForwardNames, desc_, tensors_of(a)).status();
}

Result<KernelSku> RopePlan::sku_for(const Stream& stream, Workspace ws, const RopeArgs& a) const {
  const Tensors t = tensors_of(a);
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, kForwardNames, desc_, t), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = rope::cuda::variant_for(make_launch(baracuda::detail::PlanAccess::sm_count(*this), desc_, false, stream, t));
    return s;
  });
}

Status RopePlan::run(const Stream& stream, Workspace ws, const RopeArgs& a) const {
  const Tensors t = tensors_of(a);
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, kForwardNames, desc_, t), [&] { return run_cpu(desc_, false, t); },
      [&] { return run_cuda(*this, baracuda::detail::PlanAccess::sm_count(*this), desc_, false, stream, t); });
}

// ---- RopeBackwardPlan ----------------------------------------------------------------------
Result<RopeBackwardPlan> RopeBackwardPlan::select(const Stream& stream, const RopeDescriptor& desc,
                                                  const PlanPreference& pref) {
  RopeBackwardPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate("RopeBackwardPlan", desc, &plan.desc_));
  BARACUDA_RETURN_IF_ERROR(setup(plan, "RopeBackwardPlan", "rope.backward", stream, pref, plan.desc_));
  return plan;
}

Dims RopeBackwardPlan::q_shape() const { return shape4(desc_, desc_.heads); }
Dims RopeBackwardPlan::k_shape() const { return shape4(desc_, desc_.kv_heads); }
Dims RopeBackwardPlan::positions_shape() const { return pos_shape(desc_); }
Dims RopeBackwardPlan::cache_shape() const { return cache_shape_of(desc_); }
DType RopeBackwardPlan::cache_dtype() const { return cache_dtype_of(desc_); }

Status RopeBackwardPlan::can_implement(const RopeBackwardArgs& a) const {
  return check_args(*this, kBackwardNames, desc_, tensors_of(a)).status();
}

Result<KernelSku> RopeBackwardPlan::sku_for(const Stream& stream, Workspace ws, const RopeBackwardArgs& a) const {
  const Tensors t = tensors_of(a);
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, kBackwardNames, desc_, t), [&]() -> Result<KernelSku> {
    KernelSku s = sku();
    s.variant = rope::cuda::variant_for(make_launch(baracuda::detail::PlanAccess::sm_count(*this), desc_, true, stream, t));
    return s;
  });
}

Status RopeBackwardPlan::run(const Stream& stream, Workspace ws, const RopeBackwardArgs& a) const {
  const Tensors t = tensors_of(a);
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, kBackwardNames, desc_, t), [&] { return run_cpu(desc_, true, t); },
      [&] { return run_cuda(*this, baracuda::detail::PlanAccess::sm_count(*this), desc_, true, stream, t); });
}

}  // namespace baracuda
