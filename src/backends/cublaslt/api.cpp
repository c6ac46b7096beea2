#ifdef BARACUDA_WITH_CUDA
#include "backends/cublaslt/api.hpp"

#include "backends/dynamic_library.hpp"

#ifndef BARACUDA_CUBLASLT_FALLBACK_DIR
#define BARACUDA_CUBLASLT_FALLBACK_DIR ""
#endif

namespace baracuda::cublaslt {

namespace {

struct Loaded {
  Api api;
  bool ok = false;
  std::string error;
};

Loaded load() {
  Loaded l;
  auto lib = backends::DynamicLibrary::open(backends::library_candidates(
      "BARACUDA_CUBLASLT_LIBRARY", "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR),
      BARACUDA_CUBLASLT_FALLBACK_DIR));
  if (!lib.loaded()) {
    l.error = lib.error();
    return l;
  }
#define BARACUDA_CUBLASLT_RESOLVE(name)   \
  if (!lib.resolve(#name, l.api.name)) { \
    l.error = lib.error();               \
    return l;                            \
  }
  BARACUDA_CUBLASLT_FUNCTIONS(BARACUDA_CUBLASLT_RESOLVE)
#undef BARACUDA_CUBLASLT_RESOLVE
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

Status require_api(const char* plan) {
  if (try_api()) return Status::ok();
  return Status(StatusCode::Unsupported, std::string(plan) + ": cuBLASLt could not be loaded (" + load_error() + ")");
}

}  // namespace baracuda::cublaslt
#endif
