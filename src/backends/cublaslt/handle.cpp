#ifdef BARACUDA_WITH_CUDA
#include "backends/cublaslt/handle.hpp"

#include <map>
#include <mutex>
#include <string>

#include "backends/cublaslt/api.hpp"
#include "backends/cublaslt/errors.hpp"
#include "core/cuda_device.hpp"

namespace baracuda::cublaslt {

Result<cublasLtHandle_t> device_handle(const char* plan, int device, bool capturing) {
  static std::mutex mu;
  static std::map<int, cublasLtHandle_t> handles;  // never destroyed (handle.hpp)
  std::lock_guard<std::mutex> lock(mu);
  if (auto it = handles.find(device); it != handles.end()) return it->second;
  BARACUDA_RETURN_IF_ERROR(require_api(plan));
  if (capturing)
    return Status(StatusCode::Unsupported, std::string(plan) + ": cuBLASLt: the handle of device " + std::to_string(device) +
                                               " is not created yet and cannot be created while the stream is capturing a "
                                               "CUDA graph (select the plan before capturing)");
  // cublasLtCreate binds the handle to the current device.
  detail::DeviceGuard guard(device);
  BARACUDA_RETURN_IF_ERROR(guard.status());
  cublasLtHandle_t h = nullptr;
  const cublasStatus_t s = api().cublasLtCreate(&h);
  if (s != CUBLAS_STATUS_SUCCESS) return library_status(plan, s, "creating the cuBLASLt handle");
  handles.emplace(device, h);
  return h;
}

}  // namespace baracuda::cublaslt
#endif
