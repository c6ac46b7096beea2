#include "baracuda/core/dlpack.hpp"

#if __has_include(<dlpack/dlpack.h>)
namespace baracuda {
namespace {

Result<DType> dtype_from_dl(DLDataType t) {
  if (t.lanes != 1) return Status(StatusCode::Unsupported, "from_dlpack: vector lanes != 1 are not supported");
  switch (t.code) {
    case kDLFloat:
      if (t.bits == 32) return DType::F32;
      if (t.bits == 64) return DType::F64;
      if (t.bits == 16) return DType::F16;
      break;
    case kDLBfloat:
      if (t.bits == 16) return DType::BF16;
      break;
    case kDLInt:
      if (t.bits == 8) return DType::I8;
      if (t.bits == 32) return DType::I32;
      if (t.bits == 64) return DType::I64;
      break;
    case kDLUInt:
      if (t.bits == 8) return DType::U8;  // older DLPack spells bool as uint8
      break;
#if DLPACK_VERSION >= 80
    case kDLBool:
      if (t.bits == 8) return DType::Bool;
      break;
#endif
    default: break;
  }
  return Status(StatusCode::Unsupported, "from_dlpack: DLPack dtype code " + std::to_string(t.code) + " bits " +
                                             std::to_string(t.bits) + " has no baracuda DType");
}

DLDataType dtype_to_dl(DType t) {
  DLDataType d{};
  d.lanes = 1;
  d.bits = static_cast<uint8_t>(dtype_size(t) * 8);
  switch (t) {
    case DType::F32: case DType::F64: case DType::F16: d.code = kDLFloat; break;
    case DType::BF16: d.code = kDLBfloat; break;
    case DType::I8: case DType::I32: case DType::I64: d.code = kDLInt; break;
    case DType::U8: d.code = kDLUInt; break;
#if DLPACK_VERSION >= 80
    case DType::Bool: d.code = kDLBool; break;
#else
    case DType::Bool: d.code = kDLUInt; break;
#endif
  }
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

Status to_dlpack(const TensorRef& v, DLTensor* out, int64_t* shape_storage, int64_t* strides_storage) {
  if (!out || (v.rank() > 0 && (!shape_storage || !strides_storage)))
    return Status(StatusCode::InvalidProblem, "to_dlpack: null output or storage");
  out->data = const_cast<void*>(v.data);
  out->device.device_type = v.device.is_cpu() ? kDLCPU : kDLCUDA;
  out->device.device_id = v.device.is_cpu() ? 0 : v.device.ordinal;
  out->ndim = v.rank();
  out->dtype = dtype_to_dl(v.dtype);
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
