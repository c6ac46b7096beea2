// BARACUDA_HOST_DEVICE marks a function callable from host and device code.
// It expands to nothing in a plain C++ compiler, so headers that use it (the
// integer math, alignment and strided-view helpers, FastDiv, the value
// conversions) compile without CUDA and serve host code and kernels alike.
#pragma once

#if defined(__CUDACC__)
#define BARACUDA_HOST_DEVICE __host__ __device__
#else
#define BARACUDA_HOST_DEVICE
#endif
