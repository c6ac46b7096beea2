// Owning cuBLASLt descriptors (matmul operation, matrix layouts, heuristic
// preference) and building them from a MatmulProblem. Host objects only:
// cheap to create (a few microseconds), so run() builds them per call and
// sets the per-call attributes (bias pointer) on its own copy; nothing shared
// between threads is ever mutated.
#pragma once
#include <cublasLt.h>

#include <memory>
#include <type_traits>

#include "backends/cublaslt/api.hpp"
#include "backends/cublaslt/matmul_problem.hpp"
#include "baracuda/core/status.hpp"

namespace baracuda::cublaslt {

struct MatmulDescDeleter {
  void operator()(cublasLtMatmulDesc_t d) const { api().cublasLtMatmulDescDestroy(d); }
};
struct MatrixLayoutDeleter {
  void operator()(cublasLtMatrixLayout_t d) const { api().cublasLtMatrixLayoutDestroy(d); }
};
struct PreferenceDeleter {
  void operator()(cublasLtMatmulPreference_t d) const { api().cublasLtMatmulPreferenceDestroy(d); }
};
using MatmulDesc = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulDesc_t>, MatmulDescDeleter>;
using MatrixLayout = std::unique_ptr<std::remove_pointer_t<cublasLtMatrixLayout_t>, MatrixLayoutDeleter>;
using Preference = std::unique_ptr<std::remove_pointer_t<cublasLtMatmulPreference_t>, PreferenceDeleter>;

// cudaDataType_t of a baracuda dtype (f32, f64, f16, bf16, f8e4m3, f8e5m2, i8, u8, i32);
// Unsupported "<plan>: cuBLASLt: dtype <name> ..." otherwise.
Result<cudaDataType_t> data_type(const char* plan, DType t);

// The operation descriptor and the A, B, C, D layouts of `p` (batch count
// and strides set when batch > 1; no bias pointer yet).
struct MatmulDescriptors {
  MatmulDesc op;
  MatrixLayout a, b, c, d;
};
Result<MatmulDescriptors> make_descriptors(const char* plan, const MatmulProblem& p);

// The heuristics' preference: workspace limit and the operands' alignments.
Result<Preference> make_preference(const char* plan, const MatmulProblem& p, size_t workspace_limit);

}  // namespace baracuda::cublaslt
