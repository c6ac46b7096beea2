"""Family "elementwise" (alias "ew"): PyTorch eager on the cases of baracuda_bench --family elementwise.

    python3 bench/torch_bench.py --family elementwise [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same names, byte counting and method as bench/cases/elementwise.cpp, so
bench/compare.py can join the two JSON files by case name. Every case is
written the usual eager way, output allocated by PyTorch (its caching allocator:
no cudaMalloc inside the timing), forward under torch.no_grad():
    copy             x.clone()                   copy_transposed  x.t().contiguous()
    add, add_row, add_col   a + b  (b [8192, 16384], [16384], [8192, 1])
    mul_scalar       a * 1.5                     gelu, silu       F.gelu(x), F.silu(x)
    swiglu           F.silu(a) * b               where            torch.where(cond, a, b)
    clamp            torch.clamp(x, -0.5, 0.5)   cast_<to>        x.to(<to>)
Backward (<op>.bwd.<dtype>.8192x16384, f32 and bf16): only the backward is
timed, as the aten ops autograd runs, called directly (no graph overhead):
    gelu.bwd         dx = aten.gelu_backward(dy, x)   (approximate="none")
    silu.bwd         dx = aten.silu_backward(dy, x)
    swiglu.bwd       autograd of F.silu(a) * b: the forward saves s = F.silu(a)
                     (built once per buffer set, outside the timing, as autograd's
                     saved tensor), then mul's backward and silu's backward:
                       g  = dy * b        (mul backward, the gradient of s)
                       db = dy * s        (mul backward, the gradient of b)
                       da = aten.silu_backward(g, a)
The ops in COMPILED are timed a second time through torch.compile (compiled
once before the timing; fields compiled_us / compiled_gbps, or compiled_error):
swiglu, the fusion PyTorch eager cannot do; its backward compiles one function
of (dy, a, b) returning both gradients (s recomputed inside, not read).
  * each case: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; the timed runs are queued behind torch.cuda._sleep;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
  * bytes counted as baracuda's: every tensor input read once (a broadcast
    operand: its own size) + the output written; backward: dy and the
    forward's tensor operands read + every gradient written (gelu.bwd: dy, x,
    dx; swiglu.bwd: dy, a, b, da, db), not swiglu's saved s nor g.
"""
import math

from . import common

TOOL = "torch_elementwise"
NOTES = ("eager; backward = the aten ops autograd runs (saved tensors built outside the timing); "
         "COMPILED ops also through torch.compile (compiled_us); bytes counted as baracuda's")
ITERS, WARMUP = 30, 5

ROWS, COLS = 8192, 16384
FULL = (ROWS, COLS)
DTYPE_SIZE = {"f32": 4, "bf16": 2, "f16": 2, "i32": 4, "bool": 1}
COMPILED = {"swiglu"}


def tensor(dtype, shape, lo=-1.0, hi=1.0):
    return dict(kind="tensor", dtype=dtype, shape=tuple(shape), lo=lo, hi=hi, transposed=False)


def transposed(dtype, shape):
    return dict(tensor(dtype, shape), transposed=True)


def scalar(value):
    return dict(kind="scalar", value=value)


def specs():
    """(op, direction, dtype, operands, output dtype), in the order of cases/elementwise.cpp.
    A backward's operands are the forward's; dy has the output's dtype and shape."""
    out = []
    for dt in ("f32", "bf16"):
        out += [
            ("copy", "fwd", dt, [tensor(dt, FULL)], dt),
            ("copy_transposed", "fwd", dt, [transposed(dt, FULL)], dt),
            ("add", "fwd", dt, [tensor(dt, FULL), tensor(dt, FULL)], dt),
            ("add_row", "fwd", dt, [tensor(dt, FULL), tensor(dt, (COLS,))], dt),
            ("add_col", "fwd", dt, [tensor(dt, FULL), tensor(dt, (ROWS, 1))], dt),
            ("mul_scalar", "fwd", dt, [tensor(dt, FULL), scalar(1.5)], dt),
            ("gelu", "fwd", dt, [tensor(dt, FULL)], dt),
            ("silu", "fwd", dt, [tensor(dt, FULL)], dt),
            ("swiglu", "fwd", dt, [tensor(dt, FULL), tensor(dt, FULL)], dt),
            ("where", "fwd", dt, [tensor("bool", FULL), tensor(dt, FULL), tensor(dt, FULL)], dt),
            ("clamp", "fwd", dt, [tensor(dt, FULL), scalar(-0.5), scalar(0.5)], dt),
        ]
    out += [
        ("cast_bf16", "fwd", "f32", [tensor("f32", FULL)], "bf16"),
        ("cast_f16", "fwd", "bf16", [tensor("bf16", FULL)], "f16"),
        # Values in (-1000, 1000) so the truncated integers are not all 0.
        ("cast_i32", "fwd", "f32", [tensor("f32", FULL, -1000.0, 1000.0)], "i32"),
    ]
    # Backward: dy and every operand [8192, 16384].
    for dt in ("f32", "bf16"):
        out += [
            ("gelu", "bwd", dt, [tensor(dt, FULL)], dt),
            ("silu", "bwd", dt, [tensor(dt, FULL)], dt),
            ("swiglu", "bwd", dt, [tensor(dt, FULL), tensor(dt, FULL)], dt),
        ]
    return out


def case_name(op, direction, dtype):
    return "%s.%s.%s.%s" % (op, direction, dtype, "x".join(map(str, FULL)))


SPECS = {case_name(op, d, dt): (op, d, dt, ins, out) for op, d, dt, ins, out in specs()}


def all_cases():
    return [dict(name=case_name(op, d, dt), op=op, dir=d, dtype=dt, shape=list(FULL), axes=[])
            for op, d, dt, _, _ in specs()]


def counted_bytes(direction, ins, out_dtype):
    """Forward: the tensor operands + the output. Backward: dy (the output's size) +
    the tensor operands read + one gradient per tensor operand written."""
    t = sum(math.prod(o["shape"]) * DTYPE_SIZE[o["dtype"]] for o in ins if o["kind"] == "tensor")
    return (2 if direction == "bwd" else 1) * t + math.prod(FULL) * DTYPE_SIZE[out_dtype]


def torch_dtype(torch, name):
    return {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16, "i32": torch.int32,
            "bool": torch.bool}[name]


def make_fn(torch, op, out_dtype):
    """The eager PyTorch code of an op, on its operands (scalars passed as numbers)."""
    F = torch.nn.functional
    if op.startswith("cast_"):
        to = torch_dtype(torch, out_dtype)
        return lambda x: x.to(to)
    return {
        "copy": lambda x: x.clone(),
        "copy_transposed": lambda x: x.contiguous(),  # x is already the transposed view
        "add": lambda a, b: a + b,
        "add_row": lambda a, b: a + b,
        "add_col": lambda a, b: a + b,
        "mul_scalar": lambda a, s: a * s,
        "gelu": lambda x: F.gelu(x),
        "silu": lambda x: F.silu(x),
        "swiglu": lambda a, b: F.silu(a) * b,
        "where": lambda c, a, b: torch.where(c, a, b),
        "clamp": lambda x, lo, hi: torch.clamp(x, lo, hi),
    }[op]


def make_bwd_fn(torch, op, compiled):
    """The backward of an op as the aten ops autograd runs: fn(dy, *operands[, saved])."""
    aten = torch.ops.aten
    if op == "gelu":
        return lambda dy, x: aten.gelu_backward(dy, x)
    if op == "silu":
        return lambda dy, x: aten.silu_backward(dy, x)
    if op == "swiglu" and compiled:
        # One function of (dy, a, b): s recomputed, so the compiler can fuse it all.
        F = torch.nn.functional
        return lambda dy, a, b: (aten.silu_backward(dy * b, a), dy * F.silu(a))

    def swiglu_bwd(dy, a, b, s):  # s = F.silu(a), the tensor autograd saves in the forward
        g = dy * b                 # MulBackward0: the gradient of s
        db = dy * s                # MulBackward0: the gradient of b
        return aten.silu_backward(g, a), db  # SiluBackward0: da

    return {"swiglu": swiglu_bwd}[op]


def make_operand(torch, o):
    if o["kind"] == "scalar":
        return o["value"]
    if o["dtype"] == "bool":
        return torch.rand(o["shape"], device="cuda") < 0.5
    dt = torch_dtype(torch, o["dtype"])
    if o["transposed"]:  # the [cols, rows] tensor's storage read as [rows, cols]
        rows, cols = o["shape"]
        return torch.empty((cols, rows), dtype=dt, device="cuda").uniform_(o["lo"], o["hi"]).t()
    return torch.empty(o["shape"], dtype=dt, device="cuda").uniform_(o["lo"], o["hi"])


def prepare_case(torch, c, rotate_bytes, compiled=False):
    """The case's buffers: (bytes counted, sets, launch(i) timing run i)."""
    op, direction, _, ins, out_dtype = SPECS[c["name"]]
    bwd = direction == "bwd"
    fn = make_bwd_fn(torch, op, compiled) if bwd else make_fn(torch, op, out_dtype)
    if compiled:
        fn = torch.compile(fn, dynamic=False)
    counted = counted_bytes(direction, ins, out_dtype)
    nsets = max(1, min(16, -(-rotate_bytes // counted)))

    def make_set():
        operands = [make_operand(torch, o) for o in ins]
        if not bwd:
            return operands
        dy = make_operand(torch, tensor(out_dtype, FULL))
        saved = []
        if op == "swiglu" and not compiled:
            with torch.no_grad():
                saved = [torch.nn.functional.silu(operands[0])]  # autograd's saved s, outside the timing
        return [dy] + operands + saved

    sets = [make_set() for _ in range(nsets)]

    def launch(i):
        with torch.no_grad():
            fn(*sets[i % nsets])

    return counted, nsets, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    r = common.bandwidth_case(torch, prepare_case, c, meta, args)
    if c["op"] in COMPILED:
        r.update(common.compiled_bandwidth_case(torch, prepare_case, c, meta, args))
    return r
