// Machinery of the contract suite (tests/contract/suite.hpp): what a plan's
// traits describe and how the suite turns that into real calls.
//
//  * Slot<Args>: one tensor of a plan's argument struct: its name, role (input,
//    output, in-out, or an optional tensor this descriptor does not use), dtype,
//    shape, how to store a view into Args, the input an output may be in place
//    of, and optionally how to fill it (positions, cu_seqlens need meaningful
//    values). A list argument (std::vector of views) gets one slot per entry,
//    bound by a capturing lambda (optim_traits.hpp, adafactor_traits.hpp).
//  * In-place plans (the optimizers: a tensor read and updated): role InOut is
//    filled with values like an input and written like an output; Call keeps
//    its initial bytes and restore() puts them back, which run_sync() does
//    before every run, so reruns start from the same values and are comparable.
//    The poison checks do not apply to its values (they are read): an error or
//    a skipped run must leave it equal to its initial bytes instead; its gaps
//    (in the gapped layout) must keep their poison. Two slot flags go with it:
//    `dense` (the plan takes only dense row-major views: the gapped layout
//    keeps the view whole, and the fuzz expects an error for any other layout
//    of a non-empty view) and `written_when_empty` (an output a zero-size
//    problem still writes: the norm of an empty list; ZeroSizeProblems and
//    SkuForMatchesRun's "empty" variant then do not apply to that problem).
//  * GuardedBuffer: host or device memory with guard zones of a known byte
//    pattern before and after the payload. On the host under AddressSanitizer
//    the guard zones are also poisoned, so a read of them aborts too.
//  * Call<Traits>: a plan's arguments bound to guarded buffers (inputs filled
//    with values, outputs poisoned), the workspace, and helpers to read the
//    outputs back as raw logical bytes and to check guards and gaps.
//  * names_plan<Traits>(status): the error message starts with the plan's name.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <string_view>
#include <vector>

#include "baracuda/baracuda.hpp"
#include "support/tensor_utils.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define BT_CONTRACT_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define BT_CONTRACT_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define BT_CONTRACT_POISON(p, n) ((void)(p), (void)(n))
#define BT_CONTRACT_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

namespace contract {

using baracuda::Device;
using baracuda::Dims;
using baracuda::DType;
using baracuda::Status;
using baracuda::StatusCode;
using baracuda::Stream;
using baracuda::TensorMut;
using baracuda::TensorRef;
using baracuda::Workspace;
using bt::Rng;

// ---------------------------------------------------------------------------
// Slots
// ---------------------------------------------------------------------------
enum class Role { Input, Output, Unused, InOut };
// Whether the plan writes a tensor of this role (an output, or an in-out).
inline bool writes(Role r) { return r == Role::Output || r == Role::InOut; }

template <class Args>
struct Slot {
  const char* name = "";
  Role role = Role::Input;
  DType dtype = DType::F32;
  Dims shape;
  // Stores the view into Args. A std::function so that a plan's traits can
  // also set what travels beside the tensors (the elementwise plans' host
  // scalar values, fixed per descriptor) when the output is bound.
  std::function<void(Args&, const TensorMut&)> bind;
  bool optional = false;              // the descriptor decides whether it is used
  // Output: the input whose exact view it may be; several inputs comma-separated
  // ("a,b": the output may be exactly a or exactly b). See in_place_allowed().
  const char* in_place_of = nullptr;
  bool values_checked = false;        // the plan validates its values (cu_seqlens): bad values are an error
  // Output in the gapped layout: the trailing axes kept together (contiguous)
  // before the gap; > 1 for a plan whose CUDA kernels need a multi-axis block
  // contiguous (the norms' normalized axes).
  int gap_block = 1;
  // The plan takes this tensor only dense row-major (strides of every axis of
  // extent != 1 row-major): a gapped layout keeps its whole view contiguous,
  // and the fuzz expects any other layout of a non-empty view to be refused.
  bool dense = false;
  // An output (or in-out) that a zero-size problem still writes (the norm of
  // an empty list is 0): zero_size_descs may leave it non-empty.
  bool written_when_empty = false;
  // Input values in logical (row-major) order; n values. Default: uniform in
  // [-1, 1) rounded to the dtype, never all zero.
  std::function<void(Rng&, std::vector<double>&)> values;
};

template <class Args>
Slot<Args> input(const char* name, DType t, Dims shape, void (*bind)(Args&, const TensorMut&)) {
  Slot<Args> s;
  s.name = name;
  s.role = Role::Input;
  s.dtype = t;
  s.shape = shape;
  s.bind = bind;
  return s;
}
template <class Args>
Slot<Args> output(const char* name, DType t, Dims shape, void (*bind)(Args&, const TensorMut&),
                  const char* in_place_of = nullptr) {
  Slot<Args> s = input<Args>(name, t, shape, bind);
  s.role = Role::Output;
  s.in_place_of = in_place_of;
  return s;
}
// A tensor the plan reads and updates in place (see the header comment).
template <class Args>
Slot<Args> inout(const char* name, DType t, Dims shape, void (*bind)(Args&, const TensorMut&)) {
  Slot<Args> s = input<Args>(name, t, shape, bind);
  s.role = Role::InOut;
  return s;
}
// Whether output slot `out` may be exactly the view of the input named `input`
// (its in_place_of lists that name).
template <class Args>
bool in_place_allowed(const Slot<Args>& out, std::string_view input) {
  if (!out.in_place_of) return false;
  std::string_view list = out.in_place_of;
  while (!list.empty()) {
    const size_t comma = list.find(',');
    if (list.substr(0, comma) == input) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}
// An optional tensor: an input when `used`, else Unused (its shape is what it
// would have, so a test can give a plausible view the plan must refuse).
template <class Args>
Slot<Args> optional_input(bool used, const char* name, DType t, Dims shape, void (*bind)(Args&, const TensorMut&)) {
  Slot<Args> s = input<Args>(name, t, shape, bind);
  s.role = used ? Role::Input : Role::Unused;
  s.optional = true;
  return s;
}

// ---------------------------------------------------------------------------
// Error messages
// ---------------------------------------------------------------------------
inline bool starts_with_name(const std::string& msg, std::string_view name) {
  if (msg.size() <= name.size() || msg.compare(0, name.size(), name) != 0) return false;
  const char c = msg[name.size()];
  return c == ':' || c == ' ';
}

template <class Traits>
::testing::AssertionResult names_plan(const Status& st) {
  if (st.is_ok()) return ::testing::AssertionFailure() << "expected an error from " << Traits::kName << ", got Ok";
  if (!starts_with_name(st.message(), Traits::kName))
    return ::testing::AssertionFailure() << "error message does not start with \"" << Traits::kName
                                         << ":\": " << st.to_string();
  return ::testing::AssertionSuccess();
}

template <class Traits>
::testing::AssertionResult is_plan_error(const Status& st, StatusCode code) {
  auto r = names_plan<Traits>(st);
  if (!r) return r;
  if (st.code() != code)
    return ::testing::AssertionFailure() << "expected " << baracuda::status_code_name(code) << ", got "
                                         << st.to_string();
  return ::testing::AssertionSuccess();
}

// ---------------------------------------------------------------------------
// GuardedBuffer
// ---------------------------------------------------------------------------
class GuardedBuffer {
 public:
  static constexpr size_t kGuard = 256;  // keeps the payload 256-byte aligned
  static constexpr uint8_t kGuardByte = 0xa5;

  GuardedBuffer(Device dev, size_t payload_bytes) : dev_(dev), payload_(payload_bytes) {
    total_ = (kGuard + payload_bytes + kGuard + 255) / 256 * 256;
    if (dev.is_cpu()) {
      host_ = static_cast<uint8_t*>(std::aligned_alloc(256, total_));
      if (!host_) throw std::bad_alloc();
      std::memset(host_, kGuardByte, total_);
      poison_guards();
    } else {
      dev_buf_ = baracuda::Buffer(dev, total_);
      expect_ok(dev_buf_.fill_bytes(kGuardByte), "fill guards");
    }
  }
  ~GuardedBuffer() {
    if (host_) {
      BT_CONTRACT_UNPOISON(host_, total_);
      std::free(host_);
    }
  }
  GuardedBuffer(const GuardedBuffer&) = delete;
  GuardedBuffer& operator=(const GuardedBuffer&) = delete;

  Device device() const { return dev_; }
  size_t payload_bytes() const { return payload_; }
  uint8_t* payload() { return base() + kGuard; }
  const uint8_t* payload() const { return base() + kGuard; }

  void write(const void* src, size_t bytes, size_t offset = 0) {
    if (bytes == 0) return;
    if (offset + bytes > payload_) throw std::out_of_range("GuardedBuffer::write past the payload");
    if (host_) std::memcpy(payload() + offset, src, bytes);
    else expect_ok(dev_buf_.copy_from_host(src, bytes, kGuard + offset), "upload");
  }
  void fill(uint8_t byte) {
    std::vector<uint8_t> v(payload_, byte);
    write(v.data(), v.size());
  }
  std::vector<uint8_t> read() const {
    std::vector<uint8_t> v(payload_);
    if (payload_ == 0) return v;
    if (host_) std::memcpy(v.data(), payload(), payload_);
    else expect_ok(dev_buf_.copy_to_host(v.data(), payload_, kGuard), "download");
    return v;
  }
  // Empty when both guard zones still hold kGuardByte, else what was damaged.
  std::string check_guards() const {
    std::vector<uint8_t> all(total_);
    if (host_) {
      BT_CONTRACT_UNPOISON(host_, total_);
      std::memcpy(all.data(), host_, total_);
      const_cast<GuardedBuffer*>(this)->poison_guards();
    } else {
      expect_ok(dev_buf_.copy_to_host(all.data(), total_), "download guards");
    }
    size_t before = 0, after = 0, first_before = 0, last_after = 0;
    for (size_t i = 0; i < kGuard; ++i)
      if (all[i] != kGuardByte) {
        if (before++ == 0) first_before = i;
      }
    for (size_t i = kGuard + payload_; i < total_; ++i)
      if (all[i] != kGuardByte) {
        ++after;
        last_after = i;
      }
    if (!before && !after) return "";
    std::string s;
    if (before)
      s += std::to_string(before) + " byte(s) before the buffer overwritten (first " +
           std::to_string(kGuard - first_before) + " bytes before it); ";
    if (after)
      s += std::to_string(after) + " byte(s) after the buffer overwritten (up to " +
           std::to_string(last_after - kGuard - payload_ + 1) + " bytes past its end)";
    return s;
  }

 private:
  static void expect_ok(const Status& st, const char* what) {
    if (!st.is_ok()) throw std::runtime_error(std::string("GuardedBuffer ") + what + ": " + st.to_string());
  }
  uint8_t* base() { return host_ ? host_ : static_cast<uint8_t*>(dev_buf_.data()); }
  const uint8_t* base() const { return host_ ? host_ : static_cast<const uint8_t*>(dev_buf_.data()); }
  void poison_guards() {
    BT_CONTRACT_POISON(host_, kGuard);
    BT_CONTRACT_POISON(host_ + kGuard + payload_, total_ - kGuard - payload_);
  }

  Device dev_;
  size_t payload_ = 0, total_ = 0;
  uint8_t* host_ = nullptr;
  baracuda::Buffer dev_buf_;
};

// ---------------------------------------------------------------------------
// Layouts used by the suite (bt::Layout: shape, strides, offset, storage)
// ---------------------------------------------------------------------------
// Gaps before, between rows and after the view: the last `block` axes stay
// contiguous and are followed by 8 elements of gap (block 1: the last extent
// padded by 8, so a row of a multiple of 8 keeps 16-byte alignment, as the
// CUDA attention paths need); the view starts at element 8 and the storage
// ends 8 elements after it.
inline bt::Layout gapped(const Dims& shape, int block = 1) {
  bt::Layout L;
  L.shape = shape;
  L.strides = Dims::of_rank(shape.rank);
  int64_t acc = 1;
  const int pad_at = shape.rank - std::clamp(block, 1, std::max(shape.rank, 1));
  for (int i = shape.rank - 1; i >= 0; --i) {
    L.strides[i] = acc;
    if (i == pad_at) acc = acc * (i == shape.rank - 1 ? shape[i] : std::max<int64_t>(shape[i], 1)) + 8;
    else acc *= std::max<int64_t>(shape[i], 1);
  }
  L.offset = 8;
  L.storage = 8 + (baracuda::shape_numel(shape) == 0 ? 0 : L.span()) + 8;
  L.name = "gapped";
  return L;
}

// Byte pattern an output is poisoned with before a run (NaN in every FP dtype,
// a huge value in integers), and a second, finite one.
inline constexpr uint8_t kPoison = 0xff;
inline constexpr uint8_t kAltPoison = 0x5a;

// ---------------------------------------------------------------------------
// Call: a plan's arguments bound to guarded buffers
// ---------------------------------------------------------------------------
enum class OutputLayout { Contiguous, Gapped };

template <class Traits>
struct Call {
  using Args = typename Traits::Args;
  Device device;
  std::vector<Slot<Args>> slots;
  std::vector<std::unique_ptr<GuardedBuffer>> bufs;  // per slot; null when not given
  std::vector<bt::Layout> layouts;
  std::vector<TensorMut> views;                      // default view when not given
  std::vector<std::vector<uint8_t>> initial;         // InOut: the whole buffer as allocated (restore())
  std::unique_ptr<GuardedBuffer> ws;
  size_t ws_bytes = 0;
  Args args{};

  int index_of(std::string_view name) const {
    for (size_t i = 0; i < slots.size(); ++i)
      if (name == slots[i].name) return static_cast<int>(i);
    return -1;
  }
  void rebind() {
    args = Args{};
    for (size_t i = 0; i < slots.size(); ++i)
      if (views[i].data != nullptr || slots[i].role != Role::Unused) slots[i].bind(args, views[i]);
  }
  Workspace workspace() const { return ws_bytes ? Workspace(ws->payload(), ws_bytes) : Workspace::none(); }

  // Gives slot i a fresh buffer with layout L; inputs get values, outputs `poison`.
  void allocate(size_t i, const bt::Layout& L, Rng& rng, uint8_t poison = kPoison) {
    const Slot<Args>& s = slots[i];
    const size_t esz = baracuda::dtype_size(s.dtype);
    bufs[i] = std::make_unique<GuardedBuffer>(device, static_cast<size_t>(L.storage) * esz);
    layouts[i] = L;
    if (s.role == Role::Output) {
      bufs[i]->fill(poison);
    } else {
      bt::HostBuffer h(s.dtype, L.storage);
      h.fill_bytes(s.role == Role::InOut ? poison : 0);  // an in-out's gaps hold the poison
      std::vector<double> v(static_cast<size_t>(L.numel()));
      if (s.values) s.values(rng, v);
      else v = bt::random_values(s.dtype, L.numel(), rng);
      bt::scatter(h, L, v);
      bufs[i]->write(h.data(), h.bytes());
      if (s.role == Role::InOut) initial[i].assign(static_cast<const uint8_t*>(h.data()), static_cast<const uint8_t*>(h.data()) + h.bytes());
    }
    views[i] = TensorMut(bufs[i]->payload() + L.offset * static_cast<int64_t>(esz), s.dtype, device, L.shape, L.strides,
                         L.storage - L.offset);
  }
  // Raw bytes of slot i's logical elements (row-major), from its buffer now.
  std::vector<uint8_t> logical_bytes(size_t i) const {
    const bt::Layout& L = layouts[i];
    const size_t esz = baracuda::dtype_size(slots[i].dtype);
    const std::vector<uint8_t> all = bufs[i]->read();
    std::vector<uint8_t> out(static_cast<size_t>(L.numel()) * esz);
    for (int64_t e = 0; e < L.numel(); ++e)
      std::memcpy(out.data() + static_cast<size_t>(e) * esz, all.data() + static_cast<size_t>(L.offset_of(e)) * esz, esz);
    return out;
  }
  // Empty when every byte of slot i's storage outside its view still holds `poison`.
  std::string gap_damage(size_t i, uint8_t poison) const {
    bt::HostBuffer h(slots[i].dtype, layouts[i].storage);
    const std::vector<uint8_t> all = bufs[i]->read();
    if (!all.empty()) std::memcpy(h.data(), all.data(), all.size());
    return bt::check_gaps(h, layouts[i], poison);
  }
  // Empty when no guard zone of any buffer (and the workspace) was touched.
  std::string guard_damage() const {
    std::string s;
    for (size_t i = 0; i < slots.size(); ++i)
      if (bufs[i]) {
        const std::string g = bufs[i]->check_guards();
        if (!g.empty()) s += std::string(slots[i].name) + ": " + g + "; ";
      }
    if (ws) {
      const std::string g = ws->check_guards();
      if (!g.empty()) s += "workspace: " + g;
    }
    return s;
  }
  bool used(size_t i) const { return slots[i].role != Role::Unused; }
  bool is_output(size_t i) const { return slots[i].role == Role::Output; }
  bool is_inout(size_t i) const { return slots[i].role == Role::InOut; }
  bool is_written(size_t i) const { return writes(slots[i].role); }
  // Puts every in-out buffer back to its initial bytes (before each run).
  void restore() const {
    for (size_t i = 0; i < slots.size(); ++i)
      if (bufs[i] && is_inout(i)) bufs[i]->write(initial[i].data(), initial[i].size());
  }
  // Empty when every in-out buffer still holds its initial bytes.
  std::string inouts_changed() const {
    std::string s;
    for (size_t i = 0; i < slots.size(); ++i)
      if (bufs[i] && is_inout(i) && bufs[i]->read() != initial[i]) s += std::string(slots[i].name) + " was written; ";
    return s;
  }
};

// Binds every used slot of `plan` on `device`: inputs contiguous with random
// values, outputs poisoned with `out_layout` (in-outs: values, in `out_layout`,
// gaps poisoned); a workspace of workspace_size().
template <class Traits>
Call<Traits> make_call(const typename Traits::Plan& plan, Device device, Rng& rng,
                       OutputLayout out_layout = OutputLayout::Contiguous, uint8_t poison = kPoison) {
  Call<Traits> c;
  c.device = device;
  c.slots = Traits::slots(plan);
  const size_t n = c.slots.size();
  c.bufs.resize(n);
  c.layouts.resize(n);
  c.views.resize(n);
  c.initial.resize(n);
  for (size_t i = 0; i < n; ++i) {
    if (!c.used(i)) continue;
    const Slot<typename Traits::Args>& s = c.slots[i];
    const bool gap = c.is_written(i) && out_layout == OutputLayout::Gapped;
    const int block = s.dense ? std::max(s.shape.rank, 1) : s.gap_block;  // dense: the whole view stays contiguous
    c.allocate(i, gap ? gapped(s.shape, block) : bt::contiguous(s.shape), rng, poison);
  }
  c.ws_bytes = plan.workspace_size();
  c.ws = std::make_unique<GuardedBuffer>(device, c.ws_bytes);
  c.rebind();
  return c;
}

}  // namespace contract
