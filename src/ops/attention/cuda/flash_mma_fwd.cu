// Tensor-core flash-attention forward (f16 / bf16): tile choice and dispatch.
// The kernel lives in flash_mma_fwd.cuh; each (dtype, padded head dim) is
// instantiated in its own flash_mma_fwd_<dtype>_d<D>.cu for compile-time
// parallelism, with the tile configurations listed in kConfigs below.
//
// BARACUDA_FLASH_FWD_TILE=<BM>x<BN>w<W>s<stages> (e.g. 128x64w4s1) picks another
// instantiated configuration for benchmarking (and turns the split-KV path
// off, and the Hopper wgmma path); unknown values are ignored. BARACUDA_FLASH_FWD_SPLITS=<n> forces n
// key splits on the split-KV path (0: off) where the shape allows that path.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ops/attention/flash_cuda.hpp"

namespace baracuda::cuda_flash {
namespace mma_fwd {
template <class T, int kD, int kBM, int kBN, int kWarps, int kStages>
Status launch_fwd(const FlashFwdParams& p, int arch, int sm_count, void* stream);
template <class T, int kD>
Status launch_fwd_split(const FlashFwdParams& p, int splits, int pack, void* stream);
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
// the variant hint "tile=..." (PlanPreference::variant) before making one a default.
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


// The tile for a head dim: the hinted one when it exists for the dtype, else
// the default for plain / feature problems.
const Config* pick(int64_t head_dim, bool feat, DType dt, const detail::FlashHint& h) {
  const int d = padded_dim(head_dim);
  if (h.has_tile())
    for (const Config& c : kConfigs)
      if (c.d == d && c.bm == h.tile_bm && c.bn == h.tile_bn && c.warps == h.tile_warps && c.stages == h.tile_stages &&
          (dt == DType::BF16 || c.f16))
        return &c;
  const int want = feat ? kFeat : kPlain;
  for (const Config& c : kConfigs)
    if (c.d == d && (c.default_for & want)) return &c;
  return nullptr;
}

// ---- split-KV path (short query lengths) -------------------------------------------
using SplitFn = Status (*)(const FlashFwdParams&, int, int, void*);
struct SplitEntry {
  int d;
  SplitFn bf16, f16;
};
#define SPL(D) \
  SplitEntry { D, &mma_fwd::launch_fwd_split<__nv_bfloat16, D>, &mma_fwd::launch_fwd_split<__half, D> }
const SplitEntry kSplits[] = {SPL(32), SPL(64), SPL(96), SPL(128), SPL(160), SPL(192), SPL(224), SPL(256)};
#undef SPL

constexpr int64_t kSplitRows = 64;      // rows of a split-path CTA (mma_fwd::SplitCfg::kBM)
constexpr int64_t kSplitMinKeys = 256;  // fewest keys worth a split of their own
constexpr int kMaxSplits = 64;

struct SplitChoice {
  int splits = 0;  // 0: the single-pass kernel
  int pack = 1;
};

// Split path when q_len <= 64: pack the group's heads when they fit a CTA, then
// the smallest split count whose CTAs fill >= 85% of their last wave (two CTAs
// per SM), capped by the key count; the fullest when none does. One split
// without packing gains nothing over the single-pass kernel.
SplitChoice choose_split(int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len, int64_t head_dim,
                         int sm_count, const detail::FlashHint& hint) {
  SplitChoice c;
  if (sm_count <= 0 || batch <= 0 || heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0 || q_len <= 0 ||
      q_len > kSplitRows || kv_len <= 0 || head_dim < 32 || head_dim > 256 || head_dim % 8 != 0)
    return c;
  if (hint.has_tile()) return c;  // a hinted tile is a single-pass kernel
  const int64_t group = heads / kv_heads;
  c.pack = group > 1 && q_len * group <= kSplitRows ? static_cast<int>(group) : 1;
  const int64_t base = batch * (c.pack > 1 ? kv_heads : heads);
  const int64_t slots = 2 * static_cast<int64_t>(sm_count);
  int64_t max_s = (kv_len + kSplitMinKeys - 1) / kSplitMinKeys;
  if (max_s > kMaxSplits) max_s = kMaxSplits;
  if (max_s < 1) max_s = 1;
  int best = 1;
  double best_eff = -1.0;
  for (int64_t sp = 1; sp <= max_s; ++sp) {
    const int64_t ctas = base * sp, waves = (ctas + slots - 1) / slots;
    const double eff = static_cast<double>(ctas) / static_cast<double>(waves * slots);
    if (eff >= 0.85) {
      best = static_cast<int>(sp);
      break;
    }
    if (eff > best_eff + 1e-12) {
      best_eff = eff;
      best = static_cast<int>(sp);
    }
  }
  if (hint.splits >= 0) {
    best = hint.splits < kMaxSplits ? hint.splits : kMaxSplits;
    if (best == 0) return SplitChoice{};
  }
  if (best == 1 && c.pack == 1) return SplitChoice{};
  c.splits = best;
  return c;
}

size_t split_bytes(int64_t batch, int64_t heads, int64_t q_len, int64_t head_dim, int splits) {
  return static_cast<size_t>(splits) * static_cast<size_t>(batch * heads * q_len) * static_cast<size_t>(head_dim + 2) *
         sizeof(float);
}

}  // namespace

Status forward_mma(const FlashFwdParams& p, int arch, int sm_count, void* stream) {
  if (arch < 80) return Status(StatusCode::Unsupported, "FlashSdpaPlan: tensor-core forward needs sm_80 or newer");
  if (p.head_dim < 32 || p.head_dim > 256 || p.head_dim % 8 != 0)
    return Status(StatusCode::Unsupported, "FlashSdpaPlan: tensor-core forward needs a head dim in 32..256, multiple of 8, got " +
                                               std::to_string(p.head_dim));
  if (p.kv_heads <= 0 || p.heads % p.kv_heads != 0)
    return Status(StatusCode::InvalidProblem, "FlashSdpaPlan: heads must be a multiple of kv_heads");
  if (p.dtype == DType::BF16 || p.dtype == DType::F16) {
    const SplitChoice sc = choose_split(p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len, p.head_dim, sm_count, p.hint);
    if (sc.splits > 0 && p.fwd_workspace != nullptr && reinterpret_cast<uintptr_t>(p.fwd_workspace) % 16 == 0 &&
        p.fwd_workspace_bytes >= split_bytes(p.batch, p.heads, p.q_len, p.head_dim, sc.splits)) {
      const int d = padded_dim(p.head_dim);
      for (const SplitEntry& e : kSplits)
        if (e.d == d) return (p.dtype == DType::BF16 ? e.bf16 : e.f16)(p, sc.splits, sc.pack, stream);
    }
  }
  if (arch == 90 && (p.dtype == DType::BF16 || p.dtype == DType::F16)) {
    bool ran = false;
    const Status st = forward_wgmma(p, arch, &ran, stream);
    if (ran) return st;
  }
  const Config* c = pick(p.head_dim, uses_features(p), p.dtype, p.hint);
  if (c == nullptr) return Status(StatusCode::Unsupported, "FlashSdpaPlan: no tensor-core forward configuration for this head dim");
  if (p.dtype == DType::BF16) return c->bf16(p, arch, sm_count, stream);
  if (p.dtype == DType::F16) return c->f16(p, arch, sm_count, stream);
  return Status(StatusCode::Unsupported, "FlashSdpaPlan: tensor-core forward takes f16 or bf16");
}

const char* forward_mma_variant(const FlashShape& s, int arch, int sm_count) {
  const SplitChoice sc = choose_split(s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, sm_count, s.hint);
  if (sc.splits > 0) {
    // Names the split path's configuration (mma_fwd::SplitCfg); the plan copies the string.
    static thread_local std::string name;
    const int d = padded_dim(s.head_dim);
    const int bn = d <= 64 ? 64 : 32, st = d <= 64 ? 3 : (d <= 128 ? 4 : 2);
    name = "mma16816-d" + std::to_string(d) + "-q64k" + std::to_string(bn) + "w4s" + std::to_string(st) + "-splitkv" +
           std::to_string(sc.splits) + "-pack" + std::to_string(sc.pack);
    return name.c_str();
  }
  if (forward_wgmma_eligible(s, arch)) return forward_wgmma_variant(s);
  const Config* c = pick(s.head_dim, s.features, s.dtype, s.hint);
  return c ? c->name : "mma16816-unsupported";
}

size_t forward_workspace_bytes_mma(const FlashShape& s, int arch, int sm_count) {
  if (arch < 80 || (s.dtype != DType::BF16 && s.dtype != DType::F16)) return 0;
  const SplitChoice sc = choose_split(s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, sm_count, s.hint);
  return sc.splits > 0 ? split_bytes(s.batch, s.heads, s.q_len, s.head_dim, sc.splits) : 0;
}

}  // namespace baracuda::cuda_flash
