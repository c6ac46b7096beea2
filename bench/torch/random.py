"""Family "random": PyTorch's generators and dropout on the cases of baracuda_bench --family random.

    python3 bench/torch_bench.py --family random [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

  random_normal.fwd.{f32,bf16}   out.normal_()           (torch.randn into a preallocated tensor)
  random_uniform.fwd.f32         out.uniform_()
  dropout.fwd / dropout_mask.fwd torch.ops.aten.native_dropout(x, 0.1, True): what
                                 F.dropout runs on CUDA in training mode (it writes
                                 out and a 1-byte bool mask either way)
  dropout.bwd / dropout_mask.bwd torch.ops.aten.native_dropout_backward(dy, mask, 1 / 0.9):
                                 what autograd runs for dropout (dy * mask * scale
                                 from the saved bool mask)
Same names, byte counting and method as bench/cases/random.cpp, so
bench/compare.py can join the two JSON files by case name:
  * each case: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; the timed runs are queued behind torch.cuda._sleep;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
  * bytes counted as baracuda's: out written (fills); x read + out written
    (+ n / 8 bytes for baracuda's 1-bit mask in the *_mask cases), whatever
    PyTorch itself moves (its bool mask is 1 byte per element).
"""
from . import common

TOOL = "torch_random"
NOTES = "normal_/uniform_ fills, aten native_dropout / native_dropout_backward; bytes counted as baracuda's"
ITERS, WARMUP = 30, 5

SHAPE = (8192, 16384)
P = 0.1
DTYPE_SIZE = {"f32": 4, "bf16": 2, "f16": 2}
SPECS = [("random_normal", "fwd", "f32"), ("random_normal", "fwd", "bf16"), ("random_uniform", "fwd", "f32"),
         ("dropout", "fwd", "bf16"), ("dropout_mask", "fwd", "bf16"), ("dropout", "bwd", "bf16"),
         ("dropout_mask", "bwd", "bf16")]


def case_name(op, direction, dtype, shape):
    return "%s.%s.%s.%s" % (op, direction, dtype, "x".join(map(str, shape)))


def all_cases():
    # Same order as cases/random.cpp.
    return [dict(name=case_name(op, d, t, SHAPE), op=op, dir=d, dtype=t, shape=list(SHAPE), axes=[])
            for op, d, t in SPECS]


def counted_bytes(c):
    n = c["shape"][0] * c["shape"][1]
    t = n * DTYPE_SIZE[c["dtype"]]
    if c["op"].startswith("random_"):
        return t
    return 2 * t + ((n + 7) // 8 if c["op"] == "dropout_mask" else 0)


def prepare_case(torch, c, rotate_bytes):
    """The case's buffers: (bytes counted, sets, launch(i) timing run i)."""
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[c["dtype"]]
    counted = counted_bytes(c)
    nsets = max(1, min(16, -(-rotate_bytes // counted)))
    shape = c["shape"]
    if c["op"].startswith("random_"):
        outs = [torch.empty(shape, dtype=dt, device="cuda") for _ in range(nsets)]
        normal = c["op"] == "random_normal"

        def launch(i):
            o = outs[i % nsets]
            if normal:
                o.normal_()
            else:
                o.uniform_()
        return counted, nsets, launch

    xs = [torch.empty(shape, dtype=dt, device="cuda").uniform_(-1.0, 1.0) for _ in range(nsets)]
    if c["dir"] == "fwd":
        def launch(i):
            torch.ops.aten.native_dropout(xs[i % nsets], P, True)
    else:
        masks = [torch.ops.aten.native_dropout(x, P, True)[1] for x in xs]
        scale = 1.0 / (1.0 - P)

        def launch(i):
            j = i % nsets
            torch.ops.aten.native_dropout_backward(xs[j], masks[j], scale)
    return counted, nsets, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    return common.bandwidth_case(torch, prepare_case, c, meta, args)
