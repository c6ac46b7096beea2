// cuDNN route for FlashSdpaPlan / FlashSdpaBackwardPlan (f16/bf16), through the
// cuDNN 9 backend (graph) API. Plain C++ interface: no cuDNN or CUDA headers.
//
// The forward is the operation graph cuDNN's fused flash-attention engine
// recognises: S = Q.K^T (f32) -> S *= scale -> [causal: gen_index row/col,
// row (+ K - Q) >= col, select(S, -inf)] -> softmax as max / sub / exp / sum /
// div, with stats = max + log(sum) written as the f32 LSE -> O = P.V. cuDNN's
// stats are the natural-log LSE of the scaled scores, i.e. exactly FlashSdpaArgs::lse.
// The backward recomputes P = exp(S*scale - stats) and forms dV = P^T.dO,
// dP = dO.V^T, dS = P * (dP - rowsum(dO*O)) * scale, dK = dS^T.Q, dQ = dS.K.
// The default backward graph writes dQ straight from the matmul, which makes
// cuDNN pick its deterministic (dP-workspace) algorithm; the other graph
// (deterministic = false) accumulates dQ in f32 with atomics.
//
// Execution plans are built on first use (heuristics + runtime compilation:
// tens to hundreds of ms), cached per device keyed by the problem (dtype,
// shape, strides, causal/alignment, stats, deterministic; not the scale, which
// is a by-value operand) and reused. One cudnnHandle per device, created lazily;
// calls are serialized per device and set the handle's stream every time. The
// handles, graph builder, plan building, cache and capture rule are the shared
// cuDNN backend (src/backends/cudnn/); this route adds the attention graphs.
//
// Graph capture: running an already-built plan is capture-safe (cudnnSetStream
// and cudnnBackendExecute only enqueue kernels). Building one is not (handle
// creation allocates, engines compile): while the stream is capturing and the
// plan is not in the cache, forward()/backward() return Unsupported without
// touching the stream, so the caller can fall back (or call prepare_*() before
// capturing).
//
// Without cuDNN in the build (BARACUDA_WITH_CUDNN unset) every function exists,
// available() is false, supports() says why, and the rest return Unsupported.
#pragma once
#include <cstddef>
#include <string>

#include "baracuda/core/status.hpp"
#include "baracuda/ops/attention.hpp"
#include "flash_launch.hpp"

namespace baracuda::attention::cudnn_sdpa {

// Built with cuDNN and the loaded library is a usable 9.x (not 9.10.0/9.10.1,
// whose f16/bf16 SDPA has known bugs).
bool available();
// cudnnGetVersion() of the loaded library (e.g. 91900); 0 without cuDNN.
size_t version();

// Descriptor-level support: f16/bf16, dense (no varlen), no mask / ALiBi /
// softcap / window, causal top-left, or bottom-right with q_len <= kv_len,
// GQA/MQA, head_dim % 8 == 0 and <= 256 on sm_90 (<= 128 on sm_80/86/89/120 and
// for the backward on sm_100), sm_80 or newer, non-empty problem; the backward
// on cuDNN <= 9.15.0 also needs kv_len % 128 == 0 (older backward kernels give
// NaN gradients for rows with lse < -88.7 otherwise). `why` (may be null) gets
// the first reason when it returns false.
bool supports(const FlashSdpaDescriptor& desc, int arch, bool backward, std::string* why);

// Layout checks on the filled params (call from can_implement, after the
// head dimension was checked contiguous, e.g. check_cuda_rows(.., 16)):
// 16-byte aligned pointers, no stride-0 broadcast along a dimension of extent
// > 1, and lse packed [B,H,Q] (cuDNN < 9.26 reads/writes stats only packed).
// Unsupported naming the plan otherwise.
Status check_forward(const attention::cuda::FlashFwdParams& p);
Status check_backward(const attention::cuda::FlashBwdParams& p);

// Params with contiguous [B,H,S,D] q/k/v/y (and dy/dq/dk/dv), packed lse and
// null pointers: what select() can size the workspace with (prepare_*()).
attention::cuda::FlashFwdParams canonical_forward(const FlashSdpaDescriptor& desc);
attention::cuda::FlashBwdParams canonical_backward(const FlashSdpaDescriptor& desc);

struct PlanInfo {
  size_t workspace_bytes = 0;  // device scratch run needs (cuDNN's plus the backward's f32 row sums / dQ accumulator)
  bool deterministic = true;   // graph and engine report no non-deterministic algorithm
  std::string engine;          // "cudnn-engine-<global index>", for the SKU variant
};

// Builds (or finds in the cache) the execution plan for these params; launches
// nothing, pointers may be null. Slow the first time and not capture-safe then.
// Unsupported when cuDNN has no engine for the graph (cached too, so asking
// again is cheap); LibraryError on other cuDNN failures.
Result<PlanInfo> prepare_forward(const attention::cuda::FlashFwdParams& p);
Result<PlanInfo> prepare_backward(const attention::cuda::FlashBwdParams& p, bool deterministic = true);

// Runs the forward: y and (when p.lse != null) lse. `workspace` must hold
// prepare_forward(p)->workspace_bytes (WorkspaceTooSmall otherwise).
Status forward(const attention::cuda::FlashFwdParams& p, void* stream, void* workspace, size_t workspace_bytes);
// Runs the backward: dq, dk, dv from q, k, v, y (p.y), dy, lse. Scratch is
// p.workspace / p.workspace_bytes, at least prepare_backward(p, deterministic)->workspace_bytes.
Status backward(const attention::cuda::FlashBwdParams& p, void* stream, bool deterministic = true);

// Every check forward()/backward() make, launching nothing: Ok exactly when
// they would run cuDNN for these arguments (the plan for the actual strides is
// built and cached unless the stream is capturing, as the run would). Used by
// the flash plans' sku_for() to name the route run() takes.
Status probe_forward(const attention::cuda::FlashFwdParams& p, void* stream, void* workspace, size_t workspace_bytes);
Status probe_backward(const attention::cuda::FlashBwdParams& p, void* stream, bool deterministic = true);

}  // namespace baracuda::attention::cudnn_sdpa
