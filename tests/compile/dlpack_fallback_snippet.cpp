// Compiled (never linked) by compile_check.cmake with BARACUDA_NO_DLPACK, as a
// translation unit without dlpack/dlpack.h would be: the umbrella header must
// compile, and a call to the DLPack functions must fail with a message that
// names the missing header.
#include <baracuda/baracuda.hpp>

static_assert(BARACUDA_HAS_DLPACK == 0, "BARACUDA_NO_DLPACK must leave DLPack out");

struct NotADLTensor {};

void use(const NotADLTensor& t) {
#if defined(BARACUDA_SNIPPET_CALL_FROM_DLPACK)
  (void)baracuda::from_dlpack(t);
#elif defined(BARACUDA_SNIPPET_CALL_FROM_DLPACK_MUT)
  (void)baracuda::from_dlpack_mut(t);
#elif defined(BARACUDA_SNIPPET_CALL_TO_DLPACK)
  baracuda::to_dlpack(t);
#else
  (void)t;
#endif
}
