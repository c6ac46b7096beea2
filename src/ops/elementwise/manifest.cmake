# Elementwise kernel instantiations: the only list of which kernels exist.
# Vocabulary: cmake/BaracudaGenerate.cmake. cuda/elementwise_launch.cu
# dispatches over the generated lists (ops/elementwise/manifest.hpp).
#
# Typed paths (vec16 + strided32) for operands of one storage dtype: one TU per
# (arity, dtype), each instantiating every op of that arity the dtype computes
# (cuda/op_kernels.cuh, launch_typed). i8 / u8 / i16 / bool operands and mixed
# dtypes take the generic path.
baracuda_kernel_set(ew_typed
  INCLUDE ops/elementwise/cuda/op_kernels.cuh
  NAMESPACE baracuda::elementwise::cuda
  COLUMNS ARITY DTYPE
  INSTANTIATE "template Status launch_typed<@ARITY@, @CTYPE@>(const Problem&, const Call&, Path, cudaStream_t);")
foreach(dt F32 BF16 F16 F64 I32 I64)
  foreach(arity 1 2 3)
    string(TOLOWER ${dt} _dt)
    baracuda_kernels(ew_typed ew_typed_${arity}_${_dt} ${arity} ${dt})
  endforeach()
endforeach()

# Generic path (64-bit indices, operands of any dtype converted at load): one
# kernel per (arity, op, compute type).
baracuda_kernel_set(ew_generic
  INCLUDE ops/elementwise/cuda/op_kernels.cuh
  NAMESPACE baracuda::elementwise::cuda
  COLUMNS ARITY COMPUTE
  INSTANTIATE "template Status launch_generic<@ARITY@, @COMPUTE@>(const Problem&, const Call&, cudaStream_t);")
foreach(ct float double int64_t)
  foreach(arity 1 2 3)
    baracuda_kernels(ew_generic ew_generic_${arity}_${ct} ${arity} ${ct})
  endforeach()
endforeach()

# Typed casts (UnaryOp::Copy into another dtype): one TU per source dtype,
# every destination among the same six (cuda/op_kernels.cuh, launch_cast).
baracuda_kernel_set(ew_cast
  INCLUDE ops/elementwise/cuda/op_kernels.cuh
  NAMESPACE baracuda::elementwise::cuda
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_cast<@CTYPE@>(const Problem&, const Call&, Path, cudaStream_t);")
foreach(dt F32 BF16 F16 F64 I32 I64)
  string(TOLOWER ${dt} _dt)
  baracuda_kernels(ew_cast ew_cast_${_dt} ${dt})
endforeach()

# Unary gradients (UnaryBackwardPlan): typed vec16 / strided32 per floating
# dtype, and the generic path per compute type.
baracuda_kernel_set(ew_grad
  INCLUDE ops/elementwise/cuda/op_kernels.cuh
  NAMESPACE baracuda::elementwise::cuda
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_unary_grad<@CTYPE@>(const Problem&, const Call&, Path, cudaStream_t);")
foreach(dt F32 BF16 F16 F64)
  string(TOLOWER ${dt} _dt)
  baracuda_kernels(ew_grad ew_grad_${_dt} ${dt})
endforeach()
baracuda_kernel_set(ew_generic_grad
  INCLUDE ops/elementwise/cuda/op_kernels.cuh
  NAMESPACE baracuda::elementwise::cuda
  COLUMNS COMPUTE
  INSTANTIATE "template Status launch_generic_grad<@COMPUTE@>(const Problem&, const Call&, cudaStream_t);")
foreach(ct float double)
  baracuda_kernels(ew_generic_grad ew_generic_grad_${ct} ${ct})
endforeach()

# Operand gradients of binary / ternary ops (BinaryBackwardPlan,
# TernaryBackwardPlan; 2 or 3 outputs): typed vec16 / strided32 per floating
# dtype, and the generic path per compute type.
baracuda_kernel_set(ew_nary_grad
  INCLUDE ops/elementwise/cuda/op_kernels.cuh
  NAMESPACE baracuda::elementwise::cuda
  COLUMNS DTYPE
  INSTANTIATE "template Status launch_nary_grad<@CTYPE@>(const Problem&, const Call&, Path, cudaStream_t);")
foreach(dt F32 BF16 F16 F64)
  string(TOLOWER ${dt} _dt)
  baracuda_kernels(ew_nary_grad ew_nary_grad_${_dt} ${dt})
endforeach()
baracuda_kernel_set(ew_generic_nary_grad
  INCLUDE ops/elementwise/cuda/op_kernels.cuh
  NAMESPACE baracuda::elementwise::cuda
  COLUMNS COMPUTE
  INSTANTIATE "template Status launch_generic_nary_grad<@COMPUTE@>(const Problem&, const Call&, cudaStream_t);")
foreach(ct float double)
  baracuda_kernels(ew_generic_nary_grad ew_generic_nary_grad_${ct} ${ct})
endforeach()
