// RopePlan / RopeBackwardPlan: descriptor validation, backend choice, argument
// checks (shapes, dtypes, devices, buffers, aliasing) and dispatch to the CPU
// reference or the CUDA kernel. Forward and backward share everything but the
// tensor names and the sign of the angle.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>

#include "core/checks.hpp"
#include "core/dispatch.hpp"
#include "core/cuda_device.hpp"
#include "core/families.hpp"
#include "ops/rope/cpu.hpp"
#include "ops/rope/rope_cuda.hpp"

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

namespace rope_detail {
namespace {

std::string pfx(const char* plan) { return std::string(plan) + ": "; }
Status invalid(const char* plan, const std::string& msg) { return Status(StatusCode::InvalidProblem, pfx(plan) + msg); }

// ---- descriptor --------------------------------------------------------------
Status validate(const char* plan, const RopeDescriptor& in, RopeDescriptor* out) {
  if (!is_floating(in.dtype))
    return Status(StatusCode::Unsupported,
                  pfx(plan) + "dtype " + std::string(dtype_name(in.dtype)) + " is not supported (f32, f64, f16, bf16)");
  if (static_cast<int>(in.pairs) > static_cast<int>(RopePairs::HalfSplit))
    return invalid(plan, "unknown RopePairs " + std::to_string(static_cast<int>(in.pairs)));
  if (static_cast<int>(in.positions) > static_cast<int>(RopePositions::PerBatch))
    return invalid(plan, "unknown RopePositions " + std::to_string(static_cast<int>(in.positions)));
  const std::pair<const char*, int64_t> extents[] = {
      {"batch", in.batch}, {"heads", in.heads}, {"kv_heads", in.has_k ? in.kv_heads : 0},
      {"seq_len", in.seq_len}, {"head_dim", in.head_dim}};
  for (const auto& [name, v] : extents)
    if (v < 0) return invalid(plan, std::string(name) + " " + std::to_string(v) + " must be >= 0");
  if (in.rotary_dim < -1)
    return invalid(plan, "rotary_dim " + std::to_string(in.rotary_dim) + " must be -1 (= head_dim) or in [2, head_dim]");
  const int64_t R = in.rotary_dim == -1 ? in.head_dim : in.rotary_dim;
  const std::string rname = "rotary_dim " + std::to_string(R) + (in.rotary_dim == -1 ? " (= head_dim)" : "");
  if (R % 2 != 0) return invalid(plan, rname + " must be even");
  if (R < 2) return invalid(plan, rname + " must be >= 2");
  if (R > in.head_dim)
    return invalid(plan, rname + " must be <= head_dim " + std::to_string(in.head_dim));
  if (!std::isfinite(in.theta) || !(in.theta > 0))
    return invalid(plan, "theta " + std::to_string(in.theta) + " must be finite and > 0");
  if (in.positions != RopePositions::None && in.position_dtype != DType::I32 && in.position_dtype != DType::I64)
    return invalid(plan, "position_dtype " + std::string(dtype_name(in.position_dtype)) + " must be i32 or i64");
  if (in.use_cache && in.cache_len < 1)
    return invalid(plan, "cache_len " + std::to_string(in.cache_len) + " must be >= 1 when use_cache is set");
  for (int64_t h : {in.heads, in.has_k ? in.kv_heads : 0}) {
    int64_t n = 1;
    for (int64_t e : {in.batch, h, in.seq_len, in.head_dim})
      if (__builtin_mul_overflow(n, e, &n) || n > (int64_t{1} << 62))
        return invalid(plan, "tensor [" + std::to_string(in.batch) + "," + std::to_string(h) + "," +
                                 std::to_string(in.seq_len) + "," + std::to_string(in.head_dim) + "] has too many elements");
  }
  *out = in;
  out->rotary_dim = R;
  if (!in.has_k) out->kv_heads = 0;
  return Status::ok();
}

// ---- backend -------------------------------------------------------------------
using detail::BackendChoice;
Result<BackendChoice> choose_backend(const char* plan, const Stream& stream, const PlanPreference& pref) {
  auto be = detail::choose_backend(plan, "RoPE", stream, pref);
  if (be && be->backend == Backend::Bespoke && !BARACUDA_KERNELS_ROPE) return detail::family_not_built(plan, "rope");
  return be;
}

KernelSku make_sku(const BackendChoice& be, const RopeDescriptor& d, bool backward) {
  KernelSku sku;
  sku.backend = be.backend;
  sku.arch = be.arch;
  sku.dtype = d.dtype;
  sku.op = backward ? "rope.backward" : "rope.forward";
  sku.precision = detail::default_precision(d.dtype, be.backend);
  sku.variant = be.backend == Backend::CpuReference ? "reference" : cuda_rope::variant_for(d);
  return sku;
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

// ---- aliasing -----------------------------------------------------------------------
// Same data pointer and the same strides on every dim of extent > 1 (shapes
// are equal): the output IS the input.
bool same_view(const TensorRef& a, const TensorRef& b) {
  if (a.data != b.data || !(a.shape == b.shape)) return false;
  for (int i = 0; i < a.rank(); ++i)
    if (a.shape[i] > 1 && a.strides[i] != b.strides[i]) return false;
  return true;
}

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

// Dims (by byte stride, descending) of two views with the same element size
// whose strides nest: each stride exceeds the span of all smaller ones for
// the larger of the two extents. d_j ranges over [lo_j, hi_j] (index in a
// minus index in b). Is some combination within (t - es, t + es)?
struct OverlapSearch {
  int n = 0;
  int64_t s[2 * kMaxRank], lo[2 * kMaxRank], hi[2 * kMaxRank], es = 1;
  int64_t rest_min[2 * kMaxRank + 1], rest_max[2 * kMaxRank + 1];  // contribution of dims j.. n-1
  int budget = 20000;
  bool reach(int j, int64_t t) {
    if (--budget < 0) return true;  // give up: report an overlap (conservative)
    if (j == n) return t > -es && t < es;
    const int64_t rmin = rest_min[j + 1], rmax = rest_max[j + 1];
    const int64_t dlo = std::max(lo[j], ceil_div(t - es - rmax, s[j]));
    const int64_t dhi = std::min(hi[j], floor_div(t + es - rmin, s[j]));
    for (int64_t dj = dlo; dj <= dhi; ++dj)
      if (reach(j + 1, t - dj * s[j])) return true;
    return false;
  }
};

// True when some byte of a's elements is also a byte of b's. Exact for two
// views of one dtype whose strides nest (e.g. slices of one qkv buffer);
// otherwise true as soon as the address ranges intersect.
bool views_overlap_exact(const TensorRef& a, const TensorRef& b) {
  if (!detail::views_overlap(a, b)) return false;
  if (a.dtype != b.dtype) return true;
  const int64_t es = static_cast<int64_t>(dtype_size(a.dtype));
  // Merge the dims of extent > 1 by stride: (stride, extent in a, extent in b).
  struct E { int64_t s, na, nb; };
  E e[2 * kMaxRank];
  int m = 0;
  auto add = [&](const TensorRef& v, bool is_a) {
    for (int i = 0; i < v.rank(); ++i) {
      if (v.shape[i] <= 1) continue;
      const int64_t st = v.strides[i] * es;
      int k = 0;
      while (k < m && e[k].s != st) ++k;
      if (k == m) e[m++] = {st, 1, 1};
      int64_t& slot = is_a ? e[k].na : e[k].nb;
      if (slot != 1) return false;  // two dims of one view share a stride
      slot = v.shape[i];
    }
    return true;
  };
  if (!add(a, true) || !add(b, false)) return true;
  std::sort(e, e + m, [](const E& x, const E& y) { return x.s < y.s; });
  int64_t reach = es;
  for (int k = 0; k < m; ++k) {
    if (e[k].s < reach) return true;  // strides do not nest: stay conservative
    reach += (std::max(e[k].na, e[k].nb) - 1) * e[k].s;
  }
  OverlapSearch os;
  os.n = m;
  os.es = es;
  for (int k = 0; k < m; ++k) {  // descending stride order
    const E& x = e[m - 1 - k];
    os.s[k] = x.s;
    os.lo[k] = -(x.nb - 1);
    os.hi[k] = x.na - 1;
  }
  os.rest_min[m] = os.rest_max[m] = 0;
  for (int k = m - 1; k >= 0; --k) {
    os.rest_min[k] = os.rest_min[k + 1] + os.lo[k] * os.s[k];
    os.rest_max[k] = os.rest_max[k + 1] + os.hi[k] * os.s[k];
  }
  const int64_t delta = static_cast<int64_t>(reinterpret_cast<uintptr_t>(b.data) - reinterpret_cast<uintptr_t>(a.data));
  return os.reach(0, delta);
}

// ---- arguments ------------------------------------------------------------------------
struct Names {
  const char* x[2];
  const char* y[2];
};
constexpr Names kForwardNames{{"q", "k"}, {"q_out", "k_out"}};
constexpr Names kBackwardNames{{"dy_q", "dy_k"}, {"dq", "dk"}};

bool given(const TensorRef& t) { return t.data != nullptr; }

Status check_args(const char* plan, const Names& nm, const RopeDescriptor& d, Device dev, const TensorRef (&x)[2],
                  const TensorMut (&y)[2], const TensorRef& pos, const TensorRef& cos, const TensorRef& sin) {
  const int64_t heads[2] = {d.heads, d.kv_heads};
  const int n_sides = d.has_k ? 2 : 1;
  for (int w = 0; w < n_sides; ++w) {
    BARACUDA_RETURN_IF_ERROR(detail::check_view(plan, nm.x[w], x[w], d.dtype, shape4(d, heads[w]), dev));
    BARACUDA_RETURN_IF_ERROR(detail::check_output(plan, nm.y[w], y[w], d.dtype, shape4(d, heads[w]), dev));
  }
  if (!d.has_k && (given(x[1]) || given(y[1])))
    return invalid(plan, std::string(given(x[1]) ? nm.x[1] : nm.y[1]) + " is given but the descriptor has has_k = false");

  const Dims ps = pos_shape(d);
  if (d.positions == RopePositions::None) {
    if (given(pos)) return invalid(plan, "positions is given but descriptor.positions is none (position = s)");
  } else {
    if (!given(pos) && shape_numel(ps) > 0)
      return invalid(plan, std::string("positions tensor is missing (descriptor.positions = ") +
                               rope_positions_name(d.positions) + ")");
    BARACUDA_RETURN_IF_ERROR(detail::check_view(plan, "positions", pos, d.position_dtype, ps, dev));
  }
  const Dims cs = cache_shape_of(d);
  const TensorRef* tables[2] = {&cos, &sin};
  const char* tnames[2] = {"cos", "sin"};
  for (int i = 0; i < 2; ++i) {
    if (!d.use_cache) {
      if (given(*tables[i]))
        return invalid(plan, std::string(tnames[i]) + " is given but descriptor.use_cache is false");
      continue;
    }
    if (!given(*tables[i]) && shape_numel(cs) > 0)
      return invalid(plan, std::string(tnames[i]) + " tensor is missing (descriptor.use_cache is set)");
    BARACUDA_RETURN_IF_ERROR(detail::check_view(plan, tnames[i], *tables[i], cache_dtype_of(d), cs, dev));
  }

  // Aliasing: an output may only be its own input, exactly.
  struct In { const TensorRef* t; const char* name; };
  const In ins[5] = {{&x[0], nm.x[0]}, {&x[1], nm.x[1]}, {&pos, "positions"}, {&cos, "cos"}, {&sin, "sin"}};
  for (int w = 0; w < n_sides; ++w) {
    const TensorRef out = y[w];
    for (int i = 0; i < 5; ++i) {
      if (i == 1 && !d.has_k) continue;
      const TensorRef& in = *ins[i].t;
      if (!given(in) || !views_overlap_exact(out, in)) continue;
      if (i == w) {
        if (same_view(out, in)) continue;
        return invalid(plan, std::string(nm.y[w]) + " partially overlaps " + nm.x[w] +
                                 " (in place needs the same data pointer and strides)");
      }
      return invalid(plan, std::string(nm.y[w]) + " overlaps " + ins[i].name + " in memory");
    }
  }
  if (d.has_k && views_overlap_exact(y[0], y[1]))
    return invalid(plan, std::string(nm.y[0]) + " overlaps " + nm.y[1] + " in memory");
  return Status::ok();
}

Status execute(const char* plan, const RopeDescriptor& d, bool backward, const KernelSku& sku, Device dev, int sm_count,
               const Stream& stream, const TensorRef (&x)[2], const TensorMut (&y)[2], const TensorRef& pos,
               const TensorRef& cos, const TensorRef& sin) {
  const int64_t n = shape_numel(shape4(d, d.heads)) + (d.has_k ? shape_numel(shape4(d, d.kv_heads)) : 0);
  if (n == 0) return Status::ok();
  if (sku.backend == Backend::CpuReference) {
    cpu_rope::Problem p;
    p.desc = d;
    p.backward = backward;
    for (int w = 0; w < 2; ++w) {
      p.x[w] = x[w];
      p.y[w] = y[w];
    }
    p.positions = pos;
    p.cos = cos;
    p.sin = sin;
    return cpu_rope::run(p);
  }
#ifdef BARACUDA_WITH_CUDA
  detail::DeviceGuard guard(dev.ordinal);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  cuda_rope::Launch l;
  l.desc = d;
  l.backward = backward;
  l.heads[0] = d.heads;
  l.heads[1] = d.has_k ? d.kv_heads : 0;
  for (int w = 0; w < 2; ++w) {
    if (l.heads[w] == 0 || shape_numel(x[w].shape) == 0) {
      l.heads[w] = 0;  // nothing to rotate on this side
      continue;
    }
    l.x[w] = {x[w].data, x[w].strides[0], x[w].strides[1], x[w].strides[2], x[w].strides[3]};
    l.y[w] = {y[w].data, y[w].strides[0], y[w].strides[1], y[w].strides[2], y[w].strides[3]};
    l.in_place[w] = same_view(y[w], x[w]);
  }
  if (d.positions == RopePositions::PerSequence) {
    l.positions = pos.data;
    l.pos_ss = pos.strides[0];
  } else if (d.positions == RopePositions::PerBatch) {
    l.positions = pos.data;
    l.pos_sb = pos.strides[0];
    l.pos_ss = pos.strides[1];
  }
  if (d.use_cache) {
    l.cos = cos.data;
    l.sin = sin.data;
    l.cos_sp = cos.strides[0];
    l.cos_si = cos.strides[1];
    l.sin_sp = sin.strides[0];
    l.sin_si = sin.strides[1];
  }
  l.stream = stream.native_handle();
  l.sm_count = sm_count;
  (void)plan;
  return cuda_rope::launch(l);
#else
  (void)dev, (void)sm_count, (void)stream, (void)plan;
  return Status(StatusCode::Unsupported, pfx(plan) + "CUDA backend not built");
#endif
}

}  // namespace
}  // namespace rope_detail

using namespace rope_detail;

// ---- RopePlan ---------------------------------------------------------------------------
static constexpr const char* kFwd = "RopePlan";

Result<RopePlan> RopePlan::select(const Stream& stream, const RopeDescriptor& desc, const PlanPreference& pref) {
  RopeDescriptor d;
  BARACUDA_RETURN_IF_ERROR(validate(kFwd, desc, &d));
  auto be = choose_backend(kFwd, stream, pref);
  if (!be) return be.status();
  RopePlan plan;
  plan.desc_ = d;
  plan.device_ = stream.device();
  plan.sm_count_ = be->sm_count;
  plan.sku_ = make_sku(*be, d, false);
  return plan;
}

Dims RopePlan::q_shape() const { return shape4(desc_, desc_.heads); }
Dims RopePlan::k_shape() const { return shape4(desc_, desc_.kv_heads); }
Dims RopePlan::positions_shape() const { return pos_shape(desc_); }
Dims RopePlan::cache_shape() const { return cache_shape_of(desc_); }
DType RopePlan::cache_dtype() const { return cache_dtype_of(desc_); }

Status RopePlan::can_implement(const RopeArgs& a) const {
  const TensorRef x[2] = {a.q, a.k};
  const TensorMut y[2] = {a.q_out, a.k_out};
  return check_args(kFwd, kForwardNames, desc_, device_, x, y, a.positions, a.cos, a.sin);
}

Status RopePlan::run(const Stream& stream, Workspace ws, const RopeArgs& a) const {
  BARACUDA_RETURN_IF_ERROR(detail::check_stream(kFwd, stream, device_));
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  BARACUDA_RETURN_IF_ERROR(detail::check_workspace(kFwd, 0, ws.bytes, ws.ptr));
  const TensorRef x[2] = {a.q, a.k};
  const TensorMut y[2] = {a.q_out, a.k_out};
  return execute(kFwd, desc_, false, sku_, device_, sm_count_, stream, x, y, a.positions, a.cos, a.sin);
}

// ---- RopeBackwardPlan ----------------------------------------------------------------------
static constexpr const char* kBwd = "RopeBackwardPlan";

Result<RopeBackwardPlan> RopeBackwardPlan::select(const Stream& stream, const RopeDescriptor& desc,
                                                  const PlanPreference& pref) {
  RopeDescriptor d;
  BARACUDA_RETURN_IF_ERROR(validate(kBwd, desc, &d));
  auto be = choose_backend(kBwd, stream, pref);
  if (!be) return be.status();
  RopeBackwardPlan plan;
  plan.desc_ = d;
  plan.device_ = stream.device();
  plan.sm_count_ = be->sm_count;
  plan.sku_ = make_sku(*be, d, true);
  return plan;
}

Dims RopeBackwardPlan::q_shape() const { return shape4(desc_, desc_.heads); }
Dims RopeBackwardPlan::k_shape() const { return shape4(desc_, desc_.kv_heads); }
Dims RopeBackwardPlan::positions_shape() const { return pos_shape(desc_); }
Dims RopeBackwardPlan::cache_shape() const { return cache_shape_of(desc_); }
DType RopeBackwardPlan::cache_dtype() const { return cache_dtype_of(desc_); }

Status RopeBackwardPlan::can_implement(const RopeBackwardArgs& a) const {
  const TensorRef x[2] = {a.dy_q, a.dy_k};
  const TensorMut y[2] = {a.dq, a.dk};
  return check_args(kBwd, kBackwardNames, desc_, device_, x, y, a.positions, a.cos, a.sin);
}

Status RopeBackwardPlan::run(const Stream& stream, Workspace ws, const RopeBackwardArgs& a) const {
  BARACUDA_RETURN_IF_ERROR(detail::check_stream(kBwd, stream, device_));
  BARACUDA_RETURN_IF_ERROR(can_implement(a));
  BARACUDA_RETURN_IF_ERROR(detail::check_workspace(kBwd, 0, ws.bytes, ws.ptr));
  const TensorRef x[2] = {a.dy_q, a.dy_k};
  const TensorMut y[2] = {a.dq, a.dk};
  return execute(kBwd, desc_, true, sku_, device_, sm_count_, stream, x, y, a.positions, a.cos, a.sin);
}

}  // namespace baracuda
