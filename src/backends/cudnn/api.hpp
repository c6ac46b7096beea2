// The cuDNN functions baracuda calls, loaded from libcudnn.so.<CUDNN_MAJOR>
// at first use (dlopen; src/backends/dynamic_library.hpp says where it is
// looked for). Nothing links against cuDNN: a program starts without it and
// cuDNN routes report it missing (library.hpp: available(),
// unavailable_reason()).
//
// Every call goes through the table: api().cudnnBackendExecute(...). A new
// function is one line in BARACUDA_CUDNN_FUNCTIONS.
#pragma once
#include <cudnn.h>

#include <string>

namespace baracuda::cudnn {

#define BARACUDA_CUDNN_FUNCTIONS(X)  \
  X(cudnnGetVersion)                 \
  X(cudnnGetErrorString)             \
  X(cudnnGetLastErrorString)         \
  X(cudnnCreate)                     \
  X(cudnnSetStream)                  \
  X(cudnnBackendCreateDescriptor)    \
  X(cudnnBackendDestroyDescriptor)   \
  X(cudnnBackendSetAttribute)        \
  X(cudnnBackendGetAttribute)        \
  X(cudnnBackendFinalize)            \
  X(cudnnBackendExecute)

struct Api {
#define BARACUDA_CUDNN_POINTER(name) decltype(&::name) name = nullptr;
  BARACUDA_CUDNN_FUNCTIONS(BARACUDA_CUDNN_POINTER)
#undef BARACUDA_CUDNN_POINTER
};

// The table, loaded on the first call (once per process, thread-safe);
// nullptr when cuDNN or one of its functions could not be loaded.
const Api* try_api();
// Why try_api() is nullptr ("libcudnn.so.9: cannot open shared object file:
// ..."); empty when it loaded.
const std::string& load_error();
// The table, for code that runs only after available() (library.hpp) said
// yes: every route checks that before its first cuDNN call.
inline const Api& api() { return *try_api(); }

}  // namespace baracuda::cudnn
