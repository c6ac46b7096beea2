"""Per-call overhead of the functional layer: microseconds per call of small
ops (1K elements), baracuda vs torch, CPU and (when available) CUDA.

    PYTHONPATH=<build>/python python python/bench/overhead.py [--iters N]

CUDA timings are host-side call rates: the loop enqueues asynchronously and
synchronizes once at the end, so they measure what a call costs the Python
thread (binding, DLPack import, plan-cache lookup, allocation, launch), which
for 1K elements is the whole cost.
"""
import argparse
import time

import numpy as np

import baracuda as bc


def rate(fn, iters, sync=None):
    for _ in range(max(10, iters // 10)):
        fn()
    if sync:
        sync()
    t0 = time.perf_counter()
    for _ in range(iters):
        fn()
    if sync:
        sync()
    return (time.perf_counter() - t0) / iters * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--iters", type=int, default=20000)
    ap.add_argument("--n", type=int, default=1024)
    args = ap.parse_args()
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
            da, db = bc.add(ca, 0.0), bc.add(cb, 0.0)
            rows.append(("cuda", "add bc.Array", rate(lambda: bc.add(da, db), it, sync),
                         rate(lambda: torch.add(ca, cb), it, sync), "torch"))
    print(f"{'device':6} {'op / inputs':16} {'baracuda us':>12} {'other us':>10}  other")
    for dev, op, us, other, who in rows:
        print(f"{dev:6} {op:16} {us:12.2f} {other:10.2f}  {who}")


if __name__ == "__main__":
    main()
