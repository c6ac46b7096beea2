// The shared cuBLASLt backend (src/backends/cublaslt/) on the GPU: one f32
// and one bf16 GEMM through choose_algo() / run_matmul() against a host loop
// in double, with the row-major -> column-major mapping a GEMM plan uses
// (Y = X.W is Y^T = W^T.X^T), plus the heuristic cache and the alignment
// guard. Skips without a GPU.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>

#include "backends/cublaslt/handle.hpp"
#include "backends/cublaslt/matmul.hpp"
#include "backends/cublaslt/workspace.hpp"
#include "core/cuda_device.hpp"

using namespace baracuda;
using bt::HostBuffer;

namespace {

constexpr const char* kPlan = "TestGemm";

int device_arch() {
  auto info = detail::cuda_device_info(0);
  return info ? info->arch : 0;
}

// Row-major Y[M x N] = alpha * X[M x K] . W[K x N] + beta * C (+ bias[N]),
// X given as X or (x_transposed) as X^T stored [K x M].
struct Gemm {
  DType dtype;
  int64_t M, N, K;
  bool x_transposed;
  double alpha, beta;
  bool bias;
};

// The column-major problem of a row-major GEMM: A = W (N x K, lda = N),
// B = X (K x M, ldb = K; or stored M x K and transposed, ldb = M).
cublaslt::MatmulProblem problem_of(const Gemm& g) {
  cublaslt::MatmulProblem p;
  p.a_type = p.b_type = p.c_type = p.d_type = g.dtype;
  p.m = g.N;
  p.n = g.M;
  p.k = g.K;
  p.lda = g.N;
  p.trans_b = g.x_transposed;
  p.ldb = g.x_transposed ? g.M : g.K;
  p.ldc = p.ldd = g.N;
  if (g.bias) {
    p.epilogue = cublaslt::Epilogue::Bias;
    p.bias_type = g.dtype;
  }
  return p;
}

// Host reference in double from the (already dtype-rounded) inputs.
std::vector<double> reference(const Gemm& g, const HostBuffer& x, const HostBuffer& w, const HostBuffer& c,
                              const HostBuffer& bias) {
  std::vector<double> y(static_cast<size_t>(g.M * g.N));
  for (int64_t i = 0; i < g.M; ++i) {
    for (int64_t j = 0; j < g.N; ++j) {
      double acc = 0;
      for (int64_t k = 0; k < g.K; ++k) {
        const double xv = g.x_transposed ? x.get(k * g.M + i) : x.get(i * g.K + k);
        acc += xv * w.get(k * g.N + j);
      }
      double v = g.alpha * acc;
      if (g.beta != 0.0) v += g.beta * c.get(i * g.N + j);
      if (g.bias) v += bias.get(j);
      y[static_cast<size_t>(i * g.N + j)] = v;
    }
  }
  return y;
}

void run_case(const Gemm& g, double tol) {
  BT_SKIP_WITHOUT_GPU();
  auto rng = bt::make_rng(bt::fresh_seed());
  HostBuffer x(g.dtype, g.M * g.K), w(g.dtype, g.K * g.N), c(g.dtype, g.M * g.N), bias(g.dtype, g.N);
  bt::fill_random(x, rng);
  bt::fill_random(w, rng);
  bt::fill_random(c, rng);
  bt::fill_random(bias, rng);
  HostBuffer y(g.dtype, g.M * g.N);
  y.poison();
  Buffer dx = bt::to_device(x), dw = bt::to_device(w), dc = bt::to_device(c), db = bt::to_device(bias),
         dy = bt::to_device(y);

  const cublaslt::MatmulProblem p = problem_of(g);
  const size_t limit = cublaslt::workspace_limit(device_arch());
  auto algo = cublaslt::choose_algo(kPlan, 0, p, limit, /*capturing=*/false);
  if (!algo && algo.status().code() == StatusCode::Unsupported) GTEST_SKIP() << algo.status().to_string();
  ASSERT_TRUE(algo.is_ok()) << algo.status().to_string();
  EXPECT_LE((*algo)->workspace_bytes, limit);
  // Cached: the same choice again, also while capturing (nothing is queried then).
  auto again = cublaslt::choose_algo(kPlan, 0, p, limit, /*capturing=*/true);
  ASSERT_TRUE(again.is_ok()) << again.status().to_string();
  EXPECT_EQ(*again, *algo);

  auto handle = cublaslt::device_handle(kPlan, 0, /*capturing=*/false);
  ASSERT_TRUE(handle.is_ok()) << handle.status().to_string();
  Buffer ws = bt::device_workspace(limit);
  cublaslt::MatmulArgs args;
  args.a = dw.data();
  args.b = dx.data();
  args.c = g.beta != 0.0 ? dc.data() : nullptr;
  args.d = dy.data();
  args.bias = g.bias ? db.data() : nullptr;
  args.alpha = g.alpha;
  args.beta = g.beta;
  const Status st = cublaslt::run_matmul(kPlan, *handle, p, **algo, args, ws.data(), ws.bytes(), nullptr);
  ASSERT_TRUE(st.is_ok()) << st.to_string();
  ASSERT_EQ(cudaDeviceSynchronize(), cudaSuccess);

  const HostBuffer got = bt::to_host(dy, g.dtype, g.M * g.N);
  std::vector<double> gv(static_cast<size_t>(g.M * g.N));
  for (int64_t i = 0; i < g.M * g.N; ++i) gv[static_cast<size_t>(i)] = got.get(i);
  double worst = 0;
  const std::string msg = bt::check_close("Y", gv, reference(g, x, w, c, bias), tol, &worst);
  EXPECT_TRUE(msg.empty()) << msg;

  // The algorithm was chosen for 16-byte aligned pointers: a less aligned D is refused.
  cublaslt::MatmulArgs shifted = args;
  shifted.d = static_cast<char*>(dy.data()) + dtype_size(g.dtype);
  const Status bad = cublaslt::run_matmul(kPlan, *handle, p, **algo, shifted, ws.data(), ws.bytes(), nullptr);
  EXPECT_EQ(bad.code(), StatusCode::InvalidProblem) << bad.to_string();
  EXPECT_EQ(cublaslt::with_pointer_alignment(p, args.a, args.b, args.c, shifted.d).align_d,
            static_cast<uint32_t>(dtype_size(g.dtype)));
}

// f32 with exact fp32 math (no TF32), alpha and beta * C, odd sizes.
TEST(CublasLt, F32GemmMatchesHostLoop) { run_case({DType::F32, 37, 29, 53, false, 0.75, 0.5, false}, 1e-5); }

// bf16 in and out, f32 accumulation, X given transposed, the Bias epilogue.
TEST(CublasLt, Bf16GemmWithBiasMatchesHostLoop) { run_case({DType::BF16, 24, 40, 72, true, 1.0, 0.0, true}, 1e-2); }

}  // namespace

#endif  // BARACUDA_WITH_CUDA
