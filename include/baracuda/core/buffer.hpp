// Buffer: a tiny RAII allocation on the host or on a CUDA device, for examples
// and tests. Plans never allocate; callers own memory.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/export.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

class BARACUDA_API Buffer {
 public:
  Buffer() = default;
  // Allocates `bytes` on `device` (host memory for the CPU). Throws StatusError on failure.
  Buffer(Device device, size_t bytes);
  ~Buffer();
  Buffer(Buffer&& o) noexcept;
  Buffer& operator=(Buffer&& o) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  void* data() const { return ptr_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

  // Copies between this buffer and host memory (synchronous: on return the
  // data is in place, visible to work on any stream, non-blocking ones too).
  Status copy_from_host(const void* src, size_t bytes, size_t offset = 0);
  Status copy_to_host(void* dst, size_t bytes, size_t offset = 0) const;
  // Fills every byte with `value` (synchronous, as the copies).
  Status fill_bytes(uint8_t value);

  // Views over the whole buffer: capacity is bytes / dtype_size.
  TensorRef view(DType dtype, Dims shape, Dims strides) const;
  TensorMut view_mut(DType dtype, Dims shape, Dims strides);
  TensorRef view(DType dtype, Dims shape) const;  // contiguous
  TensorMut view_mut(DType dtype, Dims shape);

 private:
  void release();
  Device device_ = Device::cpu();
  void* ptr_ = nullptr;
  size_t bytes_ = 0;
};

// True when this build has CUDA support and at least one CUDA device is visible.
BARACUDA_API bool cuda_available();
// Number of visible CUDA devices (0 in a CPU-only build).
BARACUDA_API int cuda_device_count();
// Blocks until all work on `stream` finished (no-op on the CPU).
BARACUDA_API Status synchronize(const class Stream& stream);

}  // namespace baracuda
