"""A Hugging Face-style Llama decoder block, then the same block patched with
baracuda's drop-ins (baracuda.torch: RMSNorm, Linear, rope, flash_attention):
same weights, compare the loss, the gradients and the time of a training
step.

    PYTHONPATH=<build>/python python python/examples/llama_block.py [--device cuda] [--dtype bf16]

On the CPU the baracuda side runs the library's CPU reference (an oracle in
double precision, not a fast backend): compare the numbers, not the speed.
"""
import argparse
import copy
import time

import torch
import torch.nn.functional as F

import baracuda.torch as bt


def rotate_half(x):
    a, b = x.chunk(2, dim=-1)
    return torch.cat((-b, a), dim=-1)


def hf_rope(q, k, theta):
    S, D = q.shape[2], q.shape[3]
    inv = theta ** (-torch.arange(0, D, 2, device=q.device, dtype=torch.float32) / D)
    ang = torch.arange(S, device=q.device, dtype=torch.float32)[:, None] * inv[None]
    emb = torch.cat((ang, ang), dim=-1)
    cos, sin = emb.cos().to(q.dtype), emb.sin().to(q.dtype)
    return q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin


def torch_attention(q, k, v):
    rep = q.shape[1] // k.shape[1]
    return F.scaled_dot_product_attention(q, k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1),
                                          is_causal=True)


class LlamaBlock(torch.nn.Module):
    def __init__(self, dim, heads, kv_heads, hidden, theta=10000.0, device=None, dtype=None):
        super().__init__()
        kw = dict(device=device, dtype=dtype)
        self.heads, self.kv_heads, self.hd, self.theta = heads, kv_heads, dim // heads, theta
        self.input_layernorm = torch.nn.RMSNorm(dim, eps=1e-6, **kw)
        self.q_proj = torch.nn.Linear(dim, dim, bias=False, **kw)
        self.k_proj = torch.nn.Linear(dim, kv_heads * self.hd, bias=False, **kw)
        self.v_proj = torch.nn.Linear(dim, kv_heads * self.hd, bias=False, **kw)
        self.o_proj = torch.nn.Linear(dim, dim, bias=False, **kw)
        self.post_attention_layernorm = torch.nn.RMSNorm(dim, eps=1e-6, **kw)
        self.gate_proj = torch.nn.Linear(dim, hidden, bias=False, **kw)
        self.up_proj = torch.nn.Linear(dim, hidden, bias=False, **kw)
        self.down_proj = torch.nn.Linear(hidden, dim, bias=False, **kw)
        self.rope = lambda q, k: hf_rope(q, k, self.theta)
        self.attention = torch_attention

    def forward(self, x):
        B, S, _ = x.shape
        h = self.input_layernorm(x)
        q = self.q_proj(h).view(B, S, self.heads, self.hd).transpose(1, 2)
        k = self.k_proj(h).view(B, S, self.kv_heads, self.hd).transpose(1, 2)
        v = self.v_proj(h).view(B, S, self.kv_heads, self.hd).transpose(1, 2)
        q, k = self.rope(q, k)
        a = self.attention(q, k, v).transpose(1, 2).reshape(B, S, -1)
        x = x + self.o_proj(a)
        h = self.post_attention_layernorm(x)
        return x + self.down_proj(F.silu(self.gate_proj(h)) * self.up_proj(h))


def patch(block):
    """The same block on baracuda's kernels (weights shared by copy)."""
    b = copy.deepcopy(block)
    for name in ("input_layernorm", "post_attention_layernorm"):
        old = getattr(b, name)
        new = bt.RMSNorm(old.normalized_shape, eps=old.eps, device=old.weight.device, dtype=old.weight.dtype)
        new.load_state_dict(old.state_dict())
        setattr(b, name, new)
    for name in ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"):
        old = getattr(b, name)
        new = bt.Linear(old.in_features, old.out_features, bias=False, device=old.weight.device,
                        dtype=old.weight.dtype)
        new.load_state_dict(old.state_dict())
        setattr(b, name, new)
    b.rope = lambda q, k: bt.rope(q.contiguous(), k.contiguous(), theta=b.theta)
    b.attention = lambda q, k, v: bt.flash_attention(q, k, v, causal=True)
    return b


def step(block, x, target):
    out = block(x)
    loss = F.mse_loss(out.float(), target)
    loss.backward()
    return loss


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    ap.add_argument("--dtype", default=None, help="f32 / bf16 (default: bf16 on CUDA, f64 on the CPU)")
    ap.add_argument("--iters", type=int, default=None)
    args = ap.parse_args()
    cuda = args.device.startswith("cuda")
    dtype = {"f32": torch.float32, "bf16": torch.bfloat16, "f64": torch.float64}[
        args.dtype or ("bf16" if cuda else "f64")]
    dim, heads, kv, hidden, B, S = (2048, 16, 4, 5632, 4, 1024) if cuda else (128, 4, 2, 256, 2, 16)
    iters = args.iters or (20 if cuda else 2)
    torch.manual_seed(0)
    ref = LlamaBlock(dim, heads, kv, hidden, device=args.device, dtype=dtype)
    ours = patch(ref)
    x = torch.randn(B, S, dim, device=args.device, dtype=dtype)
    target = torch.randn(B, S, dim, device=args.device)
    x1, x2 = x.clone().requires_grad_(), x.clone().requires_grad_()
    l_ref, l_ours = step(ref, x1, target), step(ours, x2, target)
    print(f"loss: torch {l_ref.item():.6f}  baracuda {l_ours.item():.6f}")
    worst = max((a.grad - b.grad).abs().max().item() / (a.grad.abs().max().item() + 1e-30)
                for a, b in zip(ref.parameters(), ours.parameters()))
    print(f"input grad max rel diff {(x1.grad - x2.grad).abs().max().item() / x1.grad.abs().max().item():.2e}, "
          f"worst parameter grad max rel diff {worst:.2e}")
    for name, blk in (("torch", ref), ("baracuda", ours)):
        for _ in range(2):
            step(blk, x.clone().requires_grad_(), target)
        if cuda:
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(iters):
            step(blk, x.clone().requires_grad_(), target)
        if cuda:
            torch.cuda.synchronize()
        print(f"{name:9s} {(time.perf_counter() - t0) / iters * 1e3:8.2f} ms per forward + backward "
              f"({args.device}, {dtype}, B={B} S={S} dim={dim})")


if __name__ == "__main__":
    main()
