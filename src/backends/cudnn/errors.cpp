#include "backends/cudnn/library.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#include <cuda_runtime.h>

#include <string>

#include "backends/cudnn/api.hpp"
#include "backends/cudnn/errors.hpp"

namespace baracuda::cudnn {

Status library_status(const char* plan, cudnnStatus_t s, const char* step) {
  std::string m = std::string(plan) + ": cuDNN: " + api().cudnnGetErrorString(s) + " while " + step;
  char detail[512] = {0};
  api().cudnnGetLastErrorString(detail, sizeof detail);
  if (detail[0] != '\0') m += std::string(" (") + detail + ")";
  const int value = static_cast<int>(s);
  const StatusCode code = value >= 3000 && value < 4000 ? StatusCode::Unsupported : StatusCode::LibraryError;
  return Status(code, m);
}

Status cuda_runtime_status(const char* plan, int cuda_error, const char* what) {
  return Status(StatusCode::CudaError,
                std::string(plan) + ": " + what + ": " + cudaGetErrorString(static_cast<cudaError_t>(cuda_error)));
}

}  // namespace baracuda::cudnn

#endif
