#ifdef BARACUDA_WITH_CUDA
#include "backends/cublaslt/api.hpp"

#include "backends/dynamic_library.hpp"

#ifndef BARACUDA_CUBLASLT_FALLBACK_DIR
#define BARACUDA_CUBLASLT_FALLBACK_DIR ""
#endif

namespace baracuda::cublaslt {

namespace {

const backends::LoadedApi<Api>& load_once() {
  static const auto l = backends::load_api<Api>(  // C++ guarantees one thread-safe initialization
      backends::library_candidates("BARACUDA_CUBLASLT_LIBRARY", "libcublasLt.so." + std::to_string(CUBLAS_VER_MAJOR),
                                   BARACUDA_CUBLASLT_FALLBACK_DIR),
      [](backends::DynamicLibrary& lib, Api& api) { return BARACUDA_CUBLASLT_FUNCTIONS(BARACUDA_RESOLVE_FUNCTION) true; });
  return l;
}

}  // namespace

const Api* try_api() { return load_once().table(); }
const std::string& load_error() { return load_once().error; }

Status require_api(const char* plan) {
  if (try_api()) return Status::ok();
  return Status(StatusCode::Unsupported, std::string(plan) + ": cuBLASLt could not be loaded (" + load_error() + ")");
}

}  // namespace baracuda::cublaslt
#endif
