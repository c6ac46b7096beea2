#!/usr/bin/env python3
"""Times the PyTorch equivalents of baracuda_bench's reduction cases.

    python3 bench/torch_reduce.py [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same cases, names, byte counting and method as bench/reduce_bench.cpp, so
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
import argparse
import datetime
import json
import math
import os
import statistics
import sys
import time

KINDS = ["sum", "mean", "max", "min", "prod", "norm2", "logsumexp", "var", "std", "argmax"]
NO_BACKWARD = {"argmax"}
SHAPES = [((8192, 16384), (1,)), ((8192, 16384), (0,)), ((64, 4096, 128), (1,)), ((16, 1024, 1024), (1, 2))]
DTYPES = ["f32", "bf16"]
# (needs x, needs y) of baracuda's backward, for the byte count (reduce.hpp).
NEEDS = {"sum": (False, False), "mean": (False, False), "max": (True, True), "min": (True, True),
         "prod": (True, False), "norm2": (True, True), "logsumexp": (True, True), "var": (True, False),
         "std": (True, True)}
DTYPE_SIZE = {"f32": 4, "bf16": 2}
SPIN_HZ = 2.0e9  # cycles per second assumed for torch.cuda._sleep; too high only sleeps longer


def case_name(kind, direction, dtype, shape, axes):
    return "%s.%s.%s.%s.ax%s" % (kind, direction, dtype, "x".join(map(str, shape)), ",".join(map(str, axes)))


def all_cases():
    # Same order as reduce_bench.cpp.
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


def time_median_ms(torch, launch, warmup, iters):
    """launch(i) for i over warm-up + timed calls; median ms of the timed ones."""
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for i in range(warmup):
        launch(i)
    host_s = (time.perf_counter() - t0) / max(warmup, 1)
    torch.cuda.synchronize()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    spin_s = min(0.5, iters * max(2 * host_s, 50e-6) + 1e-4)
    torch.cuda._sleep(int(spin_s * SPIN_HZ))
    for i, (start, stop) in enumerate(events):
        start.record()
        launch(warmup + i)
        stop.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events)


def run_case(torch, c, rotate_bytes, args):
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

    ms = time_median_ms(torch, launch, args.warmup, args.iters)
    us = ms * 1e3
    return dict(time_us=us, gbps=counted / (us * 1e-6) / 1e9, bytes=counted, sets=nsets)


def copy_bandwidth(torch):
    n = 1 << 30
    src = torch.empty(n // 4, dtype=torch.float32, device="cuda").uniform_(-1, 1)
    dst = torch.empty_like(src)
    ms = time_median_ms(torch, lambda i: dst.copy_(src), 3, 20)
    return 2.0 * n / (ms * 1e-3) / 1e9


def write_json(path, meta, results):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(dict(meta, cases=results), f, indent=1)
    os.replace(tmp, path)  # a run killed mid-way still leaves the last complete file


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args()
    args.iters = max(1, args.iters)

    cases = [c for c in all_cases() if args.filter in c["name"]]
    if args.list:
        print("\n".join(c["name"] for c in cases))
        return 0

    import torch  # here, so --list and py_compile work without torch

    if not torch.cuda.is_available():
        print("torch_reduce: no CUDA device", file=sys.stderr)
        return 1
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 60 << 20))
    rotate_bytes = max(4 * l2, 256 << 20)
    meta = dict(tool="torch_reduce", date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                device=torch.cuda.get_device_name(0), torch=torch.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(), l2_bytes=l2, iters=args.iters, warmup=args.warmup,
                filter=args.filter, copy_bandwidth_gbps=copy_bandwidth(torch),
                notes="backward = autograd.grad(y, x, dy)[0].contiguous(); bytes counted as baracuda's")
    print("device: %s, torch %s (CUDA %s); copy bandwidth %.1f GB/s; %d iters, median\n"
          % (meta["device"], meta["torch"], meta["cuda"], meta["copy_bandwidth_gbps"], args.iters))
    print("%-42s %10s %8s %7s" % ("case", "time_us", "GB/s", "%copy"))

    results, failed = [], 0
    for c in cases:
        r = dict(c)
        try:
            r.update(run_case(torch, c, rotate_bytes, args), ok=True)
            r["frac_copy"] = r["gbps"] / meta["copy_bandwidth_gbps"]
            print("%-42s %10.1f %8.1f %6.1f%%" % (c["name"], r["time_us"], r["gbps"], 100 * r["frac_copy"]))
        except Exception as e:  # unsupported dtype, OOM, ...: report and go on
            failed += 1
            r.update(ok=False, error="%s: %s" % (type(e).__name__, e))
            print("%-42s  ERROR %s" % (c["name"], r["error"]))
        sys.stdout.flush()
        results.append(r)
        torch.cuda.empty_cache()  # 1 GiB sets per case: do not let the cache fragment
        if args.json:
            write_json(args.json, meta, results)
    print("\n%d cases, %d failed" % (len(results), failed))
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
