#include "baracuda/core/buffer.hpp"

#include <cstdlib>
#include <cstring>
#include <new>

#include "baracuda/core/stream.hpp"
#include "core/cuda_device.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace baracuda {

namespace {
Status check_range(const char* what, size_t offset, size_t bytes, size_t have) {
  if (offset > have || bytes > have - offset)
    return Status(StatusCode::BufferTooSmall,
                  std::string("Buffer::") + what + ": range [" + std::to_string(offset) + ", " +
                      std::to_string(offset + bytes) + ") exceeds the buffer's " + std::to_string(have) + " bytes",
                  offset + bytes, have);
  return Status::ok();
}
}  // namespace

Buffer::Buffer(Device device, size_t bytes) : device_(device), bytes_(bytes) {
  if (bytes == 0) return;
  if (device.is_cpu()) {
    ptr_ = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
    if (!ptr_) throw std::bad_alloc();
    return;
  }
#ifdef BARACUDA_WITH_CUDA
  int prev = 0;
  cudaGetDevice(&prev);
  cudaSetDevice(device.ordinal);
  cudaError_t e = cudaMalloc(&ptr_, bytes);
  cudaSetDevice(prev);
  if (e != cudaSuccess) {
    ptr_ = nullptr;
    throw StatusError(detail::cuda_status(e, ("Buffer: cudaMalloc of " + std::to_string(bytes) + " bytes").c_str()));
  }
#else
  throw StatusError(Status(StatusCode::Unsupported, "Buffer: CUDA memory requested from a CPU-only build"));
#endif
}

void Buffer::release() {
  if (!ptr_) return;
  if (device_.is_cpu()) {
    std::free(ptr_);
  } else {
#ifdef BARACUDA_WITH_CUDA
    cudaFree(ptr_);
#endif
  }
  ptr_ = nullptr;
  bytes_ = 0;
}

Buffer::~Buffer() { release(); }
Buffer::Buffer(Buffer&& o) noexcept : device_(o.device_), ptr_(o.ptr_), bytes_(o.bytes_) {
  o.ptr_ = nullptr;
  o.bytes_ = 0;
}
Buffer& Buffer::operator=(Buffer&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    ptr_ = o.ptr_;
    bytes_ = o.bytes_;
    o.ptr_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

Status Buffer::copy_from_host(const void* src, size_t bytes, size_t offset) {
  BARACUDA_RETURN_IF_ERROR(check_range("copy_from_host", offset, bytes, bytes_));
  if (bytes == 0) return Status::ok();
  char* dst = static_cast<char*>(ptr_) + offset;
  if (device_.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
#ifdef BARACUDA_WITH_CUDA
  // cudaMemcpy from pageable host memory may return before the DMA into the
  // device lands (it is ordered on the default stream only): wait for it, so
  // work on any other stream (non-blocking ones included) sees the data.
  BARACUDA_RETURN_IF_ERROR(
      detail::cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "Buffer::copy_from_host"));
  return detail::cuda_status(cudaStreamSynchronize(0), "Buffer::copy_from_host");
#else
  return Status(StatusCode::Unsupported, "Buffer: CPU-only build");
#endif
}

Status Buffer::copy_to_host(void* dst, size_t bytes, size_t offset) const {
  BARACUDA_RETURN_IF_ERROR(check_range("copy_to_host", offset, bytes, bytes_));
  if (bytes == 0) return Status::ok();
  const char* src = static_cast<const char*>(ptr_) + offset;
  if (device_.is_cpu()) {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }
#ifdef BARACUDA_WITH_CUDA
  return detail::cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "Buffer::copy_to_host");
#else
  return Status(StatusCode::Unsupported, "Buffer: CPU-only build");
#endif
}

Status Buffer::fill_bytes(uint8_t value) {
  if (bytes_ == 0) return Status::ok();
  if (device_.is_cpu()) {
    std::memset(ptr_, value, bytes_);
    return Status::ok();
  }
#ifdef BARACUDA_WITH_CUDA
  // cudaMemset is asynchronous for device memory: wait, as copy_from_host does.
  BARACUDA_RETURN_IF_ERROR(detail::cuda_status(cudaMemset(ptr_, value, bytes_), "Buffer::fill_bytes"));
  return detail::cuda_status(cudaStreamSynchronize(0), "Buffer::fill_bytes");
#else
  return Status(StatusCode::Unsupported, "Buffer: CPU-only build");
#endif
}

TensorRef Buffer::view(DType dtype, Dims shape, Dims strides) const {
  return TensorRef(ptr_, dtype, device_, shape, strides, static_cast<int64_t>(bytes_ / dtype_size(dtype)));
}
TensorMut Buffer::view_mut(DType dtype, Dims shape, Dims strides) {
  return TensorMut(ptr_, dtype, device_, shape, strides, static_cast<int64_t>(bytes_ / dtype_size(dtype)));
}
TensorRef Buffer::view(DType dtype, Dims shape) const { return view(dtype, shape, contiguous_strides(shape)); }
TensorMut Buffer::view_mut(DType dtype, Dims shape) { return view_mut(dtype, shape, contiguous_strides(shape)); }

int cuda_device_count() {
#ifdef BARACUDA_WITH_CUDA
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
#else
  return 0;
#endif
}

bool cuda_available() { return cuda_device_count() > 0; }

Status synchronize(const Stream& stream) {
  if (stream.is_cpu()) return Status::ok();
#ifdef BARACUDA_WITH_CUDA
  return detail::cuda_status(cudaStreamSynchronize(static_cast<cudaStream_t>(stream.native_handle())), "synchronize");
#else
  return Status(StatusCode::Unsupported, "synchronize: CPU-only build");
#endif
}

}  // namespace baracuda
