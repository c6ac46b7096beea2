// One place for "raise this kernel's dynamic shared-memory limit": the
// attribute is per kernel and per device, and setting it before every launch
// costs host time (it shows in small problems), so each call site keeps a
// SmemOptIn per kernel instantiation that remembers the devices already done.
// A race between threads only repeats the same idempotent call.
#pragma once
#include <cuda_runtime.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "baracuda/core/status.hpp"
#include "core/cuda_device.hpp"

namespace baracuda::dev {

struct SmemOptIn {
  std::atomic<uint64_t> done{0};  // bit d: device d (devices >= 64 are set every time)
};

// Raises `kern`'s limit to `bytes` (when above the 48 KB default) on the
// current device and, with max_carveout, asks for the largest shared-memory
// carveout. `what` names the plan and kernel in the error.
template <class Kernel>
Status ensure_smem(SmemOptIn& state, Kernel kern, size_t bytes, const char* what, bool max_carveout = true) {
  int dev = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) dev = 64;
  const uint64_t bit = dev >= 0 && dev < 64 ? uint64_t{1} << dev : 0;
  if (bit != 0 && (state.done.load(std::memory_order_relaxed) & bit) != 0) return Status::ok();
  cudaError_t e = cudaSuccess;
  if (bytes > 48 * 1024) e = cudaFuncSetAttribute(kern, cudaFuncAttributeMaxDynamicSharedMemorySize, static_cast<int>(bytes));
  if (e == cudaSuccess && max_carveout)
    e = cudaFuncSetAttribute(kern, cudaFuncAttributePreferredSharedMemoryCarveout, cudaSharedmemCarveoutMaxShared);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return detail::cuda_status(static_cast<int>(e), what);
  }
  if (bit != 0) state.done.fetch_or(bit, std::memory_order_relaxed);
  return Status::ok();
}

}  // namespace baracuda::dev
