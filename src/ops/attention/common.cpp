#include "ops/attention/common.hpp"

#include <cmath>

#include "core/checks.hpp"
#include "core/cuda_device.hpp"
#include "core/families.hpp"

namespace baracuda {

const char* diagonal_align_name(DiagonalAlign a) {
  switch (a) {
    case DiagonalAlign::TopLeft: return "top-left";
    case DiagonalAlign::BottomRight: return "bottom-right";
  }
  return "?";
}

namespace attention::detail {

Status validate_problem(const char* plan, DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len,
                        int64_t kv_len, const std::optional<double>& scale) {
  const std::string p = std::string(plan) + ": ";
  auto bad = [&](const std::string& m) { return Status(StatusCode::InvalidProblem, p + m); };
  if (!(dtype == DType::F32 || dtype == DType::F64 || dtype == DType::F16 || dtype == DType::BF16))
    return Status(StatusCode::Unsupported, p + "dtype " + std::string(dtype_name(dtype)) + " is not supported (f16, bf16, f32, f64)");
  if (batch < 0) return bad("batch " + std::to_string(batch) + " must be >= 0");
  if (heads < 1 || kv_heads < 1)
    return bad("heads (" + std::to_string(heads) + ") and kv_heads (" + std::to_string(kv_heads) + ") must be >= 1");
  if (heads % kv_heads != 0)
    return bad("heads " + std::to_string(heads) + " must be a multiple of kv_heads " + std::to_string(kv_heads));
  if (q_len < 0 || kv_len < 0)
    return bad("q_len (" + std::to_string(q_len) + ") and kv_len (" + std::to_string(kv_len) + ") must be >= 0");
  if (scale && !std::isfinite(*scale)) return bad("scale must be finite");
  return baracuda::detail::check_size(plan, "score matrix size B*H*Q*K", {batch, heads, q_len, kv_len});
}


Status check_cuda_rows(const char* plan, const char* name, const TensorRef& v, size_t vector_bytes) {
  const std::string p = std::string(plan) + ": ";
  if (v.numel() == 0 || v.rank() == 0) return Status::ok();
  const int last = v.rank() - 1;
  if (v.shape[last] > 1 && v.strides[last] != 1)
    return Status(StatusCode::Unsupported, p + name + " must have a contiguous head dimension (stride 1) on CUDA, got strides " +
                                               v.strides.to_string());
  if (vector_bytes == 0) return Status::ok();
  const int64_t vec = static_cast<int64_t>(vector_bytes / dtype_size(v.dtype));
  for (int i = 0; i < last; ++i)
    if (v.shape[i] > 1 && v.strides[i] % vec != 0)
      return Status(StatusCode::Unsupported, p + name + " strides " + v.strides.to_string() + " must be multiples of " +
                                                 std::to_string(vec) + " elements (" + std::to_string(vector_bytes) +
                                                 "-byte rows) on CUDA for " + std::string(dtype_name(v.dtype)));
  if (reinterpret_cast<uintptr_t>(v.data) % vector_bytes != 0)
    return Status(StatusCode::Unsupported, p + name + " data pointer must be " + std::to_string(vector_bytes) +
                                               "-byte aligned on CUDA for " + std::string(dtype_name(v.dtype)));
  return Status::ok();
}

}  // namespace attention::detail
}  // namespace baracuda
