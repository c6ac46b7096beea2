// The timing harness shared by the benches (reduce_bench.cpp, flash_bench.cpp,
// rope_bench.cpp): CUDA-event median timing, the command line, device metadata,
// the copy-bandwidth ceiling and the JSON / table pieces of the output.
//
// Method (bench/bench_common.py does the same for PyTorch, so compare.py can
// join the JSON files by case name):
//  * each case: warm-up runs, then `iters` runs, each between its own pair of
//    events, median time. All timed runs are queued behind a spin kernel so
//    host launch overhead never sits inside an event pair;
//  * copy bandwidth: cudaMemcpyAsync device-to-device of 1 GiB, median time,
//    (bytes read + bytes written) / time.
#pragma once

#include <cuda_runtime_api.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <ostream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "bench_kernels.hpp"

namespace baracuda::bench {

// ---- errors ----------------------------------------------------------------------

inline void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(e));
}
inline void status_check(const Status& s, const char* what) {
  if (!s.is_ok()) throw std::runtime_error(std::string(what) + ": " + s.to_string());
}

// After a failed case: clears a launch error and reports whether the context is
// lost (a kernel fault, illegal address..., is sticky: every later call fails too).
inline bool context_lost_after_error(cudaStream_t s) {
  cudaGetLastError();
  return cudaStreamSynchronize(s) != cudaSuccess && cudaDeviceSynchronize() != cudaSuccess;
}

// ---- strings and JSON --------------------------------------------------------------

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// 12080 -> "12.8" (cudaRuntimeGetVersion / cudaDriverGetVersion).
inline std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }

inline std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

inline std::string join(const Dims& d, const char* sep) {
  std::string s;
  for (int i = 0; i < d.rank; ++i) s += (i ? sep : "") + std::to_string(d[i]);
  return s;
}

// What json_str does with control characters: escape them (\u00XX) or drop them.
enum class ControlChars { Escape, Drop };

inline std::string json_str(const std::string& s, ControlChars control = ControlChars::Escape) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      if (control == ControlChars::Drop) continue;
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", c);
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}
inline std::string json_dims(const Dims& d) { return "[" + join(d, ", ") + "]"; }
inline std::string json_num(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.6g", v);
  return b;
}

// Write-then-rename: a run killed mid-way still leaves the last complete file.
inline void write_file_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  std::ofstream(tmp) << text;
  if (std::rename(tmp.c_str(), path.c_str()) != 0) std::fprintf(stderr, "cannot write %s\n", path.c_str());
}

// ---- timing ------------------------------------------------------------------------

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

// ---- command line --------------------------------------------------------------------

struct Options {
  std::string json, filter;
  int iters = 30, warmup = 5;
  bool list = false;
};

inline int usage(const char* argv0) {
  std::fprintf(stderr, "usage: %s [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]\n", argv0);
  return 2;
}

// Parses [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list] into o
// (which holds the bench's defaults); false on anything else.
inline bool parse_options(int argc, char** argv, Options& o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--list") o.list = true;
    else if (a == "--json" && (v = next())) o.json = v;
    else if (a == "--filter" && (v = next())) o.filter = v;
    else if (a == "--iters" && (v = next())) o.iters = std::max(1, std::atoi(v));
    else if (a == "--warmup" && (v = next())) o.warmup = std::max(0, std::atoi(v));
    else return false;
  }
  return true;
}

// Parses the command line into o (holding the bench's defaults) and keeps the
// cases whose name(c) contains --filter; with --list, prints their names. Returns
// -1 to go on and time them, else the exit status.
template <class C, class Name>
int select_cases(int argc, char** argv, Options& o, const std::vector<C>& all, Name name, std::vector<C>& cases) {
  if (!parse_options(argc, argv, o)) return usage(argv[0]);
  for (const C& c : all)
    if (std::string(name(c)).find(o.filter) != std::string::npos) cases.push_back(c);
  if (!o.list) return -1;
  for (const C& c : cases) std::printf("%s\n", std::string(name(c)).c_str());
  return 0;
}

// ---- device, stream, buffers ----------------------------------------------------------

struct DeviceMeta {
  std::string device, date, runtime, driver;
  int cc_major = 0, cc_minor = 0, sms = 0;
  size_t l2 = 0, mem = 0;
};

// Selects device 0 and describes it; throws on a CUDA error.
inline DeviceMeta query_device() {
  DeviceMeta m;
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
  return m;
}

struct Env {
  cudaStream_t cs = nullptr;
  Stream stream = Stream::cuda(0);
  size_t rotate_bytes = 0;  // one sweep over a case's buffer sets touches at least this
  double copy_gbps = 0;
  const Options* opt = nullptr;
  bool context_lost = false;  // a case hit a sticky CUDA fault: the stream is not destroyed
};

// The non-blocking stream every case runs on.
inline void open_stream(Env& env) {
  cuda_check(cudaStreamCreateWithFlags(&env.cs, cudaStreamNonBlocking), "cudaStreamCreate");
  env.stream = Stream::cuda(0, env.cs);
}

inline Buffer device_buffer(size_t bytes, size_t min_bytes = 1) {
  return Buffer(Device::cuda(0), std::max<size_t>(bytes, min_bytes));
}

// Uniform(lo, hi) data; every filled buffer gets a fresh seed (1, 2, ...).
inline uint64_t g_seed = 1;
inline void fill(const Env& env, Buffer& b, DType dt, size_t n, float lo = -1.f, float hi = 1.f) {
  cuda_check(bench_fill_uniform(b.data(), dt, n, lo, hi, g_seed++, env.cs), "fill");
}

// Copy bandwidth: the practical ceiling for a memory-bound op on this GPU.
inline double copy_bandwidth_gbps(cudaStream_t cs) {
  const size_t bytes = size_t{1} << 30;
  Buffer src = device_buffer(bytes), dst = device_buffer(bytes);
  cuda_check(bench_fill_uniform(src.data(), DType::F32, bytes / 4, -1.f, 1.f, 12345, cs), "fill");
  const double ms = time_median_ms(cs, 3, 20, [&](int) {
    cuda_check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, cs), "memcpy");
  });
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

// ---- bandwidth benches (reduce, RoPE): bytes moved against the copy bandwidth ---------

struct BandwidthMeta : DeviceMeta {
  double copy_gbps = 0;
};

// Device 0, the stream, the rotation size (>= max(4 x L2, 256 MiB)) and the copy
// bandwidth; throws on a CUDA error.
inline void setup_bandwidth_bench(BandwidthMeta& m, Env& env) {
  static_cast<DeviceMeta&>(m) = query_device();
  open_stream(env);
  env.rotate_bytes = std::max<size_t>(4 * m.l2, size_t{256} << 20);
  m.copy_gbps = copy_bandwidth_gbps(env.cs);
  env.copy_gbps = m.copy_gbps;
}

inline void print_bandwidth_header(const BandwidthMeta& m, const Options& o) {
  std::printf("device: %s (sm_%d%d, %d SMs, L2 %.0f MB), CUDA runtime %s, driver %s\n", m.device.c_str(), m.cc_major,
              m.cc_minor, m.sms, m.l2 / 1e6, m.runtime.c_str(), m.driver.c_str());
  std::printf("copy bandwidth (D2D memcpy, read+write): %.1f GB/s; %d iters, median\n\n", m.copy_gbps, o.iters);
  std::printf("%-42s %10s %8s %7s  %s\n", "case", "time_us", "GB/s", "%copy", "variant");
}

// One row of the table; R has error, us, gbps, frac, variant.
template <class R>
void print_bandwidth_row(const std::string& name, const R& r) {
  if (r.error.empty())
    std::printf("%-42s %10.1f %8.1f %6.1f%%  %s\n", name.c_str(), r.us, r.gbps, 100 * r.frac, r.variant.c_str());
  else
    std::printf("%-42s  ERROR %s\n", name.c_str(), r.error.c_str());
  std::fflush(stdout);
}

// The JSON file's fields before the case list, up to and including `"cases": [`.
inline void json_bandwidth_header(std::ostream& j, const char* tool, const BandwidthMeta& m, const Options& o) {
  j << "{\n  \"tool\": \"" << tool << "\",\n"
    << "  \"date\": " << json_str(m.date) << ",\n"
    << "  \"device\": " << json_str(m.device) << ",\n"
    << "  \"compute_capability\": \"" << m.cc_major << "." << m.cc_minor << "\",\n"
    << "  \"sm_count\": " << m.sms << ",\n  \"l2_bytes\": " << m.l2 << ",\n  \"memory_bytes\": " << m.mem << ",\n"
    << "  \"cuda_runtime\": " << json_str(m.runtime) << ",\n  \"cuda_driver\": " << json_str(m.driver) << ",\n"
    << "  \"copy_bandwidth_gbps\": " << json_num(m.copy_gbps) << ",\n"
    << "  \"iters\": " << o.iters << ",\n  \"warmup\": " << o.warmup << ",\n"
    << "  \"filter\": " << json_str(o.filter) << ",\n  \"cases\": [";
}

// One case's object: {"name", "op", "dir", "dtype", "shape", "axes", "ok", timings
// or "error", "variant", "backend", "sku"}; R has error, us, gbps, frac, bytes, sets,
// variant, backend, sku.
template <class R>
void json_bandwidth_case(std::ostream& j, bool first, const std::string& name, const std::string& op, bool bwd,
                         DType dtype, const Dims& shape, const Dims& axes, const R& r) {
  j << (first ? "\n" : ",\n") << "    {\"name\": " << json_str(name) << ", \"op\": " << json_str(op) << ", \"dir\": \""
    << (bwd ? "bwd" : "fwd") << "\", \"dtype\": " << json_str(std::string(dtype_name(dtype)))
    << ", \"shape\": " << json_dims(shape) << ", \"axes\": " << json_dims(axes)
    << ", \"ok\": " << (r.error.empty() ? "true" : "false");
  if (r.error.empty())
    j << ", \"time_us\": " << json_num(r.us) << ", \"gbps\": " << json_num(r.gbps) << ", \"frac_copy\": " << json_num(r.frac)
      << ", \"bytes\": " << json_num(r.bytes) << ", \"sets\": " << r.sets;
  else
    j << ", \"error\": " << json_str(r.error);
  j << ", \"variant\": " << json_str(r.variant) << ", \"backend\": " << json_str(r.backend) << ", \"sku\": " << json_str(r.sku)
    << "}";
}

inline void json_cases_end(std::ostream& j) { j << "\n  ]\n}\n"; }

// setup_bandwidth_bench, then the table's header; false (reported) when setup fails.
inline bool start_bandwidth_bench(const char* tool, BandwidthMeta& m, Env& env, const Options& o) {
  env.opt = &o;
  try {
    setup_bandwidth_bench(m, env);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: setup failed: %s\n", tool, e.what());
    return false;
  }
  print_bandwidth_header(m, o);
  return true;
}

// Times every case: run(c) -> R (errors in R::error, never thrown), prints its row
// and, with --json, rewrites the file through write(path, results) after each case
// (so a killed run keeps what it measured). Returns the number of failed cases.
template <class R, class C, class Run, class Write>
int run_bandwidth_cases(const Options& o, const std::vector<C>& cases, Run&& run, Write&& write) {
  std::vector<R> results;
  int failed = 0;
  for (const C& c : cases) {
    R r = run(c);
    failed += !r.error.empty();
    print_bandwidth_row(c.name, r);
    results.push_back(std::move(r));
    if (!o.json.empty()) write(o.json, results);
  }
  std::printf("\n%zu cases, %d failed\n", results.size(), failed);
  return failed;
}

// main() of a bandwidth bench: the command line, the cases of `all` (C has name)
// kept by --filter, setup, then run(env, c) -> R for each (see run_bandwidth_cases),
// with write_json(path, meta, options, results) after each case. Returns the exit status.
template <class R, class C, class Run, class WriteJson>
int bandwidth_main(int argc, char** argv, const char* tool, const std::vector<C>& all, Run&& run, WriteJson&& write_json) {
  Options o;
  std::vector<C> cases;
  if (const int rc = select_cases(argc, argv, o, all, [](const C& c) { return c.name; }, cases); rc >= 0) return rc;

  BandwidthMeta m;
  Env env;
  if (!start_bandwidth_bench(tool, m, env, o)) return 1;
  const int failed = run_bandwidth_cases<R>(
      o, cases, [&](const C& c) { return run(env, c); },
      [&](const std::string& path, const std::vector<R>& rs) { write_json(path, m, o, rs); });
  if (env.cs && !env.context_lost) cudaStreamDestroy(env.cs);
  return failed ? 3 : 0;
}

}  // namespace baracuda::bench
