# Reduction kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. The dispatchers read the generated
# lists (ops/reduce/manifest.hpp): cuda/forward_launch.cu, cuda/backward.cu.

# ---- forward (cuda/forward_common.cuh) ------------------------------------------
# OPS names the op list of forward_common.cuh the dtype instantiates: FLOAT (all
# nine kinds) or INT (Sum, Prod, Max, Min, ArgMax, ArgMin, accumulated in int64).
# forward_common.cuh declares them extern for every dtype below.
baracuda_kernel_set(reduce_fwd
  INCLUDE ops/reduce/cuda/forward_common.cuh
  NAMESPACE baracuda::reduce::cuda::fwd
  COLUMNS DTYPE OPS
  INSTANTIATE "BARACUDA_REDUCE_FWD_@OPS@_OPS(BARACUDA_REDUCE_FWD_INSTANTIATE, @CTYPE@)")
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(reduce_fwd forward_${dt} ${dt} FLOAT)
endforeach()
baracuda_kernels(reduce_fwd forward_int I32 INT)
baracuda_kernels(reduce_fwd forward_int I64 INT)

# ---- backward (cuda/backward_kernels.cuh) ---------------------------------------
# run_typed<T> (compiled in backward.cu) calls one of four parts per kind:
#   launch_ew<EW_*>        Sum/Mean, Norm2, LogSumExp: one elementwise pass
#   run_tiled<TK_TIE>      Max/Min      run_tiled<TK_MEAN>  Var/Std
#   run_tiled<TK_PROD>     Prod
# Two TUs per dtype instead of one: measured (nvcc CPU s, f32, sm_90a) ew 9.7,
# tie 15.3, mean 14.2, prod 16.6 as four TUs, 45.9 as one; each TU re-parses the
# header (~3 s), so two TUs of ~25 s keep most of the parallelism on many cores
# while adding little on CI's two.
baracuda_kernel_set(reduce_bw_ew
  INCLUDE ops/reduce/cuda/backward_kernels.cuh
  NAMESPACE baracuda::reduce::cuda::bw
  COLUMNS DTYPE OP
  INSTANTIATE "template Status launch_ew<@OP@, @CTYPE@>(const Problem&, const acc_t<@CTYPE@>*, const EwArgs<acc_t<@CTYPE@>>&, bool);"
  EXTERN "extern template Status launch_ew<@OP@, @CTYPE@>(const Problem&, const acc_t<@CTYPE@>*, const EwArgs<acc_t<@CTYPE@>>&, bool);")
baracuda_kernel_set(reduce_bw_tiled
  INCLUDE ops/reduce/cuda/backward_kernels.cuh
  NAMESPACE baracuda::reduce::cuda::bw
  COLUMNS DTYPE TK
  INSTANTIATE "template Status run_tiled<@TK@, @CTYPE@>(const Problem&);"
  EXTERN "extern template Status run_tiled<@TK@, @CTYPE@>(const Problem&);")
# The dtypes backward.cu dispatches to run_typed<T> (a list; each dtype needs
# all four parts).
baracuda_kernel_set(reduce_bw COLUMNS DTYPE)
foreach(dt F32 F64 F16 BF16)
  baracuda_kernels(reduce_bw - ${dt})
  foreach(op EW_SUMMEAN EW_NORM2 EW_LSE)
    baracuda_kernels(reduce_bw_ew backward_${dt}_ew_prod ${dt} ${op})
  endforeach()
  baracuda_kernels(reduce_bw_tiled backward_${dt}_ew_prod ${dt} TK_PROD)
  baracuda_kernels(reduce_bw_tiled backward_${dt}_tie_mean ${dt} TK_TIE)
  baracuda_kernels(reduce_bw_tiled backward_${dt}_tie_mean ${dt} TK_MEAN)
endforeach()
