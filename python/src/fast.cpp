// baracuda._C fast paths of the functional layer (docs/PYTHON.md, "Per-call
// overhead"): one C++ entry per op family doing the whole call — classify
// and import the operands, decide the stream, look the plan up in a cache
// keyed in C++, allocate the output, run — instead of the Python layer's
// prepare / key tuple / dict / empty / plan.run(**kwargs) sequence.
//
// Each entry takes positional arguments only and returns the result, or
// None when the call is not one it handles (an operand that is not a
// baracuda.Array, a torch.Tensor, a NumPy ndarray or a Python bool / int /
// float; a torch tensor of a subclass; ...): the Python layer then takes its
// general path, which gives the same results and every error message.
//
// Torch tensors (exactly torch.Tensor, a real dtype, strided, not requiring
// grad) are read through their metadata (data_ptr, shape, stride, dtype,
// device) instead of __dlpack__ / __dlpack_device__ (about 5 us a tensor in
// torch 2.5), when that is equivalent to the DLPack import: on the CPU, or
// when the call runs on torch's current stream of the tensor's device (the
// default), where DLPack's stream handshake orders nothing. A call on
// another stream imports through __dlpack__(stream=...) as before, so the
// producer's work stays ordered before the call. NumPy arrays are read
// through the buffer protocol (the same pointer, shape, strides, dtype and
// read-only flag their __dlpack__ reports), held for the call.
#include "binders.hpp"

#include <cstring>
#include <string>
#include <unordered_map>

namespace bpy {
namespace {

// ---- torch without libtorch ------------------------------------------------------
struct TorchInfo {
  PyObject* tensor_type = nullptr;  // torch.Tensor (strong reference, never released)
  PyObject* raw_stream = nullptr;   // torch._C._cuda_getCurrentRawStream, or null
  PyObject* current_stream = nullptr;  // torch.cuda.current_stream (fallback)
  std::vector<std::pair<PyObject*, DType>> dtypes;  // torch dtype objects -> DType (real dtypes only)
  bool ready = false;
};
TorchInfo g_torch;

// Looks torch up once it is imported (never imports it).
bool torch_ready() {
  if (g_torch.ready) return true;
  PyObject* modules = PySys_GetObject("modules");  // borrowed
  if (!modules) return false;
  PyObject* torch = PyDict_GetItemString(modules, "torch");  // borrowed
  if (!torch) return false;
  nb::handle t(torch);
  if (!nb::hasattr(t, "Tensor") || !nb::hasattr(t, "float32") || !nb::hasattr(t, "cuda")) return false;  // importing
  g_torch.tensor_type = nb::object(t.attr("Tensor")).release().ptr();
  static const std::pair<const char*, DType> names[] = {
      {"float32", DType::F32}, {"bfloat16", DType::BF16}, {"float16", DType::F16}, {"float64", DType::F64},
      {"int64", DType::I64},   {"int32", DType::I32},     {"bool", DType::Bool},   {"int8", DType::I8},
      {"uint8", DType::U8},    {"int16", DType::I16}};
  // (Not float8: torch 2.5's __dlpack__ refuses it, and a call must not
  // accept a tensor on one stream and refuse it on another.)
  for (const auto& [n, d] : names)
    if (nb::hasattr(t, n)) g_torch.dtypes.push_back({nb::object(t.attr(n)).release().ptr(), d});
  nb::object c = t.attr("_C");
  if (nb::hasattr(c, "_cuda_getCurrentRawStream"))
    g_torch.raw_stream = nb::object(c.attr("_cuda_getCurrentRawStream")).release().ptr();
  nb::object cuda = t.attr("cuda");
  if (nb::hasattr(cuda, "current_stream"))
    g_torch.current_stream = nb::object(cuda.attr("current_stream")).release().ptr();
  g_torch.ready = true;
  return true;
}

// torch's current stream on CUDA device `ordinal` (its cudaStream_t).
void* torch_current_stream(int ordinal) {
  if (g_torch.raw_stream) {
    nb::object r = nb::steal(PyObject_CallOneArg(g_torch.raw_stream, nb::int_(ordinal).ptr()));
    if (!r.is_valid()) throw nb::python_error();
    return reinterpret_cast<void*>(nb::cast<uintptr_t>(r));
  }
  if (!g_torch.current_stream) raise_unsupported("torch has neither _C._cuda_getCurrentRawStream nor cuda.current_stream");
  nb::object s = nb::handle(g_torch.current_stream)(ordinal);
  return reinterpret_cast<void*>(nb::cast<uintptr_t>(s.attr("cuda_stream")));
}

// Interned attribute names.
struct Names {
  nb::handle requires_grad, dtype, is_neg, is_cuda, is_cpu, shape, stride, data_ptr, get_device;
  Names() {
    auto s = [](const char* n) { return nb::handle(PyUnicode_InternFromString(n)); };  // immortal enough: never freed
    requires_grad = s("requires_grad");
    dtype = s("dtype");
    is_neg = s("is_neg");
    is_cuda = s("is_cuda");
    is_cpu = s("is_cpu");
    shape = s("shape");
    stride = s("stride");
    data_ptr = s("data_ptr");
    get_device = s("get_device");
  }
};
const Names& names() {
  static Names* n = new Names();  // never destroyed (no Python calls after finalization)
  return *n;
}

PyObject* numpy_ndarray() {
  static PyObject* t = nullptr;
  if (t) return t;
  PyObject* modules = PySys_GetObject("modules");
  PyObject* np = modules ? PyDict_GetItemString(modules, "numpy") : nullptr;
  if (!np) return nullptr;
  PyObject* nd = PyObject_GetAttrString(np, "ndarray");
  if (!nd) {
    PyErr_Clear();
    return nullptr;
  }
  t = nd;  // strong reference kept
  return t;
}

// ---- operands -----------------------------------------------------------------------
enum class Kind { Absent, Scalar, Array, Torch, Foreign };

struct Operand {
  nb::handle h;
  Kind kind = Kind::Absent;
  Device device;
  bool torch_like = false;  // a torch.Tensor of a subclass (Kind::Foreign): the stream rule counts it
  Scalar value;            // Kind::Scalar
  DType scalar_dtype = DType::F64;
  // Kind::Torch / a NumPy array: the metadata (valid when `meta`)
  bool meta = false;
  bool read_only = false;
  std::shared_ptr<void> owner;  // NumPy: the buffer export, released when the call is done
  void* data = nullptr;
  DType dtype = DType::F32;
  Dims shape, strides;
};

// Reads an exact torch.Tensor's metadata; false (Python error cleared) when
// the tensor is one for the DLPack path (requires grad, a complex or
// unknown dtype, not strided, not CPU / CUDA).
bool read_torch(Operand& o) {
  const Names& n = names();
  PyObject* t = o.h.ptr();
  auto attr = [&](nb::handle name) { return nb::steal(PyObject_GetAttr(t, name.ptr())); };
  auto call0 = [&](nb::handle name) { return nb::steal(PyObject_CallMethodNoArgs(t, name.ptr())); };
  nb::object rg = attr(n.requires_grad);
  if (!rg.is_valid() || rg.ptr() != Py_False) {
    PyErr_Clear();
    return false;
  }
  nb::object dt = attr(n.dtype);
  if (!dt.is_valid()) {
    PyErr_Clear();
    return false;
  }
  bool found = false;
  for (const auto& [p, d] : g_torch.dtypes)
    if (p == dt.ptr()) {
      o.dtype = d;
      found = true;
      break;
    }
  if (!found) return false;
  // torch's lazy negation (a real view of a conjugate: z.conj().imag) is a
  // bit the data does not hold: left to __dlpack__ (which, in torch 2.5,
  // exports the data without it: PYTHON.md notes the hazard).
  nb::object neg = call0(n.is_neg);
  if (!neg.is_valid() || neg.ptr() != Py_False) {
    PyErr_Clear();
    return false;
  }
  nb::object cu = attr(n.is_cuda);
  if (!cu.is_valid()) {
    PyErr_Clear();
    return false;
  }
  if (cu.ptr() == Py_True) {
    nb::object dev = call0(n.get_device);
    if (!dev.is_valid()) {
      PyErr_Clear();
      return false;
    }
    o.device = Device::cuda(static_cast<int>(PyLong_AsLong(dev.ptr())));
  } else {
    nb::object cp = attr(n.is_cpu);
    if (!cp.is_valid() || cp.ptr() != Py_True) {
      PyErr_Clear();
      return false;
    }
    o.device = Device::cpu();
  }
  nb::object shape = attr(n.shape);
  nb::object stride = call0(n.stride);  // raises for sparse layouts
  nb::object ptr = call0(n.data_ptr);
  if (!shape.is_valid() || !stride.is_valid() || !ptr.is_valid() || !PyTuple_Check(shape.ptr()) ||
      !PyTuple_Check(stride.ptr())) {
    PyErr_Clear();
    return false;
  }
  const Py_ssize_t rank = PyTuple_GET_SIZE(shape.ptr());
  if (rank > kMaxRank || PyTuple_GET_SIZE(stride.ptr()) != rank) return false;
  o.shape = Dims::of_rank(static_cast<int>(rank));
  o.strides = Dims::of_rank(static_cast<int>(rank));
  for (Py_ssize_t i = 0; i < rank; ++i) {
    o.shape[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(shape.ptr(), i));
    o.strides[i] = PyLong_AsLongLong(PyTuple_GET_ITEM(stride.ptr(), i));
    if (o.strides[i] < 0) {
      if (o.shape[i] > 1) return false;  // the DLPack path reports negative strides
      o.strides[i] = 0;
    }
  }
  o.data = PyLong_AsVoidPtr(ptr.ptr());
  if (PyErr_Occurred()) {
    PyErr_Clear();
    return false;
  }
  o.meta = true;
  return true;
}

// Reads a NumPy array through the buffer protocol (what its __dlpack__
// would report, without the capsule); false (nothing raised) for what the
// DLPack path should decide: a byte order, dtype or stride it reports.
bool read_numpy(Operand& o) {
  auto* raw = new Py_buffer{};
  if (PyObject_GetBuffer(o.h.ptr(), raw, PyBUF_STRIDED_RO | PyBUF_FORMAT) != 0) {
    PyErr_Clear();
    delete raw;
    return false;
  }
  auto buf = std::shared_ptr<Py_buffer>(raw, [](Py_buffer* b) {
    PyBuffer_Release(b);  // the GIL is held: views die inside the call
    delete b;
  });
  const char* f = buf->format ? buf->format : "B";
  if (*f == '<' || *f == '=' || *f == '@') ++f;
  if (f[0] == 0 || f[1] != 0) return false;
  const Py_ssize_t isz = buf->itemsize;
  DType t;
  switch (f[0]) {
    case '?': t = DType::Bool; break;
    case 'b': t = DType::I8; break;
    case 'B': t = DType::U8; break;
    case 'h': t = DType::I16; break;
    case 'i': t = DType::I32; break;
    case 'l':
    case 'q':
      if (isz == 8) t = DType::I64;
      else if (isz == 4) t = DType::I32;
      else return false;
      break;
    case 'e': t = DType::F16; break;
    case 'f': t = DType::F32; break;
    case 'd': t = DType::F64; break;
    default: return false;
  }
  if (static_cast<Py_ssize_t>(dtype_size(t)) != isz || buf->ndim > kMaxRank) return false;
  o.shape = Dims::of_rank(buf->ndim);
  o.strides = Dims::of_rank(buf->ndim);
  for (int i = 0; i < buf->ndim; ++i) {
    o.shape[i] = buf->shape[i];
    const Py_ssize_t st = buf->strides ? buf->strides[i] : 0;
    if (st % isz != 0) return false;
    o.strides[i] = st / isz;
    if (o.strides[i] < 0) {
      if (o.shape[i] > 1) return false;  // the DLPack path reports negative strides
      o.strides[i] = 0;
    }
  }
  if (!buf->strides) o.strides = contiguous_strides(o.shape);
  o.dtype = t;
  o.data = buf->buf;
  o.read_only = buf->readonly != 0;
  o.owner = std::move(buf);
  o.meta = true;
  return true;
}

// Classifies `h`; false when the fast path does not handle it.
bool classify(nb::handle h, Operand& o, bool allow_scalar) {
  o.h = h;
  if (h.is_none()) {
    o.kind = Kind::Absent;
    return true;
  }
  PyObject* p = h.ptr();
  PyTypeObject* tp = Py_TYPE(p);
  if (allow_scalar) {
    if (tp == &PyBool_Type) {
      o.kind = Kind::Scalar;
      o.value = Scalar(p == Py_True);
      o.scalar_dtype = DType::Bool;
      return true;
    }
    if (tp == &PyLong_Type) {
      int overflow = 0;
      const long long v = PyLong_AsLongLongAndOverflow(p, &overflow);
      if (overflow) return false;
      o.kind = Kind::Scalar;
      o.value = Scalar(v);
      o.scalar_dtype = DType::I64;
      return true;
    }
    if (tp == &PyFloat_Type) {
      o.kind = Kind::Scalar;
      o.value = Scalar(PyFloat_AS_DOUBLE(p));
      o.scalar_dtype = DType::F64;
      return true;
    }
  }
  if (nb::isinstance<Array>(h)) {
    o.kind = Kind::Array;
    o.device = nb::cast<const Array&>(h).device();
    return true;
  }
  if (torch_ready() && reinterpret_cast<PyObject*>(tp) == g_torch.tensor_type) {
    o.kind = Kind::Torch;
    if (!read_torch(o)) o.device = device_of(h, "tensor");  // the DLPack path decides (and reports)
    return true;
  }
  PyObject* nd = numpy_ndarray();
  if (nd && reinterpret_cast<PyObject*>(tp) == nd) {
    o.kind = Kind::Foreign;
    o.device = Device::cpu();
    (void)read_numpy(o);  // else the DLPack path
    return true;
  }
  return false;
}

// The stream of a call whose tensors are on `dev` (the same rule as
// resolve_stream: stream= first; with a torch tensor, torch's current
// stream; else the legacy default stream). `torch_current`: set when the
// call's stream is torch's current stream of `dev`.
Stream call_stream(nb::handle stream_arg, Device dev, const Operand* ops, size_t n, bool& torch_current) {
  torch_current = false;
  bool any_torch = false;
  for (size_t i = 0; i < n; ++i) any_torch |= ops[i].kind == Kind::Torch || ops[i].torch_like;
  if (dev.is_cpu()) {
    if (!stream_arg.is_none()) {
      Stream s = stream_from_py(stream_arg, dev);
      if (!s.is_cpu()) raise_invalid("stream: a CUDA stream was given but the tensors are on the CPU");
    }
    return Stream::cpu();
  }
  if (!stream_arg.is_none()) {
    Stream s = stream_from_py(stream_arg, dev);
    if (!s.is_cuda() || !(s.device() == dev))
      raise_invalid("stream: the stream is on " + s.device().to_string() + " but the tensors are on " +
                    dev.to_string());
    if (any_torch) torch_current = torch_current_stream(dev.ordinal) == s.native_handle();
    return s;
  }
  if (any_torch) {
    torch_current = true;
    return Stream::cuda(dev.ordinal, torch_current_stream(dev.ordinal));
  }
  return Stream::cuda(dev.ordinal, nullptr);
}

// The device of the call: every tensor operand's (all on one device).
std::optional<Device> common_device(const Operand* ops, size_t n) {
  std::optional<Device> dev;
  size_t first = 0;
  for (size_t i = 0; i < n; ++i) {
    if (ops[i].kind == Kind::Absent || ops[i].kind == Kind::Scalar) continue;
    if (!dev) {
      dev = ops[i].device;
      first = i;
    } else if (!(ops[i].device == *dev)) {
      raise_invalid("tensors on different devices: argument " + std::to_string(first) + " is on " +
                    dev->to_string() + ", argument " + std::to_string(i) + " on " + ops[i].device.to_string());
    }
  }
  return dev;
}

View import_operand(const Operand& o, const Stream& s, bool torch_current, const char* what = "tensor") {
  if (o.meta && (s.is_cpu() || (o.kind == Kind::Torch && torch_current))) {
    if (!(o.device == s.device()))
      raise_invalid(std::string(what) + ": the tensor is on " + o.device.to_string() + " but the call runs on " +
                    s.device().to_string());
    View v;
    v.source = nb::borrow(o.h);
    v.owner = o.owner;
    v.read_only = o.read_only;
    v.view = TensorMut(o.data, o.dtype, o.device, o.shape, o.strides, 0);
    v.view.capacity = v.view.span();
    return v;
  }
  return import_tensor(o.h, s, what, o.device);
}

// ---- the plan cache ---------------------------------------------------------------------
// Key: the family, every descriptor field that selection reads, and the
// device, packed as 64-bit words (strides are not part of it: a plan runs any
// strides its checks accept, as in the Python cache).
struct Key {
  int64_t w[2 + 4 * (kMaxRank + 2)] = {};
  int n = 0;
  void push(int64_t v) { w[n++] = v; }
  void push_dims(const Dims& d) {
    push(d.rank);
    for (int i = 0; i < d.rank; ++i) push(d[i]);
  }
  bool operator==(const Key& o) const { return n == o.n && std::memcmp(w, o.w, sizeof(int64_t) * n) == 0; }
};
struct KeyHash {
  size_t operator()(const Key& k) const {
    uint64_t h = 1469598103934665603ull;  // FNV-1a over the words
    for (int i = 0; i < k.n; ++i) {
      h ^= static_cast<uint64_t>(k.w[i]);
      h *= 1099511628211ull;
    }
    return static_cast<size_t>(h ^ (h >> 29));
  }
};
int64_t device_word(Device d) { return d.is_cpu() ? -1 : d.ordinal; }
int64_t double_word(double x) {
  int64_t v;
  std::memcpy(&v, &x, sizeof v);
  return v;
}

constexpr size_t kCacheLimit = 4096;  // per family; emptied when it grows past this (as the Python cache)
template <class P>
using CacheMap = std::unordered_map<Key, std::shared_ptr<const P>, KeyHash>;
template <class P>
CacheMap<P>& cache() {
  // Shared pointers: a call keeps its plan while it runs without the GIL,
  // even if another thread empties the cache meanwhile.
  static auto* m = new CacheMap<P>();  // plans hold no Python objects
  return *m;
}
template <class P, class MakeDesc>
std::shared_ptr<const P> lookup(const Key& k, const Stream& s, MakeDesc make) {
  auto& m = cache<P>();
  auto it = m.find(k);
  if (it != m.end()) return it->second;
  std::optional<Result<P>> r;
  const auto desc = make();
  {
    nb::gil_scoped_release release;
    r.emplace(P::select(s, desc, PlanPreference{}));
  }
  auto p = std::make_shared<const P>(unwrap(std::move(*r)));
  if (m.size() >= kCacheLimit) m.clear();
  m[k] = p;  // (another thread may have selected it meanwhile: either plan is right)
  return p;
}

template <class P>
void ensure_writable(const P& plan, const View& v, const char* arg) {
  if (v.read_only)
    raise_invalid(std::string(plan.name()) + ".run: " + arg + ": the tensor is read-only (an output must be writable)");
}

template <class P, class A>
void run_plan(const P& plan, const Stream& s, const A& args) {
  std::optional<ScopedWorkspace> own;
  Workspace ws = Workspace::none();
  if (plan.workspace_size() > 0) {
    own.emplace(plan.workspace_size(), s);
    ws = own->ws;
  }
  Status st;
  {
    nb::gil_scoped_release release;
    st = plan.run(s, ws, args);
  }
  check(st);
}

// ---- entries -------------------------------------------------------------------------------
// The result: `out` when given, else a new Array.
struct Output {
  nb::object result;
  TensorMut view;
  std::optional<View> keep;
};
template <class P>
Output make_output(const P& plan, const Operand& out, const Stream& s, bool torch_current, DType dtype,
                   const Dims& shape, const char* arg) {
  Output o;
  if (out.kind != Kind::Absent) {
    o.keep.emplace(import_operand(out, s, torch_current));
    ensure_writable(plan, *o.keep, arg);
    o.view = o.keep->view;
    o.result = nb::borrow(out.h);
  } else {
    Array a = make_array(dtype, shape, s);
    o.view = a.view();
    o.result = nb::cast(std::move(a));
  }
  return o;
}

// Resolves an enum by its name in the plan layer's tables (lower case:
// "add", "gelu_tanh", "sum"), cached.
template <class E>
std::optional<E> enum_by_name(nb::handle name) {
  // The functional layer passes string literals: interned, the same object
  // every call, so a pointer comparison finds them (strong references kept).
  static auto* seen = new std::vector<std::pair<PyObject*, E>>();
  for (const auto& [p, e] : *seen)
    if (p == name.ptr()) return e;
  static auto* m = new std::unordered_map<std::string, E>();
  if (m->empty())
    for (const auto& [n, e] : enum_names<E>()) {
      std::string l = n;
      for (char& c : l) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      m->emplace(l, e);
    }
  Py_ssize_t len = 0;
  const char* s = PyUnicode_AsUTF8AndSize(name.ptr(), &len);
  if (!s) {
    PyErr_Clear();
    return std::nullopt;
  }
  auto it = m->find(std::string(s, static_cast<size_t>(len)));
  if (it == m->end()) return std::nullopt;
  if (seen->size() < 256 && PyUnicode_CHECK_INTERNED(name.ptr())) seen->push_back({nb::borrow(name).release().ptr(), it->second});
  return it->second;
}

std::optional<DType> dtype_arg(nb::handle h) {
  if (h.is_none()) return std::nullopt;
  return dtype_from_py(h);
}

// binary(op, a, b, alpha, out, stream)
nb::object fast_binary(nb::handle op_name, nb::handle a, nb::handle b, nb::handle alpha, nb::handle out,
                       nb::handle stream) {
  const auto op = enum_by_name<BinaryOp>(op_name);
  if (!op) return nb::none();
  Operand ops[3];
  if (!classify(a, ops[0], true) || !classify(b, ops[1], true) || !classify(out, ops[2], false)) return nb::none();
  if (ops[0].kind == Kind::Absent || ops[1].kind == Kind::Absent) return nb::none();
  if (ops[0].kind == Kind::Scalar && ops[1].kind == Kind::Scalar) return nb::none();
  const auto dev = common_device(ops, 3);
  bool torch_current = false;
  const Stream s = call_stream(stream, *dev, ops, 3, torch_current);
  std::optional<View> va, vb;
  if (ops[0].kind != Kind::Scalar) va.emplace(import_operand(ops[0], s, torch_current));
  if (ops[1].kind != Kind::Scalar) vb.emplace(import_operand(ops[1], s, torch_current));
  std::optional<double> alpha_v;
  if (!alpha.is_none()) alpha_v = nb::cast<double>(alpha);
  Key k;
  k.push(1);
  k.push(static_cast<int64_t>(*op));
  k.push(device_word(s.device()));
  k.push(alpha_v ? 1 : 0);
  k.push(alpha_v ? double_word(*alpha_v) : 0);
  auto operand_key = [&](const Operand& o, const std::optional<View>& v) {
    if (o.kind == Kind::Scalar) {
      k.push(-1);
      k.push(static_cast<int64_t>(o.scalar_dtype));
    } else {
      k.push(static_cast<int64_t>(v->view.dtype));
      k.push_dims(v->view.shape);
    }
  };
  operand_key(ops[0], va);
  operand_key(ops[1], vb);
  auto operand_desc = [](const Operand& o, const std::optional<View>& v) {
    return o.kind == Kind::Scalar ? ElementwiseOperand::scalar(o.scalar_dtype)
                                  : ElementwiseOperand::tensor(v->view.dtype, v->view.shape);
  };
  const auto planp = lookup<BinaryPlan>(k, s, [&] {
    BinaryDescriptor d;
    d.op = *op;
    d.a = operand_desc(ops[0], va);
    d.b = operand_desc(ops[1], vb);
    d.alpha = alpha_v;
    return d;
  });
  const auto& plan = *planp;
  Output o = make_output(plan, ops[2], s, torch_current, plan.out_dtype(), plan.output_shape(), "out");
  BinaryArgs args;
  if (va) args.a = TensorRef(va->view);
  else args.a_value = ops[0].value;
  if (vb) args.b = TensorRef(vb->view);
  else args.b_value = ops[1].value;
  args.out = o.view;
  run_plan(plan, s, args);
  return o.result;
}

// unary(op, x, out_dtype, out, stream)
nb::object fast_unary(nb::handle op_name, nb::handle x, nb::handle out_dtype, nb::handle out, nb::handle stream) {
  const auto op = enum_by_name<UnaryOp>(op_name);
  if (!op) return nb::none();
  Operand ops[2];
  if (!classify(x, ops[0], false) || !classify(out, ops[1], false)) return nb::none();
  if (ops[0].kind == Kind::Absent) return nb::none();
  const std::optional<DType> odt = dtype_arg(out_dtype);
  const auto dev = common_device(ops, 2);
  bool torch_current = false;
  const Stream s = call_stream(stream, *dev, ops, 2, torch_current);
  View vx = import_operand(ops[0], s, torch_current);
  Key k;
  k.push(2);
  k.push(static_cast<int64_t>(*op));
  k.push(device_word(s.device()));
  k.push(odt ? static_cast<int64_t>(*odt) : -1);
  k.push(static_cast<int64_t>(vx.view.dtype));
  k.push_dims(vx.view.shape);
  const auto planp = lookup<UnaryPlan>(k, s, [&] {
    UnaryDescriptor d;
    d.op = *op;
    d.x = ElementwiseOperand::tensor(vx.view.dtype, vx.view.shape);
    d.out_dtype = odt;
    return d;
  });
  const auto& plan = *planp;
  Output o = make_output(plan, ops[1], s, torch_current, plan.out_dtype(), plan.output_shape(), "y");
  UnaryArgs args;
  args.x = TensorRef(vx.view);
  args.y = o.view;
  run_plan(plan, s, args);
  return o.result;
}

// Axes of dim= (None: every axis; an int; a tuple / list of ints); false
// when `dim` is something else (the Python path reports it).
bool axes_of(nb::handle dim, Dims& axes) {
  if (dim.is_none()) return true;
  PyTypeObject* tp = Py_TYPE(dim.ptr());
  if (tp == &PyLong_Type) {
    axes.push_back(PyLong_AsLongLong(dim.ptr()));
    return !PyErr_Occurred() || (PyErr_Clear(), false);
  }
  if (tp != &PyTuple_Type && tp != &PyList_Type) return false;
  const Py_ssize_t n = PySequence_Fast_GET_SIZE(dim.ptr());
  if (n > kMaxRank) return false;
  for (Py_ssize_t i = 0; i < n; ++i) {
    PyObject* e = PySequence_Fast_GET_ITEM(dim.ptr(), i);
    if (Py_TYPE(e) != &PyLong_Type) return false;
    axes.push_back(PyLong_AsLongLong(e));
    if (PyErr_Occurred()) {
      PyErr_Clear();
      return false;
    }
  }
  return true;
}

// reduce(kind, x, dim, keepdim, correction, out, stream)
nb::object fast_reduce(nb::handle kind_name, nb::handle x, nb::handle dim, bool keepdim, int64_t correction,
                       nb::handle out, nb::handle stream) {
  const auto kind = enum_by_name<ReduceKind>(kind_name);
  if (!kind) return nb::none();
  Dims axes;
  if (!axes_of(dim, axes)) return nb::none();
  Operand ops[2];
  if (!classify(x, ops[0], false) || !classify(out, ops[1], false)) return nb::none();
  if (ops[0].kind == Kind::Absent) return nb::none();
  const auto dev = common_device(ops, 2);
  bool torch_current = false;
  const Stream s = call_stream(stream, *dev, ops, 2, torch_current);
  View vx = import_operand(ops[0], s, torch_current);
  Key k;
  k.push(3);
  k.push(static_cast<int64_t>(*kind));
  k.push(device_word(s.device()));
  k.push(keepdim ? 1 : 0);
  k.push(correction);
  k.push(static_cast<int64_t>(vx.view.dtype));
  k.push_dims(vx.view.shape);
  k.push_dims(axes);
  const auto planp = lookup<ReducePlan>(k, s, [&] {
    ReduceDescriptor d;
    d.kind = *kind;
    d.dtype = vx.view.dtype;
    d.shape = vx.view.shape;
    d.axes = axes;
    d.keepdim = keepdim;
    d.correction = correction;
    return d;
  });
  const auto& plan = *planp;
  Output o = make_output(plan, ops[1], s, torch_current, plan.output_dtype(), plan.output_shape(), "y");
  ReduceArgs args;
  args.x = TensorRef(vx.view);
  args.y = o.view;
  run_plan(plan, s, args);
  return o.result;
}

// softmax(x, dim, log, scale, out, stream)
nb::object fast_softmax(nb::handle x, nb::handle dim, bool log, double scale, nb::handle out, nb::handle stream) {
  if (Py_TYPE(dim.ptr()) != &PyLong_Type) return nb::none();
  int overflow = 0;
  const long long axis = PyLong_AsLongLongAndOverflow(dim.ptr(), &overflow);
  if (overflow || axis < INT32_MIN || axis > INT32_MAX) return nb::none();
  Operand ops[2];
  if (!classify(x, ops[0], false) || !classify(out, ops[1], false)) return nb::none();
  if (ops[0].kind == Kind::Absent) return nb::none();
  const auto dev = common_device(ops, 2);
  bool torch_current = false;
  const Stream s = call_stream(stream, *dev, ops, 2, torch_current);
  View vx = import_operand(ops[0], s, torch_current);
  Key k;
  k.push(4);
  k.push(log ? 1 : 0);
  k.push(device_word(s.device()));
  k.push(axis);
  k.push(double_word(scale));
  k.push(static_cast<int64_t>(vx.view.dtype));
  k.push_dims(vx.view.shape);
  const auto planp = lookup<SoftmaxPlan>(k, s, [&] {
    SoftmaxDescriptor d;
    d.dtype = vx.view.dtype;
    d.shape = vx.view.shape;
    d.axis = static_cast<int>(axis);
    d.log = log;
    d.scale = scale;
    return d;
  });
  const auto& plan = *planp;
  Output o = make_output(plan, ops[1], s, torch_current, vx.view.dtype, vx.view.shape, "y");
  SoftmaxArgs args;
  args.x = TensorRef(vx.view);
  args.y = o.view;
  run_plan(plan, s, args);
  return o.result;
}

// norm(kind, x, normalized_shape, weight, bias, eps, return_stats, out, stream):
// layer_norm / rms_norm forward (statistics always saved, as the Python path).
nb::object fast_norm(nb::handle kind_name, nb::handle x, nb::handle normalized_shape, nb::handle weight,
                     nb::handle bias, nb::handle eps, bool return_stats, nb::handle out, nb::handle stream) {
  const auto kind = enum_by_name<NormKind>(kind_name);
  if (!kind) return nb::none();
  Dims ns;
  if (normalized_shape.is_none() || !axes_of(normalized_shape, ns) || ns.rank == 0) return nb::none();
  std::optional<double> eps_v;
  if (!eps.is_none()) {
    if (Py_TYPE(eps.ptr()) == &PyFloat_Type) eps_v = PyFloat_AS_DOUBLE(eps.ptr());
    else return nb::none();
  }
  Operand ops[4];
  if (!classify(x, ops[0], false) || !classify(weight, ops[1], false) || !classify(bias, ops[2], false) ||
      !classify(out, ops[3], false))
    return nb::none();
  if (ops[0].kind == Kind::Absent) return nb::none();
  const auto dev = common_device(ops, 4);
  bool torch_current = false;
  const Stream s = call_stream(stream, *dev, ops, 4, torch_current);
  View vx = import_operand(ops[0], s, torch_current);
  const Dims& xs = vx.view.shape;
  if (ns.rank > xs.rank) return nb::none();  // the Python path reports it
  for (int i = 0; i < ns.rank; ++i)
    if (ns[i] != xs[xs.rank - ns.rank + i]) return nb::none();
  if (!eps_v) {
    switch (vx.view.dtype) {
      case DType::F32: eps_v = 1.1920928955078125e-07; break;  // torch.finfo(dtype).eps
      case DType::F64: eps_v = 2.220446049250313e-16; break;
      case DType::F16: eps_v = 0.0009765625; break;
      case DType::BF16: eps_v = 0.0078125; break;
      default: eps_v = 1e-5;
    }
  }
  std::optional<View> vw, vb;
  if (ops[1].kind != Kind::Absent) vw.emplace(import_operand(ops[1], s, torch_current));
  if (ops[2].kind != Kind::Absent) vb.emplace(import_operand(ops[2], s, torch_current));
  Key k;
  k.push(5);
  k.push(static_cast<int64_t>(*kind));
  k.push(device_word(s.device()));
  k.push(ns.rank);
  k.push((vw ? 1 : 0) | (vb ? 2 : 0));
  k.push(double_word(*eps_v));
  k.push(static_cast<int64_t>(vx.view.dtype));
  k.push_dims(xs);
  const auto planp = lookup<NormPlan>(k, s, [&] {
    NormDescriptor d;
    d.kind = *kind;
    d.dtype = vx.view.dtype;
    d.shape = xs;
    d.normalized_dims = ns.rank;
    d.has_weight = vw.has_value();
    d.has_bias = vb.has_value();
    d.eps = *eps_v;
    d.save_stats = true;
    return d;
  });
  const auto& plan = *planp;
  Output o = make_output(plan, ops[3], s, torch_current, vx.view.dtype, xs, "y");
  Array rstd = make_array(plan.stats_dtype(), plan.stats_shape(), s);
  std::optional<Array> mean;
  if (*kind == NormKind::LayerNorm) mean.emplace(make_array(plan.stats_dtype(), plan.stats_shape(), s));
  NormArgs args;
  args.x = TensorRef(vx.view);
  if (vw) args.weight = TensorRef(vw->view);
  if (vb) args.bias = TensorRef(vb->view);
  args.y = o.view;
  args.rstd = rstd.view();
  if (mean) args.mean = mean->view();
  run_plan(plan, s, args);
  if (!return_stats) return o.result;
  if (mean) return nb::make_tuple(o.result, nb::cast(std::move(*mean)), nb::cast(std::move(rstd)));
  return nb::make_tuple(o.result, nb::cast(std::move(rstd)));
}

// matmul(a, b, out, stream): torch.matmul.
nb::object fast_matmul(nb::handle a, nb::handle b, nb::handle out, nb::handle stream) {
  Operand ops[3];
  if (!classify(a, ops[0], false) || !classify(b, ops[1], false) || !classify(out, ops[2], false)) return nb::none();
  if (ops[0].kind == Kind::Absent || ops[1].kind == Kind::Absent) return nb::none();
  const auto dev = common_device(ops, 3);
  bool torch_current = false;
  const Stream s = call_stream(stream, *dev, ops, 3, torch_current);
  View va = import_operand(ops[0], s, torch_current);
  View vb = import_operand(ops[1], s, torch_current);
  if (va.view.dtype != vb.view.dtype) return nb::none();  // the Python path's message
  Key k;
  k.push(6);
  k.push(device_word(s.device()));
  k.push(static_cast<int64_t>(va.view.dtype));
  k.push_dims(va.view.shape);
  k.push_dims(vb.view.shape);
  const auto planp = lookup<MatmulPlan>(k, s, [&] {
    MatmulDescriptor d;
    d.dtype = va.view.dtype;
    d.a_shape = va.view.shape;
    d.b_shape = vb.view.shape;
    return d;
  });
  const auto& plan = *planp;
  Output o = make_output(plan, ops[2], s, torch_current, va.view.dtype, plan.out_shape(), "out");
  MatmulArgs args;
  args.a = TensorRef(va.view);
  args.b = TensorRef(vb.view);
  args.out = o.view;
  run_plan(plan, s, args);
  return o.result;
}

// linear(x, weight, bias, activation, return_aux, out, stream):
// act(x . weight^T + bias); activation: "none" / "relu" / "gelu" / "gelu_tanh".
nb::object fast_linear(nb::handle x, nb::handle weight, nb::handle bias, nb::handle act_name, bool return_aux,
                       nb::handle out, nb::handle stream) {
  const auto act = enum_by_name<GemmActivation>(act_name);
  if (!act) return nb::none();
  Operand ops[4];
  if (!classify(x, ops[0], false) || !classify(weight, ops[1], false) || !classify(bias, ops[2], false) ||
      !classify(out, ops[3], false))
    return nb::none();
  if (ops[0].kind == Kind::Absent || ops[1].kind == Kind::Absent) return nb::none();
  const auto dev = common_device(ops, 4);
  bool torch_current = false;
  const Stream s = call_stream(stream, *dev, ops, 4, torch_current);
  View vx = import_operand(ops[0], s, torch_current);
  View vw = import_operand(ops[1], s, torch_current);
  if (vw.view.shape.rank != 2) return nb::none();  // the Python path's message
  std::optional<View> vb;
  if (ops[2].kind != Kind::Absent) vb.emplace(import_operand(ops[2], s, torch_current));
  Key k;
  k.push(7);
  k.push(static_cast<int64_t>(*act));
  k.push(device_word(s.device()));
  k.push((vb ? 1 : 0) | (return_aux ? 2 : 0));
  k.push(vw.view.shape[0]);
  k.push(static_cast<int64_t>(vx.view.dtype));
  k.push_dims(vx.view.shape);
  const auto planp = lookup<LinearPlan>(k, s, [&] {
    LinearDescriptor d;
    d.dtype = vx.view.dtype;
    d.x_shape = vx.view.shape;
    d.out_features = vw.view.shape[0];
    d.has_bias = vb.has_value();
    d.activation = *act;
    d.save_aux = return_aux;
    return d;
  });
  const auto& plan = *planp;
  const Dims ys = plan.y_shape();
  Output o = make_output(plan, ops[3], s, torch_current, vx.view.dtype, ys, "y");
  std::optional<Array> aux;
  if (return_aux) aux.emplace(make_array(vx.view.dtype, ys, s));
  LinearArgs args;
  args.x = TensorRef(vx.view);
  args.weight = TensorRef(vw.view);
  if (vb) args.bias = TensorRef(vb->view);
  args.y = o.view;
  if (aux) args.aux = aux->view();
  run_plan(plan, s, args);
  if (!return_aux) return o.result;
  return nb::make_tuple(o.result, nb::cast(std::move(*aux)));
}

}  // namespace

View import_fast(nb::handle h, const Stream& s, const char* what) {
  Operand o;
  if (!classify(h, o, false) || o.kind == Kind::Array || o.kind == Kind::Absent) return import_tensor(h, s, what);
  const bool torch_current = o.kind == Kind::Torch && o.meta && s.is_cuda() && o.device == s.device() &&
                             torch_current_stream(o.device.ordinal) == s.native_handle();
  return import_operand(o, s, torch_current, what);
}

void* torch_current_stream_handle(int ordinal) {
  if (!torch_ready()) {
    nb::object torch = nb::module_::import_("torch");
    nb::object cs = torch.attr("cuda").attr("current_stream")(ordinal);
    return reinterpret_cast<void*>(nb::cast<uintptr_t>(cs.attr("cuda_stream")));
  }
  return torch_current_stream(ordinal);
}

// _C.prepare(tensors, stream) of the general path, with the fast path's
// imports: (stream, [View / Array / None ...]). Array and View entries pass
// through (imported when run); torch tensors are read through their metadata
// and NumPy arrays through the buffer protocol where the fast path would;
// everything else through DLPack.
nb::object prepare_call(nb::handle tensors, nb::handle stream) {
  std::vector<nb::handle> hs;
  for (nb::handle h : tensors) hs.push_back(h);
  std::vector<Operand> ops(hs.size());
  for (size_t i = 0; i < hs.size(); ++i) {
    Operand& o = ops[i];
    if (nb::isinstance<View>(hs[i])) {  // passes through; its device counts
      o.h = hs[i];
      o.kind = Kind::Foreign;
      o.device = nb::cast<const View&>(hs[i]).view.device;
      continue;
    }
    if (!classify(hs[i], o, false)) {
      o.h = hs[i];
      o.kind = Kind::Foreign;
      o.device = device_of(hs[i], "tensor");  // raises for a non-tensor, as before
      o.torch_like = torch_ready() && PyObject_IsInstance(hs[i].ptr(), g_torch.tensor_type) == 1;
    }
  }
  const auto dev = common_device(ops.data(), ops.size());
  bool torch_current = false;
  Stream s = dev ? call_stream(stream, *dev, ops.data(), ops.size(), torch_current)
                 : (stream.is_none() ? Stream::cpu() : stream_from_py(stream, std::nullopt));
  nb::list out;
  for (size_t i = 0; i < hs.size(); ++i) {
    nb::handle h = hs[i];
    if (h.is_none()) out.append(nb::none());
    else if (nb::isinstance<Array>(h) || nb::isinstance<View>(h)) out.append(h);
    else out.append(nb::cast(import_operand(ops[i], s, torch_current)));
  }
  return nb::make_tuple(s, out);
}

void bind_fast(nb::module_& m) {
  // Positional only; every argument may be None (nanobind refuses None unless told).
  auto a = [](const char* n) { return nb::arg(n).none(); };
  m.def("_fast_binary", &fast_binary, a("op"), a("a"), a("b"), a("alpha"), a("out"), a("stream"));
  m.def("_fast_unary", &fast_unary, a("op"), a("x"), a("out_dtype"), a("out"), a("stream"));
  m.def("_fast_reduce", &fast_reduce, a("kind"), a("x"), a("dim"), nb::arg("keepdim"), nb::arg("correction"),
        a("out"), a("stream"));
  m.def("_fast_softmax", &fast_softmax, a("x"), a("dim"), nb::arg("log"), nb::arg("scale"), a("out"), a("stream"));
  m.def("_fast_norm", &fast_norm, a("kind"), a("x"), a("normalized_shape"), a("weight"), a("bias"), a("eps"),
        nb::arg("return_stats"), a("out"), a("stream"));
  m.def("_fast_matmul", &fast_matmul, a("a"), a("b"), a("out"), a("stream"));
  m.def("_fast_linear", &fast_linear, a("x"), a("weight"), a("bias"), a("activation"), nb::arg("return_aux"),
        a("out"), a("stream"));
  m.def("_fast_cache_clear", []() {
    cache<BinaryPlan>().clear();
    cache<UnaryPlan>().clear();
    cache<ReducePlan>().clear();
    cache<SoftmaxPlan>().clear();
    cache<NormPlan>().clear();
    cache<MatmulPlan>().clear();
    cache<LinearPlan>().clear();
  });
  m.def("_fast_cache_size", []() {
    return cache<BinaryPlan>().size() + cache<UnaryPlan>().size() + cache<ReducePlan>().size() +
           cache<SoftmaxPlan>().size() + cache<NormPlan>().size() + cache<MatmulPlan>().size() +
           cache<LinearPlan>().size();
  });
}

}  // namespace bpy
