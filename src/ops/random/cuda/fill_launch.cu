// RandomPlan's kernel (include/baracuda/ops/random.hpp, "CUDA algorithms"):
// one template over (generator, dtype); a thread takes chunks of
// E = max(16 / sizeof(T), K) elements in a grid-stride loop, computes their
// E / K Philox blocks, transforms them with transform.hpp's gen_block (the
// CPU reference's code) and writes 16-byte vectors when out is contiguous and
// aligned, element by element through the strides otherwise.
#include "ops/random/cuda/random_common.cuh"

namespace baracuda::random::cuda {
namespace kern {
namespace {

template <Gen G, class T>
__global__ void __launch_bounds__(kThreads) fill_kernel(const FillLaunch l) {
  constexpr int K = gen_k<G, T>();
  constexpr int V = static_cast<int>(16 / sizeof(T));
  constexpr int E = V > K ? V : K;
  constexpr int B = E / K;
  const uint64_t offset = l.offset + (l.offset_ptr ? static_cast<uint64_t>(*l.offset_ptr) : 0u);
  const int64_t chunks = (l.n + E - 1) / E;
  T* out = static_cast<T*>(l.out);
  for (int64_t c = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; c < chunks;
       c += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t i0 = c * E;
    alignas(16) T v[E];
    double p[E];
    if constexpr (G == Gen::BernoulliTensor) {
#pragma unroll
      for (int j = 0; j < E; ++j) p[j] = i0 + j < l.n ? load_p(l.p, l.p_dtype, flat_offset(l.p_map, i0 + j)) : 0.0;
    }
#pragma unroll
    for (int b = 0; b < B; ++b) {
      const PhiloxWords w = philox_block(l.seed, offset, static_cast<uint64_t>(c) * B + b);
      gen_block<G, T, DevCvt<T>>(l.prm, w, p + b * K, v + b * K);
    }
    if (l.vec && i0 + E <= l.n) {
      uint4* dst = reinterpret_cast<uint4*>(out + i0);
      const uint4* src = reinterpret_cast<const uint4*>(v);
#pragma unroll
      for (int q = 0; q < static_cast<int>(E * sizeof(T) / 16); ++q) dst[q] = src[q];
    } else {
#pragma unroll
      for (int j = 0; j < E; ++j)
        if (i0 + j < l.n) out[flat_offset(l.out_map, i0 + j)] = v[j];
    }
  }
}

template <Gen G, class T>
Status launch_typed(const FillLaunch& l, cudaStream_t s) {
  constexpr int K = gen_k<G, T>();
  constexpr int V = static_cast<int>(16 / sizeof(T));
  constexpr int E = V > K ? V : K;
  static const int per_sm = resident_blocks(fill_kernel<G, T>);  // per kernel, queried once
  fill_kernel<G, T><<<grid_for((l.n + E - 1) / E, l.sm_count, per_sm), kThreads, 0, s>>>(l);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "RandomPlan: kernel launch");
}

template <Gen G>
Status launch_gen(const FillLaunch& l, cudaStream_t s) {
  switch (l.dtype) {
    case DType::F32: return launch_typed<G, float>(l, s);
    case DType::F64: return launch_typed<G, double>(l, s);
    case DType::F16: return launch_typed<G, __half>(l, s);
    case DType::BF16: return launch_typed<G, __nv_bfloat16>(l, s);
    case DType::I32:
      if constexpr (G == Gen::RandInt32 || G == Gen::RandInt64) return launch_typed<G, int32_t>(l, s);
      break;
    case DType::I64:
      if constexpr (G == Gen::RandInt32 || G == Gen::RandInt64) return launch_typed<G, int64_t>(l, s);
      break;
    default: break;
  }
  return Status(StatusCode::Unsupported, "RandomPlan: CUDA kernel needs f32, f64, f16 or bf16 (randint also i32, i64)");
}

}  // namespace
}  // namespace kern

namespace {
Status fill_dispatch(const FillLaunch& l, cudaStream_t s) {
  if (l.n == 0) return Status::ok();
  switch (l.gen) {
    case Gen::Uniform: return kern::launch_gen<Gen::Uniform>(l, s);
    case Gen::Normal: return kern::launch_gen<Gen::Normal>(l, s);
    case Gen::TruncNormal: return kern::launch_gen<Gen::TruncNormal>(l, s);
    case Gen::Bernoulli: return kern::launch_gen<Gen::Bernoulli>(l, s);
    case Gen::BernoulliTensor: return kern::launch_gen<Gen::BernoulliTensor>(l, s);
    case Gen::RandInt32: return kern::launch_gen<Gen::RandInt32>(l, s);
    case Gen::RandInt64: return kern::launch_gen<Gen::RandInt64>(l, s);
  }
  return Status(StatusCode::Unsupported, "RandomPlan: unknown generator");
}
}  // namespace

Status launch_fill(const FillLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  BARACUDA_RETURN_IF_ERROR(fill_dispatch(l, s));
  if (l.offset_ptr) return kern::bump_offset(l.offset_ptr, s, "RandomPlan: offset increment");
  return Status::ok();
}

}  // namespace baracuda::random::cuda
