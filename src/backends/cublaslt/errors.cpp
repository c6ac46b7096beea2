#ifdef BARACUDA_WITH_CUDA
#include "backends/cublaslt/errors.hpp"

#include <string>

#include "backends/cublaslt/api.hpp"

namespace baracuda::cublaslt {

Status library_status(const char* plan, cublasStatus_t s, const char* step) {
  const StatusCode code = s == CUBLAS_STATUS_NOT_SUPPORTED ? StatusCode::Unsupported : StatusCode::LibraryError;
  return Status(code, std::string(plan) + ": cuBLASLt: " + api().cublasLtGetStatusName(s) + " (" + api().cublasLtGetStatusString(s) +
                          ") while " + step);
}

}  // namespace baracuda::cublaslt
#endif
