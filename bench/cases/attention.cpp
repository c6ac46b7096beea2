// Family "attention" (--family attn too): FlashSdpaPlan (forward) and
// FlashSdpaBackwardPlan, TFLOP/s against the device's cuBLAS bf16 GEMM rate
// measured when the family starts (when the bench is built with cuBLAS).
// bench/torch/attention.py times PyTorch's SDPA on the same case names.
//
// Small problems rotate among several input sets so that one sweep touches
// >= 256 MiB. Data: uniform(-1, 1).
// FLOPs (FlashAttention's convention): forward 4*B*H*Q*K*D, halved for causal;
// backward 2.5x the forward.
// Each case runs on the default route (whatever select() picks) and, when that
// is not our own kernel (cuDNN), again with PlanPreference{Bespoke, required};
// backward cases also on the opt-in non-deterministic route
// (PlanPreference::require_deterministic = false: nondet_* in the JSON).
//
// Cases are one table (kCases): add a row to add a case ("bwd" rows time the
// backward plan on the forward's y / lse).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "../registry.hpp"

namespace baracuda::bench {
namespace {

struct AttnCase {
  const char* name;
  bool bwd;
  DType dtype;
  int64_t B, H, Hk, Q, K, D;
  bool causal = false;
  DiagonalAlign align = DiagonalAlign::TopLeft;
  int64_t window_left = -1, window_right = -1;
  double softcap = 0;
  AlibiMode alibi = AlibiMode::None;
  bool bshd = false;  // q, k, v, y stored [B,S,H,D] (PyTorch's usual layout for flash)
};

const AttnCase kCases[] = {
    // name                                   bwd    dtype        B   H  Hk     Q     K    D  causal
    {"fwd_bf16_b4_h16_s4096_d128", false, DType::BF16, 4, 16, 16, 4096, 4096, 128, false},
    {"fwd_bf16_b4_h16_s4096_d128_causal", false, DType::BF16, 4, 16, 16, 4096, 4096, 128, true},
    {"fwd_bf16_b8_h16_s2048_d64", false, DType::BF16, 8, 16, 16, 2048, 2048, 64, false},
    {"fwd_bf16_b8_h16_s2048_d64_causal", false, DType::BF16, 8, 16, 16, 2048, 2048, 64, true},
    {"fwd_bf16_b2_h16_s8192_d128", false, DType::BF16, 2, 16, 16, 8192, 8192, 128, false},
    {"fwd_bf16_b2_h16_s8192_d128_causal", false, DType::BF16, 2, 16, 16, 8192, 8192, 128, true},
    {"fwd_bf16_b4_h32_hk8_s4096_d128", false, DType::BF16, 4, 32, 8, 4096, 4096, 128, false},
    {"fwd_bf16_b4_h32_hk8_s4096_d128_causal", false, DType::BF16, 4, 32, 8, 4096, 4096, 128, true},
    {"fwd_f16_b4_h16_s4096_d128", false, DType::F16, 4, 16, 16, 4096, 4096, 128, false},
    {"fwd_bf16_b4_h16_s4096_d128_bshd", false, DType::BF16, 4, 16, 16, 4096, 4096, 128, false, DiagonalAlign::TopLeft,
     -1, -1, 0, AlibiMode::None, true},
    {"fwd_bf16_b4_h16_s2048_d256", false, DType::BF16, 4, 16, 16, 2048, 2048, 256, false},
    {"fwd_bf16_b4_h16_s2048_d256_causal", false, DType::BF16, 4, 16, 16, 2048, 2048, 256, true},
    {"fwd_bf16_b4_h16_s4096_d96", false, DType::BF16, 4, 16, 16, 4096, 4096, 96, false},
    {"fwd_bf16_b4_h16_s4096_d128_softcap_alibi", false, DType::BF16, 4, 16, 16, 4096, 4096, 128, false,
     DiagonalAlign::TopLeft, -1, -1, 30.0, AlibiMode::PerHead},
    {"fwd_bf16_b4_h16_s8192_d128_window1024", false, DType::BF16, 4, 16, 16, 8192, 8192, 128, true,
     DiagonalAlign::TopLeft, 1024, -1},
    {"fwd_bf16_decode_b16_h32_hk8_q1_k8192_d128", false, DType::BF16, 16, 32, 8, 1, 8192, 128, true,
     DiagonalAlign::BottomRight},
    {"fwd_bf16_decode_b8_h32_hk8_q4_k4096_d128", false, DType::BF16, 8, 32, 8, 4, 4096, 128, true,
     DiagonalAlign::BottomRight},
    // backward (FlashSdpaBackwardPlan on the forward's y / lse)
    {"bwd_bf16_b4_h16_s4096_d128", true, DType::BF16, 4, 16, 16, 4096, 4096, 128, false},
    {"bwd_bf16_b4_h16_s4096_d128_causal", true, DType::BF16, 4, 16, 16, 4096, 4096, 128, true},
    {"bwd_bf16_b8_h16_s2048_d64", true, DType::BF16, 8, 16, 16, 2048, 2048, 64, false},
    {"bwd_bf16_b8_h16_s2048_d64_causal", true, DType::BF16, 8, 16, 16, 2048, 2048, 64, true},
    {"bwd_bf16_b2_h16_s8192_d128", true, DType::BF16, 2, 16, 16, 8192, 8192, 128, false},
    {"bwd_bf16_b2_h16_s8192_d128_causal", true, DType::BF16, 2, 16, 16, 8192, 8192, 128, true},
    {"bwd_bf16_b4_h32_hk8_s4096_d128", true, DType::BF16, 4, 32, 8, 4096, 4096, 128, false},
    {"bwd_bf16_b4_h32_hk8_s4096_d128_causal", true, DType::BF16, 4, 32, 8, 4096, 4096, 128, true},
    {"bwd_f16_b4_h16_s4096_d128", true, DType::F16, 4, 16, 16, 4096, 4096, 128, false},
    {"bwd_bf16_b4_h16_s2048_d256", true, DType::BF16, 4, 16, 16, 2048, 2048, 256, false},
};

double flops_of(const AttnCase& c) {
  double f = 4.0 * c.B * c.H * static_cast<double>(c.Q) * static_cast<double>(c.K) * c.D;
  if (c.causal) {  // the (query, key) pairs a causal mask leaves, with its alignment (Q == K: about half)
    const int64_t off = c.align == DiagonalAlign::BottomRight ? c.K - c.Q : 0;
    double pairs = 0;
    for (int64_t i = 0; i < c.Q; ++i) pairs += static_cast<double>(std::clamp<int64_t>(i + off + 1, 0, c.K));
    f = 4.0 * c.B * c.H * pairs * c.D;
  }
  if (c.window_left >= 0 && c.window_left < c.K) f = 4.0 * c.B * c.H * static_cast<double>(c.Q) * (c.window_left + 1) * c.D;
  if (c.bwd) f *= 2.5;
  return f;
}

struct Res {
  std::string error, variant, sku;
  double us = 0, tflops = 0, frac = 0;
  int sets = 0;
  // The bespoke kernels timed separately when the default route is another
  // backend (cuDNN): 0 / empty when not measured.
  double bespoke_us = 0, bespoke_tflops = 0;
  std::string bespoke_variant, bespoke_error;
  // Backward only: the opt-in non-deterministic route
  // (PlanPreference::require_deterministic = false); 0 / empty when not measured.
  double nondet_us = 0, nondet_tflops = 0;
  std::string nondet_variant, nondet_sku, nondet_error;
};

// At least 16 bytes, even for an empty workspace.
Buffer attn_buffer(size_t bytes) { return device_buffer(bytes, 16); }

FlashSdpaDescriptor descriptor_of(const AttnCase& c) {
  FlashSdpaDescriptor d;
  d.dtype = c.dtype;
  d.batch = c.B;
  d.heads = c.H;
  d.kv_heads = c.Hk;
  d.q_len = c.Q;
  d.kv_len = c.K;
  d.head_dim = c.D;
  d.causal = c.causal;
  d.align = c.align;
  d.window_left = c.window_left;
  d.window_right = c.window_right;
  d.softcap = c.softcap;
  d.alibi = c.alibi;
  return d;
}

// [B,H,S,D] view of a buffer, stored [B,H,S,D] or [B,S,H,D].
Dims seq_strides(const AttnCase& c, int64_t H, int64_t S) {
  if (c.bshd) return Dims{S * H * c.D, c.D, H * c.D, 1};
  return Dims{H * S * c.D, S * c.D, c.D, 1};
}

// One input / output set of a case.
struct Set {
  Buffer q, k, v, y, lse, alibi, dy, dq, dk, dv;
  FlashSdpaArgs fa;
  FlashSdpaBackwardArgs ba;
};

// Times case `c` with the plans `pref` selects; fills r.us / tflops / variant / sku.
void time_case(const Env& env, const AttnCase& c, Res& r, const PlanPreference& pref = {}) {
  const FlashSdpaDescriptor d = descriptor_of(c);
  Result<FlashSdpaPlan> fplan = FlashSdpaPlan::select(env.stream, d, pref);
  status_check(fplan.status(), "FlashSdpaPlan::select");
  Buffer fws = attn_buffer(fplan->workspace_size());
  const Workspace fw(fws.data(), fplan->workspace_size());
  std::optional<FlashSdpaBackwardPlan> bplan;
  if (c.bwd) {
    Result<FlashSdpaBackwardPlan> b = FlashSdpaBackwardPlan::select(env.stream, d, pref);
    status_check(b.status(), "FlashSdpaBackwardPlan::select");
    bplan = *b;
    r.variant = bplan->sku().variant;
    r.sku = bplan->sku().to_string();
  } else {
    r.variant = fplan->sku().variant;
    r.sku = fplan->sku().to_string();
  }
  const size_t es = dtype_size(c.dtype);
  const size_t qn = static_cast<size_t>(c.B * c.H * c.Q * c.D), kn = static_cast<size_t>(c.B * c.Hk * c.K * c.D);
  const size_t ln = static_cast<size_t>(c.B * c.H * c.Q);
  const size_t per_set = (2 * qn + 2 * kn) * es * (c.bwd ? 2 : 1);
  r.sets = static_cast<int>(std::clamp<size_t>(((size_t{256} << 20) + per_set - 1) / per_set, 1, 8));

  const Dims qshape{c.B, c.H, c.Q, c.D}, kshape{c.B, c.Hk, c.K, c.D}, lshape{c.B, c.H, c.Q};
  std::vector<Set> sets(static_cast<size_t>(r.sets));
  for (Set& s : sets) {
    s.q = attn_buffer(qn * es);
    s.k = attn_buffer(kn * es);
    s.v = attn_buffer(kn * es);
    s.y = attn_buffer(qn * es);
    s.lse = attn_buffer(ln * 4);
    fill(env, s.q, c.dtype, qn);
    fill(env, s.k, c.dtype, kn);
    fill(env, s.v, c.dtype, kn);
    s.fa.q = s.q.view(c.dtype, qshape, seq_strides(c, c.H, c.Q));
    s.fa.k = s.k.view(c.dtype, kshape, seq_strides(c, c.Hk, c.K));
    s.fa.v = s.v.view(c.dtype, kshape, seq_strides(c, c.Hk, c.K));
    s.fa.y = s.y.view_mut(c.dtype, qshape, seq_strides(c, c.H, c.Q));
    s.fa.lse = s.lse.view_mut(DType::F32, lshape);
    if (c.alibi != AlibiMode::None) {
      const int64_t n = c.alibi == AlibiMode::PerHead ? c.H : c.B * c.H;
      s.alibi = attn_buffer(static_cast<size_t>(n) * 4);
      std::vector<float> sl(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) sl[static_cast<size_t>(i)] = std::exp2(-8.0f * static_cast<float>(i % c.H + 1) / c.H);
      status_check(s.alibi.copy_from_host(sl.data(), sl.size() * 4), "alibi upload");
      s.fa.alibi_slopes = c.alibi == AlibiMode::PerHead ? s.alibi.view(DType::F32, Dims{c.H}) : s.alibi.view(DType::F32, Dims{c.B, c.H});
    }
    if (c.bwd) {
      status_check(fplan->run(env.stream, fw, s.fa), "forward run (for y, lse)");
      s.dy = attn_buffer(qn * es);
      s.dq = attn_buffer(qn * es);
      s.dk = attn_buffer(kn * es);
      s.dv = attn_buffer(kn * es);
      fill(env, s.dy, c.dtype, qn);
      s.ba.dy = s.dy.view(c.dtype, qshape, seq_strides(c, c.H, c.Q));
      s.ba.q = s.fa.q;
      s.ba.k = s.fa.k;
      s.ba.v = s.fa.v;
      s.ba.y = s.y.view(c.dtype, qshape, seq_strides(c, c.H, c.Q));
      s.ba.lse = s.lse.view(DType::F32, lshape);
      s.ba.alibi_slopes = s.fa.alibi_slopes;
      s.ba.dq = s.dq.view_mut(c.dtype, qshape, seq_strides(c, c.H, c.Q));
      s.ba.dk = s.dk.view_mut(c.dtype, kshape, seq_strides(c, c.Hk, c.K));
      s.ba.dv = s.dv.view_mut(c.dtype, kshape, seq_strides(c, c.Hk, c.K));
    }
  }
  double ms = 0;
  if (c.bwd) {
    status_check(bplan->can_implement(sets[0].ba), "can_implement");
    Buffer ws = attn_buffer(bplan->workspace_size());
    const Workspace w(ws.data(), bplan->workspace_size());
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(bplan->run(env.stream, w, sets[static_cast<size_t>(i % r.sets)].ba), "run");
    });
  } else {
    status_check(fplan->can_implement(sets[0].fa), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(fplan->run(env.stream, fw, sets[static_cast<size_t>(i % r.sets)].fa), "run");
    });
  }
  r.us = ms * 1e3;
  r.tflops = flops_of(c) / (ms * 1e-3) / 1e12;
}

// The default route; for a backward also the non-deterministic route; then,
// when the default is not ours, our bespoke kernels too.
void run_case(const Env& env, const AttnCase& c, Res& r) {
  time_case(env, c, r);
  r.frac = env.gemm_tflops > 0 ? r.tflops / env.gemm_tflops : 0;
  if (c.bwd) {
    Res n;
    PlanPreference nondet;
    nondet.require_deterministic = false;
    try {
      time_case(env, c, n, nondet);
      r.nondet_us = n.us;
      r.nondet_tflops = n.tflops;
      r.nondet_variant = n.variant;
      r.nondet_sku = n.sku;
    } catch (const std::exception& e) {
      r.nondet_error = e.what();
    }
  }
  if (r.sku.find("[bespoke-cuda") != std::string::npos) return;
  Res b;
  PlanPreference bespoke;
  bespoke.backend = Backend::Bespoke;
  bespoke.require_backend = true;
  try {
    time_case(env, c, b, bespoke);
    r.bespoke_us = b.us;
    r.bespoke_tflops = b.tflops;
    r.bespoke_variant = b.variant;
  } catch (const std::exception& e) {
    r.bespoke_error = e.what();
  }
}

std::string row_of(const AttnCase& c, const Res& r) {
  char line[256];
  if (!r.error.empty()) {
    std::snprintf(line, sizeof line, "%-46s FAILED: ", c.name);
    return line + r.error;
  }
  std::snprintf(line, sizeof line, "%-46s %10.1f %9.1f %5.1f%%  ", c.name, r.us, r.tflops, 100 * r.frac);
  std::string row = line + r.variant;
  if (r.nondet_us > 0) row += "  | non-det " + std::to_string(r.nondet_tflops).substr(0, 6) + " TFLOP/s " + r.nondet_variant;
  if (r.bespoke_us > 0) row += "  | bespoke " + std::to_string(r.bespoke_tflops).substr(0, 6) + " TFLOP/s " + r.bespoke_variant;
  return row;
}

JsonObject json_of(const AttnCase& c, const Res& r) {
  JsonObject j;
  j.str("name", c.name)
      .str("op", "flash_sdpa")
      .str("dir", c.bwd ? "bwd" : "fwd")
      .str("dtype", std::string(dtype_name(c.dtype)))
      .integer("B", c.B)
      .integer("H", c.H)
      .integer("Hk", c.Hk)
      .integer("Q", c.Q)
      .integer("K", c.K)
      .integer("D", c.D)
      .boolean("causal", c.causal)
      .str("layout", c.bshd ? "bshd" : "bhsd");
  if (r.error.empty())
    j.num("time_us", r.us).num("tflops", r.tflops).num("frac_gemm", r.frac).integer("sets", r.sets);
  else
    j.str("error", r.error);
  j.str("variant", r.variant).str("sku", r.sku);
  if (r.bespoke_us > 0)
    j.num("bespoke_us", r.bespoke_us).num("bespoke_tflops", r.bespoke_tflops).str("bespoke_variant", r.bespoke_variant);
  if (!r.bespoke_error.empty()) j.str("bespoke_error", r.bespoke_error);
  if (r.nondet_us > 0)
    j.num("nondet_us", r.nondet_us).num("nondet_tflops", r.nondet_tflops).str("nondet_variant", r.nondet_variant)
        .str("nondet_sku", r.nondet_sku);
  if (!r.nondet_error.empty()) j.str("nondet_error", r.nondet_error);
  return j;
}

// Family::start: the GEMM ceiling, the table header, the JSON header.
JsonObject start(Env& env) {
  env.gemm_tflops = gemm_ceiling_tflops(env);
  const DeviceMeta& m = env.meta;
  std::printf("device: %s (sm_%d%d, %d SMs), CUDA runtime %s, driver %s\n", m.device.c_str(), m.cc_major, m.cc_minor, m.sms,
              m.runtime.c_str(), m.driver.c_str());
  std::printf("cuBLAS bf16 GEMM 8192^3: %.1f TFLOP/s; %d iters, median\n\n", env.gemm_tflops, env.iters);
  std::printf("%-46s %10s %9s %6s  %s\n", "case", "time_us", "TFLOP/s", "%gemm", "variant");
  JsonObject h;
  h.str("bench", "baracuda_attn_bench")
      .str("date", utc_now())
      .str("device", m.device)
      .raw("sm", std::to_string(m.cc_major) + std::to_string(m.cc_minor))
      .integer("sms", m.sms)
      .str("cuda_runtime", m.runtime)
      .str("cuda_driver", m.driver)
      .num("gemm_bf16_tflops", env.gemm_tflops);
  return h;
}

}  // namespace

void register_attention(Registry& reg) {
  // Attention cases run longer: fewer runs than the bandwidth families.
  reg.add_family(Family{"attention", "attn", 20, 3, start});
  for (const AttnCase& c : kCases)
    reg.add_case(Case{"attention", c.name, [&c](Env& env) {
                        const Res r = run_guarded<Res>(env, [&](Env& e, Res& res) { run_case(e, c, res); });
                        return Outcome{r.error.empty(), row_of(c, r), json_of(c, r)};
                      }});
}

}  // namespace baracuda::bench
