// Owning cudnnBackendDescriptor_t (destroyed with the owner; move-only), and
// creation with the route's error wording.
#pragma once
#include <cudnn.h>

#include <utility>

#include "backends/cudnn/api.hpp"
#include "backends/cudnn/errors.hpp"
#include "backends/cudnn/library.hpp"

namespace baracuda::cudnn {

class Descriptor {
 public:
  Descriptor() = default;
  explicit Descriptor(cudnnBackendDescriptor_t d) : d_(d) {}
  ~Descriptor() { reset(); }
  Descriptor(Descriptor&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Descriptor& operator=(Descriptor&& o) noexcept {
    if (this != &o) {
      reset();
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;

  cudnnBackendDescriptor_t get() const { return d_; }
  explicit operator bool() const { return d_ != nullptr; }

 private:
  void reset() {
    if (d_) api().cudnnBackendDestroyDescriptor(d_);
    d_ = nullptr;
  }
  cudnnBackendDescriptor_t d_ = nullptr;
};

// A new descriptor of `type`; `step` names what failed in the error.
inline Result<Descriptor> make_descriptor(const char* plan, cudnnBackendDescriptorType_t type, const char* step) {
  if (!try_api()) return unsupported(plan, unavailable_reason());  // every graph starts here
  cudnnBackendDescriptor_t d = nullptr;
  const cudnnStatus_t s = api().cudnnBackendCreateDescriptor(type, &d);
  if (s != CUDNN_STATUS_SUCCESS) return library_status(plan, s, step);
  return Descriptor(d);
}

}  // namespace baracuda::cudnn
