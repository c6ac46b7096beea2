// cudnnStatus_t -> Status, one wording for every cuDNN route:
//   "<plan>: cuDNN: <cudnnGetErrorString> while <step> (<cudnnGetLastErrorString>)"
// CUDNN_STATUS_NOT_SUPPORTED and its refinements (3000..3999) describe the
// problem, not a failure: Unsupported, so the plan can fall back. Everything
// else is LibraryError.
#pragma once
#include <cudnn.h>

#include "baracuda/core/status.hpp"

namespace baracuda::cudnn {

Status library_status(const char* plan, cudnnStatus_t s, const char* step);

// CUDA runtime failure inside a cuDNN route: "<plan>: <what>: <cudaGetErrorString>".
Status cuda_runtime_status(const char* plan, int cuda_error, const char* what);

}  // namespace baracuda::cudnn
