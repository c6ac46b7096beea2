#include "ops/gemm/problem.hpp"

#include <string>

#include "baracuda/ops/elementwise.hpp"  // broadcast_shapes
#include "core/error.hpp"

namespace baracuda::gemm {

Status matmul_shapes(const char* plan, const Dims& a, const Dims& b, MatmulShapes* out) {
  using baracuda::detail::invalid;
  if (!a.rank_valid() || a.rank < 1) return invalid(plan, "a has rank ", a.rank, ", expected 1..", kMaxRank);
  if (!b.rank_valid() || b.rank < 1) return invalid(plan, "b has rank ", b.rank, ", expected 1..", kMaxRank);
  for (const Dims* d : {&a, &b})
    for (int64_t e : *d)
      if (e < 0) return invalid(plan, d == &a ? "a" : "b", " shape ", *d, " has a negative extent");
  MatmulShapes s;
  s.a_vec = a.rank == 1;
  s.b_vec = b.rank == 1;
  const int64_t ka = a[a.rank - 1];
  const int64_t kb = s.b_vec ? b[0] : b[b.rank - 2];
  if (ka != kb)
    return invalid(plan, "a ", a, " and b ", b, " do not multiply: a's last extent ", ka, " must equal b's ",
                   s.b_vec ? "only" : "second-to-last", " extent ", kb);
  s.k = ka;
  s.m = s.a_vec ? 1 : a[a.rank - 2];
  s.n = s.b_vec ? 1 : b[b.rank - 1];
  Dims ba, bb;
  for (int i = 0; i < a.rank - 2; ++i) ba.push_back(a[i]);
  for (int i = 0; i < b.rank - 2; ++i) bb.push_back(b[i]);
  auto batch = broadcast_shapes(ba, bb, plan);
  if (!batch)
    return invalid(plan, "the batch dims of a ", a, " and b ", b, " do not broadcast (", ba, " vs ", bb, ")");
  s.batch = *batch;
  if (s.batch.rank > kMaxRank - 2)
    return invalid(plan, "the broadcast batch shape ", s.batch, " leaves no room for the matrix dims (rank <= ",
                   kMaxRank, ")");
  s.out = s.batch;
  if (!s.a_vec) s.out.push_back(s.m);
  if (!s.b_vec) s.out.push_back(s.n);
  *out = s;
  return Status::ok();
}

Dims broadcast_strides(const Dims& shape, const Dims& strides, const Dims& target) {
  Dims r = Dims::of_rank(target.rank, 0);
  const int off = target.rank - shape.rank;
  for (int i = 0; i < shape.rank; ++i)
    if (shape[i] != 1 || target[off + i] == 1) r[off + i] = shape[i] == 1 ? 0 : strides[i];
  return r;
}

template <class Ptr>
Mat<Ptr> mat_over_out(Ptr data, const Dims& st, const MatmulShapes& s) {
  Mat<Ptr> m;
  m.data = data;
  int d = st.rank;
  if (!s.b_vec) m.cs = st[--d];
  if (!s.a_vec) m.rs = st[--d];
  for (int i = 0; i < s.batch.rank; ++i) m.bstride[i] = st[i];
  return m;
}
template Mat<const void*> mat_over_out(const void*, const Dims&, const MatmulShapes&);
template Mat<void*> mat_over_out(void*, const Dims&, const MatmulShapes&);

namespace {
// The batch strides of an operand with shape `shape` (its last `mat_dims`
// dims are the matrix) over the broadcast batch.
void batch_strides(const TensorRef& t, int mat_dims, const MatmulShapes& s, int64_t* out) {
  Dims bs, bst;
  for (int i = 0; i < t.rank() - mat_dims; ++i) {
    bs.push_back(t.shape[i]);
    bst.push_back(t.strides[i]);
  }
  const Dims r = broadcast_strides(bs, bst, s.batch);
  for (int i = 0; i < s.batch.rank; ++i) out[i] = r[i];
}
}  // namespace

Mat<const void*> mat_of_a(const TensorRef& a, const MatmulShapes& s) {
  Mat<const void*> m;
  m.data = a.data;
  if (s.a_vec) {
    m.cs = a.strides[0];
  } else {
    m.rs = a.strides[a.rank() - 2];
    m.cs = a.strides[a.rank() - 1];
    batch_strides(a, 2, s, m.bstride);
  }
  return m;
}

Mat<const void*> mat_of_b(const TensorRef& b, const MatmulShapes& s) {
  Mat<const void*> m;
  m.data = b.data;
  if (s.b_vec) {
    m.rs = b.strides[0];
  } else {
    m.rs = b.strides[b.rank() - 2];
    m.cs = b.strides[b.rank() - 1];
    batch_strides(b, 2, s, m.bstride);
  }
  return m;
}

Problem make_matmul_problem(const MatmulDescriptor& d, const MatmulShapes& s, const MatmulArgs& args) {
  Problem p;
  p.dtype = d.dtype;
  p.batch = s.batch;
  p.m = s.m;
  p.n = s.n;
  p.k = s.k;
  p.a = mat_of_a(args.a, s);
  p.b = mat_of_b(args.b, s);
  p.out = mat_over_out(args.out.data, args.out.strides, s);
  p.has_c = d.has_c;
  if (d.has_c) p.c = mat_over_out(args.c.data, broadcast_strides(args.c.shape, args.c.strides, s.out), s);
  p.has_bias = d.has_bias;
  if (d.has_bias) {
    p.bias = args.bias.data;
    p.bias_stride = args.bias.strides[0];
  }
  p.save_aux = d.save_aux;
  if (d.save_aux) p.aux = mat_over_out(args.aux.data, args.aux.strides, s);
  p.act = d.activation;
  p.alpha = d.alpha;
  p.beta = d.has_c ? d.beta : 0.0;
  return p;
}

MatmulArgs dense_matmul_args(const MatmulDescriptor& d, const MatmulShapes& s, Device dev) {
  auto ref = [&](const Dims& shape) { return TensorRef(nullptr, d.dtype, dev, shape, contiguous_strides(shape), 0); };
  auto mut = [&](const Dims& shape) { return TensorMut(nullptr, d.dtype, dev, shape, contiguous_strides(shape), 0); };
  MatmulArgs a;
  a.a = ref(d.a_shape);
  a.b = ref(d.b_shape);
  a.out = mut(s.out);
  if (d.has_c) a.c = ref(d.c_shape);
  if (d.has_bias) a.bias = ref(Dims{s.n});
  if (d.save_aux) a.aux = mut(s.out);
  return a;
}

}  // namespace baracuda::gemm
