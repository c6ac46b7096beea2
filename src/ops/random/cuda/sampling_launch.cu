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
__global__ void __launch_bounds__(kThreads)
    randperm_keys_kernel(int64_t n, uint64_t seed, uint64_t host_offset, const int64_t* offset_ptr,
                         uint64_t* __restrict__ keys, uint32_t* __restrict__ vals) {
  const uint64_t offset = draw_offset(host_offset, offset_ptr);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; i < n; i += stride) {
    keys[i] = sampling::randperm_key(seed, offset, static_cast<uint64_t>(i));
    vals[i] = static_cast<uint32_t>(i);
  }
}

template <class T>
__device__ __forceinline__ T index_as(int64_t v) {
  if constexpr (std::is_same_v<T, __half>) return __float2half_rn(static_cast<float>(v));
  else if constexpr (std::is_same_v<T, __nv_bfloat16>) return __float2bfloat16_rn(static_cast<float>(v));
  else return static_cast<T>(v);
}

template <class T>
__global__ void __launch_bounds__(kThreads)
    randperm_write_kernel(int64_t n, const uint32_t* __restrict__ vals, T* __restrict__ out, int64_t st) {
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; p < n; p += stride)
    out[p * st] = index_as<T>(static_cast<int64_t>(vals[p]));
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

// With replacement, few rows (cdf_table), pass 1: one block per row writes the
// row's cdf (the blocked order of sampling_math.hpp) into the table and
// flags[r] = 1 for an invalid row.
template <class T>
__global__ void __launch_bounds__(kThreads) cdf_table_kernel(const MultinomialLaunch l, const T* __restrict__ probs,
                                                             double* __restrict__ table, int32_t* __restrict__ flags) {
  __shared__ double tot[sampling::kScanChunks];
  __shared__ double off[sampling::kScanChunks + 1];
  __shared__ int row_bad;
  const int64_t C = l.C;
  const int64_t K = sampling::scan_chunk_len(C), M = (C + K - 1) / K;
  for (int64_t r = blockIdx.x; r < l.R; r += gridDim.x) {
    const T* row = probs + r * l.p_row_stride;
    double* cdf = table + r * C;
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
        cdf[j] = loc;  // the partial sum; the chunk offset is added below
      }
      tot[c] = loc;
    }
    if (bad) row_bad = 1;
    __syncthreads();
    if (threadIdx.x == 0) {
      double o = 0.0;
      off[0] = 0.0;
      for (int64_t c = 0; c < M; ++c) {
        o = c == 0 ? tot[0] : exact::add(o, tot[c]);
        off[c + 1] = o;
      }
      if (!(o > 0.0) || isinf(o)) row_bad = 1;
      flags[r] = row_bad;
      if (row_bad) record_bad(l.workspace, r);
    }
    __syncthreads();
    for (int64_t j = K + threadIdx.x; j < C; j += kThreads) cdf[j] = exact::add(off[j / K], cdf[j]);
    __syncthreads();
  }
}

// Pass 2: one thread per (row, sample): the first j with cdf[j] > u * total.
template <class O>
__global__ void __launch_bounds__(kThreads) cdf_table_sample_kernel(const MultinomialLaunch l,
                                                                    const double* __restrict__ table,
                                                                    const int32_t* __restrict__ flags,
                                                                    O* __restrict__ out) {
  const uint64_t offset = draw_offset(l.offset, l.offset_ptr);
  const int64_t n = l.R * l.S, stride = static_cast<int64_t>(gridDim.x) * kThreads;
  for (int64_t e = static_cast<int64_t>(blockIdx.x) * kThreads + threadIdx.x; e < n; e += stride) {
    const int64_t r = e / l.S, s = e - r * l.S;
    int64_t pick = -1;
    if (flags[r] == 0) {
      const double* cdf = table + r * l.C;
      const double u = sampling::multinomial_uniform(l.seed, offset, static_cast<uint64_t>(e));
      const double x = exact::mul(u, cdf[l.C - 1]);
      int64_t lo = 0, hi = l.C - 1;  // the first j with cdf[j] > x (C - 1 when none)
      while (lo < hi) {
        const int64_t mid = (lo + hi) >> 1;
        if (cdf[mid] > x) hi = mid;
        else lo = mid + 1;
      }
      pick = lo;
    }
    put(l, out, r, s, pick);
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
  if (l.replacement && use_cdf_table(l.R, l.C)) {
    auto* table = reinterpret_cast<double*>(ws + l.ws.cdf);
    auto* flags = reinterpret_cast<int32_t*>(ws + l.ws.flags);
    cdf_table_kernel<T><<<row_blocks, kThreads, 0, s>>>(l, probs, table, flags);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
    cdf_table_sample_kernel<O><<<blocks_for(l.R * l.S), kThreads, 0, s>>>(l, table, flags, out);
    return status_of(cudaGetLastError(), kWhat);
  }
  if (l.replacement) {
    cdf_search_kernel<T, O><<<row_blocks, kThreads, 0, s>>>(l, probs, out);
    return status_of(cudaGetLastError(), kWhat);
  }
  auto* keys0 = reinterpret_cast<uint64_t*>(ws + l.ws.keys0);
  auto* keys1 = reinterpret_cast<uint64_t*>(ws + l.ws.keys1);
  auto* vals0 = reinterpret_cast<uint32_t*>(ws + l.ws.vals0);
  auto* vals1 = reinterpret_cast<uint32_t*>(ws + l.ws.vals1);
  auto* seg = reinterpret_cast<int32_t*>(ws + l.ws.seg);
  auto* flags = reinterpret_cast<int32_t*>(ws + l.ws.flags);
  BARACUDA_RETURN_IF_ERROR(status_of(cudaMemsetAsync(flags, 0, static_cast<size_t>(l.R) * sizeof(int32_t), s), kWhat));
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
  w.keys0 = off, off += align256(static_cast<size_t>(n) * sizeof(uint64_t));
  w.keys1 = off, off += align256(static_cast<size_t>(n) * sizeof(uint64_t));
  w.vals0 = off, off += align256(static_cast<size_t>(n) * sizeof(uint32_t));
  w.vals1 = off, off += align256(static_cast<size_t>(n) * sizeof(uint32_t));
  w.temp = off;
  size_t bytes = 0;
  if (n > 0) {  // a size query only (null storage): nothing runs; errors show again at the sort
    cub::DoubleBuffer<uint64_t> k(nullptr, nullptr);
    cub::DoubleBuffer<uint32_t> v(nullptr, nullptr);
    (void)cub::DeviceRadixSort::SortPairs(nullptr, bytes, k, v, static_cast<int>(n), 0, 64);
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
    auto* keys0 = reinterpret_cast<uint64_t*>(ws + l.ws.keys0);
    auto* keys1 = reinterpret_cast<uint64_t*>(ws + l.ws.keys1);
    auto* vals0 = reinterpret_cast<uint32_t*>(ws + l.ws.vals0);
    auto* vals1 = reinterpret_cast<uint32_t*>(ws + l.ws.vals1);
    randperm_keys_kernel<<<blocks_for(l.n), kThreads, 0, s>>>(l.n, l.seed, l.offset, l.offset_ptr, keys0, vals0);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
    cub::DoubleBuffer<uint64_t> k(keys0, keys1);
    cub::DoubleBuffer<uint32_t> v(vals0, vals1);
    size_t temp_bytes = l.ws.temp_bytes;
    BARACUDA_RETURN_IF_ERROR(status_of(
        cub::DeviceRadixSort::SortPairs(ws + l.ws.temp, temp_bytes, k, v, static_cast<int>(l.n), 0, 64, s),
        "RandpermPlan: radix sort"));
    const unsigned g = blocks_for(l.n);
    switch (l.dtype) {
      case DType::I64: randperm_write_kernel<<<g, kThreads, 0, s>>>(l.n, v.Current(), static_cast<int64_t*>(l.out), l.out_stride); break;
      case DType::I32: randperm_write_kernel<<<g, kThreads, 0, s>>>(l.n, v.Current(), static_cast<int32_t*>(l.out), l.out_stride); break;
      case DType::F64: randperm_write_kernel<<<g, kThreads, 0, s>>>(l.n, v.Current(), static_cast<double*>(l.out), l.out_stride); break;
      case DType::F32: randperm_write_kernel<<<g, kThreads, 0, s>>>(l.n, v.Current(), static_cast<float*>(l.out), l.out_stride); break;
      case DType::F16: randperm_write_kernel<<<g, kThreads, 0, s>>>(l.n, v.Current(), static_cast<__half*>(l.out), l.out_stride); break;
      case DType::BF16: randperm_write_kernel<<<g, kThreads, 0, s>>>(l.n, v.Current(), static_cast<__nv_bfloat16*>(l.out), l.out_stride); break;
      default: return Status(StatusCode::Unsupported, "RandpermPlan: CUDA kernel needs i64, i32, f64, f32, f16 or bf16");
    }
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  }
  if (l.offset_ptr) {
    bump_offset_kernel<<<1, 1, 0, s>>>(l.offset_ptr);
    BARACUDA_RETURN_IF_ERROR(status_of(cudaGetLastError(), kWhat));
  }
  return Status::ok();
}

MultinomialWorkspace multinomial_workspace(int64_t R, int64_t C, bool replacement) {
  MultinomialWorkspace w;
  size_t off = kErrorWordBytes;
  if (replacement && R * C > 0 && use_cdf_table(R, C)) {
    w.cdf = off, off += align256(static_cast<size_t>(R * C) * sizeof(double));
    w.flags = off, off += align256(static_cast<size_t>(R) * sizeof(int32_t));
  }
  if (!replacement && R * C > 0) {
    const size_t items = static_cast<size_t>(R * C);
    w.keys0 = off, off += align256(items * sizeof(uint64_t));
    w.keys1 = off, off += align256(items * sizeof(uint64_t));
    w.vals0 = off, off += align256(items * sizeof(uint32_t));
    w.vals1 = off, off += align256(items * sizeof(uint32_t));
    w.seg = off, off += align256(static_cast<size_t>(R + 1) * sizeof(int32_t));
    w.flags = off, off += align256(static_cast<size_t>(R) * sizeof(int32_t));
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
