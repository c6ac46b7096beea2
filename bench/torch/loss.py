"""Family "loss": PyTorch eager cross-entropy on the cases of baracuda_bench --family loss.

    python3 bench/torch_bench.py --family loss [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same names, byte counting and method as bench/cases/loss.cpp, so
bench/compare.py can join the two JSON files by case name:
  * fwd: F.cross_entropy(x, t) (mean, i64 targets) under no_grad;
  * fwdbwd: F.cross_entropy(x, t).backward() on x.requires_grad (the whole
    forward + backward, what a training step runs);
  * bwd has no PyTorch twin (autograd's backward needs its own forward);
  * bytes: logits read (+ dlogits written for fwdbwd), as ours;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
    warm-up, then `iters` runs each between its own pair of CUDA events, median.
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


def all_cases():
    # Same order as cases/loss.cpp, without bwd.
    out = []
    for direction in ("fwd", "fwdbwd"):
        for shape in SHAPES:
            for dtype in DTYPES:
                out.append(dict(name=case_name(direction, dtype, shape), op="cross_entropy", dir=direction, dtype=dtype,
                                shape=list(shape), axes=[1]))
    return out


def prepare_case(torch, c, rotate_bytes):
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[c["dtype"]]
    rows, classes = c["shape"]
    grad = c["dir"] == "fwdbwd"
    counted = rows * classes * DTYPE_SIZE[c["dtype"]] * (2 if grad else 1)
    nsets = max(1, min(16, -(-rotate_bytes // counted)))
    F = torch.nn.functional
    xs = [torch.empty(c["shape"], dtype=dt, device="cuda").uniform_(-8, 8) for _ in range(nsets)]
    ts = [torch.randint(0, classes, (rows,), dtype=torch.int64, device="cuda") for _ in range(nsets)]
    if grad:
        for x in xs:
            x.requires_grad_(True)

        def launch(i):
            j = i % nsets
            xs[j].grad = None
            F.cross_entropy(xs[j], ts[j]).backward()
    else:
        def launch(i):
            j = i % nsets
            with torch.no_grad():
                F.cross_entropy(xs[j], ts[j])

    return counted, nsets, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    return common.bandwidth_case(torch, prepare_case, c, meta, args)
