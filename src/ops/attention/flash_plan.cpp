// FlashSdpaPlan / FlashSdpaBackwardPlan: descriptor validation, argument
// checks, backend choice and dispatch (CPU reference, SIMT kernels for f32/f64,
// tensor-core kernels for f16/bf16).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "core/capture.hpp"
#include "core/plan_shell.hpp"
#include "ops/attention/common.hpp"
#include "ops/attention/reference.hpp"
#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>

#include "ops/attention/cudnn_sdpa.hpp"
#include "ops/attention/flash_launch.hpp"
#endif

namespace baracuda {

using namespace attention::detail;

namespace {

constexpr const char* kFwd = "FlashSdpaPlan";
constexpr const char* kBwd = "FlashSdpaBackwardPlan";

// Expected shapes of the tensors.
struct Shapes {
  Dims q, kv, y, lse, mask, alibi, cu;
};
Shapes shapes_of(const FlashSdpaDescriptor& d) {
  Shapes s;
  if (d.varlen) {
    s.q = {d.total_q, d.heads, d.head_dim};
    s.kv = {d.total_kv, d.kv_heads, d.head_dim};
    s.lse = {d.heads, d.total_q};
    s.cu = {d.batch + 1};
  } else {
    s.q = {d.batch, d.heads, d.q_len, d.head_dim};
    s.kv = {d.batch, d.kv_heads, d.kv_len, d.head_dim};
    s.lse = {d.batch, d.heads, d.q_len};
  }
  s.y = s.q;
  s.mask = {d.batch, d.heads, d.q_len, d.kv_len};
  if (d.alibi == AlibiMode::PerHead) s.alibi = {d.heads};
  if (d.alibi == AlibiMode::PerBatchHead) s.alibi = {d.batch, d.heads};
  return s;
}

Status validate(const char* plan, const FlashSdpaDescriptor& d, FlashSdpaDescriptor* out) {
  const std::string p = std::string(plan) + ": ";
  auto bad = [&](const std::string& m) { return Status(StatusCode::InvalidProblem, p + m); };
  BARACUDA_RETURN_IF_ERROR(validate_problem(plan, d.dtype, d.batch, d.heads, d.kv_heads, d.q_len, d.kv_len, d.scale));
  if (d.q_len > INT32_MAX || d.kv_len > INT32_MAX || d.batch > INT32_MAX || d.heads > 65535)
    return Status(StatusCode::Unsupported, p + "q_len, kv_len and batch must fit in int32 and heads <= 65535");
  if (d.head_dim < 32 || d.head_dim > 256 || d.head_dim % 8 != 0)
    return Status(StatusCode::Unsupported, p + "head_dim " + std::to_string(d.head_dim) + " must be in [32, 256] and a multiple of 8");
  if (d.window_left < -1 || d.window_right < -1)
    return bad("window_left (" + std::to_string(d.window_left) + ") and window_right (" + std::to_string(d.window_right) +
               ") must be >= 0, or -1 for unbounded");
  if (d.varlen && (d.total_q > INT32_MAX || d.total_kv > INT32_MAX))
    return Status(StatusCode::Unsupported, p + "total_q and total_kv must fit in int32");
  if (!(d.softcap >= 0) || !std::isfinite(d.softcap))
    return bad("softcap " + std::to_string(d.softcap) + " must be finite and >= 0 (0 = off)");
  if (static_cast<int>(d.alibi) > static_cast<int>(AlibiMode::PerBatchHead))
    return bad("unknown AlibiMode " + std::to_string(static_cast<int>(d.alibi)));
  if (static_cast<int>(d.align) > static_cast<int>(DiagonalAlign::BottomRight))
    return bad("unknown DiagonalAlign " + std::to_string(static_cast<int>(d.align)));
  if (d.varlen) {
    if (d.has_mask)
      return Status(StatusCode::Unsupported, p + "an additive mask is not supported with varlen (packed) batches");
    if (d.total_q < 0 || d.total_kv < 0)
      return bad("total_q (" + std::to_string(d.total_q) + ") and total_kv (" + std::to_string(d.total_kv) + ") must be >= 0");
  }
  const Shapes s = shapes_of(d);
  for (const auto& [what, shape] : {std::pair<const char*, const Dims*>{"q shape", &s.q}, {"k/v shape", &s.kv}, {"lse shape", &s.lse}})
    BARACUDA_RETURN_IF_ERROR(baracuda::detail::check_shape(plan, what, *shape));
  *out = d;
  if (!out->scale) out->scale = 1.0 / std::sqrt(static_cast<double>(d.head_dim));
  // A window at least q_len + kv_len wide excludes no key of any row (the
  // diagonal offset is within +-(q_len + kv_len)): store it as that width so
  // no kernel's `row + window` can overflow, whatever the caller passed.
  const int64_t widest = d.q_len + d.kv_len;
  if (out->window_left > widest) out->window_left = widest;
  if (out->window_right > widest) out->window_right = widest;
  return Status::ok();
}

bool tensor_cores(DType t) { return t == DType::F16 || t == DType::BF16; }

#ifdef BARACUDA_WITH_CUDA
attention::cuda::FlashShape flash_shape(const FlashSdpaDescriptor& d, const baracuda::detail::FlashHint& hint) {
  attention::cuda::FlashShape s;
  s.dtype = d.dtype;
  s.batch = d.batch;
  s.heads = d.heads;
  s.kv_heads = d.kv_heads;
  s.q_len = d.q_len;
  s.kv_len = d.kv_len;
  s.head_dim = d.head_dim;
  s.varlen = d.varlen;
  s.total_q = d.total_q;
  s.total_kv = d.total_kv;
  // Same rule as the kernels' dispatch (scale resolved by validate()).
  s.features = d.has_mask || d.alibi != AlibiMode::None || d.softcap > 0.0 || !attention::cuda::scale_folds(d.scale.value_or(1.0));
  s.hint = hint;
  return s;
}

// (sb, sh, ss) of a q-like view: dense [B,H,S,D] or varlen [T,H,D].
void seq_strides(const TensorRef& t, bool varlen, int64_t* sb, int64_t* sh, int64_t* ss) {
  if (varlen) {
    *sb = 0;
    *ss = t.strides[0];
    *sh = t.strides[1];
  } else {
    *sb = t.strides[0];
    *sh = t.strides[1];
    *ss = t.strides[2];
  }
}

void fill_common(const FlashSdpaDescriptor& d, attention::cuda::FlashFwdParams& p, const TensorRef& q, const TensorRef& k,
                 const TensorRef& v, const TensorRef& lse, const TensorRef& mask, const TensorRef& alibi,
                 const TensorRef& cu_q, const TensorRef& cu_kv) {
  p.dtype = d.dtype;
  p.q = q.data;
  p.k = k.data;
  p.v = v.data;
  seq_strides(q, d.varlen, &p.q_sb, &p.q_sh, &p.q_ss);
  seq_strides(k, d.varlen, &p.k_sb, &p.k_sh, &p.k_ss);
  seq_strides(v, d.varlen, &p.v_sb, &p.v_sh, &p.v_ss);
  if (d.varlen) {
    p.lse_sb = 0;
    p.lse_sh = lse.strides[0];
    p.lse_ss = lse.strides[1];
    p.cu_q = static_cast<const int32_t*>(cu_q.data);
    p.cu_kv = static_cast<const int32_t*>(cu_kv.data);
    p.total_q = d.total_q;
    p.total_kv = d.total_kv;
  } else {
    p.lse_sb = lse.strides[0];
    p.lse_sh = lse.strides[1];
    p.lse_ss = lse.strides[2];
  }
  p.batch = static_cast<int>(d.batch);
  p.heads = static_cast<int>(d.heads);
  p.kv_heads = static_cast<int>(d.kv_heads);
  p.q_len = static_cast<int>(d.q_len);
  p.kv_len = static_cast<int>(d.kv_len);
  p.head_dim = static_cast<int>(d.head_dim);
  p.scale = *d.scale;
  p.softcap = d.softcap;
  p.causal = d.causal;
  p.bottom_right = d.align == DiagonalAlign::BottomRight;
  p.window_left = d.window_left;
  p.window_right = d.window_right;
  if (d.alibi != AlibiMode::None) {
    p.alibi = static_cast<const float*>(alibi.data);
    if (d.alibi == AlibiMode::PerHead) {
      p.alibi_sb = 0;
      p.alibi_sh = alibi.strides[0];
    } else {
      p.alibi_sb = alibi.strides[0];
      p.alibi_sh = alibi.strides[1];
    }
  }
  if (d.has_mask) {
    p.mask = static_cast<const float*>(mask.data);
    p.m_sb = mask.strides[0];
    p.m_sh = mask.strides[1];
    p.m_sq = mask.strides[2];
    p.m_sk = mask.strides[3];
  }
}
#endif

#ifdef BARACUDA_WITH_CUDA
// Default route for f16/bf16 when no backend is asked for: cuDNN's fused
// attention wherever it supports the problem. Measured on the H200
// (docs/BENCHMARKS.md, bench/results/attention_*): cuDNN is faster than our
// mma.sync kernels on every benchmarked shape, forward and backward; the
// bespoke kernels take everything cuDNN does not support (masks, ALiBi,
// softcap, windows, varlen, f32/f64, ...). Revisit when the Hopper path lands.
// Exception: decode-shaped forwards (q_len <= 64) go to our split-KV kernel,
// measured 146 us vs cuDNN 165 us (B16 H32 Hk8 Q1 K8192 D128) and 46.5 vs
// 107.5 us (B8 H32 Hk8 Q4 K4096).
bool default_prefers_cudnn(const FlashSdpaDescriptor& d, bool backward) {
  if (!(d.dtype == DType::F16 || d.dtype == DType::BF16)) return false;
  if (!backward && d.q_len <= 64) return false;
  return true;
}

// Decides the cuDNN route at select(): returns the plan info when cuDNN will
// run the problem, nothing when the plan stays bespoke, or an error when cuDNN
// was required and cannot.
struct CudnnChoice {
  bool use = false;
  bool required = false;
  attention::cudnn_sdpa::PlanInfo info;
};
Result<CudnnChoice> choose_cudnn(const char* plan, const Stream& stream, const FlashSdpaDescriptor& d,
                                 const BackendChoice& be, const PlanPreference& pref, bool backward) {
  CudnnChoice c;
  const bool asked = pref.backend && *pref.backend == Backend::CuDnn;
  c.required = asked && pref.require_backend;
  const bool preferred_elsewhere = pref.backend && !asked;
  if (be.backend != Backend::Bespoke || preferred_elsewhere || !(asked || default_prefers_cudnn(d, backward))) return c;
  std::string why;
  Status st = Status::ok();
  if (baracuda::detail::stream_is_capturing(stream)) {  // building a cuDNN plan allocates and compiles
    st = Status(StatusCode::Unsupported, "the stream is capturing a CUDA graph and building a cuDNN plan is not capture-safe "
                                         "(select the plan before capturing)");
  } else if (!attention::cudnn_sdpa::supports(d, be.arch, backward, &why)) {
    st = Status(StatusCode::Unsupported, why);
  } else {
    auto info = backward ? attention::cudnn_sdpa::prepare_backward(attention::cudnn_sdpa::canonical_backward(d), pref.require_deterministic)
                         : attention::cudnn_sdpa::prepare_forward(attention::cudnn_sdpa::canonical_forward(d));
    if (!info) {
      st = info.status();
    } else if (pref.require_deterministic && !info->deterministic) {
      st = Status(StatusCode::Unsupported, "cuDNN's engine for this problem is not deterministic");
    } else {
      c.use = true;
      c.info = *info;
      return c;
    }
  }
  if (c.required)
    return Status(st.code(), std::string(plan) + ": backend cudnn required but it cannot run this problem: " + st.message());
  return c;  // stay bespoke
}
#endif

// The select flow both plans share: validate -> backend (with the cuDNN route
// allowed) -> bespoke variant and workspace -> the cuDNN decision. Fills the
// plan's shell fields and the cuDNN flags.
struct FlashSetup {
  FlashSdpaDescriptor desc;
  bool use_cudnn = false;
  bool cudnn_required = false;
  baracuda::detail::FlashHint hint;
  KernelSku fallback_sku;  // the bespoke SKU (cuDNN plans fall back to it at run())
};

// The environment default of PlanPreference::variant, read at select() only.
std::string env_variant(bool backward) {
  std::string v;
  auto add = [&](const char* key, const char* env) {
    const char* e = std::getenv(env);
    if (e == nullptr || *e == 0) return;
    if (!v.empty()) v += ',';
    v.append(key).append("=").append(e);
  };
  if (backward) {
    add("wgmma", "BARACUDA_FLASH_BWD_WGMMA");
  } else {
    add("tile", "BARACUDA_FLASH_FWD_TILE");
    add("splits", "BARACUDA_FLASH_FWD_SPLITS");
    add("wgmma", "BARACUDA_FLASH_FWD_WGMMA");
  }
  return v;
}

// Parses "key=value,key=value" (keys: tile, splits, wgmma; the backward plan
// takes wgmma only). Errors name the plan and the offending item.
Result<baracuda::detail::FlashHint> parse_hint(const char* plan, const std::string& spec, bool backward) {
  baracuda::detail::FlashHint h;
  size_t pos = 0;
  while (pos < spec.size()) {
    size_t end = spec.find(',', pos);
    if (end == std::string::npos) end = spec.size();
    const std::string item = spec.substr(pos, end - pos);
    pos = end + 1;
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq), val = eq == std::string::npos ? "" : item.substr(eq + 1);
    char tail = 0;
    if (key == "tile" && !backward) {
      int bm = 0, bn = 0, w = 0, st = 0;
      if (std::sscanf(val.c_str(), "%dx%dw%ds%d%c", &bm, &bn, &w, &st, &tail) != 4 || bm <= 0 || bn <= 0 || w <= 0 ||
          st <= 0 || bm > 1024 || bn > 1024 || w > 32 || st > 8)
        return baracuda::detail::invalid(plan, "variant hint '", item, "': tile must look like 128x64w4s2");
      h.tile_bm = static_cast<int16_t>(bm);
      h.tile_bn = static_cast<int16_t>(bn);
      h.tile_warps = static_cast<int16_t>(w);
      h.tile_stages = static_cast<int16_t>(st);
    } else if (key == "splits" && !backward) {
      int n = -1;
      if (std::sscanf(val.c_str(), "%d%c", &n, &tail) != 1 || n < 0)
        return baracuda::detail::invalid(plan, "variant hint '", item, "': splits must be an integer >= 0");
      h.splits = static_cast<int16_t>(n > 64 ? 64 : n);
    } else if (key == "wgmma") {
      if (val != "0" && val != "1") return baracuda::detail::invalid(plan, "variant hint '", item, "': wgmma must be 0 or 1");
      h.wgmma = val == "1";
    } else {
      return baracuda::detail::invalid(plan, "variant hint '", item, "': unknown key (", backward ? "wgmma" : "tile, splits, wgmma",
                             ")");
    }
  }
  return h;
}
Result<FlashSetup> setup_flash(PlanBase& plan, const char* name, const Stream& stream, const FlashSdpaDescriptor& desc,
                               const PlanPreference& pref, bool backward) {
  FlashSetup f;
  BARACUDA_RETURN_IF_ERROR(validate(name, desc, &f.desc));
  if (backward && !desc.save_lse)
    return baracuda::detail::invalid(name, "descriptor.save_lse is false, but the backward reads the forward's lse "
                                           "(run the forward with save_lse = true and pass its lse)");
  auto hint = parse_hint(name, pref.variant.empty() ? env_variant(backward) : pref.variant, backward);
  if (!hint) return hint.status();
  f.hint = *hint;
  const FlashSdpaDescriptor& d = f.desc;
  baracuda::detail::LibraryRoutes routes;
  routes.cudnn = true;
  auto be = baracuda::detail::setup_plan(plan, name, kFamily, stream, pref, d.dtype,
                               backward ? "flash_sdpa.backward" : "flash_sdpa.forward", routes);
  if (!be) return be.status();
  if (be->backend == Backend::Bespoke && tensor_cores(d.dtype) && be->arch < 80)
    return baracuda::detail::unsupported(name, "f16/bf16 flash attention needs tensor cores of sm_80 or newer, device is sm_", be->arch);
#ifdef BARACUDA_WITH_CUDA
  KernelSku& sku = baracuda::detail::PlanAccess::sku(plan);
  size_t ws = 0;
  if (be->backend == Backend::Bespoke) {
    const auto shape = flash_shape(d, f.hint);
    if (!tensor_cores(d.dtype)) {
      sku.variant = "simt";
      ws = backward ? attention::cuda::backward_workspace_bytes_simt(shape) : 0;
    } else if (backward) {
      sku.variant = attention::cuda::backward_mma_variant(shape, be->arch);
      ws = attention::cuda::backward_workspace_bytes_mma(shape);
    } else {
      sku.variant = attention::cuda::forward_mma_variant(shape, be->arch, be->sm_count);
      // The split-KV path's scratch (0 unless the shape takes it); run() passes
      // the workspace on and the kernels fall back without it.
      ws = attention::cuda::forward_workspace_bytes_mma(shape, be->arch, be->sm_count);
    }
  }
  auto cu = choose_cudnn(name, stream, d, *be, pref, backward);
  if (!cu) return cu.status();
  if (cu->use) {
    // Keep the bespoke workspace too: run() falls back to the bespoke kernels
    // when cuDNN refuses the actual strides (unless cuDNN was required).
    f.use_cudnn = true;
    f.cudnn_required = cu->required;
    f.fallback_sku = sku;
    ws = std::max(ws, cu->info.workspace_bytes);
    BackendChoice cb = *be;
    cb.backend = Backend::CuDnn;
    sku = baracuda::detail::make_sku(cb, d.dtype, sku.op, cu->info.engine);
    sku.precision.deterministic = cu->info.deterministic;
  }
  // A CPU plan keeps what setup_plan gave it (0, or the strict-mode token).
  if (be->backend != Backend::CpuReference) baracuda::detail::PlanAccess::set_workspace(plan, ws);
#else
  (void)backward;
#endif
  return f;
}

// The tensors every flash call may carry besides q/k/v and the outputs: the
// descriptor says which are used; one it does not use must not be given.
template <class Args>
void check_extras(baracuda::detail::ArgCheck& c, const FlashSdpaDescriptor& d, const Shapes& s, const Args& a) {
  c.optional_input("mask", a.mask, d.has_mask, DType::F32, s.mask, "mask tensor is missing (descriptor.has_mask is set)",
                   "mask is given but descriptor.has_mask is false")
      .optional_input("alibi_slopes", a.alibi_slopes, d.alibi != AlibiMode::None, DType::F32, s.alibi,
                      "alibi_slopes tensor is missing (descriptor.alibi is set)",
                      "alibi_slopes is given but descriptor.alibi is none")
      .optional_input("cu_seqlens_q", a.cu_seqlens_q, d.varlen, DType::I32, s.cu,
                      "cu_seqlens_q tensor is missing (descriptor.varlen is set)",
                      "cu_seqlens_q is given but descriptor.varlen is false")
      .optional_input("cu_seqlens_kv", a.cu_seqlens_kv, d.varlen, DType::I32, s.cu,
                      "cu_seqlens_kv tensor is missing (descriptor.varlen is set)",
                      "cu_seqlens_kv is given but descriptor.varlen is false");
}

// CUDA row layout of the q-like tensors (head dim contiguous; 16-byte rows
// for the tensor-core paths).
Status check_rows(const PlanBase& plan, const FlashSdpaDescriptor& d,
                  std::initializer_list<std::pair<const char*, TensorRef>> views) {
  if (plan.sku().backend != Backend::Bespoke && plan.sku().backend != Backend::CuDnn) return Status::ok();
  const size_t vec = tensor_cores(d.dtype) ? 16 : 0;
  for (const auto& [n, t] : views) BARACUDA_RETURN_IF_ERROR(check_cuda_rows(plan.name(), n, t, vec));
  return Status::ok();
}

baracuda::detail::ArgCheck check_args(const FlashSdpaPlan& p, const FlashSdpaArgs& a) {
  const FlashSdpaDescriptor& d = p.descriptor();
  const Shapes s = shapes_of(d);
  baracuda::detail::ArgCheck c(p);
  c.input("q", a.q, d.dtype, s.q).input("k", a.k, d.dtype, s.kv).input("v", a.v, d.dtype, s.kv);
  check_extras(c, d, s, a);
  c.output("y", a.y, d.dtype, s.y);
  if (d.save_lse)
    c.output("lse", a.lse, DType::F32, s.lse,
             "descriptor.save_lse is true, the default; set it to false for an inference-only forward");
  else
    c.optional_output("lse", a.lse, false, DType::F32, s.lse,
                      "lse is given but descriptor.save_lse is false (an inference-only forward writes no lse)");
  c.disjoint();
  c.rule([&] { return check_rows(p, d, {{"q", a.q}, {"k", a.k}, {"v", a.v}, {"y", a.y}}); });
  return c;
}

baracuda::detail::ArgCheck check_args(const FlashSdpaBackwardPlan& p, const FlashSdpaBackwardArgs& a) {
  const FlashSdpaDescriptor& d = p.descriptor();
  const Shapes s = shapes_of(d);
  baracuda::detail::ArgCheck c(p);
  c.input("dy", a.dy, d.dtype, s.y)
      .input("q", a.q, d.dtype, s.q)
      .input("k", a.k, d.dtype, s.kv)
      .input("v", a.v, d.dtype, s.kv)
      .input("y", a.y, d.dtype, s.y)
      .input("lse", a.lse, DType::F32, s.lse, "the backward reads the lse its forward saved");
  check_extras(c, d, s, a);
  c.output("dq", a.dq, d.dtype, s.q).output("dk", a.dk, d.dtype, s.kv).output("dv", a.dv, d.dtype, s.kv).disjoint();
  c.rule([&] {
    return check_rows(p, d, {{"dy", a.dy}, {"q", a.q}, {"k", a.k}, {"v", a.v}, {"y", a.y}, {"dq", a.dq}, {"dk", a.dk},
                             {"dv", a.dv}});
  });
  return c;
}

#ifdef BARACUDA_WITH_CUDA
attention::cuda::FlashFwdParams forward_params(const FlashSdpaDescriptor& d, const baracuda::detail::FlashHint& hint,
                                               const FlashSdpaArgs& a) {
  attention::cuda::FlashFwdParams p;
  fill_common(d, p, a.q, a.k, a.v, a.lse, a.mask, a.alibi_slopes, a.cu_seqlens_q, a.cu_seqlens_kv);
  p.hint = hint;
  p.y = a.y.data;
  p.lse = d.save_lse ? static_cast<float*>(a.lse.data) : nullptr;  // null: no kernel writes lse
  seq_strides(a.y, d.varlen, &p.y_sb, &p.y_sh, &p.y_ss);
  return p;
}

attention::cuda::FlashBwdParams backward_params(const FlashSdpaDescriptor& d, const baracuda::detail::FlashHint& hint,
                                                const FlashSdpaBackwardArgs& a, void* ws, size_t ws_bytes) {
  attention::cuda::FlashBwdParams p;
  fill_common(d, p, a.q, a.k, a.v, a.lse, a.mask, a.alibi_slopes, a.cu_seqlens_q, a.cu_seqlens_kv);
  p.hint = hint;
  p.y = const_cast<void*>(a.y.data);  // read only in the backward
  p.lse = static_cast<float*>(const_cast<void*>(a.lse.data));
  seq_strides(a.y, d.varlen, &p.y_sb, &p.y_sh, &p.y_ss);
  p.dy = a.dy.data;
  p.dq = a.dq.data;
  p.dk = a.dk.data;
  p.dv = a.dv.data;
  seq_strides(a.dy, d.varlen, &p.dy_sb, &p.dy_sh, &p.dy_ss);
  seq_strides(a.dq, d.varlen, &p.dq_sb, &p.dq_sh, &p.dq_ss);
  seq_strides(a.dk, d.varlen, &p.dk_sb, &p.dk_sh, &p.dk_ss);
  seq_strides(a.dv, d.varlen, &p.dv_sb, &p.dv_sh, &p.dv_ss);
  p.workspace = ws;
  p.workspace_bytes = ws_bytes;
  return p;
}

// run()'s cuDNN decision: Ok (cuDNN runs), a refusal the bespoke kernels take
// over (Unsupported / WorkspaceTooSmall, unless cuDNN was required), or an error.
bool cudnn_falls_back(const Status& st, bool required) {
  return !st.is_ok() && !required &&
         (st.code() == StatusCode::Unsupported || st.code() == StatusCode::WorkspaceTooSmall);
}
#endif

}  // namespace

// ---------------------------------------------------------------------------
Dims FlashSdpaPlan::q_shape() const { return shapes_of(desc_).q; }
Dims FlashSdpaPlan::kv_shape() const { return shapes_of(desc_).kv; }
Dims FlashSdpaPlan::y_shape() const { return shapes_of(desc_).y; }
Dims FlashSdpaPlan::lse_shape() const { return shapes_of(desc_).lse; }
Dims FlashSdpaPlan::mask_shape() const { return shapes_of(desc_).mask; }
Dims FlashSdpaPlan::alibi_shape() const { return shapes_of(desc_).alibi; }
Dims FlashSdpaPlan::cu_seqlens_shape() const { return shapes_of(desc_).cu; }
Dims FlashSdpaBackwardPlan::q_shape() const { return shapes_of(desc_).q; }
Dims FlashSdpaBackwardPlan::kv_shape() const { return shapes_of(desc_).kv; }
Dims FlashSdpaBackwardPlan::y_shape() const { return shapes_of(desc_).y; }
Dims FlashSdpaBackwardPlan::lse_shape() const { return shapes_of(desc_).lse; }
Dims FlashSdpaBackwardPlan::mask_shape() const { return shapes_of(desc_).mask; }
Dims FlashSdpaBackwardPlan::alibi_shape() const { return shapes_of(desc_).alibi; }
Dims FlashSdpaBackwardPlan::cu_seqlens_shape() const { return shapes_of(desc_).cu; }

// ---------------------------------------------------------------------------
Result<FlashSdpaPlan> FlashSdpaPlan::select(const Stream& stream, const FlashSdpaDescriptor& desc, const PlanPreference& pref) {
  FlashSdpaPlan plan;
  auto f = setup_flash(plan, kFwd, stream, desc, pref, /*backward=*/false);
  if (!f) return f.status();
  plan.desc_ = f->desc;
  plan.use_cudnn_ = f->use_cudnn;
  plan.cudnn_required_ = f->cudnn_required;
  plan.hint_ = f->hint;
  plan.fallback_sku_ = f->fallback_sku;
  return plan;
}

Status FlashSdpaPlan::can_implement(const FlashSdpaArgs& a) const { return check_args(*this, a).status(); }

Result<KernelSku> FlashSdpaPlan::sku_for(const Stream& stream, Workspace ws, const FlashSdpaArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, a), [&]() -> Result<KernelSku> {
#ifdef BARACUDA_WITH_CUDA
    attention::cuda::FlashFwdParams p = forward_params(desc_, hint_, a);
    if (use_cudnn_) {
      Status st = attention::cudnn_sdpa::check_forward(p);
      if (st.is_ok()) st = attention::cudnn_sdpa::probe_forward(p, stream.native_handle(), ws.ptr, ws.bytes);
      if (st.is_ok()) return sku_;
      if (!cudnn_falls_back(st, cudnn_required_)) return st;
    }
    KernelSku s = use_cudnn_ ? fallback_sku_ : sku_;
    p.fwd_workspace = ws.ptr;
    p.fwd_workspace_bytes = ws.ptr ? ws.bytes : 0;
    if (tensor_cores(desc_.dtype)) s.variant = attention::cuda::forward_mma_variant_for(p, sku_.arch, sm_count_);
    return s;
#else
    return baracuda::detail::no_cuda(kFwd);
#endif
  });
}

Status FlashSdpaPlan::run(const Stream& stream, Workspace ws, const FlashSdpaArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, a), [&] { return attention::ref::flash_forward(desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        attention::cuda::FlashFwdParams p = forward_params(desc_, hint_, a);
        if (use_cudnn_) {
          // cuDNN refuses some strides (broadcast, unpacked lse) and, while a graph
          // is being captured, plans it has not built yet; the bespoke kernels take
          // over then unless cuDNN was required.
          Status st = attention::cudnn_sdpa::check_forward(p);
          if (st.is_ok()) st = attention::cudnn_sdpa::forward(p, stream.native_handle(), ws.ptr, ws.bytes);
          if (!cudnn_falls_back(st, cudnn_required_)) return st;
        }
        p.fwd_workspace = ws.ptr;
        p.fwd_workspace_bytes = ws.ptr ? ws.bytes : 0;
        if (tensor_cores(desc_.dtype)) return attention::cuda::forward_mma(p, sku_.arch, sm_count_, stream.native_handle());
        return attention::cuda::forward_simt(p, sku_.arch, sm_count_, stream.native_handle());
#else
        (void)ws;
        return baracuda::detail::no_cuda(kFwd);
#endif
      });
}

// ---------------------------------------------------------------------------
Result<FlashSdpaBackwardPlan> FlashSdpaBackwardPlan::select(const Stream& stream, const FlashSdpaDescriptor& desc,
                                                            const PlanPreference& pref) {
  FlashSdpaBackwardPlan plan;
  auto f = setup_flash(plan, kBwd, stream, desc, pref, /*backward=*/true);
  if (!f) return f.status();
  plan.desc_ = f->desc;
  plan.use_cudnn_ = f->use_cudnn;
  plan.cudnn_required_ = f->cudnn_required;
  plan.hint_ = f->hint;
  plan.fallback_sku_ = f->fallback_sku;
  return plan;
}

Status FlashSdpaBackwardPlan::can_implement(const FlashSdpaBackwardArgs& a) const { return check_args(*this, a).status(); }

Result<KernelSku> FlashSdpaBackwardPlan::sku_for(const Stream& stream, Workspace ws,
                                                 const FlashSdpaBackwardArgs& a) const {
  return baracuda::detail::sku_for_run(*this, stream, ws, check_args(*this, a), [&]() -> Result<KernelSku> {
#ifdef BARACUDA_WITH_CUDA
    attention::cuda::FlashBwdParams p = backward_params(desc_, hint_, a, ws.ptr, workspace_bytes_);
    if (use_cudnn_) {
      Status st = attention::cudnn_sdpa::check_backward(p);
      if (st.is_ok()) st = attention::cudnn_sdpa::probe_backward(p, stream.native_handle(), sku_.precision.deterministic);
      if (st.is_ok()) return sku_;
      if (!cudnn_falls_back(st, cudnn_required_)) return st;
    }
    KernelSku s = use_cudnn_ ? fallback_sku_ : sku_;
    if (tensor_cores(desc_.dtype)) s.variant = attention::cuda::backward_mma_variant_for(p, sku_.arch);
    return s;
#else
    return baracuda::detail::no_cuda(kBwd);
#endif
  });
}

Status FlashSdpaBackwardPlan::run(const Stream& stream, Workspace ws, const FlashSdpaBackwardArgs& a) const {
  return baracuda::detail::run_plan(
      *this, stream, ws, check_args(*this, a), [&] { return attention::ref::flash_backward(desc_, a); },
      [&]() -> Status {
#ifdef BARACUDA_WITH_CUDA
        attention::cuda::FlashBwdParams p = backward_params(desc_, hint_, a, ws.ptr, workspace_bytes_);
        if (use_cudnn_) {  // fallback rules as in the forward
          Status st = attention::cudnn_sdpa::check_backward(p);
          if (st.is_ok()) st = attention::cudnn_sdpa::backward(p, stream.native_handle(), sku_.precision.deterministic);
          if (!cudnn_falls_back(st, cudnn_required_)) return st;
        }
        if (tensor_cores(desc_.dtype)) return attention::cuda::backward_mma(p, sku_.arch, sm_count_, stream.native_handle());
        return attention::cuda::backward_simt(p, sku_.arch, sm_count_, stream.native_handle());
#else
        (void)ws;
        return baracuda::detail::no_cuda(kBwd);
#endif
      });
}

}  // namespace baracuda
