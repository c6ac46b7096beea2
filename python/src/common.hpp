// Shared pieces of the baracuda._C extension (docs/PYTHON.md): status ->
// Python exception, dtype / shape / stream conversions, the Array type
// (memory baracuda owns, exported through DLPack) and View (any DLPack
// producer's tensor, imported for the length of a call).
#pragma once
#include <nanobind/nanobind.h>
#include <nanobind/stl/optional.h>
#include <nanobind/stl/string.h>
#include <nanobind/stl/vector.h>

#include <memory>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"

namespace nb = nanobind;

namespace bpy {
using namespace baracuda;

// ---- errors -------------------------------------------------------------------
// Raises the Python exception class registered for s.code() (baracuda.Error's
// subclasses, registered by baracuda/__init__.py), with s's message.
[[noreturn]] void raise_status(const Status& s);
[[noreturn]] void raise_invalid(const std::string& msg);      // InvalidProblemError
[[noreturn]] void raise_unsupported(const std::string& msg);  // UnsupportedError
inline void check(const Status& s) {
  if (!s.is_ok()) raise_status(s);
}
template <class T>
T unwrap(Result<T>&& r) {
  if (!r.is_ok()) raise_status(r.status());
  return std::move(*r);
}

// ---- dtypes, shapes -------------------------------------------------------------
// Accepts "float32" / "f32" / numpy dtypes / torch dtypes (by their str()).
DType dtype_from_py(nb::handle h);
const char* dtype_py_name(DType t);  // array API names: "float32", "bfloat16", "bool", ...
Dims dims_from_py(nb::handle h, const char* what);
nb::tuple dims_to_py(const Dims& d);
nb::object device_to_py(Device d);   // "cpu" / "cuda:0"

// ---- streams --------------------------------------------------------------------
// stream= of a call: None (see resolve_stream), a baracuda.Stream, an int
// cudaStream_t handle, an object with .cuda_stream (torch) or .ptr (CuPy).
Stream stream_from_py(nb::handle h, std::optional<Device> device);
// Decides the stream of a call on `device` from `stream_arg` and the inputs:
// CPU -> Stream::cpu() (stream_arg must be None); CUDA -> stream_arg, else
// torch's current stream when an input is a torch tensor (torch already
// imported), else the legacy default stream.
Stream resolve_stream(nb::handle stream_arg, Device device, const std::vector<nb::handle>& inputs);
// The DLPack `stream` argument naming `s` (1 = legacy default stream).
nb::object dlpack_stream_arg(const Stream& s);

// ---- owned memory ----------------------------------------------------------------
struct Storage {
  void* ptr = nullptr;
  size_t bytes = 0;
  Device device;
  void* stream = nullptr;  // CUDA: the stream it was allocated on
  // CUDA: the stream of the last baracuda call that used it. Every use is
  // ordered after the previous one (an event wait when the streams differ),
  // exports order the consumer after it, and the memory is freed on it
  // (stream-ordered, after every use baracuda saw).
  void* last = nullptr;
  // The Python object of `last` when the caller gave one (a CuPy or torch
  // stream object): a strong reference, so the stream outlives the memory
  // freed on it. A stream destroyed before the cudaFreeAsync on it would be
  // undefined behaviour (seen on the H100: "context is destroyed", then a
  // segfault, after a CuPy stream went out of scope before the array).
  PyObject* last_owner = nullptr;
  void set_last(void* s);  // records a use on stream s (and takes s's owner)
  Storage(Device d, size_t bytes, void* stream);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
};

struct Array {
  std::shared_ptr<Storage> storage;
  DType dtype = DType::F32;
  Dims shape, strides;  // strides in elements
  int64_t offset = 0;   // elements from storage->ptr
  Device device() const { return storage->device; }
  void* data() const { return static_cast<char*>(storage->ptr) + offset * static_cast<int64_t>(dtype_size(dtype)); }
  TensorMut view() const;
};
Array make_array(DType dtype, const Dims& shape, const Stream& stream);

// ---- imported tensors -------------------------------------------------------------
// A tensor of any DLPack producer, viewed for the duration of a call. Holds
// the producer's object and (when the managed tensor was consumed) calls its
// deleter when destroyed.
struct View {
  nb::object source;               // the producer (kept alive)
  std::shared_ptr<void> owner;     // the consumed managed tensor (deleter on release)
  TensorMut view;
  bool read_only = false;
};
// Imports `obj` (an Array, a View, or any object with __dlpack__), asking a
// CUDA producer to make `stream` ready for it. `what` names the argument in errors.
// `known`: the device __dlpack_device__ already reported (saves a second call).
View import_tensor(nb::handle obj, const Stream& stream, const char* what, std::optional<Device> known = std::nullopt);
// The device of `obj` without importing it (__dlpack_device__).
Device device_of(nb::handle obj, const char* what);
bool is_tensor_like(nb::handle obj);

// Scratch memory of one call: stream-ordered on CUDA, host memory on the CPU.
struct ScopedWorkspace {
  std::shared_ptr<Storage> storage;
  Workspace ws;
  ScopedWorkspace(size_t bytes, const Stream& s);
};
// workspace= of a plan's run(): None (allocated here when the plan needs
// one) or any tensor (its bytes from its data pointer on).
Workspace workspace_from_py(nb::handle h, size_t needed, const Stream& s, std::optional<ScopedWorkspace>& own,
                            std::optional<View>& keep);

nb::dict sku_to_py(const KernelSku& s);

void bind_core(nb::module_& m);
void bind_plans(nb::module_& m);
void bind_plans_more(nb::module_& m);
void bind_plans_indexing(nb::module_& m);
void bind_fast(nb::module_& m);
// fast.cpp: torch's current stream of CUDA device `ordinal` (torch imported;
// torch._C._cuda_getCurrentRawStream when it exists).
void* torch_current_stream_handle(int ordinal);
// fast.cpp: import_tensor with the fast paths' reads (torch metadata on the CPU
// or on torch's current stream, NumPy buffers); the plan layer's run() uses it.
View import_fast(nb::handle obj, const Stream& stream, const char* what);
// fast.cpp: _C.prepare(tensors, stream) of the functional layer's general path.
nb::object prepare_call(nb::handle tensors, nb::handle stream);  // fast.cpp: the functional layer's C++ entries

}  // namespace bpy
