// The models of train_gpt as chains of baracuda plans (GPT-2 here, Llama in
// llama.cpp; both derive from Model, which owns what they share): every plan is
// selected once in the constructor, every buffer (parameters, gradients,
// saved activations, scratch, one shared workspace) allocated there; forward()
// and backward() only run plans.
//
//   h0        = wte[tokens] + wpe                       EmbeddingPlan, then the first NormPlan's residual add
//   per layer l (pre-norm, fused residual norms):
//     a       = ln_1(h_l)                               NormPlan (LayerNorm; fused into the previous add)
//     qkv     = a W_attn^T + b_attn                     LinearPlan
//     y       = causal_attention(q, k, v)               FlashSdpaPlan on strided views of qkv
//     m_l     = h_l + (y W_proj^T + b_proj)             LinearPlan, NormPlan(residual) also giving
//     c       = ln_2(m_l)                               ... ln_2's output
//     f       = gelu_tanh(c W_fc^T + b_fc)              LinearPlan with the GELU epilogue (saves the pre-activation)
//     h_{l+1} = m_l + (f W_fc_proj^T + b_fc_proj)       LinearPlan, then the next norm's residual add
//   logits    = ln_f(h_L) wte^T                         NormPlan(residual), LinearPlan (tied head, no bias)
//   loss      = cross_entropy(logits, targets)          CrossEntropyPlan (mean over the scored targets),
//                                                       writing dlogits in the same pass (in place)
// backward() walks the same chain back: LinearBackwardPlan (the GELU'
// and the fc bias gradient fused into the projection's dx GEMM), the norms'
// backward adding the residual gradient, FlashSdpaBackwardPlan, and at the
// end EmbeddingBackwardPlan (dense, deterministic), a ReducePlan (wpe's
// gradient: the sum over the batch) and the head's weight gradient added to
// wte's (tied embeddings).
//
// Parameters are named as nanoGPT's (torch.nn.Linear layout [out, in]) so a
// PyTorch model loads the same safetensors file. Every gradient is written
// (never accumulated across steps), so nothing needs zeroing.
#pragma once
#include <baracuda/baracuda.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace train_gpt {

struct GptConfig {
  enum class Arch { Gpt2, Llama };
  Arch arch = Arch::Gpt2;
  int64_t vocab = 256;
  int64_t layers = 2;
  int64_t heads = 4;
  int64_t kv_heads = 0;    // Llama's grouped-query attention: 0 = heads; heads % kv_heads == 0
  int64_t channels = 64;   // C; channels % heads == 0
  int64_t ffn_hidden = 0;  // Llama's SwiGLU width; 0 = 8C/3 rounded up to a multiple of 32
  int64_t seq_len = 32;    // T (GPT-2: also the number of learned positions)
  int64_t batch = 8;       // B
  double rope_theta = 10000.0;
  int64_t head_dim() const { return channels / heads; }
  int64_t kv() const { return kv_heads > 0 ? kv_heads : heads; }
  int64_t ffn() const { return ffn_hidden > 0 ? ffn_hidden : (8 * channels / 3 + 31) / 32 * 32; }
  int64_t parameter_count() const;
  // Forward + backward FLOPs per token (6 x the matmul parameters plus
  // attention's 12 L T C), as llm.c / nanoGPT count model FLOPs for the MFU.
  double flops_per_token() const;
  const char* arch_name() const { return arch == Arch::Gpt2 ? "GPT-2" : "Llama"; }
};

struct ParamInfo {
  std::string name;
  baracuda::Dims shape;
  int64_t offset = 0;  // in elements, into the parameter (and gradient) buffer
  int64_t numel = 0;
  double init_std = 0;  // 0: zeros; < 0: ones (norm weights)
  bool decay = false;   // AdamW's weight decay applies (matrices and embeddings)
};

// What every architecture shares: the flat parameter and gradient buffers,
// the batch, the logits, the cross-entropy (loss and dlogits in one pass, in
// place), the workspace. Subclasses add their parameters (add_param), select
// their plans, allocate their activations (buffer()), then call finish().
class Model {
 public:
  virtual ~Model() = default;
  // GPT-2 or Llama by cfg.arch; throws StatusError.
  static std::unique_ptr<Model> create(const baracuda::Stream& stream, const GptConfig& cfg, baracuda::DType dtype);

  const GptConfig& config() const { return cfg_; }
  baracuda::DType dtype() const { return dtype_; }
  const std::vector<ParamInfo>& params() const { return params_; }
  int64_t param_count() const { return n_params_; }
  baracuda::Buffer& param_buffer() { return params_buf_; }
  baracuda::Buffer& grad_buffer() { return grads_buf_; }
  baracuda::TensorMut param(size_t i) const;  // the i-th parameter's view
  baracuda::TensorMut grad(size_t i) const;

  // The initialisation (normal(0, std) per parameter as add_param said, zeros,
  // ones), from a Philox stream keyed by seed, computed on the host in f64.
  std::vector<double> initial_values(uint64_t seed) const;
  baracuda::Status upload_params(const std::vector<double>& values);  // rounded to dtype

  // The batch: token ids and targets [B, T] (targets: ids or -100, not
  // scored), copied to the model's device buffers.
  baracuda::Status set_batch(const std::vector<int32_t>& tokens, const std::vector<int32_t>& targets);
  // Where the batch lives on the device (B * T int32 each), for a caller that
  // copies it asynchronously on the model's stream instead of set_batch().
  void* tokens_device() { return tokens_.data(); }
  void* targets_device() { return targets_.data(); }
  virtual baracuda::Status forward() = 0;
  // Cross-entropy (with its gradient) then the whole backward; forward() must
  // have run on the same batch. The loss stays on the device until read_loss().
  virtual baracuda::Status backward() = 0;
  baracuda::Status read_loss(double* loss) const;               // synchronises
  baracuda::Status read_logits(std::vector<float>* out) const;  // [B*T, V] after forward(), as f32
  baracuda::DType loss_dtype() const { return loss_dtype_; }
  size_t workspace_bytes() const { return ws_.bytes(); }
  size_t allocated_bytes() const { return bytes_; }  // every buffer the model holds

 protected:
  Model(const baracuda::Stream& stream, const GptConfig& cfg, baracuda::DType dtype);
  size_t add_param(const std::string& name, baracuda::Dims shape, double init_std, bool decay);
  baracuda::Buffer buffer(int64_t n, baracuda::DType t);  // allocated, counted in allocated_bytes()
  // After the subclass's plans: the parameter buffers, the shared buffers and
  // plans, and one workspace for the largest of `plans` and the shared ones.
  void finish(std::initializer_list<const baracuda::PlanBase*> plans);
  baracuda::TensorMut act(const baracuda::Buffer& b, baracuda::Dims shape, baracuda::DType t) const;
  baracuda::TensorMut act(const baracuda::Buffer& b, baracuda::Dims shape) const { return act(b, shape, dtype_); }
  baracuda::Workspace ws() const { return {ws_.data(), ws_.bytes()}; }
  baracuda::TensorRef tokens() const;   // [B, T] I32
  baracuda::TensorMut logits_view() const;  // [B*T, V]
  baracuda::TensorMut heads_view(const baracuda::Buffer& b) const;  // [B, T, C] as [B, H, T, D] (attention's y, dy)
  baracuda::Status loss_with_grad();    // loss and dlogits (in place over the logits)

  baracuda::Stream stream_;
  GptConfig cfg_;
  baracuda::DType dtype_, stats_dtype_ = baracuda::DType::F32, loss_dtype_ = baracuda::DType::F32;
  std::vector<ParamInfo> params_;
  int64_t n_params_ = 0;
  size_t bytes_ = 0;
  baracuda::Buffer params_buf_, grads_buf_, logits_, loss_, dloss_, ce_lse_, tokens_, targets_, ws_;
  baracuda::CrossEntropyPlan ce_;
};

class Gpt final : public Model {
 public:
  Gpt(const baracuda::Stream& stream, const GptConfig& cfg, baracuda::DType dtype);
  baracuda::Status forward() override;
  baracuda::Status backward() override;

 private:
  struct Layer {
    baracuda::Buffer h, ln1, ln1_mean, ln1_rstd, qkv, atty, lse, hmid, ln2, ln2_mean, ln2_rstd, fc_aux, fc_act;
  };
  baracuda::TensorMut qkv_view(const baracuda::Buffer& b, int which) const;  // q, k, v as [B, H, T, D]

  size_t p_wte_ = 0, p_wpe_ = 0, p_lnf_w_ = 0, p_lnf_b_ = 0;
  struct LayerParams {
    size_t ln1_w, ln1_b, attn_w, attn_b, proj_w, proj_b, ln2_w, ln2_b, fc_w, fc_b, fcp_w, fcp_b;
  };
  std::vector<LayerParams> lp_;
  std::vector<Layer> layers_;
  baracuda::Buffer tok_emb_, h_final_, lnf_, lnf_mean_, lnf_rstd_, scratch_c_, scratch_c2_, scratch_4c_, scratch_3c_,
      dres_;

  baracuda::EmbeddingPlan embed_;
  baracuda::NormPlan norm_;        // every norm: fused residual add + LayerNorm with weight and bias
  baracuda::NormPlan norm_first_;  // the same over [B, T, C]: layer 0's ln_1 adds wpe broadcast over B
  baracuda::LinearPlan lin_attn_, lin_proj_, lin_fc_, lin_fcp_, lin_head_;
  baracuda::FlashSdpaPlan attn_;
  baracuda::LinearBackwardPlan bw_head_dx_, bw_head_dw_, bw_fcp_, bw_fc_, bw_proj_, bw_attn_;
  baracuda::NormBackwardPlan bw_norm_, bw_norm_res_;
  baracuda::FlashSdpaBackwardPlan bw_flash_;
  baracuda::EmbeddingBackwardPlan bw_embed_;
  baracuda::ReducePlan bw_wpe_;
};

// Llama (llama.cpp): token embedding (no positions), per layer
//   a = rms_1(h); q, k, v = a W_qkv^T (grouped-query: kv_heads k / v heads);
//   q, k = RoPE(q, k); y = causal_attention(q, k, v); m = h + y W_o^T;
//   c = rms_2(m); f = swiglu(c W_gu^T) (silu(gate) * up); h' = m + f W_down^T;
// then rms_f and an untied head (lm_head, no bias). No biases anywhere; RMSNorm
// with eps 1e-5. q, k and v come fused in one GEMM (W_qkv = [q; k; v] rows),
// gate and up in another (W_gu = [gate; up]).
class Llama final : public Model {
 public:
  Llama(const baracuda::Stream& stream, const GptConfig& cfg, baracuda::DType dtype);
  baracuda::Status forward() override;
  baracuda::Status backward() override;

 private:
  struct Layer {
    baracuda::Buffer h, ln1, ln1_rstd, qkv, atty, lse, hmid, ln2, ln2_rstd, gu, act;
  };
  baracuda::TensorMut qkv_view(const baracuda::Buffer& b, int which) const;  // q [B,H,T,D], k / v [B,Hk,T,D]
  baracuda::TensorMut half_view(const baracuda::Buffer& b, int which) const;  // gate / up of gu as [B*T, F]

  size_t p_emb_ = 0, p_norm_ = 0, p_head_ = 0;
  struct LayerParams {
    size_t ln1, qkv, o, ln2, gu, down;
  };
  std::vector<LayerParams> lp_;
  std::vector<Layer> layers_;
  baracuda::Buffer tok_emb_, h_final_, lnf_, lnf_rstd_, scratch_c_, scratch_c2_, scratch_f_, scratch_2f_, scratch_qkv_,
      dres_;

  baracuda::EmbeddingPlan embed_;
  baracuda::NormPlan norm_first_, norm_;  // RMSNorm: the first without a residual, the others fused with it
  baracuda::LinearPlan lin_qkv_, lin_o_, lin_gu_, lin_down_, lin_head_;
  baracuda::RopePlan rope_;
  baracuda::FlashSdpaPlan attn_;
  baracuda::BinaryPlan swiglu_;
  baracuda::LinearBackwardPlan bw_head_, bw_down_, bw_gu_, bw_o_, bw_qkv_;
  baracuda::BinaryBackwardPlan bw_swiglu_;
  baracuda::RopeBackwardPlan bw_rope_;
  baracuda::NormBackwardPlan bw_norm_, bw_norm_res_;
  baracuda::FlashSdpaBackwardPlan bw_flash_;
  baracuda::EmbeddingBackwardPlan bw_embed_;
};

}  // namespace train_gpt
