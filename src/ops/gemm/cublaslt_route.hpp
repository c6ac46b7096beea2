// The cuBLASLt route of the GEMM family: a Problem (problem.hpp) planned as
// cuBLASLt calls plus the bespoke passes around them, and executed.
//
// plan_route() decides, from the problem's strides alone (no pointers read):
//  * orientation: cuBLASLt is column-major, so a row-major out (unit column
//    stride) is computed as out^T = b^T a^T ("T"), a column-major out as
//    out = a b ("N"); every matrix must then be a plain or transposed
//    column-major matrix (a unit stride along one axis, leading stride >= the
//    other extent), else Unsupported naming it;
//  * the epilogue: bias / relu / tanh-GELU (with aux) fused where cuBLASLt
//    has them; erf-GELU, and any epilogue cuBLASLt refuses for the dtype, as
//    passes after a plain GEMM (the pre-activation is written to aux when it
//    is saved, else to out);
//  * c: read directly when it is a matrix in the same orientation, else
//    copied (broadcast) into the GEMM's destination first (then C = D);
//  * batch: a broadcast b with row-contiguous a / out batches folds into m;
//    batch dims that collapse into one stride per operand are one strided
//    batch, the others a host loop;
//  * K = 0: no GEMM at all, one pass out = beta*c + bias (then the activation).
// The route's name is the plan's sku().variant.
#pragma once
#include <cstddef>
#include <string>

#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"
#include "ops/gemm/problem.hpp"

namespace baracuda::gemm::lt {

struct Config {
  const char* plan = "";
  int device = 0;
  bool tf32 = false;
  size_t workspace_limit = 0;
  bool fuse = true;  // fused epilogues allowed (warm() clears it when cuBLASLt refuses them)
  bool dgelu = true;  // the DGELU epilogue allowed (PlanPreference::variant "dgelu=0" turns it off)
  bool bgrad = true;  // bias-gradient epilogues (BGRAD*, DGELU_BGRAD) allowed ("bgrad=0")
  // The caller's names of the operands, for messages (LinearPlan: x, weight^T, y).
  const char* a_name = "a";
  const char* b_name = "b";
  const char* out_name = "out";
};

// The plan of one Problem's execution. Opaque to the plans except `variant`.
struct Route {
  std::string variant;
  bool k_zero = false;   // no GEMM: affine pass
  bool copy_c = false;   // c copied into dst before the GEMM
  bool to_aux = false;   // the GEMM's destination is aux (the pre-activation), else out
  bool fused_act = false, fused_bias = false, fused_aux = false;
  bool fused_dact = false;     // the dact gradient in the epilogue (DGELU), else a pass
  bool colsum_done = false;    // out_colsum written by the epilogue (DGELU_BGRAD); else the caller reduces
  bool orient_t = true;
  bool fold = false;     // batch folded into m
  int outer_rank = 0;    // host-loop dims (outermost first)
  int64_t outer[kMaxRank] = {};
  int lt_batch_dim = -1;  // the batch dim (after folding) cuBLASLt strides over, or -1
};

// Plans p (m, n > 0). Unsupported when an operand's matrix layout cannot be
// read by cuBLASLt; InvalidProblem for a malformed problem.
Result<Route> plan_route(const Problem& p, const Config& cfg);

// Runs the route: the passes and cuBLASLt calls on the stream. Queries the
// heuristics (cached) unless the stream is capturing a CUDA graph.
Status execute(const Route& r, const Problem& p, const Config& cfg, const Stream& stream, void* ws, size_t ws_bytes);

// Warms the heuristics' cache for p (select()) and returns its route: fused
// epilogues where cuBLASLt has a kernel for them, else (cfg.fuse cleared) a
// plain GEMM with passes.
Result<Route> warm(const Problem& p, Config& cfg);

}  // namespace baracuda::gemm::lt
