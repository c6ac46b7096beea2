// The cuBLASLt workspace rule: how much scratch a matmul plan asks for.
//
// A plan reports a fixed limit, not the chosen algorithm's exact need:
// workspace_size() must be a descriptor-level fact, while the algorithm run()
// uses may differ from the one chosen at select() (a less aligned pointer
// re-keys the heuristics), and every algorithm the heuristics may return is
// bounded by the limit they were given (CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES).
// So: the heuristics always get the plan's limit, and the plan asks for it.
//
// Default limit: 32 MiB on sm_90 and newer, 4 MiB before (cuBLAS's
// recommended workspace per architecture; PyTorch's CUBLASLT_WORKSPACE_SIZE default
// on sm_90+ is the same 32 MiB). Split-K and stream-K kernels need it for their partial
// tiles; without it cuBLASLt falls back to slower kernels on skinny problems.
// A plan may override it (e.g. 0: no workspace at all, for memory-tight
// callers), and the override is part of the heuristic key.
#pragma once
#include <cstddef>
#include <optional>

namespace baracuda::cublaslt {

inline constexpr size_t kMiB = size_t{1} << 20;
inline constexpr size_t kHopperWorkspaceLimit = 32 * kMiB;
inline constexpr size_t kDefaultWorkspaceLimit = 4 * kMiB;

// `arch` is major*10 + minor (90 for sm_90).
size_t default_workspace_limit(int arch);
// The plan's override when given, else the default for `arch`.
size_t workspace_limit(int arch, std::optional<size_t> plan_override = std::nullopt);

}  // namespace baracuda::cublaslt
