#include "backends/cudnn/library.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#include "backends/cudnn/api.hpp"
#include "backends/dynamic_library.hpp"

#ifndef BARACUDA_CUDNN_FALLBACK_DIR
#define BARACUDA_CUDNN_FALLBACK_DIR ""
#endif

namespace baracuda::cudnn {

namespace {

struct Loaded {
  Api api;
  bool ok = false;
  std::string error;
};

Loaded load() {
  Loaded l;
  auto lib = backends::DynamicLibrary::open(backends::library_candidates(
      "BARACUDA_CUDNN_LIBRARY", "libcudnn.so." + std::to_string(CUDNN_MAJOR), BARACUDA_CUDNN_FALLBACK_DIR));
  if (!lib.loaded()) {
    l.error = lib.error();
    return l;
  }
#define BARACUDA_CUDNN_RESOLVE(name)      \
  if (!lib.resolve(#name, l.api.name)) { \
    l.error = lib.error();               \
    return l;                            \
  }
  BARACUDA_CUDNN_FUNCTIONS(BARACUDA_CUDNN_RESOLVE)
#undef BARACUDA_CUDNN_RESOLVE
  l.ok = true;
  return l;
}

const Loaded& load_once() {
  static const Loaded l = load();  // C++ guarantees one thread-safe initialization
  return l;
}

}  // namespace

const Api* try_api() { return load_once().ok ? &load_once().api : nullptr; }
const std::string& load_error() { return load_once().error; }

}  // namespace baracuda::cudnn

#endif
