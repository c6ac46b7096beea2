// Helpers for the CUDA test suites:
//
//  * device:   kGpu (Stream::cuda(0)), bespoke() (a PlanPreference requiring
//              Backend::Bespoke), BT_SKIP_WITHOUT_GPU().
//  * buffers:  to_device() / to_host() copies of a HostBuffer, device_storage()
//              for a Layout, device_workspace().
//  * checks:   check_close() (rel_error against a tolerance, with the worst
//              error kept), run_twice() (runs a plan twice into poisoned
//              outputs: NaN first, a finite pattern second; both runs must
//              keep the gaps of strided outputs and agree bit for bit).
//  * graphs:   CapturedGraph, a stream + graph + exec that are destroyed on scope exit.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/tensor_utils.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

// Skips the running test when no CUDA device is visible.
#define BT_SKIP_WITHOUT_GPU() \
  if (!::baracuda::cuda_available()) GTEST_SKIP() << "no CUDA device"

namespace bt {

using baracuda::Backend;
using baracuda::PlanPreference;
using baracuda::Status;
using baracuda::Stream;

inline const Stream kGpu = Stream::cuda(0);

// True on an sm_90 device (H100 / H200): where the wgmma + TMA kernels run.
// (Always false in a CPU-only build, which has no CUDA runtime.)
inline bool device_is_sm90() {
#ifdef BARACUDA_WITH_CUDA
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return false;
  cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev);
  cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev);
  return major == 9 && minor == 0;
#else
  return false;
#endif
}

// Requires the bespoke (baracuda's own kernels) backend.
inline PlanPreference bespoke() {
  PlanPreference p;
  p.backend = Backend::Bespoke;
  p.require_backend = true;
  return p;
}

// A device copy of `h` (a buffer of at least `min_bytes` bytes).
inline Buffer to_device(const HostBuffer& h, size_t min_bytes = 0) {
  Buffer b(Device::cuda(0), std::max<size_t>(h.bytes(), min_bytes));
  if (h.bytes()) {
    const Status st = b.copy_from_host(h.data(), h.bytes());
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return b;
}
// The first `n` elements of dtype `t` of device buffer `b`.
inline HostBuffer to_host(const Buffer& b, DType t, int64_t n) {
  HostBuffer h(t, n);
  if (h.bytes()) {
    const Status st = b.copy_to_host(h.data(), h.bytes());
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  return h;
}
// Uninitialized device storage for layout L of dtype t (at least one element
// and `min_bytes` bytes).
inline Buffer device_storage(DType t, const Layout& L, size_t min_bytes = 16) {
  return Buffer(Device::cuda(0), std::max<size_t>(static_cast<size_t>(std::max<int64_t>(L.storage, 1)) *
                                                       baracuda::dtype_size(t),
                                                   min_bytes));
}
// A device workspace of `bytes` (at least 16 bytes, so it is never empty).
inline Buffer device_workspace(size_t bytes) { return Buffer(Device::cuda(0), std::max<size_t>(bytes, 16)); }

// Empty when rel_error(got, ref) <= tol, else a message; *worst keeps the
// largest error seen.
inline std::string check_close(const char* what, const std::vector<double>& got, const std::vector<double>& ref,
                               double tol, double* worst) {
  const double e = rel_error(got, ref);
  *worst = std::max(*worst, e);
  if (!(e <= tol)) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%s: rel error %.3e > %.1e; ", what, e, tol);
    return buf + describe_mismatch(got, ref);
  }
  return "";
}

// One device output of a plan: its buffer, dtype and layout.
struct DeviceOut {
  const char* name;
  Buffer* buf;
  DType t;
  Layout L;
};

// Runs `run` twice (NaN / 0x7f.. poison, then the finite 0x5a.. poison); both
// runs must succeed, keep the gaps (everything in the buffer outside the
// layout) and agree bit for bit on every covered element. `first` receives
// each output's whole buffer after run 1. Returns an empty string on success.
inline std::string run_twice(const std::function<Status()>& run, std::vector<DeviceOut>& outs,
                             std::vector<HostBuffer>* first) {
  first->clear();
  for (int pass = 0; pass < 2; ++pass) {
    for (auto& o : outs) {
      const Status st = o.buf->fill_bytes(pass == 0 ? poison_byte(o.t) : alt_poison_byte(o.t));
      if (!st.is_ok()) return "fill: " + st.to_string();
    }
    Status st = run();
    if (st.is_ok()) st = baracuda::synchronize(kGpu);
    if (!st.is_ok()) return "run " + std::to_string(pass + 1) + ": " + st.to_string();
    for (size_t n = 0; n < outs.size(); ++n) {
      const DeviceOut& o = outs[n];
      const int64_t elems = static_cast<int64_t>(o.buf->bytes() / baracuda::dtype_size(o.t));
      HostBuffer h = to_host(*o.buf, o.t, elems);
      const uint8_t pb = pass == 0 ? poison_byte(o.t) : alt_poison_byte(o.t);
      Layout Lst = o.L;
      Lst.storage = elems;  // the buffer may be larger than the layout's storage
      const std::string gaps = check_gaps(h, Lst, pb);
      if (!gaps.empty()) return std::string(o.name) + " run " + std::to_string(pass + 1) + ": " + gaps;
      if (pass == 0) {
        first->push_back(std::move(h));
      } else {
        const auto cov = covered(o.L);
        const size_t esz = baracuda::dtype_size(o.t);
        int64_t bad = 0, first_bad = -1;
        for (int64_t s = 0; s < o.L.storage; ++s) {
          if (!cov[static_cast<size_t>(s)]) continue;
          if (std::memcmp(static_cast<const uint8_t*>(h.data()) + s * esz,
                          static_cast<const uint8_t*>((*first)[n].data()) + s * esz, esz) != 0) {
            if (bad++ == 0) first_bad = s;
          }
        }
        if (bad)
          return std::string(o.name) + ": " + std::to_string(bad) +
                 " element(s) differ between two runs (unwritten or non-deterministic), first at storage " +
                 std::to_string(first_bad) + ": " + std::to_string((*first)[n].get(first_bad)) + " vs " +
                 std::to_string(h.get(first_bad));
      }
    }
  }
  return "";
}

#ifdef BARACUDA_WITH_CUDA
// A capture stream with its graph and executable graph, destroyed on scope exit.
struct CapturedGraph {
  cudaStream_t stream = nullptr;
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  CapturedGraph() = default;
  CapturedGraph(const CapturedGraph&) = delete;
  CapturedGraph& operator=(const CapturedGraph&) = delete;
  ~CapturedGraph() {
    if (exec) cudaGraphExecDestroy(exec);
    if (graph) cudaGraphDestroy(graph);
    if (stream) cudaStreamDestroy(stream);
  }
};
#endif

}  // namespace bt
