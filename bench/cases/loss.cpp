// Family "loss": CrossEntropyPlan / CrossEntropyBackwardPlan, bandwidth
// against the device's own copy bandwidth (bench/torch/loss.py times PyTorch
// eager on the same case names). Issue 12's shapes, bf16 logits, i64
// targets, mean reduction:
//   cross_entropy.fwd.bf16.NxV      loss (+ the saved lse)
//   cross_entropy.bwd.bf16.NxV      dlogits from the saved lse (no PyTorch twin)
//   cross_entropy.fwdbwd.bf16.NxV   with_grad: loss, lse and dlogits in one pass
// at N = 8192 and V = 50304, 128256.
// Fused linear + cross-entropy (FusedLinearCrossEntropyPlan) at the LM-head
// shape (N, D, V) = (8192, 4096, 128256) bf16, no bias, mean, dloss = 1,
// dH and dW (3 GEMMs, 6 N D V flops):
//   linear_cross_entropy.fused.bf16.NxDxV        workspace_limit = N V 2 / 4
//   linear_cross_entropy.unfused.bf16.NxDxV      LinearPlan -> CrossEntropyPlan
//                                                with_grad in place -> LinearBackwardPlan
//   linear_cross_entropy.fused.chunkR.bf16.NxDxV chunk_rows = R (no limit)
// Each reports time, TFLOP/s and extra_bytes: the memory beyond inputs and
// outputs (the fused plan's workspace; unfused: the logits + the largest
// workspace), and its ratio to the unfused logits N V 2 (target <= 0.25 at
// >= 0.9 of the unfused speed). One buffer set (1.2 GB of inputs, far above L2).
//  * bytes counted as in the softmax cases: what the op must move — the
//    logits read (forward), + dlogits written (bwd, fwdbwd); targets, lse and
//    the loss (a few bytes per row) are left out;
//  * inputs never come from L2: buffer sets rotated until one sweep touches
//    >= max(4 x L2, 256 MiB) (here one set already does);
//  * the workspace is the plan's, one buffer.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../bandwidth.hpp"
#include "../json_writer.hpp"

namespace baracuda::bench {
namespace {

constexpr const char* kFwd = "fwd";
constexpr const char* kBwd = "bwd";

void run_case(const Env& env, const BandwidthCase& c, const std::string& dir, BandwidthResult& r) {
  const int64_t rows = c.shape[0], classes = c.shape[1];
  CrossEntropyDescriptor d;
  d.dtype = c.dtype;
  d.rows = rows;
  d.classes = classes;
  d.index_dtype = DType::I64;
  d.reduction = LossReduction::Mean;
  d.with_grad = dir == "fwdbwd";
  std::optional<CrossEntropyPlan> fwd;
  std::optional<CrossEntropyBackwardPlan> bwd;
  size_t ws_bytes = 0;
  if (dir == kBwd) {
    CrossEntropyBackwardDescriptor bd;
    bd.forward = d;
    auto p = CrossEntropyBackwardPlan::select(env.stream, bd);
    status_check(p.status(), "CrossEntropyBackwardPlan::select");
    bwd = *p;
    record_sku(r, bwd->sku());
    ws_bytes = bwd->workspace_size();
  } else {
    auto p = CrossEntropyPlan::select(env.stream, d);
    status_check(p.status(), "CrossEntropyPlan::select");
    fwd = *p;
    record_sku(r, fwd->sku());
    ws_bytes = fwd->workspace_size();
  }
  const size_t n = static_cast<size_t>(rows * classes), tb = n * dtype_size(c.dtype);
  const bool grad = dir != kFwd;
  const size_t per_run = tb * (grad ? 2 : 1);
  r.bytes = static_cast<double>(per_run);
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_run - 1) / per_run, 1, 16));
  uint64_t seed = 11;
  struct Set {
    Buffer logits, dlogits, target, lse, loss, dloss;
  };
  std::vector<Set> sets;
  for (int s = 0; s < r.sets; ++s) {
    Set b;
    b.logits = device_buffer(tb);
    cuda_check(bench_fill_uniform(b.logits.data(), c.dtype, n, -8.f, 8.f, seed++, env.cs), "fill logits");
    if (grad) b.dlogits = device_buffer(tb);
    // Targets: class ids drawn in [0, classes) as f32 and converted on the host would cost a
    // copy of the whole vector; a fixed stride pattern is as good for timing.
    std::vector<int64_t> t(static_cast<size_t>(rows));
    for (int64_t i = 0; i < rows; ++i) t[static_cast<size_t>(i)] = (i * 7919 + s) % classes;
    b.target = device_buffer(t.size() * 8);
    status_check(b.target.copy_from_host(t.data(), t.size() * 8), "targets");
    b.lse = device_buffer(static_cast<size_t>(rows) * 4);
    cuda_check(bench_fill_uniform(b.lse.data(), DType::F32, static_cast<size_t>(rows), 10.f, 11.f, seed++, env.cs), "fill lse");
    b.loss = device_buffer(16);
    b.dloss = device_buffer(16);
    cuda_check(bench_fill_uniform(b.dloss.data(), DType::F32, 1, 1.f, 1.f, seed++, env.cs), "fill dloss");
    sets.push_back(std::move(b));
  }
  Buffer ws = device_buffer(std::max<size_t>(ws_bytes, 16), 16);
  const Workspace w(ws.data(), ws_bytes);
  const Dims mat{rows, classes};
  double ms = 0;
  if (dir == kBwd) {
    std::vector<CrossEntropyBackwardArgs> args;
    for (Set& b : sets)
      args.push_back({b.logits.view(c.dtype, mat), b.target.view(DType::I64, {rows}), {}, b.lse.view(DType::F32, {rows}),
                      b.dloss.view(DType::F32, {}, {}), b.dlogits.view_mut(c.dtype, mat)});
    status_check(bwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(bwd->run(env.stream, w, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  } else {
    std::vector<CrossEntropyArgs> args;
    for (Set& b : sets) {
      CrossEntropyArgs a;
      a.logits = b.logits.view(c.dtype, mat);
      a.target = b.target.view(DType::I64, {rows});
      a.loss = b.loss.view_mut(DType::F32, {}, {});
      a.lse = b.lse.view_mut(DType::F32, {rows});
      if (grad) {
        a.dloss = b.dloss.view(DType::F32, {}, {});
        a.dlogits = b.dlogits.view_mut(c.dtype, mat);
      }
      args.push_back(a);
    }
    status_check(fwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(fwd->run(env.stream, w, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  }
  r.us = ms * 1e3;
}

// ---- fused linear + cross-entropy ---------------------------------------------------------
struct LceCase {
  std::string name, mode;  // "fused" / "unfused"
  int64_t n = 0, d = 0, v = 0;
  int64_t chunk_rows = 0;   // fused: > 0 fixes the chunk
  bool quarter_limit = false;  // fused: workspace_limit = N V 2 / 4
};

struct LceResult {
  std::string error;
  double us = 0, tflops = 0;
  double extra_bytes = 0, extra_frac = 0;
  int64_t chunk_rows = 0, chunks = 0;
  std::string variant, backend, sku;
};

void run_lce(const Env& env, const LceCase& c, LceResult& r) {
  const DType t = DType::BF16;
  const int64_t N = c.n, D = c.d, V = c.v;
  const size_t es = dtype_size(t), logits = static_cast<size_t>(N * V) * es;
  Buffer h = device_buffer(static_cast<size_t>(N * D) * es), w = device_buffer(static_cast<size_t>(V * D) * es);
  fill(env, h, t, static_cast<size_t>(N * D), -1.f, 1.f);
  fill(env, w, t, static_cast<size_t>(V * D), -0.02f, 0.02f);
  std::vector<int64_t> tv(static_cast<size_t>(N));
  for (int64_t i = 0; i < N; ++i) tv[static_cast<size_t>(i)] = (i * 7919) % V;
  Buffer tg = device_buffer(tv.size() * 8);
  status_check(tg.copy_from_host(tv.data(), tv.size() * 8), "targets");
  Buffer loss = device_buffer(16), dloss = device_buffer(16);
  cuda_check(bench_fill_uniform(dloss.data(), DType::F32, 1, 1.f, 1.f, 1, env.cs), "fill dloss");
  Buffer dh = device_buffer(static_cast<size_t>(N * D) * es), dw = device_buffer(static_cast<size_t>(V * D) * es);
  const TensorRef hv = h.view(t, {N, D}), wv = w.view(t, {V, D}), tgv = tg.view(DType::I64, {N});
  const TensorRef dlv = dloss.view(DType::F32, {}, {});
  double ms = 0;
  if (c.mode == "fused") {
    FusedLinearCrossEntropyDescriptor d;
    d.dtype = t;
    d.rows = N;
    d.in_features = D;
    d.classes = V;
    d.need_db = false;
    d.chunk_rows = c.chunk_rows;
    if (c.quarter_limit) d.workspace_limit = logits / 4;
    auto p = FusedLinearCrossEntropyPlan::select(env.stream, d);
    status_check(p.status(), "FusedLinearCrossEntropyPlan::select");
    r.variant = p->sku().variant;
    r.backend = backend_name(p->sku().backend);
    r.sku = p->sku().to_string();
    r.chunk_rows = p->chunk_rows();
    r.chunks = p->chunks();
    r.extra_bytes = static_cast<double>(p->workspace_size());
    Buffer ws = device_buffer(p->workspace_size(), 16);
    FusedLinearCrossEntropyArgs a;
    a.hidden = hv;
    a.weight = wv;
    a.target = tgv;
    a.dloss = dlv;
    a.loss = loss.view_mut(DType::F32, {}, {});
    a.dhidden = dh.view_mut(t, {N, D});
    a.dweight = dw.view_mut(t, {V, D});
    const Workspace wsv(ws.data(), p->workspace_size());
    status_check(p->can_implement(a), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int) { status_check(p->run(env.stream, wsv, a), "run"); });
  } else {
    LinearDescriptor ld;
    ld.dtype = t;
    ld.x_shape = Dims{N, D};
    ld.out_features = V;
    ld.has_bias = false;
    CrossEntropyDescriptor cd;
    cd.dtype = t;
    cd.rows = N;
    cd.classes = V;
    cd.with_grad = true;
    LinearBackwardDescriptor bd;
    bd.forward = ld;
    bd.need_db = false;
    auto lin = LinearPlan::select(env.stream, ld);
    status_check(lin.status(), "LinearPlan::select");
    auto ce = CrossEntropyPlan::select(env.stream, cd);
    status_check(ce.status(), "CrossEntropyPlan::select");
    auto bwd = LinearBackwardPlan::select(env.stream, bd);
    status_check(bwd.status(), "LinearBackwardPlan::select");
    const size_t wsb = std::max({lin->workspace_size(), ce->workspace_size(), bwd->workspace_size(), size_t{16}});
    r.variant = "fwd:" + lin->sku().variant + " ce:" + ce->sku().variant + " bwd:" + bwd->sku().variant;
    r.backend = backend_name(lin->sku().backend);
    r.sku = lin->sku().to_string();
    r.extra_bytes = static_cast<double>(logits + wsb);
    Buffer y = device_buffer(logits), ws = device_buffer(wsb);
    LinearArgs la;
    la.x = hv;
    la.weight = wv;
    la.y = y.view_mut(t, {N, V});
    CrossEntropyArgs ca;
    ca.logits = y.view(t, {N, V});
    ca.target = tgv;
    ca.loss = loss.view_mut(DType::F32, {}, {});
    ca.dloss = dlv;
    ca.dlogits = y.view_mut(t, {N, V});
    LinearBackwardArgs ba;
    ba.dy = y.view(t, {N, V});
    ba.x = hv;
    ba.weight = wv;
    ba.dx = dh.view_mut(t, {N, D});
    ba.dw = dw.view_mut(t, {V, D});
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int) {
      status_check(lin->run(env.stream, Workspace(ws.data(), lin->workspace_size()), la), "linear");
      status_check(ce->run(env.stream, Workspace(ws.data(), ce->workspace_size()), ca), "cross_entropy");
      status_check(bwd->run(env.stream, Workspace(ws.data(), bwd->workspace_size()), ba), "linear_backward");
    });
  }
  r.us = ms * 1e3;
  r.tflops = 6.0 * static_cast<double>(N) * static_cast<double>(D) * static_cast<double>(V) / (r.us * 1e-6) / 1e12;
  r.extra_frac = r.extra_bytes / static_cast<double>(logits);
}

Case lce_case(const LceCase& c) {
  return Case{"loss", c.name, [c](Env& env) {
                LceResult r = run_guarded<LceResult>(env, [&](Env& e, LceResult& res) { run_lce(e, c, res); });
                Outcome o;
                o.ok = r.error.empty();
                char line[256];
                if (o.ok)
                  std::snprintf(line, sizeof line, "%-42s %10.1f %6.0f TF/s extra %7.1f MB (%.3f)  ", c.name.c_str(), r.us,
                                r.tflops, r.extra_bytes / 1e6, r.extra_frac);
                else
                  std::snprintf(line, sizeof line, "%-42s  ERROR ", c.name.c_str());
                o.row = line + (o.ok ? r.variant : r.error);
                o.json.str("name", c.name)
                    .str("op", "linear_cross_entropy")
                    .str("dir", "fwdbwd")
                    .str("dtype", "bf16")
                    .dims("shape", Dims{c.n, c.d, c.v})
                    .dims("axes", Dims{1})
                    .boolean("ok", o.ok);
                if (o.ok)
                  o.json.num("time_us", r.us)
                      .num("tflops", r.tflops)
                      .num("extra_bytes", r.extra_bytes)
                      .num("extra_frac_of_logits", r.extra_frac)
                      .integer("chunk_rows", r.chunk_rows)
                      .integer("chunks", r.chunks);
                else
                  o.json.str("error", r.error);
                o.json.str("variant", r.variant).str("backend", r.backend).str("sku", r.sku);
                return o;
              }};
}

}  // namespace

void register_loss(Registry& reg) {
  reg.add_family(Family{"loss", "", 30, 5, bandwidth_start("baracuda_loss_bench")});
  const Dims shapes[] = {Dims{8192, 50304}, Dims{8192, 128256}};
  for (const char* dir : {"fwd", "bwd", "fwdbwd"})
    for (const Dims& s : shapes) {
      BandwidthCase c{{}, "cross_entropy", std::string(dir) != "fwd", DType::BF16, s, Dims{1}};
      c.name = c.op + "." + dir + "." + std::string(dtype_name(c.dtype)) + "." + join(s, "x");
      const std::string d = dir;
      reg.add_case(bandwidth_case("loss", c, [c, d](Env& env, BandwidthResult& r) { run_case(env, c, d, r); }));
    }
  const int64_t N = 8192, D = 4096, V = 128256;
  const std::string shape = ".bf16." + std::to_string(N) + "x" + std::to_string(D) + "x" + std::to_string(V);
  reg.add_case(lce_case({"linear_cross_entropy.fused" + shape, "fused", N, D, V, 0, true}));
  reg.add_case(lce_case({"linear_cross_entropy.unfused" + shape, "unfused", N, D, V, 0, false}));
  for (int64_t r : {512, 1024, 1536, 1664, 2048, 4096, 8192})
    reg.add_case(lce_case({"linear_cross_entropy.fused.chunk" + std::to_string(r) + shape, "fused", N, D, V, r, false}));
}

}  // namespace baracuda::bench
