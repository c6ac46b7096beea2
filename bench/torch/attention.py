"""Family "attention": PyTorch's scaled_dot_product_attention on the cases of
baracuda_bench --family attention (same names, same table as cases/attention.cpp).

    python3 bench/torch_bench.py --family attention [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Each case runs with each SDPA backend PyTorch has on Hopper (FlashAttention-2
and cuDNN), one at a time; compare.py puts them beside ours:
  * forward: torch.no_grad() SDPA call; backward: torch.autograd.grad of the
    output w.r.t. (q, k, v) with a fixed dy on a graph built once (forward not
    timed), the same work FlashSdpaBackwardPlan.run does;
  * median of `iters` runs, each between its own CUDA events (synchronised one
    by one), after `warmup` runs; data torch.randn;
  * TFLOP/s with baracuda's flop count (forward 4*B*H*D per visible (query, key)
    pair, backward 2.5x; causal counts the pairs its alignment leaves);
  * GQA runs with enable_gqa=True (no copies of K/V);
  * cases PyTorch's SDPA cannot express (softcap, ALiBi, sliding window) are
    listed as n/a. The decode case (Q = 1, bottom-right causal) is non-causal
    for a single query row, which is what PyTorch runs.
"""
import statistics

TOOL = "torch_attention"
NOTES = "F.scaled_dot_product_attention, one sdpa_kernel backend at a time; backward = autograd.grad(y, (q, k, v), dy)"
ITERS, WARMUP = 20, 5
BACKENDS = ("flash", "cudnn")  # torch.nn.attention.SDPBackend.FLASH_ATTENTION / CUDNN_ATTENTION
DTYPES = ("bf16", "f16")

# name, dir, dtype, B, H, Hk, Q, K, D, causal, extras: the rows of cases/attention.cpp's kCases.
_CASES = [
    ("fwd_bf16_b4_h16_s4096_d128", "fwd", "bf16", 4, 16, 16, 4096, 4096, 128, False, {}),
    ("fwd_bf16_b4_h16_s4096_d128_causal", "fwd", "bf16", 4, 16, 16, 4096, 4096, 128, True, {}),
    ("fwd_bf16_b8_h16_s2048_d64", "fwd", "bf16", 8, 16, 16, 2048, 2048, 64, False, {}),
    ("fwd_bf16_b8_h16_s2048_d64_causal", "fwd", "bf16", 8, 16, 16, 2048, 2048, 64, True, {}),
    ("fwd_bf16_b2_h16_s8192_d128", "fwd", "bf16", 2, 16, 16, 8192, 8192, 128, False, {}),
    ("fwd_bf16_b2_h16_s8192_d128_causal", "fwd", "bf16", 2, 16, 16, 8192, 8192, 128, True, {}),
    ("fwd_bf16_b4_h32_hk8_s4096_d128", "fwd", "bf16", 4, 32, 8, 4096, 4096, 128, False, {}),
    ("fwd_bf16_b4_h32_hk8_s4096_d128_causal", "fwd", "bf16", 4, 32, 8, 4096, 4096, 128, True, {}),
    ("fwd_f16_b4_h16_s4096_d128", "fwd", "f16", 4, 16, 16, 4096, 4096, 128, False, {}),
    ("fwd_bf16_b4_h16_s4096_d128_bshd", "fwd", "bf16", 4, 16, 16, 4096, 4096, 128, False, dict(layout="bshd")),
    ("fwd_bf16_b4_h16_s2048_d256", "fwd", "bf16", 4, 16, 16, 2048, 2048, 256, False, {}),
    ("fwd_bf16_b4_h16_s2048_d256_causal", "fwd", "bf16", 4, 16, 16, 2048, 2048, 256, True, {}),
    ("fwd_bf16_b4_h16_s4096_d96", "fwd", "bf16", 4, 16, 16, 4096, 4096, 96, False, {}),
    ("fwd_bf16_b4_h16_s4096_d128_softcap_alibi", "fwd", "bf16", 4, 16, 16, 4096, 4096, 128, False,
     dict(softcap=30.0, alibi="per_head")),
    ("fwd_bf16_b4_h16_s8192_d128_window1024", "fwd", "bf16", 4, 16, 16, 8192, 8192, 128, True, dict(window_left=1024)),
    ("fwd_bf16_decode_b16_h32_hk8_q1_k8192_d128", "fwd", "bf16", 16, 32, 8, 1, 8192, 128, True,
     dict(align="bottom_right")),
    ("fwd_bf16_decode_b8_h32_hk8_q4_k4096_d128", "fwd", "bf16", 8, 32, 8, 4, 4096, 128, True,
     dict(align="bottom_right")),
    ("bwd_bf16_b4_h16_s4096_d128", "bwd", "bf16", 4, 16, 16, 4096, 4096, 128, False, {}),
    ("bwd_bf16_b4_h16_s4096_d128_causal", "bwd", "bf16", 4, 16, 16, 4096, 4096, 128, True, {}),
    ("bwd_bf16_b8_h16_s2048_d64", "bwd", "bf16", 8, 16, 16, 2048, 2048, 64, False, {}),
    ("bwd_bf16_b8_h16_s2048_d64_causal", "bwd", "bf16", 8, 16, 16, 2048, 2048, 64, True, {}),
    ("bwd_bf16_b2_h16_s8192_d128", "bwd", "bf16", 2, 16, 16, 8192, 8192, 128, False, {}),
    ("bwd_bf16_b2_h16_s8192_d128_causal", "bwd", "bf16", 2, 16, 16, 8192, 8192, 128, True, {}),
    ("bwd_bf16_b4_h32_hk8_s4096_d128", "bwd", "bf16", 4, 32, 8, 4096, 4096, 128, False, {}),
    ("bwd_bf16_b4_h32_hk8_s4096_d128_causal", "bwd", "bf16", 4, 32, 8, 4096, 4096, 128, True, {}),
    ("bwd_f16_b4_h16_s4096_d128", "bwd", "f16", 4, 16, 16, 4096, 4096, 128, False, {}),
    ("bwd_bf16_b4_h16_s2048_d256", "bwd", "bf16", 4, 16, 16, 2048, 2048, 256, False, {}),
]


def all_cases():
    """The fields of baracuda's JSON rows (name ... layout), then the options
    that only the flop count and the n/a rule read."""
    out = []
    for name, d, dtype, B, H, Hk, Q, K, D, causal, extra in _CASES:
        c = dict(name=name, op="flash_sdpa", dir=d, dtype=dtype, B=B, H=H, Hk=Hk, Q=Q, K=K, D=D, causal=causal,
                 layout=extra.get("layout", "bhsd"), align=extra.get("align", "top_left"),
                 window_left=extra.get("window_left", -1), softcap=extra.get("softcap", 0.0),
                 alibi=extra.get("alibi", "none"))
        out.append(c)
    return out


def flops(c):
    """baracuda's count (cases/attention.cpp flops_of)."""
    B, H, Q, K, D = c["B"], c["H"], c["Q"], c["K"], c["D"]
    f = 4.0 * B * H * Q * K * D
    if c["causal"]:  # the (query, key) pairs a causal mask leaves, with its alignment
        off = K - Q if c["align"] == "bottom_right" else 0
        pairs = sum(min(max(i + off + 1, 0), K) for i in range(Q))
        f = 4.0 * B * H * pairs * D
    if 0 <= c["window_left"] < K:
        f = 4.0 * B * H * Q * (c["window_left"] + 1) * D
    if c["dir"] == "bwd":
        f *= 2.5
    return f


def expressible(c):
    """What SDPA cannot run: softcap, ALiBi, a sliding window, other dtypes."""
    return not c["softcap"] and c["alibi"] == "none" and c["window_left"] < 0 and c["dtype"] in DTYPES


def time_ms(torch, fn, iters, warmup):
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


def time_backend(torch, c, backend, args):
    """Median ms of the case on one SDPA backend, or (None, why) when skipped."""
    from torch.nn.attention import SDPBackend, sdpa_kernel
    F = torch.nn.functional
    sdpa_backend = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": SDPBackend.CUDNN_ATTENTION}[backend]
    dt = {"bf16": torch.bfloat16, "f16": torch.float16}[c["dtype"]]
    B, H, Hk, Q, K, D = c["B"], c["H"], c["Hk"], c["Q"], c["K"], c["D"]
    causal = c["causal"] and not (Q == 1 and c["align"] == "bottom_right")
    if causal and Q != K:
        return None, "torch is_causal is top-left only; case skipped for Q != K"
    bshd = c["layout"] == "bshd"

    def make(h, s, grad):
        if bshd:
            t = torch.randn(B, s, h, D, device="cuda", dtype=dt).transpose(1, 2)
        else:
            t = torch.randn(B, h, s, D, device="cuda", dtype=dt)
        return t.requires_grad_(grad)

    bwd = c["dir"] == "bwd"
    q, k, v = make(H, Q, bwd), make(Hk, K, bwd), make(Hk, K, bwd)
    kw = dict(is_causal=causal, enable_gqa=(H != Hk))
    with sdpa_kernel([sdpa_backend]):
        if not bwd:
            with torch.no_grad():
                ms = time_ms(torch, lambda: F.scaled_dot_product_attention(q, k, v, **kw), args.iters, args.warmup)
        else:
            y = F.scaled_dot_product_attention(q, k, v, **kw)
            dy = torch.randn_like(y)
            ms = time_ms(torch, lambda: torch.autograd.grad(y, (q, k, v), dy, retain_graph=True), args.iters, args.warmup)
    return ms, None


def start(torch, meta):
    print("device: %s, torch %s (CUDA %s, cuDNN %s); %d iters, median\n"
          % (meta["device"], meta["torch"], meta["cuda"], meta["cudnn"], meta["iters"]))
    print("%-46s %10s %9s %10s %9s" % ("case", "fa2_us", "TFLOP/s", "cudnn_us", "TFLOP/s"))


def run_case(torch, c, meta, args):
    """Per backend: <be>_us and <be>_tflops (None when it did not run), <be>_error
    why not; a case SDPA cannot express has only <be>_tflops = None and the error."""
    r = dict(flops=flops(c))
    for be in BACKENDS:
        if not expressible(c):
            r[be + "_tflops"] = None
            r[be + "_error"] = "not expressible in torch SDPA"
            continue
        try:
            ms, err = time_backend(torch, c, be, args)
        except Exception as e:  # a backend that rejects the problem
            ms, err = None, str(e).splitlines()[0][:160]
        torch.cuda.empty_cache()
        r[be + "_us"] = ms * 1e3 if ms else None
        r[be + "_tflops"] = r["flops"] / (ms * 1e-3) / 1e12 if ms else None
        if err:
            r[be + "_error"] = err
    return r


def row(r):
    if not r["ok"]:
        return "%-46s  ERROR %s" % (r["name"], r["error"])
    cells = []
    for be in BACKENDS:
        us, tf = r.get(be + "_us"), r[be + "_tflops"]
        cells += ["%.1f" % us if us else "n/a", "%.1f" % tf if tf else "n/a"]
    return "%-46s %10s %9s %10s %9s" % tuple([r["name"]] + cells)
