// train_gpt: a GPT-2-style transformer trained end to end on baracuda plans
// (model.hpp: the forward / backward chain; the update and the gradient
// clipping are plans too). On the CPU by default a tiny model learns
// multi-digit addition in under a minute; with a GPU it runs in bf16 with f32
// master weights. `train_gpt --help` lists the flags.
//
// Each step: a batch of token ids (the built-in addition task, or --data
// FILE's bytes) is copied to the device, forward() and backward() run the
// plans, the gradients are clipped to a global norm and AdamW updates the
// parameters. Every --print-every steps the loss is read back (the only
// synchronisation in the loop) and printed with the step time and tokens/s.
// At the end the task's accuracy (greedy decoding of fresh problems) or a
// sample of generated text shows what the model learned; --save writes the
// weights as safetensors.
#include <baracuda/baracuda.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#if defined(BARACUDA_WITH_CUDA)
#include <cuda_runtime.h>
#endif

#include "model.hpp"
#include "optimizer.hpp"
#include "safetensors.hpp"
#include "tasks.hpp"
#include "util.hpp"

using namespace baracuda;
using namespace train_gpt;

namespace {

struct Options {
  GptConfig model;
  int64_t steps = 900;
  double lr = 5e-3, min_lr_ratio = 0.1, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, clip = 1.0;
  int64_t warmup = 50;
  uint64_t seed = 1337;
  int digits = 2;
  std::string data, save, load, device = "auto", dump_first_step, dtype, dump_curve;
  int cuda_graph = -1;  // -1: on the GPU unless --dump-first-step; 0 / 1: --no-cuda-graph / --cuda-graph
  int64_t print_every = 100;
  int eval_problems = 200;
  double expect_loss = -1, expect_accuracy = -1;  // checks for CI (< 0: off)
};

[[noreturn]] void usage(int code) {
  std::printf(
      "usage: train_gpt [flags]\n"
      "  --device auto|cpu|cuda   where to train (auto: the GPU when one is visible)\n"
      "  --steps N                optimizer steps (900)\n"
      "  --layers N --heads N --channels N --seq N --batch N   model and batch (2, 2, 64, 30, 16)\n"
      "  --arch gpt2|llama        GPT-2 (learned positions, LayerNorm, GELU MLP, tied embeddings) or Llama\n"
      "                           (RoPE, RMSNorm, SwiGLU, grouped-query attention, untied head) (gpt2)\n"
      "  --kv-heads N --ffn N     Llama's key / value heads (= heads) and SwiGLU width (8C/3 rounded to 32)\n"
      "  --vocab N                vocabulary size, >= 256 (the tokens are bytes; GPT-2's 50304 for benchmarks)\n"
      "  --lr X --warmup N --weight-decay X --clip X   AdamW with linear warm-up and cosine decay (5e-3, 50, 0.1, 1.0)\n"
      "  --digits N               the addition task's operand digits (2)\n"
      "  --data FILE              train on FILE's bytes instead of the addition task\n"
      "  --seed N                 weights and data (1337)\n"
      "  --print-every N          progress line period (100)\n"
      "  --eval N                 addition problems scored at the end (200; 0: none)\n"
      "  --save FILE / --load FILE  safetensors checkpoint written at the end / read at the start\n"
      "  --cuda-graph / --no-cuda-graph   GPU: capture forward + backward + clip + AdamW once after one plain\n"
      "                           step and replay it every step (default on the GPU: 17.3 vs 17.7 ms at GPT-2 124M;\n"
      "                           the batch and lr then go by asynchronous copies from pinned memory)\n"
      "  --dtype f32|bf16         the model's dtype on the GPU (bf16 with f32 master weights; the CPU runs f32)\n"
      "  --dump-first-step FILE   after the first backward: weights, gradients, batch and loss as safetensors\n"
      "                           (bench/torch_gpt.py --check FILE compares them with PyTorch)\n"
      "  --dump-curve FILE        the initial weights, every batch, lr and loss of the run as safetensors\n"
      "                           (bench/torch_gpt.py --curve FILE trains PyTorch on the same and compares)\n"
      "  --expect-loss X / --expect-accuracy X   exit with status 3 when the last loss is above X / the task\n"
      "                           accuracy below X (CI's check that the model learned)\n");
  std::exit(code);
}

Options parse(int argc, char** argv) {
  Options o;
  o.model.layers = 2;
  o.model.heads = 2;
  o.model.channels = 64;
  o.model.seq_len = 30;  // three whole addition lines of 10 bytes
  o.model.batch = 16;
  o.model.vocab = kVocab;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "train_gpt: %s needs a value\n", a.c_str());
        usage(2);
      }
      return argv[++i];
    };
    if (a == "--help" || a == "-h") usage(0);
    else if (a == "--device") o.device = next();
    else if (a == "--steps") o.steps = std::stoll(next());
    else if (a == "--layers") o.model.layers = std::stoll(next());
    else if (a == "--heads") o.model.heads = std::stoll(next());
    else if (a == "--channels") o.model.channels = std::stoll(next());
    else if (a == "--seq") o.model.seq_len = std::stoll(next());
    else if (a == "--batch") o.model.batch = std::stoll(next());
    else if (a == "--vocab") o.model.vocab = std::stoll(next());
    else if (a == "--arch") {
      const std::string v = next();
      if (v == "gpt2") o.model.arch = GptConfig::Arch::Gpt2;
      else if (v == "llama") o.model.arch = GptConfig::Arch::Llama;
      else {
        std::fprintf(stderr, "train_gpt: --arch is gpt2 or llama\n");
        usage(2);
      }
    } else if (a == "--kv-heads") o.model.kv_heads = std::stoll(next());
    else if (a == "--ffn") o.model.ffn_hidden = std::stoll(next());
    else if (a == "--lr") o.lr = std::stod(next());
    else if (a == "--warmup") o.warmup = std::stoll(next());
    else if (a == "--weight-decay") o.weight_decay = std::stod(next());
    else if (a == "--clip") o.clip = std::stod(next());
    else if (a == "--digits") o.digits = std::stoi(next());
    else if (a == "--data") o.data = next();
    else if (a == "--seed") o.seed = std::stoull(next());
    else if (a == "--eval") o.eval_problems = std::max(0, std::stoi(next()));
    else if (a == "--print-every") o.print_every = std::max<int64_t>(1, std::stoll(next()));
    else if (a == "--save") o.save = next();
    else if (a == "--load") o.load = next();
    else if (a == "--dump-first-step") o.dump_first_step = next();
    else if (a == "--dtype") o.dtype = next();
    else if (a == "--dump-curve") o.dump_curve = next();
    else if (a == "--cuda-graph") o.cuda_graph = 1;
    else if (a == "--no-cuda-graph") o.cuda_graph = 0;
    else if (a == "--expect-loss") o.expect_loss = std::stod(next());
    else if (a == "--expect-accuracy") o.expect_accuracy = std::stod(next());
    else {
      std::fprintf(stderr, "train_gpt: unknown flag %s\n", a.c_str());
      usage(2);
    }
  }
  if (o.model.vocab < kVocab) {
    std::fprintf(stderr, "train_gpt: --vocab must be at least %d (the tokens are bytes)\n", kVocab);
    usage(2);
  }
  return o;
}

// Linear warm-up to lr, then cosine decay to lr * min_lr_ratio.
double lr_at(const Options& o, int64_t step) {
  if (step < o.warmup) return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup);
  const double t = static_cast<double>(step - o.warmup) / static_cast<double>(std::max<int64_t>(1, o.steps - o.warmup));
  const double c = 0.5 * (1.0 + std::cos(3.141592653589793 * std::min(1.0, t)));
  return o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * c);
}

// Dense bf16 / f16 tensor-core peak of an H100 SXM (989 TFLOP/s; f32 runs
// are counted against the same peak, as llm.c does): MFU is a ratio to it.
double peak_flops(DType) { return 989e12; }

// What a safetensors file written here says about the model (its metadata):
// enough for bench/torch_gpt.py to build the same model.
std::map<std::string, std::string> model_metadata(const GptConfig& c) {
  char theta[32];
  std::snprintf(theta, sizeof theta, "%.17g", c.rope_theta);
  return {{"format", "pt"},
          {"model", c.arch == GptConfig::Arch::Llama ? "llama" : "gpt2"},
          {"n_layer", std::to_string(c.layers)},
          {"n_head", std::to_string(c.heads)},
          {"n_kv_head", std::to_string(c.kv())},
          {"n_embd", std::to_string(c.channels)},
          {"ffn_hidden", std::to_string(c.ffn())},
          {"rope_theta", theta},
          {"block_size", std::to_string(c.seq_len)},
          {"vocab_size", std::to_string(c.vocab)}};
}

// Checkpoints: the parameters as safetensors in f32 (whatever the training
// dtype: the master weights when there are some), named as nanoGPT's.
Status save_checkpoint(const std::string& path, Model& model, const Optimizer& opt) {
  const size_t n = static_cast<size_t>(model.param_count());
  std::vector<float> values = to_f32(model.param_buffer(), n, model.dtype());
  if (opt.master_weights()) BARACUDA_RETURN_IF_ERROR(opt.read_master(values.data(), n));
  std::vector<TensorToSave> t;
  for (const ParamInfo& p : model.params()) {
    std::vector<int64_t> shape(p.shape.begin(), p.shape.end());
    t.push_back({p.name, DType::F32, shape, values.data() + p.offset});
  }
  return save_safetensors(path, t, model_metadata(model.config()));
}

// The first step as safetensors: the weights as used (f32), "grad." + name
// for each gradient, the batch and the loss (metadata), for bench/torch_gpt.py --check.
Status dump_first_step(const std::string& path, Model& model, const Batch& batch) {
  const size_t n = static_cast<size_t>(model.param_count());
  const std::vector<float> w = to_f32(model.param_buffer(), n, model.dtype());
  const std::vector<float> g = to_f32(model.grad_buffer(), n, model.dtype());
  double loss = 0;
  BARACUDA_RETURN_IF_ERROR(model.read_loss(&loss));
  std::vector<TensorToSave> t;
  std::vector<std::string> grad_names;
  grad_names.reserve(model.params().size());
  for (const ParamInfo& p : model.params()) {
    const std::vector<int64_t> shape(p.shape.begin(), p.shape.end());
    t.push_back({p.name, DType::F32, shape, w.data() + p.offset});
    grad_names.push_back("grad." + p.name);
    t.push_back({grad_names.back(), DType::F32, shape, g.data() + p.offset});
  }
  t.push_back({"tokens", DType::I32, {batch.B, batch.T}, batch.inputs.data()});
  t.push_back({"targets", DType::I32, {batch.B, batch.T}, batch.targets.data()});
  char lbuf[64];
  std::snprintf(lbuf, sizeof lbuf, "%.9g", loss);
  std::map<std::string, std::string> meta = model_metadata(model.config());
  meta["dtype"] = std::string(dtype_name(model.dtype()));
  meta["loss"] = lbuf;
  return save_safetensors(path, t, meta);
}

// The initial values from a checkpoint: every parameter must be there with
// its shape (any float dtype safetensors stores; converted to f64).
std::vector<double> load_checkpoint(const std::string& path, const Model& model) {
  SafetensorsFile f = load_safetensors(path).value();
  std::vector<double> v(static_cast<size_t>(model.param_count()));
  for (const ParamInfo& p : model.params()) {
    const LoadedTensor* t = f.find(p.name);
    if (!t) throw StatusError(Status(StatusCode::InvalidProblem, "--load " + path + ": no tensor " + p.name));
    const std::vector<int64_t> want(p.shape.begin(), p.shape.end());
    if (t->shape != want)
      throw StatusError(Status(StatusCode::InvalidProblem, "--load " + path + ": " + p.name + " has the wrong shape"));
    const unsigned char* b = static_cast<const unsigned char*>(f.bytes_of(*t));
    for (int64_t i = 0; i < p.numel; ++i) {
      double x = 0;
      switch (t->dtype) {
        case DType::F32: x = reinterpret_cast<const float*>(b)[i]; break;
        case DType::F64: x = reinterpret_cast<const double*>(b)[i]; break;
        case DType::BF16: x = static_cast<double>(reinterpret_cast<const bfloat16*>(b)[i]); break;
        case DType::F16: x = static_cast<double>(reinterpret_cast<const half*>(b)[i]); break;
        default:
          throw StatusError(Status(StatusCode::InvalidProblem, "--load " + path + ": " + p.name + " is not a float tensor"));
      }
      v[static_cast<size_t>(p.offset + i)] = x;
    }
  }
  return v;
}

#if defined(BARACUDA_WITH_CUDA)
// A graph step's batch and learning rate reach the device by asynchronous
// copies from pinned memory on the step's stream, so the host prepares step
// s + 1 while the GPU runs step s. Two slots: the host waits only to reuse a
// slot whose copies (enqueued two steps back) have not run yet.
class PinnedInputs {
 public:
  explicit PinnedInputs(size_t n) : n_(n) {
    for (Slot& s : slots_) {
      if (cudaHostAlloc(reinterpret_cast<void**>(&s.host), (2 * n + 1) * 4, cudaHostAllocDefault) != cudaSuccess ||
          cudaEventCreateWithFlags(&s.copied, cudaEventDisableTiming) != cudaSuccess)
        throw std::runtime_error("pinned batch buffers: cudaHostAlloc / cudaEventCreate failed");
    }
  }
  PinnedInputs(const PinnedInputs&) = delete;
  PinnedInputs& operator=(const PinnedInputs&) = delete;
  ~PinnedInputs() {
    for (Slot& s : slots_) {
      if (s.copied) cudaEventSynchronize(s.copied), cudaEventDestroy(s.copied);
      if (s.host) cudaFreeHost(s.host);
    }
  }
  void put(int64_t step, const Batch& b, double lr, Model& model, Optimizer& opt, cudaStream_t cs) {
    if (b.inputs.size() != n_ || b.targets.size() != n_) throw std::runtime_error("PinnedInputs: wrong batch size");
    Slot& s = slots_[step & 1];
    if (s.used && cudaEventSynchronize(s.copied) != cudaSuccess) throw std::runtime_error("cudaEventSynchronize failed");
    const float lr32 = static_cast<float>(lr);
    std::memcpy(s.host, b.inputs.data(), n_ * 4);
    std::memcpy(s.host + n_, b.targets.data(), n_ * 4);
    std::memcpy(s.host + 2 * n_, &lr32, 4);
    if (cudaMemcpyAsync(model.tokens_device(), s.host, n_ * 4, cudaMemcpyHostToDevice, cs) != cudaSuccess ||
        cudaMemcpyAsync(model.targets_device(), s.host + n_, n_ * 4, cudaMemcpyHostToDevice, cs) != cudaSuccess ||
        cudaMemcpyAsync(opt.lr_device(), s.host + 2 * n_, 4, cudaMemcpyHostToDevice, cs) != cudaSuccess ||
        cudaEventRecord(s.copied, cs) != cudaSuccess)
      throw std::runtime_error("the asynchronous batch copy failed");
    s.used = true;
  }

 private:
  struct Slot {
    int32_t* host = nullptr;
    cudaEvent_t copied = nullptr;
    bool used = false;
  };
  size_t n_;
  Slot slots_[2];
};
#endif

}  // namespace

int main(int argc, char** argv) try {
  std::setvbuf(stdout, nullptr, _IOLBF, 0);  // progress lines appear as they are printed, even into a pipe
  Options o = parse(argc, argv);
  const bool cuda = o.device == "cuda" || (o.device == "auto" && cuda_device_count() > 0);
  // The whole step as one CUDA graph: captured on a stream of our own (the
  // legacy default stream cannot be captured), lr and step in device memory.
  if (o.cuda_graph == 1 && !o.dump_first_step.empty()) {
    std::fprintf(stderr, "train_gpt: --dump-first-step and --cuda-graph exclude each other (the graph clips the gradients)\n");
    return 2;
  }
  if (o.cuda_graph == 1 && !cuda) std::printf("train_gpt: --cuda-graph needs the GPU; running without\n");
  const bool graph = cuda && o.cuda_graph != 0 && o.dump_first_step.empty();
  void* stream_handle = nullptr;
#if defined(BARACUDA_WITH_CUDA)
  cudaStream_t cs = nullptr;
  if (graph) {
    if (cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking) != cudaSuccess) throw std::runtime_error("cudaStreamCreate failed");
    stream_handle = cs;
  }
  cudaGraphExec_t exec = nullptr;
#endif
  const Stream stream = cuda ? Stream::cuda(0, stream_handle) : Stream::cpu();
  // Device memory this run takes: the drop in free memory from here (the
  // context exists) to the lowest seen at a progress line or the end. It
  // counts everything — our buffers, the plans' workspaces, cuBLASLt's and
  // cuDNN's handles, the CUDA graph — the number comparable with the process
  // delta bench/torch_gpt.py reports for PyTorch.
  size_t free0 = 0, lowest_free = 0;
  auto note_free = [&]() {
#if defined(BARACUDA_WITH_CUDA)
    size_t f = 0, total = 0;
    if (cuda && cudaMemGetInfo(&f, &total) == cudaSuccess) lowest_free = lowest_free == 0 ? f : std::min(lowest_free, f);
#endif
  };
#if defined(BARACUDA_WITH_CUDA)
  if (cuda) {
    cudaFree(nullptr);  // creates the context first, so it is not counted
    note_free();
    free0 = lowest_free;
  }
#endif
  // Our copies (Buffer::copy_*) run on the legacy stream: with a stream of our
  // own, wait for its work first.
  auto sync = [&]() {
#if defined(BARACUDA_WITH_CUDA)
    if (graph && cudaStreamSynchronize(cs) != cudaSuccess) throw std::runtime_error("cudaStreamSynchronize failed");
#endif
  };
  DType dtype = cuda ? DType::BF16 : DType::F32;
  if (o.dtype == "f32") dtype = DType::F32;
  else if (o.dtype == "bf16") dtype = DType::BF16;
  else if (!o.dtype.empty()) {
    std::fprintf(stderr, "train_gpt: --dtype is f32 or bf16\n");
    return 2;
  }
  std::unique_ptr<Model> owned = Model::create(stream, o.model, dtype);
  Model& model = *owned;
  std::vector<double> initial = model.initial_values(o.seed);
  if (!o.load.empty()) initial = load_checkpoint(o.load, model);
  check(model.upload_params(initial));
  AdamWOptions ao;
  ao.beta1 = o.beta1;
  ao.beta2 = o.beta2;
  ao.eps = o.eps;
  ao.weight_decay = o.weight_decay;
  ao.clip = o.clip;
  ao.device_scalars = graph;
  Optimizer opt(stream, model, ao, initial);
  const GptConfig& c = o.model;
  std::printf("train_gpt: %s %lld layers, %lld heads (%lld kv), %lld channels, T %lld, batch %lld: %.2f M parameters, %s %s\n",
              c.arch_name(), (long long)c.layers, (long long)c.heads, (long long)c.kv(), (long long)c.channels,
              (long long)c.seq_len, (long long)c.batch,
              model.param_count() / 1e6, cuda ? "CUDA" : "CPU", std::string(dtype_name(dtype)).c_str());
  std::printf("train_gpt: %.2f GiB in buffers (model %.2f, optimizer %.2f)\n",
              (model.allocated_bytes() + opt.allocated_bytes()) / 1073741824.0, model.allocated_bytes() / 1073741824.0,
              opt.allocated_bytes() / 1073741824.0);
  std::unique_ptr<AdditionTask> task;
  std::unique_ptr<TextData> text;
  if (o.data.empty()) task = std::make_unique<AdditionTask>(o.digits, o.seed);
  else text = std::make_unique<TextData>(o.data, o.seed);
  Batch batch;
#if defined(BARACUDA_WITH_CUDA)
  std::unique_ptr<PinnedInputs> pinned;
  if (graph) pinned = std::make_unique<PinnedInputs>(static_cast<size_t>(c.batch * c.seq_len));
#endif
  auto t0 = std::chrono::steady_clock::now();
  int64_t since = 0;
  double last_loss = 0;
  std::vector<int32_t> curve_tokens, curve_targets;  // --dump-curve: every batch, lr and loss
  std::vector<double> curve_lr, curve_loss;
  for (int64_t step = 0; step < o.steps; ++step) {
    if (task) task->next_batch(c.batch, c.seq_len, batch);
    else text->next_batch(c.batch, c.seq_len, batch);
    if (graph) {
#if defined(BARACUDA_WITH_CUDA)
      pinned->put(step, batch, lr_at(o, step), model, opt, cs);
      if (step == 0) {
        // One step of plain launches first: cuBLASLt picks its algorithms (and
        // cuDNN builds its plans) at the first run, which a capture cannot do.
        check(model.forward());
        check(model.backward());
        check(opt.step_device());
      } else if (!exec) {
        cudaGraph_t g = nullptr;
        if (cudaStreamBeginCapture(cs, cudaStreamCaptureModeThreadLocal) != cudaSuccess)
          throw std::runtime_error("cudaStreamBeginCapture failed");
        Status st = model.forward();
        if (st) st = model.backward();
        if (st) st = opt.step_device();
        const cudaError_t end = cudaStreamEndCapture(cs, &g);
        check(st);
        if (end != cudaSuccess || cudaGraphInstantiate(&exec, g, 0) != cudaSuccess)
          throw std::runtime_error(std::string("capturing the step failed: ") + cudaGetErrorString(cudaGetLastError()));
        cudaGraphDestroy(g);
        std::printf("train_gpt: the step is one CUDA graph from now on\n");
      }
      if (exec && cudaGraphLaunch(exec, cs) != cudaSuccess) throw std::runtime_error("cudaGraphLaunch failed");
#endif
    } else {
      check(model.set_batch(batch.inputs, batch.targets));
      check(model.forward());
      check(model.backward());
      if (step == 0 && !o.dump_first_step.empty()) {
        check(dump_first_step(o.dump_first_step, model, batch));
        std::printf("first step written to %s\n", o.dump_first_step.c_str());
      }
      check(opt.step(lr_at(o, step), step + 1));
    }
    ++since;
    if (!o.dump_curve.empty()) {
      double loss = 0;
      sync();
      check(model.read_loss(&loss));
      curve_tokens.insert(curve_tokens.end(), batch.inputs.begin(), batch.inputs.end());
      curve_targets.insert(curve_targets.end(), batch.targets.begin(), batch.targets.end());
      curve_lr.push_back(lr_at(o, step));
      curve_loss.push_back(loss);
    }
    if ((step + 1) % o.print_every == 0 || step + 1 == o.steps) {
      double loss = 0, norm = 0;
      sync();
      check(model.read_loss(&loss));
      note_free();
      last_loss = loss;
      if (o.clip > 0) check(opt.read_grad_norm(&norm));
      const auto t1 = std::chrono::steady_clock::now();
      const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / since;
      const double tps = c.batch * c.seq_len * 1000.0 / ms;
      std::printf("step %5lld  loss %.4f  norm %.3f  lr %.2e  %7.1f ms/step  %9.0f tokens/s", (long long)step + 1,
                  loss, norm, lr_at(o, step), ms, tps);
      if (cuda) std::printf("  MFU %.1f%%", 100.0 * tps * c.flops_per_token() / peak_flops(dtype));
      std::printf("\n");
      t0 = t1;
      since = 0;
    }
  }
  sync();
  note_free();
  if (cuda && free0 > 0)
    std::printf("train_gpt: device memory taken by the run: %.2f GiB (%.2f GiB in buffers; the rest: workspaces, "
                "cuBLASLt / cuDNN, the CUDA graph)\n",
                static_cast<double>(free0 - lowest_free) / 1073741824.0,
                (model.allocated_bytes() + opt.allocated_bytes()) / 1073741824.0);
  double accuracy = -1;
  if (task && o.eval_problems > 0) {
    std::vector<float> logits;
    auto next_tokens = [&](const std::vector<std::vector<int32_t>>& ctxs) {
      std::vector<int32_t> tok(static_cast<size_t>(c.batch * c.seq_len), 0), tgt(tok.size(), -100);
      for (size_t r = 0; r < ctxs.size(); ++r)
        for (size_t t = 0; t < ctxs[r].size() && t < static_cast<size_t>(c.seq_len); ++t) tok[r * c.seq_len + t] = ctxs[r][t];
      check(model.set_batch(tok, tgt));
      check(model.forward());
      sync();
      check(model.read_logits(&logits));
      std::vector<int> out;
      for (size_t r = 0; r < ctxs.size(); ++r) {
        const size_t pos = std::min(ctxs[r].size(), static_cast<size_t>(c.seq_len)) - 1;
        const float* row = logits.data() + (r * c.seq_len + pos) * c.vocab;
        out.push_back(static_cast<int>(std::max_element(row, row + c.vocab) - row));
      }
      return out;
    };
    std::vector<std::string> shown;
    accuracy = task->accuracy(o.eval_problems, o.seed + 1, static_cast<size_t>(c.batch), next_tokens, &shown);
    std::printf("addition accuracy on %d fresh problems: %.1f%%\n", o.eval_problems, 100 * accuracy);
    for (const std::string& s : shown) std::printf("  %s\n", s.c_str());
  }
  if (!o.save.empty()) {
    check(save_checkpoint(o.save, model, opt));
    std::printf("saved %s\n", o.save.c_str());
  }
#if defined(BARACUDA_WITH_CUDA)
  if (exec) cudaGraphExecDestroy(exec);
#endif
  if (!o.dump_curve.empty()) {
    std::vector<float> w(initial.begin(), initial.end());
    std::vector<TensorToSave> t;
    for (const ParamInfo& p : model.params())
      t.push_back({p.name, DType::F32, std::vector<int64_t>(p.shape.begin(), p.shape.end()), w.data() + p.offset});
    const int64_t n = static_cast<int64_t>(curve_loss.size());
    t.push_back({"tokens", DType::I32, {n, c.batch, c.seq_len}, curve_tokens.data()});
    t.push_back({"targets", DType::I32, {n, c.batch, c.seq_len}, curve_targets.data()});
    t.push_back({"lr", DType::F64, {n}, curve_lr.data()});
    t.push_back({"loss", DType::F64, {n}, curve_loss.data()});
    char hp[160];
    std::snprintf(hp, sizeof hp, "%.17g %.17g %.17g %.17g %.17g", o.beta1, o.beta2, o.eps, o.weight_decay, o.clip);
    std::map<std::string, std::string> meta = model_metadata(c);
    meta["dtype"] = std::string(dtype_name(dtype));
    meta["adamw_beta1_beta2_eps_wd_clip"] = hp;
    check(save_safetensors(o.dump_curve, t, meta));
    std::printf("curve written to %s\n", o.dump_curve.c_str());
  }
  if (o.expect_loss >= 0 && !(last_loss <= o.expect_loss)) {
    std::printf("train_gpt: the last loss %.4f is above the expected %.4f\n", last_loss, o.expect_loss);
    return 3;
  }
  if (o.expect_accuracy >= 0 && !(accuracy >= o.expect_accuracy)) {
    std::printf("train_gpt: the accuracy %.3f is below the expected %.3f\n", accuracy, o.expect_accuracy);
    return 3;
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_gpt: %s\n", e.what());
  return 1;
}
