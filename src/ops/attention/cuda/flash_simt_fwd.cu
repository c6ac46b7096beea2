// SIMT flash-attention forward for f32 and f64 (kernels: flash_simt.cuh).
#include "ops/attention/cuda/flash_simt.cuh"

namespace baracuda::attention::cuda {

Status forward_simt(const FlashFwdParams& p, int arch, int sm_count, void* stream) {
  (void)arch;
  (void)sm_count;
  const char* what = "FlashSdpaPlan (SIMT forward)";
  Status st = simt::check_common(p, what);
  if (!st.is_ok()) return st;
  if (p.batch <= 0 || p.heads <= 0 || p.q_len <= 0) return Status::ok();
  if (p.dtype == DType::F32) return simt::launch_fwd<float, false>(p, stream, nullptr, what);
  return simt::launch_fwd<double, false>(p, stream, nullptr, what);
}

}  // namespace baracuda::attention::cuda
