"""GPT-2 training step in PyTorch, the reference for examples/train_gpt's speed.

    python3 bench/torch_gpt.py [--layers 12 --heads 12 --channels 768 --seq 1024 --batch 8
                                --vocab 50304 --steps 20 --warmup 5 --compile] [--json PATH]

The same model as train_gpt (nanoGPT's GPT-2: learned positions, pre-norm
LayerNorm blocks, GELU(tanh) MLP, tied embeddings, causal attention through
F.scaled_dot_product_attention), trained the usual PyTorch way: f32 parameters,
bf16 autocast, fused AdamW (betas 0.9 / 0.95, weight decay 0.1 on matrices and
embeddings), clip_grad_norm_(1.0). Tokens are random bytes (as train_gpt's
inputs are bytes), so only the speed means anything. Prints and records
ms/step (median of --steps timed steps after --warmup), tokens/s and the peak
memory torch allocated.
"""
import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class Block(nn.Module):
    def __init__(self, C, H, L):
        super().__init__()
        self.H = H
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.c_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.c_fc_proj = nn.Linear(4 * C, C)
        for lin in (self.c_attn, self.c_fc):
            nn.init.normal_(lin.weight, std=0.02)
            nn.init.zeros_(lin.bias)
        for lin in (self.c_proj, self.c_fc_proj):
            nn.init.normal_(lin.weight, std=0.02 / math.sqrt(2 * L))
            nn.init.zeros_(lin.bias)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.H, C // self.H).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, T, C)
        x = x + self.c_proj(y)
        return x + self.c_fc_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class GPT(nn.Module):
    def __init__(self, V, T, C, H, L):
        super().__init__()
        self.wte = nn.Embedding(V, C)
        self.wpe = nn.Embedding(T, C)
        nn.init.normal_(self.wte.weight, std=0.02)
        nn.init.normal_(self.wpe.weight, std=0.02)
        self.h = nn.ModuleList(Block(C, H, L) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)

    def forward(self, idx, targets):
        T = idx.shape[1]
        x = self.wte(idx) + self.wpe(torch.arange(T, device=idx.device))
        for b in self.h:
            x = b(x)
        logits = F.linear(self.ln_f(x), self.wte.weight)  # tied head
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.view(-1))


def run(args, compiled):
    torch.manual_seed(0)
    dev = "cuda"
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
    warm_s = time.time() - t0
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(args.steps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        loss = step()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    ms = statistics.median(times)
    n = sum(p.numel() for p in model.parameters())
    return {
        "mode": "torch.compile" if compiled else "eager",
        "ms_per_step": ms,
        "tokens_per_s": args.batch * args.seq * 1000.0 / ms,
        "peak_memory_gib": torch.cuda.max_memory_allocated() / 2**30,
        "parameters": n,
        "warmup_s": warm_s,
        "last_loss": float(loss),
    }


def main():
    ap = argparse.ArgumentParser()
    for k, v in (("layers", 12), ("heads", 12), ("channels", 768), ("seq", 1024), ("batch", 8), ("vocab", 50304),
                 ("steps", 20), ("warmup", 5)):
        ap.add_argument("--" + k, type=int, default=v)
    ap.add_argument("--compile", action="store_true", help="also time torch.compile")
    ap.add_argument("--json")
    args = ap.parse_args()
    torch.backends.cuda.matmul.allow_tf32 = True
    out = {"device": torch.cuda.get_device_name(), "torch": torch.__version__, "config": vars(args), "runs": []}
    for compiled in ([False, True] if args.compile else [False]):
        r = run(args, compiled)
        out["runs"].append(r)
        print("torch %-13s %8.2f ms/step %10.0f tokens/s  peak %.2f GiB  (%d parameters, warm-up %.0f s)" % (
            r["mode"], r["ms_per_step"], r["tokens_per_s"], r["peak_memory_gib"], r["parameters"], r["warmup_s"]))
        torch.cuda.empty_cache()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
