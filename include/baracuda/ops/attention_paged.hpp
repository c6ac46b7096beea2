// Paged-KV attention family (as vLLM / FlashInfer): PagedAttentionPlan (decode
// and chunked prefill over a paged KV cache) and PagedKvAppendPlan (writes new
// keys / values into the pages). Its own family (BARACUDA_FAMILIES name
// "attention_paged"), independent of the attention family's kernels.
//
// Layouts. The query side follows the attention family's convention: logical
// [B, H, S, D] views with free element strides, so [B, S, H, D] storage is a
// [B, H, S, D] view with permuted strides (attention.hpp).
//   q        [B, Hq, Lq, D]                 dtype
//   k_pages  [num_pages, page_size, Hkv, D]  dtype   (the page pool)
//   v_pages  [num_pages, page_size, Hkv, D]  dtype
//   block_table [B, max_pages] int32         page of logical block p of sequence b
//   seq_lens [B] int32                       valid keys of sequence b, INCLUDING the
//                                            Lq new queries' own keys (already appended)
//   out      [B, Hq, Lq, D]                  dtype
//   lse      [B, Hq, Lq] f32                 optional (descriptor.save_lse)
// Key j of sequence b lives at k_pages[block_table[b, j / page_size], j % page_size].
// Query i of sequence b sits at position pos = seq_lens[b] - Lq + i; it sees keys
// 0 .. seq_lens[b]-1, and with causal = true only keys j <= pos (chunked prefill;
// FlashAttention's bottom-right causal alignment). Grouped-query attention:
// Hq % Hkv == 0, query head h reads kv head h / (Hq / Hkv).
//   s = (q . k_j) * scale        scale defaults to 1/sqrt(D); must be finite
//   s = softcap * tanh(s / softcap)  when softcap > 0
//   out = softmax_j(s) . v;  lse = log(sum_j exp(s))  (natural log, f32)
// A query with no visible key gives out = 0 and lse = -inf (the attention
// family's convention).
//
// Dtypes: f16, bf16, f32 (q, pages and out share one dtype); f32 accumulation
// and softmax on CUDA, double on the CPU reference.
//
// Errors (InvalidProblem naming the plan). select(): dims < 0, Hq % Hkv != 0,
// page_size < 1, max_pages < 0, num_pages < 0, max_pages * page_size >
// INT32_MAX, non-finite scale, softcap < 0; Unsupported for a dtype other than
// f16 / bf16 / f32. can_implement() / run(): shapes and dtypes of every
// view (block_table and seq_lens must be int32). The CPU reference also reads
// the index tensors and reports (InvalidProblem) a seq_lens[b] outside
// [Lq, max_pages * page_size] and a block_table entry outside [0, num_pages)
// among the pages that sequence uses (entries past ceil(seq_lens[b] /
// page_size) are never read). CUDA cannot read them without a host sync, so
// these are preconditions there; the kernels never read or write out of
// bounds: seq_lens are clamped to [0, max_pages * page_size], keys in a page
// whose table entry is out of range are masked out (treated as absent), and a
// query whose position is < 0 (seq_lens[b] < Lq) sees no key under causal.
//
// CUDA (f16/bf16/f32; head_dim a multiple of 8 (f16/bf16) or 4 (f32), <= 256;
// the head dim of k_pages / v_pages contiguous, their other strides multiples
// of 16 bytes and base pointers 16-byte aligned; q, out, lse, block_table and
// seq_lens take any strides): a split-KV ("flash-decoding") kernel, one CTA per
// (split, batch * kv head, block of <= 16 query rows), the rows being the
// Hq/Hkv query heads of the group times the Lq queries, so each KV byte is
// read once per row block (once for decode with group * Lq <= 16). Keys are
// walked in tiles of 32 through the block table with 16-byte cp.async loads
// into a double-buffered shared-memory tile; scores on f32 FMA with 4 lanes
// per key over all rows (each K chunk converted once), an online softmax per
// row (a warp per row), P.V on f32 FMA (decode, <= 4 rows: each V chunk read
// once for all rows by (chunk, key group) threads, key groups summed at the
// end in a fixed order). Each split writes an unnormalized partial output and
// its (max, sum) to the workspace; a combine kernel merges the splits in split
// order (deterministic, bit-identical reruns, no atomics). The number of
// splits is chosen at select() from B * Hkv * row blocks against the SM count
// and max_pages * page_size (workspace_size() depends on it: f32, 4-byte
// aligned, splits * B * Hq * Lq * (D + 2) floats). sku().variant
// names it ("splitkv.s<splits>.rb<rows>.pv{rows,items}": the P.V path).
// PlanPreference::variant overrides (tuning, tests): "splits=<1..64>",
// "fewrows=0" (never the decode P.V path); anything else is InvalidProblem.
//
// PagedKvAppendPlan: k_new, v_new [B, Hkv, Lnew, D] (logical, free strides:
// [B, Lnew, Hkv, D] storage is a permuted view) are written to positions
// seq_lens[b] .. seq_lens[b] + Lnew - 1 of sequence b through the block table
// (seq_lens: the lengths BEFORE the append; the plan does not update them).
// k_pages / v_pages are written in place (other slots untouched). CPU:
// InvalidProblem when seq_lens[b] < 0, seq_lens[b] + Lnew > max_pages *
// page_size or a page entry used is outside [0, num_pages). CUDA: the same are
// preconditions; offending writes are skipped (never out of bounds). Two
// sequences writing one slot (a shared page) is a race on CUDA: precondition.
#pragma once
#include <cstdint>
#include <optional>

#include "baracuda/core/dtype.hpp"
#include "baracuda/core/export.hpp"
#include "baracuda/core/plan.hpp"
#include "baracuda/core/sku.hpp"
#include "baracuda/core/status.hpp"
#include "baracuda/core/stream.hpp"
#include "baracuda/core/tensor.hpp"

namespace baracuda {

struct BARACUDA_API PagedAttentionDescriptor {
  DType dtype = DType::F32;   // q, k_pages, v_pages, out
  int64_t batch = 1;          // B
  int64_t heads = 1;          // Hq
  int64_t kv_heads = 1;       // Hkv, Hq % Hkv == 0
  int64_t q_len = 1;          // Lq (1: decode; > 1: chunked prefill)
  int64_t head_dim = 0;       // D
  int64_t num_pages = 0;      // pages in the pool
  int64_t page_size = 16;     // keys per page
  int64_t max_pages = 0;      // block_table's width (pages per sequence at most)
  std::optional<double> scale;  // default 1/sqrt(D)
  bool causal = true;         // bottom-right: query i sees keys j <= seq_lens[b] - Lq + i
  double softcap = 0.0;       // 0 = off
  bool save_lse = false;      // write lse [B, Hq, Lq] f32
};

struct PagedAttentionArgs {
  TensorRef q;            // [B, Hq, Lq, D]
  TensorRef k_pages;      // [num_pages, page_size, Hkv, D]
  TensorRef v_pages;      // [num_pages, page_size, Hkv, D]
  TensorRef block_table;  // int32 [B, max_pages]
  TensorRef seq_lens;     // int32 [B]
  TensorMut out;          // [B, Hq, Lq, D]
  TensorMut lse;          // f32 [B, Hq, Lq] when save_lse, else empty
};

class BARACUDA_API PagedAttentionPlan : public PlanBase {
 public:
  PagedAttentionPlan() : PlanBase("PagedAttentionPlan") {}  // empty until assigned from select() (PlanBase)
  static Result<PagedAttentionPlan> select(const Stream& stream, const PagedAttentionDescriptor& desc,
                                           const PlanPreference& pref = {});
  Status can_implement(const PagedAttentionArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const PagedAttentionArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const PagedAttentionArgs& args) const;  // see PlanBase
  const PagedAttentionDescriptor& descriptor() const { return desc_; }  // scale resolved
  double scale() const { return *desc_.scale; }
  int splits() const { return splits_; }  // CUDA split-KV splits (1 on the CPU)
  Dims q_shape() const;            // [B, Hq, Lq, D] (out)
  Dims pages_shape() const;        // [num_pages, page_size, Hkv, D]
  Dims block_table_shape() const;  // [B, max_pages]
  Dims seq_lens_shape() const;     // [B]
  Dims lse_shape() const;          // [B, Hq, Lq]

 private:
  PagedAttentionDescriptor desc_;
  int splits_ = 1;
  int row_block_ = 16;
  bool few_rows_ = true;
};

struct BARACUDA_API PagedKvAppendDescriptor {
  DType dtype = DType::F32;  // k_new, v_new, k_pages, v_pages
  int64_t batch = 1;         // B
  int64_t kv_heads = 1;      // Hkv
  int64_t new_len = 1;       // Lnew
  int64_t head_dim = 0;      // D
  int64_t num_pages = 0;
  int64_t page_size = 16;
  int64_t max_pages = 0;
};

struct PagedKvAppendArgs {
  TensorRef k_new, v_new;   // [B, Hkv, Lnew, D]
  TensorRef block_table;    // int32 [B, max_pages]
  TensorRef seq_lens;       // int32 [B], lengths before the append
  TensorMut k_pages, v_pages;  // [num_pages, page_size, Hkv, D], written in place
};

class BARACUDA_API PagedKvAppendPlan : public PlanBase {
 public:
  PagedKvAppendPlan() : PlanBase("PagedKvAppendPlan") {}
  static Result<PagedKvAppendPlan> select(const Stream& stream, const PagedKvAppendDescriptor& desc,
                                          const PlanPreference& pref = {});
  Status can_implement(const PagedKvAppendArgs& args) const;
  Status run(const Stream& stream, Workspace ws, const PagedKvAppendArgs& args) const;
  Result<KernelSku> sku_for(const Stream& stream, Workspace ws, const PagedKvAppendArgs& args) const;
  const PagedKvAppendDescriptor& descriptor() const { return desc_; }
  Dims new_shape() const;          // [B, Hkv, Lnew, D]
  Dims pages_shape() const;        // [num_pages, page_size, Hkv, D]
  Dims block_table_shape() const;  // [B, max_pages]
  Dims seq_lens_shape() const;     // [B]

 private:
  PagedKvAppendDescriptor desc_;
};

}  // namespace baracuda
