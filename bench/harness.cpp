// The harness's device side: device description, stream, ceilings.
#include "harness.hpp"

#include <ctime>

#ifdef BARACUDA_BENCH_CUBLAS
#include <cublas_v2.h>
#endif

namespace baracuda::bench {

bool context_lost_after_error(cudaStream_t s) {
  cudaGetLastError();
  return cudaStreamSynchronize(s) != cudaSuccess && cudaDeviceSynchronize() != cudaSuccess;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

namespace {
// 12080 -> "12.8" (cudaRuntimeGetVersion / cudaDriverGetVersion).
std::string version_string(int v) { return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10); }
}  // namespace

void open_device(Env& env) {
  cuda_check(cudaSetDevice(0), "cudaSetDevice(0)");
  cudaDeviceProp p{};
  cuda_check(cudaGetDeviceProperties(&p, 0), "cudaGetDeviceProperties");
  int rt = 0, drv = 0;
  cudaRuntimeGetVersion(&rt);
  cudaDriverGetVersion(&drv);
  DeviceMeta& m = env.meta;
  m.device = p.name;
  m.cc_major = p.major;
  m.cc_minor = p.minor;
  m.sms = p.multiProcessorCount;
  m.l2 = static_cast<size_t>(p.l2CacheSize);
  m.mem = p.totalGlobalMem;
  m.runtime = version_string(rt);
  m.driver = version_string(drv);
  cuda_check(cudaStreamCreateWithFlags(&env.cs, cudaStreamNonBlocking), "cudaStreamCreate");
  env.stream = Stream::cuda(0, env.cs);
  env.rotate_bytes = std::max<size_t>(4 * m.l2, size_t{256} << 20);
}

void close_device(Env& env) {
  if (env.cs && !env.context_lost) cudaStreamDestroy(env.cs);
  env.cs = nullptr;
}

double copy_bandwidth_gbps(cudaStream_t cs) {
  const size_t bytes = size_t{1} << 30;
  Buffer src = device_buffer(bytes), dst = device_buffer(bytes);
  cuda_check(bench_fill_uniform(src.data(), DType::F32, bytes / 4, -1.f, 1.f, 12345, cs), "fill");
  const double ms = time_median_ms(cs, 3, 20, [&](int) {
    cuda_check(cudaMemcpyAsync(dst.data(), src.data(), bytes, cudaMemcpyDeviceToDevice, cs), "memcpy");
  });
  return 2.0 * bytes / (ms * 1e-3) / 1e9;
}

double gemm_ceiling_tflops(const Env& env, DType dtype) {
#ifdef BARACUDA_BENCH_CUBLAS
  if (dtype != DType::BF16 && dtype != DType::F16) return 0;
  const cudaDataType_t t = dtype == DType::BF16 ? CUDA_R_16BF : CUDA_R_16F;
  const int n = 8192;
  Buffer a = device_buffer(size_t{2} * n * n), b = device_buffer(size_t{2} * n * n), c = device_buffer(size_t{2} * n * n);
  fill(env, a, dtype, size_t{1} * n * n);
  fill(env, b, dtype, size_t{1} * n * n);
  cublasHandle_t h = nullptr;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 0;
  cublasSetStream(h, env.cs);
  const float alpha = 1.f, beta = 0.f;
  bool ok = true;
  const double ms = time_median_ms(env.cs, 3, 10, [&](int) {
    ok &= cublasGemmEx(h, CUBLAS_OP_N, CUBLAS_OP_N, n, n, n, &alpha, a.data(), t, n, b.data(), t, n, &beta, c.data(), t, n,
                       CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT) == CUBLAS_STATUS_SUCCESS;
  });
  cublasDestroy(h);
  return ok ? 2.0 * n * n * static_cast<double>(n) / (ms * 1e-3) / 1e12 : 0;
#else
  (void)env;
  (void)dtype;
  return 0;
#endif
}

}  // namespace baracuda::bench
