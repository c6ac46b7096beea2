// RoPE CUDA kernel: one template, launch_typed<T> instantiated per dtype as listed
// in ../manifest.cmake (generated TUs; rope_launch.cu dispatches).
//
// Work split. The flattened tokens t = b * S + s are cut into groups of `tb`
// consecutive tokens; a block owns one group at a time (grid-stride over
// groups). A thread's unit of work is
//     (token, group of kBatch heads of the list "q heads then k heads", chunk)
// numbered with the chunk fastest, so consecutive threads touch consecutive
// memory of a row. A chunk is ROTARY (Interleaved: V elements = V/2 pairs;
// HalfSplit: V elements of the first half plus their V partners R/2 further
// on = V pairs) or PASS-THROUGH (dims [R, D), copied; skipped when the output
// is the input itself). V = 16 bytes of elements on the vector path, 2
// (Interleaved) / 1 (HalfSplit) elements with arbitrary strides on the
// generic path. The kBatch heads of a unit share the token and the pairs, so
// their loads are issued together and the cos/sin values are read once.
//
// cos / sin. Each block first computes cos/sin of every (token, pair) of its
// group ONCE into shared memory (tb * R/2 entries, any thread one entry) and
// every head of q and k reuses them. Before that, each thread already issues
// the loads of its first unit, so the table is computed while they are in
// flight. Angles: inv_freq = pow(theta, -2i/R) in double, computed on the
// host for i < 256 (bit-identical to the CPU reference; passed in the kernel
// parameters) and by the device pow beyond; pos * inv_freq in double;
// f32/f16/bf16 reduce the angle modulo 2*pi in double (Cody-Waite, 2 FMAs)
// and call sincosf on the f32 remainder in [-pi, pi]; f64 calls sincos. When
// a table row would exceed kTableBytes (R/2 > 2048 in f32, 1024 in f64) a
// separate instantiation computes cos/sin per unit instead (strided path).
//
// Every output element is written by exactly one thread, after that thread has
// read the input element(s) it depends on: in place (output == input) is safe,
// and the result does not depend on scheduling (deterministic, bit-stable).
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "core/align.hpp"
#include "core/cuda_device.hpp"
#include "core/int_math.hpp"
#include "core/strided_view.hpp"
#include "cuda/numeric.cuh"
#include "ops/rope/launch.hpp"

namespace baracuda::rope::cuda::kern {

constexpr int kThreads = 256;
constexpr int64_t kMaxTokensPerBlock = 64;
constexpr int64_t kTableBytes = 16 * 1024;
constexpr int kParamFreqs = 256;  // inv_freq values passed in the kernel parameters

using baracuda::detail::FastDiv;
using baracuda::detail::StridedView;

// One side (q or k) of the kernel: input and output [b, h, s, d] views.
struct DView {
  StridedView<4> in;
  StridedView<4, void*> out;
};

struct Params {
  DView v[2];              // 0: q side, 1: k side
  int skip_pass[2];        // 1: pass-through dims are not rewritten (in place, or no heads)
  int64_t S, n_tokens, n_groups;
  int H, HH, R, half;      // H q heads; HH = H + Hk
  int n_rot, items_row;    // chunks of a row: rotary, then pass-through
  int n_hg, units_token, tb;  // head groups of kBatch heads; units per token; tokens per group
  FastDiv div_row, div_hg;  // by items_row, by n_hg
  int pos_mode;            // 0 none, 1 per-sequence, 2 per-batch
  int pos_i64;
  const void* pos;
  int64_t pos_sb, pos_ss;
  int use_cache;
  const void* cos;
  const void* sin;
  int64_t cos_sp, cos_si, sin_sp, sin_si, P;
  double theta;
  int backward;
  int n_inv;                        // inv_freq[i] for i < n_inv, computed on the host
  double inv_freq[kParamFreqs];     // exactly the CPU reference's std::pow values
};
static_assert(sizeof(Params) <= 4000, "kernel parameters stay within 4 KB");

template <class Acc>
struct CS {
  Acc c, s;
};

template <class T, RopePairs P, bool kVec>
struct Tr {
  static constexpr bool kInter = P == RopePairs::Interleaved;
  static constexpr int V = kVec ? static_cast<int>(16 / sizeof(T)) : (kInter ? 2 : 1);
  static constexpr int VP = kVec ? V : 1;  // elements of a pass-through item
  // Heads per unit = items per thread whose loads are in flight together. On
  // the vector path 128 bytes per thread (Interleaved: 8 x 16 B; HalfSplit:
  // 4 x 2 x 16 B) within 80 registers, so 3 blocks of 256 threads fit an SM
  // (Hopper: 64K registers): ~96 KB of loads in flight per SM. Blocks hold
  // ~256 units (one per thread on the vector path: one memory round trip per
  // block, many short blocks, a small tail; e.g. D = 128 bf16 with 64 heads is
  // 2 tokens per block); the strided path ~512 (two per thread).
  static constexpr int kBatch = kVec ? (kInter ? 8 : 4) : (kInter ? 4 : 2);
  static constexpr int kMinBlocks = kVec ? 3 : 1;
  static constexpr int64_t kUnitsPerBlock = kVec ? 256 : 512;
  static_assert(!kInter || V % 2 == 0, "an interleaved piece holds whole pairs");
};

template <class T, int V>
struct Piece {
  T v[V];
};

// ---- cos / sin ------------------------------------------------------------------
// cos/sin of angle (any finite double) with |error| < 3e-7: the remainder
// modulo 2*pi is computed in double (k * 2pi split into two constants; each
// FMA rounds once, so r is exact to ~1e-16 for |angle| < 2^50), then rounded
// to f32 in [-pi, pi] (|error| <= 2^-24 * pi) for the accurate sincosf.
__device__ __forceinline__ void sincos_reduced(double angle, float* s, float* c) {
  const double k = rint(angle * 0.15915494309189535);  // 1 / (2 pi)
  double r = fma(-k, 6.283185307179586, angle);        // 2 pi, high part
  r = fma(-k, 2.4492935982947064e-16, r);              // 2 pi - high part
  sincosf(static_cast<float>(r), s, c);
}

// (b, s) of token tl of a group that starts at token (b0, s0), s0 < S, tl < 64:
// no 64-bit division per item.
__device__ __forceinline__ void token_bs(const Params& p, int64_t b0, int64_t s0, int tl, int64_t& b, int64_t& s) {
  b = b0;
  s = s0 + tl;
  if (s >= p.S) {
    if (s < 2 * p.S) {  // always when S >= 64
      s -= p.S;
      b += 1;
    } else {  // S < 64: small numbers
      const int q = static_cast<int>(s) / static_cast<int>(p.S);
      b += q;
      s -= static_cast<int64_t>(q) * p.S;
    }
  }
}

template <class Acc>
__device__ __forceinline__ CS<Acc> cos_sin(const Params& p, int64_t b, int64_t s, int i) {
  int64_t pos = s;
  if (p.pos_mode != 0) {
    const int64_t off = (p.pos_mode == 2 ? b * p.pos_sb : 0) + s * p.pos_ss;
    pos = p.pos_i64 ? static_cast<const int64_t*>(p.pos)[off]
                    : static_cast<int64_t>(static_cast<const int32_t*>(p.pos)[off]);
  }
  CS<Acc> r;
  if (p.use_cache) {
    pos = pos < 0 ? 0 : (pos >= p.P ? p.P - 1 : pos);  // clamp: never read outside the table
    r.c = static_cast<const Acc*>(p.cos)[pos * p.cos_sp + i * p.cos_si];
    r.s = static_cast<const Acc*>(p.sin)[pos * p.sin_sp + i * p.sin_si];
  } else {
    const double inv_freq =
        i < p.n_inv ? p.inv_freq[i] : pow(p.theta, -(2.0 * static_cast<double>(i)) / static_cast<double>(p.R));
    const double angle = static_cast<double>(pos) * inv_freq;
    if constexpr (std::is_same_v<Acc, double>) {
      sincos(angle, &r.s, &r.c);
    } else {
      sincos_reduced(angle, &r.s, &r.c);
    }
  }
  if (p.backward) r.s = -r.s;
  return r;
}

// ---- units ---------------------------------------------------------------------------
// A unit is (token, chunk of the row, group of kBatch consecutive heads of the
// combined list q heads then k heads). Its kBatch items share the token, the
// chunk and therefore the cos/sin values, which are read from the table once.
struct Unit {
  int64_t in_off0, out_off0, in_off1, out_off1;  // element offsets of (b, s, chunk) in the q / k views, head 0
  int64_t b, s;                                  // the token
  int tl;                                        // token within the group
  int pair0;                                     // first pair of a rotary chunk
  int head0;                                     // first head (of the combined list) of the unit
  bool rot;                                      // rotary chunk (else pass-through)
};

template <class T, RopePairs P, bool kVec>
__device__ __forceinline__ Unit locate(const Params& p, int64_t b0, int64_t s0, int w) {
  using X = Tr<T, P, kVec>;
  Unit U;
  const uint32_t r = p.div_row.div(static_cast<uint32_t>(w));
  const int c = w - static_cast<int>(r) * p.items_row;
  const uint32_t tl = p.div_hg.div(r);
  U.head0 = (static_cast<int>(r) - static_cast<int>(tl) * p.n_hg) * X::kBatch;
  U.tl = static_cast<int>(tl);
  token_bs(p, b0, s0, U.tl, U.b, U.s);
  U.rot = c < p.n_rot;
  const int d0 = U.rot ? c * X::V : p.R + (c - p.n_rot) * X::VP;
  U.pair0 = X::kInter ? c * (X::V / 2) : c * X::V;
  U.in_off0 = p.v[0].in.offset(U.b, 0, U.s, d0);
  U.out_off0 = p.v[0].out.offset(U.b, 0, U.s, d0);
  U.in_off1 = p.v[1].in.offset(U.b, 0, U.s, d0);
  U.out_off1 = p.v[1].out.offset(U.b, 0, U.s, d0);
  return U;
}

// Item u of a unit: head hh = head0 + u. kind 0: nothing (past the last head,
// or a pass-through chunk of an in-place side), 1 rotary, 2 pass-through.
// (Selects instead of indexing p.v[side]: no local-memory copies.)
template <class T>
struct Item {
  const T* in;
  T* out;
  int64_t isd, osd;
  int kind;
};
template <class T>
__device__ __forceinline__ Item<T> item(const Params& p, const Unit& U, int u) {
  Item<T> it;
  const int hh = U.head0 + u;
  const bool k = hh >= p.H;
  const int64_t h = k ? hh - p.H : hh;
  it.in = static_cast<const T*>(k ? p.v[1].in.data : p.v[0].in.data) +
          ((k ? U.in_off1 : U.in_off0) + h * (k ? p.v[1].in.stride[1] : p.v[0].in.stride[1]));
  it.out = static_cast<T*>(k ? p.v[1].out.data : p.v[0].out.data) +
           ((k ? U.out_off1 : U.out_off0) + h * (k ? p.v[1].out.stride[1] : p.v[0].out.stride[1]));
  it.isd = k ? p.v[1].in.stride[3] : p.v[0].in.stride[3];
  it.osd = k ? p.v[1].out.stride[3] : p.v[0].out.stride[3];
  it.kind = hh >= p.HH ? 0 : U.rot ? 1 : ((k ? p.skip_pass[1] : p.skip_pass[0]) ? 0 : 2);
  return it;
}

// N elements (N <= V) at src with element stride sd; kVec: one 16-byte load.
template <bool kVec, int N, class T, int V>
__device__ __forceinline__ void load_piece(const T* src, int64_t sd, Piece<T, V>& dst) {
  if constexpr (kVec) {
    static_assert(N == V && sizeof(Piece<T, V>) == 16, "vector pieces are 16 bytes");
    const uint4 raw = __ldcs(reinterpret_cast<const uint4*>(src));
    __builtin_memcpy(&dst, &raw, 16);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) dst.v[e] = src[e * sd];
  }
}
template <bool kVec, int N, class T, int V>
__device__ __forceinline__ void store_piece(T* dst, int64_t sd, const Piece<T, V>& src) {
  if constexpr (kVec) {
    uint4 raw;
    __builtin_memcpy(&raw, &src, 16);
    __stcs(reinterpret_cast<uint4*>(dst), raw);
  } else {
#pragma unroll
    for (int e = 0; e < N; ++e) dst[e * sd] = src.v[e];
  }
}

template <class T, RopePairs P, bool kVec>
struct Batch {
  Piece<T, Tr<T, P, kVec>::V> a[Tr<T, P, kVec>::kBatch];
  Piece<T, Tr<T, P, kVec>::V> b[Tr<T, P, kVec>::kBatch];  // HalfSplit: the partners R/2 further on
};

template <class T, RopePairs P, bool kVec>
__device__ __forceinline__ void load_unit(const Params& p, int64_t b0, int64_t s0, int w, Batch<T, P, kVec>& bt) {
  using X = Tr<T, P, kVec>;
  const Unit U = locate<T, P, kVec>(p, b0, s0, w);
#pragma unroll
  for (int u = 0; u < X::kBatch; ++u) {
    const Item<T> it = item<T>(p, U, u);
    if (it.kind == 2) {
      load_piece<kVec, X::VP>(it.in, it.isd, bt.a[u]);
    } else if (it.kind == 1) {
      load_piece<kVec, X::V>(it.in, it.isd, bt.a[u]);
      if constexpr (!X::kInter) load_piece<kVec, X::V>(it.in + p.half * it.isd, it.isd, bt.b[u]);
    }
  }
}

// kTable: cos/sin from the group's shared-memory table; else computed here
// (rows too long for the table; a separate instantiation, so the table path
// does not carry pow / sincos).
template <class T, RopePairs P, bool kVec, bool kTable>
__device__ __forceinline__ void store_unit(const Params& p, int64_t b0, int64_t s0, int w, Batch<T, P, kVec>& bt,
                                           const CS<dev::acc_t<T>>* table) {
  using X = Tr<T, P, kVec>;
  using Acc = dev::acc_t<T>;
  constexpr int kPairs = X::kInter ? X::V / 2 : X::V;
  const Unit U = locate<T, P, kVec>(p, b0, s0, w);
  if (!U.rot) {
#pragma unroll
    for (int u = 0; u < X::kBatch; ++u) {
      const Item<T> it = item<T>(p, U, u);
      if (it.kind == 2) store_piece<kVec, X::VP>(it.out, it.osd, bt.a[u]);
    }
    return;
  }
  // Rotate in place, pair-major: one cos/sin (one table read) at a time, applied
  // to every head of the unit; then store.
#pragma unroll
  for (int j = 0; j < kPairs; ++j) {
    CS<Acc> cs;
    if constexpr (kTable) {
      cs = table[U.tl * p.half + U.pair0 + j];
    } else {
      cs = cos_sin<Acc>(p, U.b, U.s, U.pair0 + j);
    }
#pragma unroll
    for (int u = 0; u < X::kBatch; ++u) {
      T& e0 = X::kInter ? bt.a[u].v[2 * j] : bt.a[u].v[j];
      T& e1 = X::kInter ? bt.a[u].v[2 * j + 1] : bt.b[u].v[j];
      const Acc x0 = dev::to_acc<Acc>(e0), x1 = dev::to_acc<Acc>(e1);
      e0 = dev::from_acc<T>(x0 * cs.c - x1 * cs.s);
      e1 = dev::from_acc<T>(x0 * cs.s + x1 * cs.c);
    }
  }
#pragma unroll
  for (int u = 0; u < X::kBatch; ++u) {
    const Item<T> it = item<T>(p, U, u);
    if (it.kind != 1) continue;
    store_piece<kVec, X::V>(it.out, it.osd, bt.a[u]);
    if constexpr (!X::kInter) store_piece<kVec, X::V>(it.out + p.half * it.osd, it.osd, bt.b[u]);
  }
}

template <class T, RopePairs P, bool kVec, bool kTable>
__global__ void __launch_bounds__(kThreads, (Tr<T, P, kVec>::kMinBlocks)) rope_kernel(const __grid_constant__ Params p) {
  using Acc = dev::acc_t<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  CS<Acc>* table = reinterpret_cast<CS<Acc>*>(smem);
  for (int64_t g = blockIdx.x; g < p.n_groups; g += gridDim.x) {
    const int64_t t0 = g * p.tb;
    const int tb = static_cast<int>(p.n_tokens - t0 < p.tb ? p.n_tokens - t0 : p.tb);
    const int total = tb * p.units_token;
    const int64_t b0 = t0 / p.S, s0 = t0 - b0 * p.S;
    Batch<T, P, kVec> bt{};  // items past the last head are rotated (not stored): defined values
    int w = static_cast<int>(threadIdx.x);
    if (w < total) load_unit<T, P, kVec>(p, b0, s0, w, bt);  // in flight while the table is built
    if constexpr (kTable) {
      const int n = tb * p.half;
      for (int e = static_cast<int>(threadIdx.x); e < n; e += kThreads) {
        const int tl = e / p.half;
        int64_t b, s;
        token_bs(p, b0, s0, tl, b, s);
        table[e] = cos_sin<Acc>(p, b, s, e - tl * p.half);
      }
      __syncthreads();
    }
    while (w < total) {
      store_unit<T, P, kVec, kTable>(p, b0, s0, w, bt, table);
      w += kThreads;
      if (w < total) load_unit<T, P, kVec>(p, b0, s0, w, bt);
    }
    if constexpr (kTable) __syncthreads();  // the next group overwrites the table
  }
}

// ---- host side ----------------------------------------------------------------------
template <class T, RopePairs P, bool kVec, bool kTable>
Status launch_impl(const Launch& l) {
  using X = Tr<T, P, kVec>;
  using Acc = dev::acc_t<T>;
  const RopeDescriptor& d = l.desc;
  Params p{};
  for (int w = 0; w < 2; ++w) {
    p.v[w] = {l.x[w], l.y[w]};
    p.skip_pass[w] = (l.in_place[w] || l.heads[w] == 0) ? 1 : 0;
  }
  p.S = d.seq_len;
  p.n_tokens = d.batch * d.seq_len;
  const int64_t HH = l.heads[0] + l.heads[1];
  const int64_t n_rot = X::kInter ? d.rotary_dim / X::V : (d.rotary_dim / 2) / X::V;
  const int64_t n_pass = (p.skip_pass[0] && p.skip_pass[1]) ? 0 : (d.head_dim - d.rotary_dim) / X::VP;
  const int64_t n_hg = (HH + X::kBatch - 1) / X::kBatch;
  const int64_t units_token = n_hg * (n_rot + n_pass);
  if (p.n_tokens == 0 || units_token == 0) return Status::ok();
  if (units_token > (int64_t{1} << 30) || d.head_dim > (int64_t{1} << 30) || HH > (int64_t{1} << 30))
    return Status(StatusCode::Unsupported, std::string(l.backward ? "RopeBackwardPlan" : "RopePlan") +
                                               ": more than 2^30 work items per token (heads x head_dim) on CUDA");
  p.H = static_cast<int>(l.heads[0]);
  p.HH = static_cast<int>(HH);
  p.R = static_cast<int>(d.rotary_dim);
  p.half = p.R / 2;
  p.n_rot = static_cast<int>(n_rot);
  p.items_row = static_cast<int>(n_rot + n_pass);
  p.n_hg = static_cast<int>(n_hg);
  p.units_token = static_cast<int>(units_token);
  p.div_row = FastDiv(static_cast<uint32_t>(p.items_row));
  p.div_hg = FastDiv(static_cast<uint32_t>(p.n_hg));

  const int64_t row_bytes = static_cast<int64_t>(p.half) * static_cast<int64_t>(sizeof(CS<Acc>));
  int64_t tb = (X::kUnitsPerBlock + units_token - 1) / units_token;
  tb = std::min(tb, kMaxTokensPerBlock);
  if (kTable) tb = std::min(tb, kTableBytes / row_bytes);
  const int64_t sms = std::max(l.sm_count, 1);
  tb = std::min(tb, std::max<int64_t>(1, p.n_tokens / (4 * sms)));  // enough blocks to fill the GPU
  tb = std::min(tb, (int64_t{1} << 30) / units_token);
  tb = std::max<int64_t>(tb, 1);
  p.tb = static_cast<int>(tb);
  p.n_groups = (p.n_tokens + tb - 1) / tb;

  p.pos_mode = d.positions == RopePositions::None ? 0 : d.positions == RopePositions::PerSequence ? 1 : 2;
  p.pos_i64 = d.position_dtype == DType::I64 ? 1 : 0;
  p.pos = l.positions;
  p.pos_sb = l.pos_sb;
  p.pos_ss = l.pos_ss;
  p.use_cache = d.use_cache ? 1 : 0;
  p.cos = l.cos;
  p.sin = l.sin;
  p.cos_sp = l.cos_sp;
  p.cos_si = l.cos_si;
  p.sin_sp = l.sin_sp;
  p.sin_si = l.sin_si;
  p.P = d.cache_len;
  p.theta = d.theta;
  p.backward = l.backward ? 1 : 0;
  // inv_freq from the host's std::pow, bit-identical to the CPU reference (the
  // device pow may differ by an ulp, which at position 4096 is ~1e-12 of angle).
  p.n_inv = d.use_cache ? 0 : std::min(p.half, kParamFreqs);
  for (int i = 0; i < p.n_inv; ++i)
    p.inv_freq[i] = std::pow(d.theta, -(2.0 * static_cast<double>(i)) / static_cast<double>(p.R));

  const int64_t grid = std::min<int64_t>(p.n_groups, sms * 128);
  const size_t smem = kTable ? static_cast<size_t>(tb * row_bytes) : 0;
  rope_kernel<T, P, kVec, kTable><<<static_cast<unsigned>(grid), kThreads, smem, static_cast<cudaStream_t>(l.stream)>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()),
                            l.backward ? "RopeBackwardPlan: kernel launch" : "RopePlan: kernel launch");
}

// Table rows of R/2 cos/sin pairs fit in kTableBytes: vector or strided path
// with the table; longer rows (R/2 > 2048 in f32, 1024 in f64): strided path
// computing cos/sin per pair.
template <class T>
bool uses_table(const RopeDescriptor& d) {
  static_assert(sizeof(CS<dev::acc_t<T>>) == (sizeof(dev::acc_t<T>) == 8 ? 16 : 8) && kTableBytes == 16 * 1024,
                "table_fits() in launch.hpp mirrors the table layout");
  return table_fits(d);
}

template <class T, RopePairs P>
Status launch_pairs(const Launch& l) {
  if (!uses_table<T>(l.desc)) return launch_impl<T, P, false, false>(l);
  if (dims_allow_vec(l.desc) && views_allow_vec(l)) return launch_impl<T, P, true, true>(l);
  return launch_impl<T, P, false, true>(l);
}

template <class T>
Status launch_typed(const Launch& l) {
  return l.desc.pairs == RopePairs::Interleaved ? launch_pairs<T, RopePairs::Interleaved>(l)
                                                : launch_pairs<T, RopePairs::HalfSplit>(l);
}

}  // namespace baracuda::rope::cuda::kern
