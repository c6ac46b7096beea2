// The cuBLASLt functions baracuda calls, loaded from
// libcublasLt.so.<CUBLAS_VER_MAJOR> at first use (dlopen;
// src/backends/dynamic_library.hpp says where it is looked for). Nothing links
// against cuBLASLt: a program starts without it and every cuBLASLt route
// answers Unsupported naming it (require_api()).
//
// Every call goes through the table: api().cublasLtMatmul(...). A new
// function is one line in BARACUDA_CUBLASLT_FUNCTIONS.
#pragma once
#include <cublasLt.h>

#include <string>

#include "baracuda/core/status.hpp"

namespace baracuda::cublaslt {

#define BARACUDA_CUBLASLT_FUNCTIONS(X)       \
  X(cublasLtCreate)                          \
  X(cublasLtGetStatusName)                   \
  X(cublasLtGetStatusString)                 \
  X(cublasLtMatmul)                          \
  X(cublasLtMatmulAlgoGetHeuristic)          \
  X(cublasLtMatmulDescCreate)                \
  X(cublasLtMatmulDescDestroy)               \
  X(cublasLtMatmulDescSetAttribute)          \
  X(cublasLtMatrixLayoutCreate)              \
  X(cublasLtMatrixLayoutDestroy)             \
  X(cublasLtMatrixLayoutSetAttribute)        \
  X(cublasLtMatmulPreferenceCreate)          \
  X(cublasLtMatmulPreferenceDestroy)         \
  X(cublasLtMatmulPreferenceSetAttribute)

struct Api {
#define BARACUDA_CUBLASLT_POINTER(name) decltype(&::name) name = nullptr;
  BARACUDA_CUBLASLT_FUNCTIONS(BARACUDA_CUBLASLT_POINTER)
#undef BARACUDA_CUBLASLT_POINTER
};

// The table, loaded on the first call (once per process, thread-safe);
// nullptr when cuBLASLt or one of its functions could not be loaded.
const Api* try_api();
// Why try_api() is nullptr ("libcublasLt.so.13: cannot open shared object
// file: ..."); empty when it loaded.
const std::string& load_error();

// Ok when the table is loaded, else Unsupported "<plan>: cuBLASLt could not
// be loaded (<load_error>)". Every path that creates a cuBLASLt object (the
// handle, descriptors, preferences) asks this first.
Status require_api(const char* plan);

// The table, for code behind a require_api() that succeeded.
inline const Api& api() { return *try_api(); }

}  // namespace baracuda::cublaslt
