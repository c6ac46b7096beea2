// The optim family's kernels: functors of the multi-tensor engine
// (multi_tensor.cuh) for Adam / SGD / Lion, the norms, unscale, scale and
// zero, and the launches the plans call (launch.hpp).
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "core/cuda_device.hpp"
#include "ops/optim/cuda/multi_tensor.cuh"
#include "ops/optim/launch.hpp"
#include "ops/optim/math.hpp"

namespace baracuda::optim::cuda {
namespace {

using Table6 = Table<kMaxLists, kTableTensors6>;
using Table1 = Table<1, kTableTensors1>;
static_assert(sizeof(Table6) + 512 < 32764, "the optimizers' table fits the kernel parameters");
static_assert(sizeof(Table1) + 512 < 32764, "the utilities' table fits the kernel parameters");

// ---- optimizers ------------------------------------------------------------------------
struct OptCommon {
  const float* lr_ptr = nullptr;
  const float* step_ptr = nullptr;
  const float* grad_scale = nullptr;
  const float* found_inf = nullptr;
  double lr = 0.0;
  int64_t step = 1;
  bool master = false, stochastic = false, amsgrad = false, has_buf = false;
  uint64_t seed = 0, offset = 0;
};

template <class P, Op kOp>
struct OptimF {
  static constexpr int kVec = 16 / static_cast<int>(sizeof(P));
  OptCommon c;
  AdamConsts adam;
  SgdConsts sgd;
  LionConsts lion;

  struct Block {
    AdamScalars a;
    SgdScalars s;
    LionScalars l;
    float gs;
  };

  __device__ bool begin(Block& b) const {
    if (c.found_inf && *c.found_inf != 0.0f) return false;
    const double lr = c.lr_ptr ? static_cast<double>(*c.lr_ptr) : c.lr;
    if constexpr (kOp == Op::Adam) {
      const int64_t step = c.step_ptr ? step_from_f32(*c.step_ptr) : c.step;
      b.a = adam_scalars(adam, lr, step);
    } else if constexpr (kOp == Op::Sgd) {
      b.s = sgd_scalars(sgd, lr);
    } else {
      b.l = lion_scalars(lion, lr);
    }
    b.gs = c.grad_scale ? *c.grad_scale : 1.0f;
    return true;
  }

  template <int V, class Tab>
  __device__ __forceinline__ void elems(Block& b, const Tab& tab, int t, int64_t i) const {
    float p[V], g[V], s0[V], s1[V], s2[V];
    if (c.master) load<float, V>(tab.ptr[ListLaunch::kMaster][t], i, p);
    else load<P, V>(tab.ptr[0][t], i, p);
    load<P, V>(tab.ptr[1][t], i, g);
    if (c.grad_scale) {
#pragma unroll
      for (int j = 0; j < V; ++j) g[j] = exact::div(g[j], b.gs);
    }
    if constexpr (kOp == Op::Adam) {
      load<float, V>(tab.ptr[2][t], i, s0);
      load<float, V>(tab.ptr[3][t], i, s1);
      if (c.amsgrad) load<float, V>(tab.ptr[4][t], i, s2);
#pragma unroll
      for (int j = 0; j < V; ++j) adam_elem(b.a, p[j], g[j], s0[j], s1[j], s2[j]);
      store<float, V>(tab.ptr[2][t], i, s0);
      store<float, V>(tab.ptr[3][t], i, s1);
      if (c.amsgrad) store<float, V>(tab.ptr[4][t], i, s2);
    } else if constexpr (kOp == Op::Sgd) {
      if (c.has_buf && !sgd.first) load<float, V>(tab.ptr[2][t], i, s0);
#pragma unroll
      for (int j = 0; j < V; ++j) sgd_elem(b.s, p[j], g[j], s0[j]);
      if (c.has_buf) store<float, V>(tab.ptr[2][t], i, s0);
      (void)s1, (void)s2;
    } else {
      load<float, V>(tab.ptr[2][t], i, s0);
#pragma unroll
      for (int j = 0; j < V; ++j) lion_elem(b.l, p[j], g[j], s0[j]);
      store<float, V>(tab.ptr[2][t], i, s0);
      (void)s1, (void)s2;
    }
    if (c.master) store<float, V>(tab.ptr[ListLaunch::kMaster][t], i, p);
    if constexpr (std::is_same_v<P, __nv_bfloat16>) {
      if (c.stochastic) {
        uint32_t bits[V];
        const uint64_t e0 = static_cast<uint64_t>(tab.elem_base[t] + i);
        uint64_t blk = e0 / 4;
        PhiloxWords w = philox_block(c.seed, c.offset, blk);
#pragma unroll
        for (int j = 0; j < V; ++j) {
          const uint64_t e = e0 + j;
          if (e / 4 != blk) blk = e / 4, w = philox_block(c.seed, c.offset, blk);
          bits[j] = bf16_stochastic(p[j], w.w[e % 4]);
        }
        store_bits<P, V>(tab.ptr[0][t], i, bits);
        return;
      }
    }
    store<P, V>(tab.ptr[0][t], i, p);
  }

  template <class Tab>
  __device__ void end(Block&, const Tab&) const {}
};

__global__ void bump_step(float* step, const float* found_inf) {
  if (!found_inf || *found_inf == 0.0f) *step = *step + 1.0f;
}

// ---- utilities ---------------------------------------------------------------------------
__device__ __forceinline__ double nan_max_d(double a, double b) {
  if (a != a) return a;
  if (b != b) return b;
  return a > b ? a : b;
}

template <class T>
struct NormF {
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  bool inf = false;
  double* partials = nullptr;  // this launch's kNormBlocks slots
  struct Block {
    double acc;
  };
  __device__ bool begin(Block& b) const {
    b.acc = 0.0;
    return true;
  }
  template <int V, class Tab>
  __device__ __forceinline__ void elems(Block& b, const Tab& tab, int t, int64_t i) const {
    float v[V];
    load<T, V>(tab.ptr[0][t], i, v);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const double x = static_cast<double>(v[j]);
      b.acc = inf ? nan_max_d(b.acc, fabs(x)) : __dadd_rn(b.acc, __dmul_rn(x, x));
    }
  }
  template <class Tab>
  __device__ void end(Block& b, const Tab&) const {
    __shared__ double red[kThreads];
    red[threadIdx.x] = b.acc;
    __syncthreads();
    for (int s = kThreads / 2; s > 0; s >>= 1) {
      if (static_cast<int>(threadIdx.x) < s)
        red[threadIdx.x] = inf ? nan_max_d(red[threadIdx.x], red[threadIdx.x + s])
                               : __dadd_rn(red[threadIdx.x], red[threadIdx.x + s]);
      __syncthreads();
    }
    if (threadIdx.x == 0) partials[blockIdx.x] = red[0];
  }
};

// One block of 1024 threads: the partials in slot order (thread j: slots j,
// j + 1024, ... in order, then a fixed tree).
__global__ void __launch_bounds__(1024) norm_finalize(const double* partials, int n, bool inf, float* out, bool clip,
                                                      float max_norm, float* coef, float* found_inf) {
  __shared__ double red[1024];
  double acc = 0.0;
  for (int k = threadIdx.x; k < n; k += 1024) acc = inf ? nan_max_d(acc, partials[k]) : __dadd_rn(acc, partials[k]);
  red[threadIdx.x] = acc;
  __syncthreads();
  for (int s = 512; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s)
      red[threadIdx.x] = inf ? nan_max_d(red[threadIdx.x], red[threadIdx.x + s]) : __dadd_rn(red[threadIdx.x], red[threadIdx.x + s]);
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    const float total = static_cast<float>(inf ? red[0] : __dsqrt_rn(red[0]));
    *out = total;
    if (clip) {
      *coef = clip_coef(max_norm, total);
      if (found_inf && !finite_f32(total)) *found_inf = 1.0f;
    }
  }
}

// tensors *= scale (Scale, Clip), with Unscale's non-finite check; Zero.
template <class T, Op kOp>
struct ScaleF {
  static constexpr int kVec = 16 / static_cast<int>(sizeof(T));
  float scale = 1.0f;
  const float* scale_ptr = nullptr;
  float* found_inf = nullptr;
  struct Block {
    float s;
  };
  __device__ bool begin(Block& b) const {
    b.s = scale_ptr ? *scale_ptr : scale;
    return true;
  }
  template <int V, class Tab>
  __device__ __forceinline__ void elems(Block& b, const Tab& tab, int t, int64_t i) const {
    float v[V];
    if constexpr (kOp == Op::Zero) {
#pragma unroll
      for (int j = 0; j < V; ++j) v[j] = 0.0f;
    } else {
      load<T, V>(tab.ptr[0][t], i, v);
      bool bad = false;
#pragma unroll
      for (int j = 0; j < V; ++j) {
        if constexpr (kOp == Op::Unscale) bad |= !finite_f32(v[j]);
        v[j] = exact::mul(v[j], b.s);
      }
      if constexpr (kOp == Op::Unscale) {
        if (bad) *found_inf = 1.0f;  // every writer stores the same value
      }
    }
    store<T, V>(tab.ptr[0][t], i, v);
  }
  template <class Tab>
  __device__ void end(Block&, const Tab&) const {}
};

Status last_error(const char* what) { return detail::cuda_status(static_cast<int>(cudaGetLastError()), what); }

// Blocks of the functor's kernel one SM holds at once (at most kBlocksPerSm):
// the grid-stride walk then balances the chunks over resident blocks. Queried
// once per kernel; prepare() (called by select()) makes the first query, so
// that a run under stream capture only reads the cached value.
template <class F, class Tab>
int resident_per_sm() {
  static const int per_sm = [] {
    int b = 0;
    if (cudaOccupancyMaxActiveBlocksPerMultiprocessor(&b, multi_tensor_kernel<F, Tab>, kThreads, 0) != cudaSuccess ||
        b < 1) {
      (void)cudaGetLastError();
      b = 1;
    }
    return b < kBlocksPerSm ? b : kBlocksPerSm;
  }();
  return per_sm;
}

template <class F, class Tab>
Status run_list(const ListLaunch& l, int n_lists, const F& f, int fixed_grid) {
  Tab tab;
  const int max_grid = (l.sm_count > 0 ? l.sm_count : 132) * resident_per_sm<F, Tab>();
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  return build_tables(l, n_lists, tab, [&](const Tab& t) -> Status {
    const int chunks = t.chunk_begin[t.n];
    const int grid = fixed_grid > 0 ? fixed_grid : (chunks < max_grid ? chunks : max_grid);
    multi_tensor_kernel<F, Tab><<<grid, kThreads, 0, s>>>(t, f);
    return last_error("optim multi-tensor kernel");
  });
}

template <class P>
Status launch_optim(const ListLaunch& l) {
  cudaStream_t s = static_cast<cudaStream_t>(l.stream);
  if (l.step_ptr) {
    bump_step<<<1, 1, 0, s>>>(l.step_ptr, l.found_inf_in);
    BARACUDA_RETURN_IF_ERROR(last_error("optim step increment"));
  }
  OptCommon c;
  c.lr_ptr = l.lr_ptr, c.step_ptr = l.step_ptr, c.grad_scale = l.grad_scale, c.found_inf = l.found_inf_in;
  c.lr = l.lr, c.step = l.step, c.master = l.master, c.stochastic = l.stochastic;
  c.amsgrad = l.adam.amsgrad, c.has_buf = l.sgd.momentum != 0.0;
  c.seed = l.seed, c.offset = l.offset;
  switch (l.op) {
    case Op::Adam: {
      OptimF<P, Op::Adam> f;
      f.c = c, f.adam = l.adam;
      return run_list<decltype(f), Table6>(l, kMaxLists, f, 0);
    }
    case Op::Sgd: {
      OptimF<P, Op::Sgd> f;
      f.c = c, f.sgd = l.sgd;
      return run_list<decltype(f), Table6>(l, kMaxLists, f, 0);
    }
    default: {
      OptimF<P, Op::Lion> f;
      f.c = c, f.lion = l.lion;
      return run_list<decltype(f), Table6>(l, kMaxLists, f, 0);
    }
  }
}

template <class T>
Status launch_scale(const ListLaunch& l, Op op, const float* scale_ptr) {
  if (op == Op::Zero) {
    ScaleF<T, Op::Zero> f;
    return run_list<decltype(f), Table1>(l, 1, f, 0);
  }
  if (op == Op::Unscale) {
    ScaleF<T, Op::Unscale> f;
    f.scale_ptr = scale_ptr, f.found_inf = l.found_inf_out;
    return run_list<decltype(f), Table1>(l, 1, f, 0);
  }
  ScaleF<T, Op::Scale> f;
  f.scale = l.scale, f.scale_ptr = scale_ptr;
  return run_list<decltype(f), Table1>(l, 1, f, 0);
}

template <class T>
Status launch_norm(const ListLaunch& l) {
  double* partials = static_cast<double*>(l.workspace);
  int launches = 0;
  Table1 tab;
  const Status st = build_tables(l, 1, tab, [&](const Table1& t) -> Status {
    NormF<T> f;
    f.inf = l.inf_norm;
    f.partials = partials + static_cast<size_t>(launches) * kNormBlocks;
    ++launches;
    multi_tensor_kernel<NormF<T>, Table1><<<kNormBlocks, kThreads, 0, static_cast<cudaStream_t>(l.stream)>>>(t, f);
    return last_error("optim norm kernel");
  });
  BARACUDA_RETURN_IF_ERROR(st);
  const bool clip = l.op == Op::Clip;
  float* coef = reinterpret_cast<float*>(partials + static_cast<size_t>(launches < 1 ? 1 : launches) * kNormBlocks);
  if (launches == 0) {
    // Every tensor empty: the norm is 0 (the partials are not read).
    norm_finalize<<<1, 1024, 0, static_cast<cudaStream_t>(l.stream)>>>(partials, 0, l.inf_norm, l.norm_out, clip,
                                                                       l.max_norm, coef, l.found_inf_out);
    return last_error("optim norm finalize");
  }
  norm_finalize<<<1, 1024, 0, static_cast<cudaStream_t>(l.stream)>>>(
      partials, launches * kNormBlocks, l.inf_norm, l.norm_out, clip, l.max_norm, coef, l.found_inf_out);
  BARACUDA_RETURN_IF_ERROR(last_error("optim norm finalize"));
  if (clip) return launch_scale<T>(l, Op::Scale, coef);
  return Status::ok();
}

template <class T>
Status launch_typed(const ListLaunch& l) {
  switch (l.op) {
    case Op::Adam:
    case Op::Sgd:
    case Op::Lion: return launch_optim<T>(l);
    case Op::Norm:
    case Op::Clip: return launch_norm<T>(l);
    case Op::Unscale: return launch_scale<T>(l, Op::Unscale, l.scale_ptr);
    case Op::Scale: return launch_scale<T>(l, Op::Scale, l.scale_ptr);
    case Op::Zero: return launch_scale<T>(l, Op::Zero, nullptr);
  }
  return Status(StatusCode::Unsupported, "optim: unknown op");
}

template <class T>
void prepare_typed(Op op) {
  switch (op) {
    case Op::Adam: resident_per_sm<OptimF<T, Op::Adam>, Table6>(); break;
    case Op::Sgd: resident_per_sm<OptimF<T, Op::Sgd>, Table6>(); break;
    case Op::Lion: resident_per_sm<OptimF<T, Op::Lion>, Table6>(); break;
    case Op::Norm: break;  // the fixed grid
    case Op::Clip:
    case Op::Scale: resident_per_sm<ScaleF<T, Op::Scale>, Table1>(); break;
    case Op::Unscale: resident_per_sm<ScaleF<T, Op::Unscale>, Table1>(); break;
    case Op::Zero: resident_per_sm<ScaleF<T, Op::Zero>, Table1>(); break;
  }
}

}  // namespace

void prepare(Op op, DType dtype) {
  switch (dtype) {
    case DType::F32: prepare_typed<float>(op); break;
    case DType::BF16: prepare_typed<__nv_bfloat16>(op); break;
    case DType::F16: prepare_typed<__half>(op); break;
    default: break;
  }
}

Status launch(const ListLaunch& l) {
  switch (l.dtype) {
    case DType::F32: return launch_typed<float>(l);
    case DType::BF16: return launch_typed<__nv_bfloat16>(l);
    case DType::F16: return launch_typed<__half>(l);
    default: break;
  }
  return Status(StatusCode::Unsupported, "optim: CUDA kernels need f32, bf16 or f16 tensors");
}

}  // namespace baracuda::optim::cuda
