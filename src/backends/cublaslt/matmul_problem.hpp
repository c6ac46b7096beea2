// One cuBLASLt matmul, described in plain C++ (no CUDA headers): what a GEMM
// plan fills from its descriptor, what the heuristic cache is keyed by, and
// what the descriptors/layouts are built from (matmul.hpp).
//
// cuBLASLt is column-major. The problem is stated in its terms:
//   D[m x n] = epilogue(alpha * op(A)[m x k] * op(B)[k x n] + beta * C[m x n])
// op(X) = X^T when trans_x. A is stored (trans_a ? k x m : m x k) column-major
// with leading dimension lda >= its row count; B likewise (k x n, or n x k
// transposed); C and D are m x n with ldc / ldd. Batched problems hold
// `batch` matrices per operand at element offsets stride_* apart (stride 0
// reuses one matrix for every batch entry).
//
// Row-major callers (every baracuda tensor): a row-major M x N matrix is the
// column-major N x M one with the same leading dimension, so
//   Y[M x N] = X[M x K] . W[K x N]  (row-major)
// is  Y^T = W^T . X^T  (column-major): A = W, B = X, m = N, n = M, k = K,
// lda = N, ldb = K, ldc = ldd = N; a transposed row-major operand flips its
// trans_* flag. The bias of a Bias epilogue then broadcasts along Y's rows
// (one value per output column N = m), as nn.Linear's bias does.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::cublaslt {

// Fused epilogues (cuBLASLt's CUBLASLT_EPILOGUE_*). Bias adds a length-m
// vector (one value per row of D) before the activation; Gelu is the tanh
// approximation (cuBLASLt's only GELU). GeluAux / GeluAuxBias also write the
// pre-activation to the aux matrix (m x n, aux_ld, aux_type, batch stride
// aux_stride). BGradA / BGradB write a bias gradient instead of adding a bias:
// BGradA the sums of op(A)'s rows over k (length m), BGradB the sums of
// op(B)'s columns over k (length n), through the bias pointer.
// DGelu / DGeluBGrad read the aux matrix (a GELU input saved by a forward) and
// write D = (alpha op(A) op(B) + ...) * gelu'(aux); DGeluBGrad also writes the
// sums of D's rows over n (length m) through the bias pointer.
enum class Epilogue : uint8_t {
  None, Relu, Gelu, Bias, ReluBias, GeluBias, GeluAux, GeluAuxBias, BGradA, BGradB, DGelu, DGeluBGrad
};

// Math mode (cublasComputeType_t). F32 is exact fp32 math (no TF32): the
// default for f32 / f16 / bf16 inputs; the Fast* modes trade precision for
// tensor-core speed on f32 inputs and must be asked for explicitly.
enum class ComputeType : uint8_t { F32, F32FastTF32, F32FastBF16, F32FastF16, F64, I32 };

// How an operand's dequantization scale is given (fp8 A / B;
// CUBLASLT_MATMUL_DESC_{A,B}_SCALE_MODE). None: no scale pointer. Scalar: one
// f32 for the whole matrix. OuterVec: f32 per row of op(A) (m values) or per
// column of op(B) (n values): cuBLAS 12.9+'s channel-wise scaling, on sm_90.
// D[i, j] = alpha * sa[i or 0] * sb[j or 0] * sum_k op(A)[i, k] op(B)[k, j] + ...
enum class ScaleMode : uint8_t { None, Scalar, OuterVec };

struct MatmulProblem {
  DType a_type = DType::F32, b_type = DType::F32, c_type = DType::F32, d_type = DType::F32;
  DType scale_type = DType::F32;  // alpha / beta (F32 for f32/f16/bf16 math, F64 for F64, I32 for I32)
  ComputeType compute = ComputeType::F32;
  bool trans_a = false, trans_b = false;
  int64_t m = 0, n = 0, k = 0;
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  int64_t batch = 1;
  int64_t stride_a = 0, stride_b = 0, stride_c = 0, stride_d = 0;  // elements; used when batch > 1
  Epilogue epilogue = Epilogue::None;
  DType bias_type = DType::F32;  // used by the Bias and BGrad epilogues
  DType aux_type = DType::F32;   // used by the Aux epilogues
  int64_t aux_ld = 0, aux_stride = 0;
  ScaleMode a_scale = ScaleMode::None, b_scale = ScaleMode::None;  // fp8 operands' scales
  bool fast_accum = false;  // fp8: CUBLASLT_MATMUL_DESC_FAST_ACCUM (fewer promotions of the accumulator)
  // Byte alignment cuBLASLt may assume for each pointer (a power of two,
  // 1..16; see pointer_alignment()). A plan selects with 16 and re-keys at
  // run time when a pointer is less aligned.
  uint32_t align_a = 16, align_b = 16, align_c = 16, align_d = 16;

  bool operator==(const MatmulProblem&) const = default;
};

bool has_bias(Epilogue e);      // reads a bias vector
bool has_aux(Epilogue e);       // writes (GeluAux*) or reads (DGelu*) the aux matrix
bool has_bias_grad(Epilogue e); // writes a bias gradient through the bias pointer

// Rows x columns of each stored operand (column-major).
struct StoredShape {
  int64_t rows, cols;
};
StoredShape stored_a(const MatmulProblem& p);
StoredShape stored_b(const MatmulProblem& p);

// Largest power of two dividing the address, at most 16 (16 for null: a
// pointer not known yet, e.g. at select()).
uint32_t pointer_alignment(const void* p);

// `p` with each align_* lowered to what the actual pointer guarantees (a
// plan's run() re-keys with this; null pointers keep the declared value).
MatmulProblem with_pointer_alignment(MatmulProblem p, const void* a, const void* b, const void* c, const void* d);

// InvalidProblem "<plan>: cuBLASLt: <exact problem>" when the problem is not
// a well-formed matmul: a scale or fast_accum on a non-fp8 operand, negative extents, batch < 1 or > INT32_MAX, a leading
// dimension below max(1, rows), a negative batch stride, an alignment that
// is not a power of two in 1..16, a scale type that does not fit the compute type.
Status check_problem(const char* plan, const MatmulProblem& p);

// The heuristic cache's key: every field of the problem plus the workspace
// limit the heuristics were given (a different limit may pick a different
// algorithm). Batch strides count only when batch > 1 and the bias type only
// with a Bias epilogue. The device is the cache's own key part.
std::vector<int64_t> heuristic_key(const MatmulProblem& p, size_t workspace_limit);

}  // namespace baracuda::cublaslt
