"""Family "reduce": the PyTorch equivalents of baracuda_bench's reduction cases.

    python3 bench/torch_bench.py --family reduce [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same cases, names, byte counting and method as bench/cases/reduce.cpp, so
bench/compare.py can join the two by case name:
  * each case: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; the timed runs are queued behind torch.cuda._sleep so
    Python/launch overhead never sits inside an event pair;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
  * forward under torch.no_grad(); backward = torch.autograd.grad(y, x, dy,
    retain_graph=True) on a graph built once per set, so only the backward is
    timed. Its result is made .contiguous(): sum's backward is otherwise a
    stride-0 expand (a free view, never materialised), while baracuda writes dx;
  * bytes counted: forward x + y; backward dy + dx (+ x, y where baracuda's
    ReduceBackwardPlan reads them), whatever PyTorch itself reads.
"""
import math

from . import common

TOOL = "torch_reduce"
NOTES = "backward = autograd.grad(y, x, dy)[0].contiguous(); bytes counted as baracuda's"
ITERS, WARMUP = 30, 5

KINDS = ["sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std", "argmax"]
NO_BACKWARD = {"argmax"}
SHAPES = [((8192, 16384), (1,)), ((8192, 16384), (0,)), ((64, 4096, 128), (1,)), ((16, 1024, 1024), (1, 2))]
DTYPES = ["f32", "bf16"]
# (needs x, needs y) of baracuda's backward, for the byte count (reduce.hpp).
NEEDS = {"sum": (False, False), "mean": (False, False), "max": (True, True), "min": (True, True),
         "prod": (True, False), "norm2": (True, True), "logsumexp": (True, True), "var": (True, False),
         "std": (True, True)}
DTYPE_SIZE = {"f32": 4, "bf16": 2}


def case_name(kind, direction, dtype, shape, axes):
    return "%s.%s.%s.%s.ax%s" % (kind, direction, dtype, "x".join(map(str, shape)), ",".join(map(str, axes)))


def all_cases():
    # Same order as cases/reduce.cpp.
    out = []
    for kind in KINDS:
        for direction in ("fwd", "bwd"):
            if direction == "bwd" and kind in NO_BACKWARD:
                continue
            for dtype in DTYPES:
                for shape, axes in SHAPES:
                    out.append(dict(name=case_name(kind, direction, dtype, shape, axes), op=kind, dir=direction,
                                    dtype=dtype, shape=list(shape), axes=list(axes)))
    return out


def reduce_fn(torch, kind, axes):
    """x -> the reduction, as a model would call it."""
    dim = tuple(axes)

    def single_dim(f):
        # prod/argmax take one dim: flatten the (adjacent) reduced axes first, a
        # free view on a contiguous input; argmax's index then matches ours
        # (row-major over the reduced axes).
        if len(axes) == 1:
            return lambda x: f(x, dim=axes[0])
        assert list(axes) == list(range(axes[0], axes[-1] + 1)), "reduced axes must be adjacent"
        return lambda x: f(x.flatten(axes[0], axes[-1]), dim=axes[0])

    table = {
        "sum": lambda x: torch.sum(x, dim=dim),
        "mean": lambda x: torch.mean(x, dim=dim),
        "max": lambda x: torch.amax(x, dim=dim),
        "min": lambda x: torch.amin(x, dim=dim),
        "norm2": lambda x: torch.linalg.vector_norm(x, ord=2, dim=dim),
        "logsumexp": lambda x: torch.logsumexp(x, dim=dim),
        "var": lambda x: torch.var(x, dim=dim, correction=1),
        "std": lambda x: torch.std(x, dim=dim, correction=1),
    }
    if kind == "prod":
        return single_dim(torch.prod)
    if kind == "argmax":
        return single_dim(torch.argmax)
    return table[kind]


def prepare_case(torch, c, rotate_bytes):
    """The case's buffers: (bytes counted, sets, launch(i) timing run i)."""
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[c["dtype"]]
    fn = reduce_fn(torch, c["op"], c["axes"])
    lo, hi = (0.9, 1.1) if c["op"] == "prod" else (-1.0, 1.0)  # keep products away from 0
    es = DTYPE_SIZE[c["dtype"]]
    xn = math.prod(c["shape"])
    yn = math.prod(s for i, s in enumerate(c["shape"]) if i not in c["axes"])

    def rand_x():
        return torch.empty(c["shape"], dtype=dt, device="cuda").uniform_(lo, hi)

    if c["dir"] == "fwd":
        ybytes = yn * (8 if c["op"] == "argmax" else es)
        counted = xn * es + ybytes
        nsets = max(1, min(64, -(-rotate_bytes // counted)))
        xs = [rand_x() for _ in range(nsets)]

        def launch(i):
            with torch.no_grad():
                fn(xs[i % nsets])
    else:
        need_x, need_y = NEEDS[c["op"]]
        counted = yn * es + xn * es + (xn * es if need_x else 0) + (yn * es if need_y else 0)
        nsets = max(1, min(64, -(-rotate_bytes // counted)))
        xs = [rand_x().requires_grad_() for _ in range(nsets)]
        ys = [fn(x) for x in xs]
        dys = [torch.empty_like(y).uniform_(-1.0, 1.0) for y in ys]

        def launch(i):
            k = i % nsets
            torch.autograd.grad(ys[k], xs[k], dys[k], retain_graph=True)[0].contiguous()

    return counted, nsets, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    return common.bandwidth_case(torch, prepare_case, c, meta, args)
