#!/usr/bin/env python3
"""Times PyTorch's scaled_dot_product_attention on baracuda_attn_bench's cases.

    python3 bench/torch_attention.py OURS.json [--json PATH] [--markdown PATH] [--iters N]

Reads the case list (shapes, dtype, causal, layout) from baracuda_attn_bench's
JSON, times PyTorch with each SDPA backend it has on Hopper (FlashAttention-2
and cuDNN) in the same process, and prints ours / torch side by side:
  * forward: torch.no_grad() SDPA call; backward: torch.autograd.grad of the
    output w.r.t. (q, k, v) with a fixed dy on a graph built once (forward not
    timed), the same work FlashSdpaBackwardPlan.run does;
  * median of `iters` runs, each between its own CUDA events, after warm-up;
  * TFLOP/s with the flop count of ours (forward 4*B*H*D per visible (query, key)
    pair, backward 10*B*H*D; causal counts the pairs its alignment leaves);
  * GQA runs with enable_gqa=True (no copies of K/V);
  * cases PyTorch's SDPA cannot express (softcap, ALiBi, sliding window) are
    listed as n/a. The decode case (Q = 1, bottom-right causal) is non-causal
    for a single query row, which is what PyTorch runs.
"""
import argparse
import json
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

BACKENDS = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}
DT = {"bf16": torch.bfloat16, "f16": torch.float16}
UNSUPPORTED = ("softcap", "alibi", "window")


def case_flops(c):
    """The flop count baracuda_attn_bench used (its TFLOP/s x its time), so both
    sides share one convention; the standard one when ours did not run."""
    if c.get("tflops") and c.get("time_us"):
        return c["tflops"] * 1e12 * c["time_us"] * 1e-6
    f = (10 if c["dir"] == "bwd" else 4) * c["B"] * c["H"] * c["Q"] * c["K"] * c["D"]
    if c["causal"] and c["Q"] == c["K"]:
        f /= 2
    return f


def time_ms(fn, iters, warmup=5):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(iters):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return statistics.median(times)


def run_case(c, backend, iters):
    dt = DT[c["dtype"]]
    B, H, Hk, Q, K, D = c["B"], c["H"], c["Hk"], c["Q"], c["K"], c["D"]
    causal = c["causal"] and not (Q == 1 and "decode" in c["name"])
    if causal and Q != K:
        return None, "torch is_causal is top-left only; case skipped for Q != K"
    bshd = c.get("layout") == "bshd"

    def make(h, s, grad):
        if bshd:
            t = torch.randn(B, s, h, D, device="cuda", dtype=dt).transpose(1, 2)
        else:
            t = torch.randn(B, h, s, D, device="cuda", dtype=dt)
        return t.requires_grad_(grad)

    bwd = c["dir"] == "bwd"
    q, k, v = make(H, Q, bwd), make(Hk, K, bwd), make(Hk, K, bwd)
    kw = dict(is_causal=causal, enable_gqa=(H != Hk))
    with sdpa_kernel([BACKENDS[backend]]):
        if not bwd:
            with torch.no_grad():
                ms = time_ms(lambda: F.scaled_dot_product_attention(q, k, v, **kw), iters)
        else:
            y = F.scaled_dot_product_attention(q, k, v, **kw)
            dy = torch.randn_like(y)
            ms = time_ms(lambda: torch.autograd.grad(y, (q, k, v), dy, retain_graph=True), iters)
    return ms, None


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("ours")
    ap.add_argument("--json")
    ap.add_argument("--markdown")
    ap.add_argument("--iters", type=int, default=20)
    a = ap.parse_args()
    with open(a.ours) as f:
        ours = json.load(f)
    rows = []
    for c in ours["cases"]:
        r = dict(name=c["name"], dir=c["dir"], dtype=c["dtype"], ours_tflops=c.get("tflops"), ours_us=c.get("time_us"),
                 variant=c.get("variant", ""), sku=c.get("sku", ""),
                 # our bespoke kernels, when the default route is cuDNN (else the default is bespoke)
                 bespoke_tflops=c.get("bespoke_tflops") or (c.get("tflops") if "[bespoke" in c.get("sku", "") else None),
                 bespoke_variant=c.get("bespoke_variant") or (c.get("variant") if "[bespoke" in c.get("sku", "") else ""))
        for be in BACKENDS:
            if any(u in c["name"] for u in UNSUPPORTED) or c["dtype"] not in DT:
                r[be + "_tflops"] = None
                r[be + "_error"] = "not expressible in torch SDPA"
                continue
            try:
                ms, err = run_case(c, be, a.iters)
            except Exception as e:  # a backend that rejects the problem
                ms, err = None, str(e).splitlines()[0][:160]
            torch.cuda.empty_cache()
            r[be + "_us"] = ms * 1e3 if ms else None
            r[be + "_tflops"] = case_flops(c) / (ms * 1e-3) / 1e12 if ms else None
            if err:
                r[be + "_error"] = err
        best = max([x for x in (r.get("flash_tflops"), r.get("cudnn_tflops")) if x] or [0]) or None
        r["vs_flash"] = r["ours_tflops"] / r["flash_tflops"] if r["ours_tflops"] and r.get("flash_tflops") else None
        r["vs_best"] = r["ours_tflops"] / best if r["ours_tflops"] and best else None
        r["bespoke_vs_flash"] = r["bespoke_tflops"] / r["flash_tflops"] if r["bespoke_tflops"] and r.get("flash_tflops") else None
        rows.append(r)
        print("%-46s ours %7s  bespoke %7s  fa2 %7s  cudnn %7s  ours/best %6s  bespoke/fa2 %6s" % (
            r["name"], fmt(r["ours_tflops"]), fmt(r["bespoke_tflops"]), fmt(r.get("flash_tflops")), fmt(r.get("cudnn_tflops")),
            fmt(r["vs_best"], "%.2fx"), fmt(r["bespoke_vs_flash"], "%.2fx")), flush=True)
    meta = dict(torch=torch.__version__, cuda=torch.version.cuda, cudnn=torch.backends.cudnn.version(),
                device=torch.cuda.get_device_name(0), ours_device=ours.get("device"), date=ours.get("date"))
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(meta=meta, ours_meta={k: v for k, v in ours.items() if k != "cases"}, rows=rows), f, indent=1)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write("| case | default route | TFLOP/s | bespoke TFLOP/s | torch FA2 | torch cuDNN | default/best torch | bespoke/FA2 |\n"
                    "|---|---|---|---|---|---|---|---|\n")
            for r in rows:
                route = ("cudnn " if "[cudnn" in r["sku"] else "bespoke ") + r["variant"]
                f.write("| %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                    r["name"], route, fmt(r["ours_tflops"]), fmt(r["bespoke_tflops"]), fmt(r.get("flash_tflops")),
                    fmt(r.get("cudnn_tflops")), fmt(r["vs_best"], "%.2fx"), fmt(r["bespoke_vs_flash"], "%.2fx")))
            f.write("\n%s\n" % json.dumps(meta))


def fmt(x, f="%.1f"):
    return f % x if x else "n/a"


if __name__ == "__main__":
    sys.exit(main())
