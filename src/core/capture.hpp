// CUDA graph capture queries. Plain C++ interface (no CUDA headers).
//
// Work that allocates, synchronizes or compiles (building a cuDNN plan,
// creating a library handle, running heuristics) must never happen while the
// stream is capturing: it would invalidate the capture or be missing from the
// replayed graph. Routes ask here first and take their capture-safe path.
#pragma once

#include "baracuda/core/stream.hpp"

namespace baracuda::detail {

// True while `stream` is capturing a CUDA graph. A failing query counts as
// capturing (e.g. the legacy stream while another stream captures in global
// mode makes the query itself an error): callers then stay on the safe side.
// The query's error is cleared so it does not leak into a later
// cudaGetLastError(). CPU streams and CPU-only builds: false.
bool stream_is_capturing(const Stream& stream);

// The same for a raw cudaStream_t passed as void* (nullptr = legacy stream),
// for code below the plan layer that holds only the native handle.
bool native_stream_is_capturing(void* cuda_stream);

}  // namespace baracuda::detail
