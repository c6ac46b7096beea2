// FusedLinearCrossEntropyPlan: descriptor validation, the chunk rule and the
// inner plans (gemm's public LinearPlan / LinearBackwardPlan, chosen once at
// select() for the exact chunk shapes), argument checks, and run(): the CPU
// reference (linear_ce_reference.cpp) or the CUDA chunk loop over the loss
// family's own cross-entropy launches (launch.hpp). No kernels of its own.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/checks.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"
#include "ops/loss/launch.hpp"
#include "ops/loss/linear_ce_reference.hpp"
#include "ops/loss/path.hpp"

namespace baracuda {

namespace loss::detail {
namespace {

constexpr const char* kName = "FusedLinearCrossEntropyPlan";
constexpr baracuda::detail::Family kLceFamily{"FusedLinearCrossEntropy", "loss", BARACUDA_KERNELS_LOSS};
constexpr size_t kAlign = 256;

using baracuda::detail::invalid;
using baracuda::detail::unsupported;

size_t align_up(size_t v) { return (v + kAlign - 1) / kAlign * kAlign; }
bool any_grad(const FusedLinearCrossEntropyDescriptor& d) { return d.need_dh || d.need_dw || d.need_db; }
Dims loss_shape_of(const FusedLinearCrossEntropyDescriptor& d) {
  return d.reduction == LossReduction::None ? Dims{d.rows} : Dims{};
}
DType lse_dtype_of(const FusedLinearCrossEntropyDescriptor& d) { return d.dtype == DType::F64 ? DType::F64 : DType::F32; }

Status validate(const FusedLinearCrossEntropyDescriptor& d) {
  if (!(d.dtype == DType::F32 || d.dtype == DType::F64 || d.dtype == DType::F16 || d.dtype == DType::BF16))
    return unsupported(kName, "dtype ", d.dtype, " is not supported (f32, f64, f16, bf16)");
  if (d.rows < 0) return invalid(kName, "rows ", d.rows, " must be >= 0");
  if (d.in_features < 0) return invalid(kName, "in_features ", d.in_features, " must be >= 0");
  if (d.classes < 1)
    return invalid(kName, "classes ", d.classes, " must be >= 1 (a row needs at least one class, as in PyTorch)");
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(kName, "logits bytes [rows, classes]",
                                                       {d.rows, d.classes, static_cast<int64_t>(dtype_size(d.dtype))}));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(kName, "hidden [rows, in_features]", {d.rows, d.in_features}));
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_size(kName, "weight [classes, in_features]", {d.classes, d.in_features}));
  if (d.target == CrossEntropyTarget::Probs)
    return invalid(kName, "probability targets are not supported (a [rows, classes] target is the size of the logits "
                          "the fused plan avoids): use index targets, or LinearPlan + CrossEntropyPlan");
  if (d.target != CrossEntropyTarget::Index) return invalid(kName, "target ", d.target, " is not a CrossEntropyTarget");
  if (d.index_dtype != DType::I32 && d.index_dtype != DType::I64)
    return invalid(kName, "index_dtype ", d.index_dtype, " must be i32 or i64");
  if (d.reduction != LossReduction::None && d.reduction != LossReduction::Mean && d.reduction != LossReduction::Sum)
    return invalid(kName, "reduction ", d.reduction, " is not a LossReduction");
  if (!std::isfinite(d.label_smoothing) || d.label_smoothing < 0 || d.label_smoothing > 1)
    return invalid(kName, "label_smoothing ", d.label_smoothing, " must be in [0, 1]");
  if (!std::isfinite(d.z_loss) || d.z_loss < 0) return invalid(kName, "z_loss ", d.z_loss, " must be finite and >= 0");
  if (d.loss_dtype != DType::F32 && d.loss_dtype != d.dtype)
    return invalid(kName, "loss_dtype ", d.loss_dtype, " must be f32 or the dtype ", d.dtype);
  if (d.need_db && !d.has_bias)
    return invalid(kName, "need_db is set but has_bias is false (there is no bias to differentiate)");
  if (d.chunk_rows < 0) return invalid(kName, "chunk_rows ", d.chunk_rows, " must be >= 0 (0: the default rule)");
  return Status::ok();
}

// An inner plan's error, named as ours ("FusedLinearCrossEntropyPlan: LinearPlan: ...").
Status inner_error(const Status& st) {
  if (st.is_ok()) return st;
  return Status(st.code(), std::string(kName) + ": " + st.message(), st.needed(), st.got());
}

// The CUDA layout rule of the GEMM operands (LinearPlan / LinearBackwardPlan):
// a unit stride along one axis of each matrix; Unsupported naming the tensor.
Status gemm_layout(std::initializer_list<std::pair<const char*, TensorRef>> mats) {
  for (const auto& [name, t] : mats) {
    if (!t.data || t.shape.rank != 2 || t.shape[0] <= 1 || t.shape[1] <= 1) continue;
    const bool row_major = t.strides[1] == 1 && t.strides[0] >= t.shape[1];
    const bool col_major = t.strides[0] == 1 && t.strides[1] >= t.shape[0];
    if (!row_major && !col_major)
      return unsupported(kName, name, " strides ", t.strides, " for shape ", t.shape,
                         ": the CUDA GEMMs need a unit stride along one axis (pass a contiguous view)");
  }
  return Status::ok();
}

baracuda::detail::ArgCheck check_args(const FusedLinearCrossEntropyPlan& plan, const FusedLinearCrossEntropyArgs& a) {
  const FusedLinearCrossEntropyDescriptor& d = plan.descriptor();
  const Dims hs{d.rows, d.in_features}, ws{d.classes, d.in_features}, vs{d.classes}, ls = loss_shape_of(d);
  baracuda::detail::ArgCheck c(plan);
  c.input("hidden", a.hidden, d.dtype, hs)
      .input("weight", a.weight, d.dtype, ws)
      .optional_input("bias", a.bias, d.has_bias, d.dtype, vs, "bias is missing (descriptor.has_bias is true)",
                      "bias is given but descriptor.has_bias is false")
      .input("target", a.target, d.index_dtype, Dims{d.rows})
      .optional_input("class_weight", a.class_weight, d.has_weight, d.dtype, vs,
                      "class_weight is missing (descriptor.has_weight is true)",
                      "class_weight is given but descriptor.has_weight is false")
      .optional_input("dloss", a.dloss, any_grad(d), d.loss_dtype, ls,
                      "dloss is missing (a gradient is asked for: need_dh, need_dw or need_db; it is an input of "
                      "the fused plan)",
                      "dloss is given but no gradient is asked for (need_dh, need_dw and need_db are false)")
      .output("loss", a.loss, d.loss_dtype, ls);
  // lse is optional: a view never filled in means "not wanted"; one given must match.
  if (a.lse.data != nullptr || a.lse.shape.rank != 0) c.output("lse", a.lse, lse_dtype_of(d), Dims{d.rows});
  c.optional_output("dhidden", a.dhidden, d.need_dh, d.dtype, hs, "dhidden is given but need_dh is false")
      .optional_output("dweight", a.dweight, d.need_dw, d.dtype, ws, "dweight is given but need_dw is false")
      .optional_output("dbias", a.dbias, d.need_db, d.dtype, vs, "dbias is given but need_db is false")
      .disjoint();
  if (plan.sku().backend != Backend::CpuReference)
    c.rule([&] {
      return gemm_layout({{"hidden", a.hidden}, {"weight", a.weight}, {"dhidden", a.dhidden}, {"dweight", a.dweight}});
    });
  return c;
}

// The cross-entropy launch over all N rows (pointers bound by run(); at
// select() none, for the path of a chunk of contiguous aligned stand-ins).
cuda::Launch ce_launch(const PlanBase& plan, const FusedLinearCrossEntropyDescriptor& d) {
  cuda::Launch l;
  l.mode = any_grad(d) ? cuda::Mode::Fused : cuda::Mode::Forward;
  l.dtype = d.dtype;
  l.index_dtype = d.index_dtype;
  l.loss_f32 = d.loss_dtype == DType::F32;
  l.has_weight = d.has_weight;
  l.eps = d.label_smoothing;
  l.z = d.z_loss;
  l.ignore_index = d.ignore_index;
  l.reduction = d.reduction;
  l.rows = d.rows;
  l.classes = d.classes;
  l.sm_count = baracuda::detail::PlanAccess::sm_count(plan);
  l.arch = plan.sku().arch;
  return l;
}

// Bytes of the cross-entropy scratch: divisor (Mean), row losses (Mean / Sum),
// then split partials for `split_rows` rows; the offsets follow this order.
struct CeScratch {
  int64_t divisor = -1, row_loss = -1, partials = -1;
  size_t bytes = 0;
};
CeScratch ce_scratch(const FusedLinearCrossEntropyDescriptor& d, int64_t split_rows) {
  CeScratch s;
  int64_t at = 0;
  if (d.reduction == LossReduction::Mean) {
    s.divisor = at;
    at += 16;
  }
  if (d.reduction != LossReduction::None) {
    s.row_loss = at;
    at += (d.rows * 8 + 15) / 16 * 16;
  }
  if (split_rows > 0) {
    s.partials = at;
    const int64_t chunks = (d.classes + cuda::kSplitChunk - 1) / cuda::kSplitChunk;
    at += split_rows * chunks * cuda::kPartialBytes + split_rows * 8;
  }
  s.bytes = static_cast<size_t>(at);
  return s;
}

// The largest of the chunk sizes {n, tail} that takes the split CE path (0: none).
int64_t split_rows_of(const FusedLinearCrossEntropyDescriptor& d, int sm_count, int64_t n, int64_t tail) {
  int64_t r = 0;
  for (int64_t rows : {n, tail})
    if (rows > 0 && d.classes >= cuda::kSplitMinLen && rows < sm_count) r = std::max(r, rows);
  return r;
}

}  // namespace
}  // namespace loss::detail

// The plan's CUDA internals (a friend): the inner plans' selection and the chunk loop.
struct FusedLinearCrossEntropyAccess {
  using Plan = FusedLinearCrossEntropyPlan;

  // Selects the inner plans for chunks of n rows (k chunks, the last `tail`
  // rows); returns their largest workspace.
  static Result<size_t> select_inner(Plan& p, const Stream& stream, const PlanPreference& pref, int64_t n, int64_t k) {
    const FusedLinearCrossEntropyDescriptor& d = p.desc_;
    const int64_t tail = k > 0 ? d.rows - (k - 1) * n : 0;
    PlanPreference ip;
    ip.require_deterministic = pref.require_deterministic;
    ip.allow_reduced_precision = pref.allow_reduced_precision;
    auto linear = [&](int64_t rows) {
      LinearDescriptor f;
      f.dtype = d.dtype;
      f.x_shape = Dims{rows, d.in_features};
      f.out_features = d.classes;
      f.has_bias = d.has_bias;
      return f;
    };
    auto backward = [&](int64_t rows, bool accumulate) {
      LinearBackwardDescriptor b;
      b.forward = linear(rows);
      b.need_dx = d.need_dh;
      b.need_dw = d.need_dw;
      b.need_db = d.need_db;
      b.accumulate = accumulate;
      return b;
    };
    size_t ws = 0;
    p.fwd_full_ = LinearPlan();
    p.fwd_tail_ = LinearPlan();
    p.bwd_first_ = LinearBackwardPlan();
    p.bwd_acc_ = LinearBackwardPlan();
    p.bwd_tail_ = LinearBackwardPlan();
    if (n > 0) {
      auto f = LinearPlan::select(stream, linear(n), ip);
      if (!f) return loss::detail::inner_error(f.status());
      ws = std::max(ws, f->workspace_size());
      p.fwd_full_ = std::move(*f);
    }
    if (tail > 0 && tail != n) {
      auto f = LinearPlan::select(stream, linear(tail), ip);
      if (!f) return loss::detail::inner_error(f.status());
      ws = std::max(ws, f->workspace_size());
      p.fwd_tail_ = std::move(*f);
    }
    if (!loss::detail::any_grad(d)) return ws;
    // Chunk 0 overwrites dW / db (also for N = 0: zeros); later chunks add (beta = 1).
    auto b = LinearBackwardPlan::select(stream, backward(n, false), ip);
    if (!b) return loss::detail::inner_error(b.status());
    ws = std::max(ws, b->workspace_size());
    p.bwd_first_ = std::move(*b);
    if (k >= 3 || (k == 2 && tail == n)) {
      auto a = LinearBackwardPlan::select(stream, backward(n, true), ip);
      if (!a) return loss::detail::inner_error(a.status());
      ws = std::max(ws, a->workspace_size());
      p.bwd_acc_ = std::move(*a);
    }
    if (k >= 2 && tail != n) {
      auto a = LinearBackwardPlan::select(stream, backward(tail, true), ip);
      if (!a) return loss::detail::inner_error(a.status());
      ws = std::max(ws, a->workspace_size());
      p.bwd_tail_ = std::move(*a);
    }
    return ws;
  }

  // The CUDA setup of select(): chunk rule, inner plans, workspace layout, variant.
  static Status setup_cuda(Plan& p, const Stream& stream, const PlanPreference& pref) {
    using namespace loss::detail;
    const FusedLinearCrossEntropyDescriptor& d = p.desc_;
    const size_t es = dtype_size(d.dtype);
    const int sm = baracuda::detail::PlanAccess::sm_count(p);
    // Bytes that do not grow with the chunk: the CE scratch (split partials
    // bounded by SMs - 1 rows), the inner workspace, the alignment pads. The
    // inner workspace is first unknown (0), then the one of the last attempt.
    size_t inner_est = 0;
    for (int attempt = 0; attempt < 4; ++attempt) {
      const int64_t split_bound = d.classes >= loss::cuda::kSplitMinLen ? std::max(sm - 1, 0) : 0;
      const size_t fixed = 3 * kAlign + align_up(ce_scratch(d, split_bound).bytes) + inner_est;
      auto ch = linear_ce_chunks(kName, d.rows, d.classes, es, d.workspace_limit, d.chunk_rows, fixed);
      if (!ch) return ch.status();
      int64_t n = ch->rows;
      // A later attempt that still does not fit steps down by the granule.
      if (attempt >= 2 && d.chunk_rows == 0 && n > ch->granule) n -= ch->granule * (attempt - 1);
      const int64_t k = n > 0 ? (d.rows + n - 1) / n : 0;
      auto inner = select_inner(p, stream, pref, n, k);
      if (!inner) return inner.status();
      const int64_t tail = k > 0 ? d.rows - (k - 1) * n : 0;
      p.split_rows_ = split_rows_of(d, sm, n, tail);
      const CeScratch ce = ce_scratch(d, p.split_rows_);
      p.chunk_ = n;
      p.chunks_ = k;
      p.ce_offset_ = align_up(static_cast<size_t>(n * d.classes) * es);
      p.inner_offset_ = p.ce_offset_ + align_up(ce.bytes);
      const size_t total = kAlign + p.inner_offset_ + *inner;  // + the pad that aligns the base
      if (d.workspace_limit == 0 || total <= d.workspace_limit) {
        baracuda::detail::PlanAccess::set_workspace(p, total);
        return name_variant(p);
      }
      if (d.chunk_rows > 0)
        return invalid(kName, "chunk_rows ", d.chunk_rows, " needs ", total, " workspace bytes, over workspace_limit ",
                       d.workspace_limit);
      inner_est = *inner;
    }
    return invalid(kName, "workspace_limit ", d.workspace_limit, " leaves no chunk size that fits");
  }

  static Status name_variant(Plan& p) {
    using namespace loss::detail;
    std::string v = "chunks=" + std::to_string(p.chunk_) + "x" + std::to_string(p.chunks_);
    if (p.chunk_ > 0) {
      loss::cuda::Launch l = ce_launch(p, p.desc_);
      static const char aligned[16] alignas(16) = {};
      l.rows = p.chunk_;
      l.logits = aligned;
      l.logits_rs = p.desc_.classes;
      l.dlogits = const_cast<char*>(aligned);
      l.dlogits_rs = p.desc_.classes;
      choose_path(l);
      v += " ce:" + variant_of(l);
      v += " fwd:" + p.fwd_full_.sku().variant;
    }
    if (!p.bwd_first_.empty()) v += " bwd:" + p.bwd_first_.sku().variant;
    if (!p.bwd_acc_.empty()) v += " bwd+:" + p.bwd_acc_.sku().variant;
    else if (!p.bwd_tail_.empty()) v += " bwd+:" + p.bwd_tail_.sku().variant;
    baracuda::detail::PlanAccess::sku(p).variant = v;
    return Status::ok();
  }

#ifdef BARACUDA_WITH_CUDA
  // The chunk loop (loss.hpp): divisor over all rows, then per chunk logits ->
  // CE in place -> backward GEMMs, then the Mean / Sum.
  static Status run_cuda(const Plan& p, const Stream& stream, Workspace ws, const FusedLinearCrossEntropyArgs& a) {
    using namespace loss::detail;
    const FusedLinearCrossEntropyDescriptor& d = p.desc_;
    const int64_t N = d.rows, D = d.in_features, V = d.classes;
    const size_t es = dtype_size(d.dtype);
    const Device dev = stream.device();
    auto* base = reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(ws.ptr) + kAlign - 1) / kAlign * kAlign);
    unsigned char* chunk = base;
    unsigned char* ce = base + p.ce_offset_;
    unsigned char* inner = base + p.inner_offset_;
    const size_t used = static_cast<size_t>(inner - static_cast<unsigned char*>(ws.ptr));
    const Workspace inner_ws{inner, ws.bytes > used ? ws.bytes - used : 0};
    const CeScratch sc = ce_scratch(d, p.split_rows_);

    loss::cuda::Launch L = ce_launch(p, d);
    auto s0 = [](const auto& t) { return t.shape.rank >= 1 ? t.strides[0] : int64_t{0}; };
    L.target = a.target.data;
    L.target_s = s0(a.target);
    L.weight = a.class_weight.data;
    L.weight_s = s0(a.class_weight);
    L.loss = a.loss.data;
    L.loss_s = s0(a.loss);
    L.lse = a.lse.data;
    L.lse_s = s0(a.lse);
    L.dloss = a.dloss.data;
    L.dloss_s = s0(a.dloss);
    L.divisor = sc.divisor >= 0 ? ce + sc.divisor : nullptr;
    L.row_loss = sc.row_loss >= 0 ? ce + sc.row_loss : nullptr;
    L.stream = stream.native_handle();
    if (d.reduction == LossReduction::Mean) BARACUDA_RETURN_IF_ERROR(inner_error(loss::cuda::launch_divisor(L)));

    const bool grad = any_grad(d);
    // Rows [r0, r0 + n) of a [rows, cols] view (any strides).
    auto rows_of = [&](const auto& t, int64_t r0, int64_t n, int64_t cols) {
      using View = std::decay_t<decltype(t)>;
      const int64_t rs = t.strides[0], cs = t.strides[1];
      const int64_t span = n == 0 || cols == 0 ? 0 : (n - 1) * rs + (cols - 1) * cs + 1;
      auto* ptr = static_cast<std::conditional_t<std::is_same_v<View, TensorMut>, unsigned char*, const unsigned char*>>(t.data);
      return View(ptr ? ptr + r0 * rs * static_cast<int64_t>(es) : ptr, t.dtype, t.device, Dims{n, cols}, Dims{rs, cs}, span);
    };
    for (int64_t c = 0; c < p.chunks_; ++c) {
      const int64_t r0 = c * p.chunk_, n = std::min(p.chunk_, N - r0);
      const bool full = n == p.chunk_;
      const TensorMut logits(chunk, d.dtype, dev, Dims{n, V}, Dims{V, 1}, n * V);
      const TensorRef h = rows_of(a.hidden, r0, n, D);
      LinearArgs la;
      la.x = h;
      la.weight = a.weight;
      la.bias = a.bias;
      la.y = logits;
      BARACUDA_RETURN_IF_ERROR(inner_error((full ? p.fwd_full_ : p.fwd_tail_).run(stream, inner_ws, la)));

      loss::cuda::Launch Lc = loss::cuda::rows_slice(L, r0, n);
      Lc.logits = chunk;
      Lc.logits_rs = V;
      if (grad) {
        Lc.dlogits = chunk;  // in place
        Lc.dlogits_rs = V;
      }
      choose_path(Lc);
      Lc.partials = Lc.path == loss::cuda::Path::Split ? ce + sc.partials : nullptr;
      BARACUDA_RETURN_IF_ERROR(inner_error(loss::cuda::launch_rows(Lc)));
      if (!grad) continue;

      LinearBackwardArgs ba;
      ba.dy = logits;
      if (d.need_dw) ba.x = h;
      if (d.need_dh) {
        ba.weight = a.weight;
        ba.dx = rows_of(a.dhidden, r0, n, D);
      }
      if (d.need_dw) ba.dw = a.dweight;
      if (d.need_db) ba.db = a.dbias;
      const LinearBackwardPlan& bwd = c == 0 ? p.bwd_first_ : (full ? p.bwd_acc_ : p.bwd_tail_);
      BARACUDA_RETURN_IF_ERROR(inner_error(bwd.run(stream, inner_ws, ba)));
    }
    if (N == 0 && grad && (d.need_dw || d.need_db)) {
      // No chunk: dW and db are sums over no rows, zeros (the K = 0 pass of the first backward).
      LinearBackwardArgs ba;
      ba.dy = TensorRef(chunk, d.dtype, dev, Dims{0, V}, Dims{V, 1}, 0);
      if (d.need_dw) {
        ba.x = rows_of(a.hidden, 0, 0, D);
        ba.dw = a.dweight;
      }
      if (d.need_dh) {
        ba.weight = a.weight;
        ba.dx = rows_of(a.dhidden, 0, 0, D);
      }
      if (d.need_db) ba.db = a.dbias;
      BARACUDA_RETURN_IF_ERROR(inner_error(p.bwd_first_.run(stream, inner_ws, ba)));
    }
    if (d.reduction != LossReduction::None) {
      L.scalar_loss = a.loss.data;
      BARACUDA_RETURN_IF_ERROR(inner_error(loss::cuda::launch_reduce(L)));
    }
    return Status::ok();
  }
#endif
};

using namespace loss::detail;

Result<FusedLinearCrossEntropyPlan> FusedLinearCrossEntropyPlan::select(const Stream& stream,
                                                                        const FusedLinearCrossEntropyDescriptor& desc,
                                                                        const PlanPreference& pref) {
  FusedLinearCrossEntropyPlan plan;
  BARACUDA_RETURN_IF_ERROR(validate(desc));
  plan.desc_ = desc;
  auto be = baracuda::detail::setup_plan(plan, kName, kLceFamily, stream, pref, desc.dtype,
                                         any_grad(desc) ? "linear_cross_entropy.forward_backward"
                                                        : "linear_cross_entropy.forward");
  if (!be) return be.status();
  if (be->backend == Backend::CpuReference) {
    // The reference works row by row: no chunk buffer, no workspace.
    plan.chunk_ = desc.rows;
    plan.chunks_ = desc.rows > 0 ? 1 : 0;
    return plan;
  }
  BARACUDA_RETURN_IF_ERROR(FusedLinearCrossEntropyAccess::setup_cuda(plan, stream, pref));
  return plan;
}

Dims FusedLinearCrossEntropyPlan::loss_shape() const { return loss_shape_of(desc_); }
DType FusedLinearCrossEntropyPlan::lse_dtype() const { return lse_dtype_of(desc_); }
size_t FusedLinearCrossEntropyPlan::logits_bytes() const {
  return static_cast<size_t>(desc_.rows) * static_cast<size_t>(desc_.classes) * dtype_size(desc_.dtype);
}

Status FusedLinearCrossEntropyPlan::can_implement(const FusedLinearCrossEntropyArgs& a) const {
  return check_args(*this, a).status();
}

Result<KernelSku> FusedLinearCrossEntropyPlan::sku_for(const Stream& stream, Workspace ws,
                                                       const FusedLinearCrossEntropyArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, a));
}

Status FusedLinearCrossEntropyPlan::run(const Stream& stream, Workspace ws, const FusedLinearCrossEntropyArgs& a) const {
  auto cpu = [&] {
    loss::ref::LinearCe p;
    p.plan = name();
    p.d = desc_;
    p.a = a;
    return loss::ref::run_linear_ce(p);
  };
  auto gpu = [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
    return FusedLinearCrossEntropyAccess::run_cuda(*this, stream, ws, a);
#else
    return baracuda::detail::no_cuda(name());
#endif
  };
  return baracuda::detail::run_plan(*this, stream, ws, check_args(*this, a), cpu, gpu);
}

}  // namespace baracuda
