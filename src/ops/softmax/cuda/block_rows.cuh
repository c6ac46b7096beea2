// Path "block": one block of kThreads per row, the row staged in dynamic
// shared memory (forward: x; softmax backward: y and dy), so the inputs are
// read from global memory once. The log_softmax backward stages only dy:
// dx = scale * (dy - exp(y) * sum(dy)) needs nothing of y before the sum, so
// y is read once, in the second pass (half the shared memory: twice the rows
// per SM, and rows twice as long fit). Thread t owns vectors t, t + kThreads,
// ... of the row; it folds them while staging, the block combines the
// partials (block_allreduce), and the thread reads back exactly the vectors
// it staged to write the output: no thread reads another's staging, so the
// next row may reuse the buffer without a barrier beyond the reduction's own.
#pragma once
#include "cuda/smem_optin.cuh"
#include "ops/softmax/cuda/softmax_common.cuh"

namespace baracuda::softmax::cuda::kern {

// Loads W elements from global memory once: copies them to the staging
// buffer and returns them as accumulator values.
template <class T, int W, class Acc>
__device__ __forceinline__ void load_stage(const T* src, T* dst, Acc (&v)[W]) {
  if constexpr (W == 1) {
    const T x = src[0];
    dst[0] = x;
    v[0] = dev::to_acc<Acc>(x);
  } else {
    const uint4 raw = *reinterpret_cast<const uint4*>(src);
    *reinterpret_cast<uint4*>(dst) = raw;
    dev::Words<16> w;
    w.w[0] = raw.x, w.w[1] = raw.y, w.w[2] = raw.z, w.w[3] = raw.w;
    dev::unpack<T, Acc, 16>(w, v);
  }
}

template <class T, int kThreads, int W, bool kBackward>
__device__ __forceinline__ void block_row(const Params& p, int64_t row, T* sa, T* sg, void* red) {
  using Acc = dev::acc_t<T>;
  const int t = static_cast<int>(threadIdx.x);
  const int64_t nv = p.len / W;
  const T* a = static_cast<const T*>(p.in0) + row * p.row_stride[1];
  T* o = static_cast<T*>(p.out) + row * p.row_stride[0];
  const bool log = p.log != 0;
  const Acc scale = static_cast<Acc>(p.scale);
  if constexpr (!kBackward) {
    using Op = MaxSumExpOp<Acc>;
    typename Op::State st = Op::init();
    for (int64_t i = t; i < nv; i += kThreads) {
      Acc v[W];
      load_stage<T, W>(a + i * W, sa + i * W, v);
#pragma unroll
      for (int w = 0; w < W; ++w) v[w] *= scale;
      st = dev::MaxSumExp<Acc>::merge(st, fold_vector<Acc, W>(v));
    }
    st = dev::block_allreduce<Op, kThreads>(st, static_cast<typename Op::State*>(red));
    const ForwardRow<Acc> f = ForwardRow<Acc>::make(st, log);
    for (int64_t i = t; i < nv; i += kThreads) {
      Acc v[W];
      load_elems<T, W>(sa + i * W, v);
#pragma unroll
      for (int w = 0; w < W; ++w) v[w] = f.template out<(sizeof(T) == 2)>(v[w] * scale);
      store_elems<T, W>(o + i * W, v);
    }
  } else if (log) {
    // sg is unused: dy is staged in sa, the only buffer.
    using Op = SumOp<Acc>;
    const T* g = static_cast<const T*>(p.in1) + row * p.row_stride[2];
    Acc s = Op::init();
    for (int64_t i = t; i < nv; i += kThreads) {
      Acc dy[W];
      load_stage<T, W>(g + i * W, sa + i * W, dy);
#pragma unroll
      for (int w = 0; w < W; ++w) s += dy[w];
    }
    const Acc sum = dev::block_allreduce<Op, kThreads>(s, static_cast<Acc*>(red));
    for (int64_t i = t; i < nv; i += kThreads) {
      Acc y[W], dy[W];
      load_elems<T, W>(a + i * W, y);
      load_elems<T, W>(sa + i * W, dy);
#pragma unroll
      for (int w = 0; w < W; ++w) y[w] = backward_out(true, scale, sum, y[w], dy[w]);
      store_elems<T, W>(o + i * W, y);
    }
  } else {
    using Op = SumOp<Acc>;
    const T* g = static_cast<const T*>(p.in1) + row * p.row_stride[2];
    Acc s = Op::init();
    for (int64_t i = t; i < nv; i += kThreads) {
      Acc y[W], dy[W];
      load_stage<T, W>(a + i * W, sa + i * W, y);
      load_stage<T, W>(g + i * W, sg + i * W, dy);
#pragma unroll
      for (int w = 0; w < W; ++w) s += backward_term(false, y[w], dy[w]);
    }
    const Acc sum = dev::block_allreduce<Op, kThreads>(s, static_cast<Acc*>(red));
    for (int64_t i = t; i < nv; i += kThreads) {
      Acc y[W], dy[W];
      load_elems<T, W>(sa + i * W, y);
      load_elems<T, W>(sg + i * W, dy);
#pragma unroll
      for (int w = 0; w < W; ++w) y[w] = backward_out(false, scale, sum, y[w], dy[w]);
      store_elems<T, W>(o + i * W, y);
    }
  }
}

// Round a staging buffer up to 16 bytes (the second buffer stays aligned).
__host__ __device__ inline int64_t staging_bytes(int64_t len, int64_t esize) { return (len * esize + 15) / 16 * 16; }

template <class T, int kThreads, bool kBackward>
__global__ void __launch_bounds__(kThreads) block_rows_kernel(Params p) {
  using Acc = dev::acc_t<T>;
  extern __shared__ __align__(16) unsigned char staging[];
  __shared__ dev::MaxSumExp<Acc> red[kThreads / 32];  // also holds the backward's Acc partials
  T* sa = reinterpret_cast<T*>(staging);
  const int64_t sg_offset = block_staged_rows(kBackward, p.log != 0) == 2 ? staging_bytes(p.len, sizeof(T)) : 0;
  T* sg = reinterpret_cast<T*>(staging + sg_offset);  // the softmax backward's dy (unused otherwise)
  constexpr int kV = dev::kVec16<T>;
  for (int64_t row = blockIdx.x; row < p.rows; row += gridDim.x) {
    if (p.vec) block_row<T, kThreads, kV, kBackward>(p, row, sa, sg, red);
    else block_row<T, kThreads, 1, kBackward>(p, row, sa, sg, red);
  }
}

template <class T, int kThreads, bool kBackward>
Status launch_block(const Params& p, int sm_count, int arch, cudaStream_t stream, const char* what) {
  static dev::SmemOptIn optin;
  const size_t smem = static_cast<size_t>(staging_bytes(p.len, sizeof(T)) * block_staged_rows(kBackward, p.log != 0));
  // The opt-in is made once per device (SmemOptIn), so it asks for the most
  // any row of this path may need on this architecture, not for this row.
  const size_t optin_bytes = std::max<size_t>(smem, static_cast<size_t>(block_smem_limit(arch)));
  BARACUDA_RETURN_IF_ERROR(dev::ensure_smem(optin, block_rows_kernel<T, kThreads, kBackward>, optin_bytes, what));
  const int64_t grid = std::min<int64_t>(p.rows, int64_t{std::max(sm_count, 1)} * (2048 / kThreads) * 4);
  block_rows_kernel<T, kThreads, kBackward><<<static_cast<unsigned>(grid), kThreads, smem, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::softmax::cuda::kern
