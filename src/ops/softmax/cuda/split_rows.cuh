// Path "split": rows too long for one block's shared memory (262,144 or 1M
// elements), or long rows too few to fill the GPU. Row r is cut into
// p.chunks chunks of kSplitChunk elements, one block per (chunk, row):
//   pass 1 (split_partials_kernel): the block folds its chunk (forward: the
//     (max, sum-exp) pair of scale * x; backward: the sum of dy * y or dy)
//     and writes it to workspace slot r * chunks + c;
//   pass 2 (split_finish_kernel): every thread merges the row's partials in
//     chunk order (the same chain in every block: identical results), then
//     the block reads its chunk again and writes the output.
// The input is read twice (the second read often hits L2); no atomics, the
// order of every combine is fixed by (len, chunks): deterministic.
#pragma once
#include "ops/softmax/cuda/softmax_common.cuh"

namespace baracuda::softmax::cuda::kern {

constexpr int kSplitThreads = 256;

template <class Acc, bool kBackward>
using SplitState = std::conditional_t<kBackward, Acc, dev::MaxSumExp<Acc>>;

template <class T, int W, bool kBackward>
__device__ __forceinline__ void split_partial(const Params& p, int64_t row, int64_t chunk, void* red) {
  using Acc = dev::acc_t<T>;
  using Op = std::conditional_t<kBackward, SumOp<Acc>, MaxSumExpOp<Acc>>;
  const int64_t begin = chunk * kSplitChunk / W, end = std::min(p.len, (chunk + 1) * kSplitChunk) / W;
  const T* a = static_cast<const T*>(p.in0) + row * p.row_stride[1];
  const T* g = kBackward ? static_cast<const T*>(p.in1) + row * p.row_stride[2] : nullptr;
  const bool log = p.log != 0;
  const Acc scale = static_cast<Acc>(p.scale);
  typename Op::State st = Op::init();
  for (int64_t i = begin + threadIdx.x; i < end; i += kSplitThreads) {
    Acc v[W];
    load_elems<T, W>(a + i * W, v);
    if constexpr (kBackward) {
      Acc dy[W];
      load_elems<T, W>(g + i * W, dy);
#pragma unroll
      for (int w = 0; w < W; ++w) st += backward_term(log, v[w], dy[w]);
    } else {
#pragma unroll
      for (int w = 0; w < W; ++w) st.add(v[w] * scale);
    }
  }
  st = dev::block_allreduce<Op, kSplitThreads>(st, static_cast<typename Op::State*>(red));
  if (threadIdx.x == 0) {
    auto* slot = reinterpret_cast<typename Op::State*>(static_cast<unsigned char*>(p.workspace) +
                                                        (row * p.chunks + chunk) * kPartialBytes);
    *slot = st;
  }
}

template <class T, int W, bool kBackward>
__device__ __forceinline__ void split_finish(const Params& p, int64_t row, int64_t chunk) {
  using Acc = dev::acc_t<T>;
  using State = SplitState<Acc, kBackward>;
  const unsigned char* ws = static_cast<const unsigned char*>(p.workspace) + row * p.chunks * kPartialBytes;
  State st = *reinterpret_cast<const State*>(ws);
  for (int64_t c = 1; c < p.chunks; ++c) {
    const State next = *reinterpret_cast<const State*>(ws + c * kPartialBytes);
    if constexpr (kBackward) st = st + next;
    else st = dev::MaxSumExp<Acc>::merge(st, next);
  }
  const int64_t begin = chunk * kSplitChunk / W, end = std::min(p.len, (chunk + 1) * kSplitChunk) / W;
  const T* a = static_cast<const T*>(p.in0) + row * p.row_stride[1];
  T* o = static_cast<T*>(p.out) + row * p.row_stride[0];
  const bool log = p.log != 0;
  const Acc scale = static_cast<Acc>(p.scale);
  if constexpr (!kBackward) {
    const ForwardRow<Acc> f = ForwardRow<Acc>::make(st, log);
    for (int64_t i = begin + threadIdx.x; i < end; i += kSplitThreads) {
      Acc v[W];
      load_elems<T, W>(a + i * W, v);
#pragma unroll
      for (int w = 0; w < W; ++w) v[w] = f.template out<(sizeof(T) == 2)>(v[w] * scale);
      store_elems<T, W>(o + i * W, v);
    }
  } else {
    const T* g = static_cast<const T*>(p.in1) + row * p.row_stride[2];
    for (int64_t i = begin + threadIdx.x; i < end; i += kSplitThreads) {
      Acc y[W], dy[W];
      load_elems<T, W>(a + i * W, y);
      load_elems<T, W>(g + i * W, dy);
#pragma unroll
      for (int w = 0; w < W; ++w) y[w] = backward_out(log, scale, st, y[w], dy[w]);
      store_elems<T, W>(o + i * W, y);
    }
  }
}

template <class T, bool kBackward>
__global__ void __launch_bounds__(kSplitThreads) split_partials_kernel(Params p) {
  using Acc = dev::acc_t<T>;
  __shared__ dev::MaxSumExp<Acc> red[kSplitThreads / 32];
  constexpr int kV = dev::kVec16<T>;
  for (int64_t row = blockIdx.y; row < p.rows; row += gridDim.y) {
    if (p.vec) split_partial<T, kV, kBackward>(p, row, blockIdx.x, red);
    else split_partial<T, 1, kBackward>(p, row, blockIdx.x, red);
  }
}

template <class T, bool kBackward>
__global__ void __launch_bounds__(kSplitThreads) split_finish_kernel(Params p) {
  constexpr int kV = dev::kVec16<T>;
  for (int64_t row = blockIdx.y; row < p.rows; row += gridDim.y) {
    if (p.vec) split_finish<T, kV, kBackward>(p, row, blockIdx.x);
    else split_finish<T, 1, kBackward>(p, row, blockIdx.x);
  }
}

template <class T, bool kBackward>
Status launch_split(const Params& p, cudaStream_t stream, const char* what) {
  static_assert(sizeof(dev::MaxSumExp<dev::acc_t<T>>) <= kPartialBytes, "a partial fits its workspace slot");
  const dim3 grid(static_cast<unsigned>(p.chunks), static_cast<unsigned>(std::min<int64_t>(p.rows, 65535)));
  split_partials_kernel<T, kBackward><<<grid, kSplitThreads, 0, stream>>>(p);
  BARACUDA_RETURN_IF_ERROR(baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what));
  split_finish_kernel<T, kBackward><<<grid, kSplitThreads, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::softmax::cuda::kern
