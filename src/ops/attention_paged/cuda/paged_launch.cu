// Paged-KV CUDA kernels (launch.hpp):
//   paged_splitkv_kernel: one CTA per (split, batch * kv head, row block); the
//     rows are the group's query heads times the Lq queries (<= 16 per CTA),
//     so each K/V byte of the split is read once per row block. Keys in tiles
//     of 32, fetched through the block table with 16-byte cp.async into a
//     double-buffered shared-memory tile (zero-filled past the split's end or
//     for out-of-range pages); scores (one thread per (row, key), f32 FMA over
//     the head dim), an online softmax per row (one warp per row: the 32 keys
//     of a tile are its 32 lanes) and P.V (each thread owns 16-byte chunks of
//     the output rows). Partial results (unnormalized output, running max and
//     sum in log2 units) go to the workspace.
//   paged_combine_kernel: one CTA per query row merges the splits in split
//     order (deterministic) and writes out (and lse).
//   paged_append_kernel: grid-stride copy of k_new / v_new into the page slots
//     (16-byte vectors when every view allows it).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "core/align.hpp"
#include "core/cuda_device.hpp"
#include "cuda/numeric.cuh"
#include "cuda/smem_optin.cuh"
#include "ops/attention_paged/launch.hpp"

namespace baracuda::attention_paged::cuda {
namespace {

constexpr int kThreads = 128;
constexpr int kTK = kTileKeys;  // 32: one key per lane in the softmax step
static_assert(kTK == 32, "the softmax step maps a tile's keys onto a warp");
static_assert(kThreads == 4 * kTK, "the score step puts 4 lanes on each key of a tile");

// The family-wide conversions (cuda/numeric.cuh), under this file's short names.
template <class T>
__device__ __forceinline__ float to_f(T x) { return dev::to_acc<float>(x); }
template <class T>
__device__ __forceinline__ T from_f(float x) { return dev::from_acc<T>(x); }

__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int n = valid ? 16 : 0;  // 0: zero-fill, nothing read
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(gmem), "r"(n));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;\n" ::"n"(N)); }

__device__ __forceinline__ float warp_max(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, o));
  return x;
}
__device__ __forceinline__ float warp_sum(float x) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) x += __shfl_xor_sync(0xffffffffu, x, o);
  return x;
}

struct AttnParams {
  const void* q;
  int64_t qs[4];
  const void* k;
  const void* v;
  int64_t ks[4], vs[4];
  const int32_t* table;
  int64_t ts[2];
  const int32_t* lens;
  int64_t ls;
  void* out;
  int64_t os[4];
  float* lse;
  int64_t lses[3];
  int B, Hq, Hkv, G, Lq, D, P, max_pages, num_pages;
  int page_shift;  // log2(P) when P is a power of two, else -1
  int rows;       // G * Lq
  int rb;         // rows per CTA
  int splits;
  int64_t kps;    // keys per split (multiple of kTK)
  float scale_log2;  // scale * log2(e)
  float scale, softcap;
  bool causal;
  bool few_rows;  // the decode P.V path is allowed
  float* part_o;   // [splits][B*Hq*Lq][D]
  float* part_ml;  // [splits][B*Hq*Lq][2]
};

template <class T>
__global__ void __launch_bounds__(kThreads) paged_splitkv_kernel(const AttnParams p) {
  constexpr int VEC = 16 / sizeof(T);
  constexpr int MAXI = kMaxRowBlock * 256 / VEC / kThreads;  // output chunks per thread at most
  extern __shared__ __align__(16) unsigned char smem_raw[];
  // smem row stride (elements): padded by 4 chunks (64 bytes), so that the 8
  // lanes of a quarter warp in the score step (2 keys x 4 chunk lanes) hit
  // distinct banks.
  const int D = p.D, DC = D / VEC, ld = D + 4 * VEC;
  float* Qs = reinterpret_cast<float*>(smem_raw);                 // [rb][D]
  float* S = Qs + p.rb * D;                                        // [rb][kTK]
  float* row_m = S + p.rb * kTK;                                   // [rb]
  float* row_l = row_m + kMaxRowBlock;                             // [rb]
  float* row_c = row_l + kMaxRowBlock;                             // [rb]
  int* kvalid = reinterpret_cast<int*>(row_c + kMaxRowBlock);      // [2][kTK]
  T* Ks = reinterpret_cast<T*>(kvalid + 2 * kTK);                  // [2][kTK][ld]
  T* Vs = Ks + 2 * kTK * ld;                                       // [2][kTK][ld]

  const int split = blockIdx.y;
  const int b = blockIdx.x / p.Hkv, kvh = blockIdx.x % p.Hkv;
  const int row0 = blockIdx.z * p.rb;
  const int nr = min(p.rb, p.rows - row0);
  const int tid = threadIdx.x, lane = tid & 31, warp = tid >> 5;

  const int64_t cap = static_cast<int64_t>(p.max_pages) * p.P;
  int64_t n = p.lens[b * p.ls];
  n = n < 0 ? 0 : (n > cap ? cap : n);
  const int64_t k0 = static_cast<int64_t>(split) * p.kps;
  const int64_t k1 = min(k0 + p.kps, n);
  const int ntiles = k1 > k0 ? static_cast<int>((k1 - k0 + kTK - 1) / kTK) : 0;

  // q rows (as f32) and the row statistics.
  for (int idx = tid; idx < nr * D; idx += kThreads) {
    const int r = idx / D, d = idx % D, rr = row0 + r;
    const int h = kvh * p.G + rr / p.Lq, i = rr % p.Lq;
    const T* q = static_cast<const T*>(p.q);
    Qs[r * D + d] = to_f(q[b * p.qs[0] + h * p.qs[1] + i * p.qs[2] + d * p.qs[3]]);
  }
  if (tid < kMaxRowBlock) {
    row_m[tid] = -INFINITY;
    row_l[tid] = 0.f;
    row_c[tid] = 1.f;
  }

  const T* kbase = static_cast<const T*>(p.k);
  const T* vbase = static_cast<const T*>(p.v);
  // The 16-byte chunks this thread copies are the same in every tile:
  // chunk c = tid + k * kThreads -> (key t, column col), computed once.
  constexpr int MAXC = kTK * 256 / VEC / kThreads;  // chunks per thread at most (per K or V)
  const int nchunks = kTK * DC;
  int ct[MAXC], ccol[MAXC];
#pragma unroll
  for (int k = 0; k < MAXC; ++k) {
    const int c = tid + k * kThreads;
    ct[k] = c / DC;
    ccol[k] = c % DC;
  }
  auto load_tile = [&](int stage, int64_t key0) {
#pragma unroll
    for (int k = 0; k < MAXC; ++k) {
      if (tid + k * kThreads >= nchunks) break;
      const int t = ct[k], col = ccol[k];
      const int64_t j64 = key0 + t;
      bool ok = j64 < k1;
      const int j = static_cast<int>(j64);  // used only when ok: < max_pages * page_size <= INT32_MAX (select())
      int64_t pg = 0;
      int slot = 0;
      if (ok) {
        const int blk = p.page_shift >= 0 ? (j >> p.page_shift) : j / p.P;
        slot = j - blk * p.P;
        pg = p.table[b * p.ts[0] + blk * p.ts[1]];
        ok = pg >= 0 && pg < p.num_pages;
      }
      if (!ok) pg = 0, slot = 0;
      const T* ks = kbase + pg * p.ks[0] + slot * p.ks[1] + kvh * p.ks[2] + col * VEC;
      const T* vs = vbase + pg * p.vs[0] + slot * p.vs[1] + kvh * p.vs[2] + col * VEC;
      cp_async16(Ks + (stage * kTK + t) * ld + col * VEC, ok ? ks : kbase, ok);
      cp_async16(Vs + (stage * kTK + t) * ld + col * VEC, ok ? vs : vbase, ok);
      if (col == 0) kvalid[stage * kTK + t] = ok ? 1 : 0;
    }
  };

  // Output chunks owned by this thread: item = tid + k * kThreads -> (row, 16-byte chunk).
  float acc[MAXI][VEC];
#pragma unroll
  for (int k = 0; k < MAXI; ++k)
#pragma unroll
    for (int e = 0; e < VEC; ++e) acc[k][e] = 0.f;
  const int nitems = nr * DC;
  // Few rows (decode: group * Lq <= 4) and a power-of-two chunk count in
  // [4, 32]: thread (chunk c, key group kg) reads each V chunk of its keys
  // once and accumulates all rows (acc[r]); the key groups are summed at the
  // end in kg order. Otherwise thread items (row, chunk) over all 32 keys.
  const bool few = p.few_rows && nr <= 4 && DC >= 4 && DC <= 32 && (DC & (DC - 1)) == 0;

  if (ntiles > 0) load_tile(0, k0);
  cp_async_commit();
  for (int it = 0; it < ntiles; ++it) {
    const int stage = it & 1;
    const int64_t key0 = k0 + static_cast<int64_t>(it) * kTK;
    if (it + 1 < ntiles) load_tile(stage ^ 1, key0 + kTK);
    cp_async_commit();
    cp_async_wait<1>();
    __syncthreads();

    // Scores (log2 units), -inf where not allowed: 4 lanes per key (t = tid / 4),
    // each over every 4th 16-byte chunk of the head dim and for every row (a K
    // chunk is read and converted once for all rows); the 4 partial dots are
    // summed by two xor shuffles (a fixed order).
    {
      const int t = tid >> 2, seg = tid & 3;
      const T* kr = Ks + (stage * kTK + t) * ld;
      float dot[kMaxRowBlock];
#pragma unroll
      for (int r = 0; r < kMaxRowBlock; ++r) dot[r] = 0.f;
      for (int c = seg; c < DC; c += 4) {
        const uint4 raw = *reinterpret_cast<const uint4*>(kr + c * VEC);
        const T* kv = reinterpret_cast<const T*>(&raw);
        float kf[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) kf[e] = to_f(kv[e]);
#pragma unroll
        for (int r = 0; r < kMaxRowBlock; ++r) {
          if (r < nr) {
            const float* qr = Qs + r * D + c * VEC;  // 16-byte aligned: D % 4 == 0
#pragma unroll
            for (int e = 0; e < VEC; e += 4) {
              const float4 q4 = *reinterpret_cast<const float4*>(qr + e);
              dot[r] = fmaf(q4.x, kf[e], dot[r]);
              dot[r] = fmaf(q4.y, kf[e + 1], dot[r]);
              dot[r] = fmaf(q4.z, kf[e + 2], dot[r]);
              dot[r] = fmaf(q4.w, kf[e + 3], dot[r]);
            }
          }
        }
      }
#pragma unroll
      for (int r = 0; r < kMaxRowBlock; ++r) {
        if (r < nr) {  // uniform over the block: every lane shuffles
          dot[r] += __shfl_xor_sync(0xffffffffu, dot[r], 1);
          dot[r] += __shfl_xor_sync(0xffffffffu, dot[r], 2);
        }
      }
      if (seg == 0) {
        const int64_t j = key0 + t;
        const bool key_ok = j < k1 && kvalid[stage * kTK + t] != 0;
#pragma unroll
        for (int r = 0; r < kMaxRowBlock; ++r) {
          if (r < nr) {
            const int64_t pos = n - p.Lq + (row0 + r) % p.Lq;
            float sc = -INFINITY;
            if (key_ok && (!p.causal || j <= pos)) {
              float x = dot[r] * p.scale;
              if (p.softcap > 0.f) x = p.softcap * tanhf(x / p.softcap);
              sc = x * 1.4426950408889634f;
            }
            S[r * kTK + t] = sc;
          }
        }
      }
    }
    __syncthreads();

    // Online softmax: warp w takes rows w, w + 4, ...; lane = key.
    for (int r = warp; r < nr; r += kThreads / 32) {
      const float s = S[r * kTK + lane];
      const float m_old = row_m[r];
      const float m_new = fmaxf(m_old, warp_max(s));
      const float pr = m_new == -INFINITY ? 0.f : exp2f(s - m_new);
      const float corr = m_old == -INFINITY ? (m_new == -INFINITY ? 1.f : 0.f) : exp2f(m_old - m_new);
      const float sum = warp_sum(pr);
      S[r * kTK + lane] = pr;
      __syncwarp();
      if (lane == 0) {
        row_c[r] = corr;
        row_m[r] = m_new;
        row_l[r] = row_l[r] * corr + sum;
      }
    }
    __syncthreads();

    // acc = acc * corr + P . V
    if (few) {
      const int c = tid % DC, kg = tid / DC, kpg = DC >> 2;  // 128 / DC groups of DC / 4 keys
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        if (r < nr) {
          const float corr = row_c[r];
#pragma unroll
          for (int e = 0; e < VEC; ++e) acc[r][e] *= corr;
        }
      }
      const T* vcol = Vs + stage * kTK * ld + c * VEC;
      for (int q = 0; q < kpg; ++q) {
        const int t = kg * kpg + q;
        const uint4 raw = *reinterpret_cast<const uint4*>(vcol + t * ld);
        const T* vv = reinterpret_cast<const T*>(&raw);
        float vf[VEC];
#pragma unroll
        for (int e = 0; e < VEC; ++e) vf[e] = to_f(vv[e]);
#pragma unroll
        for (int r = 0; r < 4; ++r) {
          if (r < nr) {
            const float w = S[r * kTK + t];
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[r][e] = fmaf(w, vf[e], acc[r][e]);
          }
        }
      }
    } else {
#pragma unroll
      for (int k = 0; k < MAXI; ++k) {
        const int item = tid + k * kThreads;
        if (item < nitems) {
          const int r = item / DC, c = item % DC;
          const float corr = row_c[r];
#pragma unroll
          for (int e = 0; e < VEC; ++e) acc[k][e] *= corr;
          const float* pr = S + r * kTK;
          const T* vcol = Vs + stage * kTK * ld + c * VEC;
          for (int t = 0; t < kTK; ++t) {
            const float w = pr[t];
            const uint4 raw = *reinterpret_cast<const uint4*>(vcol + t * ld);
            const T* vv = reinterpret_cast<const T*>(&raw);
#pragma unroll
            for (int e = 0; e < VEC; ++e) acc[k][e] = fmaf(w, to_f(vv[e]), acc[k][e]);
          }
        }
      }
    }
    __syncthreads();
  }
  cp_async_wait<0>();

  // Partial results of this split.
  const int64_t rows_total = static_cast<int64_t>(p.B) * p.Hq * p.Lq;
  auto store_item = [&](int r, int c, const float* v) {
    const int rr = row0 + r;
    const int h = kvh * p.G + rr / p.Lq, i = rr % p.Lq;
    const int64_t grow = (static_cast<int64_t>(b) * p.Hq + h) * p.Lq + i;
    float* dst = p.part_o + (split * rows_total + grow) * D + c * VEC;
#pragma unroll
    for (int e = 0; e < VEC; ++e) dst[e] = v[e];  // scalar: the workspace needs only 4-byte alignment
  };
  if (few) {
    // Sum the key groups in kg order through shared memory (the K / V tiles'
    // space, free now: 128 x 4 x VEC floats <= 2 x 2 x 32 x (D + 4 VEC) elements).
    __syncthreads();
    float* red = reinterpret_cast<float*>(Ks);  // [tid][4][VEC]
#pragma unroll
    for (int r = 0; r < 4; ++r)
#pragma unroll
      for (int e = 0; e < VEC; ++e) red[(tid * 4 + r) * VEC + e] = acc[r][e];
    __syncthreads();
    if (tid < nitems) {
      const int r = tid / DC, c = tid % DC, groups = kThreads / DC;
      float v[VEC];
#pragma unroll
      for (int e = 0; e < VEC; ++e) v[e] = 0.f;
      for (int kg = 0; kg < groups; ++kg) {
        const float* src = red + ((kg * DC + c) * 4 + r) * VEC;
#pragma unroll
        for (int e = 0; e < VEC; ++e) v[e] += src[e];
      }
      store_item(r, c, v);
    }
  } else {
#pragma unroll
    for (int k = 0; k < MAXI; ++k) {
      const int item = tid + k * kThreads;
      if (item < nitems) store_item(item / DC, item % DC, acc[k]);
    }
  }
  if (tid < nr) {
    const int rr = row0 + tid;
    const int h = kvh * p.G + rr / p.Lq, i = rr % p.Lq;
    const int64_t grow = (static_cast<int64_t>(b) * p.Hq + h) * p.Lq + i;
    p.part_ml[(split * rows_total + grow) * 2] = row_m[tid];
    p.part_ml[(split * rows_total + grow) * 2 + 1] = row_l[tid];
  }
}

// One CTA per query row (b, h, i): merges the splits in split order.
template <class T>
__global__ void __launch_bounds__(kThreads) paged_combine_kernel(const AttnParams p) {
  const int64_t row = blockIdx.x;
  const int64_t rows_total = static_cast<int64_t>(p.B) * p.Hq * p.Lq;
  const int i = static_cast<int>(row % p.Lq);
  const int h = static_cast<int>((row / p.Lq) % p.Hq);
  const int b = static_cast<int>(row / (static_cast<int64_t>(p.Lq) * p.Hq));
  float M = -INFINITY;
  for (int s = 0; s < p.splits; ++s) M = fmaxf(M, p.part_ml[(s * rows_total + row) * 2]);
  float L = 0.f;
  for (int s = 0; s < p.splits; ++s) {
    const float m = p.part_ml[(s * rows_total + row) * 2];
    if (m != -INFINITY) L += p.part_ml[(s * rows_total + row) * 2 + 1] * exp2f(m - M);
  }
  const float inv = L > 0.f ? 1.f / L : 0.f;
  T* out = static_cast<T*>(p.out);
  for (int d = threadIdx.x; d < p.D; d += blockDim.x) {
    float o = 0.f;
    for (int s = 0; s < p.splits; ++s) {
      const float m = p.part_ml[(s * rows_total + row) * 2];
      if (m != -INFINITY) o += exp2f(m - M) * p.part_o[(s * rows_total + row) * p.D + d];
    }
    out[b * p.os[0] + h * p.os[1] + i * p.os[2] + d * p.os[3]] = from_f<T>(o * inv);
  }
  if (p.lse != nullptr && threadIdx.x == 0)
    p.lse[b * p.lses[0] + h * p.lses[1] + i * p.lses[2]] = L > 0.f ? (M + log2f(L)) * 0.6931471805599453f : -INFINITY;
}

size_t attn_smem_bytes(int rb, int D, size_t elem) {
  const int vec = static_cast<int>(16 / elem);
  return static_cast<size_t>(rb * D + rb * kTK + 3 * kMaxRowBlock) * 4 + 2 * kTK * 4 +
         2 * 2 * static_cast<size_t>(kTK) * static_cast<size_t>(D + 4 * vec) * elem;
}

template <class T>
Status launch_attention_typed(const AttnLaunch& l) {
  const PagedAttentionDescriptor& d = l.desc;
  AttnParams p{};
  p.q = l.q.data;
  p.k = l.k.data;
  p.v = l.v.data;
  p.table = static_cast<const int32_t*>(l.table.data);
  p.lens = static_cast<const int32_t*>(l.lens.data);
  p.out = l.out.data;
  p.lse = static_cast<float*>(l.lse.data);
  for (int i = 0; i < 4; ++i) p.qs[i] = l.q.stride[i], p.ks[i] = l.k.stride[i], p.vs[i] = l.v.stride[i], p.os[i] = l.out.stride[i];
  for (int i = 0; i < 3; ++i) p.lses[i] = l.lse.stride[i];
  p.ts[0] = l.table.stride[0];
  p.ts[1] = l.table.stride[1];
  p.ls = l.lens.stride[0];
  p.B = static_cast<int>(d.batch);
  p.Hq = static_cast<int>(d.heads);
  p.Hkv = static_cast<int>(d.kv_heads);
  p.G = static_cast<int>(d.heads / d.kv_heads);
  p.Lq = static_cast<int>(d.q_len);
  p.D = static_cast<int>(d.head_dim);
  p.P = static_cast<int>(d.page_size);
  p.page_shift = -1;
  for (int sh = 0; sh < 31; ++sh)
    if ((int64_t{1} << sh) == d.page_size) p.page_shift = sh;
  p.max_pages = static_cast<int>(d.max_pages);
  p.num_pages = static_cast<int>(std::min<int64_t>(d.num_pages, INT32_MAX));
  p.rows = static_cast<int>(rows_per_kv_head(d));
  p.rb = l.row_block;
  p.splits = l.splits;
  p.kps = keys_per_split(d, l.splits);
  p.scale = static_cast<float>(*d.scale);
  p.softcap = static_cast<float>(d.softcap);
  p.causal = d.causal;
  p.few_rows = l.few_rows;
  const int64_t rows_total = d.batch * d.heads * d.q_len;
  p.part_o = static_cast<float*>(l.workspace);
  p.part_ml = p.part_o + static_cast<int64_t>(l.splits) * rows_total * d.head_dim;

  auto stream = static_cast<cudaStream_t>(l.stream);
  const size_t smem = attn_smem_bytes(p.rb, p.D, sizeof(T));
  // The opt-in is made once per device (SmemOptIn), so it asks for the most
  // any problem of this kernel may need (16 rows, head dim 256), not for this
  // one: asking for the first problem's bytes left every later, larger one
  // failing with cudaErrorInvalidValue (seen on the H100: f32 D 128 / 256).
  static baracuda::dev::SmemOptIn optin;
  BARACUDA_RETURN_IF_ERROR(baracuda::dev::ensure_smem(optin, paged_splitkv_kernel<T>,
                                                      attn_smem_bytes(kMaxRowBlock, 256, sizeof(T)),
                                                      "PagedAttentionPlan: shared-memory opt-in"));
  const dim3 grid(static_cast<unsigned>(d.batch * d.kv_heads), static_cast<unsigned>(l.splits),
                  static_cast<unsigned>((p.rows + p.rb - 1) / p.rb));
  paged_splitkv_kernel<T><<<grid, kThreads, smem, stream>>>(p);
  BARACUDA_RETURN_IF_ERROR(
      baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "PagedAttentionPlan: split-KV kernel launch"));
  paged_combine_kernel<T><<<static_cast<unsigned>(rows_total), kThreads, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "PagedAttentionPlan: combine kernel launch");
}

// ---- append ---------------------------------------------------------------------------
struct AppendParams {
  const void* kn;
  const void* vn;
  int64_t kns[4], vns[4];
  void* k;
  void* v;
  int64_t ks[4], vs[4];
  const int32_t* table;
  int64_t ts[2];
  const int32_t* lens;
  int64_t ls;
  int64_t B, Hkv, L, D, P, max_pages, num_pages;
};

template <class T, int VEC>
__global__ void __launch_bounds__(256) paged_append_kernel(const AppendParams p) {
  using Chunk = typename std::conditional<VEC == 1, T, uint4>::type;
  const int64_t DC = p.D / VEC;
  const int64_t total = p.B * p.L * p.Hkv * DC;
  const int64_t cap = p.max_pages * p.P;
  for (int64_t x = blockIdx.x * static_cast<int64_t>(blockDim.x) + threadIdx.x; x < total;
       x += static_cast<int64_t>(gridDim.x) * blockDim.x) {
    const int64_t c = x % DC;
    int64_t rest = x / DC;
    const int64_t h = rest % p.Hkv;
    rest /= p.Hkv;
    const int64_t i = rest % p.L;
    const int64_t b = rest / p.L;
    const int64_t n = p.lens[b * p.ls];
    const int64_t j = n + i;
    if (n < 0 || j >= cap) continue;  // precondition violated: skipped
    const int64_t pg = p.table[b * p.ts[0] + (j / p.P) * p.ts[1]];
    if (pg < 0 || pg >= p.num_pages) continue;
    const int64_t slot = j % p.P, e = c * VEC;
    const T* ksrc = static_cast<const T*>(p.kn) + b * p.kns[0] + h * p.kns[1] + i * p.kns[2] + e * p.kns[3];
    const T* vsrc = static_cast<const T*>(p.vn) + b * p.vns[0] + h * p.vns[1] + i * p.vns[2] + e * p.vns[3];
    T* kdst = static_cast<T*>(p.k) + pg * p.ks[0] + slot * p.ks[1] + h * p.ks[2] + e * p.ks[3];
    T* vdst = static_cast<T*>(p.v) + pg * p.vs[0] + slot * p.vs[1] + h * p.vs[2] + e * p.vs[3];
    *reinterpret_cast<Chunk*>(kdst) = *reinterpret_cast<const Chunk*>(ksrc);
    *reinterpret_cast<Chunk*>(vdst) = *reinterpret_cast<const Chunk*>(vsrc);
  }
}

template <int N, class V>
bool vec_ok(const V& v, const int64_t* shape, int vec) {
  if (!baracuda::detail::is_aligned16(v.data) || v.stride[N - 1] != 1) return false;
  for (int i = 0; i < N - 1; ++i)
    if (shape[i] > 1 && v.stride[i] % vec != 0) return false;
  return true;
}

template <class T>
Status launch_append_typed(const AppendLaunch& l) {
  const PagedKvAppendDescriptor& d = l.desc;
  AppendParams p{};
  p.kn = l.k_new.data;
  p.vn = l.v_new.data;
  p.k = l.k.data;
  p.v = l.v.data;
  for (int i = 0; i < 4; ++i)
    p.kns[i] = l.k_new.stride[i], p.vns[i] = l.v_new.stride[i], p.ks[i] = l.k.stride[i], p.vs[i] = l.v.stride[i];
  p.table = static_cast<const int32_t*>(l.table.data);
  p.ts[0] = l.table.stride[0];
  p.ts[1] = l.table.stride[1];
  p.lens = static_cast<const int32_t*>(l.lens.data);
  p.ls = l.lens.stride[0];
  p.B = d.batch, p.Hkv = d.kv_heads, p.L = d.new_len, p.D = d.head_dim, p.P = d.page_size, p.max_pages = d.max_pages;
  p.num_pages = d.num_pages;
  const int64_t total_elems = d.batch * d.new_len * d.kv_heads * d.head_dim;
  if (total_elems == 0) return Status::ok();
  constexpr int VEC = 16 / sizeof(T);
  const int64_t ns[4] = {d.batch, d.kv_heads, d.new_len, d.head_dim};
  const int64_t ps[4] = {d.num_pages, d.page_size, d.kv_heads, d.head_dim};
  const bool vec = d.head_dim % VEC == 0 && vec_ok<4>(l.k_new, ns, VEC) && vec_ok<4>(l.v_new, ns, VEC) &&
                   vec_ok<4>(l.k, ps, VEC) && vec_ok<4>(l.v, ps, VEC);
  const int64_t items = vec ? total_elems / VEC : total_elems;
  const int64_t blocks = std::min<int64_t>((items + 255) / 256, static_cast<int64_t>(std::max(l.sm_count, 1)) * 16);
  auto stream = static_cast<cudaStream_t>(l.stream);
  if (vec) paged_append_kernel<T, VEC><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(p);
  else paged_append_kernel<T, 1><<<static_cast<unsigned>(blocks), 256, 0, stream>>>(p);
  return baracuda::detail::cuda_status(static_cast<int>(cudaGetLastError()), "PagedKvAppendPlan: kernel launch");
}

}  // namespace

Status launch_attention(const AttnLaunch& l) {
  switch (l.desc.dtype) {
    case DType::F32: return launch_attention_typed<float>(l);
    case DType::F16: return launch_attention_typed<__half>(l);
    case DType::BF16: return launch_attention_typed<__nv_bfloat16>(l);
    default: break;
  }
  return Status(StatusCode::Unsupported, "PagedAttentionPlan: CUDA kernel needs f16, bf16 or f32");
}

Status launch_append(const AppendLaunch& l) {
  switch (l.desc.dtype) {
    case DType::F32: return launch_append_typed<float>(l);
    case DType::F16: return launch_append_typed<__half>(l);
    case DType::BF16: return launch_append_typed<__nv_bfloat16>(l);
    default: break;
  }
  return Status(StatusCode::Unsupported, "PagedKvAppendPlan: CUDA kernel needs f16, bf16 or f32");
}

}  // namespace baracuda::attention_paged::cuda
