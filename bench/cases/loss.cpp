// Family "loss": CrossEntropyPlan / CrossEntropyBackwardPlan, bandwidth
// against the device's own copy bandwidth (bench/torch/loss.py times PyTorch
// eager on the same case names). Issue 12's shapes, bf16 logits, i64
// targets, mean reduction:
//   cross_entropy.fwd.bf16.NxV      loss (+ the saved lse)
//   cross_entropy.bwd.bf16.NxV      dlogits from the saved lse (no PyTorch twin)
//   cross_entropy.fwdbwd.bf16.NxV   with_grad: loss, lse and dlogits in one pass
// at N = 8192 and V = 50304, 128256.
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
}

}  // namespace baracuda::bench
