// Family "random": RandomPlan fills and DropoutPlan / DropoutBackwardPlan,
// bandwidth against the device's own copy bandwidth (bench/torch/random.py
// times PyTorch's generators and dropout on the same case names):
//   random_normal.fwd.{f32,bf16}.8192x16384     normal(0, 1) fill (torch: normal_)
//   random_uniform.fwd.f32.8192x16384           uniform [0, 1) fill (torch: uniform_)
//   dropout.fwd.bf16.8192x16384                 p = 0.1, no saved mask
//   dropout_mask.fwd.bf16.8192x16384            p = 0.1, 1-bit mask saved
//   dropout.bwd.bf16.8192x16384                 keep regenerated from (seed, offset)
//   dropout_mask.bwd.bf16.8192x16384            keep read from the 1-bit mask
//  * buffers never come from L2: enough independent sets that one sweep
//    touches >= max(4 x L2, 256 MiB);
//  * bytes counted: out written (fills); x read + out written (+ n / 8 mask
//    bytes written or read) for dropout; the offsets advance every run.
#include <algorithm>
#include <string>
#include <vector>

#include "../bandwidth.hpp"

namespace baracuda::bench {
namespace {

constexpr int64_t kRows = 8192, kCols = 16384;
constexpr double kP = 0.1;

void run_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const Dims shape = c.shape;
  const size_t n = static_cast<size_t>(shape_numel(shape)), tb = n * dtype_size(c.dtype), mb = (n + 7) / 8;
  const bool is_fill = c.op.rfind("random_", 0) == 0;
  const bool mask = c.op == "dropout_mask";
  double ms = 0;
  if (is_fill) {
    RandomDescriptor d;
    d.distribution = c.op == "random_normal" ? RandomDistribution::Normal : RandomDistribution::Uniform;
    d.dtype = c.dtype;
    d.shape = shape;
    auto p = RandomPlan::select(env.stream, d);
    status_check(p.status(), "RandomPlan::select");
    record_sku(r, p->sku());
    r.bytes = static_cast<double>(tb);
    r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + tb - 1) / tb, 1, 16));
    std::vector<Buffer> bufs;
    for (int s = 0; s < r.sets; ++s) bufs.push_back(device_buffer(tb));
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      RandomArgs a;
      a.seed = RandomSeed{1234, static_cast<uint64_t>(i)};
      a.out = bufs[static_cast<size_t>(i % r.sets)].view_mut(c.dtype, shape);
      status_check(p->run(env.stream, Workspace::none(), a), "run");
    });
  } else {
    const size_t per_run = 2 * tb + (mask ? mb : 0);
    r.bytes = static_cast<double>(per_run);
    r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_run - 1) / per_run, 1, 16));
    uint64_t seed = 1;
    std::vector<Buffer> xs, outs, masks;
    for (int s = 0; s < r.sets; ++s) {
      xs.push_back(device_buffer(tb));
      cuda_check(bench_fill_uniform(xs.back().data(), c.dtype, n, -1.f, 1.f, seed++, env.cs), "fill");
      outs.push_back(device_buffer(tb));
      masks.push_back(device_buffer(std::max<size_t>(mb, 16)));
    }
    const Dims ms_shape{static_cast<int64_t>(mb)};
    if (!c.bwd) {
      DropoutDescriptor d;
      d.dtype = c.dtype, d.shape = shape, d.p = kP, d.save_mask = mask;
      auto p = DropoutPlan::select(env.stream, d);
      status_check(p.status(), "DropoutPlan::select");
      record_sku(r, p->sku());
      ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
        const size_t s = static_cast<size_t>(i % r.sets);
        DropoutArgs a;
        a.seed = RandomSeed{99, static_cast<uint64_t>(i)};
        a.x = xs[s].view(c.dtype, shape);
        a.out = outs[s].view_mut(c.dtype, shape);
        if (mask) a.mask = masks[s].view_mut(DType::U8, ms_shape);
        status_check(p->run(env.stream, Workspace::none(), a), "run");
      });
    } else {
      DropoutBackwardDescriptor d;
      d.dtype = c.dtype, d.shape = shape, d.p = kP, d.use_mask = mask;
      auto p = DropoutBackwardPlan::select(env.stream, d);
      status_check(p.status(), "DropoutBackwardPlan::select");
      record_sku(r, p->sku());
      ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
        const size_t s = static_cast<size_t>(i % r.sets);
        DropoutBackwardArgs a;
        a.seed = RandomSeed{99, static_cast<uint64_t>(i)};
        a.dy = xs[s].view(c.dtype, shape);
        a.dx = outs[s].view_mut(c.dtype, shape);
        if (mask) a.mask = masks[s].view(DType::U8, ms_shape);
        status_check(p->run(env.stream, Workspace::none(), a), "run");
      });
    }
  }
  r.us = ms * 1e3;
}

}  // namespace

void register_random(Registry& reg) {
  reg.add_family(Family{"random", "", 30, 5, bandwidth_start("baracuda_random_bench")});
  struct Spec {
    const char* op;
    bool bwd;
    DType t;
  };
  const Spec specs[] = {{"random_normal", false, DType::F32},  {"random_normal", false, DType::BF16},
                        {"random_uniform", false, DType::F32}, {"dropout", false, DType::BF16},
                        {"dropout_mask", false, DType::BF16},  {"dropout", true, DType::BF16},
                        {"dropout_mask", true, DType::BF16}};
  for (const Spec& sp : specs) {
    BandwidthCase c{{}, sp.op, sp.bwd, sp.t, Dims{kRows, kCols}, Dims{}};
    c.name = c.op + (sp.bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(c.dtype)) + "." + join(c.shape, "x");
    reg.add_case(bandwidth_case("random", c, [c](Env& env, BandwidthResult& r) { run_case(env, c, r); }));
  }
}

}  // namespace baracuda::bench
