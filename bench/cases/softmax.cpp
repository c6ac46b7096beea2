// Family "softmax": SoftmaxPlan / SoftmaxBackwardPlan, bandwidth against the
// device's own copy bandwidth (bench/torch/softmax.py times PyTorch eager on
// the same case names). Issue 12's list, in f32 and bf16, along the last axis:
//   softmax.{fwd,bwd}.<dt>.RxC       softmax over rows of C elements
//   log_softmax.{fwd,bwd}.<dt>.RxC   log_softmax
// at [8192, 16384] and [32768, 4096], plus long rows [64, 262144] (the split
// path: x is read twice there, counted once).
//  * bytes counted: x read + y written (forward); y, dy read + dx written
//    (backward): what the op must move, whatever the kernel moves;
//  * inputs never come from L2: independent buffer sets rotated until one
//    sweep touches >= max(4 x L2, 256 MiB);
//  * the workspace (the split path's partials) is the plan's, one buffer.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../bandwidth.hpp"

namespace baracuda::bench {
namespace {

void run_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const bool log = c.op == "log_softmax";
  std::optional<SoftmaxPlan> fwd;
  std::optional<SoftmaxBackwardPlan> bwd;
  size_t ws_bytes = 0;
  if (c.bwd) {
    SoftmaxBackwardDescriptor d;
    d.dtype = c.dtype;
    d.shape = c.shape;
    d.axis = -1;
    d.log = log;
    auto p = SoftmaxBackwardPlan::select(env.stream, d);
    status_check(p.status(), "SoftmaxBackwardPlan::select");
    bwd = *p;
    record_sku(r, bwd->sku());
    ws_bytes = bwd->workspace_size();
  } else {
    SoftmaxDescriptor d;
    d.dtype = c.dtype;
    d.shape = c.shape;
    d.axis = -1;
    d.log = log;
    auto p = SoftmaxPlan::select(env.stream, d);
    status_check(p.status(), "SoftmaxPlan::select");
    fwd = *p;
    record_sku(r, fwd->sku());
    ws_bytes = fwd->workspace_size();
  }
  const size_t n = static_cast<size_t>(shape_numel(c.shape)), tb = n * dtype_size(c.dtype);
  const int tensors = c.bwd ? 3 : 2;  // inputs then the output
  const size_t per_run = static_cast<size_t>(tensors) * tb;
  r.bytes = static_cast<double>(per_run);
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_run - 1) / per_run, 1, 16));
  uint64_t seed = 7;
  std::vector<Buffer> bufs;
  for (int s = 0; s < r.sets; ++s)
    for (int j = 0; j < tensors; ++j) {
      bufs.push_back(device_buffer(tb));
      if (j + 1 < tensors) {
        // x uniform(-8, 8); the backward's y a softmax-like (0, 1/C*2) spread for softmax, log-probs for log_softmax
        const float lo = c.bwd && j == 0 ? (log ? -12.f : 0.f) : -8.f;
        const float hi = c.bwd && j == 0 ? (log ? -6.f : 2.f / static_cast<float>(c.shape[c.shape.rank - 1])) : 8.f;
        cuda_check(bench_fill_uniform(bufs.back().data(), c.dtype, n, lo, hi, seed++, env.cs), "fill");
      }
    }
  Buffer ws = device_buffer(std::max<size_t>(ws_bytes, 16), 16);
  const Workspace w(ws.data(), ws_bytes);
  auto in = [&](int s, int j) { return bufs[static_cast<size_t>(tensors * s + j)].view(c.dtype, c.shape); };
  auto out = [&](int s, int j) { return bufs[static_cast<size_t>(tensors * s + j)].view_mut(c.dtype, c.shape); };
  double ms = 0;
  if (c.bwd) {
    std::vector<SoftmaxBackwardArgs> args;
    for (int s = 0; s < r.sets; ++s) args.push_back({in(s, 0), in(s, 1), out(s, 2)});
    status_check(bwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(bwd->run(env.stream, w, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  } else {
    std::vector<SoftmaxArgs> args;
    for (int s = 0; s < r.sets; ++s) args.push_back({in(s, 0), out(s, 1)});
    status_check(fwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(fwd->run(env.stream, w, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  }
  r.us = ms * 1e3;
}

}  // namespace

void register_softmax(Registry& reg) {
  reg.add_family(Family{"softmax", "", 30, 5, bandwidth_start("baracuda_softmax_bench")});
  const Dims shapes[] = {Dims{8192, 16384}, Dims{32768, 4096}, Dims{64, 262144}};
  for (const char* op : {"softmax", "log_softmax"})
    for (bool bwd : {false, true})
      for (DType dt : {DType::F32, DType::BF16})
        for (const Dims& s : shapes) {
          BandwidthCase c{{}, op, bwd, dt, s, Dims{s.rank - 1}};
          c.name = c.op + (bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(dt)) + "." + join(s, "x");
          reg.add_case(bandwidth_case("softmax", c, [c](Env& env, BandwidthResult& r) { run_case(env, c, r); }));
        }
}

}  // namespace baracuda::bench
