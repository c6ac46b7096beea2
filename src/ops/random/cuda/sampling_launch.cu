// CUDA kernels of RandpermPlan and MultinomialPlan (include/baracuda/ops/
// random_sampling.hpp documents the algorithms): Philox keys + CUB radix sorts,
// and a one-block-per-row cumulative-sum search. Every value comes from the
// shared definitions of ../sampling_math.hpp, so the CPU reference matches bit
// for bit. No floating-point atomics; integer atomics only for the error word.
#include <cub/device/device_radix_sort.cuh>
#include <cub/device/device_segmented_radix_sort.cuh>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/cuda_device.hpp"
#include "ops/random/sampling_launch.hpp"
#include "ops/random/sampling_math.hpp"

namespace baracuda::random::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int64_t kMaxBlocks = 132 * 32;
constexpr int kScanThreads = 128;  // cdf_scan: 4 warps, a warp per row

size_t align256(size_t b) { return (b + 255) / 256 * 256; }

Status status_of(cudaError_t e, const char* what) { return baracuda::detail::cuda_status(static_cast<int>(e), what); }

unsigned blocks_for(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>((items + kThreads - 1) / kThreads, 1, kMaxBlocks));
}

__device__ __forceinline__ uint64_t draw_offset(uint64_t host, const int64_t* dev) {
  return dev ? static_cast<uint64_t>(*dev) : host;
}

__device__ __forceinline__ void record_bad(void* word, int64_t r) {
  atomicMin(static_cast<unsigned long long*>(word), static_cast<unsigned long long>(r));
}

__global__ void bump_offset_kernel(int64_t* p) { *p = static_cast<int64_t>(static_cast<uint64_t>(*p) + 1u); }

// ---- randperm ------------------------------------------------------------------------
// The sort runs on the top bits of the keys' high halves only (at most 32:
// 3 or 4 radix passes instead of 8); the write kernel then orders each run of
// equal sorted bits by the whole 64-bit key and the index (the keys are
// recomputed from Philox), so the result is the stable sort of the 64-bit
// keys, as documented.
// The sort's key bits: the top ceil(log2 n) + 8 bits of the high half,
// rounded up to whole 8-bit radix passes and at most 32 (n <= 2^16: 24 bits,
// 3 passes; n = 10^6: 32 bits, 4 passes), so under 1/256 of the elements per
// sorted value: runs stay rare and the write kernel's fixup cheap.
int randperm_sort_bits(int64_t n) {
  int lg = 0;
  while (lg < 62 && (int64_t{1} << lg) < n) ++lg;
  return std::min(32, std::max(8, (lg + 8 + 7) / 8 * 8));
}

__global__ void __launch_bounds__(kThreads)
    randperm_keys_kernel(int64_t n, uint64_t seed, uint64_t host_offset, const int64_t* offset_ptr,
                         uint32_t* __restrict__ keys, uint32_t* __restrict__ vals) {
  const uint64_t offset = draw_offset(host_offset, offset_ptr);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    keys[i] = static_cast<uint32_t>(sampling::randperm_key(seed, offset, static_cast<uint64_t>(i)) >> 32);
    vals[i] = static_cast<uint32_t>(i);
  }
}

template <class T>
__device__ __forceinline__ T index_as(int64_t v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else return static_cast<T>(v);
}

// out[p] = the index of rank p. Position p inside a run [a, b] of equal
// sorted bits (key >> shift) takes the run's member of rank p - a by (64-bit
// key, index): an O(L^2) count over the run (runs are rare and short).
template <class T>
__global__ void __launch_bounds__(kThreads)
    randperm_write_kernel(int64_t n, const uint32_t* __restrict__ keys, const uint32_t* __restrict__ vals, int shift,
                          uint64_t seed, uint64_t host_offset, const int64_t* offset_ptr, T* __restrict__ out,
                          int64_t st) {
  const uint64_t offset = draw_offset(host_offset, offset_ptr);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < n; p += stride) {
    const uint32_t k = keys[p] >> shift;
    uint32_t v = vals[p];
    if ((p > 0 && (keys[p - 1] >> shift) == k) || (p + 1 < n && (keys[p + 1] >> shift) == k)) {
      int64_t a = p, b = p;
      while (a > 0 && (keys[a - 1] >> shift) == k) --a;
      while (b + 1 < n && (keys[b + 1] >> shift) == k) ++b;
      for (int64_t m = a; m <= b; ++m) {
        const uint32_t im = vals[m];
        const uint64_t km = sampling::randperm_key(seed, offset, im);
        int64_t rank = 0;
        for (int64_t q = a; q <= b; ++q) {
          const uint32_t iq = vals[q];
          const uint64_t kq = sampling::randperm_key(seed, offset, iq);
          rank += kq < km || (kq == km && iq < im);
        }
        if (rank == p - a) {
          v = im;
          break;
        }
      }
    }
    out[p * st] = index_as<T>(static_cast<int64_t>(v));
  }
}

// ---- multinomial -----------------------------------------------------------------------
template <class T>
__device__ __forceinline__ double weight(const T* p, int64_t off) {
  if constexpr (std::is_same_v<T, __half>) return static_cast<double>(__half2float(p[off]));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return static_cast<double>(__bfloat162float(p[off]));
  else return static_cast<double>(p[off]);
}

__device__ __forceinline__ bool bad_weight(double w) { return !(w >= 0.0) || isinf(w); }

template <class O>
__device__ __forceinline__ void put(const MultinomialLaunch& l, O* out, int64_t r, int64_t s, int64_t j) {
  out[r * l.o_row_stride + s * l.o_col_stride] = static_cast<O>(j);
}

// With replacement: one block per row (grid-stride over rows).
template <class T, class O>
__global__ void __launch_bounds__(kThreads) cdf_search_kernel(const MultinomialLaunch l, const T* __restrict__ probs,
                                                              O* __restrict__ out) {
  __shared__ double tot[sampling::kScanChunks];
  __shared__ double off[sampling::kScanChunks + 1];
  __shared__ int row_bad;
  const uint64_t offset = draw_offset(l.offset, l.offset_ptr);
  const int64_t C = l.C, S = l.S;
  const int64_t K = sampling::scan_chunk_len(C), M = (C + K - 1) / K;
  for (int64_t r = blockIdx.x; r < l.R; r += gridDim.x) {
    const T* row = probs + r * l.p_row_stride;
    if (threadIdx.x == 0) row_bad = 0;
    __syncthreads();
    bool bad = false;
    for (int64_t c = threadIdx.x; c < M; c += kThreads) {
      const int64_t c0 = c * K, c1 = min(C, c0 + K);
      double loc = 0.0;
      for (int64_t j = c0; j < c1; ++j) {
        const double w = weight(row, j * l.p_col_stride);
        bad |= bad_weight(w);
        loc = j == c0 ? w : exact::add(loc, w);
      }
      tot[c] = loc;
    }
    if (bad) row_bad = 1;  // every writer stores the same value
    __syncthreads();
    if (threadIdx.x == 0) {
      double o = 0.0;
      off[0] = 0.0;
      for (int64_t c = 0; c < M; ++c) {
        o = c == 0 ? tot[0] : exact::add(o, tot[c]);
        off[c + 1] = o;
      }
      if (!(o > 0.0) || isinf(o)) row_bad = 1;
      if (row_bad) record_bad(l.workspace, r);
    }
    __syncthreads();
    const bool rbad = row_bad != 0;
    const double total = off[M];
    for (int64_t s = threadIdx.x; s < S; s += kThreads) {
      int64_t pick = -1;
      if (!rbad) {
        const double u = sampling::multinomial_uniform(l.seed, offset, static_cast<uint64_t>(r * S + s));
        const double x = exact::mul(u, total);
        int64_t lo = 0, hi = M - 1;  // the first chunk whose end exceeds x
        while (lo < hi) {
          const int64_t mid = (lo + hi) >> 1;
          if (off[mid + 1] > x) hi = mid;
          else lo = mid + 1;
        }
        const int64_t c0 = lo * K, c1 = min(C, c0 + K);
        pick = c1 - 1;
        double loc = 0.0;
        for (int64_t j = c0; j < c1; ++j) {
          const double w = weight(row, j * l.p_col_stride);
          loc = j == c0 ? w : exact::add(loc, w);
          const double cdf = lo == 0 ? loc : exact::add(off[lo], loc);
          if (cdf > x) {
            pick = j;
            break;
          }
        }
      }
      put(l, out, r, s, pick);
    }
    __syncthreads();  // shared memory is reused by the next row
  }
}

// With replacement, "cdf_scan" pass 1 (K > 1 only): one thread per (row,
// chunk) sums the chunk left to right into tot[r * M + c] and flags a row
// holding a negative, infinite or NaN weight (an integer atomicOr, only there).
template <class T>
__global__ void __launch_bounds__(kThreads) chunk_totals_kernel(const MultinomialLaunch l, const T* __restrict__ probs,
                                                                double* __restrict__ tot, int32_t* __restrict__ flags) {
  const int64_t C = l.C, K = sampling::scan_chunk_len(C), M = (C + K - 1) / K, n = l.R * M;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < n; e += stride) {
    const int64_t r = e / M, c = e - r * M;
    const T* row = probs + r * l.p_row_stride;
    const int64_t c0 = c * K, c1 = min(C, c0 + K);
    bool bad = false;
    double loc = weight(row, c0 * l.p_col_stride);
    bad |= bad_weight(loc);
#pragma unroll 4
    for (int64_t j = c0 + 1; j < c1; ++j) {
      const double w = weight(row, j * l.p_col_stride);
      bad |= bad_weight(w);
      loc = exact::add(loc, w);
    }
    tot[e] = loc;
    if (bad) atomicOr(&flags[r], 1);
  }
}

// The same totals for long chunks (K >= kStagedMinK), with coalesced loads: a
// warp takes 32 consecutive chunks of a row and walks them 32 categories at a
// time, staging chunk q's next 32 weights through shared memory with one
// coalesced load per chunk; lane q then adds its chunk's staged weights left
// to right (the same order as above).
constexpr int kStagedMinK = 16;
constexpr int kTotWarps = 4;
template <class T>
__global__ void __launch_bounds__(kTotWarps * 32)
    chunk_totals_staged_kernel(const MultinomialLaunch l, const T* __restrict__ probs, double* __restrict__ tot,
                               int32_t* __restrict__ flags) {
  __shared__ double st[kTotWarps][32][33];
  const int64_t C = l.C, K = sampling::scan_chunk_len(C), M = (C + K - 1) / K, G = (M + 31) / 32;
  const int lane = threadIdx.x & 31, wp = threadIdx.x >> 5;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kTotWarps;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * kTotWarps + wp; g < l.R * G; g += stride) {
    const int64_t r = g / G, cbase = (g - r * G) * 32, c = cbase + lane;
    const int nch = static_cast<int>(min(int64_t{32}, M - cbase));
    const T* row = probs + r * l.p_row_stride;
    double loc = 0.0;
    bool bad = false;
    for (int64_t t = 0; t < K; t += 32) {
      for (int q = 0; q < nch; ++q) {
        const int64_t j = (cbase + q) * K + t + lane;
        st[wp][q][lane] = t + lane < K && j < C ? weight(row, j * l.p_col_stride) : 0.0;
      }
      __syncwarp();
      if (lane < nch) {
        const int64_t len = min(min(K - t, int64_t{32}), C - (c * K + t));
        for (int64_t i = 0; i < len; ++i) {
          const double w = st[wp][lane][i];
          bad |= bad_weight(w);
          loc = t + i == 0 ? w : exact::add(loc, w);
        }
      }
      __syncwarp();
    }
    if (lane < nch) {
      tot[r * M + c] = loc;
      if (bad) atomicOr(&flags[r], 1);
    }
  }
}

// "cdf_scan" pass 2: one warp per row turns the chunk totals into the chunk
// ends ends[c] = off[c + 1] (in place over tot when kHaveTotals; with K = 1 the
// warp reads the weights itself, coalesced). Every lane runs the same left-to-
// right chain of adds (the totals broadcast by shuffles), so the order is
// sampling_math.hpp's. flags[r] = 1 for an invalid row (its lowest index goes
// to the error word).
template <class T, bool kHaveTotals>
__global__ void __launch_bounds__(kScanThreads) cdf_scan_kernel(const MultinomialLaunch l, const T* __restrict__ probs,
                                                                double* __restrict__ ends, int32_t* __restrict__ flags) {
  const int64_t C = l.C, K = sampling::scan_chunk_len(C), M = (C + K - 1) / K;
  const int lane = threadIdx.x & 31;
  const int64_t warps = static_cast<int64_t>(gridDim.x) * (kScanThreads / 32);
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * (kScanThreads / 32) + (threadIdx.x >> 5); r < l.R; r += warps) {
    const T* row = probs + r * l.p_row_stride;
    double* e = ends + r * M;
    bool bad = false;
    double o = 0.0;
    // The next 32 totals are loaded before the chain of the current 32 runs.
    auto fetch = [&](int64_t c) -> double {
      if (c >= M) return 0.0;
      if constexpr (kHaveTotals) {
        return e[c];
      } else {  // K == 1: the chunk is one weight
        const double w = weight(row, c * l.p_col_stride);
        bad |= bad_weight(w);
        return w;
      }
    };
    double t = fetch(lane);
    for (int64_t c0 = 0; c0 < M; c0 += 32) {
      const int64_t c = c0 + lane;
      const double tn = fetch(c + 32);
      const int n = static_cast<int>(min(int64_t{32}, M - c0));
      double mine = 0.0;
      for (int i = 0; i < n; ++i) {
        const double v = __shfl_sync(0xffffffffu, t, i);
        o = c0 + i == 0 ? v : exact::add(o, v);
        if (i == lane) mine = o;
      }
      if (c < M) e[c] = mine;
      t = tn;
    }
    bad = __any_sync(0xffffffffu, bad);
    if (lane == 0) {
      const bool rb = bad || (kHaveTotals && flags[r] != 0) || !(o > 0.0) || isinf(o);
      flags[r] = rb ? 1 : 0;
      if (rb) record_bad(l.workspace, r);
    }
  }
}

// "cdf_scan" pass 3: one thread per (row, sample): a binary search over the
// row's chunk ends, then a walk of the chunk (the first j with cdf[j] > x).
template <class T, class O>
__global__ void __launch_bounds__(kThreads) cdf_scan_sample_kernel(const MultinomialLaunch l,
                                                                   const T* __restrict__ probs,
                                                                   const double* __restrict__ ends,
                                                                   const int32_t* __restrict__ flags,
                                                                   O* __restrict__ out) {
  const uint64_t offset = draw_offset(l.offset, l.offset_ptr);
  const int64_t C = l.C, K = sampling::scan_chunk_len(C), M = (C + K - 1) / K;
  const int64_t n = l.R * l.S, stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t g = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; g < n; g += stride) {
    const int64_t r = g / l.S, s = g - r * l.S;
    int64_t pick = -1;
    if (flags[r] == 0) {
      const T* row = probs + r * l.p_row_stride;
      const double* e = ends + r * M;
      const double u = sampling::multinomial_uniform(l.seed, offset, static_cast<uint64_t>(g));
      const double x = exact::mul(u, e[M - 1]);
      int64_t lo = 0, hi = M - 1;  // the first chunk whose end exceeds x (M - 1 when none)
      while (lo < hi) {
        const int64_t mid = (lo + hi) >> 1;
        if (e[mid] > x) hi = mid;
        else lo = mid + 1;
      }
      const int64_t c0 = lo * K, c1 = min(C, c0 + K);
      const double base = lo == 0 ? 0.0 : e[lo - 1];
      pick = c1 - 1;
      double loc = 0.0;
      for (int64_t j = c0; j < c1; ++j) {
        const double w = weight(row, j * l.p_col_stride);
        loc = j == c0 ? w : exact::add(loc, w);
        const double cdf = lo == 0 ? loc : exact::add(base, loc);
        if (cdf > x) {
          pick = j;
          break;
        }
      }
    }
    put(l, out, r, s, pick);
  }
}

// Without replacement, "race_topk": a block selects the S smallest of one tile
// of up to kTopkItems (key, category) pairs in shared memory (bitonic top-k,
// ordered by key then category: the reference's order), in order. A tile is
// either kTopkItems categories of a row (probs != nullptr: the keys are made
// here, a bad weight flags the row) or kTopkItems survivors of the previous
// level (in_keys). With out != nullptr (one tile per row) the first S are the
// samples: -1 for a flagged row or one whose S-th key is +inf (fewer than S
// positive weights); otherwise they are written as this level's survivors.
constexpr int kTopkThreads = 512;
constexpr uint64_t kPadKey = ~uint64_t{0};  // above +inf's bits: padding sorts last

__device__ __forceinline__ bool pair_less(uint64_t ka, uint32_t va, uint64_t kb, uint32_t vb) {
  return ka < kb || (ka == kb && va < vb);
}

// Bitonic top-k of N (a power of two) pairs in shared memory: afterwards the
// first kk (a power of two, <= N) are the kk smallest by (key, index), in
// increasing order. The sorting network runs up to size kk (runs of kk,
// alternately ascending and descending); then each round keeps the
// elementwise smaller of every (ascending, descending) run pair (the kk
// smallest of the two, as a bitonic run), compacts them and sorts each run
// again in log2(kk) stages, halving the data until one run is left.
__device__ __forceinline__ void bitonic_topk(uint64_t* k, uint32_t* v, int N, int kk) {
  for (int size = 2; size <= kk; size <<= 1)
    for (int stride = size >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < N / 2; i += kTopkThreads) {
        const int lo = ((i & ~(stride - 1)) << 1) | (i & (stride - 1)), hi = lo + stride;
        const uint64_t ka = k[lo], kb = k[hi];
        const uint32_t va = v[lo], vb = v[hi];
        const bool asc = (lo & size) == 0;
        if (asc ? pair_less(kb, vb, ka, va) : pair_less(ka, va, kb, vb)) {
          k[lo] = kb, k[hi] = ka;
          v[lo] = vb, v[hi] = va;
        }
      }
      __syncthreads();
    }
  constexpr int kPer = static_cast<int>(kTopkItems) / 2 / kTopkThreads;
  for (int L = N; L > kk; L >>= 1) {
    uint64_t rk[kPer];
    uint32_t rv[kPer];
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      const int i = threadIdx.x + t * kTopkThreads;
      if (i < L / 2) {
        const int a = ((i / kk) * 2 * kk) + (i % kk), b = a + kk;
        const bool take_b = pair_less(k[b], v[b], k[a], v[a]);
        rk[t] = take_b ? k[b] : k[a];
        rv[t] = take_b ? v[b] : v[a];
      }
    }
    __syncthreads();
#pragma unroll
    for (int t = 0; t < kPer; ++t) {
      const int i = threadIdx.x + t * kTopkThreads;
      if (i < L / 2) k[i] = rk[t], v[i] = rv[t];
    }
    __syncthreads();
    const int L2 = L / 2;
    for (int stride = kk >> 1; stride > 0; stride >>= 1) {
      for (int i = threadIdx.x; i < L2 / 2; i += kTopkThreads) {
        const int lo = ((i & ~(stride - 1)) << 1) | (i & (stride - 1)), hi = lo + stride;
        const uint64_t ka = k[lo], kb = k[hi];
        const uint32_t va = v[lo], vb = v[hi];
        const bool asc = (lo & kk) == 0;
        if (asc ? pair_less(kb, vb, ka, va) : pair_less(ka, va, kb, vb)) {
          k[lo] = kb, k[hi] = ka;
          v[lo] = vb, v[hi] = va;
        }
      }
      __syncthreads();
    }
  }
}

template <class T, class O>
__global__ void __launch_bounds__(kTopkThreads)
    race_topk_kernel(const MultinomialLaunch l, const T* __restrict__ probs, const uint64_t* __restrict__ in_keys,
                     const uint32_t* __restrict__ in_idx, int64_t n_in, int64_t tiles, uint64_t* __restrict__ out_keys,
                     uint32_t* __restrict__ out_idx, int32_t* __restrict__ flags, O* __restrict__ out) {
  __shared__ uint64_t sk[kTopkItems];
  __shared__ uint32_t si[kTopkItems];
  const uint64_t offset = draw_offset(l.offset, l.offset_ptr);
  const int64_t S = l.S;
  // The sort size: the smallest power of two holding a tile (a row's only tile
  // may be short); kk: the smallest power of two holding S (kk <= N).
  int N = 2;
  while (N < kTopkItems && N < n_in) N <<= 1;
  int kk = 2;
  while (kk < S) kk <<= 1;
  for (int64_t b = blockIdx.x; b < l.R * tiles; b += gridDim.x) {
    const int64_t r = b / tiles, t = b - r * tiles;
    const int64_t i0 = t * kTopkItems, n = min(n_in - i0, kTopkItems);
    bool bad = false;
    for (int i = threadIdx.x; i < N; i += kTopkThreads) {
      uint64_t k = kPadKey;
      uint32_t j = ~uint32_t{0};
      if (i < n) {
        if (probs) {
          const int64_t c = i0 + i;
          const double w = weight(probs + r * l.p_row_stride, c * l.p_col_stride);
          bad |= bad_weight(w);
          k = sampling::race_key(l.seed, offset, static_cast<uint64_t>(r * l.C + c), w);
          j = static_cast<uint32_t>(c);
        } else {
          k = in_keys[r * n_in + i0 + i];
          j = in_idx[r * n_in + i0 + i];
        }
      }
      sk[i] = k;
      si[i] = j;
    }
    const bool tile_bad = __syncthreads_or(bad) != 0;
    bitonic_topk(sk, si, N, kk);
    if (out) {
      const bool rb = tile_bad || flags[r] != 0 || sk[S - 1] >= sampling::kInfKey;
      if (rb && threadIdx.x == 0) record_bad(l.workspace, r);
      for (int64_t s = threadIdx.x; s < S; s += kTopkThreads) put(l, out, r, s, rb ? int64_t{-1} : int64_t{si[s]});
    } else {
      if (tile_bad && threadIdx.x == 0) atomicOr(&flags[r], 1);
      const int64_t o = (r * tiles + t) * S;
      for (int64_t s = threadIdx.x; s < S; s += kTopkThreads) {
        out_keys[o + s] = sk[s];
        out_idx[o + s] = si[s];
      }
    }
    __syncthreads();  // shared memory is reused by the next tile
  }
}

// Without replacement, pass 1 (grid-stride over every (row, category)): the
// keys and categories, the row segment offsets, and flags[r] = 1 for a row
// holding a negative, infinite or NaN weight (an integer atomicOr, only there).
template <class T>
__global__ void __launch_bounds__(kThreads) race_keys_kernel(const MultinomialLaunch l, const T* __restrict__ probs,
                                                             uint64_t* __restrict__ keys, uint32_t* __restrict__ vals,
                                                             int32_t* __restrict__ seg, int32_t* __restrict__ flags) {
  const uint64_t offset = draw_offset(l.offset, l.offset_ptr);
  const int64_t C = l.C, n = l.R * C, stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < n; e += stride) {
    const int64_t r = e / C, j = e - r * C;
    const double w = weight(probs + r * l.p_row_stride, j * l.p_col_stride);
    if (bad_weight(w)) atomicOr(&flags[r], 1);
    keys[e] = sampling::race_key(l.seed, offset, static_cast<uint64_t>(e), w);
    vals[e] = static_cast<uint32_t>(j);
  }
  for (int64_t r = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; r <= l.R; r += stride)
    seg[r] = static_cast<int32_t>(r * C);
}

// Pass 3: the first S sorted entries of each row; -1 for an invalid row (a
// flagged weight, or fewer than S positive weights: its S-th key is +inf).
template <class O>
__global__ void __launch_bounds__(kThreads)
    race_write_kernel(const MultinomialLaunch l, const uint64_t* __restrict__ keys, const uint32_t* __restrict__ vals,
                      const int32_t* __restrict__ flags, O* __restrict__ out) {
  const int64_t n = l.R * l.S, stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < n; e += stride) {
    const int64_t r = e / l.S, s = e - r * l.S;
    const bool bad = flags[r] != 0 || keys[r * l.C + l.S - 1] == sampling::kInfKey;
    if (bad && s == 0) record_bad(l.workspace, r);
    put(l, out, r, s, bad ? int64_t{-1} : static_cast<int64_t>(vals[r * l.C + s]));
  }
}

template <class T, class O>
Status multinomial_typed(const MultinomialLaunch& l) {
  constexpr const char* kWhat = "MultinomialPlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  const T* probs = static_cast<const T*>(l.probs);
  O* out = static_cast<O*>(l.out);
  const unsigned row_blocks = static_cast<unsigned>(std::min<int64_t>(l.R, int64_t{1} << 20));
  char* ws = static_cast<char*>(l.workspace);
  auto* flags = reinterpret_cast<int32_t*>(ws + l.ws.flags);
  if (l.replacement && use_cdf_scan(l.R, l.C)) {
    const int64_t K = sampling::scan_chunk_len(l.C), M = (l.C + K - 1) / K;
    auto* ends = reinterpret_cast<double*>(ws + l.ws.ends);
    const unsigned scan_blocks =
        static_cast<unsigned>(std::min<int64_t>((l.R + kScanThreads / 32 - 1) / (kScanThreads / 32), int64_t{1} << 20));
    if (K > 1) {
      BARACUDA_RETURN_IF_ERROR(
          status_of(cudaMemsetAsync(flags, 0, static_cast<size_t>(l.R) * sizeof(int32_t), s), kWhat));
      if (K >= kStagedMinK) {
        const int64_t groups = l.R * ((M + 31) / 32);
        const unsigned gb = static_cast<unsigned>(std::min<int64_t>((groups + kTotWarps - 1) / kTotWarps, kMaxBlocks));
        chunk_totals_staged_kernel<T><<<gb, kTotWarps * 32, 0, s>>>(l, probs, ends, flags);
      } else {
        chunk_totals_kernel<T><<<blocks_for(l.R * M), kThreads, 0, s>>>(l, probs, ends, flags);
      }
      BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
      cdf_scan_kernel<T, true><<<scan_blocks, kScanThreads, 0, s>>>(l, probs, ends, flags);
    } else {
      cdf_scan_kernel<T, false><<<scan_blocks, kScanThreads, 0, s>>>(l, probs, ends, flags);
    }
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
    cdf_scan_sample_kernel<T, O><<<blocks_for(l.R * l.S), kThreads, 0, s>>>(l, probs, ends, flags, out);
    return status_of(cudaGetLastError(), kWhat);
  }
  if (l.replacement) {
    cdf_search_kernel<T, O><<<row_blocks, kThreads, 0, s>>>(l, probs, out);
    return status_of(cudaGetLastError(), kWhat);
  }
  BARACUDA_RETURN_IF_ERROR(status_of(cudaMemsetAsync(flags, 0, static_cast<size_t>(l.R) * sizeof(int32_t), s), kWhat));
  if (use_race_topk(l.S)) {
    // Level 0 makes the keys (tiles of the row's categories); each further
    // level merges the survivors (S per tile) until a row fits one tile.
    uint64_t* kb[2] = {reinterpret_cast<uint64_t*>(ws + l.ws.keys0), reinterpret_cast<uint64_t*>(ws + l.ws.keys1)};
    uint32_t* vb[2] = {reinterpret_cast<uint32_t*>(ws + l.ws.vals0), reinterpret_cast<uint32_t*>(ws + l.ws.vals1)};
    int64_t n = l.C;
    int cur = -1;  // -1: the input is probs
    for (;;) {
      const int64_t tiles = (n + kTopkItems - 1) / kTopkItems;
      const unsigned g = static_cast<unsigned>(std::min<int64_t>(l.R * tiles, int64_t{1} << 30));
      const bool last = tiles == 1;
      const int nxt = cur == 0 ? 1 : 0;
      race_topk_kernel<T, O><<<g, kTopkThreads, 0, s>>>(
          l, cur < 0 ? probs : nullptr, cur < 0 ? nullptr : kb[cur], cur < 0 ? nullptr : vb[cur], n, tiles,
          last ? nullptr : kb[nxt], last ? nullptr : vb[nxt], flags, last ? out : nullptr);
      BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
      if (last) return Status::ok();
      n = tiles * l.S;
      cur = nxt;
    }
  }
  auto* keys0 = reinterpret_cast<uint64_t*>(ws + l.ws.keys0);
  auto* keys1 = reinterpret_cast<uint64_t*>(ws + l.ws.keys1);
  auto* vals0 = reinterpret_cast<uint32_t*>(ws + l.ws.vals0);
  auto* vals1 = reinterpret_cast<uint32_t*>(ws + l.ws.vals1);
  auto* seg = reinterpret_cast<int32_t*>(ws + l.ws.seg);
  race_keys_kernel<T><<<blocks_for(l.R * l.C), kThreads, 0, s>>>(l, probs, keys0, vals0, seg, flags);
  BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  cub::DoubleBuffer<uint64_t> k(keys0, keys1);
  cub::DoubleBuffer<uint32_t> v(vals0, vals1);
  size_t temp_bytes = l.ws.temp_bytes;
  if (l.R == 1)  // one row: the device-wide sort (a segmented sort gives a segment one block)
    BARACUDA_RETURN_IF_ERROR(status_of(
        cub::DeviceRadixSort::SortPairs(ws + l.ws.temp, temp_bytes, k, v, static_cast<int>(l.C), 0, 64, s),
        "MultinomialPlan: radix sort"));
  else
    BARACUDA_RETURN_IF_ERROR(status_of(
        cub::DeviceSegmentedRadixSort::SortPairs(ws + l.ws.temp, temp_bytes, k, v, static_cast<int>(l.R * l.C),
                                                 static_cast<int>(l.R), seg, seg + 1, 0, 64, s),
        "MultinomialPlan: segmented radix sort"));
  race_write_kernel<O><<<blocks_for(l.R * l.S), kThreads, 0, s>>>(l, k.Current(), v.Current(), flags, out);
  return status_of(cudaGetLastError(), kWhat);
}

template <class O>
Status multinomial_out(const MultinomialLaunch& l) {
  switch (l.dtype) {
    case DType::F32: return multinomial_typed<float, O>(l);
    case DType::F64: return multinomial_typed<double, O>(l);
    case DType::F16: return multinomial_typed<__half, O>(l);
    case DType::BF16: return multinomial_typed<__nv_bfloat16, O>(l);
    default: return Status(StatusCode::Unsupported, "MultinomialPlan: CUDA kernel needs f32, f64, f16 or bf16 probs");
  }
}

}  // namespace

RandpermWorkspace randperm_workspace(int64_t n) {
  RandpermWorkspace w;
  size_t off = 0;
  w.keys0 = off, off += align256(static_cast<size_t>(n) * sizeof(uint32_t));
  w.keys1 = off, off += align256(static_cast<size_t>(n) * sizeof(uint32_t));
  w.vals0 = off, off += align256(static_cast<size_t>(n) * sizeof(uint32_t));
  w.vals1 = off, off += align256(static_cast<size_t>(n) * sizeof(uint32_t));
  w.temp = off;
  size_t bytes = 0;
  if (n > 0) {  // a size query only (null storage): nothing runs; errors show again at the sort
    cub::DoubleBuffer<uint32_t> k(nullptr, nullptr);
    cub::DoubleBuffer<uint32_t> v(nullptr, nullptr);
    (void)cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, v, static_cast<int>(n), 32 - randperm_sort_bits(n), 32);
  }
  w.temp_bytes = align256(std::max<size_t>(bytes, 1));
  w.total = off + w.temp_bytes;
  return w;
}

Status launch_randperm(const RandpermLaunch& l) {
  constexpr const char* kWhat = "RandpermPlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  if (l.n > 0) {
    char* ws = static_cast<char*>(l.workspace);
    auto* keys0 = reinterpret_cast<uint32_t*>(ws + l.ws.keys0);
    auto* keys1 = reinterpret_cast<uint32_t*>(ws + l.ws.keys1);
    auto* vals0 = reinterpret_cast<uint32_t*>(ws + l.ws.vals0);
    auto* vals1 = reinterpret_cast<uint32_t*>(ws + l.ws.vals1);
    randperm_keys_kernel<<<blocks_for(l.n), kThreads, 0, s>>>(l.n, l.seed, l.offset, l.offset_ptr, keys0, vals0);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
    cub::DoubleBuffer<uint32_t> k(keys0, keys1);
    cub::DoubleBuffer<uint32_t> v(vals0, vals1);
    size_t temp_bytes = l.ws.temp_bytes;
    const int shift = 32 - randperm_sort_bits(l.n);
    BARACUDA_RETURN_IF_ERROR(status_of(
        cub::DeviceRadixSort::SortPairs(ws + l.ws.temp, temp_bytes, k, v, static_cast<int>(l.n), shift, 32, s),
        "RandpermPlan: radix sort"));
    const unsigned g = blocks_for(l.n);
    const uint32_t* sk = k.Current();
    const uint32_t* sv = v.Current();
#define BARACUDA_RANDPERM_WRITE(T)                                                                          \
  randperm_write_kernel<<<g, kThreads, 0, s>>>(l.n, sk, sv, shift, l.seed, l.offset, l.offset_ptr, static_cast<T*>(l.out), \
                                               l.out_stride)
    switch (l.dtype) {
      case DType::I64: BARACUDA_RANDPERM_WRITE(int64_t); break;
      case DType::I32: BARACUDA_RANDPERM_WRITE(int32_t); break;
      case DType::F64: BARACUDA_RANDPERM_WRITE(double); break;
      case DType::F32: BARACUDA_RANDPERM_WRITE(float); break;
      case DType::F16: BARACUDA_RANDPERM_WRITE(__half); break;
      case DType::BF16: BARACUDA_RANDPERM_WRITE(__nv_bfloat16); break;
      default: return Status(StatusCode::Unsupported, "RandpermPlan: CUDA kernel needs i64, i32, f64, f32, f16 or bf16");
    }
#undef BARACUDA_RANDPERM_WRITE
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  }
  if (l.offset_ptr) {
    bump_offset_kernel<<<1, 1, 0, s>>>(l.offset_ptr);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  }
  return Status::ok();
}

MultinomialWorkspace multinomial_workspace(int64_t R, int64_t C, int64_t S, bool replacement) {
  MultinomialWorkspace w;
  size_t off = kErrorWordBytes;
  if (R * C == 0) {
    w.total = off;
    return w;
  }
  w.flags = off, off += align256(static_cast<size_t>(R) * sizeof(int32_t));
  if (replacement) {
    if (use_cdf_scan(R, C)) {
      const int64_t K = sampling::scan_chunk_len(C), M = (C + K - 1) / K;
      w.ends = off, off += align256(static_cast<size_t>(R * M) * sizeof(double));
    }
  } else if (use_race_topk(S)) {
    // Level 0's survivors are the most (every later level has fewer): two buffers.
    const int64_t tiles = (C + kTopkItems - 1) / kTopkItems;
    const size_t items = tiles > 1 ? static_cast<size_t>(R * tiles * S) : 0;
    w.keys0 = off, off += align256(items * sizeof(uint64_t));
    w.keys1 = off, off += align256(items * sizeof(uint64_t));
    w.vals0 = off, off += align256(items * sizeof(uint32_t));
    w.vals1 = off, off += align256(items * sizeof(uint32_t));
  } else {
    const size_t items = static_cast<size_t>(R * C);
    w.keys0 = off, off += align256(items * sizeof(uint64_t));
    w.keys1 = off, off += align256(items * sizeof(uint64_t));
    w.vals0 = off, off += align256(items * sizeof(uint32_t));
    w.vals1 = off, off += align256(items * sizeof(uint32_t));
    w.seg = off, off += align256(static_cast<size_t>(R + 1) * sizeof(int32_t));
    w.temp = off;
    size_t bytes = 0;
    cub::DoubleBuffer<uint64_t> k(nullptr, nullptr);
    cub::DoubleBuffer<uint32_t> v(nullptr, nullptr);
    if (R == 1)
      (void)cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, v, static_cast<int>(C), 0, 64);
    else
      (void)cub::DeviceSegmentedRadixSort::SortPairs(nullptr, bytes, k, v, static_cast<int>(R * C),
                                                     static_cast<int>(R), static_cast<const int32_t*>(nullptr),
                                                     static_cast<const int32_t*>(nullptr), 0, 64);
    w.temp_bytes = align256(std::max<size_t>(bytes, 1));
    off += w.temp_bytes;
  }
  w.total = off;
  return w;
}

Status launch_multinomial(const MultinomialLaunch& l) {
  constexpr const char* kWhat = "MultinomialPlan: kernel launch";
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  if (l.R * l.S > 0) {
    BARACUDA_RETURN_IF_ERROR(status_of(cudaMemsetAsync(l.workspace, 0xff, sizeof(uint64_t), s), kWhat));
    BARACUDA_RETURN_IF_ERROR(l.out_dtype == DType::I32 ? multinomial_out<int32_t>(l) : multinomial_out<int64_t>(l));
  }
  if (l.offset_ptr) {
    bump_offset_kernel<<<1, 1, 0, s>>>(l.offset_ptr);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  }
  return Status::ok();
}

Status read_sampling_error_word(const char* plan, void* stream, const void* word, int64_t* bad) {
  cudaError_t e = cudaStreamSynchronize(static_cast<cudaStream_t>(stream));
  BARACUDA_RETURN_IF_ERROR(status_of(e, (std::string(plan) + ": check_probs: stream synchronize").c_str()));
  uint64_t w = kNoError;
  e = cudaMemcpy(&w, word, sizeof(w), cudaMemcpyDeviceToHost);
  BARACUDA_RETURN_IF_ERROR(status_of(e, (std::string(plan) + ": check_probs: read the error word").c_str()));
  *bad = w == kNoError ? -1 : static_cast<int64_t>(w);
  return Status::ok();
}

}  // namespace baracuda::random::cuda
