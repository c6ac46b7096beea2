// cuDNN handles: one per CUDA device for the whole process, shared by every
// family's cuDNN route, created lazily and used under a per-device lock.
//
// Why one per device and a lock (and not one per thread): a cudnnHandle_t
// carries the stream it enqueues on (cudnnSetStream), so two threads must not
// use one handle at once; execution plans are bound to the handle they were
// built on, so one handle per device lets every thread reuse every cached
// plan. Holding the lease costs only host time (building a plan, or enqueuing
// one: kernels run asynchronously), and the lease also serializes plan builds
// per device, so a problem is built once. Every use sets the stream again.
// Handles are never destroyed: a static destructor may run after the CUDA
// runtime has shut down, and the process exit frees them anyway.
//
// Capture rule: creating a handle allocates. handle() creates it; call it only
// where building is allowed (never while the stream captures a graph, see
// plan_cache.hpp). Running a built plan needs no creation: the plan carries
// the handle it was built on.
#pragma once
#include <cudnn.h>

#include <mutex>

#include "baracuda/core/status.hpp"

namespace baracuda::cudnn {

struct DeviceHandle;  // one per device, internal

// Exclusive use of one device's handle for the lease's lifetime.
class HandleLease {
 public:
  HandleLease(HandleLease&&) = default;
  HandleLease& operator=(HandleLease&&) = default;

  int device() const { return device_; }
  // The device's handle, created on first use (CUDNN error -> LibraryError,
  // "<plan>: cuDNN: ... while creating the cuDNN handle").
  Result<cudnnHandle_t> handle(const char* plan);

 private:
  friend HandleLease lease_handle(int device);
  HandleLease(int device, DeviceHandle* slot);
  int device_ = -1;
  DeviceHandle* slot_ = nullptr;
  std::unique_lock<std::mutex> lock_;
};

// Waits for and takes the lease of `device`'s handle.
HandleLease lease_handle(int device);

// The current CUDA device (the plan's DeviceGuard has set it);
// CudaError "<plan>: cudaGetDevice: ..." on failure.
Result<int> current_device(const char* plan);

}  // namespace baracuda::cudnn
