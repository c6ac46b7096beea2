#ifdef BARACUDA_WITH_CUDA
#include "ops/gemm/cublaslt_route.hpp"

#include <algorithm>
#include <string>
#include <vector>

#include "backends/cublaslt/handle.hpp"
#include "backends/cublaslt/matmul.hpp"
#include "core/capture.hpp"
#include "core/error.hpp"
#include "ops/gemm/launch.hpp"

namespace baracuda::gemm::lt {

namespace {

using baracuda::detail::unsupported;

// A logical r x c matrix with element (i, j) at i*si + j*sj, stored the way
// cuBLASLt reads it: column-major `stored` (trans = false: r x c, ld = sj;
// trans = true: the transpose c x r, ld = si). Extent-1 axes take any stride.
struct ColMajor {
  bool ok = false, trans = false;
  int64_t ld = 1;
};
ColMajor as_col_major(int64_t r, int64_t c, int64_t si, int64_t sj) {
  ColMajor m;
  if (r <= 1 || si == 1) {  // plain: unit stride down the columns
    const int64_t ld = c <= 1 ? std::max<int64_t>(1, r) : sj;
    if (ld >= std::max<int64_t>(1, r)) return {true, false, ld};
  }
  if (c <= 1 || sj == 1) {  // transposed: unit stride along the rows
    const int64_t ld = r <= 1 ? std::max<int64_t>(1, c) : si;
    if (ld >= std::max<int64_t>(1, c)) return {true, true, ld};
  }
  return m;
}

std::string strides_text(int64_t rs, int64_t cs) {
  return "[" + std::to_string(rs) + ", " + std::to_string(cs) + "]";
}

// The operands that take part in the batch layout, by index.
enum Op { kA, kB, kD, kC, kAux, kOps };  // kAux: the aux written (GELU_AUX) or read (DGELU)

// The batch structure of the problem after folding and collapsing.
struct BatchPlan {
  bool fold = false;
  int64_t m = 0;                    // rows after folding
  int64_t rs[kOps] = {};            // row strides after folding
  int rank = 0;                     // collapsed batch dims (outermost first)
  int64_t size[kMaxRank] = {};
  int64_t stride[kOps][kMaxRank] = {};
};

struct Mats {
  const Mat<const void*>* m[kOps] = {};
  bool used[kOps] = {};
};

BatchPlan batch_plan(const Problem& p, const Mats& mats) {
  BatchPlan bp;
  bp.m = p.m;
  for (int o = 0; o < kOps; ++o)
    if (mats.used[o]) bp.rs[o] = mats.m[o]->rs;
  // Batch dims of extent > 1, in order.
  int dims[kMaxRank], nd = 0;
  for (int d = 0; d < p.batch.rank; ++d)
    if (p.batch[d] > 1) dims[nd++] = d;
  // Collapse adjacent dims (inner to outer) when every operand allows it.
  struct G {
    int64_t size;
    int64_t stride[kOps];
  };
  std::vector<G> groups;
  for (int i = nd - 1; i >= 0; --i) {
    const int d = dims[i];
    bool merge = !groups.empty();
    if (merge)
      for (int o = 0; o < kOps; ++o)
        if (mats.used[o] && mats.m[o]->bstride[d] != groups.back().stride[o] * groups.back().size) merge = false;
    if (merge) {
      groups.back().size *= p.batch[d];
    } else {
      G g{p.batch[d], {}};
      for (int o = 0; o < kOps; ++o) g.stride[o] = mats.used[o] ? mats.m[o]->bstride[d] : 0;
      groups.push_back(g);
    }
  }
  // Fold the innermost group into m: b broadcast over it, and every other
  // operand's batch stride equals m rows.
  if (!groups.empty()) {
    const G& g = groups.front();
    bool fold = mats.used[kB] && g.stride[kB] == 0;
    for (int o : {kA, kD, kC, kAux})
      if (mats.used[o] && !(p.m == 1 || g.stride[o] == p.m * mats.m[o]->rs)) fold = false;
    if (fold) {
      bp.fold = true;
      bp.m = p.m * g.size;
      for (int o : {kA, kD, kC, kAux})
        if (mats.used[o] && p.m == 1) bp.rs[o] = g.stride[o];
      groups.erase(groups.begin());
    }
  }
  bp.rank = static_cast<int>(groups.size());
  for (int i = 0; i < bp.rank; ++i) {  // outermost first
    const G& g = groups[groups.size() - 1 - i];
    bp.size[i] = g.size;
    for (int o = 0; o < kOps; ++o) bp.stride[o][i] = g.stride[o];
  }
  return bp;
}

// Everything execute() needs, re-derived from (route decisions, problem).
struct Layout {
  Mats mats;
  BatchPlan bp;
  cublaslt::MatmulProblem lt;
  bool c_direct = false;  // C read from c (else C = D, or no C)
};

DType scale_type_of(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

Result<Layout> layout_of(const Problem& p, const Route& r, const Config& cfg) {
  Layout L;
  const Mat<const void*> a = p.a, b = p.b;
  Mat<const void*> dst, c, aux;
  const Mat<void*>& d_src = r.to_aux ? p.aux : p.out;
  dst.data = d_src.data;
  dst.rs = d_src.rs;
  dst.cs = d_src.cs;
  std::copy(d_src.bstride, d_src.bstride + kMaxRank, dst.bstride);
  if (r.fused_aux) {
    aux.data = p.aux.data;
    aux.rs = p.aux.rs;
    aux.cs = p.aux.cs;
    std::copy(p.aux.bstride, p.aux.bstride + kMaxRank, aux.bstride);
  } else if (r.fused_dact) {
    aux = p.dact_aux;
  }
  L.c_direct = !r.k_zero && p.has_c && p.beta != 0 && !r.copy_c;
  if (L.c_direct) c = p.c;
  L.mats.m[kA] = &a;
  L.mats.m[kB] = &b;
  L.mats.m[kD] = &dst;
  L.mats.m[kC] = &c;
  L.mats.m[kAux] = &aux;
  L.mats.used[kA] = L.mats.used[kB] = L.mats.used[kD] = true;
  L.mats.used[kC] = L.c_direct;
  L.mats.used[kAux] = r.fused_aux || r.fused_dact;
  L.bp = batch_plan(p, L.mats);
  L.mats = {};  // pointers into this frame's locals: not kept
  const BatchPlan& bp = L.bp;
  const int64_t m = bp.m, n = p.n, k = p.k;

  cublaslt::MatmulProblem& q = L.lt;
  q.a_type = r.orient_t ? b_dtype(p) : a_dtype(p);  // cuBLASLt's A is b in the T orientation
  q.b_type = r.orient_t ? a_dtype(p) : b_dtype(p);
  q.c_type = q.d_type = p.dtype;
  if (p.scaled.on) {
    const auto mode = p.scaled.rowwise ? cublaslt::ScaleMode::OuterVec : cublaslt::ScaleMode::Scalar;
    q.a_scale = q.b_scale = mode;  // a's rows are D's columns in T and b's columns D's rows: the vectors swap with A and B
    q.fast_accum = p.scaled.fast_accum;
  }
  q.scale_type = scale_type_of(p.dtype);
  q.compute = p.dtype == DType::F64 ? cublaslt::ComputeType::F64
                                    : (cfg.tf32 && p.dtype == DType::F32 ? cublaslt::ComputeType::F32FastTF32
                                                                           : cublaslt::ComputeType::F32);
  // The GEMM's destination as a plain column-major matrix of the orientation.
  const auto dcm = r.orient_t ? as_col_major(n, m, dst.cs, bp.rs[kD]) : as_col_major(m, n, bp.rs[kD], dst.cs);
  if (!dcm.ok || dcm.trans)
    return unsupported(cfg.plan, r.to_aux ? "aux" : cfg.out_name, " has matrix strides ", strides_text(bp.rs[kD], dst.cs),
                       ": cuBLASLt needs a unit stride along one of its last two axes and no overlapping rows "
                       "(the plan does not copy: pass a contiguous view)");
  // A_c and B_c of the orientation.
  struct Side {
    const char* name;
    int64_t r, c, si, sj;
  };
  const Side sa = r.orient_t ? Side{cfg.b_name, n, k, b.cs, b.rs} : Side{cfg.a_name, m, k, bp.rs[kA], a.cs};
  const Side sb = r.orient_t ? Side{cfg.a_name, k, m, a.cs, bp.rs[kA]} : Side{cfg.b_name, k, n, b.rs, b.cs};
  ColMajor ca = as_col_major(sa.r, sa.c, sa.si, sa.sj), cb = as_col_major(sb.r, sb.c, sb.si, sb.sj);
  for (const auto& [side, cm] : {std::pair<const Side*, ColMajor*>{&sa, &ca}, {&sb, &cb}})
    if (!cm->ok) {
      const bool is_a = side->name == cfg.a_name;
      return unsupported(cfg.plan, side->name, " has matrix strides ",
                         is_a ? strides_text(bp.rs[kA], a.cs) : strides_text(b.rs, b.cs),
                         ": cuBLASLt needs a unit stride along one of its last two axes and no overlapping rows "
                         "(the plan does not copy: pass a contiguous view)");
    }
  q.m = r.orient_t ? n : m;
  q.n = r.orient_t ? m : n;
  q.k = k;
  q.trans_a = ca.trans;
  q.trans_b = cb.trans;
  q.lda = ca.ld;
  q.ldb = cb.ld;
  q.ldd = dcm.ld;
  q.ldc = q.ldd;
  if (L.c_direct) {
    const auto ccm = r.orient_t ? as_col_major(n, m, c.cs, bp.rs[kC]) : as_col_major(m, n, bp.rs[kC], c.cs);
    if (!ccm.ok || ccm.trans) return unsupported(cfg.plan, "c is not a plain matrix (internal: the route should copy it)");
    q.ldc = ccm.ld;
  }
  // The cuBLASLt batch: the innermost collapsed dim (the rest loop).
  if (bp.rank > 0) {
    const int i = bp.rank - 1;
    q.batch = bp.size[i];
    q.stride_a = bp.stride[r.orient_t ? kB : kA][i];
    q.stride_b = bp.stride[r.orient_t ? kA : kB][i];
    q.stride_d = bp.stride[kD][i];
    q.stride_c = L.c_direct ? bp.stride[kC][i] : q.stride_d;
  }
  // Epilogue.
  using E = cublaslt::Epilogue;
  E e = E::None;
  if (r.fused_aux) e = r.fused_bias ? E::GeluAuxBias : E::GeluAux;
  else if (r.fused_act && p.act == GemmActivation::Relu) e = r.fused_bias ? E::ReluBias : E::Relu;
  else if (r.fused_act && p.act == GemmActivation::GeluTanh) e = r.fused_bias ? E::GeluBias : E::Gelu;
  else if (r.fused_bias) e = E::Bias;
  if (p.has_a_rowsum) e = r.orient_t ? E::BGradB : E::BGradA;
  if (r.fused_dact) e = r.colsum_done ? E::DGeluBGrad : E::DGelu;
  q.epilogue = e;
  q.bias_type = p.dtype;
  if (r.fused_aux || r.fused_dact) {
    const auto xcm = r.orient_t ? as_col_major(n, m, aux.cs, bp.rs[kAux]) : as_col_major(m, n, bp.rs[kAux], aux.cs);
    if (!xcm.ok || xcm.trans) return unsupported(cfg.plan, "aux is not a plain matrix (internal: the route should not fuse it)");
    q.aux_type = p.dtype;
    q.aux_ld = xcm.ld;
    q.aux_stride = bp.rank > 0 ? bp.stride[kAux][bp.rank - 1] : 0;
  }
  return L;
}

// Fused aux needs an ld that is a multiple of 8 and a 16-byte aligned
// pointer (cuBLASLt's rule for the GELU aux matrix).
template <class Ptr>
bool aux_fusable(const Problem& p, const Mat<Ptr>& aux, bool orient_t) {
  const int64_t ld = orient_t ? aux.rs : aux.cs;
  const int64_t unit = orient_t ? aux.cs : aux.rs;
  return (unit == 1 || (orient_t ? p.n : p.m) == 1) && ld % 8 == 0 && cublaslt::pointer_alignment(aux.data) >= 16;
}

std::string variant_of(const Route& r, const Problem& p, const Config& cfg) {
  if (r.k_zero) return std::string("k0.affine-pass") + (p.act != GemmActivation::None ? "+act-pass" : "");
  std::string v = "cublaslt";
  if (r.fused_aux) v += r.fused_bias ? ".gelu-aux-bias" : ".gelu-aux";
  else if (r.fused_act) v += std::string(p.act == GemmActivation::Relu ? ".relu" : ".gelu") + (r.fused_bias ? "-bias" : "");
  else if (r.fused_bias) v += ".bias";
  if (p.has_a_rowsum) v += ".bgrad";
  if (r.fused_dact) v += r.colsum_done ? ".dgelu-bgrad" : ".dgelu";
  if (r.fold) v += ".folded";
  else if (r.lt_batch_dim >= 0) v += ".batched";
  if (r.outer_rank > 0) v += ".loop";
  if (!r.orient_t) v += ".colmajor-out";
  if (cfg.tf32 && p.dtype == DType::F32) v += ".tf32";
  if (p.scaled.on) v += std::string(p.scaled.rowwise ? ".fp8-rowwise" : ".fp8") + (p.scaled.fast_accum ? ".fast-accum" : "");
  if (r.copy_c) v = "c-copy+" + v;
  if (p.has_bias && !r.fused_bias) v += "+bias-pass";
  if (p.act != GemmActivation::None && !r.fused_act && !r.fused_aux) v += "+" + std::string(gemm_activation_name(p.act)) + "-pass";
  if (p.dact != GemmActivation::None && !r.fused_dact) v += "+dact-pass";
  return v;
}

// Decides the route with the fused epilogue `try_fuse` allows.
Result<Route> decide(const Problem& p, const Config& cfg, bool try_fuse) {
  Route r;
  if (p.k == 0) {
    r.k_zero = true;
    r.to_aux = p.save_aux;
    r.variant = variant_of(r, p, cfg);
    return r;
  }
  // Fused activations in cuBLASLt compute in f32 precision: f64 takes the
  // pass (computed in double) instead.
  const bool fusable_dtype = p.dtype != DType::F64;
  const bool act_fusable = fusable_dtype && (p.act == GemmActivation::Relu || p.act == GemmActivation::GeluTanh);
  // Orientation of a destination: T (row-major) unless only N (column-major) fits.
  auto plain_in = [&](const auto& mt, bool t) {
    const ColMajor cm = t ? as_col_major(p.n, p.m, mt.cs, mt.rs) : as_col_major(p.m, p.n, mt.rs, mt.cs);
    return cm.ok && !cm.trans;
  };
  auto orient_of = [&](const auto& mt) { return plain_in(mt, true) || !plain_in(mt, false); };
  r.fused_aux = try_fuse && fusable_dtype && p.save_aux && p.act == GemmActivation::GeluTanh;
  if (r.fused_aux) {
    const bool t = orient_of(p.out);
    if (!plain_in(p.aux, t) || !aux_fusable(p, p.aux, t)) r.fused_aux = false;  // aux in another layout: the pass form
  }
  r.to_aux = p.save_aux && !r.fused_aux;  // the pre-activation goes to aux, a pass writes out
  r.orient_t = orient_of(r.to_aux ? p.aux : p.out);
  // The linear backward's dGELU (DGELU[_BGRAD]): tanh GELU only, the output
  // in T orientation (the bias gradient then runs along D's rows = out's
  // columns), its aux plain and aligned like GELU_AUX's, nothing else fused.
  if (p.dact != GemmActivation::None) {
    r.fused_dact = try_fuse && cfg.dgelu && fusable_dtype && p.dact == GemmActivation::GeluTanh && r.orient_t && !p.has_bias &&
                   p.act == GemmActivation::None && !p.save_aux && plain_in(p.dact_aux, true) &&
                   aux_fusable(p, p.dact_aux, true);
    r.colsum_done = r.fused_dact && p.has_out_colsum && cfg.bgrad;
  }
  r.fused_bias = try_fuse && p.has_bias && r.orient_t;  // cuBLASLt's bias runs along D's rows: only in T
  r.fused_act = try_fuse && act_fusable && !r.to_aux && (!p.has_bias || r.fused_bias);
  if (r.fused_aux) r.fused_act = false;
  if (p.has_bias && !r.fused_bias) r.fused_act = false;  // the bias must come before the activation
  // c: direct when it is a plain matrix in the orientation (or the destination itself).
  if (p.has_c && p.beta != 0) {
    const auto ccm = r.orient_t ? as_col_major(p.n, p.m, p.c.cs, p.c.rs) : as_col_major(p.m, p.n, p.c.rs, p.c.cs);
    r.copy_c = !ccm.ok || ccm.trans;
  }
  auto L = layout_of(p, r, cfg);
  if (!L) {
    // c's batch strides may still defeat the batch layout: retry with c copied.
    if (!r.copy_c && p.has_c && p.beta != 0) {
      r.copy_c = true;
      L = layout_of(p, r, cfg);
    }
    if (!L) return L.status();
  }
  r.fold = L->bp.fold;
  r.outer_rank = L->bp.rank > 0 ? L->bp.rank - 1 : 0;
  for (int i = 0; i < r.outer_rank; ++i) r.outer[i] = L->bp.size[i];
  r.lt_batch_dim = L->bp.rank > 0 ? L->bp.rank - 1 : -1;
  r.variant = variant_of(r, p, cfg);
  return r;
}

// Views of the problem's matrices over [batch.., m, n], for the passes.
template <class Ptr>
auto view_of(const Mat<Ptr>& mt, const Problem& p) {
  Dims shape = p.batch, strides;
  for (int d = 0; d < p.batch.rank; ++d) strides.push_back(mt.bstride[d]);
  shape.push_back(p.m);
  shape.push_back(p.n);
  strides.push_back(mt.rs);
  strides.push_back(mt.cs);
  using View = std::conditional_t<std::is_same_v<Ptr, void*>, TensorMut, TensorRef>;
  // Capacity: the span itself (the plan's argument checks bounded the real buffers).
  const int64_t span = baracuda::detail::view_span(shape, strides);
  return View(mt.data, p.dtype, Device::cpu(), shape, strides, span);
}

template <class V>
V on_device(V v, const Stream& s) {
  v.device = s.device();
  return v;
}

}  // namespace

Result<Route> plan_route(const Problem& p, const Config& cfg) { return decide(p, cfg, cfg.fuse); }

namespace {

Status run_gemms(const Route& r, const Problem& p, const Config& cfg, const Stream& stream, void* ws, size_t ws_bytes,
                 bool capturing) {
  auto L = layout_of(p, r, cfg);
  if (!L) return L.status();
  auto handle = cublaslt::device_handle(cfg.plan, cfg.device, capturing);
  if (!handle) return handle.status();
  const BatchPlan& bp = L->bp;
  size_t es[kOps];  // element sizes (fp8 a and b differ from the rest)
  for (int o = 0; o < kOps; ++o) es[o] = dtype_size(p.dtype);
  es[kA] = dtype_size(a_dtype(p));
  es[kB] = dtype_size(b_dtype(p));
  const Mat<void*>& dst = r.to_aux ? p.aux : p.out;
  int64_t outer_count = 1;
  for (int i = 0; i < r.outer_rank; ++i) outer_count *= bp.size[i];
  for (int64_t t = 0; t < outer_count; ++t) {
    int64_t off[kOps] = {};
    for (int64_t rem = t, i = r.outer_rank - 1; i >= 0; --i) {
      const int64_t idx = rem % bp.size[i];
      rem /= bp.size[i];
      for (int o = 0; o < kOps; ++o) off[o] += idx * bp.stride[o][i];
    }
    auto at = [&](auto* base, int o) { return base ? static_cast<char*>(const_cast<void*>(static_cast<const void*>(base))) + off[o] * es[o] : nullptr; };
    cublaslt::MatmulArgs args;
    const void* pa = at(p.a.data, kA);
    const void* pb = at(p.b.data, kB);
    args.a = r.orient_t ? pb : pa;
    args.b = r.orient_t ? pa : pb;
    args.d = at(dst.data, kD);
    args.c = L->c_direct ? at(p.c.data, kC) : (p.has_c && p.beta != 0 ? args.d : nullptr);
    args.alpha = p.alpha;
    args.beta = p.has_c ? p.beta : 0.0;
    if (r.fused_bias) args.bias = p.bias;
    if (p.has_a_rowsum) args.bias = p.a_rowsum;
    if (r.fused_aux) args.aux = at(p.aux.data, kAux);
    if (r.fused_dact) args.aux = at(p.dact_aux.data, kAux);  // read by DGELU
    if (r.colsum_done) args.bias = p.out_colsum;
    if (p.scaled.on) {
      args.a_scale = r.orient_t ? p.scaled.b_scale : p.scaled.a_scale;
      args.b_scale = r.orient_t ? p.scaled.a_scale : p.scaled.b_scale;
    }
    // D stands in for a missing C (run_matmul passes it as C).
    cublaslt::MatmulProblem q =
        cublaslt::with_pointer_alignment(L->lt, args.a, args.b, args.c ? args.c : args.d, args.d);
    auto algo = cublaslt::choose_algo(cfg.plan, cfg.device, q, cfg.workspace_limit, capturing);
    if (!algo) return algo.status();
    BARACUDA_RETURN_IF_ERROR(cublaslt::run_matmul(cfg.plan, *handle, q, **algo, args, ws, ws_bytes, stream.native_handle()));
  }
  return Status::ok();
}

}  // namespace

Status execute(const Route& r, const Problem& p, const Config& cfg, const Stream& stream, void* ws, size_t ws_bytes) {
  const bool capturing = baracuda::detail::native_stream_is_capturing(stream.native_handle());
  const TensorMut out = on_device(view_of(p.out, p), stream);
  const TensorMut dst = r.to_aux ? on_device(view_of(p.aux, p), stream) : out;
  TensorRef bias;
  if (p.has_bias) bias = on_device(TensorRef(p.bias, p.dtype, Device::cpu(), Dims{p.n}, Dims{p.bias_stride}, 1 + (p.n - 1) * p.bias_stride), stream);
  if (r.k_zero) {
    TensorRef c;
    if (p.has_c && p.beta != 0) c = on_device(view_of(p.c, p), stream);
    BARACUDA_RETURN_IF_ERROR(cuda::affine_pass(stream, p.has_c ? p.beta : 0.0, c, bias, dst));
    if (p.act != GemmActivation::None || r.to_aux) BARACUDA_RETURN_IF_ERROR(cuda::activation_pass(stream, p.act, dst, out));
    return Status::ok();
  }
  if (r.copy_c) BARACUDA_RETURN_IF_ERROR(cuda::copy_pass(stream, on_device(view_of(p.c, p), stream), dst));
  BARACUDA_RETURN_IF_ERROR(run_gemms(r, p, cfg, stream, ws, ws_bytes, capturing));
  if (p.has_bias && !r.fused_bias) BARACUDA_RETURN_IF_ERROR(cuda::affine_pass(stream, 1.0, dst, bias, dst));
  if (p.dact != GemmActivation::None && !r.fused_dact)
    BARACUDA_RETURN_IF_ERROR(cuda::activation_grad_pass(stream, p.dact, dst, on_device(view_of(p.dact_aux, p), stream), dst));
  if (p.act != GemmActivation::None && !r.fused_act && !r.fused_aux)
    BARACUDA_RETURN_IF_ERROR(cuda::activation_pass(stream, p.act, dst, out));
  return Status::ok();
}

Result<Route> warm(const Problem& p, Config& cfg) {
  cfg.fuse = true;
  auto r = decide(p, cfg, /*try_fuse=*/true);
  if (!r) return r;
  if (r->k_zero) return r;
  auto L = layout_of(p, *r, cfg);
  if (!L) return L.status();
  auto algo = cublaslt::choose_algo(cfg.plan, cfg.device, L->lt, cfg.workspace_limit, /*capturing=*/false);
  if (algo) return r;
  if (algo.status().code() != StatusCode::Unsupported || p.has_a_rowsum) return algo.status();
  // cuBLASLt has no kernel for the fused epilogue (e.g. f64): plain GEMM + passes.
  auto plain = decide(p, cfg, /*try_fuse=*/false);
  if (!plain) return plain;
  auto L2 = layout_of(p, *plain, cfg);
  if (!L2) return L2.status();
  auto algo2 = cublaslt::choose_algo(cfg.plan, cfg.device, L2->lt, cfg.workspace_limit, false);
  if (!algo2) return algo2.status();
  cfg.fuse = false;
  return plain;
}

}  // namespace baracuda::gemm::lt
#endif
