// Family "indexing": EmbeddingPlan / EmbeddingBackwardPlan (dense gradient),
// bandwidth against the device's own copy bandwidth (bench/torch/indexing.py
// times PyTorch eager F.embedding and its weight gradient on the same case
// names). Issue 13's shapes, bf16 table, i64 indices uniform in [0, V):
//   embedding.{fwd,bwd}.bf16.<V>x<D>x<tokens>   (50304, 768, 8192), (128256, 4096, 8192)
//  * bytes counted (what the op must move): forward the indices read, the
//    looked-up rows read and out written (tokens x D each); backward the
//    indices and dout read, the dense dweight (V x D) written;
//  * inputs never come from L2: independent buffer sets rotated until one
//    sweep touches >= max(4 x L2, 256 MiB) (at most 16 sets; the backward's
//    dweight is shared, it is written whole every run); the workspace is the plan's.
// GatherPlan / ScatterPlan (issue 13 slice 3), bf16, i64 indices:
//   gather.fwd.bf16.8192x50304x64: x [8192, 50304], index [8192, 64] uniform in
//     [0, 50304), dim 1 (torch.gather); bytes: index read, the gathered
//     elements read, out written;
//   scatter_add.fwd.bf16.65536x4096x8192: self [65536, 4096] in place
//     (self.scatter_add_(0, index, src)), src and index [8192, 4096], each index
//     row one random row of self (repeated along the row); bytes: index and src
//     read, the destination elements read and written (self is shared by the
//     sets and keeps accumulating, as PyTorch's in-place call).
//   scatter_add_atomic...: the same through the opt-in atomic route
//     (PlanPreference::require_deterministic = false), beside the same torch call.
//   scatter_add_rows.fwd.bf16.65536x4096x8192: the same with the index as a
//     broadcast view (index.expand: a [8192] buffer, strides {1, 0}; torch:
//     randint(..., (N, 1)).expand(N, C)), the deterministic "sorted.rows" path;
//     bytes: the 8192 index values, src read, the destinations read and written.
// IndexSelectPlan / IndexUpdatePlan (Add, in place as torch's index_add_) along
// dim 0 of a [128256, 4096] bf16 self, 8192 i64 indices uniform in [0, 128256):
//   index_select.bf16.128256x4096x8192, index_add.bf16.128256x4096x8192
//  * bytes: index_select the indices, the picked rows read and out written;
//    index_add the indices, source read, the indexed rows of self read and written;
//  * rotation as above (index_add: self is shared and updated in place every run).
// The masked plans over [8192, 4096] with a ~50 % random bool mask (host
// mt19937, seed per set), one phase (capacity = numel: one run, no host sync):
//   masked_select.bf16.8192x4096 (torch.masked_select), nonzero.bool.8192x4096
//   (torch.nonzero of the mask), masked_scatter.bf16.8192x4096 (in place, as
//   Tensor.masked_scatter_, source of numel 8192 x 4096).
//  * bytes: what the op must move, the same for both libraries: the inputs read
//    once (x and mask; nonzero the mask; masked_scatter the mask and the count
//    source elements used) + the result written (count selected elements;
//    count x 2 int64 coordinates; count elements of self). baracuda's one-phase
//    masked_select / nonzero also write the fill past count (not counted).
// IndexGetPlan / IndexPutPlan (advanced indexing), i64 indices uniform:
//   index.f32.8192x4096x4194304: x f32 [8192, 4096], rows / cols [2^22]:
//     out = x[rows, cols]; bytes: both index tensors read, the picked elements
//     read, out written;
//   index_put_acc.f32.8192x4096x4194304: self f32 [8192, 4096] (zeros, then
//     updated in place every run, as torch's index_put_ call):
//     self.index_put_((rows, cols), v, accumulate=True); bytes: both index
//     tensors and v read, the destination elements read and written;
//   index_slice.bf16.8192x4096x2048: x bf16 [8192, 4096], cols [2048]:
//     out = x[:, cols] (a slice and an index: the adjacent rule); bytes: cols
//     read, the picked elements read, out written.
// TakePlan / PutPlan / OneHotPlan, i64 indices:
//   take.f32.8192x4096x4194304: torch.take(x [8192, 4096], index [2^22]) with
//     indices uniform in [0, N); bytes: index read, the taken elements read, out written;
//   put_accumulate.f32.8192x4096x4194304: self [8192, 4096] (zero at the start,
//     shared by the sets, updated in place as torch's put_(accumulate=True)),
//     index / source [2^22]; bytes: index and source read, the destination
//     elements read and written;
//   one_hot.{i64,bf16}.8192x32000: out [8192, 32000] from 8192 classes uniform in
//     [0, 32000); bytes: the classes read, out written.
#include <algorithm>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "../bandwidth.hpp"

namespace baracuda::bench {
namespace {

void run_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const int64_t V = c.shape[0], D = c.shape[1], T = c.shape[2];
  EmbeddingDescriptor fd;
  fd.dtype = c.dtype;
  fd.index_dtype = DType::I64;
  fd.num_embeddings = V;
  fd.embedding_dim = D;
  fd.index_shape = Dims{T};
  std::optional<EmbeddingPlan> fwd;
  std::optional<EmbeddingBackwardPlan> bwd;
  size_t ws_bytes = 0;
  if (c.bwd) {
    EmbeddingBackwardDescriptor d;
    d.forward = fd;
    d.grad_dtype = c.dtype;
    auto p = EmbeddingBackwardPlan::select(env.stream, d);
    status_check(p.status(), "EmbeddingBackwardPlan::select");
    bwd = *p;
    record_sku(r, bwd->sku());
    ws_bytes = bwd->workspace_size();
  } else {
    auto p = EmbeddingPlan::select(env.stream, fd);
    status_check(p.status(), "EmbeddingPlan::select");
    fwd = *p;
    record_sku(r, fwd->sku());
    ws_bytes = fwd->workspace_size();
  }
  const size_t es = dtype_size(c.dtype), rows = static_cast<size_t>(T) * static_cast<size_t>(D) * es;
  const size_t table = static_cast<size_t>(V) * static_cast<size_t>(D) * es, idx_bytes = static_cast<size_t>(T) * 8;
  const size_t per_run = c.bwd ? idx_bytes + rows + table : idx_bytes + 2 * rows;
  r.bytes = static_cast<double>(per_run);
  const size_t per_set = c.bwd ? idx_bytes + rows : idx_bytes + rows + table;
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 16));
  uint64_t seed = 13;
  std::mt19937_64 rng(seed);
  auto indices = [&] {
    std::vector<int64_t> h(static_cast<size_t>(T));
    for (auto& v : h) v = std::uniform_int_distribution<int64_t>(0, V - 1)(rng);
    Buffer b = device_buffer(idx_bytes, 16);
    status_check(b.copy_from_host(h.data(), idx_bytes), "indices upload");
    return b;
  };
  auto filled = [&](size_t bytes, size_t count) {
    Buffer b = device_buffer(bytes, 16);
    cuda_check(bench_fill_uniform(b.data(), c.dtype, count, -1.f, 1.f, seed++, env.cs), "fill");
    return b;
  };
  std::vector<Buffer> keep;
  Buffer ws = device_buffer(std::max<size_t>(ws_bytes, 16), 16);
  const Workspace wks(ws.data(), ws_bytes);
  const Dims ishape{T}, rshape{T, D}, tshape{V, D};
  double ms = 0;
  if (c.bwd) {
    Buffer dw = device_buffer(table, 16);
    std::vector<EmbeddingBackwardArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      EmbeddingBackwardArgs a;
      keep.push_back(indices());
      a.indices = keep.back().view(DType::I64, ishape);
      keep.push_back(filled(rows, static_cast<size_t>(T * D)));
      a.dout = keep.back().view(c.dtype, rshape);
      a.dweight = dw.view_mut(c.dtype, tshape);
      args.push_back(a);
    }
    status_check(bwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(bwd->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
    });
    keep.push_back(std::move(dw));
  } else {
    std::vector<EmbeddingArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      EmbeddingArgs a;
      keep.push_back(filled(table, static_cast<size_t>(V * D)));
      a.weight = keep.back().view(c.dtype, tshape);
      keep.push_back(indices());
      a.indices = keep.back().view(DType::I64, ishape);
      keep.push_back(device_buffer(rows, 16));
      a.out = keep.back().view_mut(c.dtype, rshape);
      args.push_back(a);
    }
    status_check(fwd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(fwd->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  }
  r.us = ms * 1e3;
}

void run_gather_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const int64_t R = c.shape[0], C = c.shape[1], K = c.shape[2];
  GatherDescriptor d;
  d.dtype = c.dtype;
  d.index_dtype = DType::I64;
  d.x_shape = Dims{R, C};
  d.index_shape = Dims{R, K};
  d.dim = 1;
  auto p = GatherPlan::select(env.stream, d);
  status_check(p.status(), "GatherPlan::select");
  record_sku(r, p->sku());
  const size_t es = dtype_size(c.dtype), n = static_cast<size_t>(R * K);
  const size_t x_bytes = static_cast<size_t>(R * C) * es, idx_bytes = n * 8;
  r.bytes = static_cast<double>(idx_bytes + 2 * n * es);
  const size_t per_set = x_bytes + idx_bytes + n * es;
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 16));
  std::mt19937_64 rng(17);
  uint64_t seed = 17;
  std::vector<Buffer> keep;
  std::vector<GatherArgs> args;
  Buffer ws = device_buffer(std::max<size_t>(p->workspace_size(), 16), 16);
  const Workspace wks(ws.data(), p->workspace_size());
  for (int s = 0; s < r.sets; ++s) {
    GatherArgs a;
    keep.push_back(device_buffer(x_bytes, 16));
    cuda_check(bench_fill_uniform(keep.back().data(), c.dtype, static_cast<size_t>(R * C), -1.f, 1.f, seed++, env.cs),
               "fill");
    a.x = keep.back().view(c.dtype, d.x_shape);
    std::vector<int64_t> h(n);
    for (auto& v : h) v = std::uniform_int_distribution<int64_t>(0, C - 1)(rng);
    keep.push_back(device_buffer(idx_bytes, 16));
    status_check(keep.back().copy_from_host(h.data(), idx_bytes), "index upload");
    a.index = keep.back().view(DType::I64, d.index_shape);
    keep.push_back(device_buffer(n * es, 16));
    a.out = keep.back().view_mut(c.dtype, d.index_shape);
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  r.us = 1e3 * time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
           status_check(p->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
         });
}

// rows: the index is a stride-0 broadcast of one value per row (index.expand).
void run_scatter_add_case(const Env& env, const BandwidthCase& c, BandwidthResult& r, bool atomic, bool rows = false) {
  const int64_t M = c.shape[0], C = c.shape[1], N = c.shape[2];
  ScatterDescriptor d;
  d.dtype = c.dtype;
  d.index_dtype = DType::I64;
  d.self_shape = Dims{M, C};
  d.index_shape = d.src_shape = Dims{N, C};
  d.dim = 0;
  d.reduce = ScatterReduce::Sum;
  d.include_self = true;
  PlanPreference pref;
  pref.require_deterministic = !atomic;  // atomic: the opt-in floating-point-atomic route
  auto p = ScatterPlan::select(env.stream, d, pref);
  status_check(p.status(), "ScatterPlan::select");
  record_sku(r, p->sku());
  const size_t es = dtype_size(c.dtype), n = static_cast<size_t>(N * C);
  const size_t idx_bytes = rows ? static_cast<size_t>(N) * 8 : n * 8;
  r.bytes = static_cast<double>(idx_bytes + 3 * n * es);
  const size_t per_set = idx_bytes + n * es;
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 16));
  std::mt19937_64 rng(19);
  uint64_t seed = 19;
  Buffer self = device_buffer(static_cast<size_t>(M * C) * es, 16);
  cuda_check(bench_fill_uniform(self.data(), c.dtype, static_cast<size_t>(M * C), -1.f, 1.f, seed++, env.cs), "fill");
  std::vector<Buffer> keep;
  std::vector<ScatterArgs> args;
  Buffer ws = device_buffer(std::max<size_t>(p->workspace_size(), 16), 16);
  const Workspace wks(ws.data(), p->workspace_size());
  for (int s = 0; s < r.sets; ++s) {
    ScatterArgs a;
    a.self = self.view(c.dtype, d.self_shape);
    a.out = self.view_mut(c.dtype, d.self_shape);
    std::vector<int64_t> h(rows ? static_cast<size_t>(N) : n);
    for (size_t row = 0; row < static_cast<size_t>(N); ++row) {
      const int64_t dst = std::uniform_int_distribution<int64_t>(0, M - 1)(rng);
      if (rows) h[row] = dst;
      else
        std::fill(h.begin() + static_cast<std::ptrdiff_t>(row * static_cast<size_t>(C)),
                  h.begin() + static_cast<std::ptrdiff_t>((row + 1) * static_cast<size_t>(C)), dst);
    }
    keep.push_back(device_buffer(idx_bytes, 16));
    status_check(keep.back().copy_from_host(h.data(), idx_bytes), "index upload");
    if (rows)
      a.index = TensorRef(keep.back().data(), DType::I64, env.stream.device(), d.index_shape, Dims{1, 0}, N);
    else
      a.index = keep.back().view(DType::I64, d.index_shape);
    keep.push_back(device_buffer(n * es, 16));
    cuda_check(bench_fill_uniform(keep.back().data(), c.dtype, n, -1.f, 1.f, seed++, env.cs), "fill");
    a.src = keep.back().view(c.dtype, d.src_shape);
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  // What run() launches for these views (the rows path is picked at run() from the index strides).
  const auto ran = p->sku_for(env.stream, wks, args[0]);
  status_check(ran.status(), "sku_for");
  record_sku(r, *ran);
  r.us = 1e3 * time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
           status_check(p->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
         });
}

// n int64 indices uniform in [0, hi), on the device.
Buffer uniform_indices(int64_t n, int64_t hi, std::mt19937_64& rng) {
  std::vector<int64_t> h(static_cast<size_t>(n));
  for (auto& v : h) v = std::uniform_int_distribution<int64_t>(0, hi - 1)(rng);
  Buffer b = device_buffer(h.size() * 8, 16);
  status_check(b.copy_from_host(h.data(), h.size() * 8), "indices upload");
  return b;
}

// `count` elements of t uniform in [-1, 1) in a fresh device buffer of `bytes`.
Buffer filled_buffer(const Env& env, DType t, size_t bytes, size_t count, uint64_t& seed) {
  Buffer b = device_buffer(bytes, 16);
  cuda_check(bench_fill_uniform(b.data(), t, count, -1.f, 1.f, seed++, env.cs), "fill");
  return b;
}

// index_select / index_add along dim 0: shape = {S, inner, n}.
void run_index_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const int64_t S = c.shape[0], inner = c.shape[1], n = c.shape[2];
  const bool add = c.op == "index_add";
  const Dims self_shape{S, inner}, rows_shape{n, inner}, ishape{n};
  std::optional<IndexSelectPlan> sel;
  std::optional<IndexUpdatePlan> upd;
  size_t ws_bytes = 0;
  if (add) {
    IndexUpdateDescriptor d;
    d.mode = IndexUpdateMode::Add;
    d.dtype = c.dtype;
    d.index_dtype = DType::I64;
    d.self_shape = self_shape;
    d.index_shape = ishape;
    auto p = IndexUpdatePlan::select(env.stream, d);
    status_check(p.status(), "IndexUpdatePlan::select");
    upd = *p;
    record_sku(r, upd->sku());
    ws_bytes = upd->workspace_size();
  } else {
    IndexSelectDescriptor d;
    d.dtype = c.dtype;
    d.index_dtype = DType::I64;
    d.self_shape = self_shape;
    d.index_shape = ishape;
    auto p = IndexSelectPlan::select(env.stream, d);
    status_check(p.status(), "IndexSelectPlan::select");
    sel = *p;
    record_sku(r, sel->sku());
    ws_bytes = sel->workspace_size();
  }
  const size_t es = dtype_size(c.dtype), rows = static_cast<size_t>(n) * static_cast<size_t>(inner) * es;
  const size_t table = static_cast<size_t>(S) * static_cast<size_t>(inner) * es, idx_bytes = static_cast<size_t>(n) * 8;
  r.bytes = static_cast<double>(add ? idx_bytes + 3 * rows : idx_bytes + 2 * rows);
  const size_t per_set = add ? idx_bytes + rows : idx_bytes + rows + table;
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 16));
  uint64_t seed = 17;
  std::mt19937_64 rng(seed);
  auto indices = [&] { return uniform_indices(n, S, rng); };
  auto filled = [&](size_t bytes, size_t count) { return filled_buffer(env, c.dtype, bytes, count, seed); };
  std::vector<Buffer> keep;
  Buffer ws = device_buffer(std::max<size_t>(ws_bytes, 16), 16);
  const Workspace wks(ws.data(), ws_bytes);
  double ms = 0;
  if (add) {
    Buffer self = filled(table, static_cast<size_t>(S * inner));
    std::vector<IndexUpdateArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      IndexUpdateArgs a;
      a.self = self.view(c.dtype, self_shape);
      a.out = self.view_mut(c.dtype, self_shape);
      keep.push_back(indices());
      a.index = keep.back().view(DType::I64, ishape);
      keep.push_back(filled(rows, static_cast<size_t>(n * inner)));
      a.source = keep.back().view(c.dtype, rows_shape);
      args.push_back(a);
    }
    status_check(upd->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(upd->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
    });
    keep.push_back(std::move(self));
  } else {
    std::vector<IndexSelectArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      IndexSelectArgs a;
      keep.push_back(filled(table, static_cast<size_t>(S * inner)));
      a.self = keep.back().view(c.dtype, self_shape);
      keep.push_back(indices());
      a.index = keep.back().view(DType::I64, ishape);
      keep.push_back(device_buffer(rows, 16));
      a.out = keep.back().view_mut(c.dtype, rows_shape);
      args.push_back(a);
    }
    status_check(sel->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(sel->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  }
  r.us = ms * 1e3;
}

// masked_select / nonzero / masked_scatter over shape = {R, C}; c.op names the plan.
void run_masked_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const Dims s{c.shape[0], c.shape[1]};
  const int64_t n = c.shape[0] * c.shape[1];
  const size_t es = c.op == "nonzero" ? 1 : dtype_size(c.dtype), nb = static_cast<size_t>(n);
  std::optional<NonzeroPlan> nz;
  std::optional<MaskedSelectPlan> sel;
  std::optional<MaskedScatterPlan> sc;
  size_t ws_bytes = 0;
  if (c.op == "nonzero") {
    NonzeroDescriptor d;
    d.dtype = DType::Bool;
    d.shape = s;
    d.capacity = n;
    auto p = NonzeroPlan::select(env.stream, d);
    status_check(p.status(), "NonzeroPlan::select");
    nz = *p;
    record_sku(r, nz->sku());
    ws_bytes = nz->workspace_size();
  } else if (c.op == "masked_select") {
    MaskedSelectDescriptor d;
    d.dtype = c.dtype;
    d.x_shape = d.mask_shape = s;
    d.capacity = n;
    auto p = MaskedSelectPlan::select(env.stream, d);
    status_check(p.status(), "MaskedSelectPlan::select");
    sel = *p;
    record_sku(r, sel->sku());
    ws_bytes = sel->workspace_size();
  } else {
    MaskedScatterDescriptor d;
    d.dtype = c.dtype;
    d.self_shape = d.mask_shape = s;
    d.source_shape = Dims{n};
    auto p = MaskedScatterPlan::select(env.stream, d);
    status_check(p.status(), "MaskedScatterPlan::select");
    sc = *p;
    record_sku(r, sc->sku());
    ws_bytes = sc->workspace_size();
  }
  const size_t per_set = nb + (c.op == "nonzero" ? nb * 16 : 2 * nb * es);
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 16));
  std::mt19937_64 rng(29);
  uint64_t seed = 29;
  int64_t count = 0;  // true entries of the first set's mask (every set: ~n / 2)
  std::vector<Buffer> keep;
  auto mask = [&](int set) {
    std::vector<uint8_t> h(nb);
    for (auto& v : h) v = static_cast<uint8_t>(rng() & 1);
    if (set == 0)
      for (uint8_t v : h) count += v;
    Buffer b = device_buffer(nb, 16);
    status_check(b.copy_from_host(h.data(), nb), "mask upload");
    return b;
  };
  auto filled = [&](size_t count_elems) {
    Buffer b = device_buffer(count_elems * es, 16);
    cuda_check(bench_fill_uniform(b.data(), c.dtype, count_elems, -1.f, 1.f, seed++, env.cs), "fill");
    return b;
  };
  Buffer ws = device_buffer(std::max<size_t>(ws_bytes, 16), 16);
  const Workspace wks(ws.data(), ws_bytes);
  Buffer count_buf = device_buffer(8, 16);
  std::vector<std::function<void()>> runs;
  for (int set = 0; set < r.sets; ++set) {
    keep.push_back(mask(set));
    const TensorRef m = keep.back().view(DType::Bool, s);
    if (nz) {
      keep.push_back(device_buffer(nb * 16, 16));
      NonzeroArgs a{m, keep.back().view_mut(DType::I64, Dims{n, 2}), count_buf.view_mut(DType::I64, Dims{})};
      status_check(nz->can_implement(a), "can_implement");
      runs.push_back([&, a] { status_check(nz->run(env.stream, wks, a), "run"); });
    } else if (sel) {
      keep.push_back(filled(nb));
      MaskedSelectArgs a;
      a.x = keep.back().view(c.dtype, s);
      a.mask = m;
      keep.push_back(device_buffer(nb * es, 16));
      a.out = keep.back().view_mut(c.dtype, Dims{n});
      a.count = count_buf.view_mut(DType::I64, Dims{});
      status_check(sel->can_implement(a), "can_implement");
      runs.push_back([&, a] { status_check(sel->run(env.stream, wks, a), "run"); });
    } else {
      keep.push_back(filled(nb));
      MaskedScatterArgs a;
      a.self = keep.back().view(c.dtype, s);
      a.out = keep.back().view_mut(c.dtype, s);
      a.mask = m;
      keep.push_back(filled(nb));
      a.source = keep.back().view(c.dtype, Dims{n});
      status_check(sc->can_implement(a), "can_implement");
      runs.push_back([&, a] { status_check(sc->run(env.stream, wks, a), "run"); });
    }
  }
  const size_t k = static_cast<size_t>(count);
  r.bytes = static_cast<double>(c.op == "nonzero" ? nb + k * 16 : (c.op == "masked_select" ? nb * es + nb + k * es
                                                                                          : nb + 2 * k * es));
  r.us = 1e3 * time_median_ms(env.cs, env.warmup, env.iters,
                              [&](int i) { runs[static_cast<size_t>(i % r.sets)](); });
}

// x[rows, cols] / index_put_((rows, cols), v, accumulate) / x[:, cols]: shape = {M, C, n}.
void run_advanced_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const int64_t M = c.shape[0], C = c.shape[1], n = c.shape[2];
  const bool put = c.op == "index_put_acc", slice = c.op == "index_slice";
  AdvancedIndex ix;
  ix.index_dtype = DType::I64;
  ix.self_shape = Dims{M, C};
  ix.has_index[1] = true;
  ix.index_shape[1] = Dims{n};
  if (!slice) ix.has_index[0] = true, ix.index_shape[0] = Dims{n};
  const Dims out_shape = slice ? Dims{M, n} : Dims{n};
  const int64_t picked = slice ? M * n : n;
  std::optional<IndexGetPlan> get;
  std::optional<IndexPutPlan> upd;
  size_t ws_bytes = 0;
  if (put) {
    IndexPutDescriptor d;
    d.dtype = c.dtype;
    d.index = ix;
    d.values_shape = Dims{n};
    d.accumulate = true;
    auto p = IndexPutPlan::select(env.stream, d);
    status_check(p.status(), "IndexPutPlan::select");
    upd = *p;
    record_sku(r, upd->sku());
    ws_bytes = upd->workspace_size();
  } else {
    IndexGetDescriptor d;
    d.dtype = c.dtype;
    d.index = ix;
    auto p = IndexGetPlan::select(env.stream, d);
    status_check(p.status(), "IndexGetPlan::select");
    get = *p;
    record_sku(r, get->sku());
    ws_bytes = get->workspace_size();
  }
  const size_t es = dtype_size(c.dtype), idx_bytes = static_cast<size_t>(n) * 8;
  const size_t n_idx = slice ? 1 : 2, picked_bytes = static_cast<size_t>(picked) * es;
  r.bytes = static_cast<double>(n_idx * idx_bytes + (put ? 3 : 2) * picked_bytes);
  const size_t x_bytes = static_cast<size_t>(M * C) * es;
  const size_t per_set = n_idx * idx_bytes + picked_bytes + (put ? 0 : x_bytes);
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 16));
  std::mt19937_64 rng(23);
  uint64_t seed = 23;
  auto upload_indices = [&](std::vector<Buffer>& keep, int64_t size) {
    std::vector<int64_t> h(static_cast<size_t>(n));
    for (auto& v : h) v = std::uniform_int_distribution<int64_t>(0, size - 1)(rng);
    keep.push_back(device_buffer(idx_bytes, 16));
    status_check(keep.back().copy_from_host(h.data(), idx_bytes), "index upload");
    return keep.back().view(DType::I64, Dims{n});
  };
  std::vector<Buffer> keep;
  Buffer ws = device_buffer(std::max<size_t>(ws_bytes, 16), 16);
  const Workspace wks(ws.data(), ws_bytes);
  if (put) {
    Buffer self = device_buffer(x_bytes, 16);
    cuda_check(cudaMemsetAsync(self.data(), 0, x_bytes, env.cs), "zero self");
    std::vector<IndexPutArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      IndexPutArgs a;
      a.self = self.view(c.dtype, ix.self_shape);
      a.out = self.view_mut(c.dtype, ix.self_shape);
      a.indices[0] = upload_indices(keep, M);
      a.indices[1] = upload_indices(keep, C);
      keep.push_back(device_buffer(picked_bytes, 16));
      cuda_check(bench_fill_uniform(keep.back().data(), c.dtype, static_cast<size_t>(n), -1.f, 1.f, seed++, env.cs), "fill");
      a.values = keep.back().view(c.dtype, Dims{n});
      args.push_back(a);
    }
    status_check(upd->can_implement(args[0]), "can_implement");
    r.us = 1e3 * time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
             status_check(upd->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
           });
    return;
  }
  std::vector<IndexGetArgs> args;
  for (int s = 0; s < r.sets; ++s) {
    IndexGetArgs a;
    keep.push_back(device_buffer(x_bytes, 16));
    cuda_check(bench_fill_uniform(keep.back().data(), c.dtype, static_cast<size_t>(M * C), -1.f, 1.f, seed++, env.cs),
               "fill");
    a.x = keep.back().view(c.dtype, ix.self_shape);
    if (!slice) a.indices[0] = upload_indices(keep, M);
    a.indices[1] = upload_indices(keep, C);
    keep.push_back(device_buffer(picked_bytes, 16));
    a.out = keep.back().view_mut(c.dtype, out_shape);
    args.push_back(a);
  }
  status_check(get->can_implement(args[0]), "can_implement");
  r.us = 1e3 * time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
           status_check(get->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
         });
}

// take / put_ accumulate: shape = {rows, cols, n}; one_hot: shape = {rows, C}.
void run_take_put_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const bool put = c.op == "put_accumulate";
  const int64_t N = c.shape[0] * c.shape[1], n = c.shape[2];
  const Dims x_shape{c.shape[0], c.shape[1]}, ishape{n};
  std::optional<TakePlan> take;
  std::optional<PutPlan> putp;
  size_t ws_bytes = 0;
  if (put) {
    PutDescriptor d;
    d.dtype = c.dtype;
    d.index_dtype = DType::I64;
    d.self_shape = x_shape;
    d.index_shape = d.source_shape = ishape;
    d.accumulate = true;
    auto p = PutPlan::select(env.stream, d);
    status_check(p.status(), "PutPlan::select");
    putp = *p;
    record_sku(r, putp->sku());
    ws_bytes = putp->workspace_size();
  } else {
    TakeDescriptor d;
    d.dtype = c.dtype;
    d.index_dtype = DType::I64;
    d.x_shape = x_shape;
    d.index_shape = ishape;
    auto p = TakePlan::select(env.stream, d);
    status_check(p.status(), "TakePlan::select");
    take = *p;
    record_sku(r, take->sku());
    ws_bytes = take->workspace_size();
  }
  const size_t es = dtype_size(c.dtype), elems = static_cast<size_t>(n) * es, idx_bytes = static_cast<size_t>(n) * 8;
  const size_t table = static_cast<size_t>(N) * es;
  r.bytes = static_cast<double>(idx_bytes + (put ? 3 : 2) * elems);
  const size_t per_set = put ? idx_bytes + elems : table + idx_bytes + elems;
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 16));
  uint64_t seed = 23;
  std::mt19937_64 rng(seed);
  auto indices = [&] { return uniform_indices(n, N, rng); };
  auto filled = [&](size_t bytes, size_t count) { return filled_buffer(env, c.dtype, bytes, count, seed); };
  std::vector<Buffer> keep;
  Buffer ws = device_buffer(std::max<size_t>(ws_bytes, 16), 16);
  const Workspace wks(ws.data(), ws_bytes);
  double ms = 0;
  if (put) {
    Buffer self = device_buffer(table, 16);
    cuda_check(cudaMemsetAsync(self.data(), 0, table, env.cs), "zero self");
    std::vector<PutArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      PutArgs a;
      a.self = self.view(c.dtype, x_shape);
      a.out = self.view_mut(c.dtype, x_shape);
      keep.push_back(indices());
      a.index = keep.back().view(DType::I64, ishape);
      keep.push_back(filled(elems, static_cast<size_t>(n)));
      a.source = keep.back().view(c.dtype, ishape);
      args.push_back(a);
    }
    status_check(putp->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(putp->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
    });
    keep.push_back(std::move(self));
  } else {
    std::vector<TakeArgs> args;
    for (int s = 0; s < r.sets; ++s) {
      TakeArgs a;
      keep.push_back(filled(table, static_cast<size_t>(N)));
      a.x = keep.back().view(c.dtype, x_shape);
      keep.push_back(indices());
      a.index = keep.back().view(DType::I64, ishape);
      keep.push_back(device_buffer(elems, 16));
      a.out = keep.back().view_mut(c.dtype, ishape);
      args.push_back(a);
    }
    status_check(take->can_implement(args[0]), "can_implement");
    ms = time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
      status_check(take->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
    });
  }
  r.us = ms * 1e3;
}

void run_one_hot_case(const Env& env, const BandwidthCase& c, BandwidthResult& r) {
  const int64_t rows = c.shape[0], C = c.shape[1];
  OneHotDescriptor d;
  d.dtype = c.dtype;
  d.index_dtype = DType::I64;
  d.index_shape = Dims{rows};
  d.num_classes = C;
  auto p = OneHotPlan::select(env.stream, d);
  status_check(p.status(), "OneHotPlan::select");
  record_sku(r, p->sku());
  const size_t idx_bytes = static_cast<size_t>(rows) * 8;
  const size_t out_bytes = static_cast<size_t>(rows) * static_cast<size_t>(C) * dtype_size(c.dtype);
  r.bytes = static_cast<double>(idx_bytes + out_bytes);
  const size_t per_set = idx_bytes + out_bytes;
  r.sets = static_cast<int>(std::clamp<size_t>((env.rotate_bytes + per_set - 1) / per_set, 1, 16));
  std::mt19937_64 rng(29);
  std::vector<Buffer> keep;
  std::vector<OneHotArgs> args;
  Buffer ws = device_buffer(std::max<size_t>(p->workspace_size(), 16), 16);
  const Workspace wks(ws.data(), p->workspace_size());
  const Dims out_shape = p->out_shape();
  for (int s = 0; s < r.sets; ++s) {
    OneHotArgs a;
    keep.push_back(uniform_indices(rows, C, rng));
    a.indices = keep.back().view(DType::I64, d.index_shape);
    keep.push_back(device_buffer(out_bytes, 16));
    a.out = keep.back().view_mut(c.dtype, out_shape);
    args.push_back(a);
  }
  status_check(p->can_implement(args[0]), "can_implement");
  r.us = 1e3 * time_median_ms(env.cs, env.warmup, env.iters, [&](int i) {
           status_check(p->run(env.stream, wks, args[static_cast<size_t>(i % r.sets)]), "run");
         });
}

}  // namespace

void register_indexing(Registry& reg) {
  reg.add_family(Family{"indexing", "", 30, 5, bandwidth_start("baracuda_indexing_bench")});
  const Dims shapes[] = {Dims{50304, 768, 8192}, Dims{128256, 4096, 8192}};
  for (bool bwd : {false, true})
    for (const Dims& s : shapes) {
      BandwidthCase c{{}, "embedding", bwd, DType::BF16, s, Dims{}};
      c.name = c.op + (bwd ? ".bwd." : ".fwd.") + std::string(dtype_name(c.dtype)) + "." + join(s, "x");
      reg.add_case(bandwidth_case("indexing", c, [c](Env& env, BandwidthResult& r) { run_case(env, c, r); }));
    }
  {
    BandwidthCase c{"gather.fwd.bf16.8192x50304x64", "gather", false, DType::BF16, Dims{8192, 50304, 64}, Dims{}};
    reg.add_case(bandwidth_case("indexing", c, [c](Env& env, BandwidthResult& r) { run_gather_case(env, c, r); }));
  }
  for (bool atomic : {false, true}) {
    BandwidthCase c{atomic ? "scatter_add_atomic.fwd.bf16.65536x4096x8192" : "scatter_add.fwd.bf16.65536x4096x8192",
                    atomic ? "scatter_add_atomic" : "scatter_add", false, DType::BF16, Dims{65536, 4096, 8192}, Dims{}};
    reg.add_case(bandwidth_case("indexing", c,
                                [c, atomic](Env& env, BandwidthResult& r) { run_scatter_add_case(env, c, r, atomic); }));
  }
  {
    BandwidthCase c{"scatter_add_rows.fwd.bf16.65536x4096x8192", "scatter_add_rows", false, DType::BF16,
                    Dims{65536, 4096, 8192}, Dims{}};
    reg.add_case(bandwidth_case("indexing", c,
                                [c](Env& env, BandwidthResult& r) { run_scatter_add_case(env, c, r, false, true); }));
  }
  for (const char* op : {"index_select", "index_add"}) {
    const Dims s{128256, 4096, 8192};
    BandwidthCase c{{}, op, false, DType::BF16, s, Dims{}};
    c.name = c.op + "." + std::string(dtype_name(c.dtype)) + "." + join(s, "x");
    reg.add_case(bandwidth_case("indexing", c, [c](Env& env, BandwidthResult& r) { run_index_case(env, c, r); }));
  }
  for (const char* name : {"masked_select.bf16.8192x4096", "nonzero.bool.8192x4096", "masked_scatter.bf16.8192x4096"}) {
    const std::string op = std::string(name).substr(0, std::string(name).find('.'));
    BandwidthCase c{name, op, false, op == "nonzero" ? DType::Bool : DType::BF16, Dims{8192, 4096}, Dims{}};
    reg.add_case(bandwidth_case("indexing", c, [c](Env& env, BandwidthResult& r) { run_masked_case(env, c, r); }));
  }
  const struct {
    const char* op;
    DType dtype;
    Dims shape;
  } adv[] = {{"index", DType::F32, Dims{8192, 4096, int64_t{1} << 22}},
             {"index_put_acc", DType::F32, Dims{8192, 4096, int64_t{1} << 22}},
             {"index_slice", DType::BF16, Dims{8192, 4096, 2048}}};
  for (const auto& a : adv) {
    BandwidthCase c{{}, a.op, false, a.dtype, a.shape, Dims{}};
    c.name = c.op + "." + std::string(dtype_name(c.dtype)) + "." + join(a.shape, "x");
    reg.add_case(bandwidth_case("indexing", c, [c](Env& env, BandwidthResult& r) { run_advanced_case(env, c, r); }));
  }
  for (const char* op : {"take", "put_accumulate"}) {
    const Dims s{8192, 4096, int64_t{1} << 22};
    BandwidthCase c{{}, op, false, DType::F32, s, Dims{}};
    c.name = c.op + "." + std::string(dtype_name(c.dtype)) + "." + join(s, "x");
    reg.add_case(bandwidth_case("indexing", c, [c](Env& env, BandwidthResult& r) { run_take_put_case(env, c, r); }));
  }
  for (const DType t : {DType::I64, DType::BF16}) {
    const Dims s{8192, 32000};
    BandwidthCase c{{}, "one_hot", false, t, s, Dims{}};
    c.name = c.op + "." + std::string(dtype_name(t)) + "." + join(s, "x");
    reg.add_case(bandwidth_case("indexing", c, [c](Env& env, BandwidthResult& r) { run_one_hot_case(env, c, r); }));
  }
}

}  // namespace baracuda::bench
