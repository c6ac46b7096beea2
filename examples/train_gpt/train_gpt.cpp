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
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "model.hpp"
#include "safetensors.hpp"
#include "tasks.hpp"

using namespace baracuda;
using namespace train_gpt;

namespace {

struct Options {
  GptConfig model;
  int64_t steps = 300;
  double lr = 3e-3, min_lr_ratio = 0.1, weight_decay = 0.1, beta1 = 0.9, beta2 = 0.95, eps = 1e-8, clip = 1.0;
  int64_t warmup = 20;
  uint64_t seed = 1337;
  int digits = 2;
  std::string data, save, load, device = "auto";
  int64_t print_every = 25;
  int eval_problems = 200;
};

[[noreturn]] void usage(int code) {
  std::printf(
      "usage: train_gpt [flags]\n"
      "  --device auto|cpu|cuda   where to train (auto: the GPU when one is visible)\n"
      "  --steps N                optimizer steps (300)\n"
      "  --layers N --heads N --channels N --seq N --batch N   model and batch (2, 2, 64, 32, 16)\n"
      "  --lr X --warmup N --weight-decay X --clip X   AdamW with linear warm-up and cosine decay (3e-3, 20, 0.1, 1.0)\n"
      "  --digits N               the addition task's operand digits (2)\n"
      "  --data FILE              train on FILE's bytes instead of the addition task\n"
      "  --seed N                 weights and data (1337)\n"
      "  --print-every N          progress line period (25)\n"
      "  --save FILE / --load FILE  safetensors checkpoint written at the end / read at the start\n");
  std::exit(code);
}

Options parse(int argc, char** argv) {
  Options o;
  o.model.layers = 2;
  o.model.heads = 2;
  o.model.channels = 64;
  o.model.seq_len = 32;
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
    else if (a == "--lr") o.lr = std::stod(next());
    else if (a == "--warmup") o.warmup = std::stoll(next());
    else if (a == "--weight-decay") o.weight_decay = std::stod(next());
    else if (a == "--clip") o.clip = std::stod(next());
    else if (a == "--digits") o.digits = std::stoi(next());
    else if (a == "--data") o.data = next();
    else if (a == "--seed") o.seed = std::stoull(next());
    else if (a == "--print-every") o.print_every = std::max<int64_t>(1, std::stoll(next()));
    else if (a == "--save") o.save = next();
    else if (a == "--load") o.load = next();
    else {
      std::fprintf(stderr, "train_gpt: unknown flag %s\n", a.c_str());
      usage(2);
    }
  }
  return o;
}

void check(const Status& st) {
  if (!st) throw StatusError(st);
}

// Linear warm-up to lr, then cosine decay to lr * min_lr_ratio.
double lr_at(const Options& o, int64_t step) {
  if (step < o.warmup) return o.lr * static_cast<double>(step + 1) / static_cast<double>(o.warmup);
  const double t = static_cast<double>(step - o.warmup) / static_cast<double>(std::max<int64_t>(1, o.steps - o.warmup));
  const double c = 0.5 * (1.0 + std::cos(3.141592653589793 * std::min(1.0, t)));
  return o.lr * (o.min_lr_ratio + (1.0 - o.min_lr_ratio) * c);
}

// EXPERIMENT ONLY (host AdamW on CPU-resident parameters), replaced by AdamWPlan.
struct HostAdamW {
  std::vector<float> m, v;
  int64_t t = 0;
  void step(Gpt& g, const Options& o, double lr) {
    const size_t n = static_cast<size_t>(g.param_count());
    if (m.empty()) m.assign(n, 0), v.assign(n, 0);
    ++t;
    float* p = static_cast<float*>(g.param_buffer().data());
    float* d = static_cast<float*>(g.grad_buffer().data());
    double ss = 0;
    for (size_t i = 0; i < n; ++i) ss += double(d[i]) * d[i];
    const double norm = std::sqrt(ss), coef = std::min(1.0, o.clip / (norm + 1e-6));
    const double bc1 = 1 - std::pow(o.beta1, double(t)), bc2 = 1 - std::pow(o.beta2, double(t));
    for (const ParamInfo& pi : g.params()) {
      const bool decay = pi.shape.rank >= 2;
      for (int64_t k = pi.offset; k < pi.offset + pi.numel; ++k) {
        const float gr = float(d[k] * coef);
        if (decay) p[k] *= float(1 - lr * o.weight_decay);
        m[k] = float(o.beta1) * m[k] + float(1 - o.beta1) * gr;
        v[k] = float(o.beta2) * v[k] + float(1 - o.beta2) * gr * gr;
        p[k] -= float(lr / bc1 * m[k] / (std::sqrt(v[k] / bc2) + o.eps));
      }
    }
  }
};

}  // namespace

int main(int argc, char** argv) try {
  Options o = parse(argc, argv);
  const bool cuda = o.device == "cuda" || (o.device == "auto" && cuda_device_count() > 0);
  const Stream stream = cuda ? Stream::cuda(0) : Stream::cpu();
  const DType dtype = cuda ? DType::BF16 : DType::F32;
  Gpt model(stream, o.model, dtype);
  check(model.upload_params(model.initial_values(o.seed)));
  const GptConfig& c = o.model;
  std::printf("train_gpt: GPT-2 %lld layers, %lld heads, %lld channels, T %lld, batch %lld: %.2f M parameters, %s %s\n",
              (long long)c.layers, (long long)c.heads, (long long)c.channels, (long long)c.seq_len, (long long)c.batch,
              model.param_count() / 1e6, cuda ? "CUDA" : "CPU", std::string(dtype_name(dtype)).c_str());
  std::unique_ptr<AdditionTask> task;
  std::unique_ptr<TextData> text;
  if (o.data.empty()) task = std::make_unique<AdditionTask>(o.digits, o.seed);
  else text = std::make_unique<TextData>(o.data, o.seed);
  HostAdamW opt;
  Batch batch;
  auto t0 = std::chrono::steady_clock::now();
  int64_t since = 0;
  for (int64_t step = 0; step < o.steps; ++step) {
    if (task) task->next_batch(c.batch, c.seq_len, batch);
    else text->next_batch(c.batch, c.seq_len, batch);
    check(model.set_batch(batch.inputs, batch.targets));
    check(model.forward());
    check(model.backward());
    opt.step(model, o, lr_at(o, step));
    ++since;
    if ((step + 1) % o.print_every == 0 || step + 1 == o.steps) {
      double loss = 0;
      check(model.read_loss(&loss));
      const auto t1 = std::chrono::steady_clock::now();
      const double ms = std::chrono::duration<double, std::milli>(t1 - t0).count() / since;
      std::printf("step %5lld  loss %.4f  lr %.2e  %.1f ms/step  %.0f tokens/s\n", (long long)step + 1, loss,
                  lr_at(o, step), ms, c.batch * c.seq_len * 1000.0 / ms);
      t0 = t1;
      since = 0;
    }
  }
  if (task) {
    std::vector<float> logits;
    auto next_tokens = [&](const std::vector<std::vector<int32_t>>& ctxs) {
      std::vector<int32_t> tok(static_cast<size_t>(c.batch * c.seq_len), 0), tgt(tok.size(), -100);
      for (size_t r = 0; r < ctxs.size(); ++r)
        for (size_t t = 0; t < ctxs[r].size() && t < static_cast<size_t>(c.seq_len); ++t) tok[r * c.seq_len + t] = ctxs[r][t];
      check(model.set_batch(tok, tgt));
      check(model.forward());
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
    const double acc = task->accuracy(o.eval_problems, o.seed + 1, static_cast<size_t>(c.batch), next_tokens, &shown);
    std::printf("addition accuracy on %d fresh problems: %.1f%%\n", o.eval_problems, 100 * acc);
    for (const std::string& s : shown) std::printf("  %s\n", s.c_str());
  }
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "train_gpt: %s\n", e.what());
  return 1;
}
