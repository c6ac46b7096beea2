// Forward reduction kernels. One template per algorithm (row, column, generic,
// finalize-partials), instantiated per (kind, dtype) through the Op traits
// below; forward_<dtype>.cu hold the explicit instantiations, forward_launch.cu
// picks the algorithm and fills FwdParams.
//
// Determinism: every element is assigned to a thread, and every partial state
// to a combination step, by the launch configuration alone (which depends on
// layout, kind, dtype, ws_bytes, sm_count and the alignment of x mod 16); all
// combinations run in a fixed order (sequential per thread, fixed shuffle trees,
// fixed shared-memory trees, partials combined in split order). No atomics.
#pragma once
#include <cuda_runtime.h>

#include <cstdint>
#include <type_traits>

#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "cuda/row_reduce.cuh"
#include "cuda/vector_io.cuh"
#include "cuda/warp_reduce.cuh"
#include "ops/reduce/launch.hpp"

namespace baracuda::reduce::cuda::fwd {

using dev::acc_t;

inline constexpr int kThreads = 256;  // every forward kernel uses 1-D blocks of this size
inline constexpr int kMinBlocksPerSm = 4;  // default register budget: 4 resident blocks (<= 64 registers)
inline constexpr int kRowUnroll = 4;  // 16-byte loads in flight per thread and iteration

enum class Algo : int { RowWarp, RowBlock, RowSplit, Column, ColumnSplit, Generic, GenericSplit };

struct FinalizeArgs {
  int64_t correction;  // Var / Std
  int mode;            // SumOp: 1 = Mean; VarOp: 1 = Std
};

// Everything a forward kernel reads, by value (lives in the constant bank, so
// indexing the dims arrays with unrolled constant indices costs no registers).
struct FwdParams {
  const void* x;
  void* y;
  void* ws;  // partial states [num_out][splits], 16-byte aligned; null without split
  Algo algo;
  int group;      // row / generic: threads per output (power of two, <= kThreads)
  int splits;     // blocks (grid.y) sharing one output; 1 = finalize in place
  int fin_group;  // finalize kernel: threads per output (power of two, <= 32)
  int lx_log2;    // column: log2 of the threads across columns
  int vec;        // column: 1 or col_vec<Op>() (selects the instantiation)
  unsigned grid_x;
  unsigned fin_grid_x;
  bool pdl;  // launch the finalize kernel with programmatic dependent launch (sm_90+)
  // Kept dims, row-major (for Column: the unit-stride dim moved last). The
  // output id of partial states is the row-major index over these dims.
  int n_kept;
  int64_t kept_size[kMaxRank];
  int64_t kept_in[kMaxRank];
  int64_t kept_out[kMaxRank];
  int64_t num_out;
  int64_t red_numel;  // n: elements per output
  int64_t seg_len;    // per split: elements (row), rows (column), linear indices (generic)
  int64_t red_stride0;  // column: stride between rows
  // Generic: reduced dims innermost-first; the outermost one is implicit.
  int n_red;
  int64_t rsize[kMaxRank];
  int64_t rstride[kMaxRank];
  int64_t step_digit[kMaxRank];  // `group` written in the mixed radix of rsize
  int64_t carry_adj[kMaxRank];   // offset change when digit k wraps into k+1
  int64_t step_off;              // offset change of a step by `group` (no wraps)
  int64_t rstride_top;           // stride of the outermost reduced dim
  FinalizeArgs fin;
};

// ---------------------------------------------------------------------------
// Ops. Each defines In, Acc, State, Out and
//   init()                       identity of combine
//   accumulate(s, v, idx)        one value; idx = its reduced linear index
//   accumulate_n<N>(s, v, i0, d) N values with indices i0, i0+d, ... (ascending)
//   combine(a, b)                a covers lower indices or comes first in a fixed order
//   finalize(s, n, fin)          -> Out
// OpBase supplies accumulate_n as a loop; ops with a cheaper batched update
// (Welford, online log-sum-exp) replace it.
template <class Derived, class AccT>
struct OpBase {
  template <int N, class State>
  __device__ __forceinline__ static void accumulate_n(State& s, const AccT (&v)[N], int64_t i0, int64_t d) {
#pragma unroll
    for (int e = 0; e < N; ++e) Derived::accumulate(s, v[e], i0 + e * d);
  }
};

template <class T>
using int_widened_t = std::conditional_t<dev::is_float_v<T>, T, int64_t>;

// Sum and Mean share accumulation (one instantiation; fin.mode picks Mean).
template <class T>
struct SumOp : OpBase<SumOp<T>, acc_t<T>> {
  using In = T;
  using Acc = acc_t<T>;
  using State = Acc;
  using Out = int_widened_t<T>;
  __device__ __forceinline__ static State init() { return Acc(0); }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) {
    if constexpr (dev::is_float_v<T>) s += v; else s = dev::wrap_add(s, v);
  }
  __device__ __forceinline__ static State combine(State a, State b) {
    if constexpr (dev::is_float_v<T>) return a + b; else return dev::wrap_add(a, b);
  }
  __device__ __forceinline__ static Out finalize(State s, int64_t n, const FinalizeArgs& f) {
    if constexpr (dev::is_float_v<T>) {
      if (f.mode == 1) s = s / static_cast<Acc>(n);  // n == 0: 0/0 = NaN, as specified
    }
    return dev::from_acc<Out>(s);
  }
};

template <class T>
struct ProdOp : OpBase<ProdOp<T>, acc_t<T>> {
  using In = T;
  using Acc = acc_t<T>;
  using State = Acc;
  using Out = int_widened_t<T>;
  __device__ __forceinline__ static State init() { return Acc(1); }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) {
    if constexpr (dev::is_float_v<T>) s *= v; else s = dev::wrap_mul(s, v);
  }
  __device__ __forceinline__ static State combine(State a, State b) {
    if constexpr (dev::is_float_v<T>) return a * b; else return dev::wrap_mul(a, b);
  }
  __device__ __forceinline__ static Out finalize(State s, int64_t, const FinalizeArgs&) { return dev::from_acc<Out>(s); }
};

template <class T>
struct Norm2Op : OpBase<Norm2Op<T>, acc_t<T>> {
  using In = T;
  using Acc = acc_t<T>;
  using State = Acc;
  using Out = T;
  __device__ __forceinline__ static State init() { return Acc(0); }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) { s = fma(v, v, s); }
  __device__ __forceinline__ static State combine(State a, State b) { return a + b; }
  __device__ __forceinline__ static Out finalize(State s, int64_t, const FinalizeArgs&) {
    return dev::from_acc<Out>(dev::acc_sqrt(s));
  }
};

template <class T, bool kMax>
struct ExtremumOp : OpBase<ExtremumOp<T, kMax>, acc_t<T>> {
  using In = T;
  using Acc = acc_t<T>;
  using State = Acc;
  using Out = T;
  __device__ __forceinline__ static State init() {
    return kMax ? dev::lowest_value<Acc>() : dev::highest_value<Acc>();
  }
  __device__ __forceinline__ static State combine(State a, State b) {
    return kMax ? dev::max_nan(a, b) : dev::min_nan(a, b);
  }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) { s = combine(s, v); }
  __device__ __forceinline__ static Out finalize(State s, int64_t, const FinalizeArgs&) { return dev::from_acc<Out>(s); }
};
template <class T>
using MaxOp = ExtremumOp<T, true>;
template <class T>
using MinOp = ExtremumOp<T, false>;

// Online log-sum-exp: m = running max, s = sum of exp(v - m).
template <class Acc>
struct LseState {
  Acc m;
  Acc s;
};
template <class T>
struct LseOp {
  using In = T;
  using Acc = acc_t<T>;
  using State = LseState<Acc>;
  using Out = T;
  // exp(x - m) for x <= m where x == m == +-inf must give 1, not exp(NaN).
  __device__ __forceinline__ static Acc scale(Acc x, Acc m) { return x == m ? Acc(1) : dev::acc_exp_nonpos(x - m); }
  __device__ __forceinline__ static State init() { return {dev::lowest_value<Acc>(), Acc(0)}; }
  __device__ __forceinline__ static void accumulate(State& st, Acc v, int64_t) {
    if (v > st.m) {  // NaN never takes this branch, so m is never NaN
      st.s = st.s * dev::acc_exp_nonpos(st.m - v) + Acc(1);  // m = -inf: exp(-inf) = 0
      st.m = v;
    } else {
      st.s += scale(v, st.m);  // v NaN: exp(NaN) poisons s, as it should
    }
  }
  // One rescale per batch instead of one per element.
  template <int N>
  __device__ __forceinline__ static void accumulate_n(State& st, const Acc (&v)[N], int64_t, int64_t) {
    Acc cmax = v[0];
#pragma unroll
    for (int e = 1; e < N; ++e) cmax = fmax(cmax, v[e]);  // drops NaN; the sum still sees it
    if (cmax > st.m) {
      st.s *= dev::acc_exp_nonpos(st.m - cmax);
      st.m = cmax;
    }
    if (isinf(st.m)) {  // all -inf so far, or +inf present: exp(inf - inf) must not appear
#pragma unroll
      for (int e = 0; e < N; ++e) st.s += scale(v[e], st.m);
    } else {
#pragma unroll
      for (int e = 0; e < N; ++e) st.s += dev::acc_exp_nonpos(v[e] - st.m);
    }
  }
  __device__ __forceinline__ static State combine(const State& a, const State& b) {
    const Acc m = a.m > b.m ? a.m : b.m;
    return {m, a.s * scale(a.m, m) + b.s * scale(b.m, m)};
  }
  __device__ __forceinline__ static Out finalize(const State& st, int64_t, const FinalizeArgs&) {
    return dev::from_acc<Out>(st.m + dev::acc_log(st.s));  // empty: -inf + log(0) = -inf
  }
};

// Welford (count, mean, M2); Chan et al.'s pairwise update merges partials.
// The count is kept in Acc: per-thread counts are exact, and beyond 2^24 (f32)
// only the merge weights round, never the n used by finalize.
template <class Acc>
struct WelfordState {
  Acc n;
  Acc mean;
  Acc m2;
};
template <class T>
struct VarOp {
  using In = T;
  using Acc = acc_t<T>;
  using State = WelfordState<Acc>;
  using Out = T;
  __device__ __forceinline__ static State init() { return {Acc(0), Acc(0), Acc(0)}; }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t) {
    s.n += Acc(1);
    const Acc d = v - s.mean;
    s.mean += dev::acc_div_approx(d, s.n);
    s.m2 = fma(d, v - s.mean, s.m2);
  }
  // Batch statistics first, then one Chan merge: one division per N values
  // instead of one per value.
  template <int N>
  __device__ __forceinline__ static void accumulate_n(State& s, const Acc (&v)[N], int64_t, int64_t) {
    // Shifted by v[0]: a constant batch gives mean == v[0] and M2 == 0 exactly.
    Acc sum = Acc(0);
#pragma unroll
    for (int e = 1; e < N; ++e) sum += v[e] - v[0];
    const Acc mb = fma(sum, Acc(1) / Acc(N), v[0]);  // N is a power of two: exact scaling
    Acc m2b = Acc(0);
#pragma unroll
    for (int e = 0; e < N; ++e) {
      const Acc d = v[e] - mb;
      m2b = fma(d, d, m2b);
    }
    const Acc n = s.n + Acc(N);
    const Acc delta = mb - s.mean;
    const Acc r = dev::acc_div_approx(Acc(N), n);
    s.mean = fma(delta, r, s.mean);
    s.m2 = s.m2 + m2b + delta * delta * s.n * r;
    s.n = n;
  }
  __device__ __forceinline__ static State combine(const State& a, const State& b) {
    if (b.n == Acc(0)) return a;
    if (a.n == Acc(0)) return b;
    const Acc n = a.n + b.n;
    const Acc delta = b.mean - a.mean;
    const Acc r = b.n / n;
    return {n, fma(delta, r, a.mean), a.m2 + b.m2 + delta * delta * a.n * r};
  }
  __device__ __forceinline__ static Out finalize(const State& s, int64_t n, const FinalizeArgs& f) {
    const int64_t dof = n - f.correction > 0 ? n - f.correction : 0;
    Acc v = s.m2 / static_cast<Acc>(dof);  // IEEE: 0/0 = NaN, x/0 = inf, as specified
    if (f.mode == 1) v = dev::acc_sqrt(v);
    return dev::from_acc<Out>(v);
  }
};

// ArgMax / ArgMin: NaN is the extreme (the first NaN wins); ties keep the
// smaller index in accumulate AND combine, so the split never matters.
template <class Acc>
struct ArgState {
  Acc v;
  int64_t i;
};
template <class T, bool kMax>
struct ArgOp : OpBase<ArgOp<T, kMax>, acc_t<T>> {
  using In = T;
  using Acc = acc_t<T>;
  using State = ArgState<Acc>;
  using Out = int64_t;
  __device__ __forceinline__ static State init() {
    return {kMax ? dev::lowest_value<Acc>() : dev::highest_value<Acc>(), INT64_MAX};
  }
  // Does (v, i) beat the current state?
  __device__ __forceinline__ static bool better(Acc v, int64_t i, const State& s) {
    if constexpr (dev::is_float_v<T>) {
      if (s.v != s.v) return v != v && i < s.i;
      if (v != v) return true;
    }
    const bool strictly = kMax ? (v > s.v) : (v < s.v);
    return strictly || (v == s.v && i < s.i);
  }
  __device__ __forceinline__ static void accumulate(State& s, Acc v, int64_t i) {
    if (better(v, i, s)) s = {v, i};
  }
  // The batch's extreme first (NaN-propagating), then its first position, then
  // one 64-bit compare against the state: ~3 instructions per value instead of ~12.
  template <int N>
  __device__ __forceinline__ static void accumulate_n(State& s, const Acc (&v)[N], int64_t i0, int64_t d) {
    Acc b = v[0];
#pragma unroll
    for (int e = 1; e < N; ++e) b = kMax ? dev::max_nan(b, v[e]) : dev::min_nan(b, v[e]);
    int k = 0;  // b is one of the values, so some e matches; the lowest one wins
#pragma unroll
    for (int e = N - 1; e >= 0; --e) {
      if (v[e] == b || (dev::is_nan(b) && dev::is_nan(v[e]))) k = e;
    }
    accumulate(s, b, i0 + k * d);
  }
  __device__ __forceinline__ static State combine(const State& a, const State& b) {
    return better(b.v, b.i, a) ? b : a;
  }
  __device__ __forceinline__ static Out finalize(const State& s, int64_t, const FinalizeArgs&) { return s.i; }
};
template <class T>
using ArgMaxOp = ArgOp<T, true>;
template <class T>
using ArgMinOp = ArgOp<T, false>;

// Register budget (resident blocks of kThreads): 4 (<= 64 registers) keeps
// enough 16-byte loads in flight. A column thread holding V large states
// (Welford / log-sum-exp / arg pairs) would spill under 64, so it gets 3
// (<= 80; f16, whose conversions need a few more registers, one step lower);
// f64 exp / Welford arithmetic gets 2 (<= 128). Checked with -Xptxas -v for
// sm_90a and sm_80: no spills.
template <class Op, int V>
constexpr int min_blocks() {
  using In = typename Op::In;
  constexpr bool f64_heavy = sizeof(typename Op::Acc) == 8 && sizeof(typename Op::State) >= 16 && dev::is_float_v<In>;
  if (f64_heavy) return 2;
  if (V * sizeof(typename Op::State) > 32) return std::is_same_v<In, __half> ? 2 : 3;
  if (V * sizeof(typename Op::State) == 32 && std::is_same_v<In, __half>) return 3;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 900
  // sm_8x needs a few more registers for the 8- and 16-byte states. Only the
  // device pass sees this; host planning keeps the sm_90 figure (at worst a
  // split there slightly exceeds one wave).
  if (sizeof(typename Op::State) >= 8) return 3;
#endif
  return kMinBlocksPerSm;
}
// Column vector width: 16 bytes, but 8 for 16-bit inputs whose per-column
// state is large (Welford, log-sum-exp, arg pairs): half the states per
// thread, twice the rows per batch, same bytes in flight.
template <class Op>
constexpr int col_vec() {
  using In = typename Op::In;
  constexpr int v16 = dev::kVec16<In>;
  return (sizeof(In) == 2 && v16 * sizeof(typename Op::State) > 32) ? v16 / 2 : v16;
}

// The generic kernel also keeps its per-thread mixed-radix digits in registers.
template <class Op>
constexpr int generic_min_blocks() {
  return sizeof(typename Op::State) >= 8 ? 2 : min_blocks<Op, 1>();
}

// ---------------------------------------------------------------------------
// Index helpers.

// 64-bit division is a ~70-instruction software sequence; almost every real
// index fits 32 bits, where the hardware path is a few instructions.
__device__ __forceinline__ uint64_t div_u64(uint64_t a, uint64_t b) {
  if (((a | b) >> 32) == 0) return static_cast<uint32_t>(a) / static_cast<uint32_t>(b);
  return a / b;
}

struct Offsets {
  int64_t in;
  int64_t out;
};

// Row-major decode of an output id over the first `ndims` kept dims. Called
// once per output (or per tile), never per element.
__device__ __forceinline__ Offsets decode_kept(const FwdParams& P, int64_t id, int ndims) {
  Offsets o{0, 0};
  uint64_t rem = static_cast<uint64_t>(id);
#pragma unroll
  for (int k = kMaxRank - 1; k >= 1; --k) {
    if (k < ndims) {
      const uint64_t q = div_u64(rem, static_cast<uint64_t>(P.kept_size[k]));
      const int64_t c = static_cast<int64_t>(rem - q * static_cast<uint64_t>(P.kept_size[k]));
      o.in += c * P.kept_in[k];
      o.out += c * P.kept_out[k];
      rem = q;
    }
  }
  if (ndims > 0) {
    o.in += static_cast<int64_t>(rem) * P.kept_in[0];
    o.out += static_cast<int64_t>(rem) * P.kept_out[0];
  }
  return o;
}

// Combines the states of each aligned group of G threads of the block
// (G a power of two <= kThreads); the group's first thread gets the result
// (the shared row-reduction block, src/cuda/row_reduce.cuh).
using dev::group_reduce;

// Lets a programmatically dependent finalize grid get scheduled early (no-op
// without PDL or before sm_90). Safe anywhere: the dependent still waits for
// this grid's completion in grid_dependency_wait().
__device__ __forceinline__ void allow_dependent_launch() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.launch_dependents;");
#endif
}
__device__ __forceinline__ void grid_dependency_wait() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
}

template <class Op>
__device__ __forceinline__ void store_result(const FwdParams& P, const typename Op::State& st, int64_t id,
                                             int64_t out_off) {
  if (P.splits == 1) {
    static_cast<typename Op::Out*>(P.y)[out_off] = Op::finalize(st, P.red_numel, P.fin);
  } else {
    static_cast<typename Op::State*>(P.ws)[id * P.splits + blockIdx.y] = st;
  }
}

// ---------------------------------------------------------------------------
// Row kernel: reduced dim contiguous. G threads per row (a power of two; G < 32
// puts several rows in a warp, G = kThreads gives a block per row, or per
// segment of a row when split across grid.y). Per row: a scalar head up to
// 16-byte alignment, batches of kRowUnroll 16-byte loads per thread issued
// together, a scalar tail. Each thread visits ascending indices; the group
// combines in a fixed tree.
template <class Op>
__device__ __forceinline__ typename Op::State row_segment(const typename Op::In* p, int64_t len, int l, int G,
                                                          int64_t idx0) {
  using In = typename Op::In;
  using Acc = typename Op::Acc;
  constexpr int V = dev::kVec16<In>;
  constexpr int U = kRowUnroll;
  typename Op::State st = Op::init();

  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  int64_t h = static_cast<int64_t>(((16 - (a & 15)) & 15) / sizeof(In));
  if (a % sizeof(In) != 0) h = len;  // never reaches alignment: all scalar
  if (h > len) h = len;
  for (int64_t k = l; k < h; k += G) Op::accumulate(st, dev::to_acc<Acc>(dev::load_ro(p + k)), idx0 + k);

  const int64_t nvec = (len - h) / V;
  const char* vp = reinterpret_cast<const char*>(p + h);
  const int64_t vidx0 = idx0 + h;
  // Predicated rather than a separate remainder loop: a thread's last (or only)
  // vectors still go out together instead of one round trip each.
  for (int64_t i = l; i < nvec; i += U * G) {
    dev::Words<16> r[U];
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (i + u * G < nvec) r[u] = dev::load_stream<16>(vp + (i + u * G) * 16);
    }
#pragma unroll
    for (int u = 0; u < U; ++u) {
      if (i + u * G < nvec) {
        Acc v[V];
        dev::unpack<In, Acc, 16>(r[u], v);
        Op::template accumulate_n<V>(st, v, vidx0 + (i + u * G) * V, 1);
      }
    }
  }
  for (int64_t k = h + nvec * V + l; k < len; k += G) {
    Op::accumulate(st, dev::to_acc<Acc>(dev::load_ro(p + k)), idx0 + k);
  }
  return st;
}

template <class Op>
__global__ void __launch_bounds__(kThreads, (min_blocks<Op, 1>())) row_kernel(const FwdParams P) {
  using State = typename Op::State;
  using In = typename Op::In;
  __shared__ State smem[kThreads / 32];
  const int G = P.group;
  const int t = static_cast<int>(threadIdx.x);
  const int l = t & (G - 1);
  const int rows_per_block = kThreads / G;
  const int64_t seg_begin = static_cast<int64_t>(blockIdx.y) * P.seg_len;
  const int64_t seg_end = seg_begin + P.seg_len < P.red_numel ? seg_begin + P.seg_len : P.red_numel;
  const int64_t len = seg_end > seg_begin ? seg_end - seg_begin : 0;
  const int64_t num_rg = (P.num_out + rows_per_block - 1) / rows_per_block;
  allow_dependent_launch();
  for (int64_t rg = blockIdx.x; rg < num_rg; rg += gridDim.x) {  // block-uniform trip count
    const int64_t row = rg * rows_per_block + t / G;
    State st = Op::init();
    Offsets off{0, 0};
    if (row < P.num_out) {
      off = decode_kept(P, row, P.n_kept);
      st = row_segment<Op>(static_cast<const In*>(P.x) + off.in + seg_begin, len, l, G, seg_begin);
    }
    st = group_reduce<Op>(st, G, smem);
    if (l == 0 && row < P.num_out) store_result<Op>(P, st, row, off.out);
  }
}

// ---------------------------------------------------------------------------
// Column kernel: one reduced dim (any stride), the last kept dim contiguous.
// Threads (cx, ry): LX threads take consecutive V-wide column vectors
// (coalesced), RY = kThreads/LX row slots take rows ry, ry+RY, ... of this
// split's row range, U rows in flight. Row slots merge through a fixed
// shared-memory tree. grid.x walks (outer index, column tile) units.
template <class Op, int V>
__global__ void __launch_bounds__(kThreads, (min_blocks<Op, V>())) column_kernel(const FwdParams P) {
  using In = typename Op::In;
  using Acc = typename Op::Acc;
  using State = typename Op::State;
  constexpr int kBytes = V * static_cast<int>(sizeof(In));
  constexpr int U = kBytes >= 16 ? 4 : 8;  // 32-64 bytes in flight per thread
  static_assert(V == 1 || kBytes == 8 || kBytes == 16);
  __shared__ __align__(16) unsigned char smem_raw[(kThreads / 2) * V * sizeof(State)];
  State* smem = reinterpret_cast<State*>(smem_raw);

  const int LX = 1 << P.lx_log2;
  const int RY = kThreads >> P.lx_log2;
  const int t = static_cast<int>(threadIdx.x);
  const int cx = t & (LX - 1);
  const int ry = t >> P.lx_log2;
  const int ncol_dim = P.n_kept - 1;
  const int64_t C = P.kept_size[ncol_dim];
  const int64_t tile_w = static_cast<int64_t>(LX) * V;
  const int64_t tiles = (C + tile_w - 1) / tile_w;
  const int64_t units = (P.num_out / C) * tiles;
  const int64_t rs = P.red_stride0;
  const int64_t r_begin = static_cast<int64_t>(blockIdx.y) * P.seg_len;
  const int64_t r_end = r_begin + P.seg_len < P.red_numel ? r_begin + P.seg_len : P.red_numel;
  allow_dependent_launch();
  for (int64_t unit = blockIdx.x; unit < units; unit += gridDim.x) {  // block-uniform trip count
    const int64_t q = static_cast<int64_t>(div_u64(static_cast<uint64_t>(unit), static_cast<uint64_t>(tiles)));
    const int64_t c0 = (unit - q * tiles) * tile_w + static_cast<int64_t>(cx) * V;
    const bool valid = c0 < C;
    const Offsets qo = decode_kept(P, q, ncol_dim);
    State st[V];
#pragma unroll
    for (int e = 0; e < V; ++e) st[e] = Op::init();
    if (valid) {
      const In* p = static_cast<const In*>(P.x) + qo.in + c0 + (r_begin + ry) * rs;
      const int64_t step = static_cast<int64_t>(RY) * rs;
      for (int64_t r = r_begin + ry; r < r_end; r += U * RY) {
        // Predicated loads: the last partial batch still goes out at once.
        Acc v[U][V];
        if constexpr (V == 1) {
          In raw[U];
#pragma unroll
          for (int u = 0; u < U; ++u) {
            if (r + u * RY < r_end) raw[u] = dev::load_ro(p + u * step);
          }
#pragma unroll
          for (int u = 0; u < U; ++u) v[u][0] = dev::to_acc<Acc>(raw[u]);
        } else {
          dev::Words<kBytes> raw[U];
#pragma unroll
          for (int u = 0; u < U; ++u) {
            if (r + u * RY < r_end) raw[u] = dev::load_stream<kBytes>(p + u * step);
          }
#pragma unroll
          for (int u = 0; u < U; ++u) dev::unpack<In, Acc, kBytes>(raw[u], v[u]);
        }
        p += U * step;
        if (r + (U - 1) * RY < r_end) {
#pragma unroll
          for (int e = 0; e < V; ++e) {
            Acc col[U];
#pragma unroll
            for (int u = 0; u < U; ++u) col[u] = v[u][e];
            Op::template accumulate_n<U>(st[e], col, r, RY);
          }
        } else {
#pragma unroll
          for (int u = 0; u < U; ++u) {
            if (r + u * RY < r_end) {
#pragma unroll
              for (int e = 0; e < V; ++e) Op::accumulate(st[e], v[u][e], r + u * RY);
            }
          }
        }
      }
    }
    // Fixed tree over row slots: slot ry absorbs slot ry + half.
    for (int half = RY >> 1; half >= 1; half >>= 1) {
      if (ry >= half && ry < 2 * half) {
#pragma unroll
        for (int e = 0; e < V; ++e) smem[e * (kThreads / 2) + (ry - half) * LX + cx] = st[e];
      }
      __syncthreads();
      if (ry < half) {
#pragma unroll
        for (int e = 0; e < V; ++e) st[e] = Op::combine(st[e], smem[e * (kThreads / 2) + ry * LX + cx]);
      }
      __syncthreads();
    }
    if (ry == 0 && valid) {
#pragma unroll
      for (int e = 0; e < V; ++e) {
        const int64_t c = c0 + e;
        store_result<Op>(P, st[e], q * C + c, qo.out + c * P.kept_out[ncol_dim]);
      }
    }
  }
}

// ---------------------------------------------------------------------------
// Generic kernel: any reduced dims and strides. G threads per output; thread l
// takes reduced linear indices j = begin + l, + G, ... Its offset is decoded
// once, then advanced by a mixed-radix add of G (no division per element).
template <class Op>
__global__ void __launch_bounds__(kThreads, (generic_min_blocks<Op>())) generic_kernel(const FwdParams P) {
  using In = typename Op::In;
  using Acc = typename Op::Acc;
  using State = typename Op::State;
  constexpr int U = 4;
  constexpr int kD = kMaxRank - 1;  // tracked digits (the outermost one is implicit)
  __shared__ State smem[kThreads / 32];
  const int G = P.group;
  const int t = static_cast<int>(threadIdx.x);
  const int l = t & (G - 1);
  const int outs_per_block = kThreads / G;
  const int nd = P.n_red - 1;  // tracked digits in use
  const int64_t begin = static_cast<int64_t>(blockIdx.y) * P.seg_len;
  const int64_t end = begin + P.seg_len < P.red_numel ? begin + P.seg_len : P.red_numel;
  const int64_t num_og = (P.num_out + outs_per_block - 1) / outs_per_block;
  allow_dependent_launch();
  for (int64_t og = blockIdx.x; og < num_og; og += gridDim.x) {  // block-uniform trip count
    const int64_t o = og * outs_per_block + t / G;
    State st = Op::init();
    Offsets ko{0, 0};
    if (o < P.num_out) {
      ko = decode_kept(P, o, P.n_kept);
      const In* x = static_cast<const In*>(P.x) + ko.in;
      int64_t j = begin + l;
      if (j < end) {
        int64_t d[kD];
        int64_t off = 0;
        uint64_t rem = static_cast<uint64_t>(j);
#pragma unroll
        for (int k = 0; k < kD; ++k) {
          d[k] = 0;
          if (k < nd) {
            const uint64_t qk = div_u64(rem, static_cast<uint64_t>(P.rsize[k]));
            d[k] = static_cast<int64_t>(rem - qk * static_cast<uint64_t>(P.rsize[k]));
            off += d[k] * P.rstride[k];
            rem = qk;
          }
        }
        off += static_cast<int64_t>(rem) * P.rstride_top;
        auto advance = [&]() {
          off += P.step_off;
          int64_t carry = 0;
#pragma unroll
          for (int k = 0; k < kD; ++k) {
            if (k < nd) {
              d[k] += P.step_digit[k] + carry;
              carry = d[k] >= P.rsize[k];
              if (carry) {
                d[k] -= P.rsize[k];
                off += P.carry_adj[k];
              }
            }
          }
        };
        for (; j < end; j += U * static_cast<int64_t>(G)) {
          int64_t offs[U];
#pragma unroll
          for (int u = 0; u < U; ++u) {
            offs[u] = off;
            advance();
          }
          In raw[U];
#pragma unroll
          for (int u = 0; u < U; ++u) {
            if (j + u * static_cast<int64_t>(G) < end) raw[u] = dev::load_ro(x + offs[u]);
          }
#pragma unroll
          for (int u = 0; u < U; ++u) {
            if (j + u * static_cast<int64_t>(G) < end) {
              Op::accumulate(st, dev::to_acc<Acc>(raw[u]), j + u * static_cast<int64_t>(G));
            }
          }
        }
      }
    }
    st = group_reduce<Op>(st, G, smem);
    if (l == 0 && o < P.num_out) store_result<Op>(P, st, o, ko.out);
  }
}

// ---------------------------------------------------------------------------
// Finalize after a split: fin_group threads per output combine its partials
// (lane l takes splits l, l + fin_group, ... in order, then a fixed shuffle tree).
template <class Op>
__global__ void __launch_bounds__(kThreads) finalize_kernel(const FwdParams P) {
  using State = typename Op::State;
  const int G = P.fin_group;
  const int t = static_cast<int>(threadIdx.x);
  const int l = t & (G - 1);
  const int outs_per_block = kThreads / G;
  const int64_t num_og = (P.num_out + outs_per_block - 1) / outs_per_block;
  const State* ws = static_cast<const State*>(P.ws);
  grid_dependency_wait();
  for (int64_t og = blockIdx.x; og < num_og; og += gridDim.x) {
    const int64_t o = og * outs_per_block + t / G;
    State st = Op::init();
    if (o < P.num_out) {
      for (int s = l; s < P.splits; s += G) st = Op::combine(st, ws[o * P.splits + s]);
    }
    st = dev::warp_reduce(st, G, [](const State& a, const State& b) { return Op::combine(a, b); });
    if (l == 0 && o < P.num_out) {
      const Offsets off = decode_kept(P, o, P.n_kept);
      static_cast<typename Op::Out*>(P.y)[off.out] = Op::finalize(st, P.red_numel, P.fin);
    }
  }
}

// ---------------------------------------------------------------------------
// Host side: launches what FwdParams describes (filled by forward_launch.cu).
template <class Op>
Status launch_op(const FwdParams& P, cudaStream_t stream) {
  const dim3 block(kThreads);
  const dim3 grid(P.grid_x, static_cast<unsigned>(P.splits));
  const char* name = "ReducePlan: generic_kernel";
  switch (P.algo) {
    case Algo::RowWarp:
    case Algo::RowBlock:
    case Algo::RowSplit:
      name = "ReducePlan: row_kernel";
      row_kernel<Op><<<grid, block, 0, stream>>>(P);
      break;
    case Algo::Column:
    case Algo::ColumnSplit:
      name = "ReducePlan: column_kernel";
      if (P.vec == 1) {
        column_kernel<Op, 1><<<grid, block, 0, stream>>>(P);
      } else {
        column_kernel<Op, col_vec<Op>()><<<grid, block, 0, stream>>>(P);
      }
      break;
    case Algo::Generic:
    case Algo::GenericSplit:
      generic_kernel<Op><<<grid, block, 0, stream>>>(P);
      break;
  }
  cudaError_t err = cudaGetLastError();
  if (err != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(err), name);
  if (P.splits > 1) {
    // Programmatic dependent launch (sm_90+): the finalize grid is scheduled
    // while the main grid drains and waits in griddepcontrol.wait, which
    // returns once the main grid has completed and its writes are visible.
    // This hides the second launch's latency; elsewhere it is a plain launch.
    cudaLaunchAttribute attr[1];
    attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    attr[0].val.programmaticStreamSerializationAllowed = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(P.fin_grid_x);
    cfg.blockDim = block;
    cfg.dynamicSmemBytes = 0;
    cfg.stream = stream;
    if (P.pdl) {
      cfg.attrs = attr;
      cfg.numAttrs = 1;
    }
    err = cudaLaunchKernelEx(&cfg, finalize_kernel<Op>, P);
    if (err == cudaSuccess) err = cudaGetLastError();
    if (err != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(err), "ReducePlan: finalize_kernel");
  }
  return Status::ok();
}

// The ops each dtype family instantiates. forward_launch.cu only declares them
// (extern template below), so the kernels compile once, in forward_<dtype>.cu.
#define BARACUDA_REDUCE_FWD_FLOAT_OPS(X, T) \
  X(SumOp<T>) X(ProdOp<T>) X(MaxOp<T>) X(MinOp<T>) X(Norm2Op<T>) X(LseOp<T>) X(VarOp<T>) X(ArgMaxOp<T>) X(ArgMinOp<T>)
#define BARACUDA_REDUCE_FWD_INT_OPS(X, T) \
  X(SumOp<T>) X(ProdOp<T>) X(MaxOp<T>) X(MinOp<T>) X(ArgMaxOp<T>) X(ArgMinOp<T>)

#define BARACUDA_REDUCE_FWD_EXTERN(OP) extern template Status launch_op<OP>(const FwdParams&, cudaStream_t);
#define BARACUDA_REDUCE_FWD_INSTANTIATE(OP) template Status launch_op<OP>(const FwdParams&, cudaStream_t);

BARACUDA_REDUCE_FWD_FLOAT_OPS(BARACUDA_REDUCE_FWD_EXTERN, float)
BARACUDA_REDUCE_FWD_FLOAT_OPS(BARACUDA_REDUCE_FWD_EXTERN, double)
BARACUDA_REDUCE_FWD_FLOAT_OPS(BARACUDA_REDUCE_FWD_EXTERN, __half)
BARACUDA_REDUCE_FWD_FLOAT_OPS(BARACUDA_REDUCE_FWD_EXTERN, __nv_bfloat16)
BARACUDA_REDUCE_FWD_INT_OPS(BARACUDA_REDUCE_FWD_EXTERN, int32_t)
BARACUDA_REDUCE_FWD_INT_OPS(BARACUDA_REDUCE_FWD_EXTERN, int64_t)

}  // namespace baracuda::reduce::cuda::fwd
