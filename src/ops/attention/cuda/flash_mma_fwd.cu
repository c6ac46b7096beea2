// Tensor-core flash-attention forward (f16 / bf16): tile choice and dispatch.
// The kernel lives in flash_mma_fwd.cuh; each (dtype, padded head dim) is
// instantiated in its own flash_mma_fwd_<dtype>_d<D>.cu for compile-time
// parallelism, with the tile configurations listed in kConfigs below.
//
// BARACUDA_FLASH_FWD_TILE=<BM>x<BN>w<W>s<stages> (e.g. 128x64w4s1) picks another
// instantiated configuration for benchmarking; unknown values are ignored.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ops/attention/flash_cuda.hpp"

namespace baracuda::cuda_flash {
namespace mma_fwd {
template <class T, int kD, int kBM, int kBN, int kWarps, int kStages>
Status launch_fwd(const FlashFwdParams& p, int arch, int sm_count, void* stream);
}  // namespace mma_fwd

namespace {

using LaunchFn = Status (*)(const FlashFwdParams&, int, int, void*);

constexpr int kPlain = 1, kFeat = 2;  // default for the feature-free / the general kernel

struct Config {
  int d, bm, bn, warps, stages;
  int default_for;  // kPlain | kFeat, 0 = only by BARACUDA_FLASH_FWD_TILE
  LaunchFn bf16, f16;  // f16 null: bf16-only alternative
  const char* name;
};

#define NAME(D, BM, BN, W, S) "mma16816-d" #D "-q" #BM "k" #BN "w" #W "s" #S
#define CFG(D, BM, BN, W, S, DEF)                                                                                 \
  Config {                                                                                                        \
    D, BM, BN, W, S, DEF, &mma_fwd::launch_fwd<__nv_bfloat16, D, BM, BN, W, S>,                                   \
        &mma_fwd::launch_fwd<__half, D, BM, BN, W, S>, NAME(D, BM, BN, W, S)                                      \
  }
#define ALT(D, BM, BN, W, S) \
  Config { D, BM, BN, W, S, 0, &mma_fwd::launch_fwd<__nv_bfloat16, D, BM, BN, W, S>, nullptr, NAME(D, BM, BN, W, S) }

// Keep in sync with the instantiation files (flash_mma_fwd_<dtype>_d<D>.cu).
// Defaults: the configurations measured on an H200 (FlashAttention-2's
// single-buffered schedule). The two-stage variants (s2) pass the same code
// paths but were not yet timed or tested on a GPU: benchmark them with
// BARACUDA_FLASH_FWD_TILE (bf16) before making one a default.
const Config kConfigs[] = {
    CFG(32, 128, 64, 4, 1, kPlain | kFeat),
    CFG(64, 128, 128, 4, 1, kPlain),  // 300 vs 279 TFLOP/s for 128x64 (8x16x2048x64)
    CFG(64, 128, 64, 4, 1, kFeat),    // the 128-key tile spills in the general kernel
    ALT(64, 128, 64, 4, 2),
    ALT(64, 128, 128, 4, 2),
    CFG(96, 128, 64, 4, 1, kPlain | kFeat),
    ALT(96, 128, 64, 4, 2),
    CFG(128, 128, 64, 4, 1, kPlain | kFeat),
    ALT(128, 128, 64, 4, 2),
    ALT(128, 128, 32, 4, 2),
    CFG(160, 64, 64, 4, 1, kPlain | kFeat),
    ALT(160, 64, 64, 4, 2),
    CFG(192, 64, 64, 4, 1, kPlain | kFeat),
    ALT(192, 64, 32, 4, 2),
    CFG(224, 64, 64, 4, 1, kPlain | kFeat),
    CFG(256, 64, 64, 4, 1, kPlain | kFeat),
    ALT(256, 64, 32, 4, 2),
    ALT(256, 128, 64, 8, 1),
};
#undef CFG
#undef ALT
#undef NAME

int padded_dim(int64_t d) { return static_cast<int>((d + 31) / 32 * 32); }

// Must match launch_fwd's choice of kernel (flash_mma_fwd.cuh).
bool uses_features(const FlashFwdParams& p) {
  return p.mask != nullptr || p.alibi != nullptr || p.softcap > 0.0 ||
         !(static_cast<float>(p.scale * 1.4426950408889634) >= 1.17549435e-38f);
}

const Config* pick(int64_t head_dim, bool feat, DType dt) {
  const int d = padded_dim(head_dim);
  const char* env = std::getenv("BARACUDA_FLASH_FWD_TILE");  // read per call: tests switch it
  if (env != nullptr) {
    int bm = 0, bn = 0, w = 0, st = 0;
    if (std::sscanf(env, "%dx%dw%ds%d", &bm, &bn, &w, &st) == 4)
      for (const Config& c : kConfigs)
        if (c.d == d && c.bm == bm && c.bn == bn && c.warps == w && c.stages == st && (dt == DType::BF16 || c.f16)) return &c;
  }
  const int want = feat ? kFeat : kPlain;
  for (const Config& c : kConfigs)
    if (c.d == d && (c.default_for & want)) return &c;
  return nullptr;
}

}  // namespace

Status forward_mma(const FlashFwdParams& p, int arch, int sm_count, void* stream) {
  if (arch < 80) return Status(StatusCode::Unsupported, "FlashSdpaPlan: tensor-core forward needs sm_80 or newer");
  if (p.head_dim < 32 || p.head_dim > 256 || p.head_dim % 8 != 0)
    return Status(StatusCode::Unsupported, "FlashSdpaPlan: tensor-core forward needs a head dim in 32..256, multiple of 8, got " +
                                               std::to_string(p.head_dim));
  if (p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    return Status(StatusCode::InvalidProblem, "FlashSdpaPlan: heads must be a multiple of kv_heads");
  const Config* c = pick(p.head_dim, uses_features(p), p.dtype);
  if (c == nullptr) return Status(StatusCode::Unsupported, "FlashSdpaPlan: no tensor-core forward configuration for this head dim");
  if (p.dtype == DType::BF16) return c->bf16(p, arch, sm_count, stream);
  if (p.dtype == DType::F16) return c->f16(p, arch, sm_count, stream);
  return Status(StatusCode::Unsupported, "FlashSdpaPlan: tensor-core forward takes f16 or bf16");
}

const char* forward_mma_variant(const FlashShape& s, int arch) {
  (void)arch;
  // The shape does not say whether mask / ALiBi / softcap are on; name the
  // feature-free configuration (the general one differs only where noted).
  const Config* c = pick(s.head_dim, false, s.dtype);
  return c ? c->name : "mma16816-unsupported";
}

}  // namespace baracuda::cuda_flash
