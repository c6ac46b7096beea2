// The path choice and the argument rules of one elementwise call
// (include/baracuda/cuda/detail/elementwise_host.hpp).
#include <cstdint>

#include "baracuda/cuda/detail/elementwise_host.hpp"
#include "core/arg_check.hpp"
#include "core/error.hpp"

namespace baracuda::detail {

bool ew_fits32(const EwLayout& L) {
  bool fits = L.numel < (int64_t{1} << 31);
  for (int k = 0; k < L.operands && fits; ++k) fits = ew_operand_extent(L, k) < (int64_t{1} << 31);
  return fits;
}

EwPath choose_ew_path(const EwLayout& L, int vec_width, const void* const* out, const size_t* out_size,
                      const void* const* in, const size_t* in_size) {
  const int V = vec_width;
  const int M = L.outputs;
  const int n_in = L.operands - M;
  // Vector path: innermost dim unit-stride (or broadcast) for every operand,
  // its extent a multiple of V, every unit-stride operand aligned to V
  // elements at its base and at every outer step.
  const int inner = L.rank - 1;
  auto aligned = [&](const void* ptr, size_t elem, int k) {
    const uint64_t bytes = static_cast<uint64_t>(V) * elem;
    const uint64_t need = bytes >= 16 ? 16 : bytes;
    if (reinterpret_cast<uintptr_t>(ptr) % need != 0) return false;
    for (int d = 0; d < inner; ++d)
      if (L.stride[k][d] % V != 0) return false;
    return true;
  };
  bool vec = V >= 1 && L.rank >= 1 && L.shape[inner] % V == 0;
  // With outer dims the kernel decodes chunk indices (numel / V of them) with
  // 32-bit FastDiv: beyond 2^31 chunks the 64-bit path (offsets are 64-bit).
  if (vec && L.rank > 1) vec = L.numel / V < (int64_t{1} << 31);
  for (int m = 0; m < M && vec; ++m)
    if (out[m] != nullptr) vec = L.stride[m][inner] == 1 && aligned(out[m], out_size[m], m);
  for (int k = 0; k < n_in && vec; ++k) {
    if (in[k] == nullptr) continue;  // a scalar
    const int64_t s = L.stride[M + k][inner];
    if (s == 0) continue;  // broadcast along the inner dim: one element per vector
    vec = s == 1 && aligned(in[k], in_size[k], M + k);
  }
  if (vec) return EwPath::Vec16;
  // A transposed copy: output unit-stride along dim 1, input along dim 0
  // (grid limits: 32-element tiles, at most 65535 along y).
  if (M == 1 && n_in == 1 && in[0] != nullptr && L.rank == 2 && L.stride[0][1] == 1 && L.stride[1][0] == 1 &&
      L.stride[1][1] > 1 && (L.shape[0] + 31) / 32 <= 65535 && (L.shape[1] + 31) / 32 < (int64_t{1} << 31))
    return EwPath::Transpose;
  return ew_fits32(L) ? EwPath::Strided32 : EwPath::Generic64;
}

Status check_ew_call(const char* who, const Stream& stream, const TensorMut& out, DType out_dtype, int n_in,
                     const TensorRef* const* in, const DType* in_dtype) {
  static constexpr const char* kIn[3] = {"in0", "in1", "in2"};
  // Three inputs at most (the template's limit; the layout holds more for the
  // gradient plans). The bound also keeps kIn[k] in range.
  if (n_in < 1 || n_in > 3) return invalid(who, "takes 1 to 3 inputs, got ", n_in);
  if (!stream.is_cuda()) return invalid(who, "the stream is on ", stream.device(), ": it needs a CUDA stream");
  ArgCheck c(who, stream.device());
  for (int k = 0; k < n_in; ++k) {
    if (in[k] == nullptr) continue;  // a scalar
    const TensorRef& v = *in[k];
    c.input(kIn[k], v, in_dtype[k], v.shape);
    c.rule([&]() -> Status {
      // NumPy broadcasting to out's shape: trailing dims align, each equal or 1.
      bool ok = v.shape.rank <= out.shape.rank;
      for (int d = 1; d <= v.shape.rank && ok; ++d)
        ok = v.shape[v.shape.rank - d] == 1 || v.shape[v.shape.rank - d] == out.shape[out.shape.rank - d];
      return ok ? Status::ok() : invalid(who, kIn[k], " shape ", v.shape, " does not broadcast to out's shape ", out.shape);
    });
  }
  c.output("out", out, out_dtype, out.shape);
  for (int k = 0; k < n_in; ++k)
    if (in[k] != nullptr) c.allow_in_place("out", kIn[k]);
  c.disjoint();
  return c.status();
}

}  // namespace baracuda::detail
