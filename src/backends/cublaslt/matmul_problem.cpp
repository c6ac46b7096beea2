#include "backends/cublaslt/matmul_problem.hpp"

#include <algorithm>
#include <cstdint>
#include <limits>

namespace baracuda::cublaslt {

namespace {

Status invalid(const char* plan, const std::string& what) {
  return Status(StatusCode::InvalidProblem, std::string(plan) + ": cuBLASLt: " + what);
}

bool valid_alignment(uint32_t a) { return a >= 1 && a <= 16 && (a & (a - 1)) == 0; }

// The scale (alpha/beta) type cuBLASLt requires for each compute type.
DType scale_type_of(ComputeType c) {
  switch (c) {
    case ComputeType::F64: return DType::F64;
    case ComputeType::I32: return DType::I32;
    default: return DType::F32;
  }
}

}  // namespace

bool has_bias(Epilogue e) {
  return e == Epilogue::Bias || e == Epilogue::ReluBias || e == Epilogue::GeluBias || e == Epilogue::GeluAuxBias;
}
bool has_aux(Epilogue e) {
  return e == Epilogue::GeluAux || e == Epilogue::GeluAuxBias || e == Epilogue::DGelu || e == Epilogue::DGeluBGrad;
}
bool has_bias_grad(Epilogue e) { return e == Epilogue::BGradA || e == Epilogue::BGradB || e == Epilogue::DGeluBGrad; }

StoredShape stored_a(const MatmulProblem& p) { return p.trans_a ? StoredShape{p.k, p.m} : StoredShape{p.m, p.k}; }
StoredShape stored_b(const MatmulProblem& p) { return p.trans_b ? StoredShape{p.n, p.k} : StoredShape{p.k, p.n}; }

uint32_t pointer_alignment(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  if (a == 0) return 16;
  uint32_t align = 1;
  while (align < 16 && (a & (2 * align - 1)) == 0) align *= 2;
  return align;
}

MatmulProblem with_pointer_alignment(MatmulProblem p, const void* a, const void* b, const void* c, const void* d) {
  p.align_a = std::min(p.align_a, pointer_alignment(a));
  p.align_b = std::min(p.align_b, pointer_alignment(b));
  p.align_c = std::min(p.align_c, pointer_alignment(c));
  p.align_d = std::min(p.align_d, pointer_alignment(d));
  return p;
}

Status check_problem(const char* plan, const MatmulProblem& p) {
  if ((p.a_scale != ScaleMode::None && !is_float8(p.a_type)) || (p.b_scale != ScaleMode::None && !is_float8(p.b_type)))
    return invalid(plan, "a scale mode is set on an operand that is not fp8");
  if (p.fast_accum && !(is_float8(p.a_type) && is_float8(p.b_type)))
    return invalid(plan, "fast_accum is set but the operands are not fp8");
  if (p.m < 0 || p.n < 0 || p.k < 0)
    return invalid(plan, "extents m=" + std::to_string(p.m) + ", n=" + std::to_string(p.n) + ", k=" + std::to_string(p.k) +
                             " must be >= 0");
  if (p.batch < 1 || p.batch > std::numeric_limits<int32_t>::max())
    return invalid(plan, "batch " + std::to_string(p.batch) + " must be in [1, 2^31-1]");
  struct Ld {
    const char* name;
    int64_t ld, rows;
  };
  const Ld lds[] = {{"lda", p.lda, stored_a(p).rows}, {"ldb", p.ldb, stored_b(p).rows}, {"ldc", p.ldc, p.m}, {"ldd", p.ldd, p.m}};
  for (const Ld& l : lds) {
    if (l.ld < std::max<int64_t>(1, l.rows))
      return invalid(plan, std::string(l.name) + " " + std::to_string(l.ld) + " must be >= max(1, rows " +
                               std::to_string(l.rows) + ")");
  }
  if (p.stride_a < 0 || p.stride_b < 0 || p.stride_c < 0 || p.stride_d < 0)
    return invalid(plan, "batch strides must be >= 0");
  if (!valid_alignment(p.align_a) || !valid_alignment(p.align_b) || !valid_alignment(p.align_c) ||
      !valid_alignment(p.align_d))
    return invalid(plan, "operand alignments must be powers of two in 1..16 bytes");
  if (has_aux(p.epilogue) && (p.aux_ld < std::max<int64_t>(1, p.m) || p.aux_stride < 0))
    return invalid(plan, "aux_ld " + std::to_string(p.aux_ld) + " must be >= max(1, m " + std::to_string(p.m) +
                             ") and the aux batch stride >= 0");
  if (p.scale_type != scale_type_of(p.compute))
    return invalid(plan, "scale type " + std::string(dtype_name(p.scale_type)) + " does not match the compute type (needs " +
                             std::string(dtype_name(scale_type_of(p.compute))) + ")");
  return Status::ok();
}

std::vector<int64_t> heuristic_key(const MatmulProblem& p, size_t workspace_limit) {
  // Every field, in declaration order; fields the problem does not use (batch
  // strides of an unbatched problem, the bias type without a bias) as fixed
  // values, so equivalent problems share an entry.
  const bool batched = p.batch > 1;
  return {static_cast<int64_t>(p.a_type),     static_cast<int64_t>(p.b_type),
          static_cast<int64_t>(p.c_type),     static_cast<int64_t>(p.d_type),
          static_cast<int64_t>(p.scale_type), static_cast<int64_t>(p.compute),
          p.trans_a,                          p.trans_b,
          p.m,                                p.n,
          p.k,                                p.lda,
          p.ldb,                              p.ldc,
          p.ldd,                              p.batch,
          batched ? p.stride_a : 0,           batched ? p.stride_b : 0,
          batched ? p.stride_c : 0,           batched ? p.stride_d : 0,
          static_cast<int64_t>(p.epilogue),
          has_bias(p.epilogue) || has_bias_grad(p.epilogue) ? static_cast<int64_t>(p.bias_type) : -1,
          has_aux(p.epilogue) ? static_cast<int64_t>(p.aux_type) : -1,
          has_aux(p.epilogue) ? p.aux_ld : -1,
          has_aux(p.epilogue) && batched ? p.aux_stride : -1,
          p.align_a,                          p.align_b,
          p.align_c,                          p.align_d,
          static_cast<int64_t>(p.a_scale),    static_cast<int64_t>(p.b_scale),
          p.fast_accum,                       static_cast<int64_t>(workspace_limit)};
}

}  // namespace baracuda::cublaslt
