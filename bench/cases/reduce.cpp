// Family "reduce": the reduction plans (forward and backward), bandwidth against
// the device's own copy bandwidth (bench/torch/reduce.py times PyTorch on the
// same case names).
//
//  * inputs never come from L2: each case rotates among enough independent
//    sets of buffers that one sweep touches >= max(4 x L2, 256 MiB);
//  * bytes counted: forward x + y; backward dy + dx (+ x, y where the kind
//    reads them: ReduceBackwardPlan::needs_x / needs_y).
// A plan that fails (select, can_implement, run) is reported and skipped.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../bandwidth.hpp"

namespace baracuda::bench {
namespace {

struct KindInfo {
  ReduceKind kind;
  const char* name;  // the op name in case names; torch/reduce.py uses the same
  bool backward;     // ArgMax has no backward
};
constexpr KindInfo kKinds[] = {
    {ReduceKind::Sum, "sum", true},         {ReduceKind::Mean, "mean", true},
    {ReduceKind::Max, "max", true},         {ReduceKind::Min, "min", true},
    {ReduceKind::Prod, "prod", true},       {ReduceKind::Norm2, "norm2", true},
    {ReduceKind::LogSumExp, "logsumexp", true}, {ReduceKind::Var, "var", true},
    {ReduceKind::Std, "std", true},         {ReduceKind::ArgMax, "argmax", false},
};

struct ShapeAxes {
  Dims shape, axes;
};
const ShapeAxes kShapes[] = {
    {{8192, 16384}, {1}},
    {{8192, 16384}, {0}},
    {{64, 4096, 128}, {1}},
    {{16, 1024, 1024}, {1, 2}},
};
constexpr DType kDTypes[] = {DType::F32, DType::BF16};

int sets_for(size_t bytes_per_run, size_t rotate_bytes) {
  const size_t n = (rotate_bytes + bytes_per_run - 1) / std::max<size_t>(bytes_per_run, 1);
  return static_cast<int>(std::clamp<size_t>(n, 1, 64));
}

void run_forward(const Env& env, const BandwidthCase& c, ReduceKind kind, const ReduceDescriptor& d, BandwidthResult& r) {
  Result<ReducePlan> plan = ReducePlan::select(env.stream, d);
  status_check(plan.status(), "ReducePlan::select");
  record_sku(r, plan->sku());
  const size_t xn = static_cast<size_t>(shape_numel(c.shape));
  const size_t yn = static_cast<size_t>(shape_numel(plan->output_shape()));
  const size_t xb = xn * dtype_size(c.dtype), yb = yn * dtype_size(plan->output_dtype());
  r.bytes = static_cast<double>(xb + yb);
  r.sets = sets_for(xb + yb, env.rotate_bytes);

  // Prod over thousands of uniform(-1,1) values is 0 after a few hundred; stay near 1.
  const float lo = kind == ReduceKind::Prod ? 0.9f : -1.f, hi = kind == ReduceKind::Prod ? 1.1f : 1.f;
  std::vector<Buffer> xs, ys;
  std::vector<ReduceArgs> args;
  for (int s = 0; s < r.sets; ++s) {
    xs.push_back(device_buffer(xb));
    ys.push_back(device_buffer(yb));
    fill(env, xs.back(), c.dtype, xn, lo, hi);
    args.push_back({xs.back().view(c.dtype, c.shape), ys.back().view_mut(plan->output_dtype(), plan->output_shape())});
  }
  status_check(plan->can_implement(args[0]), "can_implement");
  Buffer ws = device_buffer(plan->workspace_size());
  const Workspace w(ws.data(), plan->workspace_size());

  const double ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
    status_check(plan->run(env.stream, w, args[static_cast<size_t>(i % r.sets)]), "run");
  });
  r.us = ms * 1e3;
}

void run_backward(const Env& env, const BandwidthCase& c, ReduceKind kind, const ReduceDescriptor& d,
                  BandwidthResult& r) {
  Result<ReduceBackwardPlan> plan = ReduceBackwardPlan::select(env.stream, d);
  status_check(plan.status(), "ReduceBackwardPlan::select");
  record_sku(r, plan->sku());
  const bool need_x = plan->needs_x(), need_y = plan->needs_y();
  const size_t es = dtype_size(c.dtype);
  const size_t xn = static_cast<size_t>(shape_numel(c.shape));
  const size_t yn = static_cast<size_t>(shape_numel(plan->output_shape()));
  const size_t xb = xn * es, yb = yn * es;
  const size_t counted = yb /*dy*/ + xb /*dx*/ + (need_x ? xb : 0) + (need_y ? yb : 0);
  r.bytes = static_cast<double>(counted);
  r.sets = sets_for(counted, env.rotate_bytes);

  // y must be the real forward output (Max/Min compare x == y, Std/Norm2 divide
  // by it), so compute it with the forward plan, honouring its workspace too.
  std::optional<ReducePlan> fwd;
  Buffer fws;
  if (need_y) {
    Result<ReducePlan> f = ReducePlan::select(env.stream, d);
    status_check(f.status(), "ReducePlan::select (forward, for y)");
    fwd = *f;
    fws = device_buffer(fwd->workspace_size());
  }

  const float lo = kind == ReduceKind::Prod ? 0.9f : -1.f, hi = kind == ReduceKind::Prod ? 1.1f : 1.f;
  std::vector<Buffer> xs, ys, dys, dxs;
  std::vector<ReduceBackwardArgs> args;
  for (int s = 0; s < r.sets; ++s) {
    ReduceBackwardArgs a;
    dys.push_back(device_buffer(yb));
    fill(env, dys.back(), c.dtype, yn, -1.f, 1.f);
    a.dy = dys.back().view(c.dtype, plan->output_shape());
    dxs.push_back(device_buffer(xb));
    a.dx = dxs.back().view_mut(c.dtype, c.shape);
    if (need_x || need_y) {
      xs.push_back(device_buffer(xb));
      fill(env, xs.back(), c.dtype, xn, lo, hi);
      if (need_x) a.x = xs.back().view(c.dtype, c.shape);
    }
    if (need_y) {
      ys.push_back(device_buffer(yb));
      ReduceArgs fa{xs.back().view(c.dtype, c.shape), ys.back().view_mut(c.dtype, plan->output_shape())};
      status_check(fwd->run(env.stream, Workspace(fws.data(), fwd->workspace_size()), fa), "forward run (for y)");
      a.y = ys.back().view(c.dtype, plan->output_shape());
    }
    args.push_back(a);
  }
  status_check(plan->can_implement(args[0]), "can_implement");
  Buffer ws = device_buffer(plan->workspace_size());
  const Workspace w(ws.data(), plan->workspace_size());

  const double ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
    status_check(plan->run(env.stream, w, args[static_cast<size_t>(i % r.sets)]), "run");
  });
  r.us = ms * 1e3;
}

void run_case(const Env& env, const BandwidthCase& c, ReduceKind kind, BandwidthResult& r) {
  ReduceDescriptor d;
  d.kind = kind;
  d.dtype = c.dtype;
  d.shape = c.shape;
  d.axes = c.axes;
  d.keepdim = false;
  d.correction = 1;
  if (c.bwd)
    run_backward(env, c, kind, d, r);
  else
    run_forward(env, c, kind, d, r);
}

}  // namespace

// Cases "logsumexp.bwd.bf16.16x1024x1024.ax1,2": kind x direction x dtype x shape.
void register_reduce(Registry& reg) {
  reg.add_family(Family{"reduce", "", 30, 5, bandwidth_start("baracuda_bench")});
  for (const KindInfo& k : kKinds)
    for (bool bwd : {false, true}) {
      if (bwd && !k.backward) continue;
      for (DType dt : kDTypes)
        for (const ShapeAxes& sa : kShapes) {
          BandwidthCase c{{}, k.name, bwd, dt, sa.shape, sa.axes};
          c.name = std::string(k.name) + (bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(dt)) + "." +
                   join(sa.shape, "x") + ".ax" + join(sa.axes, ",");
          const ReduceKind kind = k.kind;
          reg.add_case(bandwidth_case("reduce", c, [c, kind](Env& env, BandwidthResult& r) { run_case(env, c, kind, r); }));
        }
    }
}

}  // namespace baracuda::bench
