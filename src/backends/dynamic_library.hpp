// Optional NVIDIA libraries (cuDNN, cuBLASLt) are loaded with dlopen at their
// first use instead of being linked: a program that links baracuda starts
// (and runs every CPU plan) on a machine without them, and a route whose
// library is missing answers Unsupported naming it (the plan falls back where
// it may). Each library keeps one table of the functions baracuda calls
// (src/backends/<lib>/api.hpp), resolved once.
//
// Where a library is looked for, in order:
//   1. the environment variable the library names (BARACUDA_CUDNN_LIBRARY,
//      BARACUDA_CUBLASLT_LIBRARY): a file name or a path; when set, it is the
//      only place tried (a wrong value is reported, never silently replaced);
//   2. its versioned file name (libcudnn.so.9: the major version of the
//      headers baracuda was compiled with, so the ABI matches) through the
//      loader's search: LD_LIBRARY_PATH, the loader cache, system directories;
//   3. the same name in the directory where the build found the library.
#pragma once
#include <string>
#include <vector>

namespace baracuda::backends {

// A library opened with dlopen and never closed: resolved function pointers
// stay valid for the life of the process.
class DynamicLibrary {
 public:
  // Tries `candidates` in order (a file name goes through the loader's search,
  // a path is opened as given) and keeps the first that opens.
  static DynamicLibrary open(const std::vector<std::string>& candidates);

  bool loaded() const { return handle_ != nullptr; }
  // What was opened ("libcudnn.so.9"), or empty.
  const std::string& name() const { return name_; }
  // Why the last open() or resolve() failed, with the loader's words for
  // every candidate ("libcudnn.so.9: cannot open shared object file: No such
  // file or directory; ...").
  const std::string& error() const { return error_; }

  // Points `fn` at `symbol`; false (error() names the symbol and the library)
  // when the library lacks it.
  template <class F>
  bool resolve(const char* symbol, F*& fn) {
    void* p = find(symbol);
    fn = reinterpret_cast<F*>(p);
    return p != nullptr;
  }

 private:
  void* find(const char* symbol);
  void* handle_ = nullptr;
  std::string name_;
  std::string error_;
};

// The candidates described above: `env_var`'s value alone when it is set and
// not empty, else `file_name` and then `fallback_dir`/`file_name` (when
// fallback_dir is not empty).
std::vector<std::string> library_candidates(const char* env_var, const std::string& file_name,
                                            const std::string& fallback_dir);

// One library's table of functions (`Api`: a struct of function pointers) as
// loaded: the table when every function resolved, else why not.
template <class Api>
struct LoadedApi {
  Api api{};
  bool ok = false;
  std::string error;  // the loader's or resolve()'s words; empty when ok

  const Api* table() const { return ok ? &api : nullptr; }
};

// Opens the first of `candidates` that loads and fills the table with
// `resolve_all(DynamicLibrary& lib, Api& api)`, which returns false at the
// first function the library lacks (BARACUDA_RESOLVE_FUNCTION below writes it
// from the library's list of functions). A library keeps the result in a
// function-local static, so it loads once per process, thread-safely:
//
//   static const auto loaded = load_api<Api>(library_candidates(...),
//       [](DynamicLibrary& lib, Api& api) { return BARACUDA_MYLIB_FUNCTIONS(BARACUDA_RESOLVE_FUNCTION) true; });
template <class Api, class ResolveAll>
LoadedApi<Api> load_api(const std::vector<std::string>& candidates, ResolveAll&& resolve_all) {
  LoadedApi<Api> loaded;
  DynamicLibrary lib = DynamicLibrary::open(candidates);
  if (!lib.loaded() || !resolve_all(lib, loaded.api)) {
    loaded.error = lib.error();
    return loaded;
  }
  loaded.ok = true;
  return loaded;
}

// One step of a resolve_all: `lib` and `api` are its parameters, `name` both
// the exported symbol and the table's member.
#define BARACUDA_RESOLVE_FUNCTION(name) lib.resolve(#name, api.name)&&

}  // namespace baracuda::backends
