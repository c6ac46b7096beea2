#include "backends/cudnn/library.hpp"

#include "backends/cudnn/plan_cache.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#include "backends/cudnn/api.hpp"
#define BARACUDA_CUDNN_BACKEND 1
#endif

namespace baracuda::cudnn {

#ifdef BARACUDA_CUDNN_BACKEND
bool in_build() { return true; }
bool loaded() { return try_api() != nullptr; }
size_t version() { return loaded() ? api().cudnnGetVersion() : 0; }
static std::string not_loaded_reason() { return "cuDNN could not be loaded (" + load_error() + ")"; }
#else
bool in_build() { return false; }
bool loaded() { return false; }
size_t version() { return 0; }
static std::string not_loaded_reason() { return {}; }
#endif

bool available() {
  if (!loaded()) return false;
  const size_t v = version();
  return v >= 90000 && v != 91000 && v != 91001;
}

std::string unavailable_reason() {
  if (!in_build()) return "this build has no cuDNN (BARACUDA_WITH_CUDNN is off)";
  if (!loaded()) return not_loaded_reason();
  if (!available()) return "cuDNN " + std::to_string(version()) + " is not usable (needs 9.x, not 9.10.0/9.10.1)";
  return {};
}

Status unsupported(const char* plan, const std::string& what) {
  return Status(StatusCode::Unsupported, std::string(plan) + ": cuDNN: " + what);
}

Status capture_refusal(const char* plan) {
  return unsupported(plan, "the execution plan for this problem is not built yet and cannot be built while the "
                           "stream is capturing a CUDA graph (run it once, or prepare it, before capturing)");
}

}  // namespace baracuda::cudnn
