// BARACUDA_API marks the public API: the classes and functions declared in
// include/baracuda/** that the library defines out of line (plans, Status,
// Dims and the views, Buffer, the name functions, promotion, DLPack, version).
//
// A shared libbaracuda (BUILD_SHARED_LIBS=ON) is compiled with hidden symbols
// (-fvisibility=hidden, for nvcc's host code too), so these declarations are
// all it exports: everything under src/ stays internal and can change without
// breaking applications. The build defines BARACUDA_SHARED for the library and
// its users (the CMake target's interface) in that configuration.
//
// A static libbaracuda (the default) exports nothing of its own: BARACUDA_API
// is empty there, so an application that links it into its own shared library
// does not re-export baracuda's symbols.
//
// The attribute is written in the standard [[...]] form so it composes with
// other attributes in any order (class [[nodiscard]] BARACUDA_API Status).
// ELF platforms (Linux) only, like the rest of the build.
#pragma once

#if defined(BARACUDA_SHARED) && (defined(__GNUC__) || defined(__clang__))
#define BARACUDA_API [[gnu::visibility("default")]]
#else
#define BARACUDA_API
#endif
