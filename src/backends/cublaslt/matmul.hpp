// cuBLASLt matmuls for plans: choosing the algorithm (heuristics, cached per
// device and problem) and running it. What a GEMM plan does with it:
//   select(): p = problem from the descriptor (16-byte alignment),
//             limit = workspace_limit(arch, override), workspace_size() = limit,
//             algo = choose_algo(plan, device, p, limit, capturing)   // warms the cache
//   run():    q = with_pointer_alignment(p, a, b, c, d)
//             algo = choose_algo(plan, device, q, limit, capturing)  // cached unless less aligned
//             run_matmul(plan, handle, q, *algo, args, ws, ws_bytes, stream)
//
// Capture rule: the heuristics are queried (and the handle created) only
// outside graph capture; a cached choice is used inside one. Running is
// capture-safe (cublasLtMatmul only enqueues kernels; the workspace is the
// caller's). Determinism: cuBLAS documents bit-identical results for the same
// algorithm on the same architecture and SM count when cublasLtMatmul gets a
// caller-owned workspace (as here); one cached algorithm per (device, problem,
// limit) keeps a plan's runs identical.
#pragma once
#include <cublasLt.h>

#include <cstddef>

#include "backends/cublaslt/matmul_problem.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::cublaslt {

// The heuristics' first (best-ranked) algorithm and what it needs.
struct AlgoChoice {
  cublasLtMatmulAlgo_t algo{};
  size_t workspace_bytes = 0;  // <= the limit it was chosen under
  float waves = 0.0f;          // cuBLASLt's device-utilization estimate (1.0 = one full wave)
};

// The cached choice for (device, heuristic_key(p, workspace_limit)), or the
// heuristics' answer (cached). Unsupported when cuBLASLt has no algorithm for
// the problem (remembered) or when it is not cached and `capturing`;
// InvalidProblem for a malformed problem (check_problem). The pointer stays
// valid until exit.
Result<const AlgoChoice*> choose_algo(const char* plan, int device, const MatmulProblem& p, size_t workspace_limit,
                                      bool capturing);

// Per-call operands. alpha / beta are converted to p.scale_type. c may be null
// when beta == 0 (D is then passed as C, so c_type / ldc must equal d_type /
// ldd); c == d runs in place. bias (device, p.m values of p.bias_type) is
// required exactly when the epilogue has one.
struct MatmulArgs {
  const void* a = nullptr;
  const void* b = nullptr;
  const void* c = nullptr;
  void* d = nullptr;
  const void* bias = nullptr;  // the bias (Bias epilogues) or the bias gradient's output (BGrad epilogues)
  void* aux = nullptr;         // the aux output (Aux epilogues)
  const void* a_scale = nullptr;  // device f32 (1 or m values), exactly when p.a_scale != None
  const void* b_scale = nullptr;  // device f32 (1 or n values), exactly when p.b_scale != None
  double alpha = 1.0, beta = 0.0;
};

// Runs `algo` (chosen for `p`) on `stream` (a cudaStream_t as void*).
// InvalidProblem when a pointer is null or less aligned than p declares, or
// the bias is missing / unexpected; WorkspaceTooSmall{needed, got} when
// workspace_bytes < algo.workspace_bytes; LibraryError / Unsupported from
// cuBLASLt. Zero-size problems are the plan's early return, not handled here.
Status run_matmul(const char* plan, cublasLtHandle_t handle, const MatmulProblem& p, const AlgoChoice& algo,
                  const MatmulArgs& args, void* workspace, size_t workspace_bytes, void* stream);

}  // namespace baracuda::cublaslt
