// SIMT flash-attention backward for f32 and f64 (kernels: flash_simt.cuh).
//
// Three deterministic passes, no atomics:
//   1. dsum_i = rowsum(dy_i * y_i) into the workspace; for f64 also the row
//      log-sum-exp recomputed exactly in double (the forward stores lse as f32,
//      which would limit the f64 gradients to ~1e-7): a forward-shaped pass
//      without V. The f32 backward uses the forward's lse.
//   2. dQ: one block per query tile of (b, h), looping over the visible key tiles.
//   3. dK, dV: one block per key tile of (b, kv head), looping over the group's
//      query heads in order and the query tiles that can see the keys. Every key
//      row is written (zeros where no query row sees it).
#include "ops/attention/cuda/flash_simt.cuh"

namespace baracuda::attention::cuda {

namespace {

constexpr size_t align256(size_t n) { return (n + 255) & ~size_t{255}; }

int64_t ws_rows(const FlashShape& s) {
  const int64_t rows = s.varlen ? s.heads * s.total_q : s.batch * s.heads * s.q_len;
  return rows > 0 ? rows : 0;
}

template <class T>
Status backward_typed(const FlashBwdParams& p, void* stream, const char* what) {
  auto lim = simt::smem_limit();
  if (!lim.is_ok()) return lim.status();
  const int limit = lim.value();
  const FlashShape sh = shape_of(p);
  const size_t rows = static_cast<size_t>(ws_rows(sh));
  // The workspace holds 256 bytes of slack: its arrays start at the first
  // 256-byte boundary.
  char* ws = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(p.workspace) + 255) & ~uintptr_t{255});
  T* dsum = reinterpret_cast<T*>(ws);
  double* lse64 = std::is_same_v<T, double> && rows > 0 ? reinterpret_cast<double*>(ws + align256(rows * sizeof(double)))
                                                        : nullptr;

  Status st;
  if (p.q_len > 0) {
    // 1. row statistics
    {
      const int64_t tiles = (static_cast<int64_t>(p.q_len) + simt::kMaxWarps * simt::kDsumRowsPerWarp - 1) /
                            (simt::kMaxWarps * simt::kDsumRowsPerWarp);
      unsigned blocks = 0;
      st = simt::grid_blocks(what, tiles, p.heads, p.batch, &blocks);
      if (!st.is_ok()) return st;
      st = simt::launch(what, simt::dsum_kernel<T>, blocks, simt::kMaxWarps * 32, 0, stream, p,
                        static_cast<int>(tiles), dsum);
      if (!st.is_ok()) return st;
      if constexpr (std::is_same_v<T, double>) {
        st = simt::launch_fwd<double, true>(p, stream, lse64, what);
        if (!st.is_ok()) return st;
      }
    }
    // 2. dQ
    st = simt::with_nc(p.head_dim, [&](auto nc) -> Status {
      constexpr int NC = decltype(nc)::value;
      constexpr int RPW = simt::Cfg<T>::kDqRpw;
      int nw = 0;
      size_t bytes = 0;
      Status s2 = simt::pick_warps<T>(
          what, limit, [&](int w) { return simt::dq_smem_elems<T, NC, RPW>(w, p.head_dim); }, &nw, &bytes);
      if (!s2.is_ok()) return s2;
      const int bq = nw * RPW;
      const int64_t tiles = (static_cast<int64_t>(p.q_len) + bq - 1) / bq;
      unsigned blocks = 0;
      s2 = simt::grid_blocks(what, tiles, p.heads, p.batch, &blocks);
      if (!s2.is_ok()) return s2;
      return simt::launch(what, simt::dq_kernel<T, NC, RPW>, blocks, nw * 32, bytes, stream, p,
                          static_cast<int>(tiles), static_cast<const T*>(dsum), static_cast<const double*>(lse64));
    });
    if (!st.is_ok()) return st;
  }
  if (p.kv_len > 0) {
    // 3. dK, dV (also when no query row exists: they are zero then)
    st = simt::with_nc(p.head_dim, [&](auto nc) -> Status {
      constexpr int NC = decltype(nc)::value;
      constexpr int KPW = simt::Cfg<T>::kDkvKpw, QPL = simt::dkv_qpl<NC>();
      int nw = 0;
      size_t bytes = 0;
      Status s2 = simt::pick_warps<T>(
          what, limit, [&](int w) { return simt::dkv_smem_elems<T, NC, KPW, QPL>(w, p.head_dim); }, &nw, &bytes);
      if (!s2.is_ok()) return s2;
      const int bk = nw * KPW;
      const int64_t tiles = (static_cast<int64_t>(p.kv_len) + bk - 1) / bk;
      unsigned blocks = 0;
      s2 = simt::grid_blocks(what, tiles, p.kv_heads, p.batch, &blocks);
      if (!s2.is_ok()) return s2;
      return simt::launch(what, simt::dkv_kernel<T, NC, KPW, QPL>, blocks, nw * 32, bytes, stream, p,
                          static_cast<int>(tiles), static_cast<const T*>(dsum), static_cast<const double*>(lse64));
    });
  }
  return st;
}

}  // namespace

size_t backward_workspace_bytes_simt(const FlashShape& s) {
  const size_t rows = static_cast<size_t>(ws_rows(s));
  if (rows == 0) return 0;
  if (s.dtype == DType::F64) return 256 + align256(rows * sizeof(double)) + rows * sizeof(double);
  return 256 + rows * sizeof(float);
}

Status backward_simt(const FlashBwdParams& p, int arch, int sm_count, void* stream) {
  (void)arch;
  (void)sm_count;
  const char* what = "FlashSdpaBackwardPlan (SIMT backward)";
  Status st = simt::check_common(p, what);
  if (!st.is_ok()) return st;
  if (p.batch <= 0 || p.heads <= 0 || (p.q_len <= 0 && p.kv_len <= 0)) return Status::ok();
  const FlashShape sh = shape_of(p);
  const size_t need = backward_workspace_bytes_simt(sh);
  if (need > 0 && (p.workspace == nullptr || p.workspace_bytes < need))
    return Status(StatusCode::WorkspaceTooSmall,
                  std::string(what) + ": workspace of " + std::to_string(p.workspace_bytes) + " bytes, needs " +
                      std::to_string(need),
                  need, p.workspace_bytes);
  if (p.dtype == DType::F32) return backward_typed<float>(p, stream, what);
  return backward_typed<double>(p, stream, what);
}

}  // namespace baracuda::attention::cuda
