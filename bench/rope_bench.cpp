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
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "bench_kernels.hpp"

using namespace baracuda;

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

// ---- utilities (the same method as reduce_bench.cpp) ---------------------------------
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
void status_check(const Status& s, const char* what) {
  if (!s.is_ok()) throw std::runtime_error(std::string(what) + ": " + s.to_string());
}
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}
std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}
std::string json_str(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}
std::string json_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

template <class F>
double time_median_ms(cudaStream_t s, int warmup, int iters, F&& launch) {
  cuda_check(cudaStreamSynchronize(s), "sync");
  const auto h0 = std::chrono::steady_clock::now();
  for (int i = 0; i < warmup; ++i) launch(i);
  const double host_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - h0).count() / std::max(warmup, 1);
  cuda_check(cudaStreamSynchronize(s), "warm-up");
  std::vector<cudaEvent_t> ev(2 * static_cast<size_t>(iters));
  for (auto& e : ev) cuda_check(cudaEventCreate(&e), "cudaEventCreate");
  const double spin_us = std::min(2e5, iters * std::max(2.0 * host_us, 20.0) + 100.0);
  cuda_check(bench_spin(static_cast<uint64_t>(spin_us * 1e3), s), "spin");
  for (int i = 0; i < iters; ++i) {
    cuda_check(cudaEventRecord(ev[2 * i], s), "cudaEventRecord");
    launch(warmup + i);
    cuda_check(cudaEventRecord(ev[2 * i + 1], s), "cudaEventRecord");
  }
  cuda_check(cudaStreamSynchronize(s), "timed runs");
  std::vector<double> ms(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i) {
    float t = 0;
    cuda_check(cudaEventElapsedTime(&t, ev[2 * i], ev[2 * i + 1]), "cudaEventElapsedTime");
    ms[i] = t;
  }
  for (auto& e : ev) cudaEventDestroy(e);
  return median(ms);
}

struct Options {
  std::string json, filter;
  int iters = 30, warmup = 5;
  bool list = false;
};
struct Env {
  cudaStream_t cs = nullptr;
  Stream stream = Stream::cuda(0);
  size_t rotate_bytes = 0;
  double copy_gbps = 0;
  const Options* opt = nullptr;
};
struct Res {
  const Case* c = nullptr;
  std::string error, variant, backend, sku;
  double us = 0, gbps = 0, frac = 0, bytes = 0;
  int sets = 0;
};

Buffer device_buffer(size_t bytes) { return Buffer(Device::cuda(0), std::max<size_t>(bytes, 1)); }

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

struct Meta {
  std::string device, date, runtime, driver;
  int cc_major = 0, cc_minor = 0, sms = 0;
  size_t l2 = 0, mem = 0;
  double copy_gbps = 0;
};

void write_json(const std::string& path, const Meta& m, const Options& o, const std::vector<Res>& rs) {
  std::ostringstream j;
  j << "{\n  \"tool\": \"baracuda_rope_bench\",\n"
    << "  \"date\": " << json_str(m.date) << ",\n"
    << "  \"device\": " << json_str(m.device) << ",\n"
    << "  \"compute_capability\": \"" << m.cc_major << "." << m.cc_minor << "\",\n"
    << "  \"sm_count\": " << m.sms << ",\n  \"l2_bytes\": " << m.l2 << ",\n  \"memory_bytes\": " << m.mem << ",\n"
    << "  \"cuda_runtime\": " << json_str(m.runtime) << ",\n  \"cuda_driver\": " << json_str(m.driver) << ",\n"
    << "  \"copy_bandwidth_gbps\": " << json_num(m.copy_gbps) << ",\n"
    << "  \"iters\": " << o.iters << ",\n  \"warmup\": " << o.warmup << ",\n"
    << "  \"filter\": " << json_str(o.filter) << ",\n  \"cases\": [";
  for (size_t i = 0; i < rs.size(); ++i) {
    const Res& r = rs[i];
    const Case& c = *r.c;
    j << (i ? ",\n" : "\n") << "    {\"name\": " << json_str(c.name) << ", \"op\": " << json_str(c.op)
      << ", \"dir\": \"" << (c.bwd ? "bwd" : "fwd") << "\", \"dtype\": " << json_str(std::string(dtype_name(c.dtype)))
      << ", \"shape\": [" << c.B << ", " << c.H << ", " << c.S << ", " << c.D << "], \"axes\": []"
      << ", \"ok\": " << (r.error.empty() ? "true" : "false");
    if (r.error.empty())
      j << ", \"time_us\": " << json_num(r.us) << ", \"gbps\": " << json_num(r.gbps) << ", \"frac_copy\": " << json_num(r.frac)
        << ", \"bytes\": " << json_num(r.bytes) << ", \"sets\": " << r.sets;
    else
      j << ", \"error\": " << json_str(r.error);
    j << ", \"variant\": " << json_str(r.variant) << ", \"backend\": " << json_str(r.backend) << ", \"sku\": " << json_str(r.sku)
      << "}";
  }
  j << "\n  ]\n}\n";
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << j.str();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::fprintf(stderr, "cannot write %s\n", path.c_str());
}

int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]\n", argv0);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--list") o.list = true;
    else if (a == "--json" && (v = next())) o.json = v;
    else if (a == "--filter" && (v = next())) o.filter = v;
    else if (a == "--iters" && (v = next())) o.iters = std::max(1, std::atoi(v));
    else if (a == "--warmup" && (v = next())) o.warmup = std::max(0, std::atoi(v));
    else return usage(argv[0]);
  }
  std::vector<Case> cases;
  for (const Case& c : all_cases())
    if (c.name.find(o.filter) != std::string::npos) cases.push_back(c);
  if (o.list) {
    for (const Case& c : cases) std::printf("%s\n", c.name.c_str());
    return 0;
  }

  Meta m;
  Env env;
  env.opt = &o;
  try {
    cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
    cudaDeviceProp p{};
    cuda_check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
    int rt = 0, drv = 0;
    cudaRuntimeGetVersion(&rt);
    cudaDriverGetVersion(&drv);
    m.device = p.name;
    m.cc_major = p.major;
    m.cc_minor = p.minor;
    m.sms = p.multiProcessorCount;
    m.l2 = static_cast<size_t>(p.l2CacheSize);
    m.mem = p.totalGlobalMem;
    m.runtime = version_string(rt);
    m.driver = version_string(drv);
    m.date = utc_now();
    cuda_check(cudaStreamCreateWithFlags(&env.cs, cudaStreamNonBlocking), "cudaStreamCreate");
    env.stream = Stream::cuda(0, env.cs);
    env.rotate_bytes = std::max<size_t>(4 * m.l2, size_t{256} << 20);
    const size_t bytes = size_t{1} << 30;
    Buffer src = device_buffer(bytes), dst = device_buffer(bytes);
    cuda_check(bench_fill_uniform(src.data(), DType::F32, bytes / 4, -1.f, 1.f, 12345, env.cs), "fill");
    const double ms = time_median_ms(env.cs, 3, 20, [&](int) {
      cuda_check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, env.cs), "memcpy");
    });
    m.copy_gbps = 2.0 * bytes / (ms * 1e-3) / 1e9;
    env.copy_gbps = m.copy_gbps;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baracuda_rope_bench: setup failed: %s\n", e.what());
    return 1;
  }
  std::printf("device: %s (sm_%d%d, %d SMs, L2 %.0f MB), CUDA runtime %s, driver %s\n", m.device.c_str(), m.cc_major,
              m.cc_minor, m.sms, m.l2 / 1e6, m.runtime.c_str(), m.driver.c_str());
  std::printf("copy bandwidth (D2D memcpy, read+write): %.1f GB/s; %d iters, median\n\n", m.copy_gbps, o.iters);
  std::printf("%-42s %10s %8s %7s  %s\n", "case", "time_us", "GB/s", "%copy", "variant");

  std::vector<Res> results;
  int failed = 0;
  for (const Case& c : cases) {
    Res r;
    r.c = &c;
    try {
      run_case(env, c, r);
    } catch (const std::exception& e) {
      r.error = e.what();
      cudaGetLastError();
    }
    failed += !r.error.empty();
    if (r.error.empty())
      std::printf("%-42s %10.1f %8.1f %6.1f%%  %s\n", c.name.c_str(), r.us, r.gbps, 100 * r.frac, r.variant.c_str());
    else
      std::printf("%-42s  ERROR %s\n", c.name.c_str(), r.error.c_str());
    std::fflush(stdout);
    results.push_back(std::move(r));
    if (!o.json.empty()) write_json(o.json, m, o, results);
  }
  std::printf("\n%zu cases, %d failed\n", results.size(), failed);
  if (env.cs) cudaStreamDestroy(env.cs);
  return failed ? 3 : 0;
}
