// cublasStatus_t -> Status, one wording for every cuBLASLt route:
//   "<plan>: cuBLASLt: <status name> (<status string>) while <step>"
// CUBLAS_STATUS_NOT_SUPPORTED describes the problem (no kernel for these
// types / layouts / epilogue): Unsupported, so the plan can fall back.
// Everything else is LibraryError.
#pragma once
#include <cublasLt.h>

#include "baracuda/core/status.hpp"

namespace baracuda::cublaslt {

Status library_status(const char* plan, cublasStatus_t s, const char* step);

}  // namespace baracuda::cublaslt
