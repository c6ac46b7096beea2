// cuBLASLt handles: one per CUDA device for the whole process, shared by every
// family and thread, created lazily.
//
// Why one per device and no lock (unlike cuDNN, handle.hpp there): a
// cublasLtHandle_t holds no per-call state (cublasLtMatmul takes the stream
// and the workspace as arguments) and cuBLAS documents its functions as
// thread-safe even with the same handle, so threads share it freely. Handles
// are never destroyed (a static destructor may run after the CUDA runtime has
// shut down).
//
// cuBLASLt is loaded at the first handle (api.hpp): without it every call
// answers Unsupported "<plan>: cuBLASLt could not be loaded (...)".
//
// Capture rule: creating a handle may initialize library state and allocate;
// it is refused (Unsupported) while the stream captures a CUDA graph. A plan
// creates it at select(), so runs inside a capture find it.
#pragma once
#include <cublasLt.h>

#include "baracuda/core/status.hpp"

namespace baracuda::cublaslt {

// `device`'s handle; created on first use unless `capturing`.
Result<cublasLtHandle_t> device_handle(const char* plan, int device, bool capturing);

}  // namespace baracuda::cublaslt
