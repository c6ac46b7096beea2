// baracuda._C: the plan layer of flash attention, rotary embeddings,
// embedding, fused linear cross-entropy, random numbers / dropout and the
// Adam / AdamW optimizer (binders.hpp: the generic binders).
#include "binders.hpp"

namespace bpy {
namespace {

void bind_attention(nb::module_& m) {
  bind_enum<DiagonalAlign>(m, "DiagonalAlign",
                           {{"TopLeft", DiagonalAlign::TopLeft}, {"BottomRight", DiagonalAlign::BottomRight}});
  enum_names<DiagonalAlign>().push_back({"top_left", DiagonalAlign::TopLeft});
  enum_names<DiagonalAlign>().push_back({"bottom_right", DiagonalAlign::BottomRight});
  bind_enum<AlibiMode>(m, "AlibiMode", {{"None_", AlibiMode::None}, {"PerHead", AlibiMode::PerHead},
                                        {"PerBatchHead", AlibiMode::PerBatchHead}});
  enum_names<AlibiMode>().push_back({"none", AlibiMode::None});
  DescBinder<SdpaDescriptor>(m, "SdpaDescriptor")
      .field("dtype", &SdpaDescriptor::dtype)
      .field("batch", &SdpaDescriptor::batch)
      .field("heads", &SdpaDescriptor::heads)
      .field("kv_heads", &SdpaDescriptor::kv_heads)
      .field("q_len", &SdpaDescriptor::q_len)
      .field("kv_len", &SdpaDescriptor::kv_len)
      .field("head_dim", &SdpaDescriptor::head_dim)
      .field("head_dim_v", &SdpaDescriptor::head_dim_v)
      .field("scale", &SdpaDescriptor::scale)
      .field("causal", &SdpaDescriptor::causal)
      .field("align", &SdpaDescriptor::align)
      .field("has_mask", &SdpaDescriptor::has_mask);
  PlanBinder<SdpaPlan, SdpaDescriptor, SdpaArgs>(m, "SdpaPlan")
      .in("q", &SdpaArgs::q)
      .in("k", &SdpaArgs::k)
      .in("v", &SdpaArgs::v)
      .in("mask", &SdpaArgs::mask)
      .out("y", &SdpaArgs::y)
      .out("probs", &SdpaArgs::probs)
      .prop("scale", [](const SdpaPlan& p) { return p.scale(); })
      .prop("probs_dtype", [](const SdpaPlan& p) { return dtype_py_name(p.probs_dtype()); })
      .prop("y_shape", [](const SdpaPlan& p) { return dims_to_py(p.y_shape()); })
      .prop("probs_shape", [](const SdpaPlan& p) { return dims_to_py(p.probs_shape()); });
  PlanBinder<SdpaBackwardPlan, SdpaDescriptor, SdpaBackwardArgs>(m, "SdpaBackwardPlan")
      .in("dy", &SdpaBackwardArgs::dy)
      .in("q", &SdpaBackwardArgs::q)
      .in("k", &SdpaBackwardArgs::k)
      .in("v", &SdpaBackwardArgs::v)
      .in("probs", &SdpaBackwardArgs::probs)
      .out("dq", &SdpaBackwardArgs::dq)
      .out("dk", &SdpaBackwardArgs::dk)
      .out("dv", &SdpaBackwardArgs::dv)
      .prop("scale", [](const SdpaBackwardPlan& p) { return p.scale(); })
      .prop("probs_dtype", [](const SdpaBackwardPlan& p) { return dtype_py_name(p.probs_dtype()); });
  DescBinder<FlashSdpaDescriptor>(m, "FlashSdpaDescriptor")
      .field("dtype", &FlashSdpaDescriptor::dtype)
      .field("batch", &FlashSdpaDescriptor::batch)
      .field("heads", &FlashSdpaDescriptor::heads)
      .field("kv_heads", &FlashSdpaDescriptor::kv_heads)
      .field("q_len", &FlashSdpaDescriptor::q_len)
      .field("kv_len", &FlashSdpaDescriptor::kv_len)
      .field("head_dim", &FlashSdpaDescriptor::head_dim)
      .field("scale", &FlashSdpaDescriptor::scale)
      .field("causal", &FlashSdpaDescriptor::causal)
      .field("align", &FlashSdpaDescriptor::align)
      .field("window_left", &FlashSdpaDescriptor::window_left)
      .field("window_right", &FlashSdpaDescriptor::window_right)
      .field("softcap", &FlashSdpaDescriptor::softcap)
      .field("alibi", &FlashSdpaDescriptor::alibi)
      .field("has_mask", &FlashSdpaDescriptor::has_mask)
      .field("varlen", &FlashSdpaDescriptor::varlen)
      .field("total_q", &FlashSdpaDescriptor::total_q)
      .field("total_kv", &FlashSdpaDescriptor::total_kv)
      .field("save_lse", &FlashSdpaDescriptor::save_lse);
  PlanBinder<FlashSdpaPlan, FlashSdpaDescriptor, FlashSdpaArgs>(m, "FlashSdpaPlan")
      .in("q", &FlashSdpaArgs::q)
      .in("k", &FlashSdpaArgs::k)
      .in("v", &FlashSdpaArgs::v)
      .in("mask", &FlashSdpaArgs::mask)
      .in("alibi_slopes", &FlashSdpaArgs::alibi_slopes)
      .in("cu_seqlens_q", &FlashSdpaArgs::cu_seqlens_q)
      .in("cu_seqlens_kv", &FlashSdpaArgs::cu_seqlens_kv)
      .out("y", &FlashSdpaArgs::y)
      .out("lse", &FlashSdpaArgs::lse)
      .prop("scale", [](const FlashSdpaPlan& p) { return p.scale(); })
      .prop("q_shape", [](const FlashSdpaPlan& p) { return dims_to_py(p.q_shape()); })
      .prop("kv_shape", [](const FlashSdpaPlan& p) { return dims_to_py(p.kv_shape()); })
      .prop("y_shape", [](const FlashSdpaPlan& p) { return dims_to_py(p.y_shape()); })
      .prop("lse_shape", [](const FlashSdpaPlan& p) { return dims_to_py(p.lse_shape()); });
  PlanBinder<FlashSdpaBackwardPlan, FlashSdpaDescriptor, FlashSdpaBackwardArgs>(m, "FlashSdpaBackwardPlan")
      .in("dy", &FlashSdpaBackwardArgs::dy)
      .in("q", &FlashSdpaBackwardArgs::q)
      .in("k", &FlashSdpaBackwardArgs::k)
      .in("v", &FlashSdpaBackwardArgs::v)
      .in("y", &FlashSdpaBackwardArgs::y)
      .in("lse", &FlashSdpaBackwardArgs::lse)
      .in("mask", &FlashSdpaBackwardArgs::mask)
      .in("alibi_slopes", &FlashSdpaBackwardArgs::alibi_slopes)
      .in("cu_seqlens_q", &FlashSdpaBackwardArgs::cu_seqlens_q)
      .in("cu_seqlens_kv", &FlashSdpaBackwardArgs::cu_seqlens_kv)
      .out("dq", &FlashSdpaBackwardArgs::dq)
      .out("dk", &FlashSdpaBackwardArgs::dk)
      .out("dv", &FlashSdpaBackwardArgs::dv)
      .prop("scale", [](const FlashSdpaBackwardPlan& p) { return p.scale(); });
}

void bind_attention_paged(nb::module_& m) {
  DescBinder<PagedAttentionDescriptor>(m, "PagedAttentionDescriptor")
      .field("dtype", &PagedAttentionDescriptor::dtype)
      .field("batch", &PagedAttentionDescriptor::batch)
      .field("heads", &PagedAttentionDescriptor::heads)
      .field("kv_heads", &PagedAttentionDescriptor::kv_heads)
      .field("q_len", &PagedAttentionDescriptor::q_len)
      .field("head_dim", &PagedAttentionDescriptor::head_dim)
      .field("num_pages", &PagedAttentionDescriptor::num_pages)
      .field("page_size", &PagedAttentionDescriptor::page_size)
      .field("max_pages", &PagedAttentionDescriptor::max_pages)
      .field("scale", &PagedAttentionDescriptor::scale)
      .field("causal", &PagedAttentionDescriptor::causal)
      .field("softcap", &PagedAttentionDescriptor::softcap)
      .field("save_lse", &PagedAttentionDescriptor::save_lse);
  PlanBinder<PagedAttentionPlan, PagedAttentionDescriptor, PagedAttentionArgs>(m, "PagedAttentionPlan")
      .in("q", &PagedAttentionArgs::q)
      .in("k_pages", &PagedAttentionArgs::k_pages)
      .in("v_pages", &PagedAttentionArgs::v_pages)
      .in("block_table", &PagedAttentionArgs::block_table)
      .in("seq_lens", &PagedAttentionArgs::seq_lens)
      .out("out", &PagedAttentionArgs::out)
      .out("lse", &PagedAttentionArgs::lse)
      .prop("scale", [](const PagedAttentionPlan& p) { return p.scale(); })
      .prop("splits", [](const PagedAttentionPlan& p) { return p.splits(); })
      .prop("q_shape", [](const PagedAttentionPlan& p) { return dims_to_py(p.q_shape()); })
      .prop("lse_shape", [](const PagedAttentionPlan& p) { return dims_to_py(p.lse_shape()); });
  DescBinder<PagedKvAppendDescriptor>(m, "PagedKvAppendDescriptor")
      .field("dtype", &PagedKvAppendDescriptor::dtype)
      .field("batch", &PagedKvAppendDescriptor::batch)
      .field("kv_heads", &PagedKvAppendDescriptor::kv_heads)
      .field("new_len", &PagedKvAppendDescriptor::new_len)
      .field("head_dim", &PagedKvAppendDescriptor::head_dim)
      .field("num_pages", &PagedKvAppendDescriptor::num_pages)
      .field("page_size", &PagedKvAppendDescriptor::page_size)
      .field("max_pages", &PagedKvAppendDescriptor::max_pages);
  PlanBinder<PagedKvAppendPlan, PagedKvAppendDescriptor, PagedKvAppendArgs>(m, "PagedKvAppendPlan")
      .in("k_new", &PagedKvAppendArgs::k_new)
      .in("v_new", &PagedKvAppendArgs::v_new)
      .in("block_table", &PagedKvAppendArgs::block_table)
      .in("seq_lens", &PagedKvAppendArgs::seq_lens)
      .out("k_pages", &PagedKvAppendArgs::k_pages)
      .out("v_pages", &PagedKvAppendArgs::v_pages);
}

void bind_rope(nb::module_& m) {
  bind_enum<RopePairs>(m, "RopePairs", {{"Interleaved", RopePairs::Interleaved}, {"HalfSplit", RopePairs::HalfSplit}});
  enum_names<RopePairs>().push_back({"half_split", RopePairs::HalfSplit});
  bind_enum<RopePositions>(m, "RopePositions", {{"None_", RopePositions::None},
                                                {"PerSequence", RopePositions::PerSequence},
                                                {"PerBatch", RopePositions::PerBatch}});
  enum_names<RopePositions>().push_back({"none", RopePositions::None});
  enum_names<RopePositions>().push_back({"per_sequence", RopePositions::PerSequence});
  enum_names<RopePositions>().push_back({"per_batch", RopePositions::PerBatch});
  DescBinder<RopeDescriptor>(m, "RopeDescriptor")
      .field("dtype", &RopeDescriptor::dtype)
      .field("batch", &RopeDescriptor::batch)
      .field("heads", &RopeDescriptor::heads)
      .field("kv_heads", &RopeDescriptor::kv_heads)
      .field("seq_len", &RopeDescriptor::seq_len)
      .field("head_dim", &RopeDescriptor::head_dim)
      .field("rotary_dim", &RopeDescriptor::rotary_dim)
      .field("has_k", &RopeDescriptor::has_k)
      .field("pairs", &RopeDescriptor::pairs)
      .field("theta", &RopeDescriptor::theta)
      .field("positions", &RopeDescriptor::positions)
      .field("position_dtype", &RopeDescriptor::position_dtype)
      .field("use_cache", &RopeDescriptor::use_cache)
      .field("cache_len", &RopeDescriptor::cache_len);
  PlanBinder<RopePlan, RopeDescriptor, RopeArgs>(m, "RopePlan")
      .in("q", &RopeArgs::q)
      .in("k", &RopeArgs::k)
      .in("positions", &RopeArgs::positions)
      .in("cos", &RopeArgs::cos)
      .in("sin", &RopeArgs::sin)
      .out("q_out", &RopeArgs::q_out)
      .out("k_out", &RopeArgs::k_out)
      .prop("q_shape", [](const RopePlan& p) { return dims_to_py(p.q_shape()); })
      .prop("k_shape", [](const RopePlan& p) { return dims_to_py(p.k_shape()); })
      .prop("cache_shape", [](const RopePlan& p) { return dims_to_py(p.cache_shape()); })
      .prop("cache_dtype", [](const RopePlan& p) { return dtype_py_name(p.cache_dtype()); });
  PlanBinder<RopeBackwardPlan, RopeDescriptor, RopeBackwardArgs>(m, "RopeBackwardPlan")
      .in("dy_q", &RopeBackwardArgs::dy_q)
      .in("dy_k", &RopeBackwardArgs::dy_k)
      .in("positions", &RopeBackwardArgs::positions)
      .in("cos", &RopeBackwardArgs::cos)
      .in("sin", &RopeBackwardArgs::sin)
      .out("dq", &RopeBackwardArgs::dq)
      .out("dk", &RopeBackwardArgs::dk);
}

void bind_embedding(nb::module_& m) {
  DescBinder<EmbeddingDescriptor>(m, "EmbeddingDescriptor")
      .field("dtype", &EmbeddingDescriptor::dtype)
      .field("index_dtype", &EmbeddingDescriptor::index_dtype)
      .field("num_embeddings", &EmbeddingDescriptor::num_embeddings)
      .field("embedding_dim", &EmbeddingDescriptor::embedding_dim)
      .field("index_shape", &EmbeddingDescriptor::index_shape)
      .field("has_padding_idx", &EmbeddingDescriptor::has_padding_idx)
      .field("padding_idx", &EmbeddingDescriptor::padding_idx);
  PlanBinder<EmbeddingPlan, EmbeddingDescriptor, EmbeddingArgs> fwd(m, "EmbeddingPlan");
  fwd.in("weight", &EmbeddingArgs::weight)
      .in("indices", &EmbeddingArgs::indices)
      .out("out", &EmbeddingArgs::out)
      .prop("out_shape", [](const EmbeddingPlan& p) { return dims_to_py(p.out_shape()); });
  def_check_indices(fwd.cls);
  bind_enum<EmbeddingGradLayout>(m, "EmbeddingGradLayout",
                                 {{"Dense", EmbeddingGradLayout::Dense}, {"Compact", EmbeddingGradLayout::Compact}});
  DescBinder<EmbeddingBackwardDescriptor>(m, "EmbeddingBackwardDescriptor")
      .field("forward", &EmbeddingBackwardDescriptor::forward)
      .field("grad_dtype", &EmbeddingBackwardDescriptor::grad_dtype)
      .field("layout", &EmbeddingBackwardDescriptor::layout);
  PlanBinder<EmbeddingBackwardPlan, EmbeddingBackwardDescriptor, EmbeddingBackwardArgs> bwd(m, "EmbeddingBackwardPlan");
  bwd.in("indices", &EmbeddingBackwardArgs::indices)
      .in("dout", &EmbeddingBackwardArgs::dout)
      .out("dweight", &EmbeddingBackwardArgs::dweight)
      .out("unique_rows", &EmbeddingBackwardArgs::unique_rows)
      .out("dweight_compact", &EmbeddingBackwardArgs::dweight_compact)
      .out("count", &EmbeddingBackwardArgs::count)
      .prop("dweight_shape", [](const EmbeddingBackwardPlan& p) { return dims_to_py(p.dweight_shape()); });
  def_check_indices(bwd.cls);
}

void bind_fused_linear_ce(nb::module_& m) {
  using D = FusedLinearCrossEntropyDescriptor;
  using A = FusedLinearCrossEntropyArgs;
  DescBinder<D>(m, "FusedLinearCrossEntropyDescriptor")
      .field("dtype", &D::dtype)
      .field("rows", &D::rows)
      .field("in_features", &D::in_features)
      .field("classes", &D::classes)
      .field("has_bias", &D::has_bias)
      .field("target", &D::target)
      .field("index_dtype", &D::index_dtype)
      .field("ignore_index", &D::ignore_index)
      .field("label_smoothing", &D::label_smoothing)
      .field("has_weight", &D::has_weight)
      .field("reduction", &D::reduction)
      .field("z_loss", &D::z_loss)
      .field("loss_dtype", &D::loss_dtype)
      .field("need_dh", &D::need_dh)
      .field("need_dw", &D::need_dw)
      .field("need_db", &D::need_db)
      .field("workspace_limit", &D::workspace_limit)
      .field("chunk_rows", &D::chunk_rows);
  PlanBinder<FusedLinearCrossEntropyPlan, D, A>(m, "FusedLinearCrossEntropyPlan")
      .in("hidden", &A::hidden)
      .in("weight", &A::weight)
      .in("bias", &A::bias)
      .in("target", &A::target)
      .in("class_weight", &A::class_weight)
      .in("dloss", &A::dloss)
      .out("loss", &A::loss)
      .out("lse", &A::lse)
      .out("dhidden", &A::dhidden)
      .out("dweight", &A::dweight)
      .out("dbias", &A::dbias)
      .prop("loss_shape", [](const FusedLinearCrossEntropyPlan& p) { return dims_to_py(p.loss_shape()); })
      .prop("lse_dtype", [](const FusedLinearCrossEntropyPlan& p) { return dtype_py_name(p.lse_dtype()); })
      .prop("chunk_rows", [](const FusedLinearCrossEntropyPlan& p) { return p.chunk_rows(); })
      .prop("chunks", [](const FusedLinearCrossEntropyPlan& p) { return p.chunks(); })
      .prop("logits_bytes", [](const FusedLinearCrossEntropyPlan& p) { return p.logits_bytes(); });
}

void bind_random(nb::module_& m) {
  bind_enum<RandomDistribution>(m, "RandomDistribution",
                                {{"Uniform", RandomDistribution::Uniform}, {"Normal", RandomDistribution::Normal},
                                 {"TruncatedNormal", RandomDistribution::TruncatedNormal},
                                 {"Bernoulli", RandomDistribution::Bernoulli}, {"RandInt", RandomDistribution::RandInt}});
  enum_names<RandomDistribution>().push_back({"truncated_normal", RandomDistribution::TruncatedNormal});
  DescBinder<RandomDescriptor>(m, "RandomDescriptor")
      .field("distribution", &RandomDescriptor::distribution)
      .field("dtype", &RandomDescriptor::dtype)
      .field("shape", &RandomDescriptor::shape)
      .field("low", &RandomDescriptor::low)
      .field("high", &RandomDescriptor::high)
      .field("mean", &RandomDescriptor::mean)
      .field("std", &RandomDescriptor::std)
      .field("a", &RandomDescriptor::a)
      .field("b", &RandomDescriptor::b)
      .field("p", &RandomDescriptor::p)
      .field("p_tensor", &RandomDescriptor::p_tensor)
      .field("p_dtype", &RandomDescriptor::p_dtype)
      .field("int_low", &RandomDescriptor::int_low)
      .field("int_high", &RandomDescriptor::int_high)
      .field("device_offset", &RandomDescriptor::device_offset);
  PlanBinder<RandomPlan, RandomDescriptor, RandomArgs>(m, "RandomPlan")
      .seed("seed", &RandomArgs::seed)
      .in("p", &RandomArgs::p)
      .out("out", &RandomArgs::out)
      .out("offset", &RandomArgs::offset)
      .prop("out_shape", [](const RandomPlan& p) { return dims_to_py(p.out_shape()); });
  DescBinder<DropoutDescriptor>(m, "DropoutDescriptor")
      .field("dtype", &DropoutDescriptor::dtype)
      .field("shape", &DropoutDescriptor::shape)
      .field("p", &DropoutDescriptor::p)
      .field("save_mask", &DropoutDescriptor::save_mask)
      .field("device_offset", &DropoutDescriptor::device_offset);
  PlanBinder<DropoutPlan, DropoutDescriptor, DropoutArgs>(m, "DropoutPlan")
      .seed("seed", &DropoutArgs::seed)
      .in("x", &DropoutArgs::x)
      .out("out", &DropoutArgs::out)
      .out("mask", &DropoutArgs::mask)
      .out("offset", &DropoutArgs::offset)
      .prop("mask_shape", [](const DropoutPlan& p) { return dims_to_py(p.mask_shape()); });
  DescBinder<DropoutBackwardDescriptor>(m, "DropoutBackwardDescriptor")
      .field("dtype", &DropoutBackwardDescriptor::dtype)
      .field("shape", &DropoutBackwardDescriptor::shape)
      .field("p", &DropoutBackwardDescriptor::p)
      .field("use_mask", &DropoutBackwardDescriptor::use_mask)
      .field("device_offset", &DropoutBackwardDescriptor::device_offset);
  PlanBinder<DropoutBackwardPlan, DropoutBackwardDescriptor, DropoutBackwardArgs>(m, "DropoutBackwardPlan")
      .seed("seed", &DropoutBackwardArgs::seed)
      .in("dy", &DropoutBackwardArgs::dy)
      .in("mask", &DropoutBackwardArgs::mask)
      .in("offset", &DropoutBackwardArgs::offset)
      .out("dx", &DropoutBackwardArgs::dx);
}

// AdamPlan: tensor lists, so its run() is written out here rather than by
// PlanBinder: run(params=[...], grads=[...], exp_avg=[...], exp_avg_sq=[...],
// max_exp_avg_sq=None, master=None, lr=1e-3, step=1, lr_tensor=None,
// step_tensor=None, grad_scale=None, found_inf=None, seed=0, offset=0,
// stream=None).
void bind_optim(nb::module_& m) {
  using D = AdamDescriptor;
  DescBinder<D>(m, "AdamDescriptor")
      .field<std::vector<Dims>>("shapes", &D::shapes)
      .field<DType>("param_dtype", &D::param_dtype)
      .field<bool>("master_weights", &D::master_weights)
      .field<bool>("stochastic_rounding", &D::stochastic_rounding)
      .field<bool>("maximize", &D::maximize)
      .field<bool>("device_scalars", &D::device_scalars)
      .field<bool>("has_grad_scale", &D::has_grad_scale)
      .field<bool>("has_found_inf", &D::has_found_inf)
      .field<double>("weight_decay", &D::weight_decay)
      .field("decoupled_weight_decay", &D::decoupled_weight_decay)
      .field("amsgrad", &D::amsgrad)
      .field("beta1", &D::beta1)
      .field("beta2", &D::beta2)
      .field("eps", &D::eps);
  nb::class_<AdamPlan> cls(m, "AdamPlan");
  def_plan_common<AdamPlan, D>(cls);
  cls
      .def(
          "run",
          [](const AdamPlan& p, nb::handle params, nb::handle grads, nb::handle exp_avg, nb::handle exp_avg_sq,
             nb::handle max_exp_avg_sq, nb::handle master, double lr, int64_t step, nb::handle lr_tensor,
             nb::handle step_tensor, nb::handle grad_scale, nb::handle found_inf, uint64_t seed, uint64_t offset,
             nb::handle stream_arg) {
            std::vector<nb::handle> inputs;
            for (nb::handle l : {params, grads})
              if (!l.is_none())
                for (nb::handle t : l) inputs.push_back(t);
            const Stream s = resolve_stream(stream_arg, p.device(), inputs);
            std::vector<View> keep;
            AdamArgs a;
            auto list = [&](nb::handle l, const char* what, bool mut, auto& out) {
              if (l.is_none()) return;
              if (!nb::isinstance<nb::sequence>(l) || nb::isinstance<nb::str>(l))
                throw nb::type_error((std::string("AdamPlan.run: ") + what + ": expected a list of tensors").c_str());
              for (nb::handle t : l) {
                keep.push_back(import_tensor(t, s, (std::string("AdamPlan.run: ") + what).c_str()));
                if (mut && keep.back().read_only)
                  raise_invalid(std::string("AdamPlan.run: ") + what + ": a tensor is read-only");
                out.push_back(keep.back().view);
              }
            };
            keep.reserve(64);
            std::vector<TensorMut> g;
            list(params, "params", true, a.params);
            list(grads, "grads", false, g);
            for (const auto& v : g) a.grads.push_back(TensorRef(v));
            list(exp_avg, "exp_avg", true, a.exp_avg);
            list(exp_avg_sq, "exp_avg_sq", true, a.exp_avg_sq);
            list(max_exp_avg_sq, "max_exp_avg_sq", true, a.max_exp_avg_sq);
            list(master, "master", true, a.master);
            a.lr = lr;
            a.step = step;
            auto one = [&](nb::handle t, const char* what) -> std::optional<TensorMut> {
              if (t.is_none()) return std::nullopt;
              keep.push_back(import_tensor(t, s, (std::string("AdamPlan.run: ") + what).c_str()));
              return keep.back().view;
            };
            if (auto v = one(lr_tensor, "lr_tensor")) a.lr_tensor = *v;
            if (auto v = one(step_tensor, "step_tensor")) a.step_tensor = *v;
            if (auto v = one(grad_scale, "grad_scale")) a.grad_scale = *v;
            if (auto v = one(found_inf, "found_inf")) a.found_inf = *v;
            a.seed = RandomSeed{seed, offset};
            std::optional<ScopedWorkspace> own;
            std::optional<View> ws_keep;
            const Workspace ws = workspace_from_py(nb::none(), p.workspace_size(), s, own, ws_keep);
            Status st;
            {
              nb::gil_scoped_release release;
              st = p.run(s, ws, a);
            }
            check(st);
          },
          nb::kw_only(), nb::arg("params"), nb::arg("grads"), nb::arg("exp_avg"), nb::arg("exp_avg_sq"),
          nb::arg("max_exp_avg_sq") = nb::none(), nb::arg("master") = nb::none(), nb::arg("lr") = 1e-3,
          nb::arg("step") = 1, nb::arg("lr_tensor") = nb::none(), nb::arg("step_tensor") = nb::none(),
          nb::arg("grad_scale") = nb::none(), nb::arg("found_inf") = nb::none(), nb::arg("seed") = 0,
          nb::arg("offset") = 0, nb::arg("stream") = nb::none(),
          "One optimizer step over the lists (updated in place).");
}

}  // namespace

void bind_plans_more(nb::module_& m) {
  bind_attention(m);
  bind_attention_paged(m);
  bind_rope(m);
  bind_embedding(m);
  bind_fused_linear_ce(m);
  bind_random(m);
  bind_optim(m);
}

}  // namespace bpy
