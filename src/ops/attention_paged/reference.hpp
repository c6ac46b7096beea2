// CPU reference of the paged-KV plans: straightforward loops, double
// accumulation; checks the index tensors (seq_lens, block_table) it reads.
#pragma once
#include "baracuda/core/status.hpp"
#include "baracuda/core/tensor.hpp"
#include "baracuda/ops/attention_paged.hpp"

namespace baracuda::attention_paged::ref {

// desc validated, scale resolved.
Status attention(const char* plan, const PagedAttentionDescriptor& d, const PagedAttentionArgs& a);
Status append(const char* plan, const PagedKvAppendDescriptor& d, const PagedKvAppendArgs& a);

}  // namespace baracuda::attention_paged::ref
