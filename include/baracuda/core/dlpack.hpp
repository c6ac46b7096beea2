// DLPack interop: DLTensor / DLManagedTensor <-> TensorRef / TensorMut.
// Available when this header is compiled with dlpack/dlpack.h on the include
// path (the library itself is built with it when the build finds the header;
// BARACUDA_HAS_DLPACK says which case a translation unit is in). Without the
// header (or with BARACUDA_NO_DLPACK defined), from_dlpack / from_dlpack_mut /
// to_dlpack still exist but any call to them fails to compile with a message
// saying what is missing.
#pragma once
#if !defined(BARACUDA_NO_DLPACK) && __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>

#include <utility>

#include "baracuda/core/export.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"

#define BARACUDA_HAS_DLPACK 1

namespace baracuda {

// Views a DLTensor. `capacity` (elements from the first element on) defaults to
// the view's span, the most a DLTensor tells. Fails for dtypes baracuda lacks,
// rank > 8, negative strides, or devices other than CPU / CUDA.
BARACUDA_API Result<TensorRef> from_dlpack(const DLTensor& t, int64_t capacity = -1);
BARACUDA_API Result<TensorMut> from_dlpack_mut(const DLTensor& t, int64_t capacity = -1);

// Views the tensor of a DLManagedTensor (what a framework's __dlpack__() /
// to_dlpack hands out), as above. The view borrows: keep the managed tensor
// alive, and call its deleter once when done (DLManagedTensorOwner does).
// InvalidProblem when `m` is null.
BARACUDA_API Result<TensorRef> from_dlpack(const DLManagedTensor* m, int64_t capacity = -1);
BARACUDA_API Result<TensorMut> from_dlpack_mut(const DLManagedTensor* m, int64_t capacity = -1);

// Fills `out` to describe `v`; `shape_storage` / `strides_storage` must hold
// rank int64 values and outlive `out` (DLTensor does not own them).
BARACUDA_API Status to_dlpack(const TensorRef& v, DLTensor* out, int64_t* shape_storage, int64_t* strides_storage);

// Owns a DLManagedTensor taken from a producer: calls its deleter exactly once
// (when destroyed or reset), unless release()d. Move-only.
class DLManagedTensorOwner {
 public:
  DLManagedTensorOwner() = default;
  explicit DLManagedTensorOwner(DLManagedTensor* m) : m_(m) {}
  ~DLManagedTensorOwner() { reset(); }
  DLManagedTensorOwner(DLManagedTensorOwner&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  DLManagedTensorOwner& operator=(DLManagedTensorOwner&& o) noexcept {
    if (this != &o) reset(std::exchange(o.m_, nullptr));
    return *this;
  }
  DLManagedTensorOwner(const DLManagedTensorOwner&) = delete;
  DLManagedTensorOwner& operator=(const DLManagedTensorOwner&) = delete;

  DLManagedTensor* get() const { return m_; }
  // Gives up ownership without calling the deleter.
  DLManagedTensor* release() { return std::exchange(m_, nullptr); }
  // Calls the current tensor's deleter (if any) and takes `m`.
  void reset(DLManagedTensor* m = nullptr) {
    DLManagedTensor* old = std::exchange(m_, m);
    if (old && old->deleter) old->deleter(old);
  }
  Result<TensorRef> view(int64_t capacity = -1) const { return from_dlpack(m_, capacity); }
  Result<TensorMut> view_mut(int64_t capacity = -1) const { return from_dlpack_mut(m_, capacity); }

 private:
  DLManagedTensor* m_ = nullptr;
};

}  // namespace baracuda

#else  // no dlpack/dlpack.h (or BARACUDA_NO_DLPACK)

#define BARACUDA_HAS_DLPACK 0

namespace baracuda {
namespace detail {
template <class... A>
inline constexpr bool kNeedsDLPackHeader = false;
}
// Stand-ins: calling one is a compile error that names the missing header.
template <class... A>
void from_dlpack(A&&...) {
  static_assert(detail::kNeedsDLPackHeader<A...>,
                "baracuda::from_dlpack needs <dlpack/dlpack.h>: put the DLPack headers (github.com/dmlc/dlpack) on the "
                "include path, before baracuda's headers");
}
template <class... A>
void from_dlpack_mut(A&&...) {
  static_assert(detail::kNeedsDLPackHeader<A...>,
                "baracuda::from_dlpack_mut needs <dlpack/dlpack.h>: put the DLPack headers (github.com/dmlc/dlpack) on "
                "the include path, before baracuda's headers");
}
template <class... A>
void to_dlpack(A&&...) {
  static_assert(detail::kNeedsDLPackHeader<A...>,
                "baracuda::to_dlpack needs <dlpack/dlpack.h>: put the DLPack headers (github.com/dmlc/dlpack) on the "
                "include path, before baracuda's headers");
}
}  // namespace baracuda

#endif
