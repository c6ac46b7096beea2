// baracuda_bench: times the reduction plans (forward and backward) with CUDA
// events and reports bandwidth against the device's own copy bandwidth.
//
//   baracuda_bench [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]
//
// Method (bench/torch_reduce.py does the same, so the two are comparable):
//  * copy bandwidth: cudaMemcpyAsync device-to-device of 1 GiB, median time,
//    (bytes read + bytes written) / time;
//  * each case: warm-up runs, then `iters` runs, each between its own pair of
//    events, median time. All timed runs are queued behind a spin kernel so
//    host launch overhead never sits inside an event pair;
//  * inputs never come from L2: each case rotates among enough independent
//    sets of buffers that one sweep touches >= max(4 x L2, 256 MiB);
//  * bytes counted: forward x + y; backward dy + dx (+ x, y where the kind
//    reads them: ReduceBackwardPlan::needs_x / needs_y).
// A plan that fails (select, can_implement, run) is reported and skipped.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "bench_common.hpp"
#include "bench_kernels.hpp"

using namespace baracuda;
using namespace baracuda::bench;

namespace {

// ---- cases -------------------------------------------------------------------

struct KindInfo {
  ReduceKind kind;
  const char* name;  // the op name in case names; torch_reduce.py uses the same
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

struct Case {
  KindInfo kind;
  bool bwd = false;
  DType dtype = DType::F32;
  Dims shape, axes;
  std::string name;  // "logsumexp.bwd.bf16.16x1024x1024.ax1,2"
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const KindInfo& k : kKinds)
    for (bool bwd : {false, true}) {
      if (bwd && !k.backward) continue;
      for (DType dt : kDTypes)
        for (const ShapeAxes& sa : kShapes) {
          Case c{k, bwd, dt, sa.shape, sa.axes, {}};
          c.name = std::string(k.name) + (bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(dt)) + "." +
                   join(sa.shape, "x") + ".ax" + join(sa.axes, ",");
          out.push_back(c);
        }
    }
  return out;
}

// ---- one case --------------------------------------------------------------------

struct Result_ {
  const Case* c = nullptr;
  std::string error;  // empty = ok
  double us = 0, gbps = 0, frac = 0;
  double bytes = 0;
  int sets = 0;
  std::string variant, backend, sku;
};

int sets_for(size_t bytes_per_run, size_t rotate_bytes) {
  const size_t n = (rotate_bytes + bytes_per_run - 1) / std::max<size_t>(bytes_per_run, 1);
  return static_cast<int>(std::clamp<size_t>(n, 1, 64));
}

void record_sku(Result_& r, const KernelSku& sku) {
  r.variant = sku.variant;
  r.backend = backend_name(sku.backend);
  r.sku = sku.to_string();
}

void run_forward(const Env& env, const Case& c, const ReduceDescriptor& d, Result_& r) {
  Result<ReducePlan> plan = ReducePlan::select(env.stream, d);
  status_check(plan.status(), "ReducePlan::select");
  record_sku(r, plan->sku());
  const size_t xn = static_cast<size_t>(shape_numel(c.shape));
  const size_t yn = static_cast<size_t>(shape_numel(plan->output_shape()));
  const size_t xb = xn * dtype_size(c.dtype), yb = yn * dtype_size(plan->output_dtype());
  r.bytes = static_cast<double>(xb + yb);
  r.sets = sets_for(xb + yb, env.rotate_bytes);

  // Prod over thousands of uniform(-1,1) values is 0 after a few hundred; stay near 1.
  const float lo = c.kind.kind == ReduceKind::Prod ? 0.9f : -1.f, hi = c.kind.kind == ReduceKind::Prod ? 1.1f : 1.f;
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

  const double ms = time_median_ms(env.cs, env.opt->warmup, env.opt->iters, [&](int i) {
    status_check(plan->run(env.stream, w, args[static_cast<size_t>(i % r.sets)]), "run");
  });
  r.us = ms * 1e3;
}

void run_backward(const Env& env, const Case& c, const ReduceDescriptor& d, Result_& r) {
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

  const float lo = c.kind.kind == ReduceKind::Prod ? 0.9f : -1.f, hi = c.kind.kind == ReduceKind::Prod ? 1.1f : 1.f;
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

  const double ms = time_median_ms(env.cs, env.opt->warmup, env.opt->iters, [&](int i) {
    status_check(plan->run(env.stream, w, args[static_cast<size_t>(i % r.sets)]), "run");
  });
  r.us = ms * 1e3;
}

Result_ run_case(const Env& env, const Case& c) {
  Result_ r;
  r.c = &c;
  ReduceDescriptor d;
  d.kind = c.kind.kind;
  d.dtype = c.dtype;
  d.shape = c.shape;
  d.axes = c.axes;
  d.keepdim = false;
  d.correction = 1;
  try {
    if (c.bwd)
      run_backward(env, c, d, r);
    else
      run_forward(env, c, d, r);
    r.gbps = r.bytes / (r.us * 1e-6) / 1e9;
    r.frac = env.copy_gbps > 0 ? r.gbps / env.copy_gbps : 0;
  } catch (const std::exception& e) {  // Status failures, CUDA errors, allocation failures
    r.error = e.what();
  }
  return r;
}

// ---- output ------------------------------------------------------------------------

void write_json(const std::string& path, const BandwidthMeta& m, const Options& o, const std::vector<Result_>& rs) {
  std::ostringstream j;
  json_bandwidth_header(j, "baracuda_bench", m, o);
  for (size_t i = 0; i < rs.size(); ++i) {
    const Result_& r = rs[i];
    const Case& c = *r.c;
    json_bandwidth_case(j, i == 0, c.name, c.kind.name, c.bwd, c.dtype, c.shape, c.axes, r);
  }
  json_cases_end(j);
  write_file_atomic(path, j.str());
}

}  // namespace

int main(int argc, char** argv) {
  return bandwidth_main<Result_>(
      argc, argv, "baracuda_bench", all_cases(),
      [](Env& env, const Case& c) {
        Result_ r;
        if (env.context_lost) {
          r.c = &c;
          r.error = "skipped: CUDA context lost in an earlier case";
        } else {
          r = run_case(env, c);
          // A launch error clears; a kernel fault is sticky: stop timing after it.
          if (!r.error.empty() && context_lost_after_error(env.cs)) {
            env.context_lost = true;
            r.error += " [CUDA context lost]";
          }
        }
        return r;
      },
      write_json);
}
