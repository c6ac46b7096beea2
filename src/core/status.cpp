#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda {

const char* status_code_name(StatusCode c) {
  switch (c) {
    case StatusCode::Ok: return "Ok";
    case StatusCode::InvalidProblem: return "InvalidProblem";
    case StatusCode::Unsupported: return "Unsupported";
    case StatusCode::BufferTooSmall: return "BufferTooSmall";
    case StatusCode::WorkspaceTooSmall: return "WorkspaceTooSmall";
    case StatusCode::CudaError: return "CudaError";
    case StatusCode::LibraryError: return "LibraryError";
  }
  return "?";
}

std::string Status::to_string() const {
  if (is_ok()) return "Ok";
  std::string s = status_code_name(code_);
  s += ": ";
  s += message_;
  return s;
}

const char* backend_name(Backend b) {
  switch (b) {
    case Backend::CpuReference: return "cpu-reference";
    case Backend::Bespoke: return "bespoke-cuda";
    case Backend::CuBlasLt: return "cublaslt";
    case Backend::CuDnn: return "cudnn";
  }
  return "?";
}

std::string KernelSku::to_string() const {
  std::string s = op;
  s += " [";
  s += backend_name(backend);
  if (arch) s += " sm_" + std::to_string(arch);
  s += ", ";
  s += dtype_name(dtype);
  if (!variant.empty()) s += ", " + variant;
  s += ", acc ";
  s += dtype_name(precision.accumulator);
  s += precision.deterministic ? ", deterministic" : ", non-deterministic";
  s += "]";
  return s;
}

}  // namespace baracuda
