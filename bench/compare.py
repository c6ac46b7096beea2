#!/usr/bin/env python3
"""Joins baracuda_bench and torch_reduce.py results by case name.

    python3 bench/compare.py OURS.json [TORCH.json] [--markdown PATH] [--out PATH] [--summary-only]

Prints, per case: our time, torch's time, speedup = torch_us / ours_us (> 1:
baracuda is faster), our GB/s and % of the device copy bandwidth, the variant.
Then a summary per (op, dir, dtype): geometric-mean and worst speedup, mean %
of copy bandwidth. --markdown writes the same as markdown; --out writes one
combined JSON (both tools' metadata + joined cases + summary), the file to
commit under bench/results/. TORCH.json may be missing: ours alone is shown.
"""
import argparse
import json
import math
import os
import sys


def load(path):
    if not path or not os.path.exists(path):
        return None
    with open(path) as f:
        return json.load(f)


def join(ours, torch):
    """One row per case, in our order (torch-only cases appended)."""
    tcases = {c["name"]: c for c in (torch or {}).get("cases", [])}
    rows, seen = [], set()
    for o in ours.get("cases", []):
        t = tcases.get(o["name"], {})
        seen.add(o["name"])
        rows.append(make_row(o, t))
    for name, t in tcases.items():
        if name not in seen:
            rows.append(make_row({k: t[k] for k in ("name", "op", "dir", "dtype", "shape", "axes")}, t))
    return rows


def make_row(o, t):
    ok_o, ok_t = o.get("ok", False), t.get("ok", False)
    r = dict(name=o["name"], op=o["op"], dir=o["dir"], dtype=o["dtype"], shape=o["shape"], axes=o["axes"],
             ours_us=o.get("time_us") if ok_o else None, torch_us=t.get("time_us") if ok_t else None,
             ours_gbps=o.get("gbps") if ok_o else None, torch_gbps=t.get("gbps") if ok_t else None,
             ours_frac_copy=o.get("frac_copy") if ok_o else None, bytes=o.get("bytes", t.get("bytes")),
             variant=o.get("variant", ""), backend=o.get("backend", ""))
    r["speedup"] = r["torch_us"] / r["ours_us"] if r["ours_us"] and r["torch_us"] else None
    if o.get("error"):
        r["ours_error"] = o["error"]
    if t.get("error"):
        r["torch_error"] = t["error"]
    return r


def geomean(xs):
    return math.exp(sum(math.log(x) for x in xs) / len(xs)) if xs else None


def summarise(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["op"], r["dir"], r["dtype"]), []).append(r)
    out = []
    for (op, d, dt), rs in groups.items():
        sp = [r["speedup"] for r in rs if r["speedup"]]
        fr = [r["ours_frac_copy"] for r in rs if r["ours_frac_copy"] is not None]
        out.append(dict(op=op, dir=d, dtype=dt, cases=len(rs), compared=len(sp), geomean_speedup=geomean(sp),
                        min_speedup=min(sp) if sp else None, mean_frac_copy=sum(fr) / len(fr) if fr else None,
                        errors=sum(1 for r in rs if "ours_error" in r)))
    for d in ("fwd", "bwd"):  # overall line per direction
        sp = [r["speedup"] for r in rows if r["dir"] == d and r["speedup"]]
        if sp:
            out.append(dict(op="ALL", dir=d, dtype="*", cases=sum(1 for r in rows if r["dir"] == d), compared=len(sp),
                            geomean_speedup=geomean(sp), min_speedup=min(sp), mean_frac_copy=None,
                            errors=sum(1 for r in rows if r["dir"] == d and "ours_error" in r)))
    return out


def fmt(v, spec, none="-"):
    return none if v is None else format(v, spec)


CASE_COLS = ["case", "ours us", "torch us", "speedup", "ours GB/s", "%copy", "variant"]
SUM_COLS = ["op", "dir", "dtype", "compared", "geomean speedup", "worst speedup", "mean %copy", "our errors"]


def case_cells(r):
    return [r["name"], fmt(r["ours_us"], ".1f", "ERR"), fmt(r["torch_us"], ".1f", "ERR" if "torch_error" in r else "-"),
            fmt(r["speedup"], ".2f"), fmt(r["ours_gbps"], ".0f"),
            fmt(None if r["ours_frac_copy"] is None else 100 * r["ours_frac_copy"], ".1f"), r["variant"]]


def sum_cells(s):
    return [s["op"], s["dir"], s["dtype"], "%d/%d" % (s["compared"], s["cases"]), fmt(s["geomean_speedup"], ".2f"),
            fmt(s["min_speedup"], ".2f"), fmt(None if s["mean_frac_copy"] is None else 100 * s["mean_frac_copy"], ".1f"),
            str(s["errors"])]


def text_table(cols, rows):
    w = [max(len(str(x)) for x in col) for col in zip(cols, *rows)]
    line = lambda cells: "  ".join(str(c).ljust(w[i]) if i == 0 else str(c).rjust(w[i]) for i, c in enumerate(cells))
    return "\n".join([line(cols), line(["-" * x for x in w])] + [line(r) for r in rows])


def md_table(cols, rows):
    out = ["| " + " | ".join(cols) + " |", "|" + "|".join("---" if i == 0 else "---:" for i in range(len(cols))) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def header_lines(ours, torch):
    lines = ["device: %s (sm %s), CUDA runtime %s, driver %s, %s" % (
        ours.get("device"), ours.get("compute_capability"), ours.get("cuda_runtime"), ours.get("cuda_driver"),
        ours.get("date"))]
    lines.append("copy bandwidth (D2D memcpy, read+write): %s GB/s; %s iters, median of CUDA-event times"
                 % (fmt(ours.get("copy_bandwidth_gbps"), ".1f"), ours.get("iters")))
    if torch:
        lines.append("torch %s (CUDA %s, cuDNN %s); torch's copy bandwidth %s GB/s" % (
            torch.get("torch"), torch.get("cuda"), torch.get("cudnn"), fmt(torch.get("copy_bandwidth_gbps"), ".1f")))
    else:
        lines.append("no torch results")
    lines.append("speedup = torch_us / ours_us (> 1: baracuda faster); %copy = our GB/s / copy bandwidth")
    return lines


def errors(rows):
    out = []
    for r in rows:
        for who in ("ours", "torch"):
            if who + "_error" in r:
                msg = " ".join(str(r[who + "_error"]).split())  # one line each
                out.append("%s [%s]: %s" % (r["name"], who, msg))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ours")
    ap.add_argument("torch", nargs="?")
    ap.add_argument("--markdown", help="write a markdown report here")
    ap.add_argument("--out", help="write the combined JSON here")
    ap.add_argument("--summary-only", action="store_true", help="print only the per-op summary")
    args = ap.parse_args()

    ours, torch = load(args.ours), load(args.torch)
    if ours is None:
        print("compare: cannot read %s" % args.ours, file=sys.stderr)
        return 1
    rows = join(ours, torch)
    summary = summarise(rows)
    errs = errors(rows)

    # Files first: the printing below may hit a closed pipe (| head).
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("# %s vs PyTorch\n\n" % ours.get("bench", "baracuda") + "\n".join("- " + l for l in header_lines(ours, torch)))
            f.write("\n\n## Summary\n\n" + md_table(SUM_COLS, [sum_cells(s) for s in summary]))
            f.write("\n\n## Cases\n\n" + md_table(CASE_COLS, [case_cells(r) for r in rows]) + "\n")
            if errs:
                f.write("\n## Errors\n\n" + "\n".join("- `%s`" % e.replace("`", "'") for e in errs) + "\n")
    if args.out:
        meta = lambda d: {k: v for k, v in (d or {}).items() if k != "cases"}
        with open(args.out, "w") as f:
            json.dump(dict(schema="baracuda.bench.reduce/1", device=ours.get("device"), date=ours.get("date"),
                           ours_meta=meta(ours), torch_meta=meta(torch) if torch else None,
                           summary=summary, cases=rows), f, indent=1)
            f.write("\n")

    print("\n".join(header_lines(ours, torch)) + "\n")
    if not args.summary_only:
        print(text_table(CASE_COLS, [case_cells(r) for r in rows]) + "\n")
    print(text_table(SUM_COLS, [sum_cells(s) for s in summary]))
    if errs:
        print("\n%d errors%s" % (len(errs), ":" if not args.summary_only else " (first 10):"))
        print("\n".join("  " + e for e in (errs[:10] if args.summary_only else errs)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
