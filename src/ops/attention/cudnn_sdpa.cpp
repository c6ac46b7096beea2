// cuDNN 9 backend-API route for flash attention (see attention::cudnn_sdpa.hpp).
#include "ops/attention/cudnn_sdpa.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "backends/cudnn/library.hpp"
#include "core/align.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#define BARACUDA_CUDNN_SDPA 1
#include <cudnn.h>

#include "backends/cudnn/execution_plan.hpp"
#include "backends/cudnn/graph.hpp"
#include "backends/cudnn/handle.hpp"
#include "backends/cudnn/plan_cache.hpp"
#include "core/capture.hpp"
#endif

namespace baracuda::attention::cudnn_sdpa {

namespace {

constexpr const char* kFwd = "FlashSdpaPlan";
constexpr const char* kBwd = "FlashSdpaBackwardPlan";

using cudnn::unsupported;  // "<plan>: cuDNN: <what>"

std::string row_major_str(int64_t a, int64_t b, int64_t c) {
  std::string s(1, '[');
  s += std::to_string(a);
  s += ',';
  s += std::to_string(b);
  s += ',';
  s += std::to_string(c);
  s += ']';
  return s;
}

using baracuda::detail::is_aligned16;

Status check_common(const char* plan, const attention::cuda::FlashFwdParams& p) {
  if (!(p.dtype == DType::F16 || p.dtype == DType::BF16))
    return unsupported(plan, "dtype " + std::string(dtype_name(p.dtype)) + " (f16 and bf16 only)");
  if (p.cu_q || p.cu_kv) return unsupported(plan, "varlen (packed) batches are not supported");
  if (p.mask || p.alibi || p.softcap != 0.0 || p.window_left >= 0 || p.window_right >= 0)
    return unsupported(plan, "mask, ALiBi, softcap and sliding windows are not supported");
  struct View {
    const char* name;
    const void* ptr;
    int64_t sb, sh, ss, n1, n2;
  };
  const View views[] = {{"q", p.q, p.q_sb, p.q_sh, p.q_ss, p.heads, p.q_len},
                        {"k", p.k, p.k_sb, p.k_sh, p.k_ss, p.kv_heads, p.kv_len},
                        {"v", p.v, p.v_sb, p.v_sh, p.v_ss, p.kv_heads, p.kv_len},
                        {"y", p.y, p.y_sb, p.y_sh, p.y_ss, p.heads, p.q_len}};
  for (const View& v : views) {
    if (v.ptr && !is_aligned16(v.ptr)) return unsupported(plan, std::string(v.name) + " must be 16-byte aligned");
    if ((p.batch > 1 && v.sb <= 0) || (v.n1 > 1 && v.sh <= 0) || (v.n2 > 1 && v.ss <= 0))
      return unsupported(plan, std::string(v.name) + " strides must be positive (no stride-0 broadcast)");
  }
  if (p.lse) {
    if (!is_aligned16(p.lse)) return unsupported(plan, "lse must be 16-byte aligned");
    const bool packed = (p.q_len <= 1 || p.lse_ss == 1) && (p.heads <= 1 || p.lse_sh == p.q_len) &&
                        (p.batch <= 1 || p.lse_sb == int64_t{p.heads} * p.q_len);
    if (!packed)
      return unsupported(plan, "lse must be a packed [B,H,Q] tensor (strides " +
                                   row_major_str(int64_t{p.heads} * p.q_len, p.q_len, 1) + "), got strides " +
                                   row_major_str(p.lse_sb, p.lse_sh, p.lse_ss));
  }
  return Status::ok();
}

// cuDNN up to 9.15.0 scores the zero-padded tail of the last 128-wide key tile
// as 0 instead of -inf in the backward: exp(0 - lse) overflows to inf for rows
// with lse < -88.7 and inf * 0 turns dQ/dK/dV into NaN (cudnn-frontend works
// around it with a padding mask; fixed in 9.15.1). Such kv_len are left to the
// bespoke kernels there.
constexpr const char* kTailBug =
    "backward with kv_len not a multiple of 128 needs cuDNN >= 9.15.1 (older versions give NaN gradients for rows "
    "with lse < -88.7)";
bool backward_tail_safe(int64_t kv_len) { return kv_len % 128 == 0 || version() > 91500; }

}  // namespace

Status check_forward(const attention::cuda::FlashFwdParams& p) { return check_common(kFwd, p); }

Status check_backward(const attention::cuda::FlashBwdParams& p) {
  BARACUDA_RETURN_IF_ERROR(check_common(kBwd, p));
  if (!p.lse) return unsupported(kBwd, "the backward needs the forward's lse");
  if (!backward_tail_safe(p.kv_len)) return unsupported(kBwd, kTailBug);
  struct View {
    const char* name;
    const void* ptr;
    int64_t sb, sh, ss, n1, n2;
  };
  const View views[] = {{"dy", p.dy, p.dy_sb, p.dy_sh, p.dy_ss, p.heads, p.q_len},
                        {"dq", p.dq, p.dq_sb, p.dq_sh, p.dq_ss, p.heads, p.q_len},
                        {"dk", p.dk, p.dk_sb, p.dk_sh, p.dk_ss, p.kv_heads, p.kv_len},
                        {"dv", p.dv, p.dv_sb, p.dv_sh, p.dv_ss, p.kv_heads, p.kv_len}};
  for (const View& v : views) {
    if (v.ptr && !is_aligned16(v.ptr)) return unsupported(kBwd, std::string(v.name) + " must be 16-byte aligned");
    if ((p.batch > 1 && v.sb <= 0) || (v.n1 > 1 && v.sh <= 0) || (v.n2 > 1 && v.ss <= 0))
      return unsupported(kBwd, std::string(v.name) + " strides must be positive (no stride-0 broadcast)");
  }
  if (p.workspace && !is_aligned16(p.workspace)) return unsupported(kBwd, "workspace must be 16-byte aligned");
  return Status::ok();
}

attention::cuda::FlashFwdParams canonical_forward(const FlashSdpaDescriptor& d) {
  attention::cuda::FlashFwdParams p;
  p.dtype = d.dtype;
  p.batch = static_cast<int>(d.batch);
  p.heads = static_cast<int>(d.heads);
  p.kv_heads = static_cast<int>(d.kv_heads);
  p.q_len = static_cast<int>(d.q_len);
  p.kv_len = static_cast<int>(d.kv_len);
  p.head_dim = static_cast<int>(d.head_dim);
  const int64_t D = d.head_dim;
  p.q_ss = p.y_ss = D;
  p.q_sh = p.y_sh = d.q_len * D;
  p.q_sb = p.y_sb = d.heads * d.q_len * D;
  p.k_ss = p.v_ss = D;
  p.k_sh = p.v_sh = d.kv_len * D;
  p.k_sb = p.v_sb = d.kv_heads * d.kv_len * D;
  p.lse_ss = 1;
  p.lse_sh = d.q_len;
  p.lse_sb = d.heads * d.q_len;
  p.scale = d.scale ? *d.scale : 1.0;
  p.causal = d.causal;
  p.bottom_right = d.align == DiagonalAlign::BottomRight;
  // A non-null marker: the canonical forward writes stats unless the
  // descriptor is inference-only (save_lse false: no stats output, the graph
  // run() will ask for). Never dereferenced by prepare_forward().
  p.lse = d.save_lse ? reinterpret_cast<float*>(uintptr_t{256}) : nullptr;
  return p;
}

attention::cuda::FlashBwdParams canonical_backward(const FlashSdpaDescriptor& d) {
  attention::cuda::FlashBwdParams p;
  static_cast<attention::cuda::FlashFwdParams&>(p) = canonical_forward(d);
  p.dy_ss = p.dq_ss = p.y_ss;
  p.dy_sh = p.dq_sh = p.y_sh;
  p.dy_sb = p.dq_sb = p.y_sb;
  p.dk_ss = p.dv_ss = p.k_ss;
  p.dk_sh = p.dv_sh = p.k_sh;
  p.dk_sb = p.dv_sb = p.k_sb;
  return p;
}

bool supports(const FlashSdpaDescriptor& d, int arch, bool backward, std::string* why) {
  auto no = [&](const std::string& m) {
    if (why) *why = m;
    return false;
  };
  if (!available()) return no(cudnn::unavailable_reason());
  if (!(d.dtype == DType::F16 || d.dtype == DType::BF16)) return no("dtype " + std::string(dtype_name(d.dtype)) + " (f16 and bf16 only)");
  if (arch < 80) return no("needs sm_80 or newer, device is sm_" + std::to_string(arch));
  if (d.varlen) return no("varlen (packed) batches are not supported");
  if (d.has_mask) return no("an additive mask is not supported");
  if (d.alibi != AlibiMode::None) return no("ALiBi is not supported");
  if (d.softcap != 0.0) return no("softcap is not supported");
  if (d.window_left >= 0 || d.window_right >= 0) return no("sliding windows are not supported");
  if (d.batch < 1 || d.q_len < 1 || d.kv_len < 1) return no("empty problem");
  if (d.kv_heads < 1 || d.heads % d.kv_heads != 0) return no("heads must be a multiple of kv_heads");
  if (d.head_dim % 8 != 0) return no("head_dim must be a multiple of 8");
  const bool hopper = arch >= 90 && arch < 100;
  const bool blackwell_dc = arch >= 100 && arch < 120;
  const int64_t max_d = (hopper || (blackwell_dc && !backward)) ? 256 : 128;
  if (d.head_dim > max_d)
    return no("head_dim " + std::to_string(d.head_dim) + " > " + std::to_string(max_d) + " on sm_" + std::to_string(arch));
  if (d.causal && d.align == DiagonalAlign::BottomRight && d.q_len > d.kv_len)
    return no("bottom-right causal needs q_len <= kv_len (rows with no key are not expressible)");
  if (d.causal && d.align == DiagonalAlign::BottomRight && version() < 90600 && (d.q_len % 64 != 0 || d.kv_len % 64 != 0))
    return no("bottom-right causal needs q_len and kv_len multiples of 64 before cuDNN 9.6");
  if (backward && !backward_tail_safe(d.kv_len)) return no(kTailBug);
  if (d.scale && !std::isfinite(*d.scale)) return no("scale must be finite");
  return true;
}

bool available() { return cudnn::available(); }
size_t version() { return cudnn::version(); }

// ============================================================================
#ifndef BARACUDA_CUDNN_SDPA

Result<PlanInfo> prepare_forward(const attention::cuda::FlashFwdParams&) {
  return unsupported(kFwd, "this build has no cuDNN");
}
Result<PlanInfo> prepare_backward(const attention::cuda::FlashBwdParams&, bool) {
  return unsupported(kBwd, "this build has no cuDNN");
}
Status forward(const attention::cuda::FlashFwdParams&, void*, void*, size_t) { return unsupported(kFwd, "this build has no cuDNN"); }
Status backward(const attention::cuda::FlashBwdParams&, void*, bool) { return unsupported(kBwd, "this build has no cuDNN"); }
Status probe_forward(const attention::cuda::FlashFwdParams&, void*, void*, size_t) {
  return unsupported(kFwd, "this build has no cuDNN");
}
Status probe_backward(const attention::cuda::FlashBwdParams&, void*, bool) { return unsupported(kBwd, "this build has no cuDNN"); }

#else  // BARACUDA_CUDNN_SDPA

namespace {

// Fixed tensor uids of the non-virtual operands; virtual tensors count up from kFirstVirtual.
enum Uid : int64_t {
  kQ = 1, kK, kV, kO, kStats, kScale, kNegInf, kSkv, kSq, kDO, kDQ, kDK, kDV, kOne, kRowSum, kDQAcc,
  kFirstVirtual = 100,
};

constexpr size_t kAlign = 256;
size_t round_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

using Shape4 = std::array<int64_t, 4>;
using cudnn::OperationGraph;

// The four strides of a [n0,n1,n2,n3] view after the cuDNN-facing clean-up:
// a dimension of extent 1 gets the outermost stride of the view (its value is
// never used; cuDNN only sees a tidy, non-overlapping layout).
Shape4 tidy(Shape4 n, Shape4 s) {
  int64_t outer = 1;
  for (int i = 0; i < 4; ++i)
    if (n[i] > 1) outer = std::max(outer, s[i] * n[i]);
  for (int i = 0; i < 4; ++i)
    if (n[i] <= 1) s[i] = outer;
  return s;
}

Shape4 packed(const Shape4& n) { return {n[1] * n[2] * n[3], n[2] * n[3], n[3], 1}; }

// x with the keys a causal mask forbids set to -inf: keep col <= row (+ skv - sq).
cudnnBackendDescriptor_t causal_mask(OperationGraph& g, cudnnBackendDescriptor_t x, const Shape4& dims,
                                     bool bottom_right) {
  cudnnBackendDescriptor_t row = g.virtual_tensor(CUDNN_DATA_INT32, dims);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, row, CUDNN_DATA_FLOAT, 2);
  cudnnBackendDescriptor_t col = g.virtual_tensor(CUDNN_DATA_INT32, dims);
  g.pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, col, CUDNN_DATA_FLOAT, 3);
  if (bottom_right) {
    cudnnBackendDescriptor_t plus = g.virtual_tensor(CUDNN_DATA_INT32, dims);
    g.pointwise(CUDNN_POINTWISE_ADD, row, g.scalar(kSkv, CUDNN_DATA_INT32), plus, CUDNN_DATA_INT32, 3);
    cudnnBackendDescriptor_t shifted = g.virtual_tensor(CUDNN_DATA_INT32, dims);
    g.pointwise(CUDNN_POINTWISE_SUB, plus, g.scalar(kSq, CUDNN_DATA_INT32), shifted, CUDNN_DATA_INT32, 3);
    row = shifted;
  }
  cudnnBackendDescriptor_t keep = g.virtual_tensor(CUDNN_DATA_BOOLEAN, dims);
  g.pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep, CUDNN_DATA_BOOLEAN);
  cudnnBackendDescriptor_t y = g.virtual_tensor(CUDNN_DATA_FLOAT, dims);
  g.pointwise(CUDNN_POINTWISE_BINARY_SELECT, x, g.scalar(kNegInf, CUDNN_DATA_FLOAT), y, CUDNN_DATA_FLOAT, -1, keep);
  return y;
}

cudnnDataType_t io_type(DType t) { return t == DType::F16 ? CUDNN_DATA_HALF : CUDNN_DATA_BFLOAT16; }

// One problem, as the graph sees it (strides tidied).
struct Problem {
  bool backward = false, deterministic = true, stats = true, causal = false, bottom_right = false;
  DType dtype = DType::BF16;
  int64_t b = 0, h = 0, hk = 0, sq = 0, skv = 0, d = 0;
  Shape4 q{}, k{}, v{}, o{}, dout{}, dq{}, dk{}, dv{};  // element strides of [B,H,S,D] views

  std::vector<int64_t> key() const {
    std::vector<int64_t> k_{backward, deterministic, stats, causal, bottom_right, static_cast<int64_t>(dtype), b, h, hk, sq, skv, d};
    for (const Shape4* s : {&q, &k, &v, &o, &dout, &dq, &dk, &dv}) k_.insert(k_.end(), s->begin(), s->end());
    return k_;
  }
};

Shape4 view4(int64_t b, int64_t h, int64_t s, int64_t d, int64_t sb, int64_t sh, int64_t ss) {
  return tidy({b, h, s, d}, {sb, sh, ss, 1});
}

Problem problem_of(const attention::cuda::FlashFwdParams& p) {
  Problem pr;
  pr.dtype = p.dtype;
  pr.b = p.batch;
  pr.h = p.heads;
  pr.hk = p.kv_heads;
  pr.sq = p.q_len;
  pr.skv = p.kv_len;
  pr.d = p.head_dim;
  pr.causal = p.causal;
  pr.bottom_right = p.causal && p.bottom_right;
  pr.stats = p.lse != nullptr;
  pr.q = view4(pr.b, pr.h, pr.sq, pr.d, p.q_sb, p.q_sh, p.q_ss);
  pr.k = view4(pr.b, pr.hk, pr.skv, pr.d, p.k_sb, p.k_sh, p.k_ss);
  pr.v = view4(pr.b, pr.hk, pr.skv, pr.d, p.v_sb, p.v_sh, p.v_ss);
  pr.o = view4(pr.b, pr.h, pr.sq, pr.d, p.y_sb, p.y_sh, p.y_ss);
  return pr;
}

Problem problem_of(const attention::cuda::FlashBwdParams& p, bool deterministic) {
  Problem pr = problem_of(static_cast<const attention::cuda::FlashFwdParams&>(p));
  pr.backward = true;
  pr.deterministic = deterministic;
  pr.stats = true;
  pr.dout = view4(pr.b, pr.h, pr.sq, pr.d, p.dy_sb, p.dy_sh, p.dy_ss);
  pr.dq = view4(pr.b, pr.h, pr.sq, pr.d, p.dq_sb, p.dq_sh, p.dq_ss);
  pr.dk = view4(pr.b, pr.hk, pr.skv, pr.d, p.dk_sb, p.dk_sh, p.dk_ss);
  pr.dv = view4(pr.b, pr.hk, pr.skv, pr.d, p.dv_sb, p.dv_sh, p.dv_ss);
  return pr;
}

// [B,H,S,D] strides of the transposed [B,H,D,S] view.
Shape4 transposed(const Shape4& s) { return {s[0], s[1], s[3], s[2]}; }

void build_forward(OperationGraph& g, const Problem& p) {
  const cudnnDataType_t io = io_type(p.dtype), f32 = CUDNN_DATA_FLOAT;
  const Shape4 sdims{p.b, p.h, p.sq, p.skv}, rows{p.b, p.h, p.sq, 1};
  const Shape4 qdims{p.b, p.h, p.sq, p.d}, ktdims{p.b, p.hk, p.d, p.skv}, kdims{p.b, p.hk, p.skv, p.d};
  auto q = g.tensor(kQ, io, qdims, p.q);
  auto kt = g.tensor(kK, io, ktdims, transposed(p.k));
  auto v = g.tensor(kV, io, kdims, p.v);
  auto o = g.tensor(kO, io, qdims, p.o);
  auto s = g.virtual_tensor(f32, sdims);
  g.matmul(q, kt, s);
  auto scaled = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_MUL, s, g.scalar(kScale, f32), scaled);
  auto x = p.causal ? causal_mask(g, scaled, sdims, p.bottom_right) : scaled;
  // softmax with stats = max + log(sum(exp(x - max)))
  auto mx = g.virtual_tensor(f32, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, x, mx);
  auto centred = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_SUB, x, mx, centred);
  auto e = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_EXP, centred, nullptr, e);
  auto sum = g.virtual_tensor(f32, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  if (p.stats) {
    auto lg = g.virtual_tensor(f32, rows);
    g.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
    auto stats = g.tensor(kStats, f32, rows, packed(rows));
    g.pointwise(CUDNN_POINTWISE_ADD, mx, lg, stats);
  }
  auto prob = g.virtual_tensor(io, sdims);  // bmm2 takes P in the I/O type
  g.pointwise(CUDNN_POINTWISE_DIV, e, sum, prob);
  g.matmul(prob, v, o);
}

void build_backward(OperationGraph& g, const Problem& p) {
  const cudnnDataType_t io = io_type(p.dtype), f32 = CUDNN_DATA_FLOAT;
  const Shape4 sdims{p.b, p.h, p.sq, p.skv}, tdims{p.b, p.h, p.skv, p.sq}, rows{p.b, p.h, p.sq, 1};
  const Shape4 qdims{p.b, p.h, p.sq, p.d}, kdims{p.b, p.hk, p.skv, p.d}, ktdims{p.b, p.hk, p.d, p.skv};
  const Shape4 fulldims{p.b, p.h, p.skv, p.d};  // per query head, before the GQA sum
  const Shape4 tstrides{p.h * p.sq * p.skv, p.sq * p.skv, 1, p.skv};  // [B,H,K,Q] view of a packed [B,H,Q,K]
  auto q = g.tensor(kQ, io, qdims, p.q);
  auto kt = g.tensor(kK, io, ktdims, transposed(p.k));
  auto vt = g.tensor(kV, io, ktdims, transposed(p.v));
  auto o = g.tensor(kO, io, qdims, p.o);
  auto dout = g.tensor(kDO, io, qdims, p.dout);
  auto stats = g.tensor(kStats, f32, rows, packed(rows));
  auto dq = g.tensor(kDQ, io, qdims, p.dq);
  auto dk = g.tensor(kDK, io, kdims, p.dk);
  auto dv = g.tensor(kDV, io, kdims, p.dv);
  auto scale = g.scalar(kScale, f32);

  // rowsum(dO * O) into f32 workspace
  auto prod = g.virtual_tensor(f32, qdims);
  g.pointwise(CUDNN_POINTWISE_MUL, dout, o, prod);
  auto rs = g.virtual_tensor(f32, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, prod, rs);
  auto rowsum = g.tensor(kRowSum, f32, rows, packed(rows));
  g.pointwise(CUDNN_POINTWISE_MUL, rs, g.scalar(kOne, f32), rowsum);

  // P = exp(S * scale - stats) (masked)
  auto s = g.virtual_tensor(f32, sdims);
  g.matmul(q, kt, s);
  auto scaled = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_MUL, s, scale, scaled);
  auto centred = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_SUB, scaled, stats, centred);
  auto x = p.causal ? causal_mask(g, centred, sdims, p.bottom_right) : centred;
  auto prob = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_EXP, x, nullptr, prob);

  // dV = P^T . dO (summed over each kv head's query heads for GQA)
  auto prob_t = g.virtual_tensor(io, tdims, tstrides);
  g.reshape(prob, prob_t);
  if (p.h == p.hk) {
    g.matmul(prob_t, dout, dv);
  } else {
    auto full = g.virtual_tensor(io, fulldims);
    g.matmul(prob_t, dout, full);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, dv);
  }

  // dS = P * (dO . V^T - rowsum) * scale
  auto dp = g.virtual_tensor(f32, sdims);
  g.matmul(dout, vt, dp);
  auto dp_c = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_SUB, dp, rowsum, dp_c);
  auto dsu = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_MUL, dp_c, prob, dsu);
  auto ds = g.virtual_tensor(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_MUL, dsu, scale, ds);

  // dK = dS^T . Q
  auto ds_t = g.virtual_tensor(io, tdims, tstrides);
  g.reshape(ds, ds_t);
  if (p.h == p.hk) {
    g.matmul(ds_t, q, dk);
  } else {
    auto full = g.virtual_tensor(io, fulldims);
    g.matmul(ds_t, q, full);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, dk);
  }

  // dQ = dS . K (K as a reshape of the K^T input)
  auto k = g.virtual_tensor(f32, kdims, p.k);
  g.reshape(kt, k);
  if (p.deterministic) {
    g.matmul(ds, k, dq);
  } else {
    auto acc = g.tensor(kDQAcc, f32, qdims, packed(qdims));
    g.matmul(ds, k, acc);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, acc, nullptr, dq);
  }
}

// A cached plan and what running it needs: the execution plan, the layout of
// the caller's workspace (the backward's f32 row sums and dQ accumulator, then
// cuDNN's scratch) and the by-value scalars bound at execution.
struct Built {
  cudnn::ExecutionPlan exec;
  size_t rowsum_off = 0, dqacc_off = 0, cudnn_off = 0;  // offsets in the caller's workspace
  PlanInfo info;
  int32_t skv = 0, sq = 0;
  float neg_inf = -std::numeric_limits<float>::infinity();
  float one = 1.0f;
};

// Plans of both directions, per device and problem key.
cudnn::PlanCache<Built>& plan_cache() {
  static cudnn::PlanCache<Built> cache;  // destroyed at exit (the descriptors, not the handles)
  return cache;
}

// Builds the plan for `p` on the leased device's handle.
Result<std::unique_ptr<Built>> build(const char* plan_name, cudnn::HandleLease& lease, const Problem& p) {
  auto handle = lease.handle(plan_name);
  if (!handle) return handle.status();
  OperationGraph g(plan_name, kFirstVirtual);
  if (p.backward) build_backward(g, p);
  else build_forward(g, p);
  g.finalize(*handle, "finalizing the operation graph (cuDNN does not recognise it as fused attention)");
  auto exec = cudnn::build_execution_plan(plan_name, *handle, std::move(g), "attention graph");
  if (!exec) return exec.status();
  auto b = std::make_unique<Built>();
  b->exec = std::move(*exec);
  b->skv = static_cast<int32_t>(p.skv);
  b->sq = static_cast<int32_t>(p.sq);
  b->info.deterministic = p.deterministic && !b->exec.engine_nondeterministic;
  b->info.engine = b->exec.engine;
  size_t off = 0;
  if (p.backward) {
    b->rowsum_off = off;
    off += round_up(static_cast<size_t>(p.b * p.h * p.sq) * sizeof(float));
    if (!p.deterministic) {
      b->dqacc_off = off;
      off += round_up(static_cast<size_t>(p.b * p.h * p.sq * p.d) * sizeof(float));
    }
  }
  b->cudnn_off = off;
  b->info.workspace_bytes = b->exec.workspace_bytes ? off + b->exec.workspace_bytes : off;
  return b;
}

// Finds or builds the plan for `p` (lease held). `capturing`: never build.
Result<Built*> get_plan(const char* plan_name, cudnn::HandleLease& lease, const Problem& p, bool capturing) {
  return plan_cache().find_or_build(plan_name, lease.device(), p.key(), capturing,
                                    [&] { return build(plan_name, lease, p); });
}

Result<PlanInfo> prepare(const char* plan_name, const Problem& p) {
  auto dev = cudnn::current_device(plan_name);
  if (!dev) return dev.status();
  cudnn::HandleLease lease = cudnn::lease_handle(*dev);
  auto b = get_plan(plan_name, lease, p, /*capturing=*/false);
  if (!b) return b.status();
  return (*b)->info;
}

// Runs the plan: uids/pointers of the non-virtual tensors plus the scratch.
// launch = false: every check, then Ok without touching the stream (probe_*).
Status execute(const char* plan_name, const Problem& p, void* stream, void* workspace, size_t ws_bytes,
               std::vector<std::pair<int64_t, void*>> io, float scale, bool launch) {
  auto dev = cudnn::current_device(plan_name);
  if (!dev) return dev.status();
  const bool capturing = baracuda::detail::native_stream_is_capturing(stream);
  cudnn::HandleLease lease = cudnn::lease_handle(*dev);
  auto got = get_plan(plan_name, lease, p, capturing);
  if (!got) return got.status();
  Built& b = **got;
  if (ws_bytes < b.info.workspace_bytes)
    return Status(StatusCode::WorkspaceTooSmall,
                  std::string(plan_name) + ": cuDNN: workspace of " + std::to_string(ws_bytes) + " bytes, this plan needs " +
                      std::to_string(b.info.workspace_bytes),
                  b.info.workspace_bytes, ws_bytes);
  if (b.info.workspace_bytes && (!workspace || !is_aligned16(workspace)))
    return unsupported(plan_name, "workspace must be a 16-byte aligned device pointer");
  if (!launch) return Status::ok();
  char* ws = static_cast<char*>(workspace);
  io.emplace_back(kScale, &scale);
  if (p.causal) io.emplace_back(kNegInf, &b.neg_inf);
  if (p.causal && p.bottom_right) {
    io.emplace_back(kSkv, &b.skv);
    io.emplace_back(kSq, &b.sq);
  }
  if (p.backward) {
    io.emplace_back(kOne, &b.one);
    io.emplace_back(kRowSum, ws + b.rowsum_off);
    if (!p.deterministic) io.emplace_back(kDQAcc, ws + b.dqacc_off);
  }
  std::vector<int64_t> uids;
  std::vector<void*> ptrs;
  for (auto& [u, ptr] : io) {
    uids.push_back(u);
    ptrs.push_back(ptr);
  }
  void* cudnn_ws = b.exec.workspace_bytes ? ws + b.cudnn_off : nullptr;
  return cudnn::execute(plan_name, lease, stream, b.exec, uids, ptrs, cudnn_ws);
}

}  // namespace

Result<PlanInfo> prepare_forward(const attention::cuda::FlashFwdParams& p) {
  BARACUDA_RETURN_IF_ERROR(check_common(kFwd, p));
  if (!available()) return unsupported(kFwd, cudnn::unavailable_reason());
  return prepare(kFwd, problem_of(p));
}

Result<PlanInfo> prepare_backward(const attention::cuda::FlashBwdParams& p, bool deterministic) {
  BARACUDA_RETURN_IF_ERROR(check_backward(p));
  if (!available()) return unsupported(kBwd, cudnn::unavailable_reason());
  return prepare(kBwd, problem_of(p, deterministic));
}

namespace {
Status run_forward(const attention::cuda::FlashFwdParams& p, void* stream, void* workspace, size_t workspace_bytes,
                   bool launch) {
  BARACUDA_RETURN_IF_ERROR(check_forward(p));
  if (!available()) return unsupported(kFwd, cudnn::unavailable_reason());
  if (!p.q || !p.k || !p.v || !p.y) return Status(StatusCode::InvalidProblem, std::string(kFwd) + ": cuDNN: null tensor pointer");
  std::vector<std::pair<int64_t, void*>> io{{kQ, const_cast<void*>(p.q)}, {kK, const_cast<void*>(p.k)},
                                            {kV, const_cast<void*>(p.v)}, {kO, p.y}};
  if (p.lse) io.emplace_back(kStats, p.lse);
  return execute(kFwd, problem_of(p), stream, workspace, workspace_bytes, std::move(io), static_cast<float>(p.scale),
                 launch);
}

Status run_backward(const attention::cuda::FlashBwdParams& p, void* stream, bool deterministic, bool launch) {
  BARACUDA_RETURN_IF_ERROR(check_backward(p));
  if (!available()) return unsupported(kBwd, cudnn::unavailable_reason());
  if (!p.q || !p.k || !p.v || !p.y || !p.dy || !p.dq || !p.dk || !p.dv)
    return Status(StatusCode::InvalidProblem, std::string(kBwd) + ": cuDNN: null tensor pointer");
  std::vector<std::pair<int64_t, void*>> io{
      {kQ, const_cast<void*>(p.q)}, {kK, const_cast<void*>(p.k)}, {kV, const_cast<void*>(p.v)},
      {kO, p.y},                    {kStats, p.lse},               {kDO, const_cast<void*>(p.dy)},
      {kDQ, p.dq},                  {kDK, p.dk},                   {kDV, p.dv}};
  return execute(kBwd, problem_of(p, deterministic), stream, p.workspace, p.workspace_bytes, std::move(io),
                 static_cast<float>(p.scale), launch);
}
}  // namespace

Status forward(const attention::cuda::FlashFwdParams& p, void* stream, void* workspace, size_t workspace_bytes) {
  return run_forward(p, stream, workspace, workspace_bytes, true);
}
Status backward(const attention::cuda::FlashBwdParams& p, void* stream, bool deterministic) {
  return run_backward(p, stream, deterministic, true);
}
Status probe_forward(const attention::cuda::FlashFwdParams& p, void* stream, void* workspace, size_t workspace_bytes) {
  return run_forward(p, stream, workspace, workspace_bytes, false);
}
Status probe_backward(const attention::cuda::FlashBwdParams& p, void* stream, bool deterministic) {
  return run_backward(p, stream, deterministic, false);
}

#endif  // BARACUDA_CUDNN_SDPA

}  // namespace baracuda::attention::cudnn_sdpa
