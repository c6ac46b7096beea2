// Forward reduction: algorithm choice, workspace sizing and the kind x dtype
// dispatch. The kernels themselves are compiled in the TUs generated from
// ../manifest.cmake (one per dtype; forward_common.cuh declares them extern).
//
// Strategy. T = 256 threads per block; V = 16 / sizeof(dtype); wave = sm_count x
// the blocks per SM the kernel's __launch_bounds__ guarantees (4, or 3 / 2 for
// register-heavy ops), i.e. how many blocks run at once. Splits never exceed
// one wave, so no partial second wave ever trails.
//  * red_numel == 0, or no reduced dim left      -> generic (init / finalize only)
//  * one reduced dim with stride 1 ("row"), nv = ceil(n / V):
//      num_out < wave and n >= 2 segments of T*V*4 -> "row-split": S = min(wave / num_out,
//        n / (T*V*4)) blocks per row (capped by the workspace), then the finalize kernel
//      otherwise G threads per row = the most that fit all rows in one wave (32 when
//        they cannot), at most nv/4 (full batches), at least 2 when nv > 4;
//        "row-warp" when nv <= 256 (short rows), "row-block" otherwise
//  * one reduced dim, some kept dim with stride 1 -> column kernel on that dim ("column");
//      (outer x column-tile) units < wave and a long reduced dim -> rows split over
//      grid.y ("column-split", S = wave / units) + finalize
//  * anything else                               -> generic kernel, G = min(T, pow2ceil(n/4))
//      threads per output, split like the row kernel when outputs are few ("generic-split")
// Split workspaces hold num_out * S partial states (+16 bytes so they can be
// 16-byte aligned inside any scratch pointer); the cap on S is computed from
// ws_bytes alone, so the bits never depend on where the scratch lives.
#include <algorithm>
#include <cstdint>
#include <string>

#include "core/int_math.hpp"
#include "ops/reduce/cuda/forward_common.cuh"
#include "ops/reduce/manifest.hpp"  // generated from ops/reduce/manifest.cmake

namespace baracuda::reduce::cuda {
namespace {

using fwd::Algo;
using fwd::FwdParams;
using fwd::kThreads;

constexpr int64_t kMaxSplits = 4096;
constexpr unsigned kGridPerSm = 32;  // grid.x cap (blocks loop beyond it)

using baracuda::detail::ceil_div;
using baracuda::detail::log2_ceil;
using baracuda::detail::pow2_ceil;
using baracuda::detail::pow2_floor;

// Calls f(Op{}) for the op that implements (kind, dtype); returns false when
// the combination is unsupported.
template <class F>
bool visit_op(ReduceKind kind, DType dtype, F&& f) {
  // The op lists of forward_common.cuh (BARACUDA_REDUCE_FWD_FLOAT_OPS / _INT_OPS).
  auto ops_FLOAT = [&](auto tag) -> bool {
    using T = decltype(tag);
    switch (kind) {
      case ReduceKind::Sum:
      case ReduceKind::Mean: f(fwd::SumOp<T>{}); return true;
      case ReduceKind::Prod: f(fwd::ProdOp<T>{}); return true;
      case ReduceKind::Max: f(fwd::MaxOp<T>{}); return true;
      case ReduceKind::Min: f(fwd::MinOp<T>{}); return true;
      case ReduceKind::Norm2: f(fwd::Norm2Op<T>{}); return true;
      case ReduceKind::LogSumExp: f(fwd::LseOp<T>{}); return true;
      case ReduceKind::Var:
      case ReduceKind::Std: f(fwd::VarOp<T>{}); return true;
      case ReduceKind::ArgMax: f(fwd::ArgMaxOp<T>{}); return true;
      case ReduceKind::ArgMin: f(fwd::ArgMinOp<T>{}); return true;
    }
    return false;
  };
  auto ops_INT = [&](auto tag) -> bool {
    using T = decltype(tag);
    switch (kind) {
      case ReduceKind::Sum: f(fwd::SumOp<T>{}); return true;
      case ReduceKind::Prod: f(fwd::ProdOp<T>{}); return true;
      case ReduceKind::Max: f(fwd::MaxOp<T>{}); return true;
      case ReduceKind::Min: f(fwd::MinOp<T>{}); return true;
      case ReduceKind::ArgMax: f(fwd::ArgMaxOp<T>{}); return true;
      case ReduceKind::ArgMin: f(fwd::ArgMinOp<T>{}); return true;
      default: return false;
    }
  };
  switch (dtype) {
#define CASE(DT, T, OPS) \
  case DType::DT: return ops_##OPS(T{});
    BARACUDA_REDUCE_FWD_KERNELS(CASE)
#undef CASE
    default: return false;
  }
}

size_t state_bytes(ReduceKind kind, DType dtype) {
  size_t b = 0;
  visit_op(kind, dtype, [&](auto op) { b = sizeof(typename decltype(op)::State); });
  return b;
}

int column_vec(ReduceKind kind, DType dtype) {
  int v = 1;
  visit_op(kind, dtype, [&](auto op) { v = fwd::col_vec<decltype(op)>(); });
  return v;
}

// Blocks per SM the kernel is guaranteed to fit (its __launch_bounds__):
// splits aim at one full wave of these, never a partial second wave.
enum class Kern { Row, ColumnScalar, ColumnVec, Generic };
int resident_blocks(ReduceKind kind, DType dtype, Kern k) {
  int b = 1;
  visit_op(kind, dtype, [&](auto op) {
    using Op = decltype(op);
    switch (k) {
      case Kern::Row: b = fwd::min_blocks<Op, 1>(); break;
      case Kern::ColumnScalar: b = fwd::min_blocks<Op, 1>(); break;
      case Kern::ColumnVec: b = fwd::min_blocks<Op, fwd::col_vec<Op>()>(); break;
      case Kern::Generic: b = fwd::generic_min_blocks<Op>(); break;
    }
  });
  return b;
}

template <class Op>
DType out_dtype_of() {
  using Out = typename Op::Out;
  if constexpr (std::is_same_v<Out, float>) return DType::F32;
  else if constexpr (std::is_same_v<Out, double>) return DType::F64;
  else if constexpr (std::is_same_v<Out, __half>) return DType::F16;
  else if constexpr (std::is_same_v<Out, __nv_bfloat16>) return DType::BF16;
  else if constexpr (std::is_same_v<Out, int32_t>) return DType::I32;
  else return DType::I64;
}

// Usable partial-state bytes of a scratch of ws_bytes (worst-case alignment pad).
size_t usable_ws(size_t ws_bytes) { return ws_bytes > 16 ? ws_bytes - 16 : 0; }

int64_t cap_splits(int64_t want, int64_t num_out, size_t sbytes, size_t ws_usable) {
  want = std::min(want, kMaxSplits);
  if (want <= 1) return 1;
  const int64_t fit = static_cast<int64_t>(ws_usable / (static_cast<size_t>(num_out) * sbytes));
  return std::max<int64_t>(1, std::min(want, fit));
}

// Last kept dim with unit input stride, or -1.
int unit_stride_kept_dim(const baracuda::detail::ReduceLayout& L) {
  for (int k = L.n_kept - 1; k >= 0; --k)
    if (L.kept_in_stride[k] == 1) return k;
  return -1;
}

// The launch configuration: a pure function of its arguments. `x` only
// matters through its 16-byte alignment (column vectorisation); null = aligned.
FwdParams plan(ReduceKind kind, DType dtype, const baracuda::detail::ReduceLayout& L, int sm_count, size_t ws_bytes,
               const void* x) {
  FwdParams P{};
  const int esize = static_cast<int>(dtype_size(dtype));
  const int V = 16 / esize;
  const size_t sbytes = state_bytes(kind, dtype);
  const size_t ws_usable = usable_ws(ws_bytes);
  const int64_t sms = std::max(sm_count, 1);
  const int64_t n = L.red_numel;
  const int64_t num_out = L.num_out;

  P.n_kept = L.n_kept;
  for (int k = 0; k < L.n_kept; ++k) {
    P.kept_size[k] = L.kept_size[k];
    P.kept_in[k] = L.kept_in_stride[k];
    P.kept_out[k] = L.kept_out_stride[k];
  }
  P.num_out = num_out;
  P.red_numel = n;
  P.splits = 1;
  P.seg_len = std::max<int64_t>(n, 1);
  P.vec = 1;
  int64_t blocks = 1;

  const int col_dim = unit_stride_kept_dim(L);
  if (n > 0 && L.n_red == 1 && L.red_stride[0] == 1) {
    // ---- row
    const int64_t nv = ceil_div(n, V);
    const int64_t wave = sms * resident_blocks(kind, dtype, Kern::Row);
    // A segment is a whole number of block-wide unrolled batches: every thread
    // issues full batches, and segment starts keep the row's 16-byte alignment.
    const int64_t quantum = int64_t{kThreads} * V * fwd::kRowUnroll;
    int64_t S = 1;
    if (num_out < wave) S = cap_splits(std::min(wave / num_out, n / quantum), num_out, sbytes, ws_usable);
    if (S > 1) {
      P.algo = Algo::RowSplit;
      P.group = kThreads;
      P.seg_len = ceil_div(ceil_div(n, S), quantum) * quantum;
      S = ceil_div(n, P.seg_len);
    } else {
      // Threads per row G: the most that still fit all rows into one wave of
      // resident blocks (each thread then streams a long stretch and each row
      // pays its combine tree once; more rows than that loop in the grid),
      // but no more than gives every lane a full batch of kRowUnroll vectors,
      // and 2+ when a row spans several batches (two lanes fill a 32-byte
      // sector in one load instruction).
      int64_t G = kThreads;
      while (G > 1 && num_out * G > wave * kThreads) G >>= 1;
      if (num_out * G > wave * kThreads) G = 32;
      G = std::min(G, pow2_floor(std::max<int64_t>(1, nv / fwd::kRowUnroll)));
      if (nv > fwd::kRowUnroll) G = std::max<int64_t>(G, 2);
      P.group = static_cast<int>(G);
      P.algo = nv <= 256 ? Algo::RowWarp : Algo::RowBlock;
    }
    P.splits = static_cast<int>(S);
    blocks = ceil_div(num_out, kThreads / P.group);
  } else if (n > 0 && L.n_red == 1 && col_dim >= 0) {
    // ---- column: move the unit-stride kept dim last (output ids follow this order)
    int64_t ks[kMaxRank], ki[kMaxRank], ko[kMaxRank];
    int m = 0;
    for (int k = 0; k < L.n_kept; ++k) {
      if (k == col_dim) continue;
      ks[m] = L.kept_size[k];
      ki[m] = L.kept_in_stride[k];
      ko[m] = L.kept_out_stride[k];
      ++m;
    }
    ks[m] = L.kept_size[col_dim];
    ki[m] = 1;
    ko[m] = L.kept_out_stride[col_dim];
    for (int k = 0; k < L.n_kept; ++k) {
      P.kept_size[k] = ks[k];
      P.kept_in[k] = ki[k];
      P.kept_out[k] = ko[k];
    }
    const int64_t C = ks[m];
    const int64_t R = n;
    const int64_t rs = L.red_stride[0];
    P.red_stride0 = rs;
    // Vectors need every vector start aligned: x, each outer stride, the row stride.
    const int cv = column_vec(kind, dtype);
    const int64_t vbytes = int64_t{cv} * esize;
    bool vec_ok = cv > 1 && C % cv == 0 && (reinterpret_cast<uintptr_t>(x) % vbytes) == 0;
    for (int k = 0; k < m && vec_ok; ++k) vec_ok = (ki[k] * esize) % vbytes == 0;
    if (R > 1) vec_ok = vec_ok && (rs * esize) % vbytes == 0;
    P.vec = vec_ok ? cv : 1;
    const int64_t ncv = C / P.vec;  // column vectors
    int64_t LX = std::min<int64_t>(32, pow2_ceil(ncv));
    // Short reduced dims: spend the idle row slots on more columns.
    while (kThreads / LX > R && LX * 2 <= std::min<int64_t>(kThreads, pow2_ceil(ncv))) LX *= 2;
    const int64_t RY = kThreads / LX;
    const int U = P.vec * esize >= 16 ? 4 : 8;  // as in column_kernel
    P.lx_log2 = log2_ceil(LX);
    const int64_t units = (num_out / C) * ceil_div(ncv, LX);
    const int64_t wave = sms * resident_blocks(kind, dtype, P.vec > 1 ? Kern::ColumnVec : Kern::ColumnScalar);
    const int64_t quantum = RY * U;  // rows of one full batch of every row slot
    int64_t S = 1;
    if (units < wave) S = cap_splits(std::min(wave / units, R / (quantum * 2)), num_out, sbytes, ws_usable);
    P.seg_len = ceil_div(ceil_div(R, S), quantum) * quantum;
    S = ceil_div(R, P.seg_len);
    P.splits = static_cast<int>(S);
    P.algo = S > 1 ? Algo::ColumnSplit : Algo::Column;
    blocks = units;
  } else {
    // ---- generic
    P.n_red = L.n_red;
    for (int k = 0; k < L.n_red; ++k) {  // innermost first
      P.rsize[k] = L.red_size[L.n_red - 1 - k];
      P.rstride[k] = L.red_stride[L.n_red - 1 - k];
    }
    P.rstride_top = L.n_red > 0 ? P.rstride[L.n_red - 1] : 0;
    const int64_t G = std::min<int64_t>(kThreads, pow2_ceil(ceil_div(std::max<int64_t>(n, 1), 4)));
    P.group = static_cast<int>(G);
    blocks = ceil_div(num_out, kThreads / G);
    int64_t S = 1;
    const int64_t wave = sms * resident_blocks(kind, dtype, Kern::Generic);
    if (G == kThreads && blocks < wave && n > 0) {
      S = cap_splits(std::min(wave / blocks, n / (kThreads * 16)), num_out, sbytes, ws_usable);
    }
    P.seg_len = ceil_div(std::max<int64_t>(n, 1), S);
    S = ceil_div(std::max<int64_t>(n, 1), P.seg_len);
    P.splits = static_cast<int>(S);
    P.algo = S > 1 ? Algo::GenericSplit : Algo::Generic;
    // The per-thread stride G in the mixed radix of the reduced dims.
    int64_t rem = G, off = 0;
    for (int k = 0; k < L.n_red && n > 0; ++k) {
      const bool top = k == L.n_red - 1;
      P.step_digit[k] = top ? rem : rem % P.rsize[k];
      off += P.step_digit[k] * P.rstride[k];
      if (!top) {
        rem /= P.rsize[k];
        P.carry_adj[k] = P.rstride[k + 1] - P.rsize[k] * P.rstride[k];
      }
    }
    P.step_off = off;
  }

  const int64_t grid_cap = sms * kGridPerSm;
  P.grid_x = static_cast<unsigned>(std::max<int64_t>(1, std::min(blocks, grid_cap)));
  P.fin_group = static_cast<int>(std::min<int64_t>(32, pow2_ceil(P.splits)));
  P.fin_grid_x = static_cast<unsigned>(
      std::max<int64_t>(1, std::min(ceil_div(num_out, kThreads / P.fin_group), grid_cap)));
  return P;
}

const char* algo_name(Algo a) {
  switch (a) {
    case Algo::RowWarp: return "row-warp";
    case Algo::RowBlock: return "row-block";
    case Algo::RowSplit: return "row-split";
    case Algo::Column: return "column";
    case Algo::ColumnSplit: return "column-split";
    case Algo::Generic: return "generic";
    case Algo::GenericSplit: return "generic-split";
  }
  return "?";
}

size_t needed_ws(const FwdParams& P, size_t sbytes) {
  if (P.splits <= 1) return 0;
  const size_t b = static_cast<size_t>(P.num_out) * static_cast<size_t>(P.splits) * sbytes;
  return (b + 15) / 16 * 16 + 16;
}

}  // namespace

size_t forward_workspace_bytes(ReduceKind kind, DType in_dtype, const baracuda::detail::ReduceLayout& contiguous_layout,
                               int sm_count) {
  const size_t sbytes = state_bytes(kind, in_dtype);
  if (sbytes == 0 || contiguous_layout.num_out <= 0) return 0;
  const FwdParams P = plan(kind, in_dtype, contiguous_layout, sm_count, SIZE_MAX, nullptr);
  return needed_ws(P, sbytes);
}

std::string forward_variant(ReduceKind kind, DType in_dtype, const baracuda::detail::ReduceLayout& layout, int sm_count) {
  if (state_bytes(kind, in_dtype) == 0) return "unsupported";
  return algo_name(plan(kind, in_dtype, layout, sm_count, SIZE_MAX, nullptr).algo);
}

std::string forward_variant_for(const ForwardLaunch& p) {
  if (p.layout.num_out <= 0) return "empty";
  if (state_bytes(p.kind, p.in_dtype) == 0) return "unsupported";
  return algo_name(plan(p.kind, p.in_dtype, p.layout, p.sm_count, p.ws != nullptr ? p.ws_bytes : 0, p.x).algo);
}

Status launch_forward(const ForwardLaunch& p) {
  if (p.layout.num_out <= 0) return Status::ok();
  Status st;
  bool matched_out = true;
  const bool supported = visit_op(p.kind, p.in_dtype, [&](auto op) {
    using Op = decltype(op);
    if (out_dtype_of<Op>() != p.out_dtype) {
      matched_out = false;
      return;
    }
    const size_t ws_bytes = p.ws != nullptr ? p.ws_bytes : 0;
    FwdParams P = plan(p.kind, p.in_dtype, p.layout, p.sm_count, ws_bytes, p.x);
    P.x = p.x;
    P.y = p.y;
    P.pdl = p.arch >= 90;
    if (P.splits > 1) {
      const uintptr_t a = reinterpret_cast<uintptr_t>(p.ws);
      P.ws = reinterpret_cast<void*>((a + 15) & ~uintptr_t{15});
    }
    P.fin = {p.correction, (p.kind == ReduceKind::Mean || p.kind == ReduceKind::Std) ? 1 : 0};
    st = fwd::launch_op<Op>(P, static_cast<cudaStream_t>(p.stream));
  });
  if (!supported) {
    return Status(StatusCode::Unsupported, std::string("ReducePlan: no CUDA kernel for ") + reduce_kind_name(p.kind) +
                                               " on " + std::string(dtype_name(p.in_dtype)));
  }
  if (!matched_out) {
    return Status(StatusCode::InvalidProblem, std::string("ReducePlan: output dtype ") +
                                                  std::string(dtype_name(p.out_dtype)) + " does not match " +
                                                  reduce_kind_name(p.kind) + " on " +
                                                  std::string(dtype_name(p.in_dtype)));
  }
  return st;
}

}  // namespace baracuda::reduce::cuda
