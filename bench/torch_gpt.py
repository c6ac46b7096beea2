"""GPT-2 / Llama training steps in PyTorch, the reference for examples/train_gpt.

    python3 bench/torch_gpt.py [--arch gpt2|llama --layers 12 --heads 12 --kv-heads 0 --channels 768
                                --ffn 0 --seq 1024 --batch 8 --vocab 50304 --steps 20 --warmup 5
                                --compile] [--json PATH]
    python3 bench/torch_gpt.py --check FIRST_STEP.safetensors [--json PATH]
    python3 bench/torch_gpt.py --curve RUN.safetensors [--plot PNG] [--json PATH]

The same models as train_gpt. GPT-2 is nanoGPT's: learned positions, pre-norm
LayerNorm blocks, GELU(tanh) MLP, tied embeddings. Llama is Hugging Face's
layout with fused projections (qkv_proj, gate_up_proj, as train_gpt stores
them): RMSNorm (eps 1e-5), RoPE on rotate_half pairs, grouped-query attention,
SwiGLU, untied head, no biases. Attention goes through
F.scaled_dot_product_attention. Trained the usual PyTorch way: f32 parameters,
bf16 autocast, fused AdamW (betas 0.9 / 0.95, weight decay 0.1 on matrices and
embeddings), clip_grad_norm_(1.0). Tokens are random bytes (as train_gpt's
inputs are bytes), so only the speed means anything. Prints and records
ms/step (median of --steps timed steps after --warmup), tokens/s, the peak
memory torch allocated (max_memory_allocated) and the device memory the
process took over the run (cudaMemGetInfo's drop from before the model was
built to the lowest free memory seen: tensors, the caching allocator's slack,
cuBLAS / cuDNN workspaces, compiled graphs' pools; the number comparable with
train_gpt's "device memory" line).
"""
import argparse
import gc
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Attention(nn.Module):
    def __init__(self, C, H, L):
        super().__init__()
        self.H = H
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        nn.init.normal_(self.c_attn.weight, std=0.02)
        nn.init.zeros_(self.c_attn.bias)
        nn.init.normal_(self.c_proj.weight, std=0.02 / math.sqrt(2 * L))
        nn.init.zeros_(self.c_proj.bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        return self.c_proj(y)


class Mlp(nn.Module):
    def __init__(self, C, L):
        super().__init__()
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_proj = nn.Linear(4 * C, C)
        nn.init.normal_(self.c_fc.weight, std=0.02)
        nn.init.zeros_(self.c_fc.bias)
        nn.init.normal_(self.c_proj.weight, std=0.02 / math.sqrt(2 * L))
        nn.init.zeros_(self.c_proj.bias)

    def forward(self, x):
        return self.c_proj(F.gelu(self.c_fc(x), approximate="tanh"))


class Block(nn.Module):
    def __init__(self, C, H, L):
        super().__init__()
        self.ln_1 = nn.LayerNorm(C)
        self.attn = Attention(C, H, L)
        self.ln_2 = nn.LayerNorm(C)
        self.mlp = Mlp(C, L)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT-2; parameter names equal train_gpt's safetensors names."""

    def __init__(self, V, T, C, H, L):
        super().__init__()
        self.transformer = nn.ModuleDict(dict(
            wte=nn.Embedding(V, C), wpe=nn.Embedding(T, C),
            h=nn.ModuleList(Block(C, H, L) for _ in range(L)), ln_f=nn.LayerNorm(C)))
        nn.init.normal_(self.transformer.wte.weight, std=0.02)
        nn.init.normal_(self.transformer.wpe.weight, std=0.02)

    def forward(self, idx, targets):
        tr = self.transformer
        T = idx.shape[1]
        x = tr.wte(idx) + tr.wpe(torch.arange(T, device=idx.device))
        for b in tr.h:
            x = b(x)
        logits = F.linear(tr.ln_f(x), tr.wte.weight)  # tied head
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1).long(), ignore_index=-100)


def rms_norm(x, w, eps=1e-5):
    """Llama's RMSNorm, computed in f32 and cast back (as Hugging Face does under autocast)."""
    xf = x.float()
    y = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    return (y * w.float()).to(x.dtype) if x.dtype != torch.float32 else y * w


class RMSNorm(nn.Module):
    def __init__(self, C):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):
        return rms_norm(x, self.weight)


def rope_tables(T, D, theta, dev):
    """cos / sin [T, D] for rotate_half pairs (i, i + D/2): angle = pos * theta^(-2i/D), in f64."""
    inv = theta ** (-torch.arange(0, D // 2, dtype=torch.float64, device=dev) * 2.0 / D)
    ang = torch.arange(T, dtype=torch.float64, device=dev)[:, None] * inv[None, :]
    ang = torch.cat([ang, ang], dim=-1)
    return ang.cos().float(), ang.sin().float()


def rotate(x, cos, sin):
    x1, x2 = x.chunk(2, dim=-1)
    return x * cos.to(x.dtype) + torch.cat([-x2, x1], dim=-1) * sin.to(x.dtype)


class LlamaAttention(nn.Module):
    def __init__(self, C, H, Hk):
        super().__init__()
        self.H, self.Hk, self.D = H, Hk, C // H
        self.qkv_proj = nn.Linear(C, (H + 2 * Hk) * self.D, bias=False)
        self.o_proj = nn.Linear(C, C, bias=False)

    def forward(self, x, cos, sin):
        B, T, C = x.shape
        H, Hk, D = self.H, self.Hk, self.D
        q, k, v = self.qkv_proj(x).split([H * D, Hk * D, Hk * D], dim=2)
        q = rotate(q.view(B, T, H, D).transpose(1, 2), cos, sin)
        k = rotate(k.view(B, T, Hk, D).transpose(1, 2), cos, sin)
        v = v.view(B, T, Hk, D).transpose(1, 2)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=Hk != H)
        return self.o_proj(y.transpose(1, 2).reshape(B, T, C))


class LlamaMlp(nn.Module):
    def __init__(self, C, Fh):
        super().__init__()
        self.Fh = Fh
        self.gate_up_proj = nn.Linear(C, 2 * Fh, bias=False)
        self.down_proj = nn.Linear(Fh, C, bias=False)

    def forward(self, x):
        g, u = self.gate_up_proj(x).split(self.Fh, dim=-1)
        return self.down_proj(F.silu(g) * u)


class LlamaBlock(nn.Module):
    def __init__(self, C, H, Hk, Fh):
        super().__init__()
        self.input_layernorm = RMSNorm(C)
        self.self_attn = LlamaAttention(C, H, Hk)
        self.post_attention_layernorm = RMSNorm(C)
        self.mlp = LlamaMlp(C, Fh)

    def forward(self, x, cos, sin):
        x = x + self.self_attn(self.input_layernorm(x), cos, sin)
        return x + self.mlp(self.post_attention_layernorm(x))


class LlamaModel(nn.Module):
    def __init__(self, V, C, H, Hk, Fh, L):
        super().__init__()
        self.embed_tokens = nn.Embedding(V, C)
        self.layers = nn.ModuleList(LlamaBlock(C, H, Hk, Fh) for _ in range(L))
        self.norm = RMSNorm(C)


class Llama(nn.Module):
    """Hugging Face Llama names (model.layers.N.self_attn.qkv_proj, ...) = train_gpt's safetensors names."""

    def __init__(self, V, T, C, H, L, Hk=0, Fh=0, theta=10000.0):
        super().__init__()
        Hk = Hk or H
        Fh = Fh or (8 * C // 3 + 31) // 32 * 32
        self.model = LlamaModel(V, C, H, Hk, Fh, L)
        self.lm_head = nn.Linear(C, V, bias=False)
        self.T, self.D, self.theta = T, C // H, theta
        for n, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * L) if n.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, idx, targets):
        T = idx.shape[1]
        cos, sin = rope_tables(T, self.D, self.theta, idx.device)
        x = self.model.embed_tokens(idx)
        for b in self.model.layers:
            x = b(x, cos, sin)
        logits = self.lm_head(self.model.norm(x))
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1).long(), ignore_index=-100)


def model_from_meta(meta, dev):
    """The model a train_gpt safetensors file describes (its metadata)."""
    L, H, C, T, V = (int(meta[k]) for k in ("n_layer", "n_head", "n_embd", "block_size", "vocab_size"))
    if meta.get("model", "gpt2") == "llama":
        return Llama(V, T, C, H, L, int(meta.get("n_kv_head", H)), int(meta.get("ffn_hidden", 0)),
                     float(meta.get("rope_theta", 10000.0))).to(dev)
    return GPT(V, T, C, H, L).to(dev)


def read_safetensors(path, dev):
    """(metadata, {name: tensor}) of a safetensors file (the format is simple
    enough to read here, so the check needs no safetensors package)."""
    dtypes = {"F32": torch.float32, "F64": torch.float64, "BF16": torch.bfloat16, "F16": torch.float16,
              "I32": torch.int32, "I64": torch.int64, "U8": torch.uint8, "I8": torch.int8, "BOOL": torch.bool}
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    meta = header.pop("__metadata__", {})
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        buf = bytearray(data[b:end])
        x = torch.frombuffer(buf, dtype=dtypes[e["dtype"]]) if end > b else torch.empty(0, dtype=dtypes[e["dtype"]])
        out[name] = x.reshape(e["shape"]).to(dev)
    return meta, out


def check(path):
    """Agreement with train_gpt's first step (train_gpt --dump-first-step FILE):
    the same weights and batch through this model; loss and every gradient
    compared (f32 files: no autocast; bf16 files: bf16 autocast)."""
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    meta, t = read_safetensors(path, dev)
    torch.backends.cuda.matmul.allow_tf32 = False  # an f32 check compares f32 arithmetic
    torch.backends.cudnn.allow_tf32 = False
    model = model_from_meta(meta, dev)
    names = [n for n, _ in model.named_parameters()]
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(t[n])
    bf16 = meta["dtype"] == "bf16"
    with torch.autocast(dev, dtype=torch.bfloat16, enabled=bf16):
        loss = model(t["tokens"].long(), t["targets"].long())
    loss.backward()
    ours = float(meta["loss"])
    out = {"dtype": meta["dtype"], "loss_ours": ours, "loss_torch": float(loss),
           "loss_rel_diff": abs(ours - float(loss)) / abs(float(loss)), "grads": {}}
    worst = ("", 0.0)
    for n, p in model.named_parameters():
        g, mine = p.grad.float(), t["grad." + n].float()
        rel = float((mine - g).norm() / g.norm().clamp_min(1e-30))
        out["grads"][n] = rel
        if rel > worst[1]:
            worst = (n, rel)
    out["worst_grad"] = worst
    print("check %s: loss ours %.6f torch %.6f (rel diff %.2e); gradients: worst relative L2 difference %.2e (%s), "
          "median %.2e over %d tensors" % (meta["dtype"], ours, float(loss), out["loss_rel_diff"], worst[1], worst[0],
                                             statistics.median(out["grads"].values()), len(names)))
    return out


def curve(path, plot=None):
    """Train the PyTorch model on train_gpt's run (train_gpt --dump-curve FILE):
    the same initial weights, batches, learning rates and AdamW / clip settings;
    f32 parameters, bf16 autocast when the run was bf16. Returns both loss
    sequences and their largest difference; --plot draws them."""
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    meta, t = read_safetensors(path, dev)
    L, C = int(meta["n_layer"]), int(meta["n_embd"])
    b1, b2, eps, wd, clip = (float(x) for x in meta["adamw_beta1_beta2_eps_wd_clip"].split())
    torch.backends.cuda.matmul.allow_tf32 = False
    model = model_from_meta(meta, dev)
    with torch.no_grad():
        for n, p in model.named_parameters():
            p.copy_(t[n])
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": wd}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=1.0, betas=(b1, b2), eps=eps, fused=dev == "cuda")
    bf16 = meta["dtype"] == "bf16"
    ours = t["loss"].double().cpu().tolist()
    theirs = []
    for i in range(len(ours)):
        for g in opt.param_groups:
            g["lr"] = float(t["lr"][i])
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=bf16):
            loss = model(t["tokens"][i].long(), t["targets"][i].long())
        loss.backward()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        opt.zero_grad(set_to_none=True)
        theirs.append(float(loss.detach()))
    diff = [abs(a - b) for a, b in zip(ours, theirs)]
    worst = max(range(len(diff)), key=lambda i: diff[i])
    out = {"dtype": meta["dtype"], "steps": len(ours), "loss_ours": ours, "loss_torch": theirs,
           "max_abs_diff": diff[worst], "at_step": worst + 1,
           "max_rel_diff": max(d / abs(b) for d, b in zip(diff, theirs))}
    print("curve %s, %d steps: loss %.4f -> %.4f (ours) / %.4f -> %.4f (torch); largest difference %.2e at step %d "
          "(relative %.2e)" % (meta["dtype"], len(ours), ours[0], ours[-1], theirs[0], theirs[-1], diff[worst],
                               worst + 1, out["max_rel_diff"]))
    if plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, ax = plt.subplots(figsize=(7, 4))
        steps = list(range(1, len(ours) + 1))
        ax.plot(steps, theirs, label="PyTorch (f32 weights, %s)" % ("bf16 autocast" if bf16 else "f32"), lw=2.5,
                alpha=0.6)
        ax.plot(steps, ours, label="baracuda train_gpt (%s)" % ("bf16 weights, f32 master" if bf16 else "f32"),
                lw=1.2, ls="--", color="black")
        ax.set_xlabel("step")
        ax.set_ylabel("training loss")
        ax.set_title("%s %d layers x %d channels, same weights and batches" % (
            "Llama" if meta.get("model") == "llama" else "GPT-2", L, C))
        ax.legend()
        fig.tight_layout()
        fig.savefig(plot, dpi=110)
        print("plot written to %s" % plot)
    return out


def run(args, compiled):
    torch.manual_seed(0)
    dev = "cuda"
    torch.cuda.synchronize()
    free0 = torch.cuda.mem_get_info()[0]
    lowest = [free0]

    def note_free():
        lowest[0] = min(lowest[0], torch.cuda.mem_get_info()[0])

    if args.arch == "llama":
        model = Llama(args.vocab, args.seq, args.channels, args.heads, args.layers, args.kv_heads, args.ffn).to(dev)
    else:
        model = GPT(args.vocab, args.seq, args.channels, args.heads, args.layers).to(dev)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                            lr=3e-4, betas=(0.9, 0.95), eps=1e-8, fused=True)
    step_model = torch.compile(model) if compiled else model
    x = torch.randint(0, 256, (args.batch, args.seq), device=dev)
    y = torch.randint(0, 256, (args.batch, args.seq), device=dev)

    def step():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_model(x, y)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        return loss

    t0 = time.time()
    for _ in range(args.warmup):
        step()
        torch.cuda.synchronize()
        note_free()
    warm_s = time.time() - t0
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        loss = step()
        b.record()
        b.synchronize()
        note_free()
        times.append(a.elapsed_time(b))
    ms = statistics.median(times)
    n = sum(p.numel() for p in model.parameters())
    return {
        "mode": "torch.compile" if compiled else "eager",
        "ms_per_step": ms,
        "tokens_per_s": args.batch * args.seq * 1000.0 / ms,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
        "device_memory_gib": (free0 - lowest[0]) / 2**30,
        "parameters": n,
        "warmup_s": warm_s,
        "last_loss": float(loss),
    }


def main():
    ap = argparse.ArgumentParser()
    for k, v in (("layers", 12), ("heads", 12), ("kv-heads", 0), ("channels", 768), ("ffn", 0), ("seq", 1024),
                 ("batch", 8), ("vocab", 50304), ("steps", 20), ("warmup", 5)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--arch", choices=("gpt2", "llama"), default="gpt2")
    ap.add_argument("--compile", action="store_true", help="also time torch.compile")
    ap.add_argument("--json")
    ap.add_argument("--curve", help="a train_gpt --dump-curve file: train PyTorch on the same run and compare")
    ap.add_argument("--plot", help="with --curve: a PNG of both loss curves")
    ap.add_argument("--check", action="append", default=[],
                    help="a train_gpt --dump-first-step file: compare loss and gradients (repeatable)")
    args = ap.parse_args()
    if args.curve:
        res = curve(args.curve, args.plot)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    if args.check:
        res = [check(p) for p in args.check]
        if args.json:
            with open(args.json, "w") as f:
                json.dump(res, f, indent=1)
        return
    torch.backends.cuda.matmul.allow_tf32 = True
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "config": vars(args), "runs": []}
    for compiled in ([False, True] if args.compile else [False]):
        r = run(args, compiled)
        out["runs"].append(r)
        print("torch %-13s %8.2f ms/step %10.0f tokens/s  peak %.2f GiB allocated, %.2f GiB device memory  "
              "(%d parameters, warm-up %.0f s)" % (r["mode"], r["ms_per_step"], r["tokens_per_s"], r["peak_memory_gib"],
                                                 r["device_memory_gib"], r["parameters"], r["warmup_s"]))
        gc.collect()
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
