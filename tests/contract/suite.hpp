// The contract suite: the rules of DESIGN.md §1 checked for every plan.
//
// A plan joins with a traits struct (tests/contract/<family>_traits.hpp) and
// one line in each of tests/contract/cpu_<family>.cpp and cuda_<family>.cpp:
//   INSTANTIATE_TYPED_TEST_SUITE_P(ReducePlan, PlanContract, ::testing::Types<ReduceTraits>);
// (the prefix is the plan's name, so tests read "ReducePlan/PlanContract/0.WorkspaceRule"
// in gtest and "cpu.ReducePlan.WorkspaceRule<contract::ReduceTraits>" in ctest). A
// traits struct provides:
//
//   using Plan, Desc, Args;                 the plan and its descriptor / argument types
//   static constexpr const char* kName;     the name every error message starts with
//   static Desc valid_desc(Rng&);           a small valid problem; across seeds it uses every
//                                           optional tensor and leaves each one unused
//   static std::vector<Desc> zero_size_descs();    valid problems whose outputs are all empty
//   static std::vector<std::pair<const char*, Desc>> invalid_descs();  select() must refuse
//   static std::vector<Desc> workspace_descs();    CUDA: problems expected to need scratch ({} if none)
//   static std::vector<Slot<Args>> slots(const Plan&);   every tensor of Args for this plan
//   static std::vector<DescMutator<Desc>> desc_mutators();  the fuzz's descriptor mutations
//   static std::string describe(const Desc&);      for failure messages and reproducers
//
// PlanContract (CPU, runs everywhere):
//   RejectsTensorOnAnotherDevice, RejectsStreamOfAnotherDevice, WorkspaceRule,
//   ZeroSizeProblemsWriteNothing, PoisonedOutputsFullyWritten, RunTwiceBitIdentical,
//   OutputsMustNotAliasInputs, OptionalTensorsMatchDescriptor, ErrorsNameThePlan,
//   FuzzDescriptorsAndViews (fuzz.hpp).
// PlanContractCuda (skips without a GPU):
//   RejectsHostTensorAndCpuStream, WorkspaceTooSmall, ZeroSizeProblemsWriteNothing,
//   PoisonedOutputsFullyWrittenAndRunTwice, GraphCaptureReplayMatchesDirectRun.
// Checks that fail on today's code are listed in known_failures.hpp.
//
// In-place plans (harness.hpp: Role::InOut, Slot::dense, Slot::written_when_empty):
// run_sync() restores every in-out tensor before the run, so "run twice",
// "poisoned outputs" (whose in-outs are compared like outputs, their gaps
// keep the poison), the strict workspace and the graph replay compare runs
// that start from the same values; "untouched" means poison for an output and
// the initial bytes for an in-out; an in-out counts as written in the
// aliasing check (it may alias nothing).
//
// This header holds the checks both suites share; cpu_suite.hpp and
// cuda_suite.hpp define the suites (each binary instantiates only its own).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "contract/fuzz.hpp"
#include "contract/harness.hpp"
#include "contract/known_failures.hpp"
#include "support/cuda_test_utils.hpp"

#ifdef BARACUDA_WITH_CUDA
#include <cuda_runtime.h>
#endif

namespace contract {

template <class T>
typename T::Plan select_or_die(const Stream& s, const typename T::Desc& d) {
  auto p = T::Plan::select(s, d);
  if (!p) throw std::runtime_error(std::string(T::kName) + ": select failed for " + T::describe(d) + ": " + p.status().to_string());
  return *p;
}

// Restores the in-outs first (see the header comment).
template <class T>
Status run_sync(const typename T::Plan& plan, const Stream& s, const Call<T>& c) {
  c.restore();
  Status st = plan.run(s, c.workspace(), c.args);
  if (st.is_ok()) st = baracuda::synchronize(s);
  return st;
}

// Every output buffer still holds `poison` everywhere, every in-out its initial bytes.
template <class T>
std::string outputs_untouched(const Call<T>& c, uint8_t poison) {
  for (size_t i = 0; i < c.slots.size(); ++i) {
    if (!c.bufs[i] || !c.is_output(i)) continue;
    for (uint8_t b : c.bufs[i]->read())
      if (b != poison) return std::string(c.slots[i].name) + " was written";
  }
  return c.inouts_changed();
}

// A zero-size problem whose outputs are all empty (no used written_when_empty slot has elements).
template <class T>
bool writes_nothing(const Call<T>& c) {
  for (size_t i = 0; i < c.slots.size(); ++i)
    if (c.used(i) && c.slots[i].written_when_empty && c.views[i].numel() > 0) return false;
  return true;
}

// ---- checks shared by the CPU and CUDA suites ---------------------------------------
// sku_for(stream, ws, args) makes run()'s checks with run()'s errors and names
// what run() launches: on the CPU exactly sku(); on CUDA the same backend
// family of routes (the variant may differ where run() chooses from the views);
// an empty problem names variant "empty"; and nothing is written.
template <class T>
void check_sku_for(const Stream& stream) {
  Rng rng(bt::fresh_seed());
  for (int rep = 0; rep < 3; ++rep) {
    const auto desc = T::valid_desc(rng);
    const auto plan = select_or_die<T>(stream, desc);
    auto c = make_call<T>(plan, stream.device(), rng);
    auto s = plan.sku_for(stream, c.workspace(), c.args);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string() << "; " << T::describe(desc);
    EXPECT_EQ(outputs_untouched(c, kPoison), "") << "sku_for wrote an output";
    EXPECT_EQ(s->op, plan.sku().op);
    EXPECT_EQ(s->dtype, plan.sku().dtype);
    if (stream.is_cpu()) {
      // sku_for names what run() launches: nothing ("empty") when every output
      // is empty, which a fuzzed descriptor with a zero extent gives.
      bool outputs_empty = true;
      for (size_t i = 0; i < c.slots.size(); ++i)
        if (c.used(i) && c.is_written(i) && c.views[i].numel() > 0) outputs_empty = false;
      baracuda::KernelSku want = plan.sku();
      if (outputs_empty) want.variant = "empty";
      EXPECT_EQ(s->to_string(), want.to_string()) << T::describe(desc);
    }
    // The errors run() gives, in run()'s order: stream first, then the arguments, then the workspace.
    const Stream other = stream.is_cpu() ? Stream::cuda(0) : Stream::cpu();
    EXPECT_EQ(plan.sku_for(other, c.workspace(), c.args).status().to_string(),
              plan.run(other, c.workspace(), c.args).to_string());
    if (plan.workspace_size() > 0) {
      const Workspace short_ws(c.ws->payload(), plan.workspace_size() - 1);
      EXPECT_EQ(plan.sku_for(stream, short_ws, c.args).status().to_string(),
                plan.run(stream, short_ws, c.args).to_string());
    }
    EXPECT_EQ(outputs_untouched(c, kPoison), "");
    const Status st = run_sync<T>(plan, stream, c);
    EXPECT_TRUE(st.is_ok()) << st.to_string();
  }
  for (const auto& desc : T::zero_size_descs()) {
    const auto plan = select_or_die<T>(stream, desc);
    auto c = make_call<T>(plan, stream.device(), rng);
    auto s = plan.sku_for(stream, c.workspace(), c.args);
    ASSERT_TRUE(s.is_ok()) << s.status().to_string() << "; " << T::describe(desc);
    if (writes_nothing(c)) EXPECT_EQ(s->variant, "empty") << T::describe(desc);
  }
}

template <class T>
void check_wrong_device(const Stream& stream, Device other) {
  Rng rng(bt::fresh_seed());
  int tried = 0;
  for (int rep = 0; rep < 4; ++rep) {
    const auto desc = T::valid_desc(rng);
    const auto plan = select_or_die<T>(stream, desc);
    auto c = make_call<T>(plan, stream.device(), rng);
    for (size_t i = 0; i < c.slots.size(); ++i) {
      if (!c.used(i) || c.views[i].numel() == 0) continue;
      const TensorMut saved = c.views[i];
      c.views[i].device = other;
      c.rebind();
      const Status st = run_sync<T>(plan, stream, c);
      EXPECT_TRUE(is_plan_error<T>(st, StatusCode::InvalidProblem))
          << c.slots[i].name << " on " << other.to_string() << "; " << T::describe(desc);
      EXPECT_EQ(outputs_untouched(c, kPoison), "") << "after refusing " << c.slots[i].name << " on " << other.to_string();
      c.views[i] = saved;
      c.rebind();
      ++tried;
    }
  }
  EXPECT_GT(tried, 0) << "no tensor with elements in " << 4 << " valid problems";
}

template <class T>
void check_workspace_rule(const Stream& stream, const std::vector<typename T::Desc>& descs) {
  int with_ws = 0;
  for (const auto& desc : descs) {
    Rng rng(bt::fresh_seed());
    const auto plan = select_or_die<T>(stream, desc);
    auto c = make_call<T>(plan, stream.device(), rng);
    const size_t need = plan.workspace_size();
    if (need == 0) {
      // No scratch: none, (null, 0) and a stray pointer are all accepted.
      for (const Workspace w : {Workspace::none(), Workspace(nullptr, 0), Workspace(c.ws->payload(), 0)}) {
        const Status st = plan.run(stream, w, c.args);
        EXPECT_TRUE(st.is_ok()) << st.to_string() << "; " << T::describe(desc);
      }
      continue;
    }
    ++with_ws;
    const Status shortst = plan.run(stream, Workspace(c.ws->payload(), need - 1), c.args);
    EXPECT_TRUE(is_plan_error<T>(shortst, StatusCode::WorkspaceTooSmall)) << T::describe(desc);
    EXPECT_EQ(shortst.needed(), need);
    EXPECT_EQ(shortst.got(), need - 1);
    const Status nullst = plan.run(stream, Workspace(nullptr, need), c.args);
    EXPECT_TRUE(is_plan_error<T>(nullst, StatusCode::WorkspaceTooSmall)) << "null workspace; " << T::describe(desc);
    EXPECT_EQ(nullst.needed(), need);
    EXPECT_EQ(nullst.got(), 0u);
    EXPECT_EQ(outputs_untouched(c, kPoison), "");
    const Status ok = run_sync<T>(plan, stream, c);
    EXPECT_TRUE(ok.is_ok()) << ok.to_string();
    EXPECT_EQ(c.guard_damage(), "");
  }
  if (stream.is_cuda() && with_ws == 0) GTEST_SKIP() << "no descriptor tried needs a workspace on this device";
}

template <class T>
void check_zero_size(const Stream& stream) {
  const auto descs = T::zero_size_descs();
  ASSERT_FALSE(descs.empty());
  for (const auto& desc : descs) {
    for (const bool null_empty : {false, true}) {
      Rng rng(bt::fresh_seed());
      const auto plan = select_or_die<T>(stream, desc);
      auto c = make_call<T>(plan, stream.device(), rng);
      for (size_t i = 0; i < c.slots.size(); ++i) {
        if (!c.used(i)) continue;
        if (c.is_output(i) && !c.slots[i].written_when_empty) {
          ASSERT_EQ(c.views[i].numel(), 0) << "traits: " << c.slots[i].name << " is not empty";
        }
        if (null_empty && c.views[i].numel() == 0) c.views[i].data = nullptr;
      }
      c.rebind();
      const Status st = run_sync<T>(plan, stream, c);
      EXPECT_TRUE(st.is_ok()) << (null_empty ? "null empty views: " : "") << st.to_string() << "; " << T::describe(desc);
      EXPECT_EQ(c.guard_damage(), "") << T::describe(desc);
      for (size_t i = 0; i < c.slots.size(); ++i)  // an in-out with elements keeps its values
        if (c.bufs[i] && c.is_inout(i) && !c.slots[i].written_when_empty && c.views[i].numel() > 0) {
          EXPECT_TRUE(c.bufs[i]->read() == c.initial[i]) << c.slots[i].name << " was written; " << T::describe(desc);
        }
    }
  }
}

// Outputs in gapped layouts, poisoned with NaN (0xff) and then with a finite
// pattern (0x5a): both runs succeed, every logical element is equal bit for
// bit (an element left unwritten would keep the differing poison), gaps keep
// their poison, guards and inputs are untouched. In-outs (gapped too, gaps
// poisoned with 0xff) start both runs from their initial values and must
// give the same bits.
template <class T>
void check_fully_written(const Stream& stream, int reps) {
  Rng rng(bt::fresh_seed());
  for (int rep = 0; rep < reps; ++rep) {
    const auto desc = T::valid_desc(rng);
    const auto plan = select_or_die<T>(stream, desc);
    auto c = make_call<T>(plan, stream.device(), rng, OutputLayout::Gapped);
    std::vector<std::vector<uint8_t>> inputs(c.slots.size()), first(c.slots.size());
    for (size_t i = 0; i < c.slots.size(); ++i)
      if (c.bufs[i] && !c.is_written(i)) inputs[i] = c.bufs[i]->read();
    for (const uint8_t poison : {kPoison, kAltPoison}) {
      for (size_t i = 0; i < c.slots.size(); ++i)
        if (c.bufs[i] && c.is_output(i)) c.bufs[i]->fill(poison);
      const Status st = run_sync<T>(plan, stream, c);
      ASSERT_TRUE(st.is_ok()) << st.to_string() << "; " << T::describe(desc);
      EXPECT_EQ(c.guard_damage(), "") << T::describe(desc);
      for (size_t i = 0; i < c.slots.size(); ++i) {
        if (!c.bufs[i]) continue;
        if (!c.is_written(i)) {
          EXPECT_TRUE(c.bufs[i]->read() == inputs[i]) << "input " << c.slots[i].name << " modified; " << T::describe(desc);
          continue;
        }
        EXPECT_EQ(c.gap_damage(i, c.is_inout(i) ? kPoison : poison), "") << c.slots[i].name << "; " << T::describe(desc);
        const auto bytes = c.logical_bytes(i);
        if (poison == kPoison) first[i] = bytes;
        else
          EXPECT_TRUE(bytes == first[i]) << c.slots[i].name
                                         << ": elements differ between a NaN-poisoned and a 0x5a-poisoned run "
                                            "(unwritten or non-deterministic); "
                                         << T::describe(desc);
      }
    }
  }
}

// The second run over the first run's outputs (not re-poisoned) gives the same
// bits: a plan never reads or accumulates into its outputs (in-outs: both runs
// start from their restored initial values).
template <class T>
void check_run_twice(const Stream& stream, int reps) {
  Rng rng(bt::fresh_seed());
  for (int rep = 0; rep < reps; ++rep) {
    const auto desc = T::valid_desc(rng);
    const auto plan = select_or_die<T>(stream, desc);
    auto c = make_call<T>(plan, stream.device(), rng);
    std::vector<std::vector<uint8_t>> first(c.slots.size());
    for (int run = 0; run < 2; ++run) {
      const Status st = run_sync<T>(plan, stream, c);
      ASSERT_TRUE(st.is_ok()) << st.to_string() << "; " << T::describe(desc);
      for (size_t i = 0; i < c.slots.size(); ++i) {
        if (!c.bufs[i] || !c.is_written(i)) continue;
        if (run == 0) first[i] = c.bufs[i]->read();
        else EXPECT_TRUE(c.bufs[i]->read() == first[i]) << c.slots[i].name << " differs on the second run; " << T::describe(desc);
      }
    }
    EXPECT_EQ(c.guard_damage(), "");
  }
}

}  // namespace contract
