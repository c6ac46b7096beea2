#include "baracuda/core/dlpack.hpp"

#include <optional>
#include <string>

// The library keeps config.hpp's word: its DLPack functions exist exactly
// when the build recorded BARACUDA_WITH_DLPACK, for the recorded major version
// (a program decides from those which calls it may make).
#if BARACUDA_WITH_DLPACK && !BARACUDA_HAS_DLPACK
#error "BARACUDA_WITH_DLPACK is 1 but dlpack/dlpack.h is not usable here (BARACUDA_NO_DLPACK defined, or DLPACK_INCLUDE_DIR not on the include path)"
#endif
#if BARACUDA_HAS_DLPACK
#if defined(DLPACK_MAJOR_VERSION)
static_assert(DLPACK_MAJOR_VERSION == BARACUDA_DLPACK_MAJOR_VERSION,
              "the dlpack.h compiled here is not the one CMake read for BARACUDA_DLPACK_MAJOR_VERSION");
#else
static_assert(BARACUDA_DLPACK_MAJOR_VERSION == 0,
              "the dlpack.h compiled here is not the one CMake read for BARACUDA_DLPACK_MAJOR_VERSION");
#endif
namespace baracuda {
namespace {

// What this dlpack.h can name: bool from DLPack 0.8 (DLPACK_VERSION 80; 1.x
// has DLPACK_MAJOR_VERSION instead), the fp8 codes from 1.1.
#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
#define BARACUDA_DLPACK_HAS_BOOL 1
#if DLPACK_MAJOR_VERSION > 1 || DLPACK_MINOR_VERSION >= 1
#define BARACUDA_DLPACK_HAS_FP8 1
#endif
#elif defined(DLPACK_VERSION) && DLPACK_VERSION >= 80
#define BARACUDA_DLPACK_HAS_BOOL 1
#endif

// A dtype's DLPack type code (bits = 8 * dtype_size). `exact` is false where
// the code also names another dtype (bool spelled uint8 before DLPack 0.8):
// importing that code gives the other one.
struct DLCode {
  uint8_t code;
  bool exact;
};
std::optional<DLCode> dl_code(DType t) {
  if (!dtype_is_valid(t)) return std::nullopt;
  switch (dtype_category(t)) {
    case DTypeCategory::Bool:
#ifdef BARACUDA_DLPACK_HAS_BOOL
      return DLCode{kDLBool, true};
#else
      return DLCode{kDLUInt, false};
#endif
    case DTypeCategory::Integer: return DLCode{static_cast<uint8_t>(is_signed(t) ? kDLInt : kDLUInt), true};
    case DTypeCategory::Floating:
      if (t == DType::BF16) return DLCode{kDLBfloat, true};
      if (is_float8(t)) {
#ifdef BARACUDA_DLPACK_HAS_FP8
        return DLCode{static_cast<uint8_t>(t == DType::F8E4M3 ? kDLFloat8_e4m3fn : kDLFloat8_e5m2), true};
#else
        return std::nullopt;
#endif
      }
      return DLCode{kDLFloat, true};
    case DTypeCategory::Complex: return DLCode{kDLComplex, true};
  }
  return std::nullopt;
}

Result<DType> dtype_from_dl(DLDataType t) {
  if (t.lanes != 1) return Status(StatusCode::Unsupported, "from_dlpack: vector lanes != 1 are not supported");
  for (DType d : kAllDTypes) {
    const std::optional<DLCode> c = dl_code(d);
    if (c && c->exact && c->code == t.code && dtype_size(d) * 8 == t.bits) return d;
  }
  return Status(StatusCode::Unsupported, "from_dlpack: DLPack dtype code " + std::to_string(t.code) + " bits " +
                                             std::to_string(t.bits) + " has no baracuda DType");
}

Result<DLDataType> dtype_to_dl(DType t) {
  if (!dtype_is_valid(t))
    return Status(StatusCode::InvalidProblem, "to_dlpack: dtype value " + std::to_string(static_cast<int>(t)) + " is not a DType");
  const std::optional<DLCode> c = dl_code(t);
  if (!c)
    return Status(StatusCode::Unsupported, "to_dlpack: dtype " + std::string(dtype_name(t)) +
                                               " has no type code in this DLPack version (float8 codes need DLPack 1.1)");
  DLDataType d{};
  d.code = c->code;
  d.bits = static_cast<uint8_t>(dtype_size(t) * 8);
  d.lanes = 1;
  return d;
}

template <class View, class Ptr>
Result<View> view_from_dl(const DLTensor& t, int64_t capacity) {
  if (t.ndim < 0 || t.ndim > kMaxRank)
    return Status(StatusCode::Unsupported, "from_dlpack: rank " + std::to_string(t.ndim) + " exceeds baracuda's maximum of 8");
  Result<DType> dt = dtype_from_dl(t.dtype);
  if (!dt) return dt.status();
  Device dev;
  if (t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost) dev = Device::cpu();
  else if (t.device.device_type == kDLCUDA) dev = Device::cuda(t.device.device_id);
  else return Status(StatusCode::Unsupported, "from_dlpack: device type " + std::to_string(t.device.device_type) + " is not CPU or CUDA");
  Dims shape = Dims::of_rank(t.ndim), strides;
  for (int i = 0; i < t.ndim; ++i) {
    shape[i] = t.shape[i];
    if (shape[i] < 0) return Status(StatusCode::InvalidProblem, "from_dlpack: negative extent in shape");
  }
  if (t.strides) {
    strides = Dims::of_rank(t.ndim);
    for (int i = 0; i < t.ndim; ++i) {
      strides[i] = t.strides[i];
      if (strides[i] < 0) return Status(StatusCode::Unsupported, "from_dlpack: negative strides are not supported");
    }
  } else {
    strides = contiguous_strides(shape);
  }
  const size_t esz = dtype_size(*dt);
  if (t.byte_offset % esz != 0) return Status(StatusCode::InvalidProblem, "from_dlpack: byte_offset is not a multiple of the element size");
  auto* base = static_cast<Ptr>(static_cast<char*>(const_cast<void*>(t.data)) + t.byte_offset);
  View v(base, *dt, dev, shape, strides, 0);
  v.capacity = capacity >= 0 ? capacity : v.span();
  return v;
}
}  // namespace

Result<TensorRef> from_dlpack(const DLTensor& t, int64_t capacity) { return view_from_dl<TensorRef, const void*>(t, capacity); }
Result<TensorMut> from_dlpack_mut(const DLTensor& t, int64_t capacity) { return view_from_dl<TensorMut, void*>(t, capacity); }

Result<TensorRef> from_dlpack(const DLManagedTensor* m, int64_t capacity) {
  if (m == nullptr) return Status(StatusCode::InvalidProblem, "from_dlpack: the DLManagedTensor is null");
  return from_dlpack(m->dl_tensor, capacity);
}
Result<TensorMut> from_dlpack_mut(const DLManagedTensor* m, int64_t capacity) {
  if (m == nullptr) return Status(StatusCode::InvalidProblem, "from_dlpack_mut: the DLManagedTensor is null");
  return from_dlpack_mut(m->dl_tensor, capacity);
}

#if BARACUDA_HAS_DLPACK_VERSIONED
namespace {
// The DLTensor of `m`, once `m` is there and of the major version this file
// was compiled for (another major version may lay out everything after
// `version` differently).
Result<const DLTensor*> versioned_tensor(const DLManagedTensorVersioned* m, const char* fn) {
  if (m == nullptr) return Status(StatusCode::InvalidProblem, std::string(fn) + ": the DLManagedTensorVersioned is null");
  if (m->version.major != DLPACK_MAJOR_VERSION)
    return Status(StatusCode::Unsupported,
                  std::string(fn) + ": the DLManagedTensorVersioned has DLPack version " + std::to_string(m->version.major) +
                      "." + std::to_string(m->version.minor) + "; baracuda was built with DLPack " +
                      std::to_string(DLPACK_MAJOR_VERSION) + ".x and reads no other major version (only its deleter may be called)");
  return &m->dl_tensor;
}
}  // namespace

Result<TensorRef> from_dlpack(const DLManagedTensorVersioned* m, int64_t capacity) {
  Result<const DLTensor*> t = versioned_tensor(m, "from_dlpack");
  if (!t) return t.status();
  return from_dlpack(**t, capacity);
}
Result<TensorMut> from_dlpack_mut(const DLManagedTensorVersioned* m, int64_t capacity) {
  Result<const DLTensor*> t = versioned_tensor(m, "from_dlpack_mut");
  if (!t) return t.status();
  if (m->flags & DLPACK_FLAG_BITMASK_READ_ONLY)
    return Status(StatusCode::InvalidProblem,
                  "from_dlpack_mut: the DLManagedTensorVersioned is read-only (DLPACK_FLAG_BITMASK_READ_ONLY): view it "
                  "with from_dlpack, or have the producer export a writable tensor");
  return from_dlpack_mut(**t, capacity);
}
#endif

Status to_dlpack(const TensorRef& v, DLTensor* out, int64_t* shape_storage, int64_t* strides_storage) {
  if (!out || (v.rank() > 0 && (!shape_storage || !strides_storage)))
    return Status(StatusCode::InvalidProblem, "to_dlpack: null output or storage");
  Result<DLDataType> dt = dtype_to_dl(v.dtype);  // before writing anything to *out
  if (!dt) return dt.status();
  out->data = const_cast<void*>(v.data);
  out->device.device_type = v.device.is_cpu() ? kDLCPU : kDLCUDA;
  out->device.device_id = v.device.is_cpu() ? 0 : v.device.ordinal;
  out->ndim = v.rank();
  out->dtype = *dt;
  for (int i = 0; i < v.rank(); ++i) {
    shape_storage[i] = v.shape[i];
    strides_storage[i] = v.strides[i];
  }
  out->shape = shape_storage;
  out->strides = strides_storage;
  out->byte_offset = 0;
  return Status::ok();
}

}  // namespace baracuda
#endif
