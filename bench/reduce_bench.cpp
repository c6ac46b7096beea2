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
#include <chrono>
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

std::string join(const Dims& d, const char* sep) {
  std::string s;
  for (int i = 0; i < d.rank; ++i) s += (i ? sep : "") + std::to_string(d[i]);
  return s;
}

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

// ---- small utilities -----------------------------------------------------------

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
std::string json_dims(const Dims& d) { return "[" + join(d, ", ") + "]"; }
std::string json_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// Times launch(i) (i counts every call, warm-up included, so callers can rotate
// buffers with it): `warmup` untimed calls, then `iters` calls each between its
// own pair of events. Returns the median in milliseconds.
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
  // Long enough for the host to queue every timed launch (2x the measured
  // enqueue cost, at least 20 us each), capped so a slow host cannot stall long.
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

// ---- one case --------------------------------------------------------------------

struct Options {
  std::string json, filter;
  int iters = 30, warmup = 5;
  bool list = false;
};

struct Result_ {
  const Case* c = nullptr;
  std::string error;  // empty = ok
  double us = 0, gbps = 0, frac = 0;
  double bytes = 0;
  int sets = 0;
  std::string variant, backend, sku;
};

struct Env {
  cudaStream_t cs = nullptr;
  Stream stream = Stream::cuda(0);
  size_t rotate_bytes = 0;  // one sweep over the sets touches at least this
  double copy_gbps = 0;
  const Options* opt = nullptr;
};

int sets_for(size_t bytes_per_run, size_t rotate_bytes) {
  const size_t n = (rotate_bytes + bytes_per_run - 1) / std::max<size_t>(bytes_per_run, 1);
  return static_cast<int>(std::clamp<size_t>(n, 1, 64));
}

Buffer device_buffer(size_t bytes) { return Buffer(Device::cuda(0), std::max<size_t>(bytes, 1)); }

uint64_t g_seed = 1;  // every filled buffer gets fresh data
void fill(const Env& env, Buffer& b, DType dt, size_t n, float lo, float hi) {
  cuda_check(bench_fill_uniform(b.data(), dt, n, lo, hi, g_seed++, env.cs), "fill");
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

struct Meta {
  std::string device, date, runtime, driver;
  int cc_major = 0, cc_minor = 0, sms = 0;
  size_t l2 = 0, mem = 0;
  double copy_gbps = 0;
};

void write_json(const std::string& path, const Meta& m, const Options& o, const std::vector<Result_>& rs) {
  std::ostringstream j;
  j << "{\n  \"tool\": \"baracuda_bench\",\n"
    << "  \"date\": " << json_str(m.date) << ",\n"
    << "  \"device\": " << json_str(m.device) << ",\n"
    << "  \"compute_capability\": \"" << m.cc_major << "." << m.cc_minor << "\",\n"
    << "  \"sm_count\": " << m.sms << ",\n  \"l2_bytes\": " << m.l2 << ",\n  \"memory_bytes\": " << m.mem << ",\n"
    << "  \"cuda_runtime\": " << json_str(m.runtime) << ",\n  \"cuda_driver\": " << json_str(m.driver) << ",\n"
    << "  \"copy_bandwidth_gbps\": " << json_num(m.copy_gbps) << ",\n"
    << "  \"iters\": " << o.iters << ",\n  \"warmup\": " << o.warmup << ",\n"
    << "  \"filter\": " << json_str(o.filter) << ",\n  \"cases\": [";
  for (size_t i = 0; i < rs.size(); ++i) {
    const Result_& r = rs[i];
    const Case& c = *r.c;
    j << (i ? ",\n" : "\n") << "    {\"name\": " << json_str(c.name) << ", \"op\": " << json_str(c.kind.name)
      << ", \"dir\": \"" << (c.bwd ? "bwd" : "fwd") << "\", \"dtype\": " << json_str(std::string(dtype_name(c.dtype)))
      << ", \"shape\": " << json_dims(c.shape) << ", \"axes\": " << json_dims(c.axes)
      << ", \"ok\": " << (r.error.empty() ? "true" : "false");
    if (r.error.empty())
      j << ", \"time_us\": " << json_num(r.us) << ", \"gbps\": " << json_num(r.gbps)
        << ", \"frac_copy\": " << json_num(r.frac) << ", \"bytes\": " << json_num(r.bytes) << ", \"sets\": " << r.sets;
    else
      j << ", \"error\": " << json_str(r.error);
    j << ", \"variant\": " << json_str(r.variant) << ", \"backend\": " << json_str(r.backend)
      << ", \"sku\": " << json_str(r.sku) << "}";
  }
  j << "\n  ]\n}\n";
  // Write-then-rename: a run killed mid-way still leaves the last complete file.
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << j.str();
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::fprintf(stderr, "cannot write %s\n", path.c_str());
}

void print_row(const Result_& r) {
  if (r.error.empty())
    std::printf("%-42s %10.1f %8.1f %6.1f%%  %s\n", r.c->name.c_str(), r.us, r.gbps, 100 * r.frac, r.variant.c_str());
  else
    std::printf("%-42s  ERROR %s\n", r.c->name.c_str(), r.error.c_str());
  std::fflush(stdout);
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

    // Copy bandwidth: the practical ceiling for a memory-bound op on this GPU.
    {
      const size_t bytes = size_t{1} << 30;
      Buffer src = device_buffer(bytes), dst = device_buffer(bytes);
      cuda_check(bench_fill_uniform(src.data(), DType::F32, bytes / 4, -1.f, 1.f, 12345, env.cs), "fill");
      const double ms = time_median_ms(env.cs, 3, 20, [&](int) {
        cuda_check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, env.cs), "memcpy");
      });
      m.copy_gbps = 2.0 * bytes / (ms * 1e-3) / 1e9;
      env.copy_gbps = m.copy_gbps;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "baracuda_bench: setup failed: %s\n", e.what());
    return 1;
  }
  std::printf("device: %s (sm_%d%d, %d SMs, L2 %.0f MB), CUDA runtime %s, driver %s\n", m.device.c_str(),
              m.cc_major, m.cc_minor, m.sms, m.l2 / 1e6, m.runtime.c_str(), m.driver.c_str());
  std::printf("copy bandwidth (D2D memcpy, read+write): %.1f GB/s; %d iters, median\n\n", m.copy_gbps, o.iters);
  std::printf("%-42s %10s %8s %7s  %s\n", "case", "time_us", "GB/s", "%copy", "variant");

  std::vector<Result_> results;
  int failed = 0;
  bool context_lost = false;
  for (const Case& c : cases) {
    Result_ r;
    if (context_lost) {
      r.c = &c;
      r.error = "skipped: CUDA context lost in an earlier case";
    } else {
      r = run_case(env, c);
      if (!r.error.empty()) {
        // A launch error clears; a kernel fault (illegal address...) is sticky
        // and every later call would fail too, so stop timing after it.
        cudaGetLastError();
        if (cudaStreamSynchronize(env.cs) != cudaSuccess && cudaDeviceSynchronize() != cudaSuccess) {
          context_lost = true;
          r.error += " [CUDA context lost]";
        }
      }
    }
    failed += !r.error.empty();
    print_row(r);
    results.push_back(std::move(r));
    if (!o.json.empty()) write_json(o.json, m, o, results);  // after each case: survives a kill
  }
  std::printf("\n%zu cases, %d failed\n", results.size(), failed);
  if (env.cs && !context_lost) cudaStreamDestroy(env.cs);
  return failed ? 3 : 0;
}
