#include "core/cuda_device.hpp"

#include <mutex>
#include <optional>
#include <vector>

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace baracuda::detail {

Status cuda_status(int err, const char* what) {
#ifdef BARACUDA_WITH_CUDA
  if (err == 0) return Status::ok();
  const auto e = static_cast<cudaError_t>(err);
  return Status(StatusCode::CudaError, std::string(what) + ": " + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
#else
  if (err == 0) return Status::ok();
  return Status(StatusCode::CudaError, std::string(what) + ": CUDA error " + std::to_string(err));
#endif
}

#ifdef BARACUDA_WITH_CUDA
namespace {
// Why cudaGetDeviceCount found no device, in the words a user needs: no GPU
// (or no NVIDIA driver at all, which the runtime reports as an "insufficient"
// driver) is "no CUDA device present"; an installed driver older than the
// runtime is a different problem with a different fix.
Status no_device_status(cudaError_t e) {
  int driver = 0, runtime = 0;
  (void)cudaDriverGetVersion(&driver);  // 0 when no driver is installed
  (void)cudaRuntimeGetVersion(&runtime);
  (void)cudaGetLastError();
  auto version = [](int v) { return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10); };
  if (e == cudaErrorInsufficientDriver && driver > 0)
    return Status(StatusCode::Unsupported, "the NVIDIA driver supports CUDA " + version(driver) + " but this build's runtime is CUDA " +
                                               version(runtime) + " (cudaErrorInsufficientDriver): update the driver");
  if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
    return Status(StatusCode::Unsupported, std::string("no CUDA device present (") +
                                               (driver == 0 ? "no NVIDIA driver is installed" : "the driver sees no GPU; check CUDA_VISIBLE_DEVICES") +
                                               "): run on Stream::cpu() instead");
  return Status(StatusCode::Unsupported, std::string("no usable CUDA device: ") + cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")");
}
}  // namespace
#endif

Result<DeviceInfo> cuda_device_info(int ordinal) {
#ifdef BARACUDA_WITH_CUDA
  static std::mutex mu;
  static std::vector<std::optional<DeviceInfo>> cache;
  std::lock_guard<std::mutex> lock(mu);
  if (ordinal < 0) return Status(StatusCode::InvalidProblem, "CUDA device ordinal " + std::to_string(ordinal) + " is negative");
  if (static_cast<size_t>(ordinal) < cache.size() && cache[static_cast<size_t>(ordinal)]) return *cache[static_cast<size_t>(ordinal)];
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    (void)cudaGetLastError();
    return no_device_status(e);
  }
  if (count == 0) return no_device_status(cudaErrorNoDevice);
  if (ordinal >= count)
    return Status(StatusCode::InvalidProblem, "CUDA device " + std::to_string(ordinal) + " requested but " + std::to_string(count) + " visible");
  cudaDeviceProp prop{};
  e = cudaGetDeviceProperties(&prop, ordinal);
  if (e != cudaSuccess) return cuda_status(e, "cudaGetDeviceProperties");
  DeviceInfo info;
  info.sm_count = prop.multiProcessorCount;
  info.arch = prop.major * 10 + prop.minor;
  info.name = prop.name;
  if (cache.size() <= static_cast<size_t>(ordinal)) cache.resize(static_cast<size_t>(ordinal) + 1);
  cache[static_cast<size_t>(ordinal)] = info;
  return info;
#else
  (void)ordinal;
  return Status(StatusCode::Unsupported, "this baracuda build has no CUDA support (built with BARACUDA_CUDA=OFF)");
#endif
}

}  // namespace baracuda::detail

namespace baracuda::detail {
DeviceGuard::DeviceGuard(int ordinal) {
#ifdef BARACUDA_WITH_CUDA
  int cur = 0;
  cudaError_t e = cudaGetDevice(&cur);
  if (e != cudaSuccess) { status_ = cuda_status(e, "cudaGetDevice"); return; }
  if (cur != ordinal) {
    e = cudaSetDevice(ordinal);
    if (e != cudaSuccess) { status_ = cuda_status(e, "cudaSetDevice"); return; }
    prev_ = cur;
  }
#else
  (void)ordinal;
#endif
}
DeviceGuard::~DeviceGuard() {
#ifdef BARACUDA_WITH_CUDA
  if (prev_ >= 0) cudaSetDevice(prev_);
#endif
}
}  // namespace baracuda::detail
