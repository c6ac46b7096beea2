// Hopper flash attention (wgmma + TMA): eligibility, tensor maps and dispatch
// for the forward (kernel in flash_wgmma_fwd.cuh) and the backward (kernels in
// flash_wgmma_bwd.cuh), instantiated per dtype and head dim as listed in
// ../manifest.cmake (one generated TU each).
// forward_mma() and backward_mma() try this path first on sm_90.
//
// The variant hint wgmma=0 (PlanPreference::variant; environment defaults
// BARACUDA_FLASH_FWD_WGMMA=0 / BARACUDA_FLASH_BWD_WGMMA=0, read by select())
// turns the path off (benchmarks compare it with the mma.sync kernels); a
// hinted mma.sync forward tile turns the forward off too.
#include <cuda.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <cudaTypedefs.h>

#include <array>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ops/attention/cuda/flash_wgmma_bwd.cuh"
#include "ops/attention/cuda/flash_wgmma_fwd.cuh"
#include "ops/attention/flash_launch.hpp"

#include "ops/attention/manifest.hpp"  // generated from ops/attention/manifest.cmake

// The kernels are compiled once, in their generated instantiation TUs.
BARACUDA_FLASH_WGMMA_FWD_EXTERN
BARACUDA_FLASH_WGMMA_BWD_EXTERN

namespace baracuda::attention::cuda {
namespace {

#if defined(BARACUDA_HAVE_SM90A)
constexpr bool kBuiltSm90a = true;
#else
constexpr bool kBuiltSm90a = false;
#endif

// The plan's variant hint may switch the Hopper kernels off; a hinted
// mma.sync tile also means "not the Hopper kernel".
bool hint_allows(const baracuda::detail::FlashHint& h) { return h.wgmma && !h.has_tile(); }

// The kernels exist for head dims 64, 128 and 256 (forward; the backward 64
// and 128); a smaller head dim (a multiple of 8) runs in the next one up, its
// columns zero-filled by TMA, when at least 3/4 of the padded work is real
// (measured: the padded wgmma kernel still beats the mma.sync kernel there).
int padded_dim(int64_t d) {
  if (d <= 0 || d % 8 != 0 || d > 256) return 0;
  const int64_t p = d <= 64 ? 64 : (d <= 128 ? 128 : 256);
  return 4 * d >= 3 * p ? static_cast<int>(p) : 0;
}

// "wgmma-tma-d<D>-q<query rows>k<keys>s<stages>", from the kernel's tile rules.
template <int kD>
const char* fwd_variant_name() {
  using C = wgmma_fwd::WgCfg<kD>;
  static const std::string name = "wgmma-tma-d" + std::to_string(kD) + "-q" + std::to_string(C::kBM) + "k" +
                                   std::to_string(C::kBN) + "s" + std::to_string(C::kStages);
  return name.c_str();
}
// "wgmma-tma-bwd-d<D>-kv<keys>q<query step>-q<query rows>k<key step>": the
// dK/dV CTA, then the dQ CTA.
template <int kD>
const char* bwd_variant_name() {
  using C1 = wgmma_bwd::DkdvCfg<kD>;
  using C2 = wgmma_bwd::DqCfg<kD>;
  static const std::string name = "wgmma-tma-bwd-d" + std::to_string(kD) + "-kv" + std::to_string(C1::kBN) + "q" +
                                   std::to_string(C1::kBM) + "-q" + std::to_string(C2::kBM) + "k" + std::to_string(C2::kBN);
  return name.c_str();
}

using Launch = Status (*)(const wgmma_fwd::WgArgs&, int, int, int, void*);
using BwdLaunch = Status (*)(const wgmma_bwd::WgBwdArgs&, const wgmma_bwd::WgBwdArgs&, void*);
struct FwdKernel {
  DType dtype;
  int d;
  Launch launch;
  const char* (*name)();
};
struct BwdKernel {
  DType dtype;
  int d;
  BwdLaunch launch;
  const char* (*name)();
};
#define FWD(DT, T, D) FwdKernel{DType::DT, D, &wgmma_fwd::launch_wgmma_kernel<T, D>, &fwd_variant_name<D>},
#define BWD(DT, T, D) BwdKernel{DType::DT, D, &wgmma_bwd::launch_wgmma_bwd<T, D>, &bwd_variant_name<D>},
const std::array<FwdKernel, BARACUDA_FLASH_WGMMA_FWD_COUNT> kFwdKernels{{BARACUDA_FLASH_WGMMA_FWD_KERNELS(FWD)}};
const std::array<BwdKernel, BARACUDA_FLASH_WGMMA_BWD_COUNT> kBwdKernels{{BARACUDA_FLASH_WGMMA_BWD_KERNELS(BWD)}};
#undef FWD
#undef BWD

// The kernel for the shape's dtype and padded head dim; null when there is none
// (or this build left it out: BARACUDA_FLASH_HEAD_DIMS).
template <class Kernel, size_t N>
const Kernel* find_kernel(const std::array<Kernel, N>& kernels, DType dt, int64_t head_dim) {
  const int d = padded_dim(head_dim);
  for (const Kernel& k : kernels)
    if (k.dtype == dt && k.d == d) return &k;
  return nullptr;
}

// The driver's tensor-map encoder, found through the runtime (no link to libcuda).
PFN_cuTensorMapEncodeTiled_v12000 encoder() {
  static const PFN_cuTensorMapEncodeTiled_v12000 fn = [] {
    void* f = nullptr;
    cudaDriverEntryPointQueryResult q{};
    if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess) {
      (void)cudaGetLastError();
      return static_cast<PFN_cuTensorMapEncodeTiled_v12000>(nullptr);
    }
    return reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
  }();
  return fn;
}

// A 4-D map (d, row, head, batch) over 16-bit elements with 64 x box_rows boxes
// and the 128-byte swizzle. Strides are in elements. TMA needs 16-byte aligned
// base and strides; a dimension of extent 1 gets a harmless valid stride.
bool make_map(CUtensorMap* m, DType dt, const void* ptr, int64_t d, int64_t rows, int64_t heads, int64_t batch, int64_t s_row,
              int64_t s_head, int64_t s_batch, int box_rows) {
  const PFN_cuTensorMapEncodeTiled_v12000 enc = encoder();
  if (enc == nullptr || reinterpret_cast<uintptr_t>(ptr) % 16 != 0) return false;
  const int64_t e = 2;
  int64_t sr = s_row * e, sh = s_head * e, sb = s_batch * e;
  if (heads == 1) sh = sr * rows;
  if (batch == 1) sb = sh * heads;
  for (int64_t st : {sr, sh, sb})
    if (st <= 0 || st % 16 != 0 || st >= (int64_t{1} << 40)) return false;
  const cuuint64_t dims[4] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(rows), static_cast<cuuint64_t>(heads),
                              static_cast<cuuint64_t>(batch)};
  const cuuint64_t strides[3] = {static_cast<cuuint64_t>(sr), static_cast<cuuint64_t>(sh), static_cast<cuuint64_t>(sb)};
  const cuuint32_t box[4] = {64, static_cast<cuuint32_t>(box_rows), 1, 1};
  const cuuint32_t estr[4] = {1, 1, 1, 1};
  const CUtensorMapDataType ty = dt == DType::BF16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  return enc(m, ty, 4, const_cast<void*>(ptr), dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
             CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

// The TMA maps of the forward kernel; false when TMA cannot describe the
// strides or pointers (the caller then takes the mma.sync path).
bool forward_maps(const FlashFwdParams& p, wgmma_fwd::WgArgs* wa) {
  const int kbn = padded_dim(p.head_dim) <= 128 ? 128 : 64;
  // kv_len == 0 still needs valid maps (no tile is loaded then); give K / V one row.
  const int64_t kv_rows = p.kv_len > 0 ? p.kv_len : 1;
  return make_map(&wa->tm_q, p.dtype, p.q, p.head_dim, p.q_len, p.heads, p.batch, p.q_ss, p.q_sh, p.q_sb, 128) &&
         make_map(&wa->tm_k, p.dtype, p.k, p.head_dim, kv_rows, p.kv_heads, p.batch, p.k_ss, p.k_sh, p.k_sb, kbn) &&
         make_map(&wa->tm_v, p.dtype, p.v, p.head_dim, kv_rows, p.kv_heads, p.batch, p.v_ss, p.v_sh, p.v_sb, kbn);
}

// The TMA maps of the two backward kernels (dK/dV: query tiles of 64, key
// tiles of 128; dQ: the reverse); false as above.
bool backward_maps(const FlashBwdParams& p, wgmma_bwd::WgBwdArgs* w1, wgmma_bwd::WgBwdArgs* w2) {
  const int64_t q_rows = p.q_len > 0 ? p.q_len : 1, kv_rows = p.kv_len > 0 ? p.kv_len : 1;
  for (int k = 0; k < 2; ++k) {
    wgmma_bwd::WgBwdArgs& w = k == 0 ? *w1 : *w2;
    const int qbox = k == 0 ? 64 : 128, kbox = k == 0 ? 128 : 64;
    if (!make_map(&w.tm_q, p.dtype, p.q, p.head_dim, q_rows, p.heads, p.batch, p.q_ss, p.q_sh, p.q_sb, qbox) ||
        !make_map(&w.tm_dy, p.dtype, p.dy, p.head_dim, q_rows, p.heads, p.batch, p.dy_ss, p.dy_sh, p.dy_sb, qbox) ||
        !make_map(&w.tm_k, p.dtype, p.k, p.head_dim, kv_rows, p.kv_heads, p.batch, p.k_ss, p.k_sh, p.k_sb, kbox) ||
        !make_map(&w.tm_v, p.dtype, p.v, p.head_dim, kv_rows, p.kv_heads, p.batch, p.v_ss, p.v_sh, p.v_sb, kbox))
      return false;
  }
  return true;
}

}  // namespace

bool forward_wgmma_maps_ok(const FlashFwdParams& p) {
  wgmma_fwd::WgArgs wa;
  std::memset(static_cast<void*>(&wa), 0, sizeof(wa));
  return forward_maps(p, &wa);
}

bool backward_wgmma_maps_ok(const FlashBwdParams& p) {
  wgmma_bwd::WgBwdArgs w1, w2;
  std::memset(static_cast<void*>(&w1), 0, sizeof(w1));
  std::memset(static_cast<void*>(&w2), 0, sizeof(w2));
  return backward_maps(p, &w1, &w2);
}

bool forward_wgmma_eligible(const FlashShape& s, int arch) {
  return kBuiltSm90a && arch == 90 && !s.features && !s.varlen && (s.dtype == DType::BF16 || s.dtype == DType::F16) &&
         find_kernel(kFwdKernels, s.dtype, s.head_dim) != nullptr && s.q_len > 0 && s.q_len < (int64_t{1} << 31) &&
         s.kv_len < (int64_t{1} << 31) &&
         s.kv_heads > 0 && s.heads % s.kv_heads == 0 && hint_allows(s.hint);
}

const char* forward_wgmma_variant(const FlashShape& s) {
  const FwdKernel* k = find_kernel(kFwdKernels, s.dtype, s.head_dim);
  return k != nullptr ? k->name() : "wgmma-unsupported";
}

Status forward_wgmma(const FlashFwdParams& p, int arch, bool* ran, void* stream) {
  *ran = false;
  if (!forward_wgmma_eligible(shape_of(p), arch)) return Status::ok();
  if (p.q_len <= 0 || p.batch <= 0 || p.heads <= 0) return Status::ok();
  wgmma_fwd::WgArgs wa;
  std::memset(static_cast<void*>(&wa), 0, sizeof(wa));
  if (!forward_maps(p, &wa)) return Status::ok();  // strides TMA cannot describe: the caller takes the mma.sync path
  wa.f.p = p;
  wa.f.scale = static_cast<float>(p.scale);
  wa.f.scale_log2 = static_cast<float>(p.scale * 1.4426950408889634);
  wa.f.softcap = 0.f;
  wa.f.softcap_in = 0.f;
  wa.f.group = p.heads / p.kv_heads;
  const FwdKernel* k = find_kernel(kFwdKernels, p.dtype, p.head_dim);
  if (k == nullptr) return Status::ok();
  *ran = true;
  return k->launch(wa, p.q_len, p.heads, p.batch, stream);
}

bool backward_wgmma_eligible(const FlashShape& s, int arch) {
  return kBuiltSm90a && arch == 90 && !s.features && !s.varlen && (s.dtype == DType::BF16 || s.dtype == DType::F16) &&
         find_kernel(kBwdKernels, s.dtype, s.head_dim) != nullptr && s.q_len < (int64_t{1} << 31) &&
         s.kv_len < (int64_t{1} << 31) &&
         s.kv_heads > 0 && s.heads % s.kv_heads == 0 && s.hint.wgmma;
}

const char* backward_wgmma_variant(const FlashShape& s) {
  const BwdKernel* k = find_kernel(kBwdKernels, s.dtype, s.head_dim);
  return k != nullptr ? k->name() : "wgmma-unsupported";
}

Status backward_wgmma(const mma_bwd::BwdArgs& a, int arch, bool* ran, void* stream) {
  *ran = false;
  const FlashBwdParams& p = a.p;
  if (!backward_wgmma_eligible(shape_of(p), arch) || p.batch <= 0 || p.heads <= 0) return Status::ok();
  wgmma_bwd::WgBwdArgs w1, w2;
  std::memset(static_cast<void*>(&w1), 0, sizeof(w1));
  std::memset(static_cast<void*>(&w2), 0, sizeof(w2));
  if (!backward_maps(p, &w1, &w2)) return Status::ok();  // strides TMA cannot describe: the caller takes the mma.sync kernels
  w1.a = a;
  w2.a = a;
  const BwdKernel* k = find_kernel(kBwdKernels, p.dtype, p.head_dim);
  if (k == nullptr) return Status::ok();
  *ran = true;
  return k->launch(w1, w2, stream);
}

}  // namespace baracuda::attention::cuda
