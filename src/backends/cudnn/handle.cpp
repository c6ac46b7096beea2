#include "backends/cudnn/library.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#include <cuda_runtime.h>

#include <map>
#include <memory>

#include "backends/cudnn/api.hpp"
#include "backends/cudnn/errors.hpp"
#include "backends/cudnn/handle.hpp"

namespace baracuda::cudnn {

struct DeviceHandle {
  std::mutex mu;
  cudnnHandle_t handle = nullptr;
};

namespace {
DeviceHandle& device_handle(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DeviceHandle>> slots;  // the handles inside are never destroyed (handle.hpp)
  std::lock_guard<std::mutex> lock(mu);
  auto& s = slots[device];
  if (!s) s = std::make_unique<DeviceHandle>();
  return *s;
}
}  // namespace

HandleLease::HandleLease(int device, DeviceHandle* slot) : device_(device), slot_(slot), lock_(slot->mu) {}

Result<cudnnHandle_t> HandleLease::handle(const char* plan) {
  if (!slot_->handle) {
    if (!try_api()) return unsupported(plan, unavailable_reason());
    const cudnnStatus_t s = api().cudnnCreate(&slot_->handle);
    if (s != CUDNN_STATUS_SUCCESS) {
      slot_->handle = nullptr;
      return library_status(plan, s, "creating the cuDNN handle");
    }
  }
  return slot_->handle;
}

HandleLease lease_handle(int device) { return HandleLease(device, &device_handle(device)); }

Result<int> current_device(const char* plan) {
  int dev = 0;
  const cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return cuda_runtime_status(plan, static_cast<int>(e), "cudaGetDevice");
  return dev;
}

}  // namespace baracuda::cudnn

#endif
