"""Family "optim": PyTorch's optimizers and clip_grad_norm_ on the cases of baracuda_bench --family optim.

    python3 bench/torch_bench.py --family optim [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

GPT-2 124M's parameter list (148 tensors, wte [50304, 768]; bench/cases/optim.cpp),
same names, byte counting and method as bench/cases/optim.cpp:
  adamw.f32.gpt2                 torch.optim.AdamW(fused=True), f32 params and grads
  adamw.f32.gpt2.foreach         the same with foreach=True (no baracuda twin: one kernel serves both)
  adamw.bf16_master.gpt2         torch has no master-weight option: fused AdamW over f32 master
                                 params (f32 grads) + torch._foreach_copy_ into the bf16 params,
                                 the usual mixed-precision recipe
  adamw.bf16_master.gpt2.foreach the same with foreach=True
  sgd_momentum.f32.gpt2          torch.optim.SGD(momentum=0.9, weight_decay=0.01, fused=True) (its momentum
                                 buffers exist after the warm-up, as baracuda's buffers_initialized)
  sgd_momentum.f32.gpt2.foreach  the same with foreach=True
  sgd_nesterov.f32.gpt2[.foreach] the same with nesterov=True
  lion.f32.gpt2                  no torch version: not timed here (baracuda's row gives % of copy only)
  adafactor.f32.gpt2             torch.optim.Adafactor(lr=1e-2, foreach=True) (torch >= 2.5; it has no fused
                                 version); adafactor.f32.gpt2.single: foreach=False (its for-loop path)
  clip_grad_norm.f32.gpt2        torch.nn.utils.clip_grad_norm_(max_norm=1, foreach=True)
  global_norm.f32.gpt2           torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads))),
                                 what clip_grad_norm_ computes first
Bytes counted as baracuda's (28 per parameter for AdamW, 20 for SGD with momentum: p r/w, g r,
buf r/w; 12 for Adafactor: p r/w, g r, the least it can move; 12 for the clip, 4 for the
norm), whatever PyTorch itself moves. Weight decay 0.01 (Adafactor 0), lr 1e-4 (Adafactor 1e-2).
"""
from . import common

TOOL = "torch_optim"
NOTES = "torch.optim.AdamW / SGD fused / foreach, Adafactor foreach / single, clip_grad_norm_ foreach; bytes counted as baracuda's"
ITERS, WARMUP = 20, 5

C = 768


def gpt2_shapes():
    s = [(50304, C), (1024, C)]
    for _ in range(12):
        s += [(C,), (C,), (C, 3 * C), (3 * C,), (C, C), (C,), (C,), (C,), (C, 4 * C), (4 * C,), (4 * C, C), (C,)]
    s += [(C,), (C,)]
    return s


def numel(shape):
    n = 1
    for e in shape:
        n *= e
    return n


N = sum(numel(s) for s in gpt2_shapes())
BYTES = {"adamw": 28, "sgd_momentum": 20, "sgd_nesterov": 20, "adafactor": 12, "clip_grad_norm": 12, "global_norm": 4}


def all_cases():
    out = []
    for name in ("adamw.f32.gpt2", "adamw.f32.gpt2.foreach", "adamw.bf16_master.gpt2",
                 "adamw.bf16_master.gpt2.foreach", "sgd_momentum.f32.gpt2", "sgd_momentum.f32.gpt2.foreach",
                 "sgd_nesterov.f32.gpt2", "sgd_nesterov.f32.gpt2.foreach", "adafactor.f32.gpt2",
                 "adafactor.f32.gpt2.single", "clip_grad_norm.f32.gpt2", "global_norm.f32.gpt2"):
        out.append(dict(name=name, op=name.split(".")[0], dir="fwd", dtype=name.split(".")[1], shape=[N], axes=[]))
    return out


def prepare_case(torch, c, rotate_bytes):
    counted = BYTES[c["op"]] * N
    shapes = gpt2_shapes()

    def rand(shape, dt, lo=-1.0, hi=1.0):
        return torch.empty(shape, dtype=dt, device="cuda").uniform_(lo, hi)

    if c["op"] == "adamw":
        master = c["dtype"] == "bf16_master"
        params = [torch.nn.Parameter(rand(s, torch.float32)) for s in shapes]
        for p in params:
            p.grad = rand(p.shape, torch.float32)
        fused = not c["name"].endswith(".foreach")
        opt = torch.optim.AdamW(params, lr=1e-4, weight_decay=0.01, fused=fused, foreach=not fused)
        low = [p.detach().to(torch.bfloat16) for p in params] if master else None

        def launch(i):
            opt.step()
            if master:
                torch._foreach_copy_(low, [p.detach() for p in params])
    elif c["op"] in ("sgd_momentum", "sgd_nesterov", "adafactor"):
        params = [torch.nn.Parameter(rand(s, torch.float32)) for s in shapes]
        for p in params:
            p.grad = rand(p.shape, torch.float32)
        if c["op"] == "adafactor":
            opt = torch.optim.Adafactor(params, lr=1e-2, foreach=not c["name"].endswith(".single"))
        else:
            fused = not c["name"].endswith(".foreach")
            opt = torch.optim.SGD(params, lr=1e-4, momentum=0.9, weight_decay=0.01,
                                  nesterov=c["op"] == "sgd_nesterov", fused=fused, foreach=not fused)

        def launch(i):
            opt.step()
    else:
        params = [torch.nn.Parameter(rand(s, torch.float32)) for s in shapes]
        grads = [rand(s, torch.float32) for s in shapes]
        for p, g in zip(params, grads):
            p.grad = g
        if c["op"] == "clip_grad_norm":
            def launch(i):
                torch.nn.utils.clip_grad_norm_(params, 1.0, foreach=True)
        else:
            def launch(i):
                torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads, 2.0)), 2.0)
    return counted, 1, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    return common.bandwidth_case(torch, prepare_case, c, meta, args)
