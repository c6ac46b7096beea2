# Attention kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. Each row is one instantiation; its
# second argument names the generated translation unit (one per dtype and head
# dim, so that they compile in parallel). The dispatchers read the generated
# lists (ops/attention/manifest.hpp): flash_mma_fwd.cu (tile table, split-KV),
# flash_mma_bwd.cu, flash_wgmma.cu, sdpa.cu.
#
# D is the kernel's (padded) head dim. BARACUDA_FLASH_HEAD_DIMS (e.g. "64;128")
# keeps only those D of the tensor-core kernels (mma.sync and wgmma, forward,
# split-KV and backward); a problem whose head dim then has no kernel falls back
# as a refused configuration does: the wgmma path to mma.sync, and mma.sync to
# an Unsupported error at run() naming the option (sku().variant reads
# "mma16816-unsupported" / "mma16816-bwd-unsupported"); the cuDNN route, where
# it takes the problem, is unaffected. f32/f64 (SIMT) and SdpaPlan have no
# head-dim instantiations.

# ---- tensor-core forward, mma.sync (cuda/flash_mma_fwd.cuh) --------------------
# DEFAULT: the problems that take the tile by default, kPlain (no mask, ALiBi or
# softcap) and/or kFeat (the general kernel); 0: only through
# the variant hint tile=<BM>x<BN>w<W>s<S> (benchmarking; PlanPreference::variant). Defaults are the
# tiles measured on an H200 (FlashAttention-2's single-buffered schedule). The
# two-stage (S=2) alternatives pass the same code paths but were not yet timed or
# tested on a GPU: benchmark them with the tile= hint before making one
# a default.
baracuda_kernel_set(flash_mma_fwd
  INCLUDE ops/attention/cuda/flash_mma_fwd.cuh
  COLUMNS DTYPE D BM BN W S DEFAULT
  INSTANTIATE "BARACUDA_FLASH_MMA_FWD_INSTANTIATE(@CTYPE@, @D@, @BM@, @BN@, @W@, @S@)"
  FILTER D BARACUDA_FLASH_HEAD_DIMS)
# The split-KV path (short query lengths), one per dtype and head dim.
baracuda_kernel_set(flash_mma_split
  INCLUDE ops/attention/cuda/flash_mma_fwd.cuh
  COLUMNS DTYPE D
  INSTANTIATE "BARACUDA_FLASH_MMA_SPLIT_INSTANTIATE(@CTYPE@, @D@)"
  FILTER D BARACUDA_FLASH_HEAD_DIMS)

foreach(dt BF16 F16)
  set(tu flash_mma_fwd_${dt}_d)
  baracuda_kernels(flash_mma_fwd ${tu}32  ${dt}  32 128  64 4 1 kPlain|kFeat)
  baracuda_kernels(flash_mma_fwd ${tu}64  ${dt}  64 128 128 4 1 kPlain)  # 300 vs 279 TFLOP/s for 128x64 (8x16x2048x64)
  baracuda_kernels(flash_mma_fwd ${tu}64  ${dt}  64 128  64 4 1 kFeat)   # the 128-key tile spills in the general kernel
  baracuda_kernels(flash_mma_fwd ${tu}96  ${dt}  96 128  64 4 1 kPlain|kFeat)
  baracuda_kernels(flash_mma_fwd ${tu}128 ${dt} 128 128  64 4 1 kPlain|kFeat)
  baracuda_kernels(flash_mma_fwd ${tu}160 ${dt} 160  64  64 4 1 kPlain|kFeat)
  baracuda_kernels(flash_mma_fwd ${tu}192 ${dt} 192  64  64 4 1 kPlain|kFeat)
  baracuda_kernels(flash_mma_fwd ${tu}224 ${dt} 224  64  64 4 1 kPlain|kFeat)
  baracuda_kernels(flash_mma_fwd ${tu}256 ${dt} 256  64  64 4 1 kPlain|kFeat)
  foreach(d 32 64 96 128 160 192 224 256)
    baracuda_kernels(flash_mma_split ${tu}${d} ${dt} ${d})
  endforeach()
endforeach()
# bf16 only: the alternatives for the tile= hint.
set(tu flash_mma_fwd_bf16_d)
baracuda_kernels(flash_mma_fwd ${tu}64  BF16  64 128  64 4 2 0)
baracuda_kernels(flash_mma_fwd ${tu}64  BF16  64 128 128 4 2 0)
baracuda_kernels(flash_mma_fwd ${tu}96  BF16  96 128  64 4 2 0)
baracuda_kernels(flash_mma_fwd ${tu}128 BF16 128 128  64 4 2 0)
baracuda_kernels(flash_mma_fwd ${tu}128 BF16 128 128  32 4 2 0)
baracuda_kernels(flash_mma_fwd ${tu}160 BF16 160  64  64 4 2 0)
baracuda_kernels(flash_mma_fwd ${tu}192 BF16 192  64  32 4 2 0)
baracuda_kernels(flash_mma_fwd ${tu}256 BF16 256  64  32 4 2 0)
baracuda_kernels(flash_mma_fwd ${tu}256 BF16 256 128  64 8 1 0)

# ---- tensor-core backward, mma.sync (cuda/flash_mma_bwd_kernels.cuh) -----------
# Tiles per head dim: mma_bwd::BwdTile<D>. Two head dims per TU.
baracuda_kernel_set(flash_mma_bwd
  INCLUDE ops/attention/cuda/flash_mma_bwd_kernels.cuh
  COLUMNS DTYPE D
  INSTANTIATE "BARACUDA_FLASH_MMA_BWD_INSTANTIATE(@CTYPE@, @D@)"
  FILTER D BARACUDA_FLASH_HEAD_DIMS)
foreach(dt BF16 F16)
  foreach(pair 32_64 96_128 160_192 224_256)
    string(REPLACE "_" ";" dims ${pair})
    foreach(d IN LISTS dims)
      baracuda_kernels(flash_mma_bwd flash_mma_bwd_${dt}_d${pair} ${dt} ${d})
    endforeach()
  endforeach()
endforeach()

# ---- Hopper (wgmma + TMA, sm_90a) forward and backward -------------------------
# cuda/flash_wgmma_fwd.cuh (tiles: wgmma_fwd::WgCfg<D>) and
# cuda/flash_wgmma_bwd.cuh (wgmma_bwd::DkdvCfg<D>, DqCfg<D>). flash_wgmma.cu
# includes both headers, hence the extern declarations.
baracuda_kernel_set(flash_wgmma_fwd
  INCLUDE ops/attention/cuda/flash_wgmma_fwd.cuh
  COLUMNS DTYPE D
  INSTANTIATE "BARACUDA_FLASH_WGMMA_FWD_INSTANTIATE(@CTYPE@, @D@)"
  EXTERN "extern template baracuda::Status baracuda::attention::cuda::wgmma_fwd::launch_wgmma_kernel<@CTYPE@, @D@>(const baracuda::attention::cuda::wgmma_fwd::WgArgs&, int, int, int, void*);"
  FILTER D BARACUDA_FLASH_HEAD_DIMS)
baracuda_kernel_set(flash_wgmma_bwd
  INCLUDE ops/attention/cuda/flash_wgmma_bwd.cuh
  COLUMNS DTYPE D
  INSTANTIATE "BARACUDA_FLASH_WGMMA_BWD_INSTANTIATE(@CTYPE@, @D@)"
  EXTERN "extern template baracuda::Status baracuda::attention::cuda::wgmma_bwd::launch_wgmma_bwd<@CTYPE@, @D@>(const baracuda::attention::cuda::wgmma_bwd::WgBwdArgs&, const baracuda::attention::cuda::wgmma_bwd::WgBwdArgs&, void*);"
  FILTER D BARACUDA_FLASH_HEAD_DIMS)
foreach(dt BF16 F16)
  foreach(d 64 128 256)
    baracuda_kernels(flash_wgmma_fwd flash_wgmma_fwd_${dt}_d${d} ${dt} ${d})
  endforeach()
  foreach(d 64 128)
    baracuda_kernels(flash_wgmma_bwd flash_wgmma_bwd_${dt}_d${d} ${dt} ${d})
  endforeach()
endforeach()

# ---- materialized attention, SdpaPlan (cuda/sdpa_kernels.cuh) ------------------
baracuda_kernel_set(sdpa
  INCLUDE ops/attention/cuda/sdpa_kernels.cuh
  NAMESPACE baracuda::attention::cuda::sdpa::detail_k
  COLUMNS DTYPE
  INSTANTIATE "template Status run_forward<@CTYPE@>(const SdpaFwdParams&, cudaStream_t);"
              "template Status run_backward<@CTYPE@>(const SdpaBwdParams&, cudaStream_t);")
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(sdpa sdpa_${dt} ${dt})
endforeach()
