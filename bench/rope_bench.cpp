// baracuda_rope_bench: times RopePlan / RopeBackwardPlan (q and k rotated in
// one launch) with CUDA events and reports bandwidth against the device's own
// copy bandwidth, measured in the same run.
//
//   baracuda_rope_bench [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]
//
// Cases (bench/torch_rope.py times PyTorch's eager RoPE on the same names):
//   rope.{fwd,bwd}.bf16.4x32x4096x128              HalfSplit, positions [B,S] i64
//                                                  (cos/sin computed in the kernel)
//   rope_cache.{fwd,bwd}.bf16.4x32x4096x128        HalfSplit, f32 cos/sin cache [S, D/2]
//   rope_interleaved.{fwd,bwd}.bf16.4x32x4096x128  Interleaved pairs, positions [B,S] i64
// q and k are [B, H, S, D] = [4, 32, 4096, 128] bf16 (H = Hk = 32), contiguous,
// rotated out of place.
// Method (the same as baracuda_bench / torch_reduce.py, so compare.py can
// join the JSON files by case name):
//  * copy bandwidth: cudaMemcpyAsync device-to-device of 1 GiB, median time,
//    (bytes read + bytes written) / time;
//  * each case: warm-up runs, then `iters` runs, each between its own pair of
//    events, median time; the timed runs are queued behind a spin kernel so
//    host launch overhead never sits inside an event pair;
//  * inputs never come from L2: enough independent buffer sets that one sweep
//    touches >= max(4 x L2, 256 MiB) (one set here: a run moves 512 MiB);
//  * bytes counted: q, k read + q_out, k_out written (dy_q, dy_k, dq, dk for
//    the backward) + the positions or the cos/sin tables read once.
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
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

struct Case {
  std::string op;  // "rope", "rope_cache", "rope_interleaved"
  bool bwd = false;
  DType dtype = DType::BF16;
  int64_t B = 4, H = 32, S = 4096, D = 128;
  RopePairs pairs = RopePairs::HalfSplit;
  bool cache = false;
  std::string name;
};

std::vector<Case> all_cases() {
  std::vector<Case> out;
  for (const char* op : {"rope", "rope_cache", "rope_interleaved"})
    for (bool bwd : {false, true}) {
      Case c;
      c.op = op;
      c.bwd = bwd;
      c.cache = c.op == "rope_cache";
      c.pairs = c.op == "rope_interleaved" ? RopePairs::Interleaved : RopePairs::HalfSplit;
      c.name = c.op + (bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(c.dtype)) + "." + std::to_string(c.B) + "x" +
               std::to_string(c.H) + "x" + std::to_string(c.S) + "x" + std::to_string(c.D);
      out.push_back(c);
    }
  return out;
}

struct Res {
  const Case* c = nullptr;
  std::string error, variant, backend, sku;
  double us = 0, gbps = 0, frac = 0, bytes = 0;
  int sets = 0;
};

void run_case(const Env& env, const Case& c, Res& r) {
  RopeDescriptor d;
  d.dtype = c.dtype;
  d.batch = c.B;
  d.heads = d.kv_heads = c.H;
  d.seq_len = c.S;
  d.head_dim = c.D;
  d.pairs = c.pairs;
  d.positions = RopePositions::PerBatch;
  d.position_dtype = DType::I64;
  d.use_cache = c.cache;
  d.cache_len = c.S;

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
  const KernelSku& sku = c.bwd ? bwd->sku() : fwd->sku();
  r.variant = sku.variant;
  r.backend = backend_name(sku.backend);
  r.sku = sku.to_string();

  const Dims qs{c.B, c.H, c.S, c.D};
  const size_t n = static_cast<size_t>(shape_numel(qs)), tb = n * dtype_size(c.dtype);
  const int64_t half = c.D / 2;
  // Positions [B, S] = arange(S) per sequence; cache rows = positions.
  std::vector<int64_t> pos(static_cast<size_t>(c.B * c.S));
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t s = 0; s < c.S; ++s) pos[static_cast<size_t>(b * c.S + s)] = s;
  Buffer dpos = device_buffer(pos.size() * 8);
  status_check(dpos.copy_from_host(pos.data(), pos.size() * 8), "upload positions");
  Buffer dcos, dsin;
  if (c.cache) {
    std::vector<float> cv(static_cast<size_t>(c.S * half)), sv(cv.size());
    for (int64_t s = 0; s < c.S; ++s)
      for (int64_t i = 0; i < half; ++i) {
        const double a = static_cast<double>(s) * std::pow(d.theta, -2.0 * static_cast<double>(i) / static_cast<double>(c.D));
        cv[static_cast<size_t>(s * half + i)] = static_cast<float>(std::cos(a));
        sv[static_cast<size_t>(s * half + i)] = static_cast<float>(std::sin(a));
      }
    dcos = device_buffer(cv.size() * 4);
    dsin = device_buffer(sv.size() * 4);
    status_check(dcos.copy_from_host(cv.data(), cv.size() * 4), "upload cos");
    status_check(dsin.copy_from_host(sv.data(), sv.size() * 4), "upload sin");
  }
  const size_t extra = c.cache ? static_cast<size_t>(2 * c.S * half * 4) + pos.size() * 8 : pos.size() * 8;
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
  const TensorRef pv = dpos.view(DType::I64, {c.B, c.S});
  const TensorRef cv = c.cache ? dcos.view(DType::F32, {c.S, half}) : TensorRef();
  const TensorRef sv = c.cache ? dsin.view(DType::F32, {c.S, half}) : TensorRef();
  auto in = [&](int s, int j) { return bufs[static_cast<size_t>(4 * s + j)].view(c.dtype, qs); };
  auto out = [&](int s, int j) { return bufs[static_cast<size_t>(4 * s + j)].view_mut(c.dtype, qs); };
  double ms = 0;
  if (c.bwd) {
    std::vector<RopeBackwardArgs> args;
    for (int s = 0; s < r.sets; ++s) args.push_back({in(s, 0), in(s, 1), pv, cv, sv, out(s, 2), out(s, 3)});
    status_check(bwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.opt->warmup, env.opt->iters, [&](int i) {
      status_check(bwd->run(env.stream, Workspace::none(), args[static_cast<size_t>(i % r.sets)]), "run");
    });
  } else {
    std::vector<RopeArgs> args;
    for (int s = 0; s < r.sets; ++s) args.push_back({in(s, 0), in(s, 1), pv, cv, sv, out(s, 2), out(s, 3)});
    status_check(fwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.opt->warmup, env.opt->iters, [&](int i) {
      status_check(fwd->run(env.stream, Workspace::none(), args[static_cast<size_t>(i % r.sets)]), "run");
    });
  }
  r.us = ms * 1e3;
  r.gbps = r.bytes / (r.us * 1e-6) / 1e9;
  r.frac = env.copy_gbps > 0 ? r.gbps / env.copy_gbps : 0;
}

void write_json(const std::string& path, const BandwidthMeta& m, const Options& o, const std::vector<Res>& rs) {
  std::ostringstream j;
  json_bandwidth_header(j, "baracuda_rope_bench", m, o);
  for (size_t i = 0; i < rs.size(); ++i) {
    const Res& r = rs[i];
    const Case& c = *r.c;
    json_bandwidth_case(j, i == 0, c.name, c.op, c.bwd, c.dtype, Dims{c.B, c.H, c.S, c.D}, Dims{}, r);
  }
  json_cases_end(j);
  write_file_atomic(path, j.str());
}

}  // namespace

int main(int argc, char** argv) {
  return bandwidth_main<Res>(
      argc, argv, "baracuda_rope_bench", all_cases(),
      [](Env& env, const Case& c) {
        Res r;
        r.c = &c;
        try {
          run_case(env, c, r);
        } catch (const std::exception& e) {
          r.error = e.what();
          cudaGetLastError();
        }
        return r;
      },
      write_json);
}
