// DLPack interop: DLTensor / DLManagedTensor (and, with a DLPack 1.x header,
// DLManagedTensorVersioned) <-> TensorRef / TensorMut.
// Available when this header is compiled with dlpack/dlpack.h on the include
// path (the library itself is built with it when the build finds the header;
// BARACUDA_HAS_DLPACK says which case a translation unit is in,
// BARACUDA_HAS_DLPACK_VERSIONED whether the DLPack 1.x calls are there). Without the
// header (or with BARACUDA_NO_DLPACK defined), from_dlpack / from_dlpack_mut /
// to_dlpack still exist but any call to them fails to compile with a message
// saying what is missing.
#pragma once
#if !defined(BARACUDA_NO_DLPACK) && __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>

#include <type_traits>
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

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
#define BARACUDA_HAS_DLPACK_VERSIONED 1
// Views the tensor of a DLManagedTensorVersioned (DLPack >= 1.0: what
// __dlpack__(max_version=(1, 0)) hands out), as above. Refused: a null `m`
// (InvalidProblem); a major version other than the one baracuda was built
// with (Unsupported: DLPack changes the layout with the major version, so
// nothing past `version` can be read; calling the deleter stays safe, as
// DLManagedTensorVersionedOwner does); and, by from_dlpack_mut only, a tensor
// flagged DLPACK_FLAG_BITMASK_READ_ONLY (InvalidProblem). A newer minor
// version is read (it only adds codes; an unknown dtype or device code is
// refused as for a DLTensor). DLPACK_FLAG_BITMASK_IS_COPIED changes nothing
// here: the view borrows either way.
BARACUDA_API Result<TensorRef> from_dlpack(const DLManagedTensorVersioned* m, int64_t capacity = -1);
BARACUDA_API Result<TensorMut> from_dlpack_mut(const DLManagedTensorVersioned* m, int64_t capacity = -1);
#else
#define BARACUDA_HAS_DLPACK_VERSIONED 0
#endif

// Fills `out` to describe `v`; `shape_storage` / `strides_storage` must hold
// rank int64 values and outlive `out` (DLTensor does not own them).
BARACUDA_API Status to_dlpack(const TensorRef& v, DLTensor* out, int64_t* shape_storage, int64_t* strides_storage);

// Owns a managed tensor taken from a producer (a DLManagedTensor, or a
// DLManagedTensorVersioned with DLPack 1.x): calls its deleter exactly once
// (when destroyed or reset), unless release()d. Move-only.
template <class Managed>
class DLPackOwner {
 public:
  DLPackOwner() = default;
  explicit DLPackOwner(Managed* m) : m_(m) {}
  ~DLPackOwner() { reset(); }
  DLPackOwner(DLPackOwner&& o) noexcept : m_(std::exchange(o.m_, nullptr)) {}
  DLPackOwner& operator=(DLPackOwner&& o) noexcept {
    if (this != &o) reset(std::exchange(o.m_, nullptr));
    return *this;
  }
  DLPackOwner(const DLPackOwner&) = delete;
  DLPackOwner& operator=(const DLPackOwner&) = delete;

  Managed* get() const { return m_; }
  // Gives up ownership without calling the deleter.
  Managed* release() { return std::exchange(m_, nullptr); }
  // Calls the current tensor's deleter (if any) and takes `m`.
  void reset(Managed* m = nullptr) {
    Managed* old = std::exchange(m_, m);
    if (old && old->deleter) old->deleter(old);
  }
  Result<TensorRef> view(int64_t capacity = -1) const { return from_dlpack(m_, capacity); }
  Result<TensorMut> view_mut(int64_t capacity = -1) const { return from_dlpack_mut(m_, capacity); }

#if BARACUDA_HAS_DLPACK_VERSIONED
  // The producer's flags (DLManagedTensorVersioned only). False when empty or
  // of another major version, whose flags cannot be read (view() says why).
  bool read_only() const
    requires std::is_same_v<Managed, DLManagedTensorVersioned>
  {
    return flag(DLPACK_FLAG_BITMASK_READ_ONLY);
  }
  // The producer made a copy for this consumer: writes through a view do not
  // reach the producer's tensor.
  bool is_copied() const
    requires std::is_same_v<Managed, DLManagedTensorVersioned>
  {
    return flag(DLPACK_FLAG_BITMASK_IS_COPIED);
  }
#endif

 private:
#if BARACUDA_HAS_DLPACK_VERSIONED
  bool flag(uint64_t bit) const
    requires std::is_same_v<Managed, DLManagedTensorVersioned>
  {
    return m_ && m_->version.major == DLPACK_MAJOR_VERSION && (m_->flags & bit) != 0;
  }
#endif
  Managed* m_ = nullptr;
};

using DLManagedTensorOwner = DLPackOwner<DLManagedTensor>;
#if BARACUDA_HAS_DLPACK_VERSIONED
using DLManagedTensorVersionedOwner = DLPackOwner<DLManagedTensorVersioned>;
#endif

}  // namespace baracuda

#else  // no dlpack/dlpack.h (or BARACUDA_NO_DLPACK)

#define BARACUDA_HAS_DLPACK 0
#define BARACUDA_HAS_DLPACK_VERSIONED 0

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
