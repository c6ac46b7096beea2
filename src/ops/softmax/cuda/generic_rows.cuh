// Path "generic": any layout (the reduced axis not unit-stride, or the other
// axes not one row stride; e.g. softmax over a leading axis). One thread per
// row with strided loops: pass 1 folds the row (forward: (max, sum-exp) of
// scale * x; backward: the sum of dy * y or dy) in index order, pass 2 writes
// the output. Over a leading axis consecutive threads are consecutive columns,
// so the loads coalesce. Every element of a row is read and written by its one
// thread, in place is safe; deterministic. The fold is two-level (chunks of
// kGenericChunk elements, each folded on its own, then merged in order): one
// serial f32 sum over a 262,144-element row lost 1e-4 relative accuracy on the
// H100 (the block paths' tree reductions keep ~1e-6); chunking bounds the
// error by (chunk + len / chunk) roundings instead of len.
#pragma once
#include "ops/softmax/cuda/softmax_common.cuh"

namespace baracuda::softmax::cuda::kern {

constexpr int kGenericThreads = 256;
constexpr int64_t kGenericChunk = 256;

template <class T, bool kBackward>
__global__ void __launch_bounds__(kGenericThreads) generic_rows_kernel(Params p) {
  using Acc = dev::acc_t<T>;
  const int64_t threads = static_cast<int64_t>(gridDim.x) * kGenericThreads;
  const bool log = p.log != 0;
  const Acc scale = static_cast<Acc>(p.scale);
  for (int64_t row = static_cast<int64_t>(blockIdx.x) * kGenericThreads + threadIdx.x; row < p.rows; row += threads) {
    int64_t off[kOperands] = {0, 0, 0};
    int64_t rest = row;
    for (int d = p.outer_rank - 1; d >= 0; --d) {
      const int64_t i = rest % p.outer_shape[d];
      rest /= p.outer_shape[d];
#pragma unroll
      for (int k = 0; k < kOperands; ++k) off[k] += i * p.outer_stride[k][d];
    }
    const T* a = static_cast<const T*>(p.in0) + off[1];
    T* o = static_cast<T*>(p.out) + off[0];
    const int64_t sa = p.axis_stride[1], so = p.axis_stride[0];
    if constexpr (!kBackward) {
      dev::MaxSumExp<Acc> st = dev::MaxSumExp<Acc>::empty();
      for (int64_t j0 = 0; j0 < p.len; j0 += kGenericChunk) {
        dev::MaxSumExp<Acc> c = dev::MaxSumExp<Acc>::empty();
        const int64_t j1 = j0 + kGenericChunk < p.len ? j0 + kGenericChunk : p.len;
        for (int64_t j = j0; j < j1; ++j) c.add(dev::to_acc<Acc>(a[j * sa]) * scale);
        st = dev::MaxSumExp<Acc>::merge(st, c);
      }
      const ForwardRow<Acc> f = ForwardRow<Acc>::make(st, log);
      for (int64_t j = 0; j < p.len; ++j) o[j * so] = dev::from_acc<T>(f.template out<(sizeof(T) == 2)>(dev::to_acc<Acc>(a[j * sa]) * scale));
    } else {
      const T* g = static_cast<const T*>(p.in1) + off[2];
      const int64_t sg = p.axis_stride[2];
      Acc sum = Acc(0);
      for (int64_t j0 = 0; j0 < p.len; j0 += kGenericChunk) {
        Acc c = Acc(0);
        const int64_t j1 = j0 + kGenericChunk < p.len ? j0 + kGenericChunk : p.len;
        for (int64_t j = j0; j < j1; ++j) c += backward_term(log, dev::to_acc<Acc>(a[j * sa]), dev::to_acc<Acc>(g[j * sg]));
        sum += c;
      }
      for (int64_t j = 0; j < p.len; ++j)
        o[j * so] = dev::from_acc<T>(backward_out(log, scale, sum, dev::to_acc<Acc>(a[j * sa]), dev::to_acc<Acc>(g[j * sg])));
    }
  }
}

template <class T, bool kBackward>
Status launch_generic(const Params& p, int sm_count, cudaStream_t stream, const char* what) {
  const int64_t grid = std::min<int64_t>((p.rows + kGenericThreads - 1) / kGenericThreads, int64_t{std::max(sm_count, 1)} * 32);
  generic_rows_kernel<T, kBackward><<<static_cast<unsigned>(grid), kGenericThreads, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), what);
}

}  // namespace baracuda::softmax::cuda::kern
