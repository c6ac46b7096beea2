// Backend choice, plan preferences and the KernelSku each plan reports.
#pragma once
#include <cstddef>
#include <optional>
#include <string>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"

namespace baracuda {

enum class Backend : uint8_t { CpuReference, Bespoke, CuBlasLt, CuDnn };
BARACUDA_API const char* backend_name(Backend b);

struct PlanPreference {
  std::optional<Backend> backend;   // which backend to use
  bool require_backend = false;     // true: error if `backend` cannot run the problem; false: a hint
  bool require_deterministic = true;  // default plans never use floating-point atomics
  // Allow a faster route that computes in less precision than the dtype's
  // default (GEMM: TF32 tensor cores for f32 inputs). Off by default; a plan
  // that takes such a route says so in sku().variant and sku().precision.
  bool allow_reduced_precision = false;
  // Kernel-variant override for tuning and tests: comma-separated key=value
  // pairs that a family documents (flash attention: "tile=128x64w4s2",
  // "splits=8", "wgmma=0"). Read once, at select(), and recorded in the plan:
  // sku() names what run() launches. Empty: the family's environment default
  // (read at select(), never by run()), else the measured default choice.
  // An unknown key or a malformed value is InvalidProblem at select().
  std::string variant;
  // Strict workspace mode, for testing a caller's workspace plumbing without a
  // GPU: a plan selected for the CPU then needs a workspace although the CPU
  // reference uses none, namely the bytes the CUDA plan of the same
  // descriptor needs where the host can know them without a device, and at
  // least kStrictWorkspaceBytes (a token: most CUDA workspaces depend on the
  // device's SM count), so every plan does. run() then refuses a smaller or
  // null workspace (WorkspaceTooSmall, as on CUDA) and overwrites the whole
  // workspace with a byte pattern before computing, as a CUDA kernel may: a
  // workspace that aliases a tensor or is shorter than claimed shows up as
  // wrong results (or under AddressSanitizer). No effect on CUDA plans, which
  // always need exactly their own workspace. The environment variable
  // BARACUDA_STRICT_WORKSPACE=1, read at select(), turns it on for every plan
  // (e.g. a framework's CPU-only CI) without a code change.
  bool strict_workspace = false;
};

// The least workspace a CPU plan needs in strict workspace mode.
inline constexpr size_t kStrictWorkspaceBytes = 256;

struct PrecisionGuarantee {
  DType math = DType::F32;         // precision of the arithmetic on each element
  DType accumulator = DType::F32;  // precision partial results are kept in
  bool deterministic = true;       // same inputs, same launch config -> same bits
  bool bit_stable_on_same_hardware = true;  // ... across runs on the same GPU model
};

struct BARACUDA_API KernelSku {
  Backend backend = Backend::CpuReference;
  int arch = 0;                  // sm_XY as XY (90 for sm_90); 0 on the CPU
  DType dtype = DType::F32;      // input element type
  std::string op;                // "reduce.sum", "reduce_backward.max", ...
  std::string variant;           // which algorithm ran: "row-block", "column-split", ...
  PrecisionGuarantee precision;
  std::string to_string() const;
};

}  // namespace baracuda
