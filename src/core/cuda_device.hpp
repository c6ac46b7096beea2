// Device queries (cached), and CUDA error -> Status. Plain C++ interface.
#pragma once
#include <string>

#include "baracuda/core/status.hpp"

namespace baracuda::detail {

struct DeviceInfo {
  int sm_count = 0;
  int arch = 0;  // major*10 + minor
  std::string name;
};

// Cached per ordinal. Fails with CudaError (or Unsupported in a CPU-only build).
Result<DeviceInfo> cuda_device_info(int ordinal);

// Status for a cudaError_t value (passed as int to keep CUDA headers out).
Status cuda_status(int cuda_error, const char* what);

}  // namespace baracuda::detail

namespace baracuda::detail {
// Makes `ordinal` the current CUDA device for the guard's lifetime (no-op when
// it already is, or in a CPU-only build).
class DeviceGuard {
 public:
  explicit DeviceGuard(int ordinal);
  ~DeviceGuard();
  DeviceGuard(const DeviceGuard&) = delete;
  DeviceGuard& operator=(const DeviceGuard&) = delete;
  const Status& status() const { return status_; }

 private:
  int prev_ = -1;
  Status status_;
};
}  // namespace baracuda::detail
