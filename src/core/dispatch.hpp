// Backend choice shared by every plan family: CPU stream -> cpu-reference, CUDA
// stream -> bespoke kernels (with the device's SM count and arch). A plan with
// a library route (cuDNN, cuBLASLt) may move from bespoke to it afterwards; a
// required backend the plan cannot run is an Unsupported error naming the plan.
#pragma once
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"

namespace baracuda::detail {

struct BackendChoice {
  Backend backend = Backend::CpuReference;
  int sm_count = 0;
  int arch = 0;  // sm_XY as XY; 0 on the CPU
};

struct LibraryRoutes {
  bool cudnn = false;
  bool cublaslt = false;
};

// `family` completes "backend X has no <family> implementation" ("reduction", ...).
Result<BackendChoice> choose_backend(const char* plan, const char* family, const Stream& stream,
                                     const PlanPreference& pref, LibraryRoutes routes = {});

// The precision every family reports for a backend: the CPU reference computes
// in double (int64 for integers); CUDA kernels keep f64 in f64, integers in
// int64 and everything else (f32, and f16/bf16, whose products are exact in
// f32) in f32. Deterministic and bit-stable by default.
PrecisionGuarantee default_precision(DType dtype, Backend backend);

// "<plan>: this build has no <family> CUDA kernels (BARACUDA_FAMILIES=<value>)"
// (Unsupported): a family the build option left out (core/families.hpp).
Status family_not_built(const char* plan, const char* family);

}  // namespace baracuda::detail
