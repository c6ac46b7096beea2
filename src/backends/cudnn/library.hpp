// cuDNN as a shared library backend: what every family's cuDNN route asks
// first (is cuDNN in this build, could it be loaded, which version, is it
// usable) and the message style of its errors. Plain C++ interface: no cuDNN
// or CUDA headers, and it links in every build (without cuDNN: in_build() and
// available() are false, version() is 0).
//
// cuDNN is never linked: libcudnn.so.9 is loaded at first use (api.hpp), so a
// program runs without it and every cuDNN route then reports it missing.
//
// The rest of src/backends/cudnn/ needs cuDNN's headers and compiles to
// nothing without BARACUDA_WITH_CUDNN:
//   api.hpp             the table of cuDNN functions, loaded with dlopen once
//   errors.hpp          cudnnStatus_t -> Status (Unsupported / LibraryError)
//   descriptor.hpp      owning cudnnBackendDescriptor_t
//   graph.hpp           operation-graph builder (tensors, pointwise, matmul, reduction, reshape)
//   execution_plan.hpp  heuristics -> engine config -> execution plan (+ engine name and
//                       determinism), and running a plan with a variant pack
//   handle.hpp          one handle per device, used under a per-device lock
//   plan_cache.hpp      built plans per (device, problem key), and the capture rule
#pragma once
#include <cstddef>
#include <string>

#include "baracuda/core/status.hpp"

namespace baracuda::cudnn {

// True when the library was built with cuDNN (BARACUDA_WITH_CUDNN).
bool in_build();

// In the build, and the cuDNN library and every function baracuda calls could
// be loaded (the first call loads it; later calls only read the result).
bool loaded();

// cudnnGetVersion() of the loaded library (e.g. 91900); 0 when not loaded.
size_t version();

// Built with cuDNN and the loaded library is a usable 9.x: the backend API of
// 9.0 or newer, and not 9.10.0 / 9.10.1, whose f16/bf16 fused attention has
// known wrong-result bugs. One rule for every route (simple and conservative);
// a family that needs a finer rule adds it in its own supports().
bool available();

// Why available() is false, for a plan's message: "this build has no cuDNN
// (BARACUDA_WITH_CUDNN is off)", "cuDNN could not be loaded (libcudnn.so.9:
// cannot open shared object file: ...)" or "cuDNN <version> is not usable
// (needs 9.x, not 9.10.0/9.10.1)". Empty when available().
std::string unavailable_reason();

// Status(Unsupported, "<plan>: cuDNN: <what>"): the problem is one cuDNN (or
// this route) cannot run; the caller may fall back to another backend.
Status unsupported(const char* plan, const std::string& what);

}  // namespace baracuda::cudnn
