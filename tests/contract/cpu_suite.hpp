// PlanContract: the CPU half of the contract suite (see suite.hpp), run everywhere.
#pragma once

#include "contract/fuzz.hpp"
#include "contract/suite.hpp"

namespace contract {

// ---- PlanContract: CPU --------------------------------------------------------------
template <class T>
class PlanContract : public ::testing::Test {};
TYPED_TEST_SUITE_P(PlanContract);

TYPED_TEST_P(PlanContract, RejectsTensorOnAnotherDevice) {
  check_wrong_device<TypeParam>(Stream::cpu(), Device::cuda(0));
}

TYPED_TEST_P(PlanContract, RejectsStreamOfAnotherDevice) {
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  const auto desc = T::valid_desc(rng);
  const auto plan = select_or_die<T>(Stream::cpu(), desc);
  auto c = make_call<T>(plan, Device::cpu(), rng);
  for (const Stream s : {Stream::cuda(0), Stream::cuda(1)}) {
    const Status st = plan.run(s, c.workspace(), c.args);
    EXPECT_TRUE(is_plan_error<T>(st, StatusCode::InvalidProblem)) << "CPU plan run on " << s.device().to_string();
  }
  EXPECT_EQ(outputs_untouched(c, kPoison), "");
}

TYPED_TEST_P(PlanContract, WorkspaceRule) {
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  std::vector<typename T::Desc> descs;
  for (int i = 0; i < 3; ++i) descs.push_back(T::valid_desc(rng));
  check_workspace_rule<T>(Stream::cpu(), descs);
}

TYPED_TEST_P(PlanContract, ZeroSizeProblemsWriteNothing) { check_zero_size<TypeParam>(Stream::cpu()); }

TYPED_TEST_P(PlanContract, SkuForMatchesRun) { check_sku_for<TypeParam>(Stream::cpu()); }

TYPED_TEST_P(PlanContract, PoisonedOutputsFullyWritten) { check_fully_written<TypeParam>(Stream::cpu(), 8); }

TYPED_TEST_P(PlanContract, RunTwiceBitIdentical) { check_run_twice<TypeParam>(Stream::cpu(), 4); }

// Every output against every input (and every other output), overlapping fully
// and shifted by one element, in one shared buffer: InvalidProblem, except an
// output that is exactly the input it may replace (documented in place), which
// must give the out-of-place result.
TYPED_TEST_P(PlanContract, OutputsMustNotAliasInputs) {
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  int pairs = 0, in_place = 0;
  bool has_input = false;
  for (int rep = 0; rep < 4; ++rep) {
    const auto desc = T::valid_desc(rng);
    const auto plan = select_or_die<T>(Stream::cpu(), desc);
    auto c = make_call<T>(plan, Device::cpu(), rng);
    for (size_t i = 0; i < c.slots.size(); ++i) has_input = has_input || c.slots[i].role == Role::Input || c.is_inout(i);
    ASSERT_TRUE(run_sync<T>(plan, Stream::cpu(), c).is_ok()) << T::describe(desc);
    std::vector<std::vector<uint8_t>> out_of_place(c.slots.size());
    for (size_t i = 0; i < c.slots.size(); ++i)
      if (c.bufs[i] && c.is_written(i)) out_of_place[i] = c.logical_bytes(i);
    for (size_t o = 0; o < c.slots.size(); ++o) {  // an in-out is written: it may alias nothing either
      if (!c.used(o) || !c.is_written(o) || c.views[o].numel() == 0) continue;
      for (size_t i = 0; i < c.slots.size(); ++i) {
        if (i == o || !c.used(i) || c.views[i].numel() == 0) continue;
        for (const int64_t shift : {0, 1}) {
          const auto& si = c.slots[i];
          const auto& so = c.slots[o];
          const size_t ei = baracuda::dtype_size(si.dtype), eo = baracuda::dtype_size(so.dtype);
          if (static_cast<size_t>(shift) * eo >= static_cast<size_t>(c.views[i].numel()) * ei) continue;  // would not overlap
          const size_t bytes = std::max<size_t>(static_cast<size_t>(c.views[i].numel()) * ei,
                                                static_cast<size_t>(c.views[o].numel() + shift) * eo);
          GuardedBuffer shared(Device::cpu(), bytes);
          const auto in_bytes = c.logical_bytes(i);
          shared.write(in_bytes.data(), in_bytes.size());
          const TensorMut saved_i = c.views[i], saved_o = c.views[o];
          c.views[i].data = shared.payload();
          c.views[i].capacity = static_cast<int64_t>(bytes / ei);
          c.views[o].data = shared.payload() + shift * static_cast<int64_t>(eo);
          c.views[o].capacity = static_cast<int64_t>((bytes - static_cast<size_t>(shift) * eo) / eo);
          c.rebind();
          const bool exact = shift == 0 && in_place_allowed(so, si.name);
          const Status st = run_sync<T>(plan, Stream::cpu(), c);
          if (exact) {
            ++in_place;
            EXPECT_TRUE(st.is_ok()) << so.name << " in place of " << si.name << ": " << st.to_string();
            const auto got = shared.read();
            EXPECT_TRUE(std::vector<uint8_t>(got.begin(), got.begin() + static_cast<ptrdiff_t>(out_of_place[o].size())) ==
                        out_of_place[o])
                << so.name << " in place differs from out of place; " << T::describe(desc);
          } else {
            ++pairs;
            EXPECT_TRUE(is_plan_error<T>(st, StatusCode::InvalidProblem))
                << so.name << " overlapping " << si.name << " (shift " << shift << "); " << T::describe(desc);
          }
          EXPECT_EQ(shared.check_guards(), "");
          c.views[i] = saved_i;
          c.views[o] = saved_o;
          c.rebind();
        }
      }
    }
  }
  if (pairs == 0 && in_place == 0 && !has_input) GTEST_SKIP() << T::kName << " has no input tensor (a factory)";
  EXPECT_GT(pairs, 0);
  (void)in_place;
}

// An optional tensor the descriptor does not use, when given, is an error; one
// it uses, when missing (null with elements), is an error.
TYPED_TEST_P(PlanContract, OptionalTensorsMatchDescriptor) {
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  int checked = 0, skipped = 0;
  std::string skipped_what;
  for (int rep = 0; rep < 24; ++rep) {
    const auto desc = T::valid_desc(rng);
    const auto plan = select_or_die<T>(Stream::cpu(), desc);
    auto c = make_call<T>(plan, Device::cpu(), rng);
    for (size_t i = 0; i < c.slots.size(); ++i) {
      const auto& s = c.slots[i];
      if (!s.optional) continue;
      if (s.role == Role::Unused) {
        const std::string check = std::string("optional.unused_given.") + s.name;
        if (known_failure(T::kName, check)) {
          ++skipped;
          skipped_what = check;
          continue;
        }
        c.allocate(i, bt::contiguous(s.shape), rng);
        c.rebind();
        const Status st = run_sync<T>(plan, Stream::cpu(), c);
        EXPECT_TRUE(is_plan_error<T>(st, StatusCode::InvalidProblem))
            << s.name << " given although the descriptor does not use it; " << T::describe(desc);
        c.bufs[i].reset();
        c.views[i] = TensorMut();
        c.rebind();
        ++checked;
      } else if (c.views[i].numel() > 0) {
        const TensorMut saved = c.views[i];
        c.views[i].data = nullptr;
        c.rebind();
        const Status st = run_sync<T>(plan, Stream::cpu(), c);
        EXPECT_TRUE(is_plan_error<T>(st, StatusCode::InvalidProblem)) << s.name << " missing; " << T::describe(desc);
        c.views[i] = saved;
        c.rebind();
        ++checked;
      }
    }
  }
  if (checked == 0 && skipped > 0) GTEST_SKIP() << "known failure (known_failures.hpp): " << skipped_what;
  if (checked == 0) GTEST_SKIP() << T::kName << " has no optional tensors";
  if (skipped > 0) std::printf("[ known    ] %s: %d case(s) of known failures skipped, e.g. %s\n", T::kName, skipped, skipped_what.c_str());
}

// A tensor left default-constructed (never filled in) is reported as missing,
// naming it, whether it is always required or asked for by a descriptor flag.
TYPED_TEST_P(PlanContract, MissingTensorsAreNamed) {
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  int checked = 0;
  for (int rep = 0; rep < 6; ++rep) {
    const auto desc = T::valid_desc(rng);
    const auto plan = select_or_die<T>(Stream::cpu(), desc);
    auto c = make_call<T>(plan, Device::cpu(), rng);
    for (size_t i = 0; i < c.slots.size(); ++i) {
      if (!c.used(i)) continue;
      const TensorMut saved = c.views[i];
      c.views[i] = TensorMut();
      c.rebind();
      const Status st = plan.can_implement(c.args);
      EXPECT_TRUE(is_plan_error<T>(st, StatusCode::InvalidProblem)) << c.slots[i].name << " left empty";
      EXPECT_NE(st.message().find(c.slots[i].name), std::string::npos) << st.to_string();
      EXPECT_NE(st.message().find("missing"), std::string::npos) << st.to_string();
      EXPECT_EQ(run_sync<T>(plan, Stream::cpu(), c).to_string(), st.to_string());
      c.views[i] = saved;
      c.rebind();
      ++checked;
    }
    EXPECT_EQ(outputs_untouched(c, kPoison), "");
  }
  EXPECT_GT(checked, 0);
}

// A default-constructed plan (a class member before select()) is empty: every
// call on it is a plan-named InvalidProblem and nothing is written.
TYPED_TEST_P(PlanContract, EmptyPlanRefusesEveryCall) {
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  const auto desc = T::valid_desc(rng);
  const auto selected = select_or_die<T>(Stream::cpu(), desc);
  EXPECT_FALSE(selected.empty());
  auto c = make_call<T>(selected, Device::cpu(), rng);
  const typename T::Plan empty;
  EXPECT_TRUE(empty.empty());
  EXPECT_STREQ(empty.name(), T::kName);
  EXPECT_EQ(empty.workspace_size(), 0u);
  const std::string what = std::string(T::kName) + ": the plan is empty (default-constructed): assign it from " +
                           T::kName + "::select() first";
  for (const Stream& s : {Stream::cpu(), Stream::cuda(0)}) {
    const Status run = empty.run(s, c.workspace(), c.args);
    EXPECT_TRUE(is_plan_error<T>(run, StatusCode::InvalidProblem)) << s.device().to_string();
    EXPECT_EQ(run.message(), what);
    EXPECT_EQ(empty.sku_for(s, c.workspace(), c.args).status().message(), what);
  }
  EXPECT_EQ(empty.can_implement(c.args).message(), what);
  EXPECT_EQ(outputs_untouched(c, kPoison), "");
  // Assigned from select(), the same object works.
  typename T::Plan member;
  member = selected;
  EXPECT_FALSE(member.empty());
  EXPECT_TRUE(run_sync<T>(member, Stream::cpu(), c).is_ok());
}

// PlanPreference::strict_workspace: the CPU plan needs a workspace (at least
// kStrictWorkspaceBytes) and refuses a missing or short one like a CUDA plan;
// with it, the results are the non-strict plan's, bit for bit, and the
// workspace was written over (exactly workspace_size() bytes, nothing past).
TYPED_TEST_P(PlanContract, StrictWorkspaceOnTheCpu) {
  using T = TypeParam;
  Rng rng(bt::fresh_seed());
  baracuda::PlanPreference strict;
  strict.strict_workspace = true;
  for (int rep = 0; rep < 3; ++rep) {
    const auto desc = T::valid_desc(rng);
    const auto lax = select_or_die<T>(Stream::cpu(), desc);
    auto sp = T::Plan::select(Stream::cpu(), desc, strict);
    ASSERT_TRUE(sp.is_ok()) << sp.status().to_string();
    const size_t need = sp->workspace_size();
    EXPECT_GE(need, baracuda::kStrictWorkspaceBytes) << T::describe(desc);
    EXPECT_GE(need, lax.workspace_size());
    Rng r1(rng()), r2 = r1;
    auto ref = make_call<T>(lax, Device::cpu(), r1);
    ASSERT_TRUE(run_sync<T>(lax, Stream::cpu(), ref).is_ok());
    auto c = make_call<T>(*sp, Device::cpu(), r2);  // same inputs (same seed), workspace of `need` bytes
    for (const Workspace w : {Workspace::none(), Workspace(c.ws->payload(), need - 1), Workspace(nullptr, need)}) {
      const Status st = sp->run(Stream::cpu(), w, c.args);
      EXPECT_TRUE(is_plan_error<T>(st, StatusCode::WorkspaceTooSmall)) << st.to_string() << "; " << T::describe(desc);
      EXPECT_EQ(st.needed(), need);
    }
    EXPECT_EQ(outputs_untouched(c, kPoison), "");
    c.ws->fill(0);
    ASSERT_TRUE(run_sync<T>(*sp, Stream::cpu(), c).is_ok()) << T::describe(desc);
    for (size_t i = 0; i < c.slots.size(); ++i) {
      if (c.bufs[i] && c.is_written(i)) {
        EXPECT_TRUE(c.logical_bytes(i) == ref.logical_bytes(i)) << c.slots[i].name;
      }
    }
    bool written = false;
    for (uint8_t b : c.ws->read()) written = written || b != 0;
    // Whether the plan does any work: an output with elements; with in-outs
    // (which a run may leave as they are, e.g. a flag) whenever sku_for does
    // not name the "empty" variant.
    const bool any_output = [&] {
      bool inout = false;
      for (size_t i = 0; i < c.slots.size(); ++i) inout = inout || (c.used(i) && c.is_inout(i));
      if (inout) {
        const auto sku = sp->sku_for(Stream::cpu(), c.workspace(), c.args);
        return sku.is_ok() && sku->variant != "empty";
      }
      for (size_t i = 0; i < c.slots.size(); ++i)
        if (c.used(i) && c.is_output(i) && c.views[i].numel() > 0) return true;
      return false;
    }();
    EXPECT_EQ(written, any_output) << "the strict CPU plan writes its workspace whenever it runs";
    EXPECT_EQ(c.guard_damage(), "");
  }
}

TYPED_TEST_P(PlanContract, ErrorsNameThePlan) {
  using T = TypeParam;
  int checked = 0;
  for (const auto& [label, desc] : T::invalid_descs()) {
    const std::string check = std::string("invalid_desc.") + label;
    if (const KnownFailure* k = known_failure(T::kName, check)) {
      std::printf("[ known    ] %s: %s skipped (%s)\n", T::kName, check.c_str(), k->finding);
      continue;
    }
    const auto plan = T::Plan::select(Stream::cpu(), desc);
    EXPECT_FALSE(plan.is_ok()) << label << ": select accepted " << T::describe(desc);
    if (!plan.is_ok()) {
      EXPECT_TRUE(names_plan<T>(plan.status())) << label;
      EXPECT_NE(plan.status().code(), StatusCode::CudaError) << label;
    }
    ++checked;
  }
  // Wrong dtype on every tensor: the message names the plan (not another one).
  Rng rng(bt::fresh_seed());
  const auto desc = T::valid_desc(rng);
  const auto plan = select_or_die<T>(Stream::cpu(), desc);
  auto c = make_call<T>(plan, Device::cpu(), rng);
  for (size_t i = 0; i < c.slots.size(); ++i) {
    if (!c.used(i)) continue;
    const TensorMut saved = c.views[i];
    c.views[i].dtype = saved.dtype == DType::F64 ? DType::I8 : DType::F64;
    c.rebind();
    EXPECT_TRUE(is_plan_error<T>(plan.can_implement(c.args), StatusCode::InvalidProblem)) << c.slots[i].name;
    c.views[i] = saved;
    c.rebind();
    ++checked;
  }
  EXPECT_GT(checked, 0);
}

TYPED_TEST_P(PlanContract, FuzzDescriptorsAndViews) {
  using T = TypeParam;
  uint64_t base = bt::fnv1a(T::kName);
  // Mixed, so that neighbouring seeds give unrelated case streams (base + i).
  if (const char* e = std::getenv("BARACUDA_FUZZ_SEED")) base = bt::splitmix64(base ^ std::strtoull(e, nullptr, 0));
  const char* one = std::getenv("BARACUDA_FUZZ_CASE");
  uint64_t case_seed = one ? std::strtoull(one, nullptr, 0) : 0;
  Fuzzer<T> fz;
  const auto s = fz.run(fuzz_seconds(), base, one ? &case_seed : nullptr);
  std::printf("[ fuzz     ] %s: %lld cases: %lld refused at select, %lld refused at run, %lld accepted and checked "
              "against contiguous copies\n",
              T::kName, static_cast<long long>(s.cases), static_cast<long long>(s.select_errors),
              static_cast<long long>(s.run_errors), static_cast<long long>(s.ok_checked));
  if (std::getenv("BARACUDA_FUZZ_VERBOSE"))
    for (const auto& [m, k] : s.by_mutation) std::printf("             %8lld  %s\n", static_cast<long long>(k), m.c_str());
  for (const auto& [m, k] : s.failure_classes)
    std::printf("[ fuzz     ] FAILED %lldx: %s\n", static_cast<long long>(k), m.c_str());
  if (!one && s.cases >= 100) {
    EXPECT_GT(s.ok_checked, 0) << "the fuzz never reached a successful run";
  }
}

REGISTER_TYPED_TEST_SUITE_P(PlanContract, RejectsTensorOnAnotherDevice, RejectsStreamOfAnotherDevice, WorkspaceRule,
                            ZeroSizeProblemsWriteNothing, PoisonedOutputsFullyWritten, RunTwiceBitIdentical,
                            OutputsMustNotAliasInputs, OptionalTensorsMatchDescriptor, ErrorsNameThePlan,
                            FuzzDescriptorsAndViews, SkuForMatchesRun, MissingTensorsAreNamed,
                            EmptyPlanRefusesEveryCall, StrictWorkspaceOnTheCpu);

}  // namespace contract
