"""Shared harness of the PyTorch bandwidth benches (torch_reduce.py, torch_rope.py).

The method matches bench/bench_common.hpp (the C++ benches), so compare.py can
join the JSON files by case name:
  * time_median_ms: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; the timed runs are queued behind torch.cuda._sleep so
    Python/launch overhead never sits inside an event pair;
  * copy_bandwidth: device-to-device copy of 1 GiB, (read + written) / median time;
  * rotate_bytes: one sweep over a case's buffer sets touches >= max(4 x L2, 256 MiB).

torch is passed in (never imported here), so --list and py_compile work without it.
"""
import argparse
import datetime
import json
import os
import statistics
import sys
import time

SPIN_HZ = 2.0e9  # cycles per second assumed for torch.cuda._sleep; too high only sleeps longer


def parse_args(doc):
    """The common command line: [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]."""
    ap = argparse.ArgumentParser(description=doc.split("\n")[0])
    ap.add_argument("--json", help="write results here")
    ap.add_argument("--filter", default="", help="only cases whose name contains this")
    ap.add_argument("--iters", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=5)
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args()
    args.iters = max(1, args.iters)
    return args


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


def copy_bandwidth(torch):
    n = 1 << 30
    src = torch.empty(n // 4, dtype=torch.float32, device="cuda").uniform_(-1, 1)
    dst = torch.empty_like(src)
    ms = time_median_ms(torch, lambda i: dst.copy_(src), 3, 20)
    return 2.0 * n / (ms * 1e-3) / 1e9


def bandwidth_result(counted, nsets, ms):
    """The timing fields of one case: time, GB/s of the counted bytes, sets."""
    us = ms * 1e3
    return dict(time_us=us, gbps=counted / (us * 1e-6) / 1e9, bytes=counted, sets=nsets)


def write_json(path, meta, results):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(dict(meta, cases=results), f, indent=1)
    os.replace(tmp, path)  # a run killed mid-way still leaves the last complete file


def run_case(torch, prepare_case, c, rotate_bytes, args):
    """Times one case: prepare_case(torch, c, rotate_bytes) -> (bytes counted, sets,
    launch(i)) builds its buffers, then launch is timed."""
    counted, nsets, launch = prepare_case(torch, c, rotate_bytes)
    return bandwidth_result(counted, nsets, time_median_ms(torch, launch, args.warmup, args.iters))


def run_bandwidth_bench(tool, doc, all_cases, prepare_case, notes):
    """main() of a PyTorch bandwidth bench: parses the options, lists or times the
    cases (see run_case), prints the table and writes the JSON. Returns the exit status."""
    args = parse_args(doc)

    cases = [c for c in all_cases() if args.filter in c["name"]]
    if args.list:
        print("\n".join(c["name"] for c in cases))
        return 0

    import torch  # here, so --list and py_compile work without torch

    if not torch.cuda.is_available():
        print("%s: no CUDA device" % tool, file=sys.stderr)
        return 1
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 60 << 20))
    rotate_bytes = max(4 * l2, 256 << 20)
    meta = dict(tool=tool, date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                device=torch.cuda.get_device_name(0), torch=torch.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(), l2_bytes=l2, iters=args.iters, warmup=args.warmup,
                filter=args.filter, copy_bandwidth_gbps=copy_bandwidth(torch), notes=notes)
    print("device: %s, torch %s (CUDA %s); copy bandwidth %.1f GB/s; %d iters, median\n"
          % (meta["device"], meta["torch"], meta["cuda"], meta["copy_bandwidth_gbps"], args.iters))
    print("%-42s %10s %8s %7s" % ("case", "time_us", "GB/s", "%copy"))

    results, failed = [], 0
    for c in cases:
        r = dict(c)
        try:
            r.update(run_case(torch, prepare_case, c, rotate_bytes, args), ok=True)
            r["frac_copy"] = r["gbps"] / meta["copy_bandwidth_gbps"]
            print("%-42s %10.1f %8.1f %6.1f%%" % (c["name"], r["time_us"], r["gbps"], 100 * r["frac_copy"]))
        except Exception as e:  # unsupported dtype, OOM, ...: report and go on
            failed += 1
            r.update(ok=False, error="%s: %s" % (type(e).__name__, e))
            print("%-42s  ERROR %s" % (c["name"], r["error"]))
        sys.stdout.flush()
        results.append(r)
        torch.cuda.empty_cache()  # large sets per case: do not let the cache fragment
        if args.json:
            write_json(args.json, meta, results)
    print("\n%d cases, %d failed" % (len(results), failed))
    return 3 if failed else 0
