#include "backends/cudnn/library.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#include "backends/cudnn/api.hpp"
#include "backends/dynamic_library.hpp"

#ifndef BARACUDA_CUDNN_FALLBACK_DIR
#define BARACUDA_CUDNN_FALLBACK_DIR ""
#endif

namespace baracuda::cudnn {

namespace {

const backends::LoadedApi<Api>& load_once() {
  static const auto l = backends::load_api<Api>(  // C++ guarantees one thread-safe initialization
      backends::library_candidates("BARACUDA_CUDNN_LIBRARY", "libcudnn.so." + std::to_string(CUDNN_MAJOR),
                                   BARACUDA_CUDNN_FALLBACK_DIR),
      [](backends::DynamicLibrary& lib, Api& api) { return BARACUDA_CUDNN_FUNCTIONS(BARACUDA_RESOLVE_FUNCTION) true; });
  return l;
}

}  // namespace

const Api* try_api() { return load_once().table(); }
const std::string& load_error() { return load_once().error; }

}  // namespace baracuda::cudnn

#endif
