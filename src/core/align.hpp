// Pointer alignment tests shared by host code (plans, library routes, launch
// logic) and kernels: vector paths need 16-byte aligned rows, cuDNN needs
// 16-byte aligned tensors, and so on. No CUDA headers.
#pragma once
#include <cstddef>
#include <cstdint>

#include "core/host_device.hpp"

namespace baracuda::detail {

// True when p is a multiple of `bytes` (a power of two). A null pointer is aligned.
BARACUDA_HOST_DEVICE inline bool is_aligned(const void* p, size_t bytes) {
  return (reinterpret_cast<uintptr_t>(p) & (bytes - 1)) == 0;
}

// The width of one vector load / store (uint4).
BARACUDA_HOST_DEVICE inline bool is_aligned16(const void* p) { return is_aligned(p, 16); }

}  // namespace baracuda::detail
