#include "row_reduce_kernels.hpp"

#include <cuda_runtime.h>

#include "cuda/row_reduce.cuh"
#include "ops/reduce/cuda/forward_common.cuh"

namespace baracuda::row_reduce_test {

namespace {

constexpr int kValuesPerThread = 4;  // registers per thread per pass over its part of the row

// Scope geometry: threads per block, threads per row, blocks (cluster size) per row.
template <Scope S>
struct Geometry;
template <>
struct Geometry<Scope::Warp32> {
  static constexpr int kThreads = 128, kPerRow = 32, kBlocks = 1;
};
template <>
struct Geometry<Scope::Warp8> {
  static constexpr int kThreads = 128, kPerRow = 8, kBlocks = 1;
};
template <>
struct Geometry<Scope::Block> {
  static constexpr int kThreads = 256, kPerRow = 256, kBlocks = 1;
};
template <>
struct Geometry<Scope::Cluster2> {
  static constexpr int kThreads = 128, kPerRow = 128, kBlocks = 2;
};
template <>
struct Geometry<Scope::Cluster4> {
  static constexpr int kThreads = 128, kPerRow = 128, kBlocks = 4;
};

// What a thread writes for its copy of the result.
template <class Op>
struct Finish {
  __device__ static void write(const typename Op::State& s, float* val, int64_t*) { *val = s; }
};
template <>
struct Finish<dev::RowMaxSumExp<float>> {
  __device__ static void write(const dev::MaxSumExp<float>& s, float* val, int64_t*) { *val = s.log_sum_exp(); }
};
template <>
struct Finish<reduce::cuda::fwd::ArgMaxOp<float>> {
  __device__ static void write(const reduce::cuda::fwd::ArgState<float>& s, float* val, int64_t* idx) {
    *val = s.v;
    *idx = s.i;
  }
};
template <>
struct Finish<reduce::cuda::fwd::VarOp<float>> {
  __device__ static void write(const reduce::cuda::fwd::WelfordState<float>& s, float* val, int64_t* idx) {
    *val = s.m2 / s.n;
    *idx = static_cast<int64_t>(s.n);
  }
};

template <class Op, Scope S>
__global__ void __launch_bounds__(Geometry<S>::kThreads) row_kernel(const float* x, int rows, int len, float* val,
                                                                    int64_t* idx) {
  using G = Geometry<S>;
  using State = typename Op::State;
  __shared__ State smem[G::kThreads / 32];
  __shared__ State slot;
  constexpr int kRowsPerBlock = G::kThreads / G::kPerRow;
  const int t = static_cast<int>(threadIdx.x);
  const int rank = static_cast<int>(blockIdx.x) % G::kBlocks;  // rank in the (1-D) cluster
  const int row = kRowsPerBlock > 1 ? static_cast<int>(blockIdx.x) * kRowsPerBlock + t / G::kPerRow
                                    : static_cast<int>(blockIdx.x) / G::kBlocks;
  const int l = t % G::kPerRow;
  // Cluster blocks take consecutive parts of the row, in rank order.
  const int part = (len + G::kBlocks - 1) / G::kBlocks;
  const int begin = rank * part;
  const int end = begin + part < len ? begin + part : len;
  const int stride = G::kPerRow;

  State st = Op::init();
  if (row < rows) {
    const float* xr = x + static_cast<int64_t>(row) * len;
    for (int base = begin + l; base < end; base += kValuesPerThread * stride) {
      float v[kValuesPerThread];
      int n = 0;
#pragma unroll
      for (int e = 0; e < kValuesPerThread; ++e) {
        const int i = base + e * stride;
        if (i < end) {
          v[e] = xr[i];
          n = e + 1;
        }
      }
      st = Op::combine(st, dev::fold_registers<Op>(v, n, base, stride));
    }
  }
  if constexpr (S == Scope::Warp32 || S == Scope::Warp8) {
    st = dev::warp_allreduce<Op>(st, G::kPerRow);
  } else if constexpr (S == Scope::Block) {
    st = dev::block_allreduce<Op, G::kThreads>(st, smem);
  } else {
    st = dev::cluster_allreduce<Op, G::kThreads>(st, smem, &slot);
  }
  if (row < rows) {
    const int64_t copy = static_cast<int64_t>(row) * (G::kPerRow * G::kBlocks) + rank * G::kPerRow + l;
    Finish<Op>::write(st, val + copy, idx ? idx + copy : nullptr);
  }
}

template <class Op, Scope S>
cudaError_t launch(const float* x, int rows, int len, float* val, int64_t* idx) {
  using G = Geometry<S>;
  constexpr int kRowsPerBlock = G::kThreads / G::kPerRow;
  const unsigned blocks = static_cast<unsigned>((rows + kRowsPerBlock - 1) / kRowsPerBlock * G::kBlocks);
  cudaLaunchConfig_t cfg{};
  cfg.gridDim = dim3(blocks);
  cfg.blockDim = dim3(G::kThreads);
  cudaLaunchAttribute attr[1];
  if (G::kBlocks > 1) {
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = G::kBlocks;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  cudaError_t e = cudaLaunchKernelEx(&cfg, row_kernel<Op, S>, x, rows, len, val, idx);
  if (e == cudaSuccess) e = cudaGetLastError();
  if (e == cudaSuccess) e = cudaDeviceSynchronize();
  return e;
}

template <Scope S>
cudaError_t launch_kind(Kind k, const float* x, int rows, int len, float* val, int64_t* idx) {
  switch (k) {
    case Kind::Sum: return launch<dev::RowSum<float>, S>(x, rows, len, val, idx);
    case Kind::Max: return launch<dev::RowMax<float>, S>(x, rows, len, val, idx);
    case Kind::LogSumExp: return launch<dev::RowMaxSumExp<float>, S>(x, rows, len, val, idx);
    case Kind::ArgMax: return launch<reduce::cuda::fwd::ArgMaxOp<float>, S>(x, rows, len, val, idx);
    case Kind::Var: return launch<reduce::cuda::fwd::VarOp<float>, S>(x, rows, len, val, idx);
  }
  return cudaErrorInvalidValue;
}

__global__ void cluster_probe(int* out) {
#ifdef BARACUDA_ROW_REDUCE_CLUSTERS
  *out = 1;
#else
  *out = 0;
#endif
}

}  // namespace

int threads_per_row(Scope s) {
  switch (s) {
    case Scope::Warp32: return 32;
    case Scope::Warp8: return 8;
    case Scope::Block: return 256;
    case Scope::Cluster2: return 2 * 128;
    case Scope::Cluster4: return 4 * 128;
  }
  return 0;
}

bool cluster_code_present() {
  int* d = nullptr;
  if (cudaMalloc(&d, sizeof(int)) != cudaSuccess) return false;
  int h = 0;
  cluster_probe<<<1, 1>>>(d);
  const bool ok = cudaMemcpy(&h, d, sizeof(int), cudaMemcpyDeviceToHost) == cudaSuccess;
  cudaFree(d);
  return ok && h == 1;
}

int run(Scope s, Kind k, const float* x, int rows, int len, float* val, int64_t* idx) {
  switch (s) {
    case Scope::Warp32: return static_cast<int>(launch_kind<Scope::Warp32>(k, x, rows, len, val, idx));
    case Scope::Warp8: return static_cast<int>(launch_kind<Scope::Warp8>(k, x, rows, len, val, idx));
    case Scope::Block: return static_cast<int>(launch_kind<Scope::Block>(k, x, rows, len, val, idx));
    case Scope::Cluster2: return static_cast<int>(launch_kind<Scope::Cluster2>(k, x, rows, len, val, idx));
    case Scope::Cluster4: return static_cast<int>(launch_kind<Scope::Cluster4>(k, x, rows, len, val, idx));
  }
  return static_cast<int>(cudaErrorInvalidValue);
}

}  // namespace baracuda::row_reduce_test
