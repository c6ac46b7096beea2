// Contract checks that fail on today's code, each tied to a finding in
// tests/contract/FINDINGS.md. A listed (plan, check) pair is skipped by the
// suite: the fuzz never generates that mutation for that plan (or never makes
// that check), a single-case check reports the skip. The branch stays green
// until the fix lands; fixing a finding = deleting its lines here, and the
// check runs again. Never add a line without a FINDINGS.md entry.
//
// Checks: "fuzz.<mutation>" (a mutation of fuzz.hpp or of the plan's traits),
// "fuzz.check.<name>" (one check of the fuzz), "optional.unused_given.<slot>"
// (OptionalTensorsMatchDescriptor), "invalid_desc.<label>" (ErrorsNameThePlan).
#pragma once
#include <string_view>

namespace contract {

struct KnownFailure {
  const char* plan;     // "ReducePlan", ... or "*" for every plan
  const char* check;
  const char* finding;  // id in FINDINGS.md
};

inline constexpr KnownFailure kKnownFailures[] = {
    // F1-F7 are fixed (plan shell, checked views and sizes, issue 8) and E1 is
    // withdrawn (issue 9: the reduction backward refuses x / y a kind does not
    // read); their lines are gone and the checks run. The list is empty.
    {"", "", ""},  // placeholder: an empty array is ill-formed; matches no plan
};

inline const KnownFailure* known_failure(std::string_view plan, std::string_view check) {
  for (const KnownFailure& k : kKnownFailures)
    if ((plan == k.plan || std::string_view(k.plan) == "*") && check == k.check) return &k;
  return nullptr;
}

}  // namespace contract
