// Conveniences for framework authors (issue 9): views that know their buffer's
// length, dtype_v<T>, shape helpers on every plan, descriptors read from views,
// strict workspace mode, DLManagedTensor / DLManagedTensorVersioned import.
#include <gtest/gtest.h>

#include <complex>
#include <cstdlib>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#if defined(BARACUDA_WITH_CUDA) && __has_include(<cuda_fp16.h>)
// cuda_fp16.h also declares a global `half`: baracuda's is spelled in full below.
#include "baracuda/core/cuda_types.hpp"
#define BT_HAVE_CUDA_TYPES 1
#endif

using namespace baracuda;

// ---- views with a capacity ---------------------------------------------------
TEST(Conveniences, ContiguousViewWithCapacityCatchesAShortBuffer) {
  ReduceDescriptor d;
  d.shape = {2, 3};
  d.axes = {1};
  auto plan = ReducePlan::select(Stream::cpu(), d).value();
  std::vector<float> x(5, 1.f), y(2);  // one element short of [2,3]
  ReduceArgs a{TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), {2, 3}, 5),
               TensorMut::contiguous(y.data(), DType::F32, Device::cpu(), {2}, 2)};
  const Status st = plan.run(Stream::cpu(), Workspace::none(), a);
  EXPECT_EQ(st.code(), StatusCode::BufferTooSmall);
  EXPECT_EQ(st.message(), "ReducePlan: x view reaches 6 elements but its buffer holds 5");
  EXPECT_EQ(st.needed(), 6u);
  EXPECT_EQ(st.got(), 5u);
  // Typed overload: same view, dtype from the pointer.
  const TensorRef typed = TensorRef::contiguous(x.data(), Device::cpu(), {2, 3}, 5);
  EXPECT_EQ(typed.dtype, DType::F32);
  EXPECT_EQ(typed.capacity, 5);
  EXPECT_EQ(typed.strides, (Dims{3, 1}));
  // Without a capacity the buffer is taken to be exactly numel long.
  EXPECT_EQ(TensorRef::contiguous(x.data(), DType::F32, Device::cpu(), {2, 3}).capacity, 6);
  std::vector<baracuda::half> h(4);
  const TensorMut hm = TensorMut::contiguous(h.data(), Device::cpu(), {4}, 4);
  EXPECT_EQ(hm.dtype, DType::F16);
}

// ---- dtype_v -----------------------------------------------------------------------
static_assert(dtype_v<float> == DType::F32 && dtype_v<double> == DType::F64);
static_assert(dtype_v<baracuda::half> == DType::F16 && dtype_v<baracuda::bfloat16> == DType::BF16);
static_assert(dtype_v<const baracuda::bfloat16> == DType::BF16 && dtype_v<volatile const baracuda::half> == DType::F16);
static_assert(dtype_v<bool> == DType::Bool && dtype_v<int8_t> == DType::I8 && dtype_v<uint8_t> == DType::U8);
static_assert(dtype_v<int16_t> == DType::I16 && dtype_v<int32_t> == DType::I32 && dtype_v<int64_t> == DType::I64);
static_assert(dtype_v<float8_e4m3> == DType::F8E4M3 && dtype_v<float8_e5m2> == DType::F8E5M2);
static_assert(dtype_v<complex64> == DType::C64 && dtype_v<std::complex<double>> == DType::C128);
static_assert(dtype_of<float>() == DType::F32 && DType(dtype_of<baracuda::half>()) == DType::F16);
#ifdef BT_HAVE_CUDA_TYPES
static_assert(dtype_v<__half> == DType::F16 && dtype_v<__nv_bfloat16> == DType::BF16);
static_assert(dtype_v<__nv_fp8_e4m3> == DType::F8E4M3 && dtype_v<const __nv_fp8_e5m2> == DType::F8E5M2);
#endif

TEST(Conveniences, DTypeOfEveryHostType) {
  // Each host type maps back to its own dtype (the table is the only source).
  int n = 0;
  for (DType t : kAllDTypes) {
    const Status st = visit_dtype<AllTypes>(t, "test", [&](auto tag) {
      using T = typename decltype(tag)::type;
      EXPECT_EQ(dtype_v<T>, t) << dtype_name(t);
      EXPECT_EQ(dtype_v<const T>, t) << dtype_name(t);
      ++n;
    });
    EXPECT_TRUE(st.is_ok());
  }
  EXPECT_EQ(n, static_cast<int>(kDTypeCount));
}

// ---- shape helpers -----------------------------------------------------------------
// Views built from a plan's helpers alone are what the plan accepts.
TEST(Conveniences, AttentionShapeHelpersDescribeTheArguments) {
  SdpaDescriptor sd;
  sd.batch = 2, sd.heads = 4, sd.kv_heads = 2, sd.q_len = 3, sd.kv_len = 5, sd.head_dim = 6, sd.head_dim_v = 7;
  sd.has_mask = true;
  auto sp = SdpaPlan::select(Stream::cpu(), sd).value();
  EXPECT_EQ(sp.q_shape(), (Dims{2, 4, 3, 6}));
  EXPECT_EQ(sp.k_shape(), (Dims{2, 2, 5, 6}));
  EXPECT_EQ(sp.v_shape(), (Dims{2, 2, 5, 7}));
  EXPECT_EQ(sp.y_shape(), (Dims{2, 4, 3, 7}));
  EXPECT_EQ(sp.probs_shape(), (Dims{2, 4, 3, 5}));
  EXPECT_EQ(sp.mask_shape(), (Dims{2, 4, 3, 5}));
  auto buf = [](const Dims& s) { return std::vector<double>(static_cast<size_t>(shape_numel(s)), 0.25); };
  auto in = [](std::vector<double>& b, const Dims& s, DType t = DType::F64) {
    return TensorRef::contiguous(b.data(), t, Device::cpu(), s, static_cast<int64_t>(b.size()));
  };
  auto out = [](std::vector<double>& b, const Dims& s, DType t = DType::F64) {
    return TensorMut::contiguous(b.data(), t, Device::cpu(), s, static_cast<int64_t>(b.size()));
  };
  sd.dtype = DType::F64;
  sp = SdpaPlan::select(Stream::cpu(), sd).value();
  auto q = buf(sp.q_shape()), k = buf(sp.k_shape()), v = buf(sp.v_shape()), m = buf(sp.mask_shape()),
       y = buf(sp.y_shape()), p = buf(sp.probs_shape());
  std::vector<float> mask_f(m.size(), 0.f);
  SdpaArgs sa{in(q, sp.q_shape()), in(k, sp.k_shape()), in(v, sp.v_shape()),
              TensorRef::contiguous(mask_f.data(), Device::cpu(), sp.mask_shape(), static_cast<int64_t>(mask_f.size())),
              out(y, sp.y_shape()), out(p, sp.probs_shape(), sp.probs_dtype())};
  EXPECT_TRUE(sp.run(Stream::cpu(), Workspace::none(), sa).is_ok());
  auto sb = SdpaBackwardPlan::select(Stream::cpu(), sd).value();
  auto dy = buf(sb.y_shape()), dq = buf(sb.q_shape()), dk = buf(sb.k_shape()), dv = buf(sb.v_shape());
  SdpaBackwardArgs ba{in(dy, sb.y_shape()), sa.q, sa.k, sa.v, in(p, sb.probs_shape(), sb.probs_dtype()),
                      out(dq, sb.q_shape()), out(dk, sb.k_shape()), out(dv, sb.v_shape())};
  std::vector<uint8_t> ws(sb.workspace_size() + 1);
  EXPECT_TRUE(sb.run(Stream::cpu(), Workspace(ws.data(), sb.workspace_size()), ba).is_ok());

  for (const bool varlen : {false, true}) {
    SCOPED_TRACE(varlen ? "varlen" : "dense");
    FlashSdpaDescriptor fd;
    fd.dtype = DType::F64;
    fd.batch = 2, fd.heads = 4, fd.kv_heads = 2, fd.q_len = 3, fd.kv_len = 5, fd.head_dim = 32;
    fd.alibi = AlibiMode::PerBatchHead;
    fd.varlen = varlen;
    fd.total_q = 4, fd.total_kv = 6;
    auto fp = FlashSdpaPlan::select(Stream::cpu(), fd).value();
    EXPECT_EQ(fp.q_shape(), varlen ? (Dims{4, 4, 32}) : (Dims{2, 4, 3, 32}));
    EXPECT_EQ(fp.kv_shape(), varlen ? (Dims{6, 2, 32}) : (Dims{2, 2, 5, 32}));
    EXPECT_EQ(fp.y_shape(), fp.q_shape());
    EXPECT_EQ(fp.lse_shape(), varlen ? (Dims{4, 4}) : (Dims{2, 4, 3}));
    EXPECT_EQ(fp.lse_dtype(), DType::F32);
    EXPECT_EQ(fp.alibi_shape(), (Dims{2, 4}));
    EXPECT_EQ(fp.cu_seqlens_shape(), varlen ? Dims{3} : Dims{});
    auto fq = buf(fp.q_shape()), fk = buf(fp.kv_shape()), fv = buf(fp.kv_shape()), fy = buf(fp.y_shape());
    std::vector<float> lse(static_cast<size_t>(shape_numel(fp.lse_shape()))), slopes(8, 0.5f);
    std::vector<int32_t> cq{0, 1, 4}, ck{0, 5, 6};
    FlashSdpaArgs fa;
    fa.q = in(fq, fp.q_shape());
    fa.k = in(fk, fp.kv_shape());
    fa.v = in(fv, fp.kv_shape());
    fa.alibi_slopes = TensorRef::contiguous(slopes.data(), Device::cpu(), fp.alibi_shape(), 8);
    if (varlen) {
      fa.cu_seqlens_q = TensorRef::contiguous(cq.data(), Device::cpu(), fp.cu_seqlens_shape(), 3);
      fa.cu_seqlens_kv = TensorRef::contiguous(ck.data(), Device::cpu(), fp.cu_seqlens_shape(), 3);
    }
    fa.y = out(fy, fp.y_shape());
    fa.lse = TensorMut::contiguous(lse.data(), Device::cpu(), fp.lse_shape(), static_cast<int64_t>(lse.size()));
    EXPECT_TRUE(fp.run(Stream::cpu(), Workspace::none(), fa).is_ok());
    auto fb = FlashSdpaBackwardPlan::select(Stream::cpu(), fd).value();
    EXPECT_EQ(fb.q_shape(), fp.q_shape());
    EXPECT_EQ(fb.kv_shape(), fp.kv_shape());
    EXPECT_EQ(fb.lse_shape(), fp.lse_shape());
  }
}

TEST(Conveniences, ReduceToHasOutputShapeAndDtype) {
  ReduceToDescriptor d;
  d.dtype = DType::F64;
  d.shape = {4, 2, 3};
  d.target = {1, 3};
  auto p = ReduceToPlan::select(Stream::cpu(), d).value();
  EXPECT_EQ(p.output_shape(), (Dims{1, 3}));
  EXPECT_EQ(p.output_dtype(), DType::F64);
}

// ---- descriptors from views ------------------------------------------------------
TEST(Conveniences, FlashDescriptorFromViews) {
  std::vector<float> q(2 * 8 * 5 * 64), kv(2 * 2 * 9 * 64);
  const TensorRef qv = TensorRef::contiguous(q.data(), Device::cpu(), {2, 8, 5, 64}, static_cast<int64_t>(q.size()));
  const TensorRef kvv = TensorRef::contiguous(kv.data(), Device::cpu(), {2, 2, 9, 64}, static_cast<int64_t>(kv.size()));
  FlashSdpaDescriptor opts;
  opts.causal = true;
  opts.batch = 99;  // shape fields of the options are ignored
  auto d = FlashSdpaDescriptor::from(qv, kvv, kvv, opts);
  ASSERT_TRUE(d.is_ok()) << d.status().to_string();
  EXPECT_EQ(d->dtype, DType::F32);
  EXPECT_EQ(d->batch, 2);
  EXPECT_EQ(d->heads, 8);
  EXPECT_EQ(d->kv_heads, 2);
  EXPECT_EQ(d->q_len, 5);
  EXPECT_EQ(d->kv_len, 9);
  EXPECT_EQ(d->head_dim, 64);
  EXPECT_TRUE(d->causal);
  auto plan = FlashSdpaPlan::select(Stream::cpu(), *d);
  ASSERT_TRUE(plan.is_ok());
  EXPECT_EQ(plan->q_shape(), qv.shape);
  EXPECT_EQ(plan->kv_shape(), kvv.shape);
  EXPECT_TRUE(FlashSdpaDescriptor::from(qv, kvv, kvv).is_ok());  // default options

  // Views that disagree: named.
  const TensorRef k_other_d = TensorRef::contiguous(kv.data(), Device::cpu(), {2, 2, 9, 32}, static_cast<int64_t>(kv.size()));
  auto bad = FlashSdpaDescriptor::from(qv, k_other_d, k_other_d);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(),
            "FlashSdpaDescriptor::from: q [2,8,5,64] and k [2,2,9,32] disagree on head_dim (64 vs 32)");
  bad = FlashSdpaDescriptor::from(qv, kvv, k_other_d);
  EXPECT_EQ(bad.status().message(), "FlashSdpaDescriptor::from: k [2,2,9,64] and v [2,2,9,32] must have one shape (Dk == Dv)");
  const TensorRef q3 = TensorRef::contiguous(q.data(), Device::cpu(), {16, 5, 64}, static_cast<int64_t>(q.size()));
  bad = FlashSdpaDescriptor::from(q3, kvv, kvv);
  EXPECT_EQ(bad.status().code(), StatusCode::InvalidProblem);
  EXPECT_EQ(bad.status().message(), "FlashSdpaDescriptor::from: q has rank 3, expected 4 ([B,H,Q,D])");
  std::vector<double> kv64(kv.size());
  const TensorRef k64 = TensorRef::contiguous(kv64.data(), Device::cpu(), {2, 2, 9, 64}, static_cast<int64_t>(kv64.size()));
  bad = FlashSdpaDescriptor::from(qv, k64, kvv);
  EXPECT_EQ(bad.status().message(), "FlashSdpaDescriptor::from: q, k and v must have one dtype, got f32, f64, f32");

  // Varlen: totals from the views, batch and the longest lengths from the options.
  FlashSdpaDescriptor vo;
  vo.varlen = true;
  vo.batch = 3, vo.q_len = 4, vo.kv_len = 6;
  const TensorRef vq = TensorRef::contiguous(q.data(), Device::cpu(), {10, 8, 64}, static_cast<int64_t>(q.size()));
  const TensorRef vk = TensorRef::contiguous(kv.data(), Device::cpu(), {15, 2, 64}, static_cast<int64_t>(kv.size()));
  auto vd = FlashSdpaDescriptor::from(vq, vk, vk, vo);
  ASSERT_TRUE(vd.is_ok()) << vd.status().to_string();
  EXPECT_EQ(vd->total_q, 10);
  EXPECT_EQ(vd->total_kv, 15);
  EXPECT_EQ(vd->heads, 8);
  EXPECT_EQ(vd->kv_heads, 2);
  EXPECT_EQ(vd->batch, 3);
  EXPECT_EQ(vd->q_len, 4);
  EXPECT_EQ(vd->kv_len, 6);
}

TEST(Conveniences, SdpaAndRopeDescriptorsFromViews) {
  std::vector<float> q(2 * 4 * 3 * 6), k(2 * 2 * 5 * 6), v(2 * 2 * 5 * 7);
  const TensorRef qv = TensorRef::contiguous(q.data(), Device::cpu(), {2, 4, 3, 6}, static_cast<int64_t>(q.size()));
  const TensorRef kv = TensorRef::contiguous(k.data(), Device::cpu(), {2, 2, 5, 6}, static_cast<int64_t>(k.size()));
  const TensorRef vv = TensorRef::contiguous(v.data(), Device::cpu(), {2, 2, 5, 7}, static_cast<int64_t>(v.size()));
  auto sd = SdpaDescriptor::from(qv, kv, vv);
  ASSERT_TRUE(sd.is_ok()) << sd.status().to_string();
  EXPECT_EQ(sd->head_dim, 6);
  EXPECT_EQ(sd->head_dim_v, 7);
  EXPECT_EQ(sd->kv_len, 5);
  auto sp = SdpaPlan::select(Stream::cpu(), *sd);
  ASSERT_TRUE(sp.is_ok());
  EXPECT_EQ(sp->v_shape(), vv.shape);
  auto bad = SdpaDescriptor::from(qv, kv, qv);
  ASSERT_FALSE(bad.is_ok());
  EXPECT_EQ(bad.status().message(), "SdpaDescriptor::from: k [2,2,5,6] and v [2,4,3,6] disagree on kv_heads (2 vs 4)");

  RopeDescriptor ro;
  ro.pairs = RopePairs::Interleaved;
  ro.seq_len = 77;  // ignored
  const TensorRef rk = TensorRef::contiguous(k.data(), Device::cpu(), {2, 1, 3, 6}, 36);
  auto rd = RopeDescriptor::from(qv, rk, ro);
  ASSERT_TRUE(rd.is_ok()) << rd.status().to_string();
  EXPECT_EQ(rd->batch, 2);
  EXPECT_EQ(rd->heads, 4);
  EXPECT_EQ(rd->kv_heads, 1);
  EXPECT_EQ(rd->seq_len, 3);
  EXPECT_EQ(rd->head_dim, 6);
  EXPECT_TRUE(rd->has_k);
  EXPECT_EQ(rd->pairs, RopePairs::Interleaved);
  auto q_only = RopeDescriptor::from(qv, TensorRef());
  ASSERT_TRUE(q_only.is_ok());
  EXPECT_FALSE(q_only->has_k);
  EXPECT_TRUE(RopePlan::select(Stream::cpu(), *q_only).is_ok());
  auto rbad = RopeDescriptor::from(qv, kv);  // S 5 vs 3
  ASSERT_FALSE(rbad.is_ok());
  EXPECT_EQ(rbad.status().message(), "RopeDescriptor::from: q [2,4,3,6] and k [2,2,5,6] must agree on B, S and D");
}

// ---- strict workspace ---------------------------------------------------------------
TEST(Conveniences, StrictWorkspaceUsesTheCudaSizeWhereTheHostKnowsIt) {
  SdpaDescriptor d;
  d.batch = 2, d.heads = 3, d.kv_heads = 1, d.q_len = 5, d.kv_len = 7, d.head_dim = 4;
  PlanPreference strict;
  strict.strict_workspace = true;
  EXPECT_EQ(SdpaBackwardPlan::select(Stream::cpu(), d).value().workspace_size(), 0u);
  // ds [B,H,Q,K] in f32, as the CUDA plan sizes it (2*3*5*7*4 = 840 bytes).
  EXPECT_EQ(SdpaBackwardPlan::select(Stream::cpu(), d, strict).value().workspace_size(), 840u);
  d.dtype = DType::F64;
  EXPECT_EQ(SdpaBackwardPlan::select(Stream::cpu(), d, strict).value().workspace_size(), 1680u);
  // Where the host cannot know it, the token.
  EXPECT_EQ(SdpaPlan::select(Stream::cpu(), d, strict).value().workspace_size(), kStrictWorkspaceBytes);
}

TEST(Conveniences, StrictWorkspaceFromTheEnvironment) {
  ReduceDescriptor d;
  d.shape = {3, 4};
  ASSERT_EQ(setenv("BARACUDA_STRICT_WORKSPACE", "1", 1), 0);
  const size_t strict = ReducePlan::select(Stream::cpu(), d).value().workspace_size();
  ASSERT_EQ(setenv("BARACUDA_STRICT_WORKSPACE", "0", 1), 0);
  const size_t lax = ReducePlan::select(Stream::cpu(), d).value().workspace_size();
  ASSERT_EQ(unsetenv("BARACUDA_STRICT_WORKSPACE"), 0);
  EXPECT_EQ(strict, kStrictWorkspaceBytes);
  EXPECT_EQ(lax, 0u);
}

// ---- DLManagedTensor --------------------------------------------------------------
#if BARACUDA_HAS_DLPACK
namespace {
struct Producer {  // what a framework's to_dlpack hands out
  std::vector<float> data = std::vector<float>(12, 1.5f);
  int64_t shape[2] = {3, 4};
  DLManagedTensor m{};
  int deleted = 0;
  Producer() {
    m.dl_tensor.data = data.data();
    m.dl_tensor.device = {kDLCPU, 0};
    m.dl_tensor.ndim = 2;
    m.dl_tensor.dtype = {kDLFloat, 32, 1};
    m.dl_tensor.shape = shape;
    m.manager_ctx = this;
    m.deleter = [](DLManagedTensor* self) { ++static_cast<Producer*>(self->manager_ctx)->deleted; };
  }
};
}  // namespace

TEST(Conveniences, FromDLManagedTensor) {
  Producer p;
  auto v = from_dlpack(&p.m);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->data, p.data.data());
  EXPECT_EQ(v->shape, (Dims{3, 4}));
  EXPECT_EQ(v->strides, (Dims{4, 1}));
  EXPECT_EQ(v->dtype, DType::F32);
  auto vm = from_dlpack_mut(&p.m, 12);
  ASSERT_TRUE(vm.is_ok());
  EXPECT_EQ(vm->capacity, 12);
  EXPECT_EQ(from_dlpack(static_cast<const DLManagedTensor*>(nullptr)).status().code(), StatusCode::InvalidProblem);
  EXPECT_EQ(p.deleted, 0);  // viewing borrows

  {
    DLManagedTensorOwner owner(&p.m);
    auto ov = owner.view();
    ASSERT_TRUE(ov.is_ok());
    // A reduction over the imported view works like over any view.
    ReduceDescriptor d;
    d.shape = ov->shape;
    auto plan = ReducePlan::select(Stream::cpu(), d).value();
    float sum = 0;
    ASSERT_TRUE(plan.run(Stream::cpu(), Workspace::none(), {*ov, TensorMut::contiguous(&sum, Device::cpu(), {}, 1)}).is_ok());
    EXPECT_EQ(sum, 18.f);
    DLManagedTensorOwner moved = std::move(owner);  // ownership moves, the deleter still runs once
    EXPECT_EQ(owner.get(), nullptr);
    EXPECT_EQ(p.deleted, 0);
  }
  EXPECT_EQ(p.deleted, 1);
  DLManagedTensorOwner kept(&p.m);
  EXPECT_EQ(kept.release(), &p.m);
  EXPECT_EQ(p.deleted, 1);
}

// ---- DLManagedTensorVersioned (DLPack >= 1.0) --------------------------------------
#if BARACUDA_HAS_DLPACK_VERSIONED
namespace {
struct VersionedProducer {  // what a DLPack 1.x producer's __dlpack__ hands out
  std::vector<float> data = std::vector<float>(6, 2.f);
  int64_t shape[2] = {2, 3};
  DLManagedTensorVersioned m{};
  int deleted = 0;
  explicit VersionedProducer(uint64_t flags = 0) {
    m.version = {DLPACK_MAJOR_VERSION, DLPACK_MINOR_VERSION};
    m.flags = flags;
    m.dl_tensor.data = data.data();
    m.dl_tensor.device = {kDLCPU, 0};
    m.dl_tensor.ndim = 2;
    m.dl_tensor.dtype = {kDLFloat, 32, 1};
    m.dl_tensor.shape = shape;
    m.manager_ctx = this;
    m.deleter = [](DLManagedTensorVersioned* self) { ++static_cast<VersionedProducer*>(self->manager_ctx)->deleted; };
  }
};
}  // namespace

TEST(Conveniences, FromDLManagedTensorVersioned) {
  VersionedProducer p;
  auto v = from_dlpack(&p.m);
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->data, p.data.data());
  EXPECT_EQ(v->shape, (Dims{2, 3}));
  EXPECT_EQ(v->strides, (Dims{3, 1}));
  EXPECT_EQ(v->dtype, DType::F32);
  EXPECT_EQ(v->capacity, 6);
  auto vm = from_dlpack_mut(&p.m, 6);
  ASSERT_TRUE(vm.is_ok()) << vm.status().to_string();
  EXPECT_EQ(vm->data, p.data.data());
  // A newer minor version only adds codes: still read.
  p.m.version.minor = DLPACK_MINOR_VERSION + 1;
  EXPECT_TRUE(from_dlpack_mut(&p.m).is_ok());
  // A copy made for the consumer is writable like any other tensor.
  VersionedProducer copied(DLPACK_FLAG_BITMASK_IS_COPIED);
  EXPECT_TRUE(from_dlpack_mut(&copied.m).is_ok());
  EXPECT_EQ(p.deleted + copied.deleted, 0);  // viewing borrows
}

TEST(Conveniences, ReadOnlyDLManagedTensorVersionedIsNotWritable) {
  VersionedProducer p(DLPACK_FLAG_BITMASK_READ_ONLY | DLPACK_FLAG_BITMASK_IS_COPIED);
  auto v = from_dlpack(&p.m);  // reading is fine
  ASSERT_TRUE(v.is_ok()) << v.status().to_string();
  EXPECT_EQ(v->data, p.data.data());
  auto vm = from_dlpack_mut(&p.m);
  EXPECT_EQ(vm.status().code(), StatusCode::InvalidProblem);
  EXPECT_EQ(vm.status().message(),
            "from_dlpack_mut: the DLManagedTensorVersioned is read-only (DLPACK_FLAG_BITMASK_READ_ONLY): view it with "
            "from_dlpack, or have the producer export a writable tensor");
  DLManagedTensorVersionedOwner owner(&p.m);
  EXPECT_TRUE(owner.read_only());
  EXPECT_TRUE(owner.is_copied());
  EXPECT_EQ(owner.view_mut().status().code(), StatusCode::InvalidProblem);
  EXPECT_TRUE(owner.view().is_ok());
}

TEST(Conveniences, UnknownDLPackMajorVersionIsRefused) {
  for (uint32_t major : {uint32_t{DLPACK_MAJOR_VERSION - 1}, uint32_t{DLPACK_MAJOR_VERSION + 1}}) {
    SCOPED_TRACE(major);
    VersionedProducer p(DLPACK_FLAG_BITMASK_READ_ONLY);
    p.m.version = {major, 0};
    const std::string expected = ": the DLManagedTensorVersioned has DLPack version " + std::to_string(major) +
                                 ".0; baracuda was built with DLPack " + std::to_string(DLPACK_MAJOR_VERSION) +
                                 ".x and reads no other major version (only its deleter may be called)";
    auto v = from_dlpack(&p.m);
    EXPECT_EQ(v.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(v.status().message(), "from_dlpack" + expected);
    // The version is checked before the flags: they may not be where this build looks.
    auto vm = from_dlpack_mut(&p.m);
    EXPECT_EQ(vm.status().code(), StatusCode::Unsupported);
    EXPECT_EQ(vm.status().message(), "from_dlpack_mut" + expected);
    {
      DLManagedTensorVersionedOwner owner(&p.m);
      EXPECT_FALSE(owner.read_only());  // unreadable flags are not reported
      EXPECT_EQ(owner.view().status().code(), StatusCode::Unsupported);
    }
    EXPECT_EQ(p.deleted, 1);  // the deleter is still called, once
  }
  EXPECT_EQ(from_dlpack(static_cast<const DLManagedTensorVersioned*>(nullptr)).status().message(),
            "from_dlpack: the DLManagedTensorVersioned is null");
  EXPECT_EQ(from_dlpack_mut(static_cast<const DLManagedTensorVersioned*>(nullptr)).status().code(),
            StatusCode::InvalidProblem);
}

TEST(Conveniences, DLManagedTensorVersionedOwnerCallsTheDeleterOnce) {
  VersionedProducer p;
  {
    DLManagedTensorVersionedOwner owner(&p.m);
    EXPECT_FALSE(owner.read_only());
    EXPECT_FALSE(owner.is_copied());
    auto ov = owner.view_mut();
    ASSERT_TRUE(ov.is_ok()) << ov.status().to_string();
    ReduceDescriptor d;
    d.shape = ov->shape;
    auto plan = ReducePlan::select(Stream::cpu(), d).value();
    float sum = 0;
    ASSERT_TRUE(plan.run(Stream::cpu(), Workspace::none(), {*ov, TensorMut::contiguous(&sum, Device::cpu(), {}, 1)}).is_ok());
    EXPECT_EQ(sum, 12.f);
    DLManagedTensorVersionedOwner moved = std::move(owner);
    EXPECT_EQ(owner.get(), nullptr);
    EXPECT_FALSE(owner.read_only());  // empty
    moved.reset(&p.m);  // the same tensor again: the old one's deleter runs first
    EXPECT_EQ(p.deleted, 1);
  }
  EXPECT_EQ(p.deleted, 2);
  DLManagedTensorVersionedOwner kept(&p.m);
  EXPECT_EQ(kept.release(), &p.m);
  EXPECT_EQ(p.deleted, 2);
}
#else
TEST(Conveniences, DLManagedTensorVersioned) { GTEST_SKIP() << "DLManagedTensorVersioned needs a DLPack >= 1.0 dlpack.h"; }
#endif  // BARACUDA_HAS_DLPACK_VERSIONED
#endif  // BARACUDA_HAS_DLPACK
