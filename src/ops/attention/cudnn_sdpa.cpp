// cuDNN 9 backend-API route for flash attention (see cudnn_sdpa.hpp).
#include "ops/attention/cudnn_sdpa.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

#include "core/align.hpp"

#if defined(BARACUDA_WITH_CUDNN) && defined(BARACUDA_WITH_CUDA)
#define BARACUDA_CUDNN_SDPA 1
#include <cuda_runtime.h>
#include <cudnn.h>
#endif

namespace baracuda::cudnn_sdpa {

namespace {

constexpr const char* kFwd = "FlashSdpaPlan";
constexpr const char* kBwd = "FlashSdpaBackwardPlan";

Status unsupported(const char* plan, const std::string& m) {
  return Status(StatusCode::Unsupported, std::string(plan) + ": cuDNN: " + m);
}

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

using detail::is_aligned16;

Status check_common(const char* plan, const cuda_flash::FlashFwdParams& p) {
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

Status check_forward(const cuda_flash::FlashFwdParams& p) { return check_common(kFwd, p); }

Status check_backward(const cuda_flash::FlashBwdParams& p) {
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

cuda_flash::FlashFwdParams canonical_forward(const FlashSdpaDescriptor& d) {
  cuda_flash::FlashFwdParams p;
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
  // A non-null marker: the canonical forward writes stats (FlashSdpaArgs::lse
  // is always given). Never dereferenced by prepare_forward().
  p.lse = reinterpret_cast<float*>(uintptr_t{256});
  return p;
}

cuda_flash::FlashBwdParams canonical_backward(const FlashSdpaDescriptor& d) {
  cuda_flash::FlashBwdParams p;
  static_cast<cuda_flash::FlashFwdParams&>(p) = canonical_forward(d);
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
  if (!available()) {
#ifdef BARACUDA_CUDNN_SDPA
    return no("cuDNN " + std::to_string(version()) + " is not usable (needs 9.x, not 9.10.0/9.10.1)");
#else
    return no("this build has no cuDNN (BARACUDA_WITH_CUDNN is off)");
#endif
  }
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

// ============================================================================
#ifndef BARACUDA_CUDNN_SDPA

bool available() { return false; }
size_t version() { return 0; }
Result<PlanInfo> prepare_forward(const cuda_flash::FlashFwdParams&) {
  return unsupported(kFwd, "this build has no cuDNN");
}
Result<PlanInfo> prepare_backward(const cuda_flash::FlashBwdParams&, bool) {
  return unsupported(kBwd, "this build has no cuDNN");
}
Status forward(const cuda_flash::FlashFwdParams&, void*, void*, size_t) { return unsupported(kFwd, "this build has no cuDNN"); }
Status backward(const cuda_flash::FlashBwdParams&, void*, bool) { return unsupported(kBwd, "this build has no cuDNN"); }

#else  // BARACUDA_CUDNN_SDPA

namespace {

// Fixed tensor uids of the non-virtual operands; virtual tensors count up from kFirstVirtual.
enum Uid : int64_t {
  kQ = 1, kK, kV, kO, kStats, kScale, kNegInf, kSkv, kSq, kDO, kDQ, kDK, kDV, kOne, kRowSum, kDQAcc,
  kFirstVirtual = 100,
};

constexpr size_t kAlign = 256;
size_t round_up(size_t x) { return (x + kAlign - 1) / kAlign * kAlign; }

std::string last_error() {
  char buf[512] = {0};
  cudnnGetLastErrorString(buf, sizeof buf);
  return std::string(buf);
}

Status lib_error(const char* plan, cudnnStatus_t s, const char* step) {
  std::string m = std::string(plan) + ": cuDNN: " + cudnnGetErrorString(s) + " while " + step;
  const std::string detail = last_error();
  if (!detail.empty()) m += " (" + detail + ")";
  // CUDNN_STATUS_NOT_SUPPORTED and its refinements (3000..3999): the problem, not a failure.
  const int code_value = static_cast<int>(s);
  const StatusCode code = code_value >= 3000 && code_value < 4000 ? StatusCode::Unsupported : StatusCode::LibraryError;
  return Status(code, m);
}

// Owning backend descriptor.
class Desc {
 public:
  Desc() = default;
  explicit Desc(cudnnBackendDescriptor_t d) : d_(d) {}
  ~Desc() {
    if (d_) cudnnBackendDestroyDescriptor(d_);
  }
  Desc(Desc&& o) noexcept : d_(std::exchange(o.d_, nullptr)) {}
  Desc& operator=(Desc&& o) noexcept {
    if (this != &o) {
      if (d_) cudnnBackendDestroyDescriptor(d_);
      d_ = std::exchange(o.d_, nullptr);
    }
    return *this;
  }
  cudnnBackendDescriptor_t get() const { return d_; }

 private:
  cudnnBackendDescriptor_t d_ = nullptr;
};

using Shape4 = std::array<int64_t, 4>;

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

// Builds one operation graph: tensors, operations, first error wins.
class Graph {
 public:
  explicit Graph(const char* plan) : plan_(plan) {}
  const Status& status() const { return st_; }
  std::vector<Desc>& owned() { return owned_; }
  const std::vector<cudnnBackendDescriptor_t>& ops() const { return ops_; }

  cudnnBackendDescriptor_t tensor(int64_t uid, cudnnDataType_t dt, const Shape4& dims, const Shape4& strides,
                                  bool is_virtual = false, bool by_value = false) {
    cudnnBackendDescriptor_t t = make(CUDNN_BACKEND_TENSOR_DESCRIPTOR, "creating a tensor descriptor");
    if (!t) return nullptr;
    const int64_t alignment = 16;
    set(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt, "setting a tensor data type");
    set(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, 4, dims.data(), "setting tensor dimensions");
    set(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, 4, strides.data(), "setting tensor strides");
    set(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid, "setting a tensor uid");
    set(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1, &alignment, "setting a tensor alignment");
    set(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1, &is_virtual, "marking a tensor virtual");
    if (by_value) set(t, CUDNN_ATTR_TENSOR_IS_BY_VALUE, CUDNN_TYPE_BOOLEAN, 1, &by_value, "marking a tensor by-value");
    finalize(t, "finalizing a tensor descriptor");
    return t;
  }
  cudnnBackendDescriptor_t virt(cudnnDataType_t dt, const Shape4& dims) {
    return tensor(next_uid_++, dt, dims, packed(dims), /*is_virtual=*/true);
  }
  cudnnBackendDescriptor_t virt(cudnnDataType_t dt, const Shape4& dims, const Shape4& strides) {
    return tensor(next_uid_++, dt, dims, strides, /*is_virtual=*/true);
  }
  cudnnBackendDescriptor_t scalar(int64_t uid, cudnnDataType_t dt) {
    return tensor(uid, dt, {1, 1, 1, 1}, {1, 1, 1, 1}, false, /*by_value=*/true);
  }

  // y = mode(x [, b] [, t]); t is the BINARY_SELECT mask.
  void pointwise(cudnnPointwiseMode_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                 cudnnBackendDescriptor_t y, cudnnDataType_t compute = CUDNN_DATA_FLOAT, int64_t axis = -1,
                 cudnnBackendDescriptor_t t = nullptr) {
    cudnnBackendDescriptor_t pw = make(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, "creating a pointwise descriptor");
    if (!pw) return;
    set(pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1, &mode, "setting a pointwise mode");
    set(pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1, &compute, "setting a pointwise precision");
    if (axis >= 0) set(pw, CUDNN_ATTR_POINTWISE_AXIS, CUDNN_TYPE_INT64, 1, &axis, "setting a pointwise axis");
    finalize(pw, "finalizing a pointwise descriptor");
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, "creating a pointwise operation");
    if (!op) return;
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pw, "attaching a pointwise descriptor");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "setting a pointwise input");
    if (b) set(op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "setting a pointwise second input");
    if (t) set(op, CUDNN_ATTR_OPERATION_POINTWISE_TDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &t, "setting a pointwise mask input");
    set(op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "setting a pointwise output");
    finalize(op, "finalizing a pointwise operation");
    ops_.push_back(op);
  }

  void matmul(cudnnBackendDescriptor_t a, cudnnBackendDescriptor_t b, cudnnBackendDescriptor_t c) {
    cudnnBackendDescriptor_t mm = make(CUDNN_BACKEND_MATMUL_DESCRIPTOR, "creating a matmul descriptor");
    if (!mm) return;
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(mm, CUDNN_ATTR_MATMUL_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "setting the matmul compute type");
    finalize(mm, "finalizing a matmul descriptor");
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_MATMUL_DESCRIPTOR, "creating a matmul operation");
    if (!op) return;
    set(op, CUDNN_ATTR_OPERATION_MATMUL_ADESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &a, "setting matmul A");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_BDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b, "setting matmul B");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_CDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &c, "setting matmul C");
    set(op, CUDNN_ATTR_OPERATION_MATMUL_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &mm, "attaching a matmul descriptor");
    finalize(op, "finalizing a matmul operation");
    ops_.push_back(op);
  }

  void reduction(cudnnReduceTensorOp_t mode, cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t rd = make(CUDNN_BACKEND_REDUCTION_DESCRIPTOR, "creating a reduction descriptor");
    if (!rd) return;
    const cudnnDataType_t f32 = CUDNN_DATA_FLOAT;
    set(rd, CUDNN_ATTR_REDUCTION_OPERATOR, CUDNN_TYPE_REDUCTION_OPERATOR_TYPE, 1, &mode, "setting a reduction operator");
    set(rd, CUDNN_ATTR_REDUCTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &f32, "setting a reduction compute type");
    finalize(rd, "finalizing a reduction descriptor");
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_REDUCTION_DESCRIPTOR, "creating a reduction operation");
    if (!op) return;
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "setting a reduction input");
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "setting a reduction output");
    set(op, CUDNN_ATTR_OPERATION_REDUCTION_DESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &rd, "attaching a reduction descriptor");
    finalize(op, "finalizing a reduction operation");
    ops_.push_back(op);
  }

  void reshape(cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t y) {
    cudnnBackendDescriptor_t op = make(CUDNN_BACKEND_OPERATION_RESHAPE_DESCRIPTOR, "creating a reshape operation");
    if (!op) return;
    set(op, CUDNN_ATTR_OPERATION_RESHAPE_XDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x, "setting a reshape input");
    set(op, CUDNN_ATTR_OPERATION_RESHAPE_YDESC, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y, "setting a reshape output");
    finalize(op, "finalizing a reshape operation");
    ops_.push_back(op);
  }

  // x with the keys a causal mask forbids set to -inf: keep col <= row (+ skv - sq).
  cudnnBackendDescriptor_t causal_mask(cudnnBackendDescriptor_t x, const Shape4& dims, bool bottom_right) {
    cudnnBackendDescriptor_t row = virt(CUDNN_DATA_INT32, dims);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, row, CUDNN_DATA_FLOAT, 2);
    cudnnBackendDescriptor_t col = virt(CUDNN_DATA_INT32, dims);
    pointwise(CUDNN_POINTWISE_GEN_INDEX, x, nullptr, col, CUDNN_DATA_FLOAT, 3);
    if (bottom_right) {
      cudnnBackendDescriptor_t plus = virt(CUDNN_DATA_INT32, dims);
      pointwise(CUDNN_POINTWISE_ADD, row, scalar(kSkv, CUDNN_DATA_INT32), plus, CUDNN_DATA_INT32, 3);
      cudnnBackendDescriptor_t shifted = virt(CUDNN_DATA_INT32, dims);
      pointwise(CUDNN_POINTWISE_SUB, plus, scalar(kSq, CUDNN_DATA_INT32), shifted, CUDNN_DATA_INT32, 3);
      row = shifted;
    }
    cudnnBackendDescriptor_t keep = virt(CUDNN_DATA_BOOLEAN, dims);
    pointwise(CUDNN_POINTWISE_CMP_GE, row, col, keep, CUDNN_DATA_BOOLEAN);
    cudnnBackendDescriptor_t y = virt(CUDNN_DATA_FLOAT, dims);
    pointwise(CUDNN_POINTWISE_BINARY_SELECT, x, scalar(kNegInf, CUDNN_DATA_FLOAT), y, CUDNN_DATA_FLOAT, -1, keep);
    return y;
  }

  // Finalized operation graph (owned by the graph).
  cudnnBackendDescriptor_t finish(cudnnHandle_t handle) {
    cudnnBackendDescriptor_t g = make(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, "creating the operation graph");
    if (!g) return nullptr;
    set(g, CUDNN_ATTR_OPERATIONGRAPH_OPS, CUDNN_TYPE_BACKEND_DESCRIPTOR, static_cast<int64_t>(ops_.size()), ops_.data(),
        "adding the operations to the graph");
    set(g, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1, &handle, "setting the graph's handle");
    finalize(g, "finalizing the operation graph (cuDNN does not recognise it as fused attention)");
    return st_.is_ok() ? g : nullptr;
  }

 private:
  cudnnBackendDescriptor_t make(cudnnBackendDescriptorType_t type, const char* step) {
    if (!st_.is_ok()) return nullptr;
    cudnnBackendDescriptor_t d = nullptr;
    const cudnnStatus_t s = cudnnBackendCreateDescriptor(type, &d);
    if (s != CUDNN_STATUS_SUCCESS) {
      st_ = lib_error(plan_, s, step);
      return nullptr;
    }
    owned_.emplace_back(d);
    return d;
  }
  void set(cudnnBackendDescriptor_t d, cudnnBackendAttributeName_t name, cudnnBackendAttributeType_t type, int64_t n,
           const void* v, const char* step) {
    if (!st_.is_ok() || !d) return;
    const cudnnStatus_t s = cudnnBackendSetAttribute(d, name, type, n, v);
    if (s != CUDNN_STATUS_SUCCESS) st_ = lib_error(plan_, s, step);
  }
  void finalize(cudnnBackendDescriptor_t d, const char* step) {
    if (!st_.is_ok() || !d) return;
    const cudnnStatus_t s = cudnnBackendFinalize(d);
    if (s != CUDNN_STATUS_SUCCESS) st_ = lib_error(plan_, s, step);
  }

  const char* plan_;
  Status st_;
  std::vector<Desc> owned_;
  std::vector<cudnnBackendDescriptor_t> ops_;
  int64_t next_uid_ = kFirstVirtual;
};

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

Problem problem_of(const cuda_flash::FlashFwdParams& p) {
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

Problem problem_of(const cuda_flash::FlashBwdParams& p, bool deterministic) {
  Problem pr = problem_of(static_cast<const cuda_flash::FlashFwdParams&>(p));
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

void build_forward(Graph& g, const Problem& p) {
  const cudnnDataType_t io = io_type(p.dtype), f32 = CUDNN_DATA_FLOAT;
  const Shape4 sdims{p.b, p.h, p.sq, p.skv}, rows{p.b, p.h, p.sq, 1};
  auto q = g.tensor(kQ, io, {p.b, p.h, p.sq, p.d}, p.q);
  auto kt = g.tensor(kK, io, {p.b, p.hk, p.d, p.skv}, transposed(p.k));
  auto v = g.tensor(kV, io, {p.b, p.hk, p.skv, p.d}, p.v);
  auto o = g.tensor(kO, io, {p.b, p.h, p.sq, p.d}, p.o);
  auto s = g.virt(f32, sdims);
  g.matmul(q, kt, s);
  auto scaled = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_MUL, s, g.scalar(kScale, f32), scaled);
  auto x = p.causal ? g.causal_mask(scaled, sdims, p.bottom_right) : scaled;
  // softmax with stats = max + log(sum(exp(x - max)))
  auto mx = g.virt(f32, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_MAX, x, mx);
  auto centred = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_SUB, x, mx, centred);
  auto e = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_EXP, centred, nullptr, e);
  auto sum = g.virt(f32, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, e, sum);
  if (p.stats) {
    auto lg = g.virt(f32, rows);
    g.pointwise(CUDNN_POINTWISE_LOG, sum, nullptr, lg);
    auto stats = g.tensor(kStats, f32, rows, packed(rows));
    g.pointwise(CUDNN_POINTWISE_ADD, mx, lg, stats);
  }
  auto prob = g.virt(io, sdims);  // bmm2 takes P in the I/O type
  g.pointwise(CUDNN_POINTWISE_DIV, e, sum, prob);
  g.matmul(prob, v, o);
}

void build_backward(Graph& g, const Problem& p) {
  const cudnnDataType_t io = io_type(p.dtype), f32 = CUDNN_DATA_FLOAT;
  const Shape4 sdims{p.b, p.h, p.sq, p.skv}, tdims{p.b, p.h, p.skv, p.sq}, rows{p.b, p.h, p.sq, 1};
  const Shape4 qdims{p.b, p.h, p.sq, p.d}, kdims{p.b, p.hk, p.skv, p.d}, ktdims{p.b, p.hk, p.d, p.skv};
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
  auto prod = g.virt(f32, qdims);
  g.pointwise(CUDNN_POINTWISE_MUL, dout, o, prod);
  auto rs = g.virt(f32, rows);
  g.reduction(CUDNN_REDUCE_TENSOR_ADD, prod, rs);
  auto rowsum = g.tensor(kRowSum, f32, rows, packed(rows));
  g.pointwise(CUDNN_POINTWISE_MUL, rs, g.scalar(kOne, f32), rowsum);

  // P = exp(S * scale - stats) (masked)
  auto s = g.virt(f32, sdims);
  g.matmul(q, kt, s);
  auto scaled = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_MUL, s, scale, scaled);
  auto centred = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_SUB, scaled, stats, centred);
  auto x = p.causal ? g.causal_mask(centred, sdims, p.bottom_right) : centred;
  auto prob = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_EXP, x, nullptr, prob);

  // dV = P^T . dO (summed over each kv head's query heads for GQA)
  auto prob_t = g.virt(io, tdims, tstrides);
  g.reshape(prob, prob_t);
  if (p.h == p.hk) {
    g.matmul(prob_t, dout, dv);
  } else {
    auto full = g.virt(io, {p.b, p.h, p.skv, p.d});
    g.matmul(prob_t, dout, full);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, dv);
  }

  // dS = P * (dO . V^T - rowsum) * scale
  auto dp = g.virt(f32, sdims);
  g.matmul(dout, vt, dp);
  auto dp_c = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_SUB, dp, rowsum, dp_c);
  auto dsu = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_MUL, dp_c, prob, dsu);
  auto ds = g.virt(f32, sdims);
  g.pointwise(CUDNN_POINTWISE_MUL, dsu, scale, ds);

  // dK = dS^T . Q
  auto ds_t = g.virt(io, tdims, tstrides);
  g.reshape(ds, ds_t);
  if (p.h == p.hk) {
    g.matmul(ds_t, q, dk);
  } else {
    auto full = g.virt(io, {p.b, p.h, p.skv, p.d});
    g.matmul(ds_t, q, full);
    g.reduction(CUDNN_REDUCE_TENSOR_ADD, full, dk);
  }

  // dQ = dS . K (K as a reshape of the K^T input)
  auto k = g.virt(f32, kdims, p.k);
  g.reshape(kt, k);
  if (p.deterministic) {
    g.matmul(ds, k, dq);
  } else {
    auto acc = g.tensor(kDQAcc, f32, qdims, packed(qdims));
    g.matmul(ds, k, acc);
    g.pointwise(CUDNN_POINTWISE_IDENTITY, acc, nullptr, dq);
  }
}

// A built execution plan and what running it needs.
struct Built {
  std::vector<Desc> graph;  // descriptors of the graph, heuristics and engine configs, kept alive with the plan
  Desc plan;
  size_t cudnn_ws = 0;
  size_t rowsum_off = 0, dqacc_off = 0, cudnn_off = 0;  // offsets in the caller's workspace
  PlanInfo info;
  int32_t skv = 0, sq = 0;
  float neg_inf = -std::numeric_limits<float>::infinity();
  float one = 1.0f;
};

struct DeviceState {
  std::mutex mu;
  cudnnHandle_t handle = nullptr;
  std::map<std::vector<int64_t>, std::unique_ptr<Built>> plans;
  std::map<std::vector<int64_t>, Status> failures;  // problems cuDNN could not build (not retried)
};

DeviceState& device_state(int device) {
  static std::mutex mu;
  static std::map<int, std::unique_ptr<DeviceState>> states;  // never destroyed before exit; handles are leaked on purpose
  std::lock_guard<std::mutex> lock(mu);
  auto& s = states[device];
  if (!s) s = std::make_unique<DeviceState>();
  return *s;
}

Status cuda_error(const char* plan, cudaError_t e, const char* what) {
  return Status(StatusCode::CudaError, std::string(plan) + ": " + what + ": " + cudaGetErrorString(e));
}

// Engine facts of a finalized plan's engine config: global index and notes.
void describe_engine(cudnnBackendDescriptor_t cfg, PlanInfo* info) {
  cudnnBackendDescriptor_t eng = nullptr;
  if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &eng) != CUDNN_STATUS_SUCCESS) return;
  Desc hold(eng);
  int64_t n = 0;
  if (cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &n, &eng) != CUDNN_STATUS_SUCCESS)
    return;
  int64_t index = -1;
  if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n, &index) == CUDNN_STATUS_SUCCESS)
    info->engine = "cudnn-engine-" + std::to_string(index);
  std::array<cudnnBackendNumericalNote_t, CUDNN_NUMERICAL_NOTE_TYPE_COUNT> notes{};
  n = 0;
  if (cudnnBackendGetAttribute(eng, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE, CUDNN_TYPE_NUMERICAL_NOTE,
                               static_cast<int64_t>(notes.size()), &n, notes.data()) == CUDNN_STATUS_SUCCESS) {
    for (int64_t i = 0; i < n && i < static_cast<int64_t>(notes.size()); ++i)
      if (notes[static_cast<size_t>(i)] == CUDNN_NUMERICAL_NOTE_NONDETERMINISTIC) info->deterministic = false;
  }
}

// Builds the plan for `p` (state.mu held).
Result<std::unique_ptr<Built>> build(const char* plan_name, DeviceState& st, const Problem& p) {
  Graph g(plan_name);
  if (p.backward) build_backward(g, p);
  else build_forward(g, p);
  cudnnBackendDescriptor_t graph = g.finish(st.handle);
  if (!g.status().is_ok()) return g.status();

  Desc heur;
  {
    cudnnBackendDescriptor_t h = nullptr;
    cudnnStatus_t s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &h);
    if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "creating the heuristics descriptor");
    heur = Desc(h);
    const cudnnBackendHeurMode_t mode = CUDNN_HEUR_MODE_A;
    s = cudnnBackendSetAttribute(h, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &graph);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendSetAttribute(h, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1, &mode);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(h);
    if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "running the engine heuristics");
  }
  int64_t count = 0;
  cudnnStatus_t s = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &count, nullptr);
  if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "counting the heuristics' engine configs");
  if (count <= 0) return unsupported(plan_name, "no engine supports this attention graph");
  std::vector<Desc> cfgs;
  std::vector<cudnnBackendDescriptor_t> raw;
  for (int64_t i = 0; i < count; ++i) {
    cudnnBackendDescriptor_t c = nullptr;
    s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &c);
    if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "creating an engine config descriptor");
    cfgs.emplace_back(c);
    raw.push_back(c);
  }
  int64_t got = 0;
  s = cudnnBackendGetAttribute(heur.get(), CUDNN_ATTR_ENGINEHEUR_RESULTS, CUDNN_TYPE_BACKEND_DESCRIPTOR, count, &got, raw.data());
  if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "reading the heuristics' engine configs");

  Status last = unsupported(plan_name, "no engine config of the heuristics could be finalized");
  for (int64_t i = 0; i < got; ++i) {
    cudnnBackendDescriptor_t ep = nullptr;
    s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &ep);
    if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "creating an execution plan descriptor");
    Desc plan(ep);
    s = cudnnBackendSetAttribute(ep, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1, &st.handle);
    if (s == CUDNN_STATUS_SUCCESS)
      s = cudnnBackendSetAttribute(ep, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG, CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &raw[static_cast<size_t>(i)]);
    if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(ep);
    if (s != CUDNN_STATUS_SUCCESS) {
      last = lib_error(plan_name, s, "finalizing an execution plan");
      continue;
    }
    int64_t ws = 0, n = 0;
    s = cudnnBackendGetAttribute(ep, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE, CUDNN_TYPE_INT64, 1, &n, &ws);
    if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "reading the plan's workspace size");
    auto b = std::make_unique<Built>();
    b->graph = std::move(g.owned());
    b->graph.push_back(std::move(heur));
    for (Desc& c : cfgs) b->graph.push_back(std::move(c));
    b->plan = std::move(plan);
    b->cudnn_ws = static_cast<size_t>(std::max<int64_t>(ws, 0));
    b->skv = static_cast<int32_t>(p.skv);
    b->sq = static_cast<int32_t>(p.sq);
    b->info.deterministic = p.deterministic;
    describe_engine(raw[static_cast<size_t>(i)], &b->info);
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
    b->info.workspace_bytes = b->cudnn_ws ? off + b->cudnn_ws : off;
    return b;
  }
  return last;
}

// Finds or builds the plan for `p` with st.mu held. `capturing`: never build.
Result<Built*> get_plan(const char* plan_name, DeviceState& st, const Problem& p, bool capturing) {
  const auto key = p.key();
  if (auto it = st.plans.find(key); it != st.plans.end()) return it->second.get();
  if (auto it = st.failures.find(key); it != st.failures.end()) return it->second;
  if (capturing)
    return unsupported(plan_name, "the execution plan for this problem is not built yet and cannot be built while the "
                                  "stream is capturing a CUDA graph (run it once, or prepare it, before capturing)");
  if (!st.handle) {
    const cudnnStatus_t s = cudnnCreate(&st.handle);
    if (s != CUDNN_STATUS_SUCCESS) {
      st.handle = nullptr;
      return lib_error(plan_name, s, "creating the cuDNN handle");
    }
  }
  auto built = build(plan_name, st, p);
  if (!built) {
    // Remember what cuDNN cannot run; other failures (memory, compilation) are retried.
    if (built.status().code() == StatusCode::Unsupported) st.failures.emplace(key, built.status());
    return built.status();
  }
  Built* raw = built->get();
  st.plans.emplace(key, std::move(*built));
  return raw;
}

Result<int> current_device(const char* plan) {
  int dev = 0;
  const cudaError_t e = cudaGetDevice(&dev);
  if (e != cudaSuccess) return cuda_error(plan, e, "cudaGetDevice");
  return dev;
}

bool is_capturing(void* stream) {
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(stream), &cs) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;  // e.g. the legacy stream while another stream captures globally: do not build
  }
  return cs != cudaStreamCaptureStatusNone;
}

Result<PlanInfo> prepare(const char* plan_name, const Problem& p) {
  auto dev = current_device(plan_name);
  if (!dev) return dev.status();
  DeviceState& st = device_state(*dev);
  std::lock_guard<std::mutex> lock(st.mu);
  auto b = get_plan(plan_name, st, p, /*capturing=*/false);
  if (!b) return b.status();
  return (*b)->info;
}

// Runs the plan: uids/pointers of the non-virtual tensors plus the scratch.
Status execute(const char* plan_name, const Problem& p, void* stream, void* workspace, size_t ws_bytes,
               std::vector<std::pair<int64_t, void*>> io, float scale) {
  auto dev = current_device(plan_name);
  if (!dev) return dev.status();
  DeviceState& st = device_state(*dev);
  const bool capturing = is_capturing(stream);
  std::lock_guard<std::mutex> lock(st.mu);
  auto got = get_plan(plan_name, st, p, capturing);
  if (!got) return got.status();
  Built& b = **got;
  if (ws_bytes < b.info.workspace_bytes)
    return Status(StatusCode::WorkspaceTooSmall,
                  std::string(plan_name) + ": cuDNN: workspace of " + std::to_string(ws_bytes) + " bytes, this plan needs " +
                      std::to_string(b.info.workspace_bytes),
                  b.info.workspace_bytes, ws_bytes);
  if (b.info.workspace_bytes && (!workspace || !is_aligned16(workspace)))
    return unsupported(plan_name, "workspace must be a 16-byte aligned device pointer");
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
  void* cudnn_ws = b.cudnn_ws ? ws + b.cudnn_off : nullptr;

  cudnnStatus_t s = cudnnSetStream(st.handle, static_cast<cudaStream_t>(stream));
  if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "setting the stream");
  cudnnBackendDescriptor_t vp = nullptr;
  s = cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &vp);
  if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "creating the variant pack");
  Desc hold(vp);
  const int64_t n = static_cast<int64_t>(uids.size());
  s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS, CUDNN_TYPE_INT64, n, uids.data());
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS, CUDNN_TYPE_VOID_PTR, n, ptrs.data());
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendSetAttribute(vp, CUDNN_ATTR_VARIANT_PACK_WORKSPACE, CUDNN_TYPE_VOID_PTR, 1, &cudnn_ws);
  if (s == CUDNN_STATUS_SUCCESS) s = cudnnBackendFinalize(vp);
  if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "filling the variant pack");
  s = cudnnBackendExecute(st.handle, b.plan.get(), vp);
  if (s != CUDNN_STATUS_SUCCESS) return lib_error(plan_name, s, "executing the plan");
  return Status::ok();
}

}  // namespace

size_t version() { return cudnnGetVersion(); }

bool available() {
  const size_t v = version();
  return v >= 90000 && v != 91000 && v != 91001;
}

Result<PlanInfo> prepare_forward(const cuda_flash::FlashFwdParams& p) {
  BARACUDA_RETURN_IF_ERROR(check_common(kFwd, p));
  if (!available()) return unsupported(kFwd, "cuDNN " + std::to_string(version()) + " is not usable");
  return prepare(kFwd, problem_of(p));
}

Result<PlanInfo> prepare_backward(const cuda_flash::FlashBwdParams& p, bool deterministic) {
  BARACUDA_RETURN_IF_ERROR(check_backward(p));
  if (!available()) return unsupported(kBwd, "cuDNN " + std::to_string(version()) + " is not usable");
  return prepare(kBwd, problem_of(p, deterministic));
}

Status forward(const cuda_flash::FlashFwdParams& p, void* stream, void* workspace, size_t workspace_bytes) {
  BARACUDA_RETURN_IF_ERROR(check_forward(p));
  if (!available()) return unsupported(kFwd, "cuDNN " + std::to_string(version()) + " is not usable");
  if (!p.q || !p.k || !p.v || !p.y) return Status(StatusCode::InvalidProblem, std::string(kFwd) + ": cuDNN: null tensor pointer");
  std::vector<std::pair<int64_t, void*>> io{{kQ, const_cast<void*>(p.q)}, {kK, const_cast<void*>(p.k)},
                                            {kV, const_cast<void*>(p.v)}, {kO, p.y}};
  if (p.lse) io.emplace_back(kStats, p.lse);
  return execute(kFwd, problem_of(p), stream, workspace, workspace_bytes, std::move(io), static_cast<float>(p.scale));
}

Status backward(const cuda_flash::FlashBwdParams& p, void* stream, bool deterministic) {
  BARACUDA_RETURN_IF_ERROR(check_backward(p));
  if (!available()) return unsupported(kBwd, "cuDNN " + std::to_string(version()) + " is not usable");
  if (!p.q || !p.k || !p.v || !p.y || !p.dy || !p.dq || !p.dk || !p.dv)
    return Status(StatusCode::InvalidProblem, std::string(kBwd) + ": cuDNN: null tensor pointer");
  std::vector<std::pair<int64_t, void*>> io{
      {kQ, const_cast<void*>(p.q)}, {kK, const_cast<void*>(p.k)}, {kV, const_cast<void*>(p.v)},
      {kO, p.y},                    {kStats, p.lse},               {kDO, const_cast<void*>(p.dy)},
      {kDQ, p.dq},                  {kDK, p.dk},                   {kDV, p.dv}};
  return execute(kBwd, problem_of(p, deterministic), stream, p.workspace, p.workspace_bytes, std::move(io),
                 static_cast<float>(p.scale));
}

#endif  // BARACUDA_CUDNN_SDPA

}  // namespace baracuda::cudnn_sdpa
