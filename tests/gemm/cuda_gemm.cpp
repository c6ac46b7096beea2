// Matrix multiply family on CUDA (cuBLASLt) against the CPU reference (the
// same descriptor selected on Stream::cpu(), fed contiguous copies of the same
// values) on random data, in f32, f64, f16 and bf16:
//   * MatmulPlan: every combination of row-major and transposed (column-major)
//     a, b and out; odd M / N / K (1, 7, 33, 1000); 1-D operands; batch
//     broadcast (2-D b with 3-D a, a [1,..] with b [B,..], [2,1,..] with
//     [3,..]); batch dims that do not collapse into one stride (sliced
//     batches) and sub-matrices whose leading dimension exceeds the extent
//     (misaligned too); alpha / beta with c (full, transposed, broadcast row,
//     column, scalar, batch-broadcast, in place c == out); bias with every
//     activation, save_aux; zero-size problems (M, N or batch 0, and K = 0);
//   * LinearPlan with every activation (bias, save_aux), LinearBackwardPlan
//     with every activation and every non-empty subset of need_dx / dw / db;
//   * the SKU (backend CuBlasLt; "+gelu-pass" for the exact GELU; ".tf32" only
//     with allow_reduced_precision on f32), an operand without a unit stride
//     refused as Unsupported naming the tensor.
// Every CUDA run is made twice into poisoned outputs (NaN bytes, then a finite
// pattern; bt::run_twice): both must succeed, leave the gaps of strided
// outputs alone and agree bit for bit (every element written, deterministic).
//
// Tolerances relative to ||ref||_2 over the whole output (bt::tolerance):
// f64 1e-12, f32 1e-5, f16 2e-3, bf16 1e-2, never loosened. ||ref|| is the
// plain norm of the result, not of |a|.|b|: with inputs uniform in [-1, 1]
// the f32 accumulation error grows like eps * sqrt(K) relative to it
// (~2e-6 at K = 1000, under the 1e-5 bound); the 16-bit types are dominated by
// the output's rounding. TF32 (allow_reduced_precision on f32) rounds the
// inputs to 10 mantissa bits, as f16 does: it is held to f16's 2e-3.
// Without a GPU every test GTEST_SKIPs.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::kGpu, bt::to_device, bt::to_host;
const Stream kCpu = Stream::cpu();
constexpr DType kFloatTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
constexpr GemmActivation kActs[] = {GemmActivation::None, GemmActivation::Relu, GemmActivation::GeluTanh,
                                    GemmActivation::Gelu};
constexpr double kTf32Tolerance = 2e-3;  // f16's: TF32 keeps 10 mantissa bits

bool needs_aux(GemmActivation a) { return a == GemmActivation::Gelu || a == GemmActivation::GeluTanh; }

// A sweep goes on past a mismatch (so one run shows several) and stops after eight.
bool too_many_failures() {
  return ::testing::UnitTest::GetInstance()->current_test_info()->result()->total_part_count() > 8;
}

// Layouts of one operand (the last two dims are its matrix).
enum Lay {
  kRow,         // contiguous, row-major
  kCol,         // the matrices column-major (a transposed view), batches contiguous
  kPadRow,      // row-major, leading dim and batch strides padded (sub-matrices of bigger ones)
  kPadCol,      // column-major, padded likewise
  kSliced,      // bt::padded: every dim padded, starting at [1,..,1] (misaligned; batches do not collapse)
  kNumLay
};
const char* lay_name(int l) {
  static const char* n[] = {"row", "col", "pad-row", "pad-col", "sliced"};
  return n[l];
}

// Memory order `perm` (outermost first); every memory extent padded by `pad`.
bt::Layout padded_perm(const Dims& s, const std::vector<int>& perm, int64_t pad) {
  bt::Layout L;
  L.shape = s;
  L.strides = Dims::of_rank(s.rank);
  int64_t acc = 1;
  for (int k = static_cast<int>(perm.size()) - 1; k >= 0; --k) {
    const int a = perm[static_cast<size_t>(k)];
    L.strides[a] = acc;
    acc *= s[a] + pad;
  }
  L.storage = bt::numel(s) == 0 ? 0 : acc;
  return L;
}

bt::Layout make_layout(int l, const Dims& s) {
  std::vector<int> perm;
  for (int i = 0; i < s.rank; ++i) perm.push_back(i);
  const bool col = (l == kCol || l == kPadCol) && s.rank >= 2;
  if (col) std::swap(perm[static_cast<size_t>(s.rank - 1)], perm[static_cast<size_t>(s.rank - 2)]);
  bt::Layout L;
  switch (l) {
    case kCol: L = bt::permuted(s, perm); break;
    case kPadRow:
    case kPadCol: L = padded_perm(s, perm, 3); break;
    case kSliced: L = bt::padded(s); break;
    default: L = bt::contiguous(s); break;
  }
  L.name = lay_name(l);
  return L;
}

// ---------------------------------------------------------------------------
// MatmulPlan: one case
// ---------------------------------------------------------------------------
struct Spec {
  DType t = DType::F32;
  Dims a, b;
  int la = kRow, lb = kRow, lout = kRow, lc = kRow;
  bool has_c = false, c_in_place = false;  // c_in_place: c is out itself (c must then have out's shape)
  Dims c;
  double alpha = 1.0, beta = 1.0;
  bool bias = false;
  GemmActivation act = GemmActivation::None;
  bool save_aux = false;
  bool tf32 = false;
};

std::string name(const Spec& s) {
  std::string n = std::string(dtype_name(s.t)) + " a" + s.a.to_string() + ":" + lay_name(s.la) + " b" +
                  s.b.to_string() + ":" + lay_name(s.lb) + " out:" + lay_name(s.lout);
  if (s.has_c)
    n += " c" + s.c.to_string() + (s.c_in_place ? std::string("=out") : std::string(":") + lay_name(s.lc)) + " alpha " +
         std::to_string(s.alpha) + " beta " + std::to_string(s.beta);
  if (s.bias) n += " +bias";
  n += std::string(" ") + gemm_activation_name(s.act) + (s.save_aux ? " +aux" : "") + (s.tf32 ? " tf32" : "");
  return n;
}

MatmulDescriptor desc_of(const Spec& s) {
  MatmulDescriptor d;
  d.dtype = s.t;
  d.a_shape = s.a;
  d.b_shape = s.b;
  d.has_c = s.has_c;
  d.c_shape = s.c;
  d.alpha = s.alpha;
  d.beta = s.beta;
  d.has_bias = s.bias;
  d.activation = s.act;
  d.save_aux = s.save_aux;
  return d;
}

// Values stored into a poisoned host storage of layout L, copied to the device.
Buffer device_copy(DType t, const bt::Layout& L, const std::vector<double>& v) {
  bt::HostBuffer h(t, std::max<int64_t>(L.storage, 1));
  h.poison();
  bt::scatter(h, L, v);
  return to_device(h);
}

std::string compare(const char* what, const std::vector<double>& got, const std::vector<double>& ref, double tol) {
  const double e = bt::rel_error(got, ref);
  if (e <= tol) return "";
  return std::string(what) + " rel error " + std::to_string(e) + " > " + std::to_string(tol) + "; " +
         bt::describe_mismatch(got, ref);
}

::testing::AssertionResult check(const Spec& s, KernelSku* sku_out = nullptr) {
  const MatmulDescriptor d = desc_of(s);
  auto cpu = MatmulPlan::select(kCpu, d);
  if (!cpu) return ::testing::AssertionFailure() << name(s) << ": CPU select: " << cpu.status().to_string();
  const Dims os = cpu->out_shape();
  const Dims cs = s.c;
  if (s.c_in_place && !(cs == os))
    return ::testing::AssertionFailure() << name(s) << ": an in-place c must have out's shape " << os.to_string();
  bt::Rng rng(bt::fresh_seed(name(s)));
  const auto av = bt::random_values(s.t, bt::numel(s.a), rng), bv = bt::random_values(s.t, bt::numel(s.b), rng);
  const auto cv = bt::random_values(s.t, s.has_c ? bt::numel(cs) : 0, rng);
  const auto biasv = bt::random_values(s.t, cpu->n(), rng);

  // CPU reference on contiguous copies.
  std::vector<double> ref_out, ref_aux;
  {
    const bt::HostBuffer ah = bt::host_from(s.t, av), bh = bt::host_from(s.t, bv), ch = bt::host_from(s.t, cv),
                         biash = bt::host_from(s.t, biasv);
    bt::HostBuffer oh(s.t, bt::numel(os)), xh(s.t, bt::numel(os));
    MatmulArgs a;
    a.a = bt::view(ah, bt::contiguous(s.a));
    a.b = bt::view(bh, bt::contiguous(s.b));
    if (s.has_c) a.c = bt::view(ch, bt::contiguous(cs));
    if (s.bias) a.bias = bt::view(biash, bt::contiguous(cpu->bias_shape()));
    a.out = bt::view_mut(oh, bt::contiguous(os));
    if (s.save_aux) a.aux = bt::view_mut(xh, bt::contiguous(os));
    const Status st = cpu->run(kCpu, Workspace::none(), a);
    if (!st) return ::testing::AssertionFailure() << name(s) << ": CPU reference: " << st.to_string();
    ref_out = bt::all_values(oh);
    if (s.save_aux) ref_aux = bt::all_values(xh);
  }

  PlanPreference pref;
  pref.allow_reduced_precision = s.tf32;
  auto gpu = MatmulPlan::select(kGpu, d, pref);
  if (!gpu) return ::testing::AssertionFailure() << name(s) << ": CUDA select: " << gpu.status().to_string();
  if (sku_out) *sku_out = gpu->sku();
  if (gpu->sku().backend != Backend::CuBlasLt)
    return ::testing::AssertionFailure() << name(s) << ": sku " << gpu->sku().to_string() << " is not cuBLASLt";
  const bool tf32_variant = gpu->sku().variant.find(".tf32") != std::string::npos;
  if (tf32_variant != (s.tf32 && s.t == DType::F32))
    return ::testing::AssertionFailure() << name(s) << ": variant " << gpu->sku().variant << " and TF32 disagree";

  const bt::Layout La = make_layout(s.la, s.a), Lb = make_layout(s.lb, s.b), Lout = make_layout(s.lout, os);
  const bt::Layout Lc = s.c_in_place ? Lout : make_layout(s.lc, cs), Lbias = bt::contiguous(cpu->bias_shape());
  const bt::Layout Laux = bt::contiguous(os);
  Buffer da = device_copy(s.t, La, av), db = device_copy(s.t, Lb, bv), dbias = device_copy(s.t, Lbias, biasv);
  Buffer dc = device_copy(s.t, Lc, s.has_c && !s.c_in_place ? cv : std::vector<double>(Lc.numel(), 0.0));
  Buffer dout = bt::device_storage(s.t, Lout), daux = bt::device_storage(s.t, Laux);
  Buffer ws = bt::device_workspace(gpu->workspace_size());
  MatmulArgs args;
  args.a = bt::view(da, s.t, La);
  args.b = bt::view(db, s.t, Lb);
  if (s.has_c) args.c = s.c_in_place ? bt::view(dout, s.t, Lout) : bt::view(dc, s.t, Lc);
  if (s.bias) args.bias = bt::view(dbias, s.t, Lbias);
  args.out = bt::view_mut(dout, s.t, Lout);
  if (s.save_aux) args.aux = bt::view_mut(daux, s.t, Laux);
  const Workspace w(ws.data(), gpu->workspace_size());

  std::vector<bt::HostBuffer> first;
  if (!s.c_in_place) {
    std::vector<bt::DeviceOut> outs = {{"out", &dout, s.t, Lout}};
    if (s.save_aux) outs.push_back({"aux", &daux, s.t, Laux});
    const std::string err = bt::run_twice([&] { return gpu->run(kGpu, w, args); }, outs, &first);
    if (!err.empty()) return ::testing::AssertionFailure() << name(s) << ": " << err;
  } else {
    // c == out: out's storage holds c (gaps poisoned) before each run.
    bt::HostBuffer init(s.t, static_cast<int64_t>(dout.bytes() / dtype_size(s.t)));
    init.poison();
    bt::scatter(init, Lout, cv);
    for (int pass = 0; pass < 2; ++pass) {
      if (init.bytes() && !dout.copy_from_host(init.data(), init.bytes()).is_ok())
        return ::testing::AssertionFailure() << "copy";
      Status st = gpu->run(kGpu, w, args);
      if (st) st = synchronize(kGpu);
      if (!st) return ::testing::AssertionFailure() << name(s) << ": run " << pass + 1 << ": " << st.to_string();
      bt::HostBuffer h = to_host(dout, s.t, init.size());
      bt::Layout Lst = Lout;
      Lst.storage = init.size();
      const std::string gaps = bt::check_gaps(h, Lst, bt::poison_byte(s.t));
      if (!gaps.empty()) return ::testing::AssertionFailure() << name(s) << ": " << gaps;
      if (pass == 1 && bt::materialize(first[0], Lout).raw() != bt::materialize(h, Lout).raw())
        return ::testing::AssertionFailure() << name(s) << ": the two in-place runs differ";
      if (pass == 0) first.push_back(std::move(h));
    }
  }
  const double tol = s.tf32 && s.t == DType::F32 ? kTf32Tolerance : bt::tolerance(s.t);
  std::string err = compare("out", bt::gather(first[0], Lout), ref_out, tol);
  if (err.empty() && s.save_aux) err = compare("aux", bt::gather(first[1], Laux), ref_aux, tol);
  if (!err.empty()) return ::testing::AssertionFailure() << name(s) << ": " << err;
  return ::testing::AssertionSuccess();
}

// =============================================================================
// MatmulPlan
// =============================================================================
TEST(CudaGemm, EveryTransposeCombination) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes)
    for (int la : {kRow, kCol})
      for (int lb : {kRow, kCol})
        for (int lo : {kRow, kCol})
          for (const auto& [m, n, k] : {std::tuple{33, 47, 65}, {128, 64, 256}}) {
            Spec s;
            s.t = t;
            s.a = {m, k};
            s.b = {k, n};
            s.la = la;
            s.lb = lb;
            s.lout = lo;
            EXPECT_TRUE(check(s));
            if (too_many_failures()) return;
          }
}

TEST(CudaGemm, OddSizes) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t sizes[] = {1, 7, 33};
  for (DType t : kFloatTypes) {
    for (int64_t m : sizes)
      for (int64_t n : sizes)
        for (int64_t k : sizes) {
          Spec s;
          s.t = t;
          s.a = {m, k};
          s.b = {k, n};
          s.la = (m + n) % 2 ? kCol : kRow;
          s.lb = (n + k) % 2 ? kRow : kCol;
          EXPECT_TRUE(check(s));
          if (too_many_failures()) return;
        }
    // 1000 in each position (K = 1000 grows the f32 accumulation error).
    for (const auto& [m, n, k] : {std::tuple{1000, 7, 33}, {33, 1000, 7}, {7, 33, 1000}, {1000, 33, 1000}, {1, 1000, 1000}}) {
      Spec s;
      s.t = t;
      s.a = {m, k};
      s.b = {k, n};
      EXPECT_TRUE(check(s));
      if (too_many_failures()) return;
    }
  }
}

TEST(CudaGemm, VectorOperands) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes)
    for (const auto& [a, b] : {std::pair{Dims{65}, Dims{65}}, {Dims{33, 65}, Dims{65}}, {Dims{65}, Dims{65, 33}},
                              {Dims{3, 7, 65}, Dims{65}}, {Dims{65}, Dims{3, 65, 7}}, {Dims{1000}, Dims{1000}}}) {
      Spec s;
      s.t = t;
      s.a = a;
      s.b = b;
      EXPECT_TRUE(check(s));
    }
}

TEST(CudaGemm, BatchBroadcast) {
  BT_SKIP_WITHOUT_GPU();
  struct Shapes {
    Dims a, b;
  };
  for (DType t : kFloatTypes)
    for (const Shapes& sh : {Shapes{{3, 33, 17}, {17, 21}},          // 2-D b with 3-D a (folds into one GEMM)
                             Shapes{{4, 2, 33, 17}, {17, 21}},
                             Shapes{{33, 17}, {3, 17, 21}},          // 2-D a with 3-D b
                             Shapes{{1, 33, 17}, {5, 17, 21}},       // a [1,..] vs b [B,..]
                             Shapes{{5, 33, 17}, {1, 17, 21}},
                             Shapes{{2, 1, 33, 17}, {3, 17, 21}},    // [2,1] x [3]: looped batches
                             Shapes{{2, 3, 33, 17}, {2, 3, 17, 21}}})
      for (int la : {kRow, kCol})
        for (int lb : {kRow, kCol}) {
          Spec s;
          s.t = t;
          s.a = sh.a;
          s.b = sh.b;
          s.la = la;
          s.lb = lb;
          EXPECT_TRUE(check(s));
          if (too_many_failures()) return;
        }
}

TEST(CudaGemm, StridedSubMatricesAndSlicedBatches) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes)
    for (int la : {kPadRow, kPadCol, kSliced})
      for (int lb : {kRow, kPadRow, kPadCol, kSliced})
        for (const auto& [a, b] : {std::pair{Dims{33, 17}, Dims{17, 21}}, {Dims{4, 33, 17}, Dims{4, 17, 21}},
                                  {Dims{2, 3, 9, 17}, Dims{2, 3, 17, 7}}}) {
          Spec s;
          s.t = t;
          s.a = a;
          s.b = b;
          s.la = la;
          s.lb = lb;
          s.lout = (la + lb) % 2 ? kSliced : kPadRow;
          EXPECT_TRUE(check(s));
          if (too_many_failures()) return;
        }
}

TEST(CudaGemm, AlphaBetaAndC) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes) {
    // c broadcasting to out [2, 33, 21]: full, transposed, a row [N], a column
    // [M, 1], a scalar [1], 0-D, broadcast over the batch.
    for (const Dims& cs : {Dims{2, 33, 21}, Dims{21}, Dims{33, 1}, Dims{1}, Dims{}, Dims{33, 21}, Dims{2, 1, 21}})
      for (auto [alpha, beta] : {std::pair{1.0, 1.0}, {0.5, -2.0}, {-1.25, 0.0}, {0.0, 0.75}}) {
        Spec s;
        s.t = t;
        s.a = {2, 33, 17};
        s.b = {17, 21};
        s.has_c = true;
        s.c = cs;
        s.alpha = alpha;
        s.beta = beta;
        EXPECT_TRUE(check(s));
        if (too_many_failures()) return;
      }
    for (int lc : {kCol, kSliced}) {
      Spec s;
      s.t = t;
      s.a = {33, 17};
      s.b = {17, 21};
      s.has_c = true;
      s.c = {33, 21};
      s.lc = lc;
      s.beta = 0.5;
      EXPECT_TRUE(check(s));
    }
    // In place (addmm_), row- and column-major, with an epilogue.
    for (int lo : {kRow, kCol, kPadRow}) {
      Spec s;
      s.t = t;
      s.a = {3, 33, 17};
      s.b = {3, 17, 21};
      s.has_c = true;
      s.c_in_place = true;
      s.c = {3, 33, 21};  // out's shape
      s.lout = lo;
      s.alpha = 2;
      s.beta = -0.5;
      s.bias = lo == kCol;
      s.act = lo == kCol ? GemmActivation::GeluTanh : GemmActivation::None;
      EXPECT_TRUE(check(s));
    }
  }
}

TEST(CudaGemm, BiasEveryActivationAndAux) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes)
    for (GemmActivation act : kActs)
      for (bool bias : {false, true})
        for (bool aux : {false, true}) {
          if (aux && !needs_aux(act)) continue;
          for (int lo : {kRow, kCol}) {
            Spec s;
            s.t = t;
            s.a = {2, 65, 40};
            s.b = {40, 33};
            s.la = lo;
            s.lout = lo;
            s.bias = bias;
            s.act = act;
            s.save_aux = aux;
            s.has_c = bias && lo == kRow;
            s.c = {33};
            s.beta = 0.5;
            KernelSku sku;
            EXPECT_TRUE(check(s, &sku));
            if (act == GemmActivation::Gelu) {
              EXPECT_NE(sku.variant.find("gelu-pass"), std::string::npos) << sku.to_string();
            }
            if (too_many_failures()) return;
          }
        }
}

TEST(CudaGemm, ZeroSize) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : {DType::F32, DType::BF16})
    for (const auto& [a, b] : {std::pair{Dims{0, 17}, Dims{17, 21}}, {Dims{33, 17}, Dims{17, 0}}, {Dims{0, 33, 17}, Dims{17, 21}},
                              {Dims{3, 0, 17}, Dims{3, 17, 21}}, {Dims{0}, Dims{0}}})
      for (bool extras : {false, true}) {
        Spec s;
        s.t = t;
        s.a = a;
        s.b = b;
        if (extras && b.rank >= 2) {
          s.has_c = true;
          s.c = {1};
          s.bias = true;
          s.act = GemmActivation::Gelu;
          s.save_aux = true;
        }
        EXPECT_TRUE(check(s));
      }
  // K = 0: out = act(beta * c + bias), every element written.
  for (DType t : kFloatTypes)
    for (GemmActivation act : kActs) {
      Spec s;
      s.t = t;
      s.a = {2, 33, 0};
      s.b = {0, 21};
      s.has_c = true;
      s.c = {33, 21};
      s.beta = -1.5;
      s.bias = true;
      s.act = act;
      s.save_aux = needs_aux(act);
      EXPECT_TRUE(check(s));
      s.has_c = false;
      EXPECT_TRUE(check(s));
    }
}

TEST(CudaGemm, Tf32OnlyWhenAllowed) {
  BT_SKIP_WITHOUT_GPU();
  for (bool allow : {false, true})
    for (const auto& [m, n, k] : {std::tuple{256, 192, 512}, {33, 47, 1000}}) {
      Spec s;
      s.t = DType::F32;
      s.a = {m, k};
      s.b = {k, n};
      s.bias = true;
      s.act = GemmActivation::GeluTanh;
      s.tf32 = allow;
      KernelSku sku;
      EXPECT_TRUE(check(s, &sku));  // checks ".tf32" in the variant exactly when allowed
    }
  // Other dtypes ignore the preference.
  for (DType t : {DType::F64, DType::F16, DType::BF16}) {
    Spec s;
    s.t = t;
    s.a = {64, 64};
    s.b = {64, 64};
    s.tf32 = true;
    EXPECT_TRUE(check(s));
  }
}

TEST(CudaGemm, OperandWithoutUnitStrideIsUnsupported) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t M = 9, K = 7, N = 5;
  MatmulDescriptor d;
  d.a_shape = {M, K};
  d.b_shape = {K, N};
  auto plan = MatmulPlan::select(kGpu, d);
  ASSERT_TRUE(plan) << plan.status().to_string();
  Buffer a(Device::cuda(0), 2 * M * K * 4), b(Device::cuda(0), 2 * K * N * 4), out(Device::cuda(0), 2 * M * N * 4);
  Buffer ws = bt::device_workspace(plan->workspace_size());
  const Workspace w(ws.data(), plan->workspace_size());
  const TensorRef a_ok = TensorRef::contiguous(a.data(), DType::F32, Device::cuda(0), {M, K}, 2 * M * K);
  const TensorRef b_ok = TensorRef::contiguous(b.data(), DType::F32, Device::cuda(0), {K, N}, 2 * K * N);
  const TensorMut o_ok = TensorMut::contiguous(out.data(), DType::F32, Device::cuda(0), {M, N}, 2 * M * N);
  struct Bad {
    const char* tensor;
    MatmulArgs args;
  };
  std::vector<Bad> bad;
  {
    MatmulArgs x{a_ok, b_ok, {}, {}, o_ok, {}};
    x.a = TensorRef(a.data(), DType::F32, Device::cuda(0), {M, K}, {2 * K, 2}, 2 * M * K);
    bad.push_back({"a", x});
  }
  {
    MatmulArgs x{a_ok, b_ok, {}, {}, o_ok, {}};
    x.b = TensorRef(b.data(), DType::F32, Device::cuda(0), {K, N}, {2, 2 * K}, 2 * K * N);
    bad.push_back({"b", x});
  }
  {
    MatmulArgs x{a_ok, b_ok, {}, {}, o_ok, {}};
    x.out = TensorMut(out.data(), DType::F32, Device::cuda(0), {M, N}, {2 * N, 2}, 2 * M * N);
    bad.push_back({"out", x});
  }
  // can_implement makes every check run() makes (DESIGN.md: "every check, no launch"), and so does sku_for.
  auto expect_named = [](const Status& st, const std::string& prefix) {
    EXPECT_EQ(st.code(), StatusCode::Unsupported) << st.to_string();
    EXPECT_NE(st.message().find(prefix), std::string::npos) << "message \"" << st.message() << "\" lacks \"" << prefix << "\"";
  };
  for (const Bad& x : bad) {
    const std::string prefix = std::string("MatmulPlan: ") + x.tensor + " ";
    SCOPED_TRACE(x.tensor);
    {
      SCOPED_TRACE("run");
      expect_named(plan->run(kGpu, w, x.args), prefix);
    }
    {
      SCOPED_TRACE("sku_for");
      expect_named(plan->sku_for(kGpu, w, x.args).status(), prefix);
    }
    {
      SCOPED_TRACE("can_implement");
      expect_named(plan->can_implement(x.args), prefix);
    }
  }
  // The same problem with unit strides runs.
  const MatmulArgs good{a_ok, b_ok, {}, {}, o_ok, {}};
  EXPECT_TRUE(plan->can_implement(good).is_ok()) << plan->can_implement(good).to_string();

  // LinearPlan's x likewise.
  LinearDescriptor ld;
  ld.x_shape = {M, K};
  ld.out_features = N;
  ld.has_bias = false;
  auto lin = LinearPlan::select(kGpu, ld);
  ASSERT_TRUE(lin) << lin.status().to_string();
  Buffer lws = bt::device_workspace(lin->workspace_size());
  LinearArgs la;
  la.x = TensorRef(a.data(), DType::F32, Device::cuda(0), {M, K}, {2 * K, 2}, 2 * M * K);
  la.weight = TensorRef::contiguous(b.data(), DType::F32, Device::cuda(0), {N, K}, 2 * K * N);
  la.y = o_ok;
  // Named as the caller knows it: x (not the inner GEMM's a).
  {
    SCOPED_TRACE("LinearPlan run");
    expect_named(lin->run(kGpu, Workspace(lws.data(), lin->workspace_size()), la), "LinearPlan: x ");
  }
  {
    SCOPED_TRACE("LinearPlan can_implement");
    expect_named(lin->can_implement(la), "LinearPlan: x ");
  }
}

// =============================================================================
// LinearPlan / LinearBackwardPlan
// =============================================================================
struct LinSpec {
  DType t = DType::F32;
  Dims x;
  int64_t n = 0;
  bool bias = true;
  GemmActivation act = GemmActivation::None;
  bool save_aux = false;
  int lx = kRow, lw = kRow;
};

std::string name(const LinSpec& s) {
  return std::string(dtype_name(s.t)) + " linear x" + s.x.to_string() + ":" + lay_name(s.lx) + " N " +
         std::to_string(s.n) + " w:" + lay_name(s.lw) + (s.bias ? " +bias " : " ") + gemm_activation_name(s.act) +
         (s.save_aux ? " +aux" : "");
}

::testing::AssertionResult check_linear(const LinSpec& s) {
  LinearDescriptor d;
  d.dtype = s.t;
  d.x_shape = s.x;
  d.out_features = s.n;
  d.has_bias = s.bias;
  d.activation = s.act;
  d.save_aux = s.save_aux;
  auto cpu = LinearPlan::select(kCpu, d);
  if (!cpu) return ::testing::AssertionFailure() << name(s) << ": CPU select: " << cpu.status().to_string();
  const Dims ys = cpu->y_shape(), wsh = cpu->weight_shape();
  bt::Rng rng(bt::fresh_seed(name(s)));
  const auto xv = bt::random_values(s.t, bt::numel(s.x), rng), wv = bt::random_values(s.t, bt::numel(wsh), rng),
             bv = bt::random_values(s.t, s.n, rng);
  std::vector<double> ref_y, ref_aux;
  {
    const bt::HostBuffer xh = bt::host_from(s.t, xv), wh = bt::host_from(s.t, wv), bh = bt::host_from(s.t, bv);
    bt::HostBuffer yh(s.t, bt::numel(ys)), ah(s.t, bt::numel(ys));
    LinearArgs a;
    a.x = bt::view(xh, bt::contiguous(s.x));
    a.weight = bt::view(wh, bt::contiguous(wsh));
    if (s.bias) a.bias = bt::view(bh, bt::contiguous({s.n}));
    a.y = bt::view_mut(yh, bt::contiguous(ys));
    if (s.save_aux) a.aux = bt::view_mut(ah, bt::contiguous(ys));
    const Status st = cpu->run(kCpu, Workspace::none(), a);
    if (!st) return ::testing::AssertionFailure() << name(s) << ": CPU reference: " << st.to_string();
    ref_y = bt::all_values(yh);
    if (s.save_aux) ref_aux = bt::all_values(ah);
  }
  auto gpu = LinearPlan::select(kGpu, d);
  if (!gpu) return ::testing::AssertionFailure() << name(s) << ": CUDA select: " << gpu.status().to_string();
  if (gpu->sku().backend != Backend::CuBlasLt)
    return ::testing::AssertionFailure() << name(s) << ": sku " << gpu->sku().to_string();
  const bt::Layout Lx = make_layout(s.lx, s.x), Lw = make_layout(s.lw, wsh), Lb = bt::contiguous({s.n});
  const bt::Layout Ly = bt::contiguous(ys);
  Buffer dx = device_copy(s.t, Lx, xv), dw = device_copy(s.t, Lw, wv), db = device_copy(s.t, Lb, bv);
  Buffer dy = bt::device_storage(s.t, Ly), daux = bt::device_storage(s.t, Ly);
  Buffer ws = bt::device_workspace(gpu->workspace_size());
  LinearArgs a;
  a.x = bt::view(dx, s.t, Lx);
  a.weight = bt::view(dw, s.t, Lw);
  if (s.bias) a.bias = bt::view(db, s.t, Lb);
  a.y = bt::view_mut(dy, s.t, Ly);
  if (s.save_aux) a.aux = bt::view_mut(daux, s.t, Ly);
  std::vector<bt::DeviceOut> outs = {{"y", &dy, s.t, Ly}};
  if (s.save_aux) outs.push_back({"aux", &daux, s.t, Ly});
  std::vector<bt::HostBuffer> first;
  const std::string err =
      bt::run_twice([&] { return gpu->run(kGpu, Workspace(ws.data(), gpu->workspace_size()), a); }, outs, &first);
  if (!err.empty()) return ::testing::AssertionFailure() << name(s) << ": " << err;
  const double tol = bt::tolerance(s.t);
  std::string e = compare("y", bt::gather(first[0], Ly), ref_y, tol);
  if (e.empty() && s.save_aux) e = compare("aux", bt::gather(first[1], Ly), ref_aux, tol);
  if (!e.empty()) return ::testing::AssertionFailure() << name(s) << ": " << e;
  return ::testing::AssertionSuccess();
}

TEST(CudaLinear, EveryActivation) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes)
    for (GemmActivation act : kActs)
      for (bool bias : {false, true}) {
        LinSpec s;
        s.t = t;
        s.x = {2, 33, 65};
        s.n = 47;
        s.bias = bias;
        s.act = act;
        s.save_aux = needs_aux(act) && bias;
        EXPECT_TRUE(check_linear(s));
        if (too_many_failures()) return;
      }
  // x of rank 1 and 2, a padded x (rows with a leading dim > K), a transposed
  // weight view, a larger problem, zero rows.
  for (DType t : kFloatTypes) {
    LinSpec s;
    s.t = t;
    s.x = {65};
    s.n = 33;
    EXPECT_TRUE(check_linear(s));
    s.x = {33, 65};
    s.lx = kPadRow;
    s.lw = kCol;
    s.act = GemmActivation::Gelu;
    s.save_aux = true;
    EXPECT_TRUE(check_linear(s));
    s.x = {4, 128, 256};
    s.n = 384;
    s.lx = kRow;
    s.lw = kRow;
    s.act = GemmActivation::GeluTanh;
    EXPECT_TRUE(check_linear(s));
    s.x = {0, 65};
    s.n = 33;
    EXPECT_TRUE(check_linear(s));
  }
}

struct BwdSpec {
  DType t = DType::F32;
  Dims x;
  int64_t n = 0;
  bool bias = true;
  GemmActivation act = GemmActivation::None;
  bool dx = true, dw = true, db = true;
  GemmActivation in_act = GemmActivation::None;  // chained: x = in_act(x_aux)
  bool din = false;                              // need_input_bias_grad
  std::string variant;                           // PlanPreference::variant ("bgrad=1": the fused bias gradients)
};

std::string name(const BwdSpec& s) {
  return std::string(dtype_name(s.t)) + " linear.bwd x" + s.x.to_string() + " N " + std::to_string(s.n) +
         (s.bias ? " +bias " : " ") + gemm_activation_name(s.act) + " need" + (s.dx ? " dx" : "") +
         (s.dw ? " dw" : "") + (s.db ? " db" : "") +
         (s.in_act != GemmActivation::None ? std::string(" in_act ") + gemm_activation_name(s.in_act) : "") +
         (s.din ? " dbias_in" : "") + (s.variant.empty() ? "" : " variant " + s.variant);
}

::testing::AssertionResult check_backward(const BwdSpec& s) {
  LinearBackwardDescriptor d;
  d.forward.dtype = s.t;
  d.forward.x_shape = s.x;
  d.forward.out_features = s.n;
  d.forward.has_bias = s.bias;
  d.forward.activation = s.act;
  d.need_dx = s.dx;
  d.need_dw = s.dw;
  d.need_db = s.db;
  d.input_activation = s.in_act;
  d.need_input_bias_grad = s.din;
  const bool chained = s.in_act != GemmActivation::None;
  auto cpu = LinearBackwardPlan::select(kCpu, d);
  if (!cpu) return ::testing::AssertionFailure() << name(s) << ": CPU select: " << cpu.status().to_string();
  const Dims ys = cpu->y_shape(), wsh = cpu->weight_shape(), bsh = cpu->bias_shape();
  bt::Rng rng(bt::fresh_seed(name(s)));
  const auto xv = bt::random_values(s.t, bt::numel(s.x), rng), wv = bt::random_values(s.t, bt::numel(wsh), rng),
             dyv = bt::random_values(s.t, bt::numel(ys), rng);
  // aux: a pre-activation for Gelu*, a forward y (>= 0, with exact zeros) for Relu.
  auto auxv = bt::random_values(s.t, bt::numel(ys), rng, -3, 3);
  if (s.act == GemmActivation::Relu)
    for (double& v : auxv) v = v > 0 ? v : 0.0;
  const bool has_aux = s.act != GemmActivation::None;
  // x_aux: the previous layer's pre-activation (relu: x itself, >= 0 with zeros).
  auto xauxv = bt::random_values(s.t, bt::numel(s.x), rng, -3, 3);
  if (s.in_act == GemmActivation::Relu)
    for (double& v : xauxv) v = v > 0 ? v : 0.0;
  const int64_t K = s.x[s.x.rank - 1];

  std::vector<double> ref_dx, ref_dw, ref_db, ref_din;
  {
    const bt::HostBuffer xh = bt::host_from(s.t, xv), wh = bt::host_from(s.t, wv), dyh = bt::host_from(s.t, dyv),
                         ah = bt::host_from(s.t, auxv), xah = bt::host_from(s.t, xauxv);
    bt::HostBuffer dxh(s.t, bt::numel(s.x)), dwh(s.t, bt::numel(wsh)), dbh(s.t, bt::numel(bsh)), dinh(s.t, K);
    std::vector<uint8_t> hws(cpu->workspace_size() + 1);
    LinearBackwardArgs a;
    a.dy = bt::view(dyh, bt::contiguous(ys));
    if (s.dw) a.x = bt::view(xh, bt::contiguous(s.x));
    if (s.dx) a.weight = bt::view(wh, bt::contiguous(wsh));
    if (has_aux) a.aux = bt::view(ah, bt::contiguous(ys));
    if (s.dx) a.dx = bt::view_mut(dxh, bt::contiguous(s.x));
    if (s.dw) a.dw = bt::view_mut(dwh, bt::contiguous(wsh));
    if (s.db) a.db = bt::view_mut(dbh, bt::contiguous(bsh));
    if (chained) a.x_aux = bt::view(xah, bt::contiguous(s.x));
    if (s.din) a.dbias_in = bt::view_mut(dinh, bt::contiguous(Dims{K}));
    const Status st = cpu->run(kCpu, Workspace(hws.data(), cpu->workspace_size()), a);
    if (!st) return ::testing::AssertionFailure() << name(s) << ": CPU reference: " << st.to_string();
    ref_dx = bt::all_values(dxh);
    ref_dw = bt::all_values(dwh);
    ref_db = bt::all_values(dbh);
    ref_din = bt::all_values(dinh);
  }
  PlanPreference pref;
  pref.variant = s.variant;
  auto gpu = LinearBackwardPlan::select(kGpu, d, pref);
  if (!gpu) return ::testing::AssertionFailure() << name(s) << ": CUDA select: " << gpu.status().to_string();
  if (gpu->sku().backend != Backend::CuBlasLt)
    return ::testing::AssertionFailure() << name(s) << ": sku " << gpu->sku().to_string();
  const bt::Layout Lx = bt::contiguous(s.x), Lw = bt::contiguous(wsh), Lb = bt::contiguous(bsh), Ly = bt::contiguous(ys);
  Buffer dxin = device_copy(s.t, Lx, xv), dwin = device_copy(s.t, Lw, wv), ddy = device_copy(s.t, Ly, dyv),
         daux = device_copy(s.t, Ly, auxv), dxaux = device_copy(s.t, Lx, xauxv);
  const bt::Layout Lk = bt::contiguous(Dims{K});
  Buffer odin = bt::device_storage(s.t, Lk);
  Buffer odx = bt::device_storage(s.t, Lx), odw = bt::device_storage(s.t, Lw), odb = bt::device_storage(s.t, Lb);
  Buffer ws = bt::device_workspace(gpu->workspace_size());
  LinearBackwardArgs a;
  a.dy = bt::view(ddy, s.t, Ly);
  if (s.dw) a.x = bt::view(dxin, s.t, Lx);
  if (s.dx) a.weight = bt::view(dwin, s.t, Lw);
  if (has_aux) a.aux = bt::view(daux, s.t, Ly);
  std::vector<bt::DeviceOut> outs;
  if (s.dx) {
    a.dx = bt::view_mut(odx, s.t, Lx);
    outs.push_back({"dx", &odx, s.t, Lx});
  }
  if (s.dw) {
    a.dw = bt::view_mut(odw, s.t, Lw);
    outs.push_back({"dw", &odw, s.t, Lw});
  }
  if (s.db) {
    a.db = bt::view_mut(odb, s.t, Lb);
    outs.push_back({"db", &odb, s.t, Lb});
  }
  if (chained) a.x_aux = bt::view(dxaux, s.t, Lx);
  if (s.din) {
    a.dbias_in = bt::view_mut(odin, s.t, Lk);
    outs.push_back({"dbias_in", &odin, s.t, Lk});
  }
  std::vector<bt::HostBuffer> first;
  const std::string err =
      bt::run_twice([&] { return gpu->run(kGpu, Workspace(ws.data(), gpu->workspace_size()), a); }, outs, &first);
  if (!err.empty()) return ::testing::AssertionFailure() << name(s) << ": " << err;
  const double tol = bt::tolerance(s.t);
  size_t o = 0;
  std::string e;
  if (s.dx) e += compare("dx", bt::gather(first[o++], Lx), ref_dx, tol);
  if (s.dw) e += compare("dw", bt::gather(first[o++], Lw), ref_dw, tol);
  if (s.db) e += compare("db", bt::gather(first[o++], Lb), ref_db, tol);
  if (s.din) e += compare("dbias_in", bt::gather(first[o++], Lk), ref_din, tol);
  if (!e.empty()) return ::testing::AssertionFailure() << name(s) << " (sku " << gpu->sku().to_string() << "): " << e;
  return ::testing::AssertionSuccess();
}

TEST(CudaLinearBackward, EveryActivationAndNeedSubset) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes)
    for (GemmActivation act : kActs)
      for (int mask = 1; mask < 8; ++mask) {
        BwdSpec s;
        s.t = t;
        s.x = {2, 33, 65};
        s.n = 47;
        s.act = act;
        s.dx = mask & 1;
        s.dw = mask & 2;
        s.db = mask & 4;
        EXPECT_TRUE(check_backward(s));
        if (too_many_failures()) return;
      }
  // Without bias, a larger problem, and odd shapes.
  for (DType t : kFloatTypes)
    for (GemmActivation act : {GemmActivation::None, GemmActivation::Relu, GemmActivation::Gelu}) {
      BwdSpec s;
      s.t = t;
      s.x = {7, 1};
      s.n = 33;
      s.bias = false;
      s.db = false;
      s.act = act;
      EXPECT_TRUE(check_backward(s));
      s.x = {2, 128, 256};
      s.n = 384;
      s.bias = true;
      s.db = true;
      EXPECT_TRUE(check_backward(s));
      s.x = {1000};
      s.n = 7;
      EXPECT_TRUE(check_backward(s));
    }
}

// Chained layers: the dx GEMM applies the previous layer's activation
// gradient (cuBLASLt DGELU_BGRAD for GeluTanh, a pass + reduction otherwise)
// and, with need_input_bias_grad, writes that layer's bias gradient.
TEST(CudaLinearBackward, ChainedInputActivation) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes)
    for (GemmActivation in_act : {GemmActivation::GeluTanh, GemmActivation::Gelu, GemmActivation::Relu})
      for (bool din : {false, true})
        for (const char* variant : {"", "bgrad=1", "dgelu=0"}) {
        BwdSpec s;
        s.t = t;
        s.variant = variant;
        s.x = {4, 33, 64};  // K = 64: an aux leading dim the DGELU epilogue accepts
        s.n = 40;
        s.act = GemmActivation::None;
        s.in_act = in_act;
        s.din = din;
        EXPECT_TRUE(check_backward(s));
        s.act = GemmActivation::GeluTanh;  // both ends of a layer fused
        s.x = {2, 17, 60};                 // K = 60: not a multiple of 8, the pass form
        EXPECT_TRUE(check_backward(s));
        if (too_many_failures()) return;
      }
}

TEST(CudaLinearBackward, ChainedVariantNamesTheFusedEpilogue) {
  BT_SKIP_WITHOUT_GPU();
  LinearBackwardDescriptor d;
  d.forward.dtype = DType::BF16;
  d.forward.x_shape = Dims{64, 128};
  d.forward.out_features = 256;
  d.input_activation = GemmActivation::GeluTanh;
  d.need_input_bias_grad = true;
  auto p = LinearBackwardPlan::select(kGpu, d);  // defaults: DGELU fused, the bias gradient reduced
  ASSERT_TRUE(p) << p.status().to_string();
  EXPECT_NE(p->sku().variant.find("dx:cublaslt.dgelu "), std::string::npos) << p->sku().variant;
  EXPECT_NE(p->sku().variant.find("dbias_in:reduce"), std::string::npos) << p->sku().variant;
  PlanPreference fused;
  fused.variant = "bgrad=1";
  auto f = LinearBackwardPlan::select(kGpu, d, fused);
  ASSERT_TRUE(f) << f.status().to_string();
  EXPECT_NE(f->sku().variant.find("dgelu-bgrad"), std::string::npos) << f->sku().variant;
  EXPECT_NE(f->sku().variant.find("dbias_in:fused"), std::string::npos) << f->sku().variant;
  PlanPreference bad;
  bad.variant = "bgrad=2";
  EXPECT_EQ(LinearBackwardPlan::select(kGpu, d, bad).status().code(), StatusCode::InvalidProblem);
  d.input_activation = GemmActivation::Gelu;  // erf: no cuBLASLt epilogue
  auto q = LinearBackwardPlan::select(kGpu, d);
  ASSERT_TRUE(q) << q.status().to_string();
  EXPECT_NE(q->sku().variant.find("+dact-pass"), std::string::npos) << q->sku().variant;
  EXPECT_NE(q->sku().variant.find("dbias_in:reduce"), std::string::npos) << q->sku().variant;
}

TEST(CudaLinearBackward, ZeroRows) {
  BT_SKIP_WITHOUT_GPU();
  for (GemmActivation act : kActs) {
    BwdSpec s;
    s.x = {0, 33};
    s.n = 17;
    s.act = act;
    EXPECT_TRUE(check_backward(s));  // dw and db are sums over no rows: zeros
  }
}

// accumulate: dw += g^T . x and db += sum of g's rows onto non-zero old
// values (beta = 1 in place; db through the ones GEMM), against the CPU
// reference given the same old values; dx is overwritten. Zero rows keep the
// old values.
TEST(CudaLinearBackward, AccumulateAddsToTheOldValues) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kFloatTypes)
    for (int64_t M : {int64_t{37}, int64_t{0}}) {
      const int64_t K = 24, N = 50;
      SCOPED_TRACE(std::string(dtype_name(t)) + " M " + std::to_string(M));
      LinearBackwardDescriptor d;
      d.forward.dtype = t;
      d.forward.x_shape = Dims{M, K};
      d.forward.out_features = N;
      d.forward.has_bias = true;
      d.accumulate = true;
      bt::Rng rng(bt::fresh_seed("accumulate " + std::string(dtype_name(t)) + std::to_string(M)));
      const auto xv = bt::random_values(t, M * K, rng), wv = bt::random_values(t, N * K, rng),
                 dyv = bt::random_values(t, M * N, rng), dw0 = bt::random_values(t, N * K, rng),
                 db0 = bt::random_values(t, N, rng);
      const bt::Layout Lx = bt::contiguous(Dims{M, K}), Lw = bt::contiguous(Dims{N, K}), Ly = bt::contiguous(Dims{M, N}),
                       Lb = bt::contiguous(Dims{N});
      auto cpu = LinearBackwardPlan::select(kCpu, d);
      ASSERT_TRUE(cpu) << cpu.status().to_string();
      const bt::HostBuffer xh = bt::host_from(t, xv), wh = bt::host_from(t, wv), dyh = bt::host_from(t, dyv);
      bt::HostBuffer dxh(t, M * K), dwh = bt::host_from(t, dw0), dbh = bt::host_from(t, db0);
      LinearBackwardArgs ha;
      ha.dy = bt::view(dyh, Ly);
      ha.x = bt::view(xh, Lx);
      ha.weight = bt::view(wh, Lw);
      ha.dx = bt::view_mut(dxh, Lx);
      ha.dw = bt::view_mut(dwh, Lw);
      ha.db = bt::view_mut(dbh, Lb);
      ASSERT_TRUE(cpu->run(kCpu, Workspace::none(), ha).is_ok());

      auto gpu = LinearBackwardPlan::select(kGpu, d);
      ASSERT_TRUE(gpu) << gpu.status().to_string();
      EXPECT_NE(gpu->sku().variant.find("db:ones"), std::string::npos) << gpu->sku().variant;
      Buffer dx_in = device_copy(t, Lx, xv), dw_in = device_copy(t, Lw, wv), ddy = device_copy(t, Ly, dyv);
      Buffer odx = bt::device_storage(t, Lx), odw = device_copy(t, Lw, dw0), odb = device_copy(t, Lb, db0);
      Buffer ws = bt::device_workspace(gpu->workspace_size());
      LinearBackwardArgs a;
      a.dy = bt::view(ddy, t, Ly);
      a.x = bt::view(dx_in, t, Lx);
      a.weight = bt::view(dw_in, t, Lw);
      a.dx = bt::view_mut(odx, t, Lx);
      a.dw = bt::view_mut(odw, t, Lw);
      a.db = bt::view_mut(odb, t, Lb);
      const Status st = gpu->run(kGpu, Workspace(ws.data(), gpu->workspace_size()), a);
      ASSERT_TRUE(st.is_ok()) << st.to_string();
      ASSERT_TRUE(synchronize(kGpu).is_ok());
      const double tol = bt::tolerance(t);
      std::string e;
      if (M > 0) e += compare("dx", bt::gather(to_host(odx, t, M * K), Lx), bt::all_values(dxh), tol);
      e += compare("dw", bt::gather(to_host(odw, t, N * K), Lw), bt::all_values(dwh), tol);
      e += compare("db", bt::gather(to_host(odb, t, N), Lb), bt::all_values(dbh), tol);
      EXPECT_TRUE(e.empty()) << gpu->sku().to_string() << ": " << e;
      if (M == 0) {  // nothing added: exactly the old values
        EXPECT_EQ(bt::gather(to_host(odw, t, N * K), Lw), bt::gather(bt::host_from(t, dw0), Lw));
        EXPECT_EQ(bt::gather(to_host(odb, t, N), Lb), bt::gather(bt::host_from(t, db0), Lb));
      }
    }
}

}  // namespace
