// Tensor-core flash-attention backward (f16 / bf16): workspace, preprocess
// kernel (lse2, dsum) and head-dimension dispatch. The dK/dV and dQ kernels
// live in flash_mma_bwd.cuh; their instantiations (dtype x padded head dim) are
// listed in ../manifest.cmake and generated into their own TUs.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <array>
#include <string>

#include "core/cuda_device.hpp"
#include "ops/attention/cuda/flash_mma_bwd.cuh"
#include "cuda/sm80/mma.cuh"
#include "ops/attention/flash_launch.hpp"
#include "ops/attention/manifest.hpp"  // generated from ops/attention/manifest.cmake

namespace baracuda::attention::cuda {
namespace {

using mma_bwd::BwdArgs;

// "mma16816-bwd-d<D>-kv<keys>q<query step>[x2]-q<query rows>k<key step>": the
// dK/dV CTA (keys x query step, x2 when two warps share a key block) and the dQ
// CTA (query rows x key step), read from the kernels' tile rules.
template <int kD>
const char* bwd_variant_name() {
  using Tile = mma_bwd::BwdTile<kD>;
  static const std::string name = "mma16816-bwd-d" + std::to_string(kD) + "-kv" + std::to_string(Tile::kBN) + "q" +
                                   std::to_string(Tile::kBM) + (Tile::kWD > 1 ? "x" + std::to_string(Tile::kWD) : "") +
                                   "-q" + std::to_string(Tile::kQBM) + "k" + std::to_string(Tile::kQBN);
  return name.c_str();
}

using BwdLaunch = Status (*)(const BwdArgs&, void*);
struct BwdKernel {
  DType dtype;
  int d;
  BwdLaunch launch;
  const char* (*name)();
};
#define BWD(DT, T, D) BwdKernel{DType::DT, D, &mma_bwd::launch_bwd<T, D>, &bwd_variant_name<D>},
const std::array<BwdKernel, BARACUDA_FLASH_MMA_BWD_COUNT> kBwdKernels{{BARACUDA_FLASH_MMA_BWD_KERNELS(BWD)}};
#undef BWD

// The kernel of the padded head dim, null when this build left it out
// (BARACUDA_FLASH_HEAD_DIMS).
const BwdKernel* bwd_kernel(DType dt, int64_t head_dim) {
  const int d = static_cast<int>((head_dim + 31) / 32 * 32);
  for (const BwdKernel& k : kBwdKernels)
    if (k.dtype == dt && k.d == d) return &k;
  return nullptr;
}

// Rows of the workspace arrays: one per (b, h, query row) dense, (h, packed
// query row) varlen. Each array is padded to a multiple of 4 floats.
int64_t ws_rows(const FlashShape& s) {
  const int64_t rows = s.varlen ? s.heads * s.total_q : s.batch * s.heads * s.q_len;
  return (rows + 3) / 4 * 4;
}

constexpr int kPreRowsPerWarp = 4;
constexpr int kPreWarps = 8;

// lse2 = lse * log2(e) (+inf where lse = -inf) and dsum = rowsum(dy * y).
// One warp per row, one 16-byte chunk per lane (D <= 256 = 32 chunks).
template <class T>
__global__ void __launch_bounds__(kPreWarps * 32) bwd_preprocess_kernel(const __grid_constant__ BwdArgs a) {
  const FlashBwdParams& p = a.p;
  const int h = blockIdx.y, b = blockIdx.z + a.b_off;
  const SeqInfo s = seq_info(p, b);
  const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31;
  const int i0 = (blockIdx.x * kPreWarps + warp) * kPreRowsPerWarp;
  if (i0 >= s.q_len) return;
  const bool col_ok = lane * 8 < p.head_dim;
  const T* yg = static_cast<const T*>(p.y) + b * p.y_sb + h * p.y_sh + (s.q_start + i0) * p.y_ss + lane * 8;
  const T* dyg = static_cast<const T*>(p.dy) + b * p.dy_sb + h * p.dy_sh + (s.q_start + i0) * p.dy_ss + lane * 8;
  const float* lg = p.lse + b * p.lse_sb + h * p.lse_sh + (s.q_start + i0) * p.lse_ss;
  uint4 yv[kPreRowsPerWarp], dyv[kPreRowsPerWarp];
  float lv[kPreRowsPerWarp];
#pragma unroll
  for (int r = 0; r < kPreRowsPerWarp; ++r) {
    const bool ok = i0 + r < s.q_len;
    yv[r] = dyv[r] = make_uint4(0, 0, 0, 0);
    if (ok && col_ok) {
      yv[r] = *reinterpret_cast<const uint4*>(yg + r * p.y_ss);
      dyv[r] = *reinterpret_cast<const uint4*>(dyg + r * p.dy_ss);
    }
    lv[r] = ok && lane == 0 ? lg[r * p.lse_ss] : 0.f;
  }
  const int64_t w0 = mma_bwd::ws_row(p, s, b, h, i0);
#pragma unroll
  for (int r = 0; r < kPreRowsPerWarp; ++r) {
    const uint32_t* yw = reinterpret_cast<const uint32_t*>(&yv[r]);
    const uint32_t* dw = reinterpret_cast<const uint32_t*>(&dyv[r]);
    float acc = 0.f;
#pragma unroll
    for (int k = 0; k < 4; ++k) {
      const float2 y2 = dev::sm80::unpack2<T>(yw[k]), d2 = dev::sm80::unpack2<T>(dw[k]);
      acc = fmaf(y2.x, d2.x, acc);
      acc = fmaf(y2.y, d2.y, acc);
    }
#pragma unroll
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
    if (lane == 0 && i0 + r < s.q_len) {
      a.dsum[w0 + r] = acc;
      a.lse2[w0 + r] = lv[r] == -INFINITY ? INFINITY : lv[r] * mma_bwd::kLog2e;
    }
  }
}

template <class T>
Status run_backward(const FlashBwdParams& p, int arch, void* stream) {
  const FlashShape shape = shape_of(p);
  const size_t need = backward_workspace_bytes_mma(shape);
  if (p.workspace_bytes < need || (need > 0 && p.workspace == nullptr))
    return Status(StatusCode::WorkspaceTooSmall, "FlashSdpaBackwardPlan: tensor-core backward workspace too small", need,
                  p.workspace_bytes);
  if (p.batch <= 0 || p.heads <= 0) return Status::ok();

  BwdArgs a;
  a.p = p;
  a.scale = static_cast<float>(p.scale);
  a.scale_log2 = static_cast<float>(p.scale * 1.4426950408889634);
  a.softcap = static_cast<float>(p.softcap);
  a.group = p.heads / p.kv_heads;
  a.lse2 = static_cast<float*>(p.workspace);
  a.dsum = a.lse2 + ws_rows(shape);
  const cudaStream_t st = static_cast<cudaStream_t>(stream);

  if (p.q_len > 0) {
    constexpr int kRows = kPreRowsPerWarp * kPreWarps;
    for (int b0 = 0; b0 < p.batch; b0 += mma_bwd::kMaxGridZ) {
      BwdArgs c = a;
      c.b_off = b0;
      const dim3 grid((p.q_len + kRows - 1) / kRows, p.heads, std::min(mma_bwd::kMaxGridZ, p.batch - b0));
      bwd_preprocess_kernel<T><<<grid, kPreWarps * 32, 0, st>>>(c);
      const cudaError_t e = cudaGetLastError();
      if (e != cudaSuccess) return baracuda::detail::cuda_status(static_cast<int>(e), "FlashSdpaBackwardPlan: preprocess launch");
    }
  }
  if (arch == 90) {
    bool ran = false;
    const Status st_w = backward_wgmma(a, arch, &ran, stream);
    if (ran) return st_w;
  }
  const BwdKernel* k = bwd_kernel(p.dtype, p.head_dim);
  if (k == nullptr)
    return Status(StatusCode::Unsupported, "FlashSdpaBackwardPlan: no tensor-core backward kernel for head dim " +
                                               std::to_string(p.head_dim) + " in this build (BARACUDA_FLASH_HEAD_DIMS=" +
                                               BARACUDA_FLASH_HEAD_DIMS_VALUE + ")");
  return k->launch(a, stream);
}

}  // namespace

size_t backward_workspace_bytes_mma(const FlashShape& s) {
  const int64_t rows = ws_rows(s);
  return rows > 0 ? static_cast<size_t>(2 * rows) * sizeof(float) : 0;
}

Status backward_mma(const FlashBwdParams& p, int arch, int sm_count, void* stream) {
  (void)sm_count;
  if (arch < 80) return Status(StatusCode::Unsupported, "FlashSdpaBackwardPlan: tensor-core backward needs sm_80 or newer");
  if (p.head_dim < 32 || p.head_dim > 256 || p.head_dim % 8 != 0)
    return Status(StatusCode::Unsupported,
                  "FlashSdpaBackwardPlan: tensor-core backward needs a head dim in 32..256, multiple of 8, got " +
                      std::to_string(p.head_dim));
  if (p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    return Status(StatusCode::InvalidProblem, "FlashSdpaBackwardPlan: heads must be a multiple of kv_heads");
  if (p.dtype == DType::BF16) return run_backward<__nv_bfloat16>(p, arch, stream);
  if (p.dtype == DType::F16) return run_backward<__half>(p, arch, stream);
  return Status(StatusCode::Unsupported, "FlashSdpaBackwardPlan: tensor-core backward takes f16 or bf16");
}

const char* backward_mma_variant(const FlashShape& s, int arch) {
  if (backward_wgmma_eligible(s, arch)) return backward_wgmma_variant(s);
  const BwdKernel* k = s.head_dim >= 1 && s.head_dim <= 256 ? bwd_kernel(s.dtype, s.head_dim) : nullptr;
  return k != nullptr ? k->name() : "mma16816-bwd-unsupported";
}

const char* backward_mma_variant_for(const FlashBwdParams& p, int arch) {
  FlashShape s = shape_of(p);
  if (backward_wgmma_eligible(s, arch) && (p.batch <= 0 || p.heads <= 0 || !backward_wgmma_maps_ok(p)))
    s.hint.wgmma = false;
  return backward_mma_variant(s, arch);
}

}  // namespace baracuda::attention::cuda
