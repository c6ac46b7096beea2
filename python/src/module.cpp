// baracuda._C: the core (errors, dtypes, streams, Array, DLPack import and
// export). The plans are bound in plans.cpp. docs/PYTHON.md states the rules.
#include <nanobind/stl/pair.h>
#include <nanobind/stl/tuple.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>

#include "common.hpp"

#if BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace bpy {

// ---- errors ---------------------------------------------------------------------
namespace {
// Strong references kept for the life of the process as plain handles (no
// C++ destructor that would touch Python after the interpreter finalized).
nb::handle g_error_classes[7];  // by StatusCode
nb::handle g_torch_tensor;      // torch.Tensor, looked up once torch is imported

nb::handle error_class(StatusCode c) {
  const auto i = static_cast<size_t>(c);
  if (i < 7 && g_error_classes[i].is_valid()) return g_error_classes[i];
  return PyExc_RuntimeError;
}
}  // namespace

void raise_status(const Status& s) {
  nb::handle cls = error_class(s.code());
  nb::object e = cls(nb::str(s.message().c_str()));
  if (s.needed() || s.got()) {
    nb::setattr(e, "needed", nb::int_(s.needed()));
    nb::setattr(e, "got", nb::int_(s.got()));
  }
  PyErr_SetObject(cls.ptr(), e.ptr());
  throw nb::python_error();
}
void raise_invalid(const std::string& msg) { raise_status(Status(StatusCode::InvalidProblem, msg)); }
void raise_unsupported(const std::string& msg) { raise_status(Status(StatusCode::Unsupported, msg)); }

#if BARACUDA_WITH_CUDA
namespace {
void cuda_check(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    raise_status(Status(StatusCode::CudaError, std::string(what) + ": " + cudaGetErrorName(e) + " (" +
                                                   cudaGetErrorString(e) + ")"));
}
struct DeviceGuard {  // makes `ordinal` current for its scope
  int old = -1;
  explicit DeviceGuard(int ordinal) {
    if (cudaGetDevice(&old) != cudaSuccess) old = -1;
    if (old != ordinal) cuda_check(cudaSetDevice(ordinal), "cudaSetDevice");
  }
  ~DeviceGuard() {
    int cur = -1;
    if (old >= 0 && cudaGetDevice(&cur) == cudaSuccess && cur != old) (void)cudaSetDevice(old);
  }
};
}  // namespace
#endif

// ---- dtypes, shapes, devices --------------------------------------------------
namespace {
struct DTypeName {
  const char* name;
  DType t;
};
// Python spellings: the array API's names, NumPy's / torch's aliases and baracuda's own.
constexpr DTypeName kDTypeNames[] = {
    {"bool", DType::Bool},       {"int8", DType::I8},          {"uint8", DType::U8},
    {"int16", DType::I16},       {"int32", DType::I32},        {"int64", DType::I64},
    {"float16", DType::F16},     {"bfloat16", DType::BF16},    {"float32", DType::F32},
    {"float64", DType::F64},     {"float8_e4m3fn", DType::F8E4M3}, {"float8_e5m2", DType::F8E5M2},
    {"complex64", DType::C64},   {"complex128", DType::C128},  {"half", DType::F16},
    {"float", DType::F32},       {"double", DType::F64},       {"long", DType::I64},
    {"int", DType::I32},         {"short", DType::I16},        {"cfloat", DType::C64},
    {"cdouble", DType::C128},    {"bool_", DType::Bool},
};
}  // namespace

DType dtype_from_py(nb::handle h) {
  if (h.is_none()) raise_invalid("dtype: None is not a dtype");
  std::string s = nb::str(h).c_str();
  if (s.rfind("torch.", 0) == 0) s = s.substr(6);
  if (s.rfind("<class 'numpy.", 0) == 0) s = s.substr(14, s.size() - 16);  // np.float32 (the type)
  for (const auto& n : kDTypeNames)
    if (s == n.name) return n.t;
  if (auto t = dtype_from_name(s)) return *t;
  raise_invalid("dtype: unknown dtype '" + s + "'");
}

const char* dtype_py_name(DType t) {
  for (const auto& n : kDTypeNames)
    if (n.t == t) return n.name;
  return "?";
}

Dims dims_from_py(nb::handle h, const char* what) {
  Dims d;
  if (h.is_none()) return d;
  if (nb::isinstance<nb::int_>(h)) {
    d.push_back(nb::cast<int64_t>(h));
    return d;
  }
  if (!nb::isinstance<nb::sequence>(h) || nb::isinstance<nb::str>(h))
    throw nb::type_error((std::string(what) + ": expected a sequence of ints").c_str());
  for (nb::handle x : h) {
    if (!d.push_back(nb::cast<int64_t>(x)))
      raise_unsupported(std::string(what) + ": more than " + std::to_string(kMaxRank) + " dimensions");
  }
  return d;
}

nb::tuple dims_to_py(const Dims& d) {
  nb::list l;
  for (int64_t x : d) l.append(x);
  return nb::tuple(l);
}

nb::object device_to_py(Device d) {
  if (d.is_cpu()) return nb::str("cpu");
  return nb::str(("cuda:" + std::to_string(d.ordinal)).c_str());
}

// ---- streams ----------------------------------------------------------------------
namespace {
int current_cuda_device() {
#if BARACUDA_WITH_CUDA
  int d = 0;
  if (cudaGetDevice(&d) != cudaSuccess) return 0;
  return d;
#else
  return 0;
#endif
}
bool torch_loaded() {
  if (g_torch_tensor.is_valid()) return true;
  nb::dict modules = nb::borrow<nb::dict>(PySys_GetObject("modules"));
  if (!modules.contains("torch")) return false;
  nb::object torch = modules["torch"];
  if (!nb::hasattr(torch, "Tensor")) return false;  // torch still importing
  g_torch_tensor = nb::object(torch.attr("Tensor")).release();
  return true;
}
bool is_torch_tensor(nb::handle h) {
  if (!torch_loaded()) return false;
  return PyObject_IsInstance(h.ptr(), g_torch_tensor.ptr()) == 1;
}
void* handle_from_int(nb::handle h) {
  const auto v = nb::cast<uintptr_t>(h);
  return reinterpret_cast<void*>(v);
}
}  // namespace

void note_stream_owner(void* handle, nb::handle obj);

Stream stream_from_py(nb::handle h, std::optional<Device> device) {
  if (nb::isinstance<Stream>(h)) return nb::cast<Stream>(h);
  if (nb::isinstance<nb::str>(h)) {
    std::string s = nb::cast<std::string>(h);
    if (s == "cpu") return Stream::cpu();
    if (s == "cuda") return Stream::cuda(current_cuda_device());
    if (s.rfind("cuda:", 0) == 0) return Stream::cuda(std::atoi(s.c_str() + 5));
    raise_invalid("stream: unknown device string '" + s + "'");
  }
  int ordinal = device && device->is_cuda() ? device->ordinal : current_cuda_device();
  if (nb::hasattr(h, "cuda_stream")) {  // torch.cuda.Stream
    if (nb::hasattr(h, "device_index")) ordinal = nb::cast<int>(h.attr("device_index"));
    void* handle = handle_from_int(h.attr("cuda_stream"));
    note_stream_owner(handle, h);
    return Stream::cuda(ordinal, handle);
  }
  if (nb::hasattr(h, "ptr") && !nb::isinstance<nb::int_>(h)) {  // cupy.cuda.Stream
    if (nb::hasattr(h, "device_id")) ordinal = nb::cast<int>(h.attr("device_id"));
    void* handle = handle_from_int(h.attr("ptr"));
    note_stream_owner(handle, h);
    return Stream::cuda(ordinal, handle);
  }
  if (nb::isinstance<nb::int_>(h)) {
    const auto v = nb::cast<int64_t>(h);
    // DLPack's conventions: 1 = the legacy default stream, 2 = per-thread.
    if (v == 0 || v == 1) return Stream::cuda(ordinal, nullptr);
#if BARACUDA_WITH_CUDA
    if (v == 2) return Stream::cuda(ordinal, static_cast<void*>(cudaStreamPerThread));
#endif
    return Stream::cuda(ordinal, handle_from_int(h));
  }
  throw nb::type_error("stream: expected None, a baracuda.Stream, 'cpu' / 'cuda[:N]', an int cudaStream_t, "
                       "or an object with .cuda_stream (torch) or .ptr (CuPy)");
}

Stream resolve_stream(nb::handle stream_arg, Device device, const std::vector<nb::handle>& inputs) {
  if (device.is_cpu()) {
    if (!stream_arg.is_none()) {
      Stream s = stream_from_py(stream_arg, device);
      if (!s.is_cpu()) raise_invalid("stream: a CUDA stream was given but the tensors are on the CPU");
    }
    return Stream::cpu();
  }
  if (!stream_arg.is_none()) {
    Stream s = stream_from_py(stream_arg, device);
    if (!s.is_cuda() || !(s.device() == device))
      raise_invalid("stream: the stream is on " + s.device().to_string() + " but the tensors are on " +
                    device.to_string());
    return s;
  }
  for (nb::handle h : inputs) {
    if (h.is_valid() && !h.is_none() && is_torch_tensor(h)) {
      return Stream::cuda(device.ordinal, torch_current_stream_handle(device.ordinal));
    }
  }
  return Stream::cuda(device.ordinal, nullptr);
}

nb::object dlpack_stream_arg(const Stream& s) {
  if (s.is_cpu()) return nb::none();
  if (s.native_handle() == nullptr) return nb::int_(1);
#if BARACUDA_WITH_CUDA
  if (s.native_handle() == static_cast<void*>(cudaStreamPerThread)) return nb::int_(2);
#endif
  return nb::int_(reinterpret_cast<uintptr_t>(s.native_handle()));
}

// ---- memory -------------------------------------------------------------------------
#if BARACUDA_WITH_CUDA
namespace {
// baracuda's own stream-ordered memory pool per device (not the device's
// default pool: no side effect on other libraries), created on first use
// with an unlimited release threshold, so freed blocks stay in the pool for
// the next call instead of going back to the driver at every synchronization.
// empty_cache() trims it.
constexpr int kMaxDevices = 64;
cudaMemPool_t g_pools[kMaxDevices] = {};
cudaMemPool_t pool_for(int ordinal) {
  if (ordinal < 0 || ordinal >= kMaxDevices) raise_invalid("cuda device ordinal out of range");
  if (g_pools[ordinal]) return g_pools[ordinal];  // under the GIL: no race
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = ordinal;
  cudaMemPool_t pool;
  cuda_check(cudaMemPoolCreate(&pool, &props), "cudaMemPoolCreate");
  uint64_t threshold = UINT64_MAX;
  cuda_check(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold),
             "cudaMemPoolSetAttribute(release threshold)");
  g_pools[ordinal] = pool;
  return pool;
}
}  // namespace
#endif

// Stream handles -> weak references to the Python stream objects they came
// from (stream_from_py fills it). An array used on such a stream keeps the
// object alive until its memory is freed on it. Under the GIL.
std::unordered_map<void*, PyObject*>& stream_owners() {
  static auto* m = new std::unordered_map<void*, PyObject*>();  // never destroyed: used from destructors
  return *m;
}
void note_stream_owner(void* handle, nb::handle obj) {
  if (handle == nullptr) return;
  PyObject* w = PyWeakref_NewRef(obj.ptr(), nullptr);
  if (!w) {  // not weak-referenceable: the stream's lifetime stays the caller's business
    PyErr_Clear();
    return;
  }
  auto& m = stream_owners();
  auto it = m.find(handle);
  if (it != m.end()) {
    Py_DECREF(it->second);
    it->second = w;
  } else {
    m.emplace(handle, w);
  }
}
PyObject* stream_owner_ref(void* handle) {  // a new strong reference, or null
  if (handle == nullptr) return nullptr;
  auto& m = stream_owners();
  auto it = m.find(handle);
  if (it == m.end()) return nullptr;
  PyObject* o = PyWeakref_GetObject(it->second);  // borrowed; Py_None once dead
  if (o == nullptr || o == Py_None) {
    PyErr_Clear();
    Py_DECREF(it->second);
    m.erase(it);
    return nullptr;
  }
  Py_INCREF(o);
  return o;
}
void release_owner(PyObject* o) {
  if (!o || !Py_IsInitialized()) return;  // at interpreter exit: leaked, never touched
  PyGILState_STATE g = PyGILState_Ensure();  // the last reference may go from a thread without the GIL (DLPack deleters)
  Py_DECREF(o);
  PyGILState_Release(g);
}

void Storage::set_last(void* s) {
  if (s == last) return;
  last = s;
  PyObject* o = stream_owner_ref(s);
  release_owner(last_owner);
  last_owner = o;
}

Storage::Storage(Device d, size_t n, void* s) : bytes(n), device(d), stream(s), last(s) {
  const size_t alloc = n == 0 ? 64 : (n + 63) / 64 * 64;  // never a null pointer, even for no elements
  if (d.is_cpu()) {
    ptr = std::aligned_alloc(64, alloc);
    if (!ptr) throw std::bad_alloc();
    return;
  }
#if BARACUDA_WITH_CUDA
  DeviceGuard g(d.ordinal);
  cuda_check(cudaMallocFromPoolAsync(&ptr, alloc, pool_for(d.ordinal), static_cast<cudaStream_t>(s)),
             "cudaMallocFromPoolAsync");
  last_owner = stream_owner_ref(s);
#else
  raise_unsupported("baracuda was built without CUDA: cannot allocate on " + d.to_string());
#endif
}

Storage::~Storage() {
  if (!ptr) return;
  if (device.is_cpu()) {
    std::free(ptr);
    return;
  }
#if BARACUDA_WITH_CUDA
  int old = -1;
  (void)cudaGetDevice(&old);
  if (old != device.ordinal) (void)cudaSetDevice(device.ordinal);
  (void)cudaFreeAsync(ptr, static_cast<cudaStream_t>(last));  // after every use baracuda saw (they are chained)
  if (old >= 0 && old != device.ordinal) (void)cudaSetDevice(old);
#endif
  release_owner(last_owner);  // after the free: the stream may go now
}

TensorMut Array::view() const {
  TensorMut v(data(), dtype, device(), shape, strides, 0);
  v.capacity = static_cast<int64_t>(storage->bytes / dtype_size(dtype)) - offset;
  return v;
}

Array make_array(DType dtype, const Dims& shape, const Stream& stream) {
  if (!dtype_is_valid(dtype)) raise_invalid("empty: invalid dtype");
  for (int64_t e : shape)
    if (e < 0) raise_invalid("empty: negative extent in shape " + shape.to_string());
  const int64_t n = shape_numel(shape);
  if (n == INT64_MAX) raise_invalid("empty: the shape " + shape.to_string() + " overflows");
  Array a;
  a.storage = std::make_shared<Storage>(stream.device(), static_cast<size_t>(n) * dtype_size(dtype),
                                        stream.native_handle());
  a.dtype = dtype;
  a.shape = shape;
  a.strides = contiguous_strides(shape);
  return a;
}

ScopedWorkspace::ScopedWorkspace(size_t bytes, const Stream& s) {
  storage = std::make_shared<Storage>(s.device(), bytes, s.native_handle());
  ws = Workspace(storage->ptr, bytes);
}

// ---- DLPack ---------------------------------------------------------------------------
// The DLPack structs this binding reads and writes, declared here by their
// layout in the DLPack specification (the DLTensor of 0.6 and 1.x is the same;
// DLManagedTensorVersioned is 1.x's), so the binding speaks both protocols
// whatever dlpack.h the build found.
namespace {
struct DLDev {
  int32_t device_type;
  int32_t device_id;
};
struct DLDType {
  uint8_t code;
  uint8_t bits;
  uint16_t lanes;
};
struct DLTens {
  void* data;
  DLDev device;
  int32_t ndim;
  DLDType dtype;
  int64_t* shape;
  int64_t* strides;
  uint64_t byte_offset;
};
struct DLManaged {
  DLTens dl_tensor;
  void* manager_ctx;
  void (*deleter)(DLManaged*);
};
struct DLVersion {
  uint32_t major;
  uint32_t minor;
};
struct DLManagedV {
  DLVersion version;
  void* manager_ctx;
  void (*deleter)(DLManagedV*);
  uint64_t flags;
  DLTens dl_tensor;
};
constexpr uint64_t kFlagReadOnly = 1;
constexpr int32_t kDLCPU = 1, kDLCUDA = 2, kDLCUDAHost = 3, kDLCUDAManaged = 13;

// DLPack type codes: int 0, uint 1, float 2, bfloat 4, complex 5, bool 6
// (1.0), float8_e4m3fn 10, float8_e5m2 12 (1.1).
DLDType dl_dtype(DType t) {
  const uint8_t bits = static_cast<uint8_t>(8 * dtype_size(t));
  switch (t) {
    case DType::Bool: return {6, 8, 1};
    case DType::BF16: return {4, 16, 1};
    case DType::F8E4M3: return {10, 8, 1};
    case DType::F8E5M2: return {12, 8, 1};
    case DType::C64:
    case DType::C128: return {5, bits, 1};
    case DType::F16:
    case DType::F32:
    case DType::F64: return {2, bits, 1};
    case DType::U8: return {1, 8, 1};
    default: return {0, bits, 1};
  }
}
std::optional<DType> dtype_from_dl(DLDType d) {
  if (d.lanes != 1) return std::nullopt;
  for (DType t : kAllDTypes) {
    const DLDType c = dl_dtype(t);
    if (c.code == d.code && c.bits == d.bits) return t;
  }
  return std::nullopt;
}
std::string dl_dtype_string(DLDType d) {
  return "code " + std::to_string(d.code) + " bits " + std::to_string(d.bits) + " lanes " + std::to_string(d.lanes);
}

// What an exported capsule owns: the array's storage, the shape / strides the
// DLTensor points at, and the managed struct itself.
template <class Managed>
struct ExportCtx {
  Managed managed{};
  std::shared_ptr<Storage> storage;
  int64_t shape[kMaxRank]{};
  int64_t strides[kMaxRank]{};
};
template <class Managed>
void export_deleter(Managed* m) {
  if (!m) return;
  delete static_cast<ExportCtx<Managed>*>(m->manager_ctx);
}
template <class Managed>
void capsule_destructor(PyObject* cap) {
  // Called when the capsule dies: if no consumer took it (it still has its
  // original name), the managed tensor is ours to release.
  const char* name = std::is_same_v<Managed, DLManagedV> ? "dltensor_versioned" : "dltensor";
  if (PyCapsule_IsValid(cap, name)) {
    auto* m = static_cast<Managed*>(PyCapsule_GetPointer(cap, name));
    if (m && m->deleter) m->deleter(m);
  } else {
    PyErr_Clear();
  }
}
template <class Managed>
void fill_tensor(ExportCtx<Managed>* ctx, const Array& a, DLTens& t) {
  t.data = a.storage->ptr;
  t.byte_offset = static_cast<uint64_t>(a.offset) * dtype_size(a.dtype);
  t.device = a.device().is_cpu() ? DLDev{kDLCPU, 0} : DLDev{kDLCUDA, a.device().ordinal};
  t.ndim = a.shape.rank;
  t.dtype = dl_dtype(a.dtype);
  for (int i = 0; i < a.shape.rank; ++i) {
    ctx->shape[i] = a.shape[i];
    ctx->strides[i] = a.strides[i];
  }
  t.shape = ctx->shape;
  t.strides = ctx->strides;
}

// Makes `consumer` wait for the work enqueued on `producer` so far (an event,
// never a host synchronization).
void order_streams(const Device& dev, void* producer, void* consumer) {
#if BARACUDA_WITH_CUDA
  if (producer == consumer) return;
  DeviceGuard g(dev.ordinal);
  cudaEvent_t ev;
  cuda_check(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming), "cudaEventCreateWithFlags");
  cudaError_t e = cudaEventRecord(ev, static_cast<cudaStream_t>(producer));
  if (e == cudaSuccess) e = cudaStreamWaitEvent(static_cast<cudaStream_t>(consumer), ev, 0);
  (void)cudaEventDestroy(ev);  // released once the wait is done
  cuda_check(e, "__dlpack__: ordering the consumer's stream after the producer's");
#else
  (void)dev, (void)producer, (void)consumer;
#endif
}

nb::object array_dlpack(const Array& a, nb::handle stream, nb::handle max_version, nb::handle dl_device,
                        nb::handle copy) {
  if (!copy.is_none() && nb::cast<bool>(copy))
    throw nb::buffer_error("baracuda.Array.__dlpack__: copy=True is not supported (export is always zero-copy)");
  if (!dl_device.is_none()) {
    auto dd = nb::cast<std::pair<int, int>>(dl_device);
    const bool same = a.device().is_cpu() ? dd.first == kDLCPU
                                          : (dd.first == kDLCUDA && dd.second == a.device().ordinal);
    if (!same) throw nb::buffer_error("baracuda.Array.__dlpack__: dl_device differs from the array's device (no copies)");
  }
  if (a.device().is_cuda()) {
    // The consumer's stream: None = the legacy default stream; -1 = no
    // synchronization wanted; 1 = legacy default, 2 = per-thread default.
    if (stream.is_none() || nb::cast<int64_t>(stream) != -1) {
      void* consumer = nullptr;
      if (!stream.is_none()) {
        const auto v = nb::cast<int64_t>(stream);
        // 0 is not a valid CUDA value in DLPack; read as the legacy default stream (what it means to CUDA).
#if BARACUDA_WITH_CUDA
        if (v == 2) consumer = static_cast<void*>(cudaStreamPerThread);
        else
#endif
        if (v != 0 && v != 1) consumer = reinterpret_cast<void*>(static_cast<uintptr_t>(v));
      }
      order_streams(a.device(), a.storage->last, consumer);
    }
  } else if (!stream.is_none() && nb::cast<int64_t>(stream) != -1) {
    throw nb::buffer_error("baracuda.Array.__dlpack__: stream must be None for a CPU array");
  }
  bool versioned = false;
  if (!max_version.is_none()) {
    auto mv = nb::cast<std::pair<int, int>>(max_version);
    versioned = mv.first >= 1;
  }
  if (versioned) {
    auto* ctx = new ExportCtx<DLManagedV>();
    ctx->storage = a.storage;
    ctx->managed.version = {1, 0};
    ctx->managed.manager_ctx = ctx;
    ctx->managed.deleter = export_deleter<DLManagedV>;
    ctx->managed.flags = 0;
    fill_tensor(ctx, a, ctx->managed.dl_tensor);
    PyObject* cap = PyCapsule_New(&ctx->managed, "dltensor_versioned", capsule_destructor<DLManagedV>);
    if (!cap) {
      delete ctx;
      throw nb::python_error();
    }
    return nb::steal(cap);
  }
  auto* ctx = new ExportCtx<DLManaged>();
  ctx->storage = a.storage;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = export_deleter<DLManaged>;
  fill_tensor(ctx, a, ctx->managed.dl_tensor);
  PyObject* cap = PyCapsule_New(&ctx->managed, "dltensor", capsule_destructor<DLManaged>);
  if (!cap) {
    delete ctx;
    throw nb::python_error();
  }
  return nb::steal(cap);
}

Device device_from_dl(int type, int id, const char* what) {
  if (type == kDLCPU || type == kDLCUDAHost) return Device::cpu();
  if (type == kDLCUDA || type == kDLCUDAManaged) return Device::cuda(id);
  raise_unsupported(std::string(what) + ": DLPack device type " + std::to_string(type) +
                    " is not supported (CPU or CUDA only)");
}

// Views a DLTensor (the same checks as baracuda's from_dlpack, done here so
// the binding needs no dlpack.h: the library may be built without DLPack):
// rank <= 8, a known dtype, non-negative extents and strides, a byte offset
// of whole elements; strides null = row-major.
TensorMut view_of(const DLTens& t, const char* what) {
  const std::string w(what);
  auto dt = dtype_from_dl(t.dtype);
  if (!dt) raise_unsupported(w + ": DLPack dtype " + dl_dtype_string(t.dtype) + " is not supported");
  if (t.ndim < 0 || t.ndim > kMaxRank)
    raise_unsupported(w + ": rank " + std::to_string(t.ndim) + " exceeds baracuda's maximum of 8");
  const Device dev = device_from_dl(t.device.device_type, t.device.device_id, what);
  Dims shape = Dims::of_rank(t.ndim), strides;
  for (int i = 0; i < t.ndim; ++i) {
    shape[i] = t.shape[i];
    if (shape[i] < 0) raise_invalid(w + ": negative extent in shape");
  }
  if (t.strides) {
    strides = Dims::of_rank(t.ndim);
    for (int i = 0; i < t.ndim; ++i) {
      strides[i] = t.strides[i];
      if (strides[i] < 0 && shape[i] > 1)
        raise_unsupported(w + ": negative strides are not supported (make the tensor contiguous first)");
      if (strides[i] < 0) strides[i] = 0;  // an extent of 0 or 1: the stride is never used
    }
  } else {
    strides = contiguous_strides(shape);
  }
  const size_t esz = dtype_size(*dt);
  if (t.byte_offset % esz != 0) raise_invalid(w + ": the DLPack byte_offset is not a multiple of the element size");
  TensorMut v(static_cast<char*>(t.data) + t.byte_offset, *dt, dev, shape, strides, 0);
  v.capacity = v.span();
  return v;
}
}  // namespace

bool is_tensor_like(nb::handle obj) {
  return nb::isinstance<Array>(obj) || nb::isinstance<View>(obj) || nb::hasattr(obj, "__dlpack__");
}

Device device_of(nb::handle obj, const char* what) {
  if (nb::isinstance<Array>(obj)) return nb::cast<const Array&>(obj).device();
  if (nb::isinstance<View>(obj)) return nb::cast<const View&>(obj).view.device;
  if (obj.is_none()) throw nb::type_error((std::string(what) + ": expected a tensor, got None").c_str());
  if (!nb::hasattr(obj, "__dlpack_device__")) {
    std::string tn = nb::str(nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr()))).attr("__name__")).c_str();
    throw nb::type_error((std::string(what) + ": expected a tensor supporting DLPack (__dlpack__), got " + tn).c_str());
  }
  auto dd = nb::cast<std::pair<int, int>>(obj.attr("__dlpack_device__")());
  return device_from_dl(dd.first, dd.second, what);
}

View import_tensor(nb::handle obj, const Stream& stream, const char* what, std::optional<Device> known) {
  if (nb::isinstance<Array>(obj) || nb::isinstance<View>(obj)) {
    const Device d = device_of(obj, what);
    if (!(d == stream.device()))
      raise_invalid(std::string(what) + ": the tensor is on " + d.to_string() + " but the call runs on " +
                    stream.device().to_string());
  }
  if (nb::isinstance<Array>(obj)) {
    const Array& a = nb::cast<const Array&>(obj);
    if (a.device().is_cuda() && stream.is_cuda()) {
      order_streams(a.device(), a.storage->last, stream.native_handle());
      a.storage->set_last(stream.native_handle());  // this call's use: the next one waits for it
    }
    View v;
    v.source = nb::borrow(obj);
    v.view = a.view();
    return v;
  }
  if (nb::isinstance<View>(obj)) return nb::cast<const View&>(obj);
  const Device dev = known ? *known : device_of(obj, what);
  if (!(dev == stream.device()))
    raise_invalid(std::string(what) + ": the tensor is on " + dev.to_string() + " but the call runs on " +
                  stream.device().to_string());
  nb::object fn = obj.attr("__dlpack__");
  nb::object sarg = dlpack_stream_arg(stream);
  // Producers whose __dlpack__ has no max_version (the legacy protocol, e.g.
  // torch < 2.7): remembered by type, so the TypeError is paid once.
  static std::vector<PyObject*> legacy_types;  // strong references, never released
  nb::handle type = nb::handle(reinterpret_cast<PyObject*>(Py_TYPE(obj.ptr())));
  const bool legacy = std::any_of(legacy_types.begin(), legacy_types.end(),
                                  [&](PyObject* t) { return t == type.ptr(); });
  nb::object cap;
  if (legacy) {
    cap = dev.is_cpu() ? fn() : fn(nb::arg("stream") = sarg);
  } else {
    try {
      cap = fn(nb::arg("stream") = sarg, nb::arg("max_version") = nb::make_tuple(1, 0));
    } catch (nb::python_error& e) {
      if (!e.matches(PyExc_TypeError)) throw;
      cap = dev.is_cpu() ? fn() : fn(nb::arg("stream") = sarg);  // a producer of the legacy protocol
      legacy_types.push_back(nb::borrow(type).release().ptr());
    }
  }
  View v;
  v.source = nb::borrow(obj);
  if (PyCapsule_IsValid(cap.ptr(), "dltensor_versioned")) {
    auto* m = static_cast<DLManagedV*>(PyCapsule_GetPointer(cap.ptr(), "dltensor_versioned"));
    if (PyCapsule_SetName(cap.ptr(), "used_dltensor_versioned") != 0) throw nb::python_error();
    v.owner = std::shared_ptr<void>(m, [](void* p) {
      auto* mm = static_cast<DLManagedV*>(p);
      if (mm->deleter) mm->deleter(mm);
    });
    if (m->version.major != 1)
      raise_unsupported(std::string(what) + ": DLPack major version " + std::to_string(m->version.major) +
                        " is not supported (1 is)");
    v.read_only = (m->flags & kFlagReadOnly) != 0;
    v.view = view_of(m->dl_tensor, what);
  } else if (PyCapsule_IsValid(cap.ptr(), "dltensor")) {
    auto* m = static_cast<DLManaged*>(PyCapsule_GetPointer(cap.ptr(), "dltensor"));
    if (PyCapsule_SetName(cap.ptr(), "used_dltensor") != 0) throw nb::python_error();
    v.owner = std::shared_ptr<void>(m, [](void* p) {
      auto* mm = static_cast<DLManaged*>(p);
      if (mm->deleter) mm->deleter(mm);
    });
    v.view = view_of(m->dl_tensor, what);
  } else {
    throw nb::type_error((std::string(what) + ": __dlpack__() did not return a DLPack capsule").c_str());
  }
  if (!(v.view.device == dev))
    raise_invalid(std::string(what) + ": __dlpack__ returned a tensor on another device than __dlpack_device__");
  return v;
}

Workspace workspace_from_py(nb::handle h, size_t needed, const Stream& s, std::optional<ScopedWorkspace>& own,
                            std::optional<View>& keep) {
  if (h.is_none()) {
    if (needed == 0) return Workspace::none();
    own.emplace(needed, s);
    return own->ws;
  }
  keep.emplace(import_tensor(h, s, "workspace"));
  if (keep->read_only) raise_invalid("workspace: the tensor is read-only");
  const TensorMut& v = keep->view;
  if (!v.is_contiguous()) raise_invalid("workspace: the tensor must be contiguous");
  return Workspace(v.data, static_cast<size_t>(v.numel()) * dtype_size(v.dtype));
}

nb::dict sku_to_py(const KernelSku& s) {
  nb::dict d;
  d["backend"] = backend_name(s.backend);
  d["arch"] = s.arch;
  d["dtype"] = dtype_py_name(s.dtype);
  d["op"] = s.op;
  d["variant"] = s.variant;
  nb::dict p;
  p["math"] = dtype_py_name(s.precision.math);
  p["accumulator"] = dtype_py_name(s.precision.accumulator);
  p["deterministic"] = s.precision.deterministic;
  p["bit_stable_on_same_hardware"] = s.precision.bit_stable_on_same_hardware;
  d["precision"] = p;
  return d;
}

// ---- bindings ---------------------------------------------------------------------------
void bind_core(nb::module_& m) {
  m.def("_register_errors", [](nb::dict classes) {
    for (auto [k, v] : classes) {
      const int code = nb::cast<int>(k);
      if (code >= 0 && code < 7) g_error_classes[code] = nb::borrow(v).release();
    }
  });
  m.def("version", []() { return std::string(version()); });
  m.def("cuda_available", []() { return cuda_available(); });
  m.def("cuda_device_count", []() { return cuda_device_count(); });
  m.def("empty_cache", []() {
#if BARACUDA_WITH_CUDA
    for (cudaMemPool_t p : g_pools)
      if (p) cuda_check(cudaMemPoolTrimTo(p, 0), "cudaMemPoolTrimTo");
#endif
  }, "Returns the unused memory of baracuda's CUDA memory pools to the driver (a no-op without CUDA).");
  #if BARACUDA_WITH_CUDA
  m.attr("WITH_CUDA") = true;
#else
  m.attr("WITH_CUDA") = false;
#endif

  nb::class_<Stream>(m, "Stream",
                     "Where a call runs: Stream.cpu(), or Stream.cuda(device, handle) wrapping a cudaStream_t "
                     "(handle 0: the legacy default stream).")
      .def_static("cpu", &Stream::cpu)
      .def_static("cuda", [](int device, uintptr_t handle) { return Stream::cuda(device, reinterpret_cast<void*>(handle)); },
                  nb::arg("device") = 0, nb::arg("handle") = 0)
      .def_static("from_py", [](nb::handle h) { return stream_from_py(h, std::nullopt); }, nb::arg("obj"))
      .def_prop_ro("device", [](const Stream& s) { return device_to_py(s.device()); })
      .def_prop_ro("handle", [](const Stream& s) { return reinterpret_cast<uintptr_t>(s.native_handle()); })
      .def_prop_ro("is_cpu", &Stream::is_cpu)
      .def("synchronize", [](const Stream& s) {
        nb::gil_scoped_release r;
        Status st = synchronize(s);
        nb::gil_scoped_acquire a;
        check(st);
      })
      .def("__eq__", [](const Stream& a, const Stream& b) {
        return a.device() == b.device() && a.native_handle() == b.native_handle();
      })
      .def("__hash__", [](const Stream& s) {
        return static_cast<int64_t>(reinterpret_cast<uintptr_t>(s.native_handle()) * 31 + (s.is_cpu() ? 0 : 1 + s.device().ordinal));
      })
      .def("__repr__", [](const Stream& s) {
        if (s.is_cpu()) return std::string("baracuda.Stream.cpu()");
        return "baracuda.Stream.cuda(" + std::to_string(s.device().ordinal) + ", " +
               std::to_string(reinterpret_cast<uintptr_t>(s.native_handle())) + ")";
      });

  nb::class_<Array>(m, "Array",
                    "An n-dimensional array in memory baracuda owns (host: 64-byte aligned; CUDA: stream-ordered "
                    "allocation on the stream of the call that made it). Exported zero-copy through DLPack: "
                    "torch.from_dlpack(a), np.from_dlpack(a), cupy.from_dlpack(a), jax.dlpack.from_dlpack(a).")
      .def_prop_ro("shape", [](const Array& a) { return dims_to_py(a.shape); })
      .def_prop_ro("strides", [](const Array& a) { return dims_to_py(a.strides); }, "in elements (as torch)")
      .def_prop_ro("dtype", [](const Array& a) { return dtype_py_name(a.dtype); })
      .def_prop_ro("device", [](const Array& a) { return device_to_py(a.device()); })
      .def_prop_ro("ndim", [](const Array& a) { return a.shape.rank; })
      .def_prop_ro("size", [](const Array& a) { return shape_numel(a.shape); })
      .def_prop_ro("itemsize", [](const Array& a) { return dtype_size(a.dtype); })
      .def_prop_ro("nbytes", [](const Array& a) { return shape_numel(a.shape) * static_cast<int64_t>(dtype_size(a.dtype)); })
      .def_prop_ro("data_ptr", [](const Array& a) { return reinterpret_cast<uintptr_t>(a.data()); })
      .def_prop_ro("stream", [](const Array& a) {
        return a.device().is_cpu() ? Stream::cpu() : Stream::cuda(a.device().ordinal, a.storage->last);
      }, "the stream of the last baracuda call that used the array (allocated it, read or wrote it); consumers "
         "are ordered after it and the memory is freed on it")
      .def("__len__", [](const Array& a) {
        if (a.shape.rank == 0) throw nb::type_error("len() of a 0-d array");
        return a.shape[0];
      })
      .def("__dlpack__", &array_dlpack, nb::kw_only(), nb::arg("stream") = nb::none(),
           nb::arg("max_version") = nb::none(), nb::arg("dl_device") = nb::none(), nb::arg("copy") = nb::none())
      .def("__dlpack_device__", [](const Array& a) {
        return a.device().is_cpu() ? std::make_pair(kDLCPU, 0) : std::make_pair(kDLCUDA, a.device().ordinal);
      })
      .def("__repr__", [](const Array& a) {
        return "baracuda.Array(shape=" + a.shape.to_string() + ", dtype=" + dtype_py_name(a.dtype) + ", device=" +
               a.device().to_string() + ")";
      });

  nb::class_<View>(m, "View", "A tensor of another library, imported through DLPack for a call.")
      .def_prop_ro("shape", [](const View& v) { return dims_to_py(v.view.shape); })
      .def_prop_ro("strides", [](const View& v) { return dims_to_py(v.view.strides); })
      .def_prop_ro("dtype", [](const View& v) { return dtype_py_name(v.view.dtype); })
      .def_prop_ro("device", [](const View& v) { return device_to_py(v.view.device); })
      .def_prop_ro("ndim", [](const View& v) { return v.view.shape.rank; })
      .def_prop_ro("read_only", [](const View& v) { return v.read_only; })
      .def_prop_ro("data_ptr", [](const View& v) { return reinterpret_cast<uintptr_t>(v.view.data); })
      .def_prop_ro("source", [](const View& v) { return v.source; });

  m.def("empty", [](nb::handle shape, nb::handle dtype, nb::handle stream) {
    Stream s = stream.is_none() ? Stream::cpu() : stream_from_py(stream, std::nullopt);
    return make_array(dtype_from_py(dtype), dims_from_py(shape, "empty: shape"), s);
  }, nb::arg("shape"), nb::arg("dtype") = "float32", nb::arg("stream") = nb::none(),
     "An uninitialised array on the stream's device (default: the CPU).");

  // prepare(tensors, stream): the stream of a call and its inputs imported.
  // None entries stay None. All tensors must be on one device.
  // (fast.cpp: the same imports as the fast paths.)
  m.def("prepare", [](nb::sequence tensors, nb::handle stream) { return prepare_call(tensors, stream); },
        nb::arg("tensors"), nb::arg("stream") = nb::none());
  m.def("is_tensor", &is_tensor_like);

  m.def("full", [](nb::handle shape, nb::handle value, nb::handle dtype, nb::handle stream) {
    Stream s = stream.is_none() ? Stream::cpu() : stream_from_py(stream, std::nullopt);
    Scalar v;
    if (PyBool_Check(value.ptr())) v = Scalar(value.ptr() == Py_True);
    else if (nb::isinstance<nb::int_>(value)) v = Scalar(static_cast<long long>(nb::cast<int64_t>(value)));
    else if (nb::isinstance<nb::float_>(value)) v = Scalar(nb::cast<double>(value));
    else throw nb::type_error("full: fill_value must be a Python number");
    const DType t = dtype_from_py(dtype);
    Array a = make_array(t, dims_from_py(shape, "full: shape"), s);
    FactoryPlan plan = unwrap(FactoryPlan::select(s, FactoryDescriptor::fill(t, a.shape, v)));
    check(plan.run(s, Workspace::none(), FactoryArgs{a.view()}));
    return a;
  }, nb::arg("shape"), nb::arg("fill_value"), nb::arg("dtype") = "float32", nb::arg("stream") = nb::none(),
     "torch.full: an array of `shape` filled with `fill_value` (converted as torch.full does).");
}

}  // namespace bpy

namespace bpy { void bind_plans_b(nb::module_& m); }  // plans_b.cpp
namespace bpy {
void bind_plans_optim(nb::module_& m);  // plans_optim.cpp: optimizers, gradient utilities, sampling, ternary, factories
}  // namespace bpy

NB_MODULE(_C, m) {
  bpy::bind_core(m);
  bpy::bind_plans(m);
  bpy::bind_plans_more(m);
  bpy::bind_plans_indexing(m);
  bpy::bind_plans_b(m);
  bpy::bind_fast(m);
  bpy::bind_plans_optim(m);  // plans_optim.cpp
}
