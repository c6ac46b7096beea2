// The CPU reference of the elementwise family: one strided loop for every op,
// computing in double (floating ops) or int64 (integer and bool ops) through
// the shared functors (functors.hpp), converting on load and store with the
// documented rules.
#pragma once
#include "baracuda/core/status.hpp"
#include "ops/elementwise/problem.hpp"

namespace baracuda::elementwise::ref {

Status run(const Problem& p, const Call& c);

}  // namespace baracuda::elementwise::ref
