#include "core/capture.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace baracuda::detail {

bool native_stream_is_capturing(void* cuda_stream) {
#ifdef BARACUDA_WITH_CUDA
  cudaStreamCaptureStatus cs = cudaStreamCaptureStatusNone;
  if (cudaStreamIsCapturing(static_cast<cudaStream_t>(cuda_stream), &cs) != cudaSuccess) {
    (void)cudaGetLastError();
    return true;
  }
  return cs != cudaStreamCaptureStatusNone;
#else
  (void)cuda_stream;
  return false;
#endif
}

bool stream_is_capturing(const Stream& stream) {
  if (!stream.is_cuda()) return false;
  return native_stream_is_capturing(stream.native_handle());
}

}  // namespace baracuda::detail
