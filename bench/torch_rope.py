#!/usr/bin/env python3
"""Times PyTorch's eager RoPE on the cases of baracuda_rope_bench.

    python3 bench/torch_rope.py [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

RoPE written the usual eager way (Hugging Face's apply_rotary_pos_emb):
    q_embed = q * cos + rotate_half(q) * sin,   rotate_half(x) = cat(-x2, x1)
with cos / sin [B, 1, S, D] in the input dtype, built once from position_ids
[B, S] OUTSIDE the timed region (HF builds them once per model forward), so
"rope" and "rope_cache" run the same PyTorch code (baracuda computes cos/sin in
the kernel for "rope" and reads an f32 [S, D/2] table for "rope_cache").
"rope_interleaved": pairs (2i, 2i+1), cos / sin [B, 1, S, D/2]:
    stack((x1 cos - x2 sin, x1 sin + x2 cos), -1).flatten(-2), x1 = x[..., 0::2].
Same names, byte counting and method as bench/rope_bench.cpp, so
bench/compare.py can join the two JSON files by case name:
  * each case: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; the timed runs are queued behind torch.cuda._sleep;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
  * forward under torch.no_grad(); backward = torch.autograd.grad((q_out, k_out),
    (q, k), (dy_q, dy_k), retain_graph=True) on a graph built once per set;
  * bytes counted as baracuda's: q, k read + two outputs written + positions
    (+ the f32 cos/sin table for rope_cache), whatever PyTorch itself moves.
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

OPS = ["rope", "rope_cache", "rope_interleaved"]
SHAPE = (4, 32, 4096, 128)  # B, H (= Hk), S, D
DTYPES = ["bf16"]
DTYPE_SIZE = {"f32": 4, "bf16": 2, "f16": 2}
THETA = 10000.0
SPIN_HZ = 2.0e9  # cycles per second assumed for torch.cuda._sleep; too high only sleeps longer


def case_name(op, direction, dtype, shape):
    return "%s.%s.%s.%s" % (op, direction, dtype, "x".join(map(str, shape)))


def all_cases():
    # Same order as rope_bench.cpp.
    out = []
    for op in OPS:
        for direction in ("fwd", "bwd"):
            for dtype in DTYPES:
                out.append(dict(name=case_name(op, direction, dtype, SHAPE), op=op, dir=direction, dtype=dtype,
                                shape=list(SHAPE), axes=[]))
    return out


def counted_bytes(c):
    B, H, S, D = c["shape"]
    t = B * H * S * D * DTYPE_SIZE[c["dtype"]]
    extra = B * S * 8  # positions, int64
    if c["op"] == "rope_cache":
        extra += 2 * S * (D // 2) * 4
    return 4 * t + extra


def rotate_half(torch, x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def make_fn(torch, op):
    if op == "rope_interleaved":
        def one(x, cos, sin):
            x1, x2 = x[..., 0::2], x[..., 1::2]
            return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    else:
        def one(x, cos, sin):
            return x * cos + rotate_half(torch, x) * sin
    return lambda q, k, cos, sin: (one(q, cos, sin), one(k, cos, sin))


def cos_sin(torch, op, shape, dt):
    """cos / sin as Hugging Face builds them from position_ids (outside the timing)."""
    B, _, S, D = shape
    inv_freq = 1.0 / (THETA ** (torch.arange(0, D, 2, dtype=torch.int64, device="cuda").float() / D))
    position_ids = torch.arange(S, device="cuda").expand(B, S)
    freqs = position_ids[:, :, None].float() * inv_freq[None, None, :]  # [B, S, D/2]
    emb = freqs if op == "rope_interleaved" else torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dt)[:, None], emb.sin().to(dt)[:, None]  # [B, 1, S, D or D/2]


def time_median_ms(torch, launch, warmup, iters):
    """launch(i) for i over warm-up + timed calls; median ms of the timed ones."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(warmup):
        launch(i)
    host_s = (time.perf_counter() - t0) / max(warmup, 1)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    spin_s = min(0.5, iters * max(2 * host_s, 50e-6) + 1e-4)
    torch.cuda._sleep(int(spin_s * SPIN_HZ))
    for i, (start, stop) in enumerate(events):
        start.record()
        launch(warmup + i)
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def run_case(torch, c, rotate_bytes, args):
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[c["dtype"]]
    fn = make_fn(torch, c["op"])
    cos, sin = cos_sin(torch, c["op"], c["shape"], dt)
    counted = counted_bytes(c)
    nsets = max(1, min(16, -(-rotate_bytes // counted)))

    def rand():
        return torch.empty(c["shape"], dtype=dt, device="cuda").uniform_(-1.0, 1.0)

    if c["dir"] == "fwd":
        qs = [(rand(), rand()) for _ in range(nsets)]

        def launch(i):
            q, k = qs[i % nsets]
            with torch.no_grad():
                fn(q, k, cos, sin)
    else:
        ins = [(rand().requires_grad_(), rand().requires_grad_()) for _ in range(nsets)]
        outs = [fn(q, k, cos, sin) for q, k in ins]
        dys = [(rand(), rand()) for _ in range(nsets)]

        def launch(i):
            j = i % nsets
            torch.autograd.grad(outs[j], ins[j], dys[j], retain_graph=True)

    ms = time_median_ms(torch, launch, args.warmup, args.iters)
    us = ms * 1e3
    return dict(time_us=us, gbps=counted / (us * 1e-6) / 1e9, bytes=counted, sets=nsets)


def copy_bandwidth(torch):
    n = 1 << 30
    src = torch.empty(n // 4, dtype=torch.float32, device="cuda").uniform_(-1, 1)
    dst = torch.empty_like(src)
    ms = time_median_ms(torch, lambda i: dst.copy_(src), 3, 20)
    return 2.0 * n / (ms * 1e-3) / 1e9


def write_json(path, meta, results):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(dict(meta, cases=results), f, indent=1)
    os.replace(tmp, path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args()
    args.iters = max(1, args.iters)

    cases = [c for c in all_cases() if args.filter in c["name"]]
    if args.list:
        print("\n".join(c["name"] for c in cases))
        return 0

    import torch  # here, so --list and py_compile work without torch

    if not torch.cuda.is_available():
        print("torch_rope: no CUDA device", file=sys.stderr)
        return 1
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 60 << 20))
    rotate_bytes = max(4 * l2, 256 << 20)
    meta = dict(tool="torch_rope", date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                device=torch.cuda.get_device_name(0), torch=torch.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(), l2_bytes=l2, iters=args.iters, warmup=args.warmup,
                filter=args.filter, copy_bandwidth_gbps=copy_bandwidth(torch),
                notes="eager HF-style RoPE; cos/sin built outside the timing; bytes counted as baracuda's")
    print("device: %s, torch %s (CUDA %s); copy bandwidth %.1f GB/s; %d iters, median\n"
          % (meta["device"], meta["torch"], meta["cuda"], meta["copy_bandwidth_gbps"], args.iters))
    print("%-42s %10s %8s %7s" % ("case", "time_us", "GB/s", "%copy"))

    results, failed = [], 0
    for c in cases:
        r = dict(c)
        try:
            r.update(run_case(torch, c, rotate_bytes, args), ok=True)
            r["frac_copy"] = r["gbps"] / meta["copy_bandwidth_gbps"]
            print("%-42s %10.1f %8.1f %6.1f%%" % (c["name"], r["time_us"], r["gbps"], 100 * r["frac_copy"]))
        except Exception as e:  # OOM, ...: report and go on
            failed += 1
            r.update(ok=False, error="%s: %s" % (type(e).__name__, e))
            print("%-42s  ERROR %s" % (c["name"], r["error"]))
        sys.stdout.flush()
        results.append(r)
        torch.cuda.empty_cache()
        if args.json:
            write_json(args.json, meta, results)
    print("\n%d cases, %d failed" % (len(results), failed))
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
