// Compiled (never linked) by compile_check.cmake in a translation unit that
// HAS dlpack/dlpack.h, against a stand-in baracuda/config.hpp that describes
// a library built without what the call needs (tests/CMakeLists.txt writes it
// from cmake/config.hpp.in):
//  * BARACUDA_WITH_DLPACK 0: every DLPack call must fail to compile, saying the
//    library was built without DLPack (not a link error later);
//  * BARACUDA_WITH_DLPACK 1 with BARACUDA_DLPACK_MAJOR_VERSION 0 and a DLPack
//    1.x dlpack.h: the DLManagedTensorVersioned calls likewise, while the
//    DLTensor / DLManagedTensor ones still compile.
#include <dlpack/dlpack.h>

#include <baracuda/baracuda.hpp>

static_assert(BARACUDA_HAS_DLPACK == BARACUDA_WITH_DLPACK, "DLPack is used exactly when the library has it");
static_assert(BARACUDA_HAS_DLPACK_VERSIONED == 0, "the stand-in library has no DLManagedTensorVersioned calls");

void use(const DLTensor& t, const DLManagedTensor* m) {
#if defined(BARACUDA_SNIPPET_CALL_FROM_DLPACK)
  (void)baracuda::from_dlpack(t);
#elif defined(BARACUDA_SNIPPET_CALL_FROM_DLPACK_MUT)
  (void)baracuda::from_dlpack_mut(m);
#elif defined(BARACUDA_SNIPPET_CALL_TO_DLPACK)
  int64_t shape[1], strides[1];
  baracuda::to_dlpack(baracuda::TensorRef{}, nullptr, shape, strides);
#elif BARACUDA_WITH_DLPACK
  (void)baracuda::from_dlpack(t);
  (void)baracuda::from_dlpack_mut(m);
#else
  (void)t;
  (void)m;
#endif
}

#if defined(DLPACK_MAJOR_VERSION) && DLPACK_MAJOR_VERSION >= 1
void use_versioned(DLManagedTensorVersioned* v) {
#if defined(BARACUDA_SNIPPET_CALL_FROM_VERSIONED)
  (void)baracuda::from_dlpack(v);
#elif defined(BARACUDA_SNIPPET_CALL_FROM_VERSIONED_MUT)
  (void)baracuda::from_dlpack_mut(static_cast<const DLManagedTensorVersioned*>(v));
#elif defined(BARACUDA_SNIPPET_OWNER_VIEW)
  baracuda::DLManagedTensorVersionedOwner owner(v);
  (void)owner.view();
#else
  (void)v;
#endif
}
#endif
