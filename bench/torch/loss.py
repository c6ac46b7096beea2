"""Family "loss": PyTorch eager cross-entropy on the cases of baracuda_bench --family loss.

    python3 bench/torch_bench.py --family loss [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same names, byte counting and method as bench/cases/loss.cpp, so
bench/compare.py can join the two JSON files by case name:
  * fwd: F.cross_entropy(x, t) (mean, i64 targets) under no_grad;
  * fwdbwd: F.cross_entropy(x, t).backward() on x.requires_grad (the whole
    forward + backward, what a training step runs);
  * bwd has no PyTorch twin (autograd's backward needs its own forward);
  * bytes: logits read (+ dlogits written for fwdbwd), as ours;
  * every cross-entropy case again through torch.compile: compiled_us;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
    warm-up, then `iters` runs each between its own pair of CUDA events, median.
Fused linear + cross-entropy (the names of cases/loss.cpp's fused and unfused
cases, so compare.py shows ours / torch for both): eager
F.cross_entropy(F.linear(h, w), t).backward() with h and w requiring grad
(their .grad kept allocated and accumulated between iterations), and
torch.compile of the same function where it runs ("compiled_us"). Reported:
time, TFLOP/s (6 N D V flops), and the peak extra memory: max_memory_allocated()
during one step minus what was allocated before it.
"""
from . import common

TOOL = "torch_loss"
NOTES = "eager torch.nn.functional.cross_entropy (mean, i64 targets); fwdbwd = forward + autograd backward"
ITERS, WARMUP = 30, 5

SHAPES = [(8192, 50304), (8192, 128256)]
DTYPES = ["bf16"]
DTYPE_SIZE = {"f32": 4, "bf16": 2}


def case_name(direction, dtype, shape):
    return "cross_entropy.%s.%s.%s" % (direction, dtype, "x".join(map(str, shape)))


LCE_SHAPE = (8192, 4096, 128256)  # N, D, V


def all_cases():
    # Same order as cases/loss.cpp, without bwd (and without the fused chunk sweep).
    out = []
    for direction in ("fwd", "fwdbwd"):
        for shape in SHAPES:
            for dtype in DTYPES:
                out.append(dict(name=case_name(direction, dtype, shape), op="cross_entropy", dir=direction, dtype=dtype,
                                shape=list(shape), axes=[1]))
    for mode in ("fused", "unfused"):
        out.append(dict(name="linear_cross_entropy.%s.bf16.%s" % (mode, "x".join(map(str, LCE_SHAPE))),
                        op="linear_cross_entropy", dir="fwdbwd", dtype="bf16", shape=list(LCE_SHAPE), axes=[1]))
    return out


def prepare_case(torch, c, rotate_bytes, compiled=False):
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[c["dtype"]]
    rows, classes = c["shape"]
    grad = c["dir"] == "fwdbwd"
    counted = rows * classes * DTYPE_SIZE[c["dtype"]] * (2 if grad else 1)
    nsets = max(1, min(16, -(-rotate_bytes // counted)))
    F = torch.nn.functional
    xs = [torch.empty(c["shape"], dtype=dt, device="cuda").uniform_(-8, 8) for _ in range(nsets)]
    ts = [torch.randint(0, classes, (rows,), dtype=torch.int64, device="cuda") for _ in range(nsets)]
    ce = torch.compile(lambda x, t: F.cross_entropy(x, t), dynamic=False) if compiled else F.cross_entropy
    if grad:
        for x in xs:
            x.requires_grad_(True)

        def launch(i):
            j = i % nsets
            xs[j].grad = None
            ce(xs[j], ts[j]).backward()
    else:
        def launch(i):
            j = i % nsets
            with torch.no_grad():
                ce(xs[j], ts[j])

    return counted, nsets, launch


def lce_time(torch, fn, h, w, t, args):
    """(time_us, peak extra bytes) of loss = fn(h, w, t); loss.backward()."""
    def launch(i):
        fn(h, w, t).backward()

    launch(0)  # creates h.grad and w.grad (kept), compiles where compiled
    torch.cuda.synchronize()
    base = torch.cuda.memory_allocated()
    torch.cuda.reset_peak_memory_stats()
    launch(0)
    torch.cuda.synchronize()
    extra = torch.cuda.max_memory_allocated() - base
    return common.time_median_ms(torch, launch, args.warmup, args.iters) * 1e3, extra


def run_lce(torch, c, args):
    n, d, v = c["shape"]
    F = torch.nn.functional
    h = torch.empty(n, d, dtype=torch.bfloat16, device="cuda").uniform_(-1, 1).requires_grad_(True)
    w = torch.empty(v, d, dtype=torch.bfloat16, device="cuda").uniform_(-0.02, 0.02).requires_grad_(True)
    t = torch.randint(0, v, (n,), dtype=torch.int64, device="cuda")

    def eager(h, w, t):
        return F.cross_entropy(F.linear(h, w), t)

    flops = 6.0 * n * d * v
    us, extra = lce_time(torch, eager, h, w, t, args)
    r = dict(time_us=us, tflops=flops / (us * 1e-6) / 1e12, extra_bytes=extra, extra_frac_of_logits=extra / (n * v * 2))
    try:
        cus, cextra = lce_time(torch, torch.compile(eager), h, w, t, args)
        r.update(compiled_us=cus, compiled_tflops=flops / (cus * 1e-6) / 1e12, compiled_extra_bytes=cextra)
    except Exception as e:  # no compiler toolchain, ...: eager only
        r["compiled_error"] = "%s: %s" % (type(e).__name__, e)
    return r


start = common.bandwidth_start


def row(r):
    if r.get("op") != "linear_cross_entropy":
        return common.bandwidth_row(r)
    if not r["ok"]:
        return "%-42s  ERROR %s" % (r["name"], r["error"])
    line = "%-42s %10.1f %6.0f TF/s extra %8.1f MB (%.3f)" % (r["name"], r["time_us"], r["tflops"], r["extra_bytes"] / 1e6,
                                                              r["extra_frac_of_logits"])
    if "compiled_us" in r:
        line += "  compiled %.1f us, extra %.1f MB" % (r["compiled_us"], r["compiled_extra_bytes"] / 1e6)
    return line


def run_case(torch, c, meta, args):
    if c["op"] == "linear_cross_entropy":
        return run_lce(torch, c, args)
    r = common.bandwidth_case(torch, prepare_case, c, meta, args)
    r.update(common.compiled_bandwidth_case(torch, prepare_case, c, meta, args))
    return r
