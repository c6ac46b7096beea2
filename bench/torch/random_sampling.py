"""Family "random_sampling": torch.randperm and torch.multinomial on the cases of baracuda_bench --family random_sampling.

    python3 bench/torch_bench.py --family random_sampling [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

  randperm.i64.<n>                      torch.randperm(n, dtype=torch.int64, device="cuda"), n = 10^6, 10^7
  multinomial.repl.f32.<R>x<C>.s<S>     torch.multinomial(probs, S, replacement=True):
                                        1024 x 50304 and 64 x 50304 with 1 sample (LLM sampling), 4096 x 1000 with 8
  multinomial.norepl.f32.<R>x<C>.s<S>   torch.multinomial(probs, S, replacement=False):
                                        64 x 50304 with 16, 1 x 2^20 with 1000 / 256 / 257
Same names, byte counting and method as bench/cases/random_sampling.cpp: bytes counted
n * 8 written (randperm), R C 4 read + R S 8 written (multinomial), whatever PyTorch
itself moves; probs uniform in [0.01, 1) (unnormalized, as torch accepts); one buffer set.
"""
from . import common

TOOL = "torch_random_sampling"
NOTES = "torch.randperm / torch.multinomial (with and without replacement); bytes counted as baracuda's"
ITERS, WARMUP = 20, 3

RANDPERM = (1000000, 10000000)
MULTINOMIAL = [(1024, 50304, 1, True), (64, 50304, 1, True), (4096, 1000, 8, True), (64, 50304, 16, False),
               (1, 1 << 20, 1000, False), (1, 1 << 20, 256, False), (1, 1 << 20, 257, False)]


def all_cases():
    # Same order as cases/random_sampling.cpp.
    out = [dict(name="randperm.i64.%d" % n, op="randperm", dir="fwd", dtype="i64", shape=[n], axes=[])
           for n in RANDPERM]
    for r, c, s, repl in MULTINOMIAL:
        kind = "repl" if repl else "norepl"
        out.append(dict(name="multinomial.%s.f32.%dx%d.s%d" % (kind, r, c, s), op="multinomial_" + kind, dir="fwd",
                        dtype="f32", shape=[r, c], axes=[], samples=s, replacement=repl))
    return out


def prepare_case(torch, c, rotate_bytes):
    if c["op"] == "randperm":
        n = c["shape"][0]

        def launch(i):
            torch.randperm(n, dtype=torch.int64, device="cuda")
        return n * 8, 1, launch
    r, cols = c["shape"]
    s, repl = c["samples"], c["replacement"]
    probs = torch.empty((r, cols), dtype=torch.float32, device="cuda").uniform_(0.01, 1.0)

    def launch(i):
        torch.multinomial(probs, s, replacement=repl)
    return r * cols * 4 + r * s * 8, 1, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    return common.bandwidth_case(torch, prepare_case, c, meta, args)
