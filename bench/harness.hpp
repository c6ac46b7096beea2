// The timing harness every bench family shares: CUDA-event median timing, the
// device and its stream, buffers with random data, and the ceilings a figure is
// compared with (copy bandwidth; the cuBLAS bf16 GEMM rate).
//
// Method (bench/torch/common.py does the same for PyTorch, so compare.py can
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
bool context_lost_after_error(cudaStream_t s);

// ---- small helpers ------------------------------------------------------------------

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// "2026-11-21T14:53:39Z"
std::string utc_now();

inline std::string join(const Dims& d, const char* sep) {
  std::string s;
  for (int i = 0; i < d.rank; ++i) s += (i ? sep : "") + std::to_string(d[i]);
  return s;
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

// ---- device, stream, buffers ----------------------------------------------------------

struct DeviceMeta {
  std::string device, runtime, driver;  // runtime / driver: "13.0"
  int cc_major = 0, cc_minor = 0, sms = 0;
  size_t l2 = 0, mem = 0;
};

// What a case runs with: device 0, its stream, and the running family's settings.
struct Env {
  DeviceMeta meta;
  cudaStream_t cs = nullptr;
  Stream stream = Stream::cuda(0);
  size_t rotate_bytes = 0;  // one sweep over a case's buffer sets touches at least this
  int iters = 30, warmup = 5;
  std::string filter;
  double copy_gbps = 0;       // ceilings, measured when a family that uses one starts
  double gemm_tflops = 0;
  bool context_lost = false;  // a case hit a sticky CUDA fault: later cases are skipped
};

// Selects device 0, describes it and opens the non-blocking stream every case
// runs on; rotate_bytes = max(4 x L2, 256 MiB). Throws on a CUDA error.
void open_device(Env& env);
// Destroys the stream unless the context is lost.
void close_device(Env& env);

inline Buffer device_buffer(size_t bytes, size_t min_bytes = 1) {
  return Buffer(Device::cuda(0), std::max<size_t>(bytes, min_bytes));
}

// Uniform(lo, hi) data; every filled buffer gets a fresh seed (1, 2, ...; reset
// when a family starts, so a family's data does not depend on what ran before).
inline uint64_t g_seed = 1;
inline void fill(const Env& env, Buffer& b, DType dt, size_t n, float lo = -1.f, float hi = 1.f) {
  cuda_check(bench_fill_uniform(b.data(), dt, n, lo, hi, g_seed++, env.cs), "fill");
}

// ---- ceilings ------------------------------------------------------------------------

// Copy bandwidth (GB/s, read + write): the practical ceiling for a memory-bound op.
double copy_bandwidth_gbps(cudaStream_t cs);
// cuBLAS GEMM rate (8192^3, f32 accumulate, TFLOP/s) in bf16 (the default) or
// f16: the tensor-core ceiling; 0 when the bench is built without cuBLAS, for
// another dtype, or when cuBLAS fails.
double gemm_ceiling_tflops(const Env& env, DType dtype = DType::BF16);

}  // namespace baracuda::bench
