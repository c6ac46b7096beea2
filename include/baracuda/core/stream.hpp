// Stream: where a plan runs. A CPU stream runs plans synchronously on the host;
// a CUDA stream wraps a cudaStream_t (kept as void* so this header needs no CUDA).
#pragma once
#include <cstddef>

#include "baracuda/core/tensor.hpp"

namespace baracuda {

class Stream {
 public:
  static Stream cpu() { return Stream(Device::cpu(), nullptr); }
  // `handle` is a cudaStream_t (nullptr = the legacy default stream).
  static Stream cuda(int ordinal = 0, void* handle = nullptr) { return Stream(Device::cuda(ordinal), handle); }
  Device device() const { return device_; }
  void* native_handle() const { return handle_; }
  bool is_cpu() const { return device_.is_cpu(); }
  bool is_cuda() const { return device_.is_cuda(); }

 private:
  Stream(Device d, void* h) : device_(d), handle_(h) {}
  Device device_;
  void* handle_;
};

// Scratch memory handed to run(): pointer + bytes, or none. Device memory for
// CUDA plans, host memory for CPU plans.
struct Workspace {
  void* ptr = nullptr;
  size_t bytes = 0;
  Workspace() = default;
  Workspace(void* p, size_t b) : ptr(p), bytes(b) {}
  static Workspace none() { return {}; }
};

}  // namespace baracuda
