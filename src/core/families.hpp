// Which op families' CUDA kernels this build compiled (CMake option
// BARACUDA_FAMILIES, cmake/BaracudaFamily.cmake). For a family left out,
// BARACUDA_KERNELS_<FAMILY> is 0: its plans still build and run on the CPU,
// its backend choice refuses CUDA streams with family_not_built(), and its
// cuda_standins.cpp replaces the kernels' entry points so that the plans link.
// Host code only (kernel TUs do not include it, so changing the option never
// recompiles the kernels of the families that stay).
#pragma once
#include "core/dispatch.hpp"        // family_not_built()
#include "core/families_built.hpp"  // generated: BARACUDA_KERNELS_<FAMILY>, BARACUDA_FAMILIES_VALUE
