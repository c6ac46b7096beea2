#include "backends/dynamic_library.hpp"

#include <dlfcn.h>

#include <cstdlib>

namespace baracuda::backends {

DynamicLibrary DynamicLibrary::open(const std::vector<std::string>& candidates) {
  DynamicLibrary lib;
  if (candidates.empty()) lib.error_ = "no library name to load";
  for (const std::string& c : candidates) {
    // RTLD_LOCAL: the library's symbols serve only the pointers we resolve,
    // never another library's undefined references.
    if (void* h = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL)) {
      lib.handle_ = h;
      lib.name_ = c;
      lib.error_.clear();
      return lib;
    }
    const char* why = dlerror();
    if (!lib.error_.empty()) lib.error_ += "; ";
    lib.error_ += why ? why : c + ": cannot be opened";
  }
  return lib;
}

void* DynamicLibrary::find(const char* symbol) {
  if (!handle_) return nullptr;
  dlerror();  // clear a stale error
  void* p = dlsym(handle_, symbol);
  if (!p) error_ = name_ + " has no function " + symbol + " (an older or incompatible version?)";
  return p;
}

std::vector<std::string> library_candidates(const char* env_var, const std::string& file_name,
                                            const std::string& fallback_dir) {
  if (const char* v = std::getenv(env_var); v && *v) return {v};
  std::vector<std::string> c{file_name};
  if (!fallback_dir.empty()) c.push_back(fallback_dir + "/" + file_name);
  return c;
}

}  // namespace baracuda::backends
