// The one internal form of every GEMM this family runs: a batched, strided,
// row-major product with an epilogue. The plans translate their tensors into
// it (problem.cpp); the CPU reference (reference.cpp) and the cuBLASLt route
// (cublaslt_route.cpp) each execute it. Plain C++, no CUDA headers.
//
//   for every batch index t (multi-index over `batch`), row i < m, column j < n:
//     pre = alpha * sum_k A[t,i,k] B[t,k,j] + (has_c && beta != 0 ? beta * C[t,i,j] : 0)
//           + (has_bias ? bias[j] : 0)
//     aux[t,i,j] = pre (save_aux);  out[t,i,j] = act(pre)
//   a_rowsum[i] = sum over t, k of A[t,i,k]   (has_a_rowsum; the bias gradient
//                                               of LinearBackward's dw GEMM)
// With dact (the linear backward's dx GEMM of a chained layer), before the
// activation: pre *= dact'(dact_aux[t,i,j]), and out_colsum[j] = sum over t, i
// of out[t,i,j] (has_out_colsum; the previous layer's bias gradient).
// beta == 0 ignores c entirely (NaN in c does not propagate), as torch.addmm
// and cuBLASLt do.
#pragma once
#include <cstdint>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/gemm.hpp"

namespace baracuda::gemm {

// A matrix operand: element [t, i, j] at data + sum_d t_d * bstride[d] + i * rs + j * cs.
template <class Ptr>
struct Mat {
  Ptr data = nullptr;
  int64_t rs = 0, cs = 0;
  int64_t bstride[kMaxRank] = {};
};

// ScaledMatmulPlan's fp8 operands (on): a and b have their own dtypes (the
// Problem's dtype is then out's and bias's), and every product is scaled:
//   pre = alpha * a_scale[rowwise ? i : 0] * b_scale[rowwise ? j : 0] * sum_k A[i,k] B[k,j] + ...
struct Scaled {
  bool on = false;
  DType a_dtype = DType::F8E4M3, b_dtype = DType::F8E4M3;
  const float* a_scale = nullptr;  // 1 value, or m (rowwise), unit stride
  const float* b_scale = nullptr;  // 1 value, or n (rowwise)
  int64_t a_scale_stride = 1, b_scale_stride = 1;  // elements (the CPU reference; CUDA needs 1)
  bool rowwise = false;
  bool fast_accum = false;  // cuBLASLt's fp8 fast accumulation (the CPU reference is exact either way)
};

struct Problem {
  DType dtype = DType::F32;  // every operand's (a's and b's too unless scaled.on)
  Dims batch;  // rank 0..6
  int64_t m = 0, n = 0, k = 0;
  Mat<const void*> a, b, c;
  Mat<void*> out, aux;
  const void* bias = nullptr;
  int64_t bias_stride = 1;
  void* a_rowsum = nullptr;  // [m], dtype
  int64_t a_rowsum_stride = 1;
  GemmActivation dact = GemmActivation::None;
  Mat<const void*> dact_aux;
  void* out_colsum = nullptr;  // [n], dtype
  int64_t out_colsum_stride = 1;
  bool has_c = false, has_bias = false, save_aux = false, has_a_rowsum = false, has_out_colsum = false;
  GemmActivation act = GemmActivation::None;
  double alpha = 1.0, beta = 0.0;
  Scaled scaled;
};

inline DType a_dtype(const Problem& p) { return p.scaled.on ? p.scaled.a_dtype : p.dtype; }
inline DType b_dtype(const Problem& p) { return p.scaled.on ? p.scaled.b_dtype : p.dtype; }

// The torch.matmul shape rules (MatmulDescriptor's header comment).
struct MatmulShapes {
  Dims batch;        // broadcast batch shape
  int64_t m = 1, n = 1, k = 0;
  bool a_vec = false, b_vec = false;  // 1-D operands
  Dims out;          // batch + [m unless a_vec] + [n unless b_vec]
};
Status matmul_shapes(const char* plan, const Dims& a, const Dims& b, MatmulShapes* out);

// `v`'s strides over `target` (right-aligned NumPy broadcasting: a missing or
// extent-1 dim of v gets stride 0). v's shape must broadcast to target.
Dims broadcast_strides(const Dims& shape, const Dims& strides, const Dims& target);

// The Mat of an operand laid over out's dims (strides over out_shape): the
// last dims map to rows / columns unless dropped (a_vec: no row dim; b_vec: no
// column dim), everything before to `batch`.
template <class Ptr>
Mat<Ptr> mat_over_out(Ptr data, const Dims& strides_over_out, const MatmulShapes& s);

// a and b themselves (their own shapes, broadcast over `batch`).
Mat<const void*> mat_of_a(const TensorRef& a, const MatmulShapes& s);
Mat<const void*> mat_of_b(const TensorRef& b, const MatmulShapes& s);

// The Problem of a MatmulPlan call (views already checked).
Problem make_matmul_problem(const MatmulDescriptor& d, const MatmulShapes& s, const MatmulArgs& args);

// Contiguous views of the descriptor's shapes at null data (the select-time
// stand-ins the cuBLASLt route is warmed with).
MatmulArgs dense_matmul_args(const MatmulDescriptor& d, const MatmulShapes& s, Device dev);

}  // namespace baracuda::gemm
