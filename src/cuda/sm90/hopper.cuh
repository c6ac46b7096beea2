// Hopper (sm_90a) building blocks shared by the wgmma kernels: shared-memory
// matrix descriptors for the 128-byte swizzled layout, wgmma ordering
// (fence / commit / wait), mbarriers and the bulk tensor copy (TMA).
//
// Everything that emits an sm_90a-only instruction is compiled only when
// BARACUDA_SM90A_DEVICE is defined (the sm_90a device pass); other passes get
// a trapping stub, so a kernel built for sm_80 too can include this header.
// Host code must launch such kernels only on sm_90 devices of a build that
// contains the sm_90a target (see flash_wgmma_fwd.cu).
//
// The 128-byte swizzled tile layout (what TMA with CU_TENSOR_MAP_SWIZZLE_128B
// writes, and what wgmma reads with swizzle mode 1): a tile of R rows x 64
// 16-bit elements is R rows of 128 bytes; the 16-byte chunk c of row r sits at
//   r * 128 + ((c ^ (r % 8)) * 16)
// so 8 consecutive rows form a 1024-byte atom. Tiles must start 1024-byte
// aligned (the hardware swizzles on absolute address bits). Wider rows are
// split into 64-element column blocks stored one after another.
#pragma once
#include <cuda.h>  // CUtensorMap (type only; no driver-library calls here)

#include <cstdint>

#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
#define BARACUDA_SM90A_DEVICE 1
#endif

namespace baracuda::dev::sm90 {

// Shared-memory matrix descriptor with 128-byte swizzle. Fields (PTX ISA,
// "Matrix Descriptor Format"): start address >> 4 (bits 0-13), leading byte
// offset >> 4 (16-29), stride byte offset >> 4 (32-45), swizzle mode (62-63,
// 1 = 128B). For K-major operands the stride byte offset is the distance
// between 8-row groups (1024 in the layout above) and the leading offset is
// unused; for N-major (transposed) B it is the distance between 8-row (k)
// groups, and the leading offset the distance between 64-element column blocks.
// Advancing along K inside a 128-byte row is done by adding bytes >> 4 to the
// start address (no carry can leave the 14-bit field: shared memory < 256 KB).
__device__ __forceinline__ uint64_t desc_sw128(uint32_t smem_addr, uint32_t lead_bytes, uint32_t stride_bytes) {
  return static_cast<uint64_t>((smem_addr & 0x3FFFFu) >> 4) | (static_cast<uint64_t>((lead_bytes >> 4) & 0x3FFFu) << 16) |
         (static_cast<uint64_t>((stride_bytes >> 4) & 0x3FFFu) << 32) | (uint64_t{1} << 62);
}

// ---- wgmma ordering ------------------------------------------------------------------
// fence: before the first wgmma of a batch (orders this thread's earlier
// register writes, e.g. a rescaled accumulator or the A fragments, before the
// asynchronous reads). commit: closes the batch into a group. wait<N>: until
// at most N groups of this thread are pending.
__device__ __forceinline__ void wgmma_fence() {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
#endif
}
__device__ __forceinline__ void wgmma_commit() {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
#endif
}
template <int N>
__device__ __forceinline__ void wgmma_wait() {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
#endif
}
// Keeps the compiler from moving accesses of accumulator registers across the
// asynchronous window (issue ... wait): an empty asm that "reads and writes" each.
template <int N>
__device__ __forceinline__ void fence_regs(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
// Generic-proxy shared-memory writes (st.shared, cp.async) that wgmma or TMA
// read next: each writing thread fences before the barrier that publishes them.
__device__ __forceinline__ void fence_proxy_async_smem() {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
#endif
}

// ---- register reallocation between warpgroups ---------------------------------------------
// Every thread of the warpgroup executes it; the kernel needs a register cap at
// entry (__launch_bounds__(threads, 1)). kRegs: multiple of 8 in [24, 256].
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_inc() {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}
template <int kRegs>
__device__ __forceinline__ void setmaxnreg_dec() {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(kRegs));
#endif
}

// ---- mbarrier ------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(uint32_t bar, uint32_t count) {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
#endif
}
// Makes initialised barriers visible to the async proxy (TMA) and other threads.
__device__ __forceinline__ void mbar_init_fence() {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
#endif
}
// One arrival that also announces `bytes` more bytes of TMA traffic to come.
__device__ __forceinline__ void mbar_arrive_expect_tx(uint32_t bar, uint32_t bytes) {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(bytes) : "memory");
#endif
}
__device__ __forceinline__ void mbar_arrive(uint32_t bar) {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(bar) : "memory");
#endif
}
// Waits until the phase with parity `parity` has completed.
__device__ __forceinline__ void mbar_wait(uint32_t bar, uint32_t parity) {
#ifdef BARACUDA_SM90A_DEVICE
  uint32_t done = 0;
  do {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
  } while (done == 0);
#endif
}

// ---- bulk tensor copy (TMA), global -> shared, completion on an mbarrier ----------------
// `map` is the address of a __grid_constant__ kernel parameter. Coordinates
// are in elements, innermost first; boxes partly outside the tensor are
// zero-filled and still count their full size towards the barrier's bytes.
__device__ __forceinline__ void tma_load_4d(uint32_t dst, const CUtensorMap* map, uint32_t bar, int c0, int c1, int c2,
                                            int c3) {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile(
      "cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%3, %4, %5, %6}], "
      "[%2];\n" ::"r"(dst),
      "l"(reinterpret_cast<uint64_t>(map)), "r"(bar), "r"(c0), "r"(c1), "r"(c2), "r"(c3)
      : "memory");
#endif
}
__device__ __forceinline__ void tma_prefetch_map(const CUtensorMap* map) {
#ifdef BARACUDA_SM90A_DEVICE
  asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<uint64_t>(map)) : "memory");
#endif
}

}  // namespace baracuda::dev::sm90
