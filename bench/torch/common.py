"""Timing, JSON and the case loop shared by the PyTorch side (bench/torch_bench.py
runs the family modules bench/torch/<family>.py with them).

The method matches bench/harness.hpp (baracuda_bench), so compare.py can join
the JSON files by case name:
  * time_median_ms: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; the timed runs are queued behind torch.cuda._sleep so
    Python/launch overhead never sits inside an event pair;
  * copy_bandwidth: device-to-device copy of 1 GiB, (read + written) / median time;
  * rotate_bytes: one sweep over a case's buffer sets touches >= max(4 x L2, 256 MiB).

A family module defines TOOL, NOTES, ITERS, WARMUP, all_cases() (dicts with
"name"), start(torch, meta) (measures its ceiling into meta, prints the table
header), run_case(torch, c, meta, args) -> result fields (raises on failure) and
row(r) -> its table line. The bandwidth_* functions below are those pieces for
the memory-bound families (reduce, rope, elementwise), which give prepare_case.

torch is passed in (never imported here), so --list and py_compile work without it.
"""
import datetime
import importlib
import json
import os
import statistics
import sys
import time

SPIN_HZ = 2.0e9  # cycles per second assumed for torch.cuda._sleep; too high only sleeps longer


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


def write_json(path, meta, results):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(dict(meta, cases=results), f, indent=1)
    os.replace(tmp, path)  # a run killed mid-way still leaves the last complete file


# ---- the memory-bound families: bytes moved against the copy bandwidth ----------------

def bandwidth_start(torch, meta):
    meta["copy_bandwidth_gbps"] = copy_bandwidth(torch)
    print("device: %s, torch %s (CUDA %s); copy bandwidth %.1f GB/s; %d iters, median\n"
          % (meta["device"], meta["torch"], meta["cuda"], meta["copy_bandwidth_gbps"], meta["iters"]))
    print("%-42s %10s %8s %7s" % ("case", "time_us", "GB/s", "%copy"))


def bandwidth_case(torch, prepare_case, c, meta, args):
    """Times one case: prepare_case(torch, c, rotate_bytes) -> (bytes counted, sets,
    launch(i)) builds its buffers, then launch is timed. Returns time, GB/s of the
    counted bytes, sets and the fraction of the copy bandwidth."""
    rotate_bytes = max(4 * meta["l2_bytes"], 256 << 20)
    counted, nsets, launch = prepare_case(torch, c, rotate_bytes)
    us = time_median_ms(torch, launch, args.warmup, args.iters) * 1e3
    gbps = counted / (us * 1e-6) / 1e9
    # "ok" here only to keep the key order of the files under bench/results/
    return dict(time_us=us, gbps=gbps, bytes=counted, sets=nsets, ok=True, frac_copy=gbps / meta["copy_bandwidth_gbps"])


def bandwidth_row(r):
    if not r["ok"]:
        return "%-42s  ERROR %s" % (r["name"], r["error"])
    line = "%-42s %10.1f %8.1f %6.1f%%" % (r["name"], r["time_us"], r["gbps"], 100 * r["frac_copy"])
    if r.get("compiled_us"):
        line += "   compiled %.1f us, %.1f GB/s" % (r["compiled_us"], r["compiled_gbps"])
    elif r.get("compiled_error"):
        line += "   compiled: ERROR %s" % r["compiled_error"]
    return line


def compiled_bandwidth_case(torch, prepare_case, c, meta, args):
    """The case again with prepare_case(..., compiled=True), its function through
    torch.compile (default mode, dynamic=False), compiled by a first untimed call:
    compiled_us / compiled_gbps, or compiled_error (no Triton, no compiler, an
    unsupported op...: the eager time still counts)."""
    try:
        # AOTAutograd's donated buffers free the saved tensors in the backward,
        # which the retain_graph=True timing loops (one graph, many backwards) need.
        importlib.import_module("torch._functorch.config").donated_buffer = False
        # A fresh Dynamo per case: the cases share their functions' code objects,
        # and past the recompile limit (8) Dynamo silently runs them eagerly.
        torch._dynamo.reset()
        counted, _, launch = prepare_case(torch, c, max(4 * meta["l2_bytes"], 256 << 20), compiled=True)
        launch(0)
        us = time_median_ms(torch, launch, args.warmup, args.iters) * 1e3
        return dict(compiled_us=us, compiled_gbps=counted / (us * 1e-6) / 1e9)
    except Exception as e:
        return dict(compiled_error="%s: %s" % (type(e).__name__, " ".join(str(e).split())[:300]))


# ---- the case loop ------------------------------------------------------------------------

def run_family(torch, family, cases, args, json_path):
    """Times `cases` of the family module: prints the table, writes the JSON after
    every case. Returns the number of failed cases."""
    props = torch.cuda.get_device_properties(0)
    l2 = int(getattr(props, "L2_cache_size", 60 << 20))
    meta = dict(tool=family.TOOL, date=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
                device=torch.cuda.get_device_name(0), torch=torch.__version__, cuda=torch.version.cuda,
                cudnn=torch.backends.cudnn.version(), l2_bytes=l2, iters=args.iters, warmup=args.warmup,
                filter=args.filter)
    family.start(torch, meta)
    meta["notes"] = family.NOTES

    results, failed = [], 0
    for c in cases:
        r = dict(c)
        try:
            r.update(family.run_case(torch, c, meta, args), ok=True)
        except Exception as e:  # unsupported dtype, OOM, ...: report and go on
            failed += 1
            r.update(ok=False, error="%s: %s" % (type(e).__name__, e))
        print(family.row(r))
        sys.stdout.flush()
        results.append(r)
        torch.cuda.empty_cache()  # large sets per case: do not let the cache fragment
        if json_path:
            write_json(json_path, meta, results)
    print("\n%d cases, %d failed" % (len(results), failed))
    return failed
