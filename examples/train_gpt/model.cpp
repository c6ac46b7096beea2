// Gpt (model.hpp): plan selection, buffers, forward and backward.
#include "model.hpp"
#include "util.hpp"

#include <baracuda/core/philox.hpp>

#include <algorithm>
#include <cmath>
#include <thread>

namespace train_gpt {

using namespace baracuda;

namespace {


// Standard normals from Philox (host only: the initial weights are computed
// here and uploaded, so every device starts from the same bits).
double normal_at(uint64_t seed, uint64_t i) {
  const PhiloxWords w = philox_block(seed, /*offset=*/0, i);
  const double u1 = uniform_open0_f64(w.w[0], w.w[1]), u2 = uniform_f64(w.w[2], w.w[3]);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace

int64_t GptConfig::parameter_count() const {
  const int64_t C = channels;
  if (arch == Arch::Llama) {
    const int64_t kvC = kv() * head_dim(), F = ffn();
    return 2 * vocab * C + layers * (C * (C + 2 * kvC) + C * C + 3 * C * F + 2 * C) + C;
  }
  return vocab * C + seq_len * C + layers * (12 * C * C + 13 * C) + 2 * C;
}

double GptConfig::flops_per_token() const {
  // Matmul parameters: everything but the position table, norms and biases
  // (and, untied, the input embedding, which is a lookup).
  const double n = arch == Arch::Llama ? static_cast<double>(parameter_count() - vocab * channels)
                                       : static_cast<double>(parameter_count() - seq_len * channels);
  return 6.0 * n + 12.0 * static_cast<double>(layers * seq_len * channels);
}

// ---- Model: what both architectures share ----------------------------------------

std::unique_ptr<Model> Model::create(const Stream& stream, const GptConfig& cfg, DType dtype) {
  if (cfg.arch == GptConfig::Arch::Llama) return std::make_unique<Llama>(stream, cfg, dtype);
  return std::make_unique<Gpt>(stream, cfg, dtype);
}

Model::Model(const Stream& stream, const GptConfig& cfg, DType dtype) : stream_(stream), cfg_(cfg), dtype_(dtype) {
  if (cfg.channels % cfg.heads != 0 || cfg.heads % cfg.kv() != 0)
    throw StatusError(Status(StatusCode::InvalidProblem, "Model: channels % heads and heads % kv_heads must be 0"));
  loss_dtype_ = dtype == DType::F64 ? DType::F64 : DType::F32;
}

Buffer Model::buffer(int64_t n, DType t) {
  Buffer b(stream_.device(), static_cast<size_t>(std::max<int64_t>(n, 1)) * dtype_size(t));
  bytes_ += b.bytes();
  return b;
}

void Model::finish(std::initializer_list<const PlanBase*> plans) {
  const int64_t BT = cfg_.batch * cfg_.seq_len;
  params_buf_ = buffer(n_params_, dtype_);
  grads_buf_ = buffer(n_params_, dtype_);
  CrossEntropyDescriptor cd;
  cd.dtype = dtype_;
  cd.rows = BT;
  cd.classes = cfg_.vocab;
  cd.index_dtype = DType::I32;
  cd.ignore_index = -100;
  cd.reduction = LossReduction::Mean;
  cd.loss_dtype = loss_dtype_;
  cd.with_grad = true;
  ce_ = take(CrossEntropyPlan::select(stream_, cd));
  logits_ = buffer(BT * cfg_.vocab, dtype_);
  loss_ = buffer(1, loss_dtype_);
  dloss_ = buffer(1, loss_dtype_);
  ce_lse_ = buffer(BT, ce_.lse_dtype());
  tokens_ = buffer(BT, DType::I32);
  targets_ = buffer(BT, DType::I32);
  if (loss_dtype_ == DType::F64) {
    const double one = 1.0;
    check(dloss_.copy_from_host(&one, 8));
  } else {
    const float one = 1.0f;
    check(dloss_.copy_from_host(&one, 4));
  }
  size_t ws = ce_.workspace_size();
  for (const PlanBase* p : plans) ws = std::max(ws, p->workspace_size());
  ws_ = buffer(static_cast<int64_t>(std::max<size_t>(ws, 16)), DType::U8);
}

TensorRef Model::tokens() const { return act(tokens_, {cfg_.batch, cfg_.seq_len}, DType::I32); }
TensorMut Model::logits_view() const { return act(logits_, {cfg_.batch * cfg_.seq_len, cfg_.vocab}); }

Status Model::loss_with_grad() {
  const int64_t BT = cfg_.batch * cfg_.seq_len;
  const TensorMut logits = logits_view();
  CrossEntropyArgs a;
  a.logits = logits;
  a.target = act(targets_, {BT}, DType::I32);
  a.loss = act(loss_, {}, loss_dtype_);
  a.lse = act(ce_lse_, {BT}, ce_.lse_dtype());
  a.dloss = act(dloss_, {}, loss_dtype_);
  a.dlogits = logits;
  return ce_.run(stream_, ws(), a);
}

size_t Model::add_param(const std::string& name, Dims shape, double init_std, bool decay) {
  ParamInfo p;
  p.name = name;
  p.shape = shape;
  p.offset = n_params_;
  p.numel = shape_numel(shape);
  p.init_std = init_std;
  p.decay = decay;
  n_params_ += p.numel;
  params_.push_back(p);
  return params_.size() - 1;
}

TensorMut Model::act(const Buffer& b, Dims shape, DType t) const {
  return TensorMut::contiguous(b.data(), t, stream_.device(), shape, static_cast<int64_t>(b.bytes() / dtype_size(t)));
}

TensorMut Model::param(size_t i) const {
  const ParamInfo& p = params_[i];
  return TensorMut(static_cast<char*>(params_buf_.data()) + p.offset * dtype_size(dtype_), dtype_, stream_.device(),
                   p.shape, contiguous_strides(p.shape), p.numel);
}
TensorMut Model::grad(size_t i) const {
  const ParamInfo& p = params_[i];
  return TensorMut(static_cast<char*>(grads_buf_.data()) + p.offset * dtype_size(dtype_), dtype_, stream_.device(),
                   p.shape, contiguous_strides(p.shape), p.numel);
}

// qkv is [B, T, 3, H, D] (row-major [B*T, 3C]): q, k or v as [B, H, T, D].
TensorMut Gpt::qkv_view(const Buffer& b, int which) const {
  const int64_t B = cfg_.batch, T = cfg_.seq_len, C = cfg_.channels, H = cfg_.heads, D = cfg_.head_dim();
  const int64_t cap = static_cast<int64_t>(b.bytes() / dtype_size(dtype_)) - which * C;
  return TensorMut(static_cast<char*>(b.data()) + which * C * dtype_size(dtype_), dtype_, stream_.device(), {B, H, T, D},
                   {T * 3 * C, D, 3 * C, 1}, cap);
}
// [B, T, H, D] (row-major [B*T, C]) as [B, H, T, D].
TensorMut Model::heads_view(const Buffer& b) const {
  const int64_t B = cfg_.batch, T = cfg_.seq_len, C = cfg_.channels, H = cfg_.heads, D = cfg_.head_dim();
  return TensorMut(b.data(), dtype_, stream_.device(), {B, H, T, D}, {T * C, D, C, 1},
                   static_cast<int64_t>(b.bytes() / dtype_size(dtype_)));
}

// ---- GPT-2 -----------------------------------------------------------------------

Gpt::Gpt(const Stream& stream, const GptConfig& cfg, DType dtype) : Model(stream, cfg, dtype) {
  const int64_t B = cfg.batch, T = cfg.seq_len, C = cfg.channels, V = cfg.vocab, L = cfg.layers, H = cfg.heads;
  const int64_t BT = B * T;
  const double std_w = 0.02, std_res = 0.02 / std::sqrt(2.0 * static_cast<double>(L));

  // ---- parameters ----
  p_wte_ = add_param("transformer.wte.weight", {V, C}, std_w, true);
  p_wpe_ = add_param("transformer.wpe.weight", {T, C}, std_w, true);
  for (int64_t l = 0; l < L; ++l) {
    const std::string n = "transformer.h." + std::to_string(l) + ".";
    LayerParams q;
    q.ln1_w = add_param(n + "ln_1.weight", {C}, -1, false);
    q.ln1_b = add_param(n + "ln_1.bias", {C}, 0, false);
    q.attn_w = add_param(n + "attn.c_attn.weight", {3 * C, C}, std_w, true);
    q.attn_b = add_param(n + "attn.c_attn.bias", {3 * C}, 0, false);
    q.proj_w = add_param(n + "attn.c_proj.weight", {C, C}, std_res, true);
    q.proj_b = add_param(n + "attn.c_proj.bias", {C}, 0, false);
    q.ln2_w = add_param(n + "ln_2.weight", {C}, -1, false);
    q.ln2_b = add_param(n + "ln_2.bias", {C}, 0, false);
    q.fc_w = add_param(n + "mlp.c_fc.weight", {4 * C, C}, std_w, true);
    q.fc_b = add_param(n + "mlp.c_fc.bias", {4 * C}, 0, false);
    q.fcp_w = add_param(n + "mlp.c_proj.weight", {C, 4 * C}, std_res, true);
    q.fcp_b = add_param(n + "mlp.c_proj.bias", {C}, 0, false);
    lp_.push_back(q);
  }
  p_lnf_w_ = add_param("transformer.ln_f.weight", {C}, -1, false);
  p_lnf_b_ = add_param("transformer.ln_f.bias", {C}, 0, false);

  // ---- plans ----
  EmbeddingDescriptor ed;
  ed.dtype = dtype;
  ed.index_dtype = DType::I32;
  ed.num_embeddings = V;
  ed.embedding_dim = C;
  ed.index_shape = {B, T};
  embed_ = take(EmbeddingPlan::select(stream, ed));

  NormDescriptor nd;
  nd.kind = NormKind::LayerNorm;
  nd.dtype = dtype;
  nd.shape = {BT, C};
  nd.has_weight = nd.has_bias = true;
  nd.residual = true;
  norm_ = take(NormPlan::select(stream, nd));
  stats_dtype_ = norm_.stats_dtype();
  nd.shape = {B, T, C};  // the first norm: its residual (wpe) is broadcast over the batch
  norm_first_ = take(NormPlan::select(stream, nd));

  auto linear = [&](int64_t K, int64_t N, bool bias, GemmActivation act) {
    LinearDescriptor d;
    d.dtype = dtype;
    d.x_shape = {BT, K};
    d.out_features = N;
    d.has_bias = bias;
    d.activation = act;
    d.save_aux = act != GemmActivation::None;
    return d;
  };
  const LinearDescriptor d_attn = linear(C, 3 * C, true, GemmActivation::None);
  const LinearDescriptor d_proj = linear(C, C, true, GemmActivation::None);
  const LinearDescriptor d_fc = linear(C, 4 * C, true, GemmActivation::GeluTanh);
  const LinearDescriptor d_fcp = linear(4 * C, C, true, GemmActivation::None);
  const LinearDescriptor d_head = linear(C, V, false, GemmActivation::None);
  lin_attn_ = take(LinearPlan::select(stream, d_attn));
  lin_proj_ = take(LinearPlan::select(stream, d_proj));
  lin_fc_ = take(LinearPlan::select(stream, d_fc));
  lin_fcp_ = take(LinearPlan::select(stream, d_fcp));
  lin_head_ = take(LinearPlan::select(stream, d_head));

  FlashSdpaDescriptor fd;
  fd.dtype = dtype;
  fd.batch = B;
  fd.heads = fd.kv_heads = H;
  fd.q_len = fd.kv_len = T;
  fd.head_dim = cfg.head_dim();
  fd.causal = true;
  attn_ = take(FlashSdpaPlan::select(stream, fd));
  bw_flash_ = take(FlashSdpaBackwardPlan::select(stream, fd));


  auto backward = [&](const LinearDescriptor& f, bool dx, bool dw, bool db) {
    LinearBackwardDescriptor d;
    d.forward = f;
    d.need_dx = dx;
    d.need_dw = dw;
    d.need_db = db && f.has_bias;
    return d;
  };
  bw_head_dx_ = take(LinearBackwardPlan::select(stream, backward(d_head, true, false, false)));
  LinearBackwardDescriptor head_dw = backward(d_head, false, true, false);
  head_dw.accumulate = true;  // wte's gradient: the embedding's part is already there
  bw_head_dw_ = take(LinearBackwardPlan::select(stream, head_dw));
  LinearBackwardDescriptor fcp = backward(d_fcp, true, true, true);
  fcp.input_activation = GemmActivation::GeluTanh;  // dx = (dy W) * gelu'(pre-activation)
  fcp.need_input_bias_grad = true;                  // ... and c_fc's bias gradient, its row sums
  bw_fcp_ = take(LinearBackwardPlan::select(stream, fcp));
  // c_fc's own backward sees the GEMM alone: GELU' was applied by the
  // projection's dx epilogue above, and its bias gradient came from there too.
  bw_fc_ = take(LinearBackwardPlan::select(stream, backward(linear(C, 4 * C, true, GemmActivation::None), true, true, false)));
  bw_proj_ = take(LinearBackwardPlan::select(stream, backward(d_proj, true, true, true)));
  bw_attn_ = take(LinearBackwardPlan::select(stream, backward(d_attn, true, true, true)));

  NormBackwardDescriptor nb;
  nb.forward = nd;
  nb.forward.shape = {BT, C};
  bw_norm_ = take(NormBackwardPlan::select(stream, nb));
  nb.residual_grad = true;
  bw_norm_res_ = take(NormBackwardPlan::select(stream, nb));

  EmbeddingBackwardDescriptor eb;
  eb.forward = ed;
  eb.grad_dtype = dtype;
  eb.layout = EmbeddingGradLayout::Dense;
  bw_embed_ = take(EmbeddingBackwardPlan::select(stream, eb));

  ReduceDescriptor rd;
  rd.kind = ReduceKind::Sum;
  rd.dtype = dtype;
  rd.shape = {B, T, C};
  rd.axes = {0};
  ReducePlan wpe_sum = take(ReducePlan::select(stream, rd));
  if (wpe_sum.output_dtype() != dtype)
    throw StatusError(Status(StatusCode::Unsupported, "Gpt: the position gradient's sum would change dtype"));
  bw_wpe_ = wpe_sum;

  // ---- buffers ----
  auto buf = [&](int64_t n, DType t) { return buffer(n, t); };
  layers_.resize(static_cast<size_t>(L));
  for (Layer& y : layers_) {
    y.h = buf(BT * C, dtype);
    y.ln1 = buf(BT * C, dtype);
    y.ln1_mean = buf(BT, stats_dtype_);
    y.ln1_rstd = buf(BT, stats_dtype_);
    y.qkv = buf(BT * 3 * C, dtype);
    y.atty = buf(BT * C, dtype);
    y.lse = buf(B * H * T, DType::F32);
    y.hmid = buf(BT * C, dtype);
    y.ln2 = buf(BT * C, dtype);
    y.ln2_mean = buf(BT, stats_dtype_);
    y.ln2_rstd = buf(BT, stats_dtype_);
    y.fc_aux = buf(BT * 4 * C, dtype);
    y.fc_act = buf(BT * 4 * C, dtype);
  }
  tok_emb_ = buf(BT * C, dtype);
  h_final_ = buf(BT * C, dtype);
  lnf_ = buf(BT * C, dtype);
  lnf_mean_ = buf(BT, stats_dtype_);
  lnf_rstd_ = buf(BT, stats_dtype_);
  scratch_c_ = buf(BT * C, dtype);
  scratch_c2_ = buf(BT * C, dtype);
  scratch_3c_ = buf(BT * 3 * C, dtype);
  scratch_4c_ = buf(BT * 4 * C, dtype);
  dres_ = buf(BT * C, dtype);
  finish({&embed_, &norm_, &norm_first_, &lin_attn_, &lin_proj_, &lin_fc_, &lin_fcp_, &lin_head_, &attn_, &bw_head_dx_,
          &bw_head_dw_, &bw_fcp_, &bw_fc_, &bw_proj_, &bw_attn_, &bw_norm_, &bw_norm_res_, &bw_flash_, &bw_embed_,
          &bw_wpe_});
}

// Each value is a function of (seed, its index) alone, so the work splits
// over threads without changing a bit (a 1B-parameter model would take a
// minute on one core).
std::vector<double> Model::initial_values(uint64_t seed) const {
  std::vector<double> v(static_cast<size_t>(n_params_));
  auto fill = [&](size_t first, size_t last) {
    for (const ParamInfo& p : params_) {
      const size_t lo = std::max(first, static_cast<size_t>(p.offset));
      const size_t hi = std::min(last, static_cast<size_t>(p.offset + p.numel));
      for (size_t k = lo; k < hi; ++k)
        v[k] = p.init_std > 0 ? p.init_std * normal_at(seed, k) : p.init_std < 0 ? 1.0 : 0.0;
    }
  };
  const size_t n = v.size();
  const size_t threads = n < (size_t{1} << 20) ? 1 : std::clamp<size_t>(std::thread::hardware_concurrency(), 1, 32);
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t) pool.emplace_back(fill, n * t / threads, n * (t + 1) / threads);
  fill(0, n / threads);
  for (std::thread& t : pool) t.join();
  return v;
}

Status Model::upload_params(const std::vector<double>& values) {
  if (values.size() != static_cast<size_t>(n_params_))
    return Status(StatusCode::InvalidProblem, "Gpt::upload_params: wrong number of values");
  std::vector<unsigned char> bytes(values.size() * dtype_size(dtype_));
  for (size_t i = 0; i < values.size(); ++i) {
    switch (dtype_) {
      case DType::F64: reinterpret_cast<double*>(bytes.data())[i] = values[i]; break;
      case DType::F32: reinterpret_cast<float*>(bytes.data())[i] = static_cast<float>(values[i]); break;
      case DType::BF16: reinterpret_cast<bfloat16*>(bytes.data())[i] = bfloat16(values[i]); break;
      case DType::F16: reinterpret_cast<half*>(bytes.data())[i] = half(values[i]); break;
      default: return Status(StatusCode::Unsupported, "Gpt::upload_params: unsupported dtype");
    }
  }
  return params_buf_.copy_from_host(bytes.data(), bytes.size());
}

Status Model::set_batch(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets) {
  const size_t n = static_cast<size_t>(cfg_.batch * cfg_.seq_len);
  if (tokens.size() != n || targets.size() != n)
    return Status(StatusCode::InvalidProblem, "Gpt::set_batch: tokens and targets must hold B * T ids");
  BARACUDA_RETURN_IF_ERROR(tokens_.copy_from_host(tokens.data(), n * 4));
  return targets_.copy_from_host(targets.data(), n * 4);
}

Status Model::read_loss(double* loss) const {
  if (loss_dtype_ == DType::F64) return loss_.copy_to_host(loss, 8);
  float f = 0;
  BARACUDA_RETURN_IF_ERROR(loss_.copy_to_host(&f, 4));
  *loss = f;
  return Status::ok();
}

Status Model::read_logits(std::vector<float>* out) const {
  *out = to_f32(logits_, static_cast<size_t>(cfg_.batch * cfg_.seq_len * cfg_.vocab), dtype_);
  return Status::ok();
}

Status Gpt::forward() {
  const TensorRef tokens = act(tokens_, {cfg_.batch, cfg_.seq_len}, DType::I32);
  const int64_t B = cfg_.batch, T = cfg_.seq_len, C = cfg_.channels, L = cfg_.layers, BT = B * T;
  const Workspace w = ws();
  const Stream& s = stream_;
  BARACUDA_RETURN_IF_ERROR(embed_.run(s, w, {param(p_wte_), tokens, act(tok_emb_, {B, T, C})}));
  for (int64_t l = 0; l < L; ++l) {
    Layer& y = layers_[static_cast<size_t>(l)];
    const LayerParams& q = lp_[static_cast<size_t>(l)];
    if (l == 0) {  // h0 = tok_emb + wpe (broadcast over the batch: stride 0), a = ln_1(h0)
      const TensorMut wpe = param(p_wpe_);
      NormArgs a;
      a.x = act(tok_emb_, {B, T, C});
      a.residual = TensorRef(wpe.data, dtype_, stream_.device(), {B, T, C}, {0, C, 1}, T * C);
      a.weight = param(q.ln1_w);
      a.bias = param(q.ln1_b);
      a.y = act(y.ln1, {B, T, C});
      a.h = act(y.h, {B, T, C});
      a.mean = act(y.ln1_mean, norm_first_.stats_shape(), stats_dtype_);
      a.rstd = act(y.ln1_rstd, norm_first_.stats_shape(), stats_dtype_);
      BARACUDA_RETURN_IF_ERROR(norm_first_.run(s, w, a));
    }
    BARACUDA_RETURN_IF_ERROR(lin_attn_.run(s, w, {act(y.ln1, {BT, C}), param(q.attn_w), param(q.attn_b), act(y.qkv, {BT, 3 * C}), {}}));
    FlashSdpaArgs fa;
    fa.q = qkv_view(y.qkv, 0);
    fa.k = qkv_view(y.qkv, 1);
    fa.v = qkv_view(y.qkv, 2);
    fa.y = heads_view(y.atty);
    fa.lse = act(y.lse, {B, cfg_.heads, T}, DType::F32);
    BARACUDA_RETURN_IF_ERROR(attn_.run(s, w, fa));
    BARACUDA_RETURN_IF_ERROR(lin_proj_.run(s, w, {act(y.atty, {BT, C}), param(q.proj_w), param(q.proj_b), act(scratch_c_, {BT, C}), {}}));
    {
      NormArgs a;
      a.x = act(scratch_c_, {BT, C});
      a.residual = act(y.h, {BT, C});
      a.weight = param(q.ln2_w);
      a.bias = param(q.ln2_b);
      a.y = act(y.ln2, {BT, C});
      a.h = act(y.hmid, {BT, C});
      a.mean = act(y.ln2_mean, {BT}, stats_dtype_);
      a.rstd = act(y.ln2_rstd, {BT}, stats_dtype_);
      BARACUDA_RETURN_IF_ERROR(norm_.run(s, w, a));
    }
    BARACUDA_RETURN_IF_ERROR(lin_fc_.run(s, w, {act(y.ln2, {BT, C}), param(q.fc_w), param(q.fc_b), act(y.fc_act, {BT, 4 * C}), act(y.fc_aux, {BT, 4 * C})}));
    BARACUDA_RETURN_IF_ERROR(lin_fcp_.run(s, w, {act(y.fc_act, {BT, 4 * C}), param(q.fcp_w), param(q.fcp_b), act(scratch_c_, {BT, C}), {}}));
    {
      const bool last = l + 1 == L;
      Layer* next = last ? nullptr : &layers_[static_cast<size_t>(l + 1)];
      NormArgs a;
      a.x = act(scratch_c_, {BT, C});
      a.residual = act(y.hmid, {BT, C});
      a.weight = param(last ? p_lnf_w_ : lp_[static_cast<size_t>(l + 1)].ln1_w);
      a.bias = param(last ? p_lnf_b_ : lp_[static_cast<size_t>(l + 1)].ln1_b);
      a.y = act(last ? lnf_ : next->ln1, {BT, C});
      a.h = act(last ? h_final_ : next->h, {BT, C});
      a.mean = act(last ? lnf_mean_ : next->ln1_mean, {BT}, stats_dtype_);
      a.rstd = act(last ? lnf_rstd_ : next->ln1_rstd, {BT}, stats_dtype_);
      BARACUDA_RETURN_IF_ERROR(norm_.run(s, w, a));
    }
  }
  return lin_head_.run(s, w, {act(lnf_, {BT, C}), param(p_wte_), {}, act(logits_, {BT, cfg_.vocab}), {}});
}

Status Gpt::backward() {
  const TensorRef tokens = act(tokens_, {cfg_.batch, cfg_.seq_len}, DType::I32);
  const TensorRef targets = act(targets_, {cfg_.batch * cfg_.seq_len}, DType::I32);
  const int64_t B = cfg_.batch, T = cfg_.seq_len, C = cfg_.channels, L = cfg_.layers, BT = B * T, V = cfg_.vocab;
  const Workspace w = ws();
  const Stream& s = stream_;
  const TensorMut logits = act(logits_, {BT, V});
  BARACUDA_RETURN_IF_ERROR(loss_with_grad());  // loss and dlogits (in place over the logits)
  const TensorMut dres = act(dres_, {BT, C}), dC = act(scratch_c_, {BT, C});
  {  // head: d ln_f output = dlogits wte
    LinearBackwardArgs a;
    a.dy = logits;
    a.weight = param(p_wte_);
    a.dx = dC;
    BARACUDA_RETURN_IF_ERROR(bw_head_dx_.run(s, w, a));
  }
  {  // ln_f: dres = d h_L
    NormBackwardArgs a;
    a.dy = dC;
    a.x = act(h_final_, {BT, C});
    a.weight = param(p_lnf_w_);
    a.mean = act(lnf_mean_, {BT}, stats_dtype_);
    a.rstd = act(lnf_rstd_, {BT}, stats_dtype_);
    a.dx = dres;
    a.dweight = grad(p_lnf_w_);
    a.dbias = grad(p_lnf_b_);
    BARACUDA_RETURN_IF_ERROR(bw_norm_.run(s, w, a));
  }
  for (int64_t l = L - 1; l >= 0; --l) {
    Layer& y = layers_[static_cast<size_t>(l)];
    const LayerParams& q = lp_[static_cast<size_t>(l)];
    const TensorMut d4 = act(scratch_4c_, {BT, 4 * C});
    {  // MLP projection; dres is also the gradient of its output (the residual add)
      LinearBackwardArgs a;
      a.dy = dres;
      a.x = act(y.fc_act, {BT, 4 * C});
      a.weight = param(q.fcp_w);
      a.x_aux = act(y.fc_aux, {BT, 4 * C});
      a.dx = d4;  // the gradient of c_fc's pre-activation (GELU' applied)
      a.dw = grad(q.fcp_w);
      a.db = grad(q.fcp_b);
      a.dbias_in = grad(q.fc_b);
      BARACUDA_RETURN_IF_ERROR(bw_fcp_.run(s, w, a));
    }
    {
      LinearBackwardArgs a;
      a.dy = d4;
      a.x = act(y.ln2, {BT, C});
      a.weight = param(q.fc_w);
      a.dx = dC;
      a.dw = grad(q.fc_w);
      BARACUDA_RETURN_IF_ERROR(bw_fc_.run(s, w, a));
    }
    {  // ln_2, adding the residual path: dres = d m_l
      NormBackwardArgs a;
      a.dy = dC;
      a.x = act(y.hmid, {BT, C});
      a.weight = param(q.ln2_w);
      a.mean = act(y.ln2_mean, {BT}, stats_dtype_);
      a.rstd = act(y.ln2_rstd, {BT}, stats_dtype_);
      a.dh_in = dres;
      a.dx = dres;
      a.dweight = grad(q.ln2_w);
      a.dbias = grad(q.ln2_b);
      BARACUDA_RETURN_IF_ERROR(bw_norm_res_.run(s, w, a));
    }
    const TensorMut datty = act(scratch_c2_, {BT, C});
    {
      LinearBackwardArgs a;
      a.dy = dres;
      a.x = act(y.atty, {BT, C});
      a.weight = param(q.proj_w);
      a.dx = datty;
      a.dw = grad(q.proj_w);
      a.db = grad(q.proj_b);
      BARACUDA_RETURN_IF_ERROR(bw_proj_.run(s, w, a));
    }
    {
      FlashSdpaBackwardArgs a;
      a.dy = heads_view(scratch_c2_);
      a.q = qkv_view(y.qkv, 0);
      a.k = qkv_view(y.qkv, 1);
      a.v = qkv_view(y.qkv, 2);
      a.y = heads_view(y.atty);
      a.lse = act(y.lse, {B, cfg_.heads, T}, DType::F32);
      a.dq = qkv_view(scratch_3c_, 0);
      a.dk = qkv_view(scratch_3c_, 1);
      a.dv = qkv_view(scratch_3c_, 2);
      BARACUDA_RETURN_IF_ERROR(bw_flash_.run(s, w, a));
    }
    {
      LinearBackwardArgs a;
      a.dy = act(scratch_3c_, {BT, 3 * C});
      a.x = act(y.ln1, {BT, C});
      a.weight = param(q.attn_w);
      a.dx = dC;
      a.dw = grad(q.attn_w);
      a.db = grad(q.attn_b);
      BARACUDA_RETURN_IF_ERROR(bw_attn_.run(s, w, a));
    }
    {  // ln_1, adding the residual path: dres = d h_l
      NormBackwardArgs a;
      a.dy = dC;
      a.x = act(y.h, {BT, C});
      a.weight = param(q.ln1_w);
      a.mean = act(y.ln1_mean, {BT}, stats_dtype_);
      a.rstd = act(y.ln1_rstd, {BT}, stats_dtype_);
      a.dh_in = dres;
      a.dx = dres;
      a.dweight = grad(q.ln1_w);
      a.dbias = grad(q.ln1_b);
      BARACUDA_RETURN_IF_ERROR(bw_norm_res_.run(s, w, a));
    }
  }
  // h0 = wte[tokens] + wpe: dwte (dense, every row written), then dwpe = the
  // sum over the batch, then the tied head's weight gradient added to dwte.
  BARACUDA_RETURN_IF_ERROR(bw_embed_.run(s, w, {tokens, act(dres_, {B, T, C}), grad(p_wte_), {}, {}, {}}));
  BARACUDA_RETURN_IF_ERROR(bw_wpe_.run(s, w, {act(dres_, {B, T, C}), grad(p_wpe_)}));
  LinearBackwardArgs a;
  a.dy = logits;
  a.x = act(lnf_, {BT, C});
  a.dw = grad(p_wte_);
  return bw_head_dw_.run(s, w, a);
}

}  // namespace train_gpt
