// Small helpers the train_gpt sources share: errors become exceptions (the
// example's style: a failing call stops the program with the plan's message),
// and device buffers read back as f32.
#pragma once
#include <baracuda/baracuda.hpp>

#include <utility>
#include <vector>

namespace train_gpt {

inline void check(const baracuda::Status& st) {
  if (!st) throw baracuda::StatusError(st);
}

template <class P>
P take(baracuda::Result<P> r) {
  if (!r) throw baracuda::StatusError(r.status());
  return std::move(r).value();
}

// The first n elements of a buffer of dtype t (f32, f64, bf16, f16) as f32 on
// the host (a synchronous copy).
inline std::vector<float> to_f32(const baracuda::Buffer& b, size_t n, baracuda::DType t) {
  using baracuda::DType;
  std::vector<unsigned char> raw(n * baracuda::dtype_size(t));
  check(b.copy_to_host(raw.data(), raw.size()));
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) {
    switch (t) {
      case DType::F32: v[i] = reinterpret_cast<const float*>(raw.data())[i]; break;
      case DType::BF16: v[i] = static_cast<float>(reinterpret_cast<const baracuda::bfloat16*>(raw.data())[i]); break;
      case DType::F16: v[i] = static_cast<float>(reinterpret_cast<const baracuda::half*>(raw.data())[i]); break;
      default: v[i] = static_cast<float>(reinterpret_cast<const double*>(raw.data())[i]); break;
    }
  }
  return v;
}

}  // namespace train_gpt
