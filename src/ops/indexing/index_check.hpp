// What every indexing plan shares about bad indices on CUDA: the aligned
// workspace that starts with the error word (launch.hpp), and the first half
// of check_indices (plan / stream / workspace / capture rules, then the read
// of the word). Each plan words its own message from the bad position.
#pragma once
#include <cstddef>
#include <cstdint>

#include "baracuda/core/plan.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda::indexing::detail {

// Any workspace pointer is aligned up to this (the error word's atomics and
// CUB's temporary storage want it); the pad is part of workspace_size().
inline constexpr size_t kWorkspaceAlign = 256;
void* aligned_workspace(void* p);
// workspace_size() of a plan whose CUDA run needs only the error word.
size_t error_word_workspace();

// The common half of check_indices: Ok with *bad = -1 for a CPU plan (its
// run() reported bad indices itself) or an empty problem; otherwise the
// stream / workspace / capture checks, a synchronize, and *bad = the lowest
// bad position the last run() recorded (-1 when none).
Status read_bad_position(const PlanBase& plan, const Stream& stream, Workspace ws, int64_t* bad);

// Position p of the row-major flattened `shape` -> its coordinates.
Dims unravel(const Dims& shape, int64_t p);

}  // namespace baracuda::indexing::detail
