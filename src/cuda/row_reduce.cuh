// Row reductions: the building block of every kernel that reduces a row and
// then uses the result (softmax, layer / RMS norm, cross-entropy, the reduce
// family). A row is spread over the lanes of a warp, the threads of a block,
// or (sm_90) the blocks of a thread-block cluster; each thread first folds
// the values it holds in registers, then the partial states are combined
// across the scope and EVERY thread of the scope gets the row's result (a
// softmax needs the max and the sum in all threads, not just in thread 0).
//
// Ops: the reduce family's Op traits (src/ops/reduce/cuda/forward_common.cuh)
//   using State;                  the partial result (a value, a Welford triple, ...)
//   static State init();          identity of combine
//   static State combine(a, b);   a covers the lower indices / comes first
//   static void accumulate(State&, Acc v, int64_t idx);   for fold_registers()
// Sum / Max / Min and the online (max, sum-exp) pair below have the same shape,
// so the reduce Ops (Welford VarOp, ArgMaxOp, LseOp, ...) and these mix freely.
//
// Determinism: every combine happens in a fixed tree that depends only on the
// scope's size; a pair of partials is always combined as combine(lower,
// upper), so all threads compute bit-identical results (no lane ever sees a
// combine(upper, lower) variant) and the warp level matches dev::warp_reduce
// (warp_reduce.cuh) bit for bit. No atomics.
//
// Shared memory: block and cluster levels take caller-owned scratch
// (`State smem[kThreads / 32]`, and one `State` slot for the cluster) and end
// with a barrier, so the same scratch serves the next reduction at once (e.g.
// max, then sum of exp).
#pragma once
#include <cstdint>
#include <type_traits>

#include "cuda/numeric.cuh"
#include "cuda/warp_reduce.cuh"

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#include <cooperative_groups.h>
#define BARACUDA_ROW_REDUCE_CLUSTERS 1
#endif

namespace baracuda::dev {

// ---------------------------------------------------------------------------
// Row ops with the Op-trait shape.

template <class Acc>
struct RowSum {
  using State = Acc;
  __device__ __forceinline__ static State init() { return Acc(0); }
  __device__ __forceinline__ static State combine(State a, State b) { return a + b; }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) { s += v; }
};

// NaN propagates (a NaN anywhere in the row makes the result NaN).
template <class Acc>
struct RowMax {
  using State = Acc;
  __device__ __forceinline__ static State init() { return lowest_value<Acc>(); }
  __device__ __forceinline__ static State combine(State a, State b) { return max_nan(a, b); }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) { s = max_nan(s, v); }
};
template <class Acc>
struct RowMin {
  using State = Acc;
  __device__ __forceinline__ static State init() { return highest_value<Acc>(); }
  __device__ __forceinline__ static State combine(State a, State b) { return min_nan(a, b); }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) { s = min_nan(s, v); }
};

// The online (max, sum-exp) pair of a softmax / log-sum-exp / cross-entropy:
// one pass over the row gives both, and partials merge by rescaling to the
// larger max. Same arithmetic and special values as the reduce family's
// LogSumExp (LseOp): a NaN poisons `sum` (never `max`), all -inf gives
// max = -inf (log_sum_exp() = -inf), +inf gives +inf.
template <class Acc>
struct MaxSumExp {
  Acc max;  // largest value seen (-inf before any)
  Acc sum;  // sum of exp(x - max) over the values seen

  // exp(x - m) for x <= m, where x == m == +-inf must give 1, not exp(NaN).
  __device__ __forceinline__ static Acc scale(Acc x, Acc m) { return x == m ? Acc(1) : acc_exp_nonpos(x - m); }

  __device__ __forceinline__ static MaxSumExp empty() { return {lowest_value<Acc>(), Acc(0)}; }
  __device__ __forceinline__ void add(Acc x) {
    if (x > max) {  // NaN never takes this branch, so max is never NaN
      sum = sum * acc_exp_nonpos(max - x) + Acc(1);
      max = x;
    } else {
      sum += scale(x, max);
    }
  }
  __device__ __forceinline__ static MaxSumExp merge(const MaxSumExp& a, const MaxSumExp& b) {
    const Acc m = a.max > b.max ? a.max : b.max;
    return {m, a.sum * scale(a.max, m) + b.sum * scale(b.max, m)};
  }
  // log(sum(exp(x))) of the values seen; softmax(x) = exp(x - log_sum_exp()).
  __device__ __forceinline__ Acc log_sum_exp() const { return max + acc_log(sum); }
};

template <class Acc>
struct RowMaxSumExp {
  using State = MaxSumExp<Acc>;
  __device__ __forceinline__ static State init() { return State::empty(); }
  __device__ __forceinline__ static State combine(const State& a, const State& b) { return State::merge(a, b); }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) { s.add(v); }
};

// ---------------------------------------------------------------------------
// Thread level: the values a thread holds in registers.

// Folds v[0..n_valid) in order; v[e] is row element idx0 + e * stride (the
// index reaches Ops that track positions, e.g. ArgMax).
template <class Op, class Acc, int N>
__device__ __forceinline__ typename Op::State fold_registers(const Acc (&v)[N], int n_valid, int64_t idx0 = 0,
                                                             int64_t stride = 1) {
  typename Op::State s = Op::init();
#pragma unroll
  for (int e = 0; e < N; ++e) {
    if (e < n_valid) Op::accumulate(s, v[e], idx0 + e * stride);
  }
  return s;
}

// ---------------------------------------------------------------------------
// Warp level.

// __shfl_xor_sync of any trivially-copyable T, one 32-bit word at a time.
template <class T>
__device__ __forceinline__ T shfl_xor_any(const T& v, unsigned mask, int width) {
  static_assert(std::is_trivially_copyable_v<T>, "shfl_xor_any needs a trivially copyable type");
  constexpr int kWords = static_cast<int>((sizeof(T) + 3) / 4);
  uint32_t w[kWords];
  __builtin_memcpy(w, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < kWords; ++i) w[i] = __shfl_xor_sync(0xffffffffu, w[i], mask, width);
  T r;
  __builtin_memcpy(&r, w, sizeof(T));
  return r;
}

// Combines s across each aligned group of `width` lanes (a power of two,
// 1..32); every lane of the group gets the group's result. The tree is
// warp_reduce's (distance width/2 first, lower partial first), so lane 0's
// result equals dev::warp_reduce's. Every lane of the warp must call it.
template <class Op>
__device__ __forceinline__ typename Op::State warp_allreduce(typename Op::State s, int width = 32) {
  const int lane = static_cast<int>(threadIdx.x & 31);
#pragma unroll
  for (int delta = 16; delta >= 1; delta >>= 1) {
    if (delta < width) {
      const typename Op::State other = shfl_xor_any(s, static_cast<unsigned>(delta), width);
      s = (lane & delta) ? Op::combine(other, s) : Op::combine(s, other);
    }
  }
  return s;
}

// ---------------------------------------------------------------------------
// Block level: a 1-D block of kThreads (a multiple of 32 whose warp count is
// a power of two) reduces one row; smem holds kThreads / 32 States.

template <class Op, int kThreads>
__device__ __forceinline__ typename Op::State block_allreduce(typename Op::State s, typename Op::State* smem) {
  constexpr int kWarps = kThreads / 32;
  static_assert(kThreads % 32 == 0 && kWarps >= 1 && (kWarps & (kWarps - 1)) == 0,
                "block_allreduce: kThreads must be 32 times a power of two");
  s = warp_allreduce<Op>(s);
  if constexpr (kWarps > 1) {
    const int warp = static_cast<int>(threadIdx.x >> 5), lane = static_cast<int>(threadIdx.x & 31);
    if (lane == 0) smem[warp] = s;
    __syncthreads();
    // Every aligned group of kWarps lanes folds the kWarps partials itself in
    // the same tree: the result reaches every thread without a broadcast round.
    s = warp_allreduce<Op>(smem[lane & (kWarps - 1)], kWarps);
    __syncthreads();  // smem is free for the next reduction
  }
  return s;
}

// Groups of G threads (a power of two, <= kThreads) of a 1-D block each
// reduce their own row; the group's FIRST thread gets the result (the reduce
// family's row and generic kernels: G < 32 puts several rows in a warp).
// Every thread of the block must call it; smem holds kThreads / 32 States.
template <class Op>
__device__ __forceinline__ typename Op::State group_reduce(typename Op::State st, int G, typename Op::State* smem) {
  using State = typename Op::State;
  auto comb = [](const State& a, const State& b) { return Op::combine(a, b); };
  st = warp_reduce(st, G < 32 ? G : 32, comb);
  if (G > 32) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
    const int wpg = G >> 5;  // warps per group
    if (lane == 0) smem[warp] = st;
    __syncthreads();
    if ((warp & (wpg - 1)) == 0) {
      st = lane < wpg ? smem[warp + lane] : Op::init();
      st = warp_reduce(st, wpg, comb);
    }
    __syncthreads();  // smem is reused by the next row
  }
  return st;
}

// ---------------------------------------------------------------------------
// Cluster level (sm_90): the blocks of a thread-block cluster share one row
// (block rank r holding a part that comes before rank r + 1's); each block
// reduces its part, publishes it in its shared `slot`, and every thread then
// folds the blocks' partials in rank order through distributed shared memory.
// Every thread of every block of the cluster must call it. Outside sm_90
// device code there are no clusters: the block result is returned.

template <class Op, int kThreads>
__device__ __forceinline__ typename Op::State cluster_allreduce(typename Op::State s, typename Op::State* smem,
                                                                typename Op::State* slot) {
  s = block_allreduce<Op, kThreads>(s, smem);
#ifdef BARACUDA_ROW_REDUCE_CLUSTERS
  namespace cg = cooperative_groups;
  cg::cluster_group cluster = cg::this_cluster();
  const unsigned blocks = cluster.num_blocks();
  if (blocks > 1) {
    if (threadIdx.x == 0) *slot = s;
    cluster.sync();  // every block's slot is written and visible cluster-wide
    typename Op::State r = *cluster.map_shared_rank(slot, 0);
    for (unsigned b = 1; b < blocks; ++b) r = Op::combine(r, *cluster.map_shared_rank(slot, b));
    cluster.sync();  // no block leaves (or rewrites its slot) while another still reads it
    s = r;
  }
#else
  (void)slot;
#endif
  return s;
}

// ---------------------------------------------------------------------------
// Rows held in registers: each thread folds its N values (the first n_valid;
// element idx0 + e * stride), then the scope combines.

template <class Op, class Acc, int N>
__device__ __forceinline__ typename Op::State warp_row_reduce(const Acc (&v)[N], int n_valid, int64_t idx0 = 0,
                                                              int64_t stride = 1, int width = 32) {
  return warp_allreduce<Op>(fold_registers<Op>(v, n_valid, idx0, stride), width);
}

template <class Op, int kThreads, class Acc, int N>
__device__ __forceinline__ typename Op::State block_row_reduce(const Acc (&v)[N], int n_valid,
                                                               typename Op::State* smem, int64_t idx0 = 0,
                                                               int64_t stride = 1) {
  return block_allreduce<Op, kThreads>(fold_registers<Op>(v, n_valid, idx0, stride), smem);
}

template <class Op, int kThreads, class Acc, int N>
__device__ __forceinline__ typename Op::State cluster_row_reduce(const Acc (&v)[N], int n_valid,
                                                                 typename Op::State* smem, typename Op::State* slot,
                                                                 int64_t idx0 = 0, int64_t stride = 1) {
  return cluster_allreduce<Op, kThreads>(fold_registers<Op>(v, n_valid, idx0, stride), smem, slot);
}

}  // namespace baracuda::dev
