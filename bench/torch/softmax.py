"""Family "softmax": PyTorch eager softmax / log_softmax on the cases of baracuda_bench --family softmax.

    python3 bench/torch_bench.py --family softmax [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same names, byte counting and method as bench/cases/softmax.cpp, so
bench/compare.py can join the two JSON files by case name:
  * forward: torch.softmax(x, -1) / torch.log_softmax(x, -1) under no_grad;
  * backward: the aten op autograd runs, called directly (no graph overhead):
    aten._softmax_backward_data(dy, y, -1, dtype) / aten._log_softmax_backward_data;
  * bytes: x read + y written; backward y, dy read + dx written;
  * every case again with the same function through torch.compile: compiled_us;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
    warm-up, then `iters` runs each between its own pair of CUDA events, median.
"""
from . import common

TOOL = "torch_softmax"
NOTES = ("eager torch.softmax / log_softmax; backward = aten._(log_)softmax_backward_data called directly; "
         "compiled_us: the same functions through torch.compile")
ITERS, WARMUP = 30, 5

OPS = ["softmax", "log_softmax"]
SHAPES = [(8192, 16384), (32768, 4096), (64, 262144)]
DTYPES = ["f32", "bf16"]
DTYPE_SIZE = {"f32": 4, "bf16": 2}


def case_name(op, direction, dtype, shape):
    return "%s.%s.%s.%s" % (op, direction, dtype, "x".join(map(str, shape)))


def all_cases():
    # Same order as cases/softmax.cpp.
    out = []
    for op in OPS:
        for direction in ("fwd", "bwd"):
            for dtype in DTYPES:
                for shape in SHAPES:
                    out.append(dict(name=case_name(op, direction, dtype, shape), op=op, dir=direction, dtype=dtype,
                                    shape=list(shape), axes=[len(shape) - 1]))
    return out


def prepare_case(torch, c, rotate_bytes, compiled=False):
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[c["dtype"]]
    n = 1
    for e in c["shape"]:
        n *= e
    tensors = 3 if c["dir"] == "bwd" else 2
    counted = tensors * n * DTYPE_SIZE[c["dtype"]]
    nsets = max(1, min(16, -(-rotate_bytes // counted)))
    log = c["op"] == "log_softmax"

    def rand(lo, hi):
        return torch.empty(c["shape"], dtype=dt, device="cuda").uniform_(lo, hi)

    if c["dir"] == "fwd":
        xs = [rand(-8, 8) for _ in range(nsets)]
        fn = torch.log_softmax if log else torch.softmax
        if compiled:
            fn = torch.compile(lambda x, d, f=fn: f(x, d), dynamic=False)

        def launch(i):
            with torch.no_grad():
                fn(xs[i % nsets], -1)
    else:
        C = c["shape"][-1]
        ys = [rand(-12, -6) if log else rand(0, 2.0 / C) for _ in range(nsets)]
        dys = [rand(-8, 8) for _ in range(nsets)]
        aten = torch.ops.aten
        op = aten._log_softmax_backward_data if log else aten._softmax_backward_data
        if compiled:
            op = torch.compile(lambda dy, y, d, t, f=op: f(dy, y, d, t), dynamic=False)

        def launch(i):
            j = i % nsets
            op(dys[j], ys[j], -1, dt)

    return counted, nsets, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    r = common.bandwidth_case(torch, prepare_case, c, meta, args)
    r.update(common.compiled_bandwidth_case(torch, prepare_case, c, meta, args))
    return r
