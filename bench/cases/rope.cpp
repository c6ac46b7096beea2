// Family "rope": RopePlan / RopeBackwardPlan (q and k rotated in one launch),
// bandwidth against the device's own copy bandwidth (bench/torch/rope.py times
// PyTorch's eager RoPE on the same case names):
//   rope.{fwd,bwd}.bf16.4x32x4096x128              HalfSplit, positions [B,S] i64
//                                                  (cos/sin computed in the kernel)
//   rope_cache.{fwd,bwd}.bf16.4x32x4096x128        HalfSplit, f32 cos/sin cache [S, D/2]
//   rope_interleaved.{fwd,bwd}.bf16.4x32x4096x128  Interleaved pairs, positions [B,S] i64
// q and k are [B, H, S, D] = [4, 32, 4096, 128] bf16 (H = Hk = 32), contiguous,
// rotated out of place.
//  * inputs never come from L2: enough independent buffer sets that one sweep
//    touches >= max(4 x L2, 256 MiB) (one set here: a run moves 512 MiB);
//  * bytes counted: q, k read + q_out, k_out written (dy_q, dy_k, dq, dk for
//    the backward) + the positions or the cos/sin tables read once.
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../bandwidth.hpp"

namespace baracuda::bench {
namespace {

constexpr int64_t kB = 4, kH = 32, kS = 4096, kD = 128;

void run_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const bool cache = c.op == "rope_cache";
  const int64_t B = c.shape[0], H = c.shape[1], S = c.shape[2], D = c.shape[3];
  RopeDescriptor d;
  d.dtype = c.dtype;
  d.batch = B;
  d.heads = d.kv_heads = H;
  d.seq_len = S;
  d.head_dim = D;
  d.pairs = c.op == "rope_interleaved" ? RopePairs::Interleaved : RopePairs::HalfSplit;
  d.positions = RopePositions::PerBatch;
  d.position_dtype = DType::I64;
  d.use_cache = cache;
  d.cache_len = S;

  std::optional<RopePlan> fwd;
  std::optional<RopeBackwardPlan> bwd;
  if (c.bwd) {
    auto p = RopeBackwardPlan::select(env.stream, d);
    status_check(p.status(), "RopeBackwardPlan::select");
    bwd = *p;
  } else {
    auto p = RopePlan::select(env.stream, d);
    status_check(p.status(), "RopePlan::select");
    fwd = *p;
  }
  record_sku(r, c.bwd ? bwd->sku() : fwd->sku());

  const Dims qs{B, H, S, D};
  const size_t n = static_cast<size_t>(shape_numel(qs)), tb = n * dtype_size(c.dtype);
  const int64_t half = D / 2;
  // Positions [B, S] = arange(S) per sequence; cache rows = positions.
  std::vector<int64_t> pos(static_cast<size_t>(B * S));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t s = 0; s < S; ++s) pos[static_cast<size_t>(b * S + s)] = s;
  Buffer dpos = device_buffer(pos.size() * 8);
  status_check(dpos.copy_from_host(pos.data(), pos.size() * 8), "upload positions");
  Buffer dcos, dsin;
  if (cache) {
    std::vector<float> cv(static_cast<size_t>(S * half)), sv(cv.size());
    for (int64_t s = 0; s < S; ++s)
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(s) * std::pow(d.theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
        cv[static_cast<size_t>(s * half + i)] = static_cast<float>(std::cos(a));
        sv[static_cast<size_t>(s * half + i)] = static_cast<float>(std::sin(a));
      }
    dcos = device_buffer(cv.size() * 4);
    dsin = device_buffer(sv.size() * 4);
    status_check(dcos.copy_from_host(cv.data(), cv.size() * 4), "upload cos");
    status_check(dsin.copy_from_host(sv.data(), sv.size() * 4), "upload sin");
  }
  const size_t extra = cache ? static_cast<size_t>(2 * S * half * 4) + pos.size() * 8 : pos.size() * 8;
  const size_t per_run = 4 * tb + extra;  // q, k read; q_out, k_out written
  r.bytes = static_cast<double>(per_run);
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_run - 1) / per_run, 1, 16));

  uint64_t seed = 1;
  std::vector<Buffer> bufs;
  for (int s = 0; s < r.sets; ++s)
    for (int j = 0; j < 4; ++j) {
      bufs.push_back(device_buffer(tb));
      if (j < 2) cuda_check(bench_fill_uniform(bufs.back().data(), c.dtype, n, -1.f, 1.f, seed++, env.cs), "fill");
    }
  const TensorRef pv = dpos.view(DType::I64, {B, S});
  const TensorRef cv = cache ? dcos.view(DType::F32, {S, half}) : TensorRef();
  const TensorRef sv = cache ? dsin.view(DType::F32, {S, half}) : TensorRef();
  auto in = [&](int s, int j) { return bufs[static_cast<size_t>(4 * s + j)].view(c.dtype, qs); };
  auto out = [&](int s, int j) { return bufs[static_cast<size_t>(4 * s + j)].view_mut(c.dtype, qs); };
  double ms = 0;
  if (c.bwd) {
    std::vector<RopeBackwardArgs> args;
    for (int s = 0; s < r.sets; ++s) args.push_back({in(s, 0), in(s, 1), pv, cv, sv, out(s, 2), out(s, 3)});
    status_check(bwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(bwd->run(env.stream, Workspace::none(), args[static_cast<size_t>(i % r.sets)]), "run");
    });
  } else {
    std::vector<RopeArgs> args;
    for (int s = 0; s < r.sets; ++s) args.push_back({in(s, 0), in(s, 1), pv, cv, sv, out(s, 2), out(s, 3)});
    status_check(fwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(fwd->run(env.stream, Workspace::none(), args[static_cast<size_t>(i % r.sets)]), "run");
    });
  }
  r.us = ms * 1e3;
}

}  // namespace

void register_rope(Registry& reg) {
  reg.add_family(Family{"rope", "", 30, 5, bandwidth_start("baracuda_rope_bench")});
  for (const char* op : {"rope", "rope_cache", "rope_interleaved"})
    for (bool bwd : {false, true}) {
      BandwidthCase c{{}, op, bwd, DType::BF16, Dims{kB, kH, kS, kD}, Dims{}};
      c.name = c.op + (bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(c.dtype)) + "." + join(c.shape, "x");
      reg.add_case(bandwidth_case("rope", c, [c](Env& env, BandwidthResult& r) { run_case(env, c, r); }));
    }
}

}  // namespace baracuda::bench
