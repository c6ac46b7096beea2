// Tensor-core flash-attention forward (f16 / bf16): tile choice and dispatch.
// The kernel lives in flash_mma_fwd.cuh; its instantiations (dtype x padded head
// dim x tile configuration) are listed in ../manifest.cmake, generated into one
// TU per (dtype, head dim) for compile-time parallelism, and reach this file as
// the lists of the generated ops/attention/manifest.hpp.
//
// The plan's variant hint (PlanPreference::variant, recorded at select() in
// FlashShape::hint / FlashFwdParams::hint; environment defaults
// BARACUDA_FLASH_FWD_TILE / _SPLITS read by select() only): tile=<BM>x<BN>w<W>s<S>
// (e.g. 128x64w4s1) picks another instantiated configuration for benchmarking
// (and turns the split-KV path and the Hopper wgmma path off; a tile the build
// does not have means the default); splits=<n> forces n key splits on the
// split-KV path (0: off) where the shape allows that path.
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ops/attention/flash_launch.hpp"
#include "ops/attention/manifest.hpp"  // generated from ops/attention/manifest.cmake

namespace baracuda::attention::cuda {
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
  DType dtype;
  int d, bm, bn, warps, stages;
  int default_for;  // kPlain | kFeat, 0 = only by the tile= variant hint
  LaunchFn launch;
  const char* name;
};

// One entry per instantiation of the manifest (its comments say why the defaults).
#define CFG(DT, T, D, BM, BN, W, S, DEF)                                                                \
  Config{DType::DT, D, BM, BN, W, S, DEF, &mma_fwd::launch_fwd<T, D, BM, BN, W, S>,                     \
         "mma16816-d" #D "-q" #BM "k" #BN "w" #W "s" #S},
const std::array<Config, BARACUDA_FLASH_MMA_FWD_COUNT> kConfigs{{BARACUDA_FLASH_MMA_FWD_KERNELS(CFG)}};
#undef CFG

int padded_dim(int64_t d) { return static_cast<int>((d + 31) / 32 * 32); }


// The tile for a head dim: the plan's hinted one when the build has it for
// the dtype, else the default for plain / feature problems.
const Config* pick(int64_t head_dim, bool feat, DType dt, const baracuda::detail::FlashHint& h) {
  const int d = padded_dim(head_dim);
  if (h.has_tile())
    for (const Config& c : kConfigs)
      if (c.dtype == dt && c.d == d && c.bm == h.tile_bm && c.bn == h.tile_bn && c.warps == h.tile_warps &&
          c.stages == h.tile_stages)
        return &c;
  const int want = feat ? kFeat : kPlain;
  for (const Config& c : kConfigs)
    if (c.dtype == dt && c.d == d && (c.default_for & want)) return &c;
  return nullptr;  // head dim left out of this build (BARACUDA_FLASH_HEAD_DIMS)
}

// ---- split-KV path (short query lengths) -------------------------------------------
using SplitFn = Status (*)(const FlashFwdParams&, int, int, void*);
struct SplitEntry {
  DType dtype;
  int d;
  SplitFn launch;
};
#define SPL(DT, T, D) SplitEntry{DType::DT, D, &mma_fwd::launch_fwd_split<T, D>},
const std::array<SplitEntry, BARACUDA_FLASH_MMA_SPLIT_COUNT> kSplits{{BARACUDA_FLASH_MMA_SPLIT_KERNELS(SPL)}};
#undef SPL

SplitFn split_kernel(DType dt, int64_t head_dim) {
  const int d = padded_dim(head_dim);
  for (const SplitEntry& e : kSplits)
    if (e.dtype == dt && e.d == d) return e.launch;
  return nullptr;  // head dim left out of this build (BARACUDA_FLASH_HEAD_DIMS)
}

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
SplitChoice choose_split(DType dtype, int64_t batch, int64_t heads, int64_t kv_heads, int64_t q_len, int64_t kv_len,
                         int64_t head_dim, int sm_count, const baracuda::detail::FlashHint& hint) {
  SplitChoice c;
  if (sm_count <= 0 || batch <= 0 || heads <= 0 || kv_heads <= 0 || heads % kv_heads != 0 || q_len <= 0 ||
      q_len > kSplitRows || kv_len <= 0 || head_dim < 32 || head_dim > 256 || head_dim % 8 != 0 ||
      split_kernel(dtype, head_dim) == nullptr)
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
    const SplitChoice sc = choose_split(p.dtype, p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len, p.head_dim, sm_count, p.hint);
    if (sc.splits > 0 && p.fwd_workspace != nullptr && reinterpret_cast<uintptr_t>(p.fwd_workspace) % 16 == 0 &&
        p.fwd_workspace_bytes >= split_bytes(p.batch, p.heads, p.q_len, p.head_dim, sc.splits))
      return split_kernel(p.dtype, p.head_dim)(p, sc.splits, sc.pack, stream);
  }
  if (arch == 90 && (p.dtype == DType::BF16 || p.dtype == DType::F16)) {
    bool ran = false;
    const Status st = forward_wgmma(p, arch, &ran, stream);
    if (ran) return st;
  }
  if (p.dtype != DType::BF16 && p.dtype != DType::F16)
    return Status(StatusCode::Unsupported, "FlashSdpaPlan: tensor-core forward takes f16 or bf16");
  const Config* c = pick(p.head_dim, uses_features(p), p.dtype, p.hint);
  if (c == nullptr)
    return Status(StatusCode::Unsupported, "FlashSdpaPlan: no tensor-core forward kernel for head dim " +
                                               std::to_string(p.head_dim) + " in this build (BARACUDA_FLASH_HEAD_DIMS=" +
                                               BARACUDA_FLASH_HEAD_DIMS_VALUE + ")");
  return c->launch(p, arch, sm_count, stream);
}

const char* forward_mma_variant(const FlashShape& s, int arch, int sm_count) {
  const SplitChoice sc = choose_split(s.dtype, s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, sm_count, s.hint);
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

const char* forward_mma_variant_for(const FlashFwdParams& p, int arch, int sm_count) {
  FlashShape s = shape_of(p);
  if (p.dtype == DType::BF16 || p.dtype == DType::F16) {
    // The same decisions as forward_mma, in its order.
    const SplitChoice sc = choose_split(p.dtype, p.batch, p.heads, p.kv_heads, p.q_len, p.kv_len, p.head_dim, sm_count, p.hint);
    if (sc.splits > 0) {
      if (p.fwd_workspace != nullptr && reinterpret_cast<uintptr_t>(p.fwd_workspace) % 16 == 0 &&
          p.fwd_workspace_bytes >= split_bytes(p.batch, p.heads, p.q_len, p.head_dim, sc.splits))
        return forward_mma_variant(s, arch, sm_count);
      s.hint.splits = 0;
    }
  }
  if (forward_wgmma_eligible(s, arch) && (p.q_len <= 0 || p.batch <= 0 || p.heads <= 0 || !forward_wgmma_maps_ok(p)))
    s.hint.wgmma = false;
  return forward_mma_variant(s, arch, sm_count);
}

size_t forward_workspace_bytes_mma(const FlashShape& s, int arch, int sm_count) {
  if (arch < 80 || (s.dtype != DType::BF16 && s.dtype != DType::F16)) return 0;
  const SplitChoice sc = choose_split(s.dtype, s.batch, s.heads, s.kv_heads, s.q_len, s.kv_len, s.head_dim, sm_count, s.hint);
  return sc.splits > 0 ? split_bytes(s.batch, s.heads, s.q_len, s.head_dim, sc.splits) : 0;
}

}  // namespace baracuda::attention::cuda
