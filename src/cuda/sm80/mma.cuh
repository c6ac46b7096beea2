// Warp-level tensor-core building blocks (sm_80+): cp.async, ldmatrix,
// mma.sync m16n8k16 with f16/bf16 inputs and f32 accumulation, and the
// register fragment layouts they use. Shared by the flash-attention forward
// and backward kernels; keep the interface stable.
//
// Fragment layouts (PTX ISA, "Matrix fragments for mma.m16n8k16"), with
// g = lane / 4 (group) and t = lane % 4 (thread in group):
//   A (16x16, row-major), 4 x .b32, each two consecutive 16-bit elements:
//     a[0] = A[g    ][2t, 2t+1]     a[1] = A[g + 8][2t, 2t+1]
//     a[2] = A[g    ][2t+8, 2t+9]   a[3] = A[g + 8][2t+8, 2t+9]
//   B (16x8, "col": indexed B[k][n]), 2 x .b32:
//     b[0] = B[2t, 2t+1][g]         b[1] = B[2t+8, 2t+9][g]
//   C/D (16x8, f32), 4 floats:
//     c[0], c[1] = C[g][2t, 2t+1]   c[2], c[3] = C[g + 8][2t, 2t+1]
// Consequences used by the attention kernels:
//   * two C fragments of adjacent 8-column tiles (cols 0-7 and 8-15), packed
//     pairwise to 16-bit, ARE the A fragment of that 16x16 block:
//     a = {pack(c0[0],c0[1]), pack(c0[2],c0[3]), pack(c1[0],c1[1]), pack(c1[2],c1[3])}
//     (see acc_to_a_frag).
//   * ldmatrix (x4): lanes 8m..8m+7 give the row addresses of 8x8 matrix m;
//     register r[m] receives M_m[g][2t, 2t+1] (non-transposed) or
//     M_m[2t, 2t+1][g] (.trans).
//   * A fragment of a row-major 16x16 tile at (r0, c0):
//       lane l addresses row r0 + (l % 16), column c0 + (l / 16) * 8  -> ldmatrix_x4
//     (ldsm_a_row / ldsm_a_col below compute these).
//   * B fragments for S = Q K^T from K stored [n][k] row-major (k contiguous):
//       x4 at keys n0..n0+15, depth k0..k0+15 gives
//       {b(n-tile 0)[0], b(n-tile 0)[1], b(n-tile 1)[0], b(n-tile 1)[1]} when
//       lane l addresses row n0 + (l % 8) + (l / 16) * 8, column k0 + ((l / 8) % 2) * 8.
//   * B fragments for O = P V from V stored [k][n] row-major (n contiguous):
//       x4.trans at rows k0..k0+15, columns n0..n0+15 gives
//       {b(n-tile 0)[0], b(n-tile 0)[1], b(n-tile 1)[0], b(n-tile 1)[1]} when
//       lane l addresses row k0 + (l % 8) + ((l / 8) % 2) * 8, column n0 + (l / 16) * 8.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <type_traits>

namespace baracuda::dev::sm80 {

// ---- addresses ---------------------------------------------------------------
__device__ __forceinline__ uint32_t smem_u32(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// ---- cp.async (global -> shared, 16 bytes, bypassing L1) ----------------------
// pred false: the 16 destination bytes are zero-filled and nothing is read
// (gmem must still be a valid-looking address; pass any in-bounds pointer).
__device__ __forceinline__ void cp_async_16(uint32_t smem_addr, const void* gmem, bool pred = true) {
  const int src_bytes = pred ? 16 : 0;
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr), "l"(gmem), "r"(src_bytes)
               : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::: "memory"); }
// Wait until at most N committed groups are still pending.
template <int N>
__device__ __forceinline__ void cp_async_wait() {
  asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// ---- ldmatrix -----------------------------------------------------------------
__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(addr));
}
// x2: lanes 0..15 supply the addresses (lanes 16..31 must still hold valid ones).
__device__ __forceinline__ void ldmatrix_x2(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.shared.b16 {%0, %1}, [%2];\n" : "=r"(r[0]), "=r"(r[1]) : "r"(addr));
}
__device__ __forceinline__ void ldmatrix_x2_trans(uint32_t (&r)[2], uint32_t addr) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x2.trans.shared.b16 {%0, %1}, [%2];\n"
               : "=r"(r[0]), "=r"(r[1])
               : "r"(addr));
}

// ---- mma.sync m16n8k16, f32 accumulate: d += a * b ------------------------------
// T = __half or __nv_bfloat16 (the element type of a and b).
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
  if constexpr (std::is_same_v<T, __half>) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>, "mma_16816: T must be __half or __nv_bfloat16");
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, "
        "{%0, %1, %2, %3};\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
  }
}
// Same, with b given as two registers (e.g. halves of an ldmatrix_x4 result).
template <class T>
__device__ __forceinline__ void mma_16816(float (&d)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
  const uint32_t b[2] = {b0, b1};
  mma_16816<T>(d, a, b);
}

// ---- packing f32 -> two 16-bit values in one register (lo = first element) -------
template <class T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi) {
  uint32_t r;
  if constexpr (std::is_same_v<T, __half>) {
    asm("cvt.rn.f16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  } else {
    static_assert(std::is_same_v<T, __nv_bfloat16>, "pack2: T must be __half or __nv_bfloat16");
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(r) : "f"(hi), "f"(lo));
  }
  return r;
}
// Two f32 C fragments of adjacent 8-column tiles -> the A fragment of the 16x16 block.
template <class T>
__device__ __forceinline__ void acc_to_a_frag(uint32_t (&a)[4], const float (&c0)[4], const float (&c1)[4]) {
  a[0] = pack2<T>(c0[0], c0[1]);
  a[1] = pack2<T>(c0[2], c0[3]);
  a[2] = pack2<T>(c1[0], c1[1]);
  a[3] = pack2<T>(c1[2], c1[3]);
}
// Unpack a register of two 16-bit values to f32 (lo = first element).
template <class T>
__device__ __forceinline__ float2 unpack2(uint32_t v) {
  if constexpr (std::is_same_v<T, __half>) {
    __half2 h;
    __builtin_memcpy(&h, &v, 4);
    return __half22float2(h);
  } else {
    return make_float2(__uint_as_float(v << 16), __uint_as_float(v & 0xffff0000u));
  }
}

// ---- per-lane ldmatrix addressing helpers (row-major tile with `ld` elements per row) ----
// Element offsets (not bytes) of this lane's row address.
// A fragment of the 16x16 block at (r0, c0):
__device__ __forceinline__ int ldsm_a_off(int lane, int r0, int c0, int ld) {
  return (r0 + (lane & 15)) * ld + c0 + ((lane >> 4) << 3);
}
// B fragments (two n-tiles) from an [n][k] row-major tile, block at (n0, k0):
__device__ __forceinline__ int ldsm_b_nk_off(int lane, int n0, int k0, int ld) {
  return (n0 + (lane & 7) + ((lane >> 4) << 3)) * ld + k0 + (((lane >> 3) & 1) << 3);
}
// B fragments (two n-tiles) from a [k][n] row-major tile (use ldmatrix_x4_trans), block at (k0, n0):
__device__ __forceinline__ int ldsm_b_kn_off(int lane, int k0, int n0, int ld) {
  return (k0 + (lane & 7) + (((lane >> 3) & 1) << 3)) * ld + n0 + ((lane >> 4) << 3);
}

// ---- quad (4 lanes sharing a fragment row) reductions -----------------------------
__device__ __forceinline__ float quad_max(float x) {
  x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
  return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float quad_sum(float x) {
  x += __shfl_xor_sync(0xffffffffu, x, 1);
  return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

}  // namespace baracuda::dev::sm80
