// Llama (model.hpp): RMSNorm, RoPE, grouped-query attention, SwiGLU, untied
// head, no biases — the same plan chain style as Gpt (model.cpp).
#include <algorithm>
#include <cmath>

#include "model.hpp"
#include "util.hpp"

namespace train_gpt {

using namespace baracuda;

// qkv is [B, T, (H + 2 Hk) D] row-major: q as [B, H, T, D], k / v as [B, Hk, T, D].
TensorMut Llama::qkv_view(const Buffer& b, int which) const {
  const int64_t B = cfg_.batch, T = cfg_.seq_len, H = cfg_.heads, Hk = cfg_.kv(), D = cfg_.head_dim();
  const int64_t W = (H + 2 * Hk) * D;
  const int64_t off = which == 0 ? 0 : (which == 1 ? H * D : (H + Hk) * D);
  const int64_t heads = which == 0 ? H : Hk;
  return TensorMut(static_cast<char*>(b.data()) + off * dtype_size(dtype_), dtype_, stream_.device(),
                   {B, heads, T, D}, {T * W, D, W, 1}, static_cast<int64_t>(b.bytes() / dtype_size(dtype_)) - off);
}
// gu is [B*T, 2F]: gate = columns [0, F), up = [F, 2F).
TensorMut Llama::half_view(const Buffer& b, int which) const {
  const int64_t BT = cfg_.batch * cfg_.seq_len, F = cfg_.ffn();
  const int64_t off = which * F;
  return TensorMut(static_cast<char*>(b.data()) + off * dtype_size(dtype_), dtype_, stream_.device(), {BT, F},
                   {2 * F, 1}, static_cast<int64_t>(b.bytes() / dtype_size(dtype_)) - off);
}

Llama::Llama(const Stream& stream, const GptConfig& cfg, DType dtype) : Model(stream, cfg, dtype) {
  const int64_t B = cfg.batch, T = cfg.seq_len, C = cfg.channels, V = cfg.vocab, L = cfg.layers, H = cfg.heads;
  const int64_t Hk = cfg.kv(), D = cfg.head_dim(), F = cfg.ffn(), BT = B * T, W = (H + 2 * Hk) * D;
  const double std_w = 0.02, std_res = 0.02 / std::sqrt(2.0 * static_cast<double>(L));

  p_emb_ = add_param("model.embed_tokens.weight", {V, C}, std_w, true);
  for (int64_t l = 0; l < L; ++l) {
    const std::string n = "model.layers." + std::to_string(l) + ".";
    LayerParams q;
    q.ln1 = add_param(n + "input_layernorm.weight", {C}, -1, false);
    q.qkv = add_param(n + "self_attn.qkv_proj.weight", {W, C}, std_w, true);
    q.o = add_param(n + "self_attn.o_proj.weight", {C, C}, std_res, true);
    q.ln2 = add_param(n + "post_attention_layernorm.weight", {C}, -1, false);
    q.gu = add_param(n + "mlp.gate_up_proj.weight", {2 * F, C}, std_w, true);
    q.down = add_param(n + "mlp.down_proj.weight", {C, F}, std_res, true);
    lp_.push_back(q);
  }
  p_norm_ = add_param("model.norm.weight", {C}, -1, false);
  p_head_ = add_param("lm_head.weight", {V, C}, std_w, true);

  EmbeddingDescriptor ed;
  ed.dtype = dtype;
  ed.index_dtype = DType::I32;
  ed.num_embeddings = V;
  ed.embedding_dim = C;
  ed.index_shape = {B, T};
  embed_ = take(EmbeddingPlan::select(stream, ed));

  NormDescriptor nd;
  nd.kind = NormKind::RMSNorm;
  nd.dtype = dtype;
  nd.shape = {BT, C};
  nd.has_weight = true;
  nd.has_bias = false;
  nd.eps = 1e-5;
  norm_first_ = take(NormPlan::select(stream, nd));
  NormBackwardDescriptor nb;
  nb.forward = nd;
  nb.residual_grad = true;  // layer 0's input feeds both rms_1 and the residual path
  bw_norm_res_ = take(NormBackwardPlan::select(stream, nb));
  nb.residual_grad = false;
  bw_norm_ = take(NormBackwardPlan::select(stream, nb));
  nd.residual = true;
  norm_ = take(NormPlan::select(stream, nd));
  stats_dtype_ = norm_.stats_dtype();

  auto linear = [&](int64_t K, int64_t N) {
    LinearDescriptor d;
    d.dtype = dtype;
    d.x_shape = {BT, K};
    d.out_features = N;
    d.has_bias = false;
    return d;
  };
  const LinearDescriptor d_qkv = linear(C, W), d_o = linear(C, C), d_gu = linear(C, 2 * F), d_down = linear(F, C),
                         d_head = linear(C, V);
  lin_qkv_ = take(LinearPlan::select(stream, d_qkv));
  lin_o_ = take(LinearPlan::select(stream, d_o));
  lin_gu_ = take(LinearPlan::select(stream, d_gu));
  lin_down_ = take(LinearPlan::select(stream, d_down));
  lin_head_ = take(LinearPlan::select(stream, d_head));
  auto backward = [&](const LinearDescriptor& f) {
    LinearBackwardDescriptor d;
    d.forward = f;
    d.need_db = false;
    return d;
  };
  bw_qkv_ = take(LinearBackwardPlan::select(stream, backward(d_qkv)));
  bw_o_ = take(LinearBackwardPlan::select(stream, backward(d_o)));
  bw_gu_ = take(LinearBackwardPlan::select(stream, backward(d_gu)));
  bw_down_ = take(LinearBackwardPlan::select(stream, backward(d_down)));
  bw_head_ = take(LinearBackwardPlan::select(stream, backward(d_head)));

  RopeDescriptor rd;
  rd.dtype = dtype;
  rd.batch = B;
  rd.heads = H;
  rd.kv_heads = Hk;
  rd.seq_len = T;
  rd.head_dim = D;
  rd.has_k = true;
  rd.pairs = RopePairs::HalfSplit;  // Hugging Face Llama's rotate_half
  rd.theta = cfg.rope_theta;
  rope_ = take(RopePlan::select(stream, rd));
  bw_rope_ = take(RopeBackwardPlan::select(stream, rd));

  FlashSdpaDescriptor fd;
  fd.dtype = dtype;
  fd.batch = B;
  fd.heads = H;
  fd.kv_heads = Hk;
  fd.q_len = fd.kv_len = T;
  fd.head_dim = D;
  fd.causal = true;
  attn_ = take(FlashSdpaPlan::select(stream, fd));
  bw_flash_ = take(FlashSdpaBackwardPlan::select(stream, fd));

  BinaryDescriptor sd;
  sd.op = BinaryOp::SwiGlu;
  sd.a = ElementwiseOperand::tensor(dtype, {BT, F});
  sd.b = ElementwiseOperand::tensor(dtype, {BT, F});
  swiglu_ = take(BinaryPlan::select(stream, sd));
  BinaryBackwardDescriptor sb;
  sb.forward = sd;
  bw_swiglu_ = take(BinaryBackwardPlan::select(stream, sb));

  EmbeddingBackwardDescriptor eb;
  eb.forward = ed;
  eb.grad_dtype = dtype;
  eb.layout = EmbeddingGradLayout::Dense;
  bw_embed_ = take(EmbeddingBackwardPlan::select(stream, eb));

  layers_.resize(static_cast<size_t>(L));
  for (size_t l = 0; l < layers_.size(); ++l) {
    Layer& y = layers_[l];
    if (l > 0) y.h = buffer(BT * C, dtype);  // layer 0's input is tok_emb_
    y.ln1 = buffer(BT * C, dtype);
    y.ln1_rstd = buffer(BT, stats_dtype_);
    y.qkv = buffer(BT * W, dtype);
    y.atty = buffer(BT * C, dtype);
    y.lse = buffer(B * H * T, DType::F32);
    y.hmid = buffer(BT * C, dtype);
    y.ln2 = buffer(BT * C, dtype);
    y.ln2_rstd = buffer(BT, stats_dtype_);
    y.gu = buffer(BT * 2 * F, dtype);
    y.act = buffer(BT * F, dtype);
  }
  tok_emb_ = buffer(BT * C, dtype);
  h_final_ = buffer(BT * C, dtype);
  lnf_ = buffer(BT * C, dtype);
  lnf_rstd_ = buffer(BT, stats_dtype_);
  scratch_c_ = buffer(BT * C, dtype);
  scratch_c2_ = buffer(BT * C, dtype);
  scratch_f_ = buffer(BT * F, dtype);
  scratch_2f_ = buffer(BT * 2 * F, dtype);
  scratch_qkv_ = buffer(BT * W, dtype);
  dres_ = buffer(BT * C, dtype);
  finish({&embed_, &norm_first_, &norm_, &lin_qkv_, &lin_o_, &lin_gu_, &lin_down_, &lin_head_, &rope_, &attn_,
          &swiglu_, &bw_head_, &bw_down_, &bw_gu_, &bw_o_, &bw_qkv_, &bw_swiglu_, &bw_rope_, &bw_norm_, &bw_norm_res_,
          &bw_flash_, &bw_embed_});
}

Status Llama::forward() {
  const int64_t B = cfg_.batch, T = cfg_.seq_len, C = cfg_.channels, L = cfg_.layers, BT = B * T, F = cfg_.ffn();
  const int64_t W = (cfg_.heads + 2 * cfg_.kv()) * cfg_.head_dim();
  const Workspace w = ws();
  const Stream& s = stream_;
  BARACUDA_RETURN_IF_ERROR(embed_.run(s, w, {param(p_emb_), tokens(), act(tok_emb_, {B, T, C})}));
  {
    NormArgs a;
    a.x = act(tok_emb_, {BT, C});
    a.weight = param(lp_[0].ln1);
    a.y = act(layers_[0].ln1, {BT, C});
    a.rstd = act(layers_[0].ln1_rstd, {BT}, stats_dtype_);
    BARACUDA_RETURN_IF_ERROR(norm_first_.run(s, w, a));
  }
  for (int64_t l = 0; l < L; ++l) {
    Layer& y = layers_[static_cast<size_t>(l)];
    const LayerParams& q = lp_[static_cast<size_t>(l)];
    const Buffer& h = l == 0 ? tok_emb_ : y.h;
    BARACUDA_RETURN_IF_ERROR(lin_qkv_.run(s, w, {act(y.ln1, {BT, C}), param(q.qkv), {}, act(y.qkv, {BT, W}), {}}));
    {  // RoPE in place on q and k: the attention and its backward read the rotated values
      RopeArgs a;
      a.q = qkv_view(y.qkv, 0);
      a.k = qkv_view(y.qkv, 1);
      a.q_out = qkv_view(y.qkv, 0);
      a.k_out = qkv_view(y.qkv, 1);
      BARACUDA_RETURN_IF_ERROR(rope_.run(s, w, a));
    }
    FlashSdpaArgs fa;
    fa.q = qkv_view(y.qkv, 0);
    fa.k = qkv_view(y.qkv, 1);
    fa.v = qkv_view(y.qkv, 2);
    fa.y = heads_view(y.atty);
    fa.lse = act(y.lse, {B, cfg_.heads, T}, DType::F32);
    BARACUDA_RETURN_IF_ERROR(attn_.run(s, w, fa));
    BARACUDA_RETURN_IF_ERROR(lin_o_.run(s, w, {act(y.atty, {BT, C}), param(q.o), {}, act(scratch_c_, {BT, C}), {}}));
    {
      NormArgs a;
      a.x = act(scratch_c_, {BT, C});
      a.residual = act(h, {BT, C});
      a.weight = param(q.ln2);
      a.y = act(y.ln2, {BT, C});
      a.h = act(y.hmid, {BT, C});
      a.rstd = act(y.ln2_rstd, {BT}, stats_dtype_);
      BARACUDA_RETURN_IF_ERROR(norm_.run(s, w, a));
    }
    BARACUDA_RETURN_IF_ERROR(lin_gu_.run(s, w, {act(y.ln2, {BT, C}), param(q.gu), {}, act(y.gu, {BT, 2 * F}), {}}));
    {
      BinaryArgs a;
      a.a = half_view(y.gu, 0);
      a.b = half_view(y.gu, 1);
      a.out = act(y.act, {BT, F});
      BARACUDA_RETURN_IF_ERROR(swiglu_.run(s, w, a));
    }
    BARACUDA_RETURN_IF_ERROR(lin_down_.run(s, w, {act(y.act, {BT, F}), param(q.down), {}, act(scratch_c_, {BT, C}), {}}));
    {
      const bool last = l + 1 == L;
      Layer* next = last ? nullptr : &layers_[static_cast<size_t>(l + 1)];
      NormArgs a;
      a.x = act(scratch_c_, {BT, C});
      a.residual = act(y.hmid, {BT, C});
      a.weight = param(last ? p_norm_ : lp_[static_cast<size_t>(l + 1)].ln1);
      a.y = act(last ? lnf_ : next->ln1, {BT, C});
      a.h = act(last ? h_final_ : next->h, {BT, C});
      a.rstd = act(last ? lnf_rstd_ : next->ln1_rstd, {BT}, stats_dtype_);
      BARACUDA_RETURN_IF_ERROR(norm_.run(s, w, a));
    }
  }
  return lin_head_.run(s, w, {act(lnf_, {BT, C}), param(p_head_), {}, logits_view(), {}});
}

Status Llama::backward() {
  const int64_t B = cfg_.batch, T = cfg_.seq_len, C = cfg_.channels, L = cfg_.layers, BT = B * T, F = cfg_.ffn();
  const int64_t W = (cfg_.heads + 2 * cfg_.kv()) * cfg_.head_dim();
  const Workspace w = ws();
  const Stream& s = stream_;
  BARACUDA_RETURN_IF_ERROR(loss_with_grad());
  const TensorMut dres = act(dres_, {BT, C}), dC = act(scratch_c_, {BT, C});
  {
    LinearBackwardArgs a;
    a.dy = logits_view();
    a.x = act(lnf_, {BT, C});
    a.weight = param(p_head_);
    a.dx = dC;
    a.dw = grad(p_head_);
    BARACUDA_RETURN_IF_ERROR(bw_head_.run(s, w, a));
  }
  {
    NormBackwardArgs a;
    a.dy = dC;
    a.x = act(h_final_, {BT, C});
    a.weight = param(p_norm_);
    a.rstd = act(lnf_rstd_, {BT}, stats_dtype_);
    a.dx = dres;
    a.dweight = grad(p_norm_);
    BARACUDA_RETURN_IF_ERROR(bw_norm_.run(s, w, a));
  }
  for (int64_t l = L - 1; l >= 0; --l) {
    Layer& y = layers_[static_cast<size_t>(l)];
    const LayerParams& q = lp_[static_cast<size_t>(l)];
    const Buffer& h = l == 0 ? tok_emb_ : y.h;
    {
      LinearBackwardArgs a;
      a.dy = dres;
      a.x = act(y.act, {BT, F});
      a.weight = param(q.down);
      a.dx = act(scratch_f_, {BT, F});
      a.dw = grad(q.down);
      BARACUDA_RETURN_IF_ERROR(bw_down_.run(s, w, a));
    }
    {
      BinaryBackwardArgs a;
      a.dy = act(scratch_f_, {BT, F});
      a.a = half_view(y.gu, 0);
      a.b = half_view(y.gu, 1);
      a.da = half_view(scratch_2f_, 0);
      a.db = half_view(scratch_2f_, 1);
      BARACUDA_RETURN_IF_ERROR(bw_swiglu_.run(s, w, a));
    }
    {
      LinearBackwardArgs a;
      a.dy = act(scratch_2f_, {BT, 2 * F});
      a.x = act(y.ln2, {BT, C});
      a.weight = param(q.gu);
      a.dx = dC;
      a.dw = grad(q.gu);
      BARACUDA_RETURN_IF_ERROR(bw_gu_.run(s, w, a));
    }
    {
      NormBackwardArgs a;
      a.dy = dC;
      a.x = act(y.hmid, {BT, C});
      a.weight = param(q.ln2);
      a.rstd = act(y.ln2_rstd, {BT}, stats_dtype_);
      a.dh_in = dres;
      a.dx = dres;
      a.dweight = grad(q.ln2);
      BARACUDA_RETURN_IF_ERROR(bw_norm_res_.run(s, w, a));
    }
    {
      LinearBackwardArgs a;
      a.dy = dres;
      a.x = act(y.atty, {BT, C});
      a.weight = param(q.o);
      a.dx = act(scratch_c2_, {BT, C});
      a.dw = grad(q.o);
      BARACUDA_RETURN_IF_ERROR(bw_o_.run(s, w, a));
    }
    {
      FlashSdpaBackwardArgs a;
      a.dy = heads_view(scratch_c2_);
      a.q = qkv_view(y.qkv, 0);
      a.k = qkv_view(y.qkv, 1);
      a.v = qkv_view(y.qkv, 2);
      a.y = heads_view(y.atty);
      a.lse = act(y.lse, {B, cfg_.heads, T}, DType::F32);
      a.dq = qkv_view(scratch_qkv_, 0);
      a.dk = qkv_view(scratch_qkv_, 1);
      a.dv = qkv_view(scratch_qkv_, 2);
      BARACUDA_RETURN_IF_ERROR(bw_flash_.run(s, w, a));
    }
    {  // through the rotation, in place
      RopeBackwardArgs a;
      a.dy_q = qkv_view(scratch_qkv_, 0);
      a.dy_k = qkv_view(scratch_qkv_, 1);
      a.dq = qkv_view(scratch_qkv_, 0);
      a.dk = qkv_view(scratch_qkv_, 1);
      BARACUDA_RETURN_IF_ERROR(bw_rope_.run(s, w, a));
    }
    {
      LinearBackwardArgs a;
      a.dy = act(scratch_qkv_, {BT, W});
      a.x = act(y.ln1, {BT, C});
      a.weight = param(q.qkv);
      a.dx = dC;
      a.dw = grad(q.qkv);
      BARACUDA_RETURN_IF_ERROR(bw_qkv_.run(s, w, a));
    }
    {
      NormBackwardArgs a;
      a.dy = dC;
      a.x = act(h, {BT, C});
      a.weight = param(q.ln1);
      a.rstd = act(y.ln1_rstd, {BT}, stats_dtype_);
      a.dh_in = dres;
      a.dx = dres;
      a.dweight = grad(q.ln1);
      BARACUDA_RETURN_IF_ERROR(bw_norm_res_.run(s, w, a));
    }
  }
  return bw_embed_.run(s, w, {tokens(), act(dres_, {B, T, C}), grad(p_emb_), {}, {}, {}});
}

}  // namespace train_gpt
