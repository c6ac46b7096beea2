"""Per-call overhead of the functional layer: microseconds per call of small
ops (1K elements), baracuda vs torch, CPU and (when available) CUDA.

    PYTHONPATH=<build>/python python python/bench/overhead.py [--iters N] [--rounds R] [--breakdown]

Each number is the best of R rounds of N calls (a shared machine's noise
only ever adds time). --breakdown also times the stages of a call one by one
(docs/PYTHON.md, "Per-call overhead").

CUDA timings are host-side call rates: the loop enqueues asynchronously and
synchronizes once at the end, so they measure what a call costs the Python
thread (binding, DLPack import, plan-cache lookup, allocation, launch), which
for 1K elements is the whole cost.
"""
import argparse
import time

import numpy as np

import baracuda as bc


ROUNDS = 5


def rate(fn, iters, sync=None):
    for _ in range(max(10, iters // 10)):
        fn()
    if sync:
        sync()
    best = float("inf")
    for _ in range(ROUNDS):
        t0 = time.perf_counter()
        for _ in range(iters):
            fn()
        if sync:
            sync()
        best = min(best, (time.perf_counter() - t0) / iters * 1e6)
    return best


def breakdown(n, it, torch):
    """The stages of one call, timed one by one (1-element tensors unless said)."""
    from baracuda import _C
    from baracuda import plans as P
    a = np.ones(1, np.float32)
    x = bc.add(a, 0.0)
    s = bc.Stream.cpu()
    plan = P.BinaryPlan.select(P.BinaryDescriptor(op="add", a=P.ElementwiseOperand.tensor("float32", (1,)),
                                                  b=P.ElementwiseOperand.tensor("float32", (1,))), stream=s)
    y = _C.empty((1,), "float32", s)
    rows = [
        ("numpy __dlpack__() + __dlpack_device__()", rate(lambda: (a.__dlpack_device__(), a.__dlpack__()), it)),
        ("_C.empty((1,)) (output allocation + Array)", rate(lambda: _C.empty((1,), "float32", s), it)),
        ("plan layer: plan.run(stream=, a=, b=, out=) Arrays", rate(lambda: plan.run(stream=s, a=x, b=x, out=y), it)),
        ("fast path: _C._fast_binary, Arrays, out=", rate(lambda: _C._fast_binary("add", x, x, None, y, None), it)),
        ("fast path: _C._fast_binary, Arrays", rate(lambda: _C._fast_binary("add", x, x, None, None, None), it)),
        ("fast path: _C._fast_binary, NumPy", rate(lambda: _C._fast_binary("add", a, a, None, None, None), it)),
        ("bc.add(Array, Array)", rate(lambda: bc.add(x, x), it)),
        ("bc.add(ndarray, ndarray)", rate(lambda: bc.add(a, a), it)),
    ]
    if torch is not None:
        t = torch.from_numpy(a)
        rows += [
            ("torch __dlpack__() + __dlpack_device__()", rate(lambda: (t.__dlpack_device__(), t.__dlpack__()), it)),
            ("torch metadata (data_ptr, shape, stride(), dtype, ...)",
             rate(lambda: (t.requires_grad, t.dtype, t.is_cuda, t.is_cpu, t.shape, t.stride(), t.data_ptr()), it)),
            ("fast path: _C._fast_binary, torch", rate(lambda: _C._fast_binary("add", t, t, None, None, None), it)),
            ("bc.add(Tensor, Tensor)", rate(lambda: bc.add(t, t), it)),
        ]
        if torch.cuda.is_available():
            rows += [
                ("torch.cuda.current_stream().cuda_stream", rate(lambda: torch.cuda.current_stream().cuda_stream, it)),
                ("torch._C._cuda_getCurrentRawStream(0)", rate(lambda: torch._C._cuda_getCurrentRawStream(0), it)),
            ]
    print(f"{'stage (CPU unless said)':58} {'us':>8}")
    for name, us in rows:
        print(f"{name:58} {us:8.2f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--n", type=int, default=1024)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--breakdown", action="store_true")
    args = ap.parse_args()
    global ROUNDS
    ROUNDS = args.rounds
    n, it = args.n, args.iters
    try:
        import torch
    except Exception:
        torch = None
    rows = []
    a = np.random.rand(n).astype(np.float32)
    b = np.random.rand(n).astype(np.float32)
    rows.append(("cpu", "add numpy", rate(lambda: bc.add(a, b), it), rate(lambda: np.add(a, b), it), "numpy"))
    rows.append(("cpu", "sum numpy", rate(lambda: bc.sum(a), it), rate(lambda: np.sum(a), it), "numpy"))
    if torch is not None:
        ta, tb = torch.from_numpy(a), torch.from_numpy(b)
        rows.append(("cpu", "add torch", rate(lambda: bc.add(ta, tb), it), rate(lambda: torch.add(ta, tb), it),
                     "torch"))
        rows.append(("cpu", "sum torch", rate(lambda: bc.sum(ta), it), rate(lambda: torch.sum(ta), it), "torch"))
        ba = bc.add(ta, 0.0)  # baracuda Arrays as inputs: no foreign DLPack import
        bb = bc.add(tb, 0.0)
        rows.append(("cpu", "add bc.Array", rate(lambda: bc.add(ba, bb), it), rate(lambda: torch.add(ta, tb), it),
                     "torch"))
        if torch.cuda.is_available() and bc.WITH_CUDA and bc.cuda_available():
            ca, cb = ta.cuda(), tb.cuda()
            sync = torch.cuda.synchronize
            rows.append(("cuda", "add torch", rate(lambda: bc.add(ca, cb), it, sync),
                         rate(lambda: torch.add(ca, cb), it, sync), "torch"))
            rows.append(("cuda", "sum torch", rate(lambda: bc.sum(ca), it, sync),
                         rate(lambda: torch.sum(ca), it, sync), "torch"))
            rows.append(("cuda", "softmax torch", rate(lambda: bc.softmax(ca), it, sync),
                         rate(lambda: torch.softmax(ca, -1), it, sync), "torch"))
            x2, w2, b2 = ca.view(4, -1), torch.randn(64, n // 4, device="cuda"), torch.randn(64, device="cuda")
            lw = torch.randn(n // 4, device="cuda")
            F = torch.nn.functional
            rows.append(("cuda", "layer_norm torch", rate(lambda: bc.layer_norm(x2, n // 4, lw), it, sync),
                         rate(lambda: F.layer_norm(x2, (n // 4,), lw), it, sync), "torch"))
            rows.append(("cuda", "linear torch", rate(lambda: bc.linear(x2, w2, b2), it, sync),
                         rate(lambda: F.linear(x2, w2, b2), it, sync), "torch"))
            da, db = bc.add(ca, 0.0), bc.add(cb, 0.0)
            rows.append(("cuda", "add bc.Array", rate(lambda: bc.add(da, db), it, sync),
                         rate(lambda: torch.add(ca, cb), it, sync), "torch"))
    print(f"{'device':6} {'op / inputs':16} {'baracuda us':>12} {'other us':>10}  other")
    for dev, op, us, other, who in rows:
        print(f"{dev:6} {op:16} {us:12.2f} {other:10.2f}  {who}")
    if args.breakdown:
        print()
        breakdown(n, it, torch)


if __name__ == "__main__":
    main()
