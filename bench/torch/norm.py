"""Family "norm": PyTorch eager LayerNorm / RMSNorm / add + RMSNorm on the cases of baracuda_bench --family norm.

    python3 bench/torch_bench.py --family norm [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same names, byte counting and method as bench/cases/norm.cpp, so
bench/compare.py can join the two JSON files by case name:
  * forward under no_grad: F.layer_norm(x, (C,), w, b, 1e-5); F.rms_norm(x, (C,), w, 1e-5);
    add_rms_norm: h = x + r; F.rms_norm(h, (C,), w, 1e-5);
  * backward: torch.autograd.grad on a graph built once per buffer set
    (retain_graph): layer / rms norm: (y) -> (x, w[, b]) with dy; add_rms_norm:
    (y, h) -> (x, w) with (dy, dh_in) (dx is the gradient of h: x's and r's);
  * bytes counted as baracuda's (what the op must move), whatever PyTorch moves;
  * every case again through torch.compile (the forward function compiled;
    the backward is its compiled backward graph): compiled_us / compiled_gbps;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
    warm-up, then `iters` runs each between its own pair of CUDA events, median.
"""
from . import common

TOOL = "torch_norm"
NOTES = ("eager F.layer_norm / F.rms_norm (add: x + r first); backward = autograd.grad on a prebuilt graph; "
         "compiled_us: the same through torch.compile")
ITERS, WARMUP = 30, 5

OPS = ["layer_norm", "rms_norm", "add_rms_norm"]
SHAPES = [(8192, 16384), (32768, 4096)]
DTYPES = ["f32", "bf16"]
DTYPE_SIZE = {"f32": 4, "bf16": 2}
EPS = 1e-5


def case_name(op, direction, dtype, shape):
    return "%s.%s.%s.%s" % (op, direction, dtype, "x".join(map(str, shape)))


def all_cases():
    out = []
    for op in OPS:
        for direction in ("fwd", "bwd"):
            for dtype in DTYPES:
                for shape in SHAPES:
                    out.append(dict(name=case_name(op, direction, dtype, shape), op=op, dir=direction, dtype=dtype,
                                    shape=list(shape), axes=[1]))
    return out


def counted_bytes(c):
    rows, cols = c["shape"]
    es = DTYPE_SIZE[c["dtype"]]
    ln, res, bwd = c["op"] == "layer_norm", c["op"] == "add_rms_norm", c["dir"] == "bwd"
    row_tensors = (4 if res else 3) if bwd else (4 if res else 2)
    params = 2 if ln else 1
    nstats = 2 if ln else 1
    return row_tensors * rows * cols * es + params * cols * es * (2 if bwd else 1) + nstats * rows * 4


def prepare_case(torch, c, rotate_bytes, compiled=False):
    F = torch.nn.functional
    dt = {"f32": torch.float32, "bf16": torch.bfloat16}[c["dtype"]]
    rows, cols = c["shape"]
    counted = counted_bytes(c)
    nsets = max(1, min(16, -(-rotate_bytes // counted)))
    op, bwd = c["op"], c["dir"] == "bwd"

    def rand(shape, lo, hi, grad=False):
        t = torch.empty(shape, dtype=dt, device="cuda").uniform_(lo, hi)
        return t.requires_grad_() if grad else t

    w = rand((cols,), 0.5, 1.5, bwd)
    b = rand((cols,), -0.5, 0.5, bwd) if op == "layer_norm" else None

    def eager_forward(x, r):
        if op == "layer_norm":
            return F.layer_norm(x, (cols,), w, b, EPS), None
        if op == "rms_norm":
            return F.rms_norm(x, (cols,), w, EPS), None
        h = x + r
        return F.rms_norm(h, (cols,), w, EPS), h

    # compiled: the forward through torch.compile; the backward is then the
    # compiled (AOTAutograd + Inductor) backward graph autograd.grad runs.
    forward = torch.compile(eager_forward, dynamic=False) if compiled else eager_forward

    sets = []
    for _ in range(nsets):
        x = rand((rows, cols), -2, 2, bwd)
        r = rand((rows, cols), -2, 2) if op == "add_rms_norm" else None
        if not bwd:
            sets.append((x, r))
            continue
        y, h = forward(x, r)
        dy = rand((rows, cols), -1, 1)
        params = [w] + ([b] if b is not None else [])
        if h is not None:
            sets.append(((y, h), [x] + params, (dy, rand((rows, cols), -1, 1))))
        else:
            sets.append(((y,), [x] + params, (dy,)))

    if not bwd:
        def launch(i):
            with torch.no_grad():
                forward(*sets[i % nsets])
    else:
        def launch(i):
            outs, ins, grads = sets[i % nsets]
            torch.autograd.grad(outs, ins, grads, retain_graph=True)

    return counted, nsets, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    r = common.bandwidth_case(torch, prepare_case, c, meta, args)
    r.update(common.compiled_bandwidth_case(torch, prepare_case, c, meta, args))
    return r
