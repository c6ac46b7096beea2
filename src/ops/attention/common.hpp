// Pieces shared by the four attention plans: backend choice, precision, and
// the CUDA layout rules (head dimension contiguous, vector alignment).
#pragma once
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>

#include "baracuda/ops/attention.hpp"
#include "core/dispatch.hpp"
#include "core/families.hpp"
#include "core/plan_shell.hpp"

namespace baracuda::attention::detail {

inline constexpr baracuda::detail::Family kFamily{"attention", "attention", BARACUDA_KERNELS_ATTENTION};

using baracuda::detail::BackendChoice;

// The checks every attention descriptor shares: f16/bf16/f32/f64, batch >= 0,
// heads and kv_heads >= 1 with heads % kv_heads == 0, lengths >= 0, a finite
// scale when given, and the score matrix's size B*H*Q*K within int64 (the
// materialized path stores it; every path's work estimate uses it). Errors
// name the plan.
Status validate_problem(const char* plan, DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len,
                        int64_t kv_len, const std::optional<double>& scale);

// Accumulator dtype of the materialized path (probs, ds): f64 for f64, else f32.
inline DType accumulator_dtype(DType t) { return t == DType::F64 ? DType::F64 : DType::F32; }

// CUDA layout rule for a [.., S, D]-style view whose last axis is the head
// dimension: stride 1 there; with `vector_bytes` > 0 also every other stride a
// multiple of vector_bytes / element size and the base pointer aligned to
// vector_bytes. Returns Unsupported naming the plan and the tensor.
Status check_cuda_rows(const char* plan, const char* name, const TensorRef& v, size_t vector_bytes);


}  // namespace baracuda::attention::detail
