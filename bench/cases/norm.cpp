// Family "norm": NormPlan / NormBackwardPlan (LayerNorm, RMSNorm, fused
// add + RMSNorm), bandwidth against the device's own copy bandwidth
// (bench/torch/norm.py times PyTorch eager on the same case names). Issue
// 12's list, in f32 and bf16, normalized over the last axis:
//   layer_norm.{fwd,bwd}.<dt>.RxC     weight and bias, eps 1e-5
//   rms_norm.{fwd,bwd}.<dt>.RxC       weight
//   add_rms_norm.{fwd,bwd}.<dt>.RxC   h = x + residual, y = rms_norm(h) (both
//                                     written); backward with the incoming
//                                     gradient of h added (residual_grad)
// at [8192, 16384] and [32768, 4096].
//  * bytes counted (what the op must move): forward x (+ residual) read,
//    y (+ h) written, weight / bias read, the stats (mean, rstd: f32 per row)
//    written; backward dy, x (+ dh_in) read, dx written, weight and the stats
//    read, dweight (+ dbias) written;
//  * inputs never come from L2: independent buffer sets rotated until one
//    sweep touches >= max(4 x L2, 256 MiB); the workspace is the plan's.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../bandwidth.hpp"

namespace baracuda::bench {
namespace {

NormDescriptor forward_of(const BandwidthCase& c) {
  NormDescriptor d;
  d.kind = c.op == "layer_norm" ? NormKind::LayerNorm : NormKind::RMSNorm;
  d.dtype = c.dtype;
  d.shape = c.shape;
  d.has_weight = true;
  d.has_bias = c.op == "layer_norm";
  d.residual = c.op == "add_rms_norm";
  d.save_stats = true;
  return d;
}

void run_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const NormDescriptor fd = forward_of(c);
  const bool ln = fd.kind == NormKind::LayerNorm;
  std::optional<NormPlan> fwd;
  std::optional<NormBackwardPlan> bwd;
  size_t ws_bytes = 0;
  if (c.bwd) {
    NormBackwardDescriptor d;
    d.forward = fd;
    d.residual_grad = fd.residual;
    auto p = NormBackwardPlan::select(env.stream, d);
    status_check(p.status(), "NormBackwardPlan::select");
    bwd = *p;
    record_sku(r, bwd->sku());
    ws_bytes = bwd->workspace_size();
  } else {
    auto p = NormPlan::select(env.stream, fd);
    status_check(p.status(), "NormPlan::select");
    fwd = *p;
    record_sku(r, fwd->sku());
    ws_bytes = fwd->workspace_size();
  }
  const int64_t rows = c.shape[0], cols = c.shape[1];
  const size_t es = dtype_size(c.dtype), n = static_cast<size_t>(rows * cols), tb = n * es;
  const size_t vec = static_cast<size_t>(cols) * es, stats = static_cast<size_t>(rows) * 4;
  const int nstats = ln ? 2 : 1;
  // Row tensors per set: forward x, (residual), y, (h); backward dy, x, (dh_in), dx.
  const int row_tensors = c.bwd ? (fd.residual ? 4 : 3) : (fd.residual ? 4 : 2);
  const int params = ln ? 2 : 1;  // weight (+ bias), or their gradients
  const size_t per_run = row_tensors * tb + static_cast<size_t>(params) * vec * (c.bwd ? 2 : 1) +
                         static_cast<size_t>(nstats) * stats;  // backward: weight read + dweight (+ dbias) written
  r.bytes = static_cast<double>(per_run);
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_run - 1) / per_run, 1, 16));
  uint64_t seed = 11;
  auto filled = [&](size_t bytes, DType dt, size_t count, float lo, float hi) {
    Buffer b = device_buffer(bytes, 16);
    cuda_check(bench_fill_uniform(b.data(), dt, count, lo, hi, seed++, env.cs), "fill");
    return b;
  };
  std::vector<Buffer> keep;
  Buffer w = filled(vec, c.dtype, static_cast<size_t>(cols), 0.5f, 1.5f), bias = filled(vec, c.dtype, static_cast<size_t>(cols), -0.5f, 0.5f);
  Buffer ws = device_buffer(std::max<size_t>(ws_bytes, 16), 16);
  const Workspace wks(ws.data(), ws_bytes);
  const Dims shape = c.shape, pshape{cols}, sshape{rows};
  double ms = 0;
  if (c.bwd) {
    std::vector<NormBackwardArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      NormBackwardArgs a;
      keep.push_back(filled(tb, c.dtype, n, -1.f, 1.f));
      a.dy = keep.back().view(c.dtype, shape);
      keep.push_back(filled(tb, c.dtype, n, -2.f, 2.f));
      a.x = keep.back().view(c.dtype, shape);
      if (fd.residual) {
        keep.push_back(filled(tb, c.dtype, n, -1.f, 1.f));
        a.dh_in = keep.back().view(c.dtype, shape);
      }
      keep.push_back(device_buffer(tb, 16));
      a.dx = keep.back().view_mut(c.dtype, shape);
      a.weight = w.view(c.dtype, pshape);
      if (ln) {
        keep.push_back(filled(stats, DType::F32, static_cast<size_t>(rows), -0.1f, 0.1f));
        a.mean = keep.back().view(DType::F32, sshape);
      }
      keep.push_back(filled(stats, DType::F32, static_cast<size_t>(rows), 0.8f, 1.2f));
      a.rstd = keep.back().view(DType::F32, sshape);
      keep.push_back(device_buffer(vec, 16));
      a.dweight = keep.back().view_mut(c.dtype, pshape);
      if (ln) {
        keep.push_back(device_buffer(vec, 16));
        a.dbias = keep.back().view_mut(c.dtype, pshape);
      }
      args.push_back(a);
    }
    status_check(bwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(bwd->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  } else {
    std::vector<NormArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      NormArgs a;
      keep.push_back(filled(tb, c.dtype, n, -2.f, 2.f));
      a.x = keep.back().view(c.dtype, shape);
      if (fd.residual) {
        keep.push_back(filled(tb, c.dtype, n, -2.f, 2.f));
        a.residual = keep.back().view(c.dtype, shape);
        keep.push_back(device_buffer(tb, 16));
        a.h = keep.back().view_mut(c.dtype, shape);
      }
      keep.push_back(device_buffer(tb, 16));
      a.y = keep.back().view_mut(c.dtype, shape);
      a.weight = w.view(c.dtype, pshape);
      if (ln) a.bias = bias.view(c.dtype, pshape);
      if (ln) {
        keep.push_back(device_buffer(stats, 16));
        a.mean = keep.back().view_mut(DType::F32, sshape);
      }
      keep.push_back(device_buffer(stats, 16));
      a.rstd = keep.back().view_mut(DType::F32, sshape);
      args.push_back(a);
    }
    status_check(fwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(fwd->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  }
  r.us = ms * 1e3;
}

}  // namespace

void register_norm(Registry& reg) {
  reg.add_family(Family{"norm", "", 30, 5, bandwidth_start("baracuda_norm_bench")});
  const Dims shapes[] = {Dims{8192, 16384}, Dims{32768, 4096}};
  for (const char* op : {"layer_norm", "rms_norm", "add_rms_norm"})
    for (bool bwd : {false, true})
      for (DType dt : {DType::F32, DType::BF16})
        for (const Dims& s : shapes) {
          BandwidthCase c{{}, op, bwd, dt, s, Dims{1}};
          c.name = c.op + (bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(dt)) + "." + join(s, "x");
          reg.add_case(bandwidth_case("norm", c, [c](Env& env, BandwidthResult& r) { run_case(env, c, r); }));
        }
}

}  // namespace baracuda::bench
