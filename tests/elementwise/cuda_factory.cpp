// FactoryPlan on CUDA against the CPU reference, bit for bit (the two compute
// every value with the same arithmetic, factory_math.hpp; a NaN need only meet
// a NaN): every dtype x fill values (ordinary, fractional, NaN, out of range)
// x arange and linspace cases (fractional steps, negative steps, f16 / bf16
// rounding, long sequences) x outputs contiguous, every-other, padded and
// transposed (the gaps must keep their poison on both); 2^24-element outputs;
// 64-bit indexing (a view reaching past 2^31 elements, and a fill of 2^31 + 64
// elements); run twice bit-identical; sku / sku_for variants.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/cuda_test_utils.hpp"
#include "support/tensor_utils.hpp"

using namespace baracuda;

namespace {

using bt::HostBuffer, bt::kGpu, bt::kInf, bt::kNaN;
const Stream kCpu = Stream::cpu();

const DType kAll[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32,
                      DType::I64, DType::I8,  DType::U8,  DType::I16,  DType::Bool};

FactoryDescriptor fill(DType t, Dims shape, Scalar v) { return FactoryDescriptor::fill(t, shape, v); }
FactoryDescriptor arange(DType t, Scalar start, Scalar end, Scalar step) {
  return FactoryDescriptor::arange(t, start, end, step);
}
FactoryDescriptor linspace(DType t, Scalar start, Scalar end, int64_t steps) {
  return FactoryDescriptor::linspace(t, start, end, steps);
}

std::string describe(const FactoryDescriptor& d) {
  auto s = [](const std::optional<Scalar>& v) {
    if (!v) return std::string("-");
    return v->dtype == DType::F64 ? std::to_string(v->f) : std::to_string(v->i);
  };
  return std::string(op_name(d.op)) + " " + std::string(dtype_name(d.dtype)) + " shape " + d.shape.to_string() + " value " +
         s(d.value) + " start " + s(d.start) + " end " + s(d.end) + " step " + s(d.step) + " steps " +
         (d.steps ? std::to_string(*d.steps) : "-");
}

bool is_nan_element(const HostBuffer& b, int64_t i) { return is_floating_point(b.dtype()) && std::isnan(b.get(i)); }

// First element of the storage where a and b differ (bits; NaN meets any NaN), "" when none.
std::string first_difference(const HostBuffer& a, const HostBuffer& b) {
  const size_t esz = dtype_size(a.dtype());
  const auto* pa = static_cast<const uint8_t*>(a.data());
  const auto* pb = static_cast<const uint8_t*>(b.data());
  for (int64_t i = 0; i < a.size(); ++i) {
    if (std::memcmp(pa + i * esz, pb + i * esz, esz) == 0) continue;
    if (is_nan_element(a, i) && is_nan_element(b, i)) continue;
    return "storage element " + std::to_string(i) + ": cuda " + std::to_string(a.get(i)) + " vs cpu " +
           std::to_string(b.get(i));
  }
  return "";
}

// Runs d on the CPU and on the GPU into layout L (storage poisoned with 0x5a
// alike) and compares the whole storage; then runs the GPU again (bit-identical).
void compare(const FactoryDescriptor& d, const bt::Layout& L) {
  SCOPED_TRACE(describe(d) + " layout " + L.name);
  auto cpu = FactoryPlan::select(kCpu, d);
  auto gpu = FactoryPlan::select(kGpu, d, bt::bespoke());
  ASSERT_EQ(cpu.is_ok(), gpu.is_ok()) << cpu.status().to_string() << " / " << gpu.status().to_string();
  if (!cpu) return;
  ASSERT_EQ(cpu->output_shape(), L.shape);
  const DType t = d.dtype;
  const size_t esz = dtype_size(t);
  HostBuffer ref(t, L.storage);
  ref.fill_bytes(0x5a);
  Buffer dev = bt::to_device(ref, 16);
  const TensorMut host_view(static_cast<char*>(ref.data()) + L.offset * esz, t, Device::cpu(), L.shape, L.strides,
                            L.storage - L.offset);
  ASSERT_TRUE(cpu->run(kCpu, {}, {host_view}).is_ok());
  const TensorMut dev_view(static_cast<char*>(dev.data()) + L.offset * esz, t, Device::cuda(0), L.shape, L.strides,
                           L.storage - L.offset);
  auto sku = gpu->sku_for(kGpu, {}, {dev_view});
  ASSERT_TRUE(sku.is_ok()) << sku.status().to_string();
  if (L.numel() > 0) EXPECT_EQ(sku->variant, "index32");
  ASSERT_TRUE(gpu->run(kGpu, {}, {dev_view}).is_ok());
  ASSERT_TRUE(synchronize(kGpu).is_ok());
  const HostBuffer got = bt::to_host(dev, t, L.storage);
  EXPECT_EQ(first_difference(got, ref), "");
  ASSERT_TRUE(gpu->run(kGpu, {}, {dev_view}).is_ok());
  ASSERT_TRUE(synchronize(kGpu).is_ok());
  EXPECT_EQ(bt::to_host(dev, t, L.storage).raw(), got.raw()) << "second run differs";
}

std::vector<bt::Layout> layouts_of(const Dims& shape) {
  std::vector<bt::Layout> v = {bt::contiguous(shape), bt::every_other(shape), bt::padded(shape, 3)};
  if (shape.rank == 2) v.push_back(bt::transposed(shape));
  return v;
}

TEST(FactoryCuda, FillEveryDtypeAndLayout) {
  BT_SKIP_WITHOUT_GPU();
  const Scalar values[] = {Scalar(3), Scalar(-1.5), Scalar(kNaN), Scalar(1e10), Scalar(-kInf), Scalar(300.7),
                           Scalar(static_cast<long long>(INT64_MIN)), Scalar(true), Scalar(-0.0)};
  for (DType t : kAll)
    for (const Scalar& v : values)
      for (const Dims& shape : {Dims{37}, Dims{5, 7}, Dims{3, 4, 5}, Dims{}})
        for (const bt::Layout& L : layouts_of(shape)) compare(fill(t, shape, v), L);
}

std::vector<FactoryDescriptor> ranges(DType t) {
  return {arange(t, 0, 1.0, 0.1),       arange(t, 0.1, 8.0, 0.7),    arange(t, -3, 40, 1),
          arange(t, 100, -100, -7),     arange(t, 0, 5000, 3),       arange(t, 2.5, 1000.5, 0.25),
          arange(t, 1, 2.5, 0.5),       arange(t, 120, 140, 5),      arange(t, -2.7, 1, 1.9),
          linspace(t, -1, 1, 5),        linspace(t, 0, 10, 5),       linspace(t, 0, 15000, 5001),
          linspace(t, -100, 100, 4097), linspace(t, 0.1, 0.7, 7),    linspace(t, 2.9, 6.9, 5),
          linspace(t, 0, 1, 1),         linspace(t, 0, 1, 0),        linspace(t, 3, 3, 9),
          linspace(t, 10, 0, 4),        linspace(t, -kInf, kInf, 5), linspace(t, 1e30, -1e30, 33)};
}

TEST(FactoryCuda, ArangeAndLinspaceEveryDtype) {
  BT_SKIP_WITHOUT_GPU();
  for (DType t : kAll) {
    if (t == DType::Bool) continue;
    for (const FactoryDescriptor& d : ranges(t)) {
      auto plan = FactoryPlan::select(kCpu, d);
      if (!plan) continue;  // e.g. 15000 into i8: refused alike on both (compare() checks it for the others)
      const Dims shape = plan->output_shape();
      for (const bt::Layout& L : layouts_of(shape)) compare(d, L);
    }
  }
}

TEST(FactoryCuda, Large) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t n = int64_t{1} << 24;
  compare(arange(DType::F32, 0.5, static_cast<double>(n) * 0.75 + 0.5, 0.75), bt::contiguous(Dims{n}));
  compare(arange(DType::I32, -7, 3 * n - 7, 3), bt::contiguous(Dims{n}));
  compare(linspace(DType::BF16, -5, 5, n), bt::contiguous(Dims{n}));
  compare(linspace(DType::F16, 0, 1, n), bt::contiguous(Dims{n}));  // indices past 65519 are inf in f16
  compare(linspace(DType::F64, -1e6, 1e6, n), bt::contiguous(Dims{n}));
  compare(fill(DType::F16, {4096, 4096}, Scalar(0.1)), bt::transposed(Dims{4096, 4096}));
}

// 64-bit indices: a 1-D view whose reach passes 2^31 elements, and a fill of more than 2^31 elements.
TEST(FactoryCuda, Index64) {
  BT_SKIP_WITHOUT_GPU();
  const int64_t n = 70000, stride = 32768;  // reach 2.29e9 elements
  for (const FactoryDescriptor& d : {arange(DType::I8, 0, n, 1), linspace(DType::U8, 0, 255, n)}) {
    SCOPED_TRACE(describe(d));
    auto cpu = FactoryPlan::select(kCpu, d);
    auto gpu = FactoryPlan::select(kGpu, d, bt::bespoke());
    ASSERT_TRUE(cpu.is_ok() && gpu.is_ok());
    bt::Layout L;
    L.shape = Dims{n};
    L.strides = Dims{stride};
    L.storage = (n - 1) * stride + 1;
    L.name = "stride 32768";
    HostBuffer ref(d.dtype, L.storage);
    ref.fill_bytes(0x5a);
    Buffer dev = bt::to_device(ref);
    ASSERT_TRUE(cpu->run(kCpu, {}, {TensorMut(ref.data(), d.dtype, Device::cpu(), L.shape, L.strides, L.storage)}).is_ok());
    const TensorMut view(dev.data(), d.dtype, Device::cuda(0), L.shape, L.strides, L.storage);
    auto sku = gpu->sku_for(kGpu, {}, {view});
    ASSERT_TRUE(sku.is_ok());
    EXPECT_EQ(sku->variant, "index64");
    ASSERT_TRUE(gpu->run(kGpu, {}, {view}).is_ok());
    ASSERT_TRUE(synchronize(kGpu).is_ok());
    EXPECT_EQ(first_difference(bt::to_host(dev, d.dtype, L.storage), ref), "");
  }
  const int64_t big = (int64_t{1} << 31) + 64;
  auto gpu = FactoryPlan::select(kGpu, fill(DType::U8, {big}, Scalar(300)), bt::bespoke());
  ASSERT_TRUE(gpu.is_ok());
  EXPECT_EQ(gpu->sku().variant, "index64");
  Buffer dev(Device::cuda(0), static_cast<size_t>(big));
  ASSERT_TRUE(dev.fill_bytes(0).is_ok());
  ASSERT_TRUE(gpu->run(kGpu, {}, {TensorMut::contiguous(dev.data(), DType::U8, Device::cuda(0), Dims{big}, big)}).is_ok());
  ASSERT_TRUE(synchronize(kGpu).is_ok());
  const HostBuffer got = bt::to_host(dev, DType::U8, big);
  const auto* p = static_cast<const uint8_t*>(got.data());
  int64_t wrong = 0;
  for (int64_t i = 0; i < big; ++i) wrong += p[i] != 44;  // 300 wraps to 44
  EXPECT_EQ(wrong, 0);
}

}  // namespace
