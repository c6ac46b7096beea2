#!/usr/bin/env python3
"""Joins one family's baracuda_bench and torch_bench.py results by case name.

    python3 bench/compare.py OURS.json [TORCH.json] [--family F] [--markdown PATH] [--out PATH] [--summary-only]

The family (reduce, rope, elementwise, softmax, norm, indexing, loss: bandwidth; attention, gemm: TFLOP/s) is read
from OURS.json (--family overrides). TORCH.json may be missing: ours alone is shown.

Bandwidth families print, per case: our time, torch's time, speedup = torch_us /
ours_us (> 1: baracuda is faster), our GB/s and % of the device copy bandwidth,
the variant (and, where the torch side timed torch.compile too: its time and
our speedup over it). Then a summary per (op, dir, dtype): geometric-mean and
worst speedup, mean % of copy bandwidth. --markdown writes the same as markdown; --out
writes one combined JSON (both tools' metadata + joined cases + summary), the
file to commit under bench/results/.

Attention prints, per case, TFLOP/s of our default route, of our bespoke kernels
(timed too when the default is cuDNN), of PyTorch's FlashAttention-2 and cuDNN
SDPA backends, and the ratios default / best torch and bespoke / FA2; TFLOP/s
with our flop count on both sides. --markdown writes that table, --out the rows
with both sides' metadata.

GEMM prints, per case: our time and TFLOP/s, torch's, speedup = torch_us /
ours_us, our % of the cuBLAS 8192^3 rate in the case's dtype and in bf16 (the
ceilings baracuda_bench measured), ours / torch.matmul at the same M x K x N
(the linear cases' cost of their epilogue against the bare GEMM), torch.compile's
time and our speedup over it, issue 11's target where it sets one (mm / bmm
>= 0.98x torch.matmul; linear+bias+gelu_tanh at GPT-2's MLP shape >= 1.3x eager
forward, >= 1.2x backward) and whether it is met; then a summary per (op, dir,
dtype). --markdown and --out as for the bandwidth families.
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
    # torch.compile's time, where the torch side timed one (elementwise: swiglu).
    if "compiled_us" in t or "compiled_error" in t:
        r["torch_compiled_us"] = t.get("compiled_us")
        r["speedup_compiled"] = r["torch_compiled_us"] / r["ours_us"] if r["ours_us"] and r["torch_compiled_us"] else None
        if t.get("compiled_error"):
            r["torch_compiled_error"] = t["compiled_error"]
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
COMPILED_COLS = ["torch.compile us", "speedup vs compiled"]  # only when some case has them
SUM_COLS = ["op", "dir", "dtype", "compared", "geomean speedup", "worst speedup", "mean %copy", "our errors"]


def case_cells(r, compiled=False):
    cells = [r["name"], fmt(r["ours_us"], ".1f", "ERR"), fmt(r["torch_us"], ".1f", "ERR" if "torch_error" in r else "-"),
             fmt(r["speedup"], ".2f"), fmt(r["ours_gbps"], ".0f"),
             fmt(None if r["ours_frac_copy"] is None else 100 * r["ours_frac_copy"], ".1f"), r["variant"]]
    if compiled:
        cells += [fmt(r.get("torch_compiled_us"), ".1f", "ERR" if "torch_compiled_error" in r else "-"),
                  fmt(r.get("speedup_compiled"), ".2f")]
    return cells


def case_table(rows, table):
    """The per-case table (text_table or md_table), with torch.compile's columns
    when some case has a compiled time."""
    compiled = any("torch_compiled_us" in r for r in rows)
    return table(CASE_COLS + (COMPILED_COLS if compiled else []), [case_cells(r, compiled) for r in rows])


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
        for who in ("ours", "torch", "torch_compiled"):
            if who + "_error" in r:
                msg = " ".join(str(r[who + "_error"]).split())  # one line each
                out.append("%s [%s]: %s" % (r["name"], who, msg))
    return out


def compare_bandwidth(ours, torch, args):
    rows = join(ours, torch)
    summary = summarise(rows)
    errs = errors(rows)

    # Files first: the printing below may hit a closed pipe (| head).
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("# %s vs PyTorch\n\n" % ours.get("bench", "baracuda") + "\n".join("- " + l for l in header_lines(ours, torch)))
            f.write("\n\n## Summary\n\n" + md_table(SUM_COLS, [sum_cells(s) for s in summary]))
            f.write("\n\n## Cases\n\n" + case_table(rows, md_table) + "\n")
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
        print(case_table(rows, text_table) + "\n")
    print(text_table(SUM_COLS, [sum_cells(s) for s in summary]))
    if errs:
        print("\n%d errors%s" % (len(errs), ":" if not args.summary_only else " (first 10):"))
        print("\n".join("  " + e for e in (errs[:10] if args.summary_only else errs)))
    return 0


# ---- attention: TFLOP/s, PyTorch's FA2 and cuDNN backends side by side -------------------

ATTN_BACKENDS = ("flash", "cudnn")


def case_flops(c, t):
    """The flop count ours used (its TFLOP/s x its time), so both sides share one
    convention; when ours did not run, torch_bench's (the same count), else the
    standard one."""
    if c.get("tflops") and c.get("time_us"):
        return c["tflops"] * 1e12 * c["time_us"] * 1e-6
    if t.get("flops"):
        return t["flops"]
    f = (10 if c["dir"] == "bwd" else 4) * c["B"] * c["H"] * c["Q"] * c["K"] * c["D"]
    if c["causal"] and c["Q"] == c["K"]:
        f /= 2
    return f


def attention_rows(ours, torch):
    """One row per case of ours: our default route and bespoke kernels, each torch
    backend's time and TFLOP/s (or why it did not run), the ratios."""
    tcases = {c["name"]: c for c in (torch or {}).get("cases", [])}
    rows = []
    for c in ours["cases"]:
        t = tcases.get(c["name"], {})
        bespoke_default = "[bespoke" in c.get("sku", "")  # else the default is cuDNN and bespoke was timed apart
        r = dict(name=c["name"], dir=c["dir"], dtype=c["dtype"], ours_tflops=c.get("tflops"), ours_us=c.get("time_us"),
                 variant=c.get("variant", ""), sku=c.get("sku", ""),
                 bespoke_tflops=c.get("bespoke_tflops") or (c.get("tflops") if bespoke_default else None),
                 bespoke_variant=c.get("bespoke_variant") or (c.get("variant") if bespoke_default else ""))
        for be in ATTN_BACKENDS:
            us = t.get(be + "_us")
            err = t.get(be + "_error") or t.get("error") or (None if t else "no torch result")
            if be + "_us" in t:  # absent: the case was never run on torch (not expressible, no result)
                r[be + "_us"] = us
            r[be + "_tflops"] = case_flops(c, t) / (us * 1e-6) / 1e12 if us else None
            if err:
                r[be + "_error"] = err
        best = max([x for x in (r.get("flash_tflops"), r.get("cudnn_tflops")) if x] or [0]) or None
        r["vs_flash"] = r["ours_tflops"] / r["flash_tflops"] if r["ours_tflops"] and r.get("flash_tflops") else None
        r["vs_best"] = r["ours_tflops"] / best if r["ours_tflops"] and best else None
        r["bespoke_vs_flash"] = r["bespoke_tflops"] / r["flash_tflops"] if r["bespoke_tflops"] and r.get("flash_tflops") else None
        rows.append(r)
    return rows


def na(x, f="%.1f"):
    return f % x if x else "n/a"


def compare_attention(ours, torch, args):
    rows = attention_rows(ours, torch)
    tmeta = torch or {}
    meta = dict(torch=tmeta.get("torch"), cuda=tmeta.get("cuda"), cudnn=tmeta.get("cudnn"), device=tmeta.get("device"),
                ours_device=ours.get("device"), date=ours.get("date"))
    if args.out:
        with open(args.out, "w") as f:
            json.dump(dict(meta=meta, ours_meta={k: v for k, v in ours.items() if k != "cases"}, rows=rows), f, indent=1)
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("| case | default route | TFLOP/s | bespoke TFLOP/s | torch FA2 | torch cuDNN | default/best torch | bespoke/FA2 |\n"
                    "|---|---|---|---|---|---|---|---|\n")
            for r in rows:
                route = ("cudnn " if "[cudnn" in r["sku"] else "bespoke ") + r["variant"]
                f.write("| %s | %s | %s | %s | %s | %s | %s | %s |\n" % (
                    r["name"], route, na(r["ours_tflops"]), na(r["bespoke_tflops"]), na(r.get("flash_tflops")),
                    na(r.get("cudnn_tflops")), na(r["vs_best"], "%.2fx"), na(r["bespoke_vs_flash"], "%.2fx")))
            f.write("\n%s\n" % json.dumps(meta))
    if not torch:
        print("no torch results")
    for r in rows:
        print("%-46s ours %7s  bespoke %7s  fa2 %7s  cudnn %7s  ours/best %6s  bespoke/fa2 %6s" % (
            r["name"], na(r["ours_tflops"]), na(r["bespoke_tflops"]), na(r.get("flash_tflops")), na(r.get("cudnn_tflops")),
            na(r["vs_best"], "%.2fx"), na(r["bespoke_vs_flash"], "%.2fx")))
    return 0


# ---- gemm: TFLOP/s against torch eager (and torch.compile), issue 11's targets -------------

GPT2_MLP = (8192, 768, 3072)  # M, K, N


def gemm_target(o):
    """Issue 11's minimum speedup over PyTorch for a case, or None (fp8: a
    multiple of our own bf16 rate instead, see gemm_rows)."""
    if o["op"].startswith("scaled_mm"):
        return 1.7
    if o["op"] in ("mm", "bmm"):
        return 0.98
    if (o["M"], o["K"], o["N"]) == GPT2_MLP and o["op"] in ("linear_gelu_tanh", "linear_gelu_tanh_aux", "mlp_gelu_tanh"):
        return 1.3 if o["dir"] == "fwd" else 1.2
    return None


def gemm_rows(ours, torch):
    tcases = {c["name"]: c for c in (torch or {}).get("cases", [])}
    # torch.matmul's rate per (dtype, M, K, N), for the "vs torch mm" column
    tmm = {(c["dtype"], c["M"], c["K"], c["N"]): c["tflops"] for c in tcases.values()
           if c.get("op") == "mm" and c.get("ok") and c.get("tflops")}
    bf16 = ours.get("gemm_bf16_tflops") or 0
    # our own bf16 MatmulPlan rate at 8192^3: what the fp8 cases are judged against
    our_bf16 = next((c.get("tflops") for c in ours.get("cases", [])
                     if c.get("ok") and c.get("op") == "mm" and c.get("dtype") == "bf16"
                     and (c["M"], c["K"], c["N"]) == (8192, 8192, 8192)), None)
    rows = []
    for o in ours.get("cases", []):
        t = tcases.get(o["name"], {})
        ok_o, ok_t = o.get("ok", False), t.get("ok", False)
        r = dict(name=o["name"], op=o["op"], dir=o["dir"], dtype=o["dtype"], batch=o["batch"], M=o["M"], K=o["K"],
                 N=o["N"], flops=o["flops"], ours_us=o.get("time_us") if ok_o else None,
                 ours_tflops=o.get("tflops") if ok_o else None, torch_us=t.get("time_us") if ok_t else None,
                 torch_tflops=t.get("tflops") if ok_t else None, variant=o.get("variant", ""))
        r["speedup"] = r["torch_us"] / r["ours_us"] if r["ours_us"] and r["torch_us"] else None
        r["ours_frac_ceiling"] = o.get("frac_ceiling") if ok_o else None
        r["ours_frac_bf16"] = r["ours_tflops"] / bf16 if r["ours_tflops"] and bf16 else None
        mm = tmm.get((o["dtype"], o["M"], o["K"], o["N"])) if o["batch"] == 1 else None
        r["vs_torch_mm"] = r["ours_tflops"] / mm if r["ours_tflops"] and mm else None
        if "compiled_us" in t or "compiled_error" in t:
            r["torch_compiled_us"] = t.get("compiled_us")
            r["speedup_compiled"] = r["torch_compiled_us"] / r["ours_us"] if r["ours_us"] and r["torch_compiled_us"] else None
            if t.get("compiled_error"):
                r["torch_compiled_error"] = t["compiled_error"]
        r["target"] = gemm_target(o)
        r["met"] = None if r["target"] is None or r["speedup"] is None else r["speedup"] >= r["target"]
        if o["op"].startswith("scaled_mm"):  # fp8: >= 1.7x our bf16 rate, not a speedup over torch
            r["vs_our_bf16"] = r["ours_tflops"] / our_bf16 if r["ours_tflops"] and our_bf16 else None
            r["met"] = None if r["vs_our_bf16"] is None else r["vs_our_bf16"] >= r["target"]
        if o.get("error"):
            r["ours_error"] = o["error"]
        if t.get("error"):
            r["torch_error"] = t["error"]
        rows.append(r)
    return rows


def gemm_summary(rows):
    groups = {}
    for r in rows:
        groups.setdefault((r["op"], r["dir"], r["dtype"]), []).append(r)
    out = []
    for (op, d, dt), rs in groups.items():
        sp = [r["speedup"] for r in rs if r["speedup"]]
        judged = [r for r in rs if r["met"] is not None]
        out.append(dict(op=op, dir=d, dtype=dt, cases=len(rs), compared=len(sp), geomean_speedup=geomean(sp),
                        min_speedup=min(sp) if sp else None, targets=len(judged),
                        targets_met=sum(1 for r in judged if r["met"]), errors=sum(1 for r in rs if "ours_error" in r)))
    return out


GEMM_COLS = ["case", "ours us", "ours TFLOP/s", "torch us", "torch TFLOP/s", "speedup", "%ceil", "%bf16 cuBLAS",
             "vs torch mm", "torch.compile us", "vs compiled", "target", "variant"]
GEMM_SUM_COLS = ["op", "dir", "dtype", "compared", "geomean speedup", "worst speedup", "targets met", "our errors"]


def gemm_cells(r):
    pct = lambda x: fmt(None if x is None else 100 * x, ".1f")
    target = "-" if r["target"] is None else "%.2fx%s %s" % (r["target"], " our bf16" if "vs_our_bf16" in r else "",
                                                            {True: "met", False: "MISSED", None: "?"}[r["met"]])
    return [r["name"], fmt(r["ours_us"], ".1f", "ERR"), fmt(r["ours_tflops"], ".1f", "ERR"),
            fmt(r["torch_us"], ".1f", "ERR" if "torch_error" in r else "-"), fmt(r["torch_tflops"], ".1f"),
            fmt(r["speedup"], ".3f"), pct(r["ours_frac_ceiling"]), pct(r["ours_frac_bf16"]), fmt(r["vs_torch_mm"], ".3f"),
            fmt(r.get("torch_compiled_us"), ".1f", "ERR" if "torch_compiled_error" in r else "-"),
            fmt(r.get("speedup_compiled"), ".3f"), target, r["variant"]]


def gemm_sum_cells(s):
    return [s["op"], s["dir"], s["dtype"], "%d/%d" % (s["compared"], s["cases"]), fmt(s["geomean_speedup"], ".3f"),
            fmt(s["min_speedup"], ".3f"), "%d/%d" % (s["targets_met"], s["targets"]) if s["targets"] else "-",
            str(s["errors"])]


def gemm_header(ours, torch):
    lines = ["device: %s (sm %s), CUDA runtime %s, driver %s, %s" % (
        ours.get("device"), ours.get("compute_capability"), ours.get("cuda_runtime"), ours.get("cuda_driver"),
        ours.get("date"))]
    lines.append("ceiling: cuBLAS 8192^3 bf16 %s, f16 %s TFLOP/s; %s iters, median of CUDA-event times" % (
        fmt(ours.get("gemm_bf16_tflops"), ".1f"), fmt(ours.get("gemm_f16_tflops"), ".1f"), ours.get("iters")))
    if torch:
        lines.append("torch %s (CUDA %s); torch.matmul 8192^3 bf16 %s, f16 %s TFLOP/s; reduced-precision reduction "
                     "bf16 %s, f16 %s" % (torch.get("torch"), torch.get("cuda"), fmt(torch.get("gemm_bf16_tflops"), ".1f"),
                                          fmt(torch.get("gemm_f16_tflops"), ".1f"),
                                          torch.get("allow_bf16_reduced_precision_reduction"),
                                          torch.get("allow_fp16_reduced_precision_reduction")))
    else:
        lines.append("no torch results")
    lines.append("speedup = torch_us / ours_us (> 1: baracuda faster); %ceil = ours / cuBLAS in the case's dtype; "
                 "vs torch mm = ours / torch.matmul at the same MxKxN; FLOPs 2MNK per GEMM (backward: 2 GEMMs)")
    return lines


def compare_gemm(ours, torch, args):
    rows = gemm_rows(ours, torch)
    summary = gemm_summary(rows)
    errs = errors(rows)
    missed = ["%s: %.3fx < %.2fx" % (r["name"], r["speedup"], r["target"]) for r in rows if r["met"] is False]
    if args.markdown:
        with open(args.markdown, "w") as f:
            f.write("# baracuda gemm vs PyTorch\n\n" + "\n".join("- " + l for l in gemm_header(ours, torch)))
            f.write("\n\n## Summary\n\n" + md_table(GEMM_SUM_COLS, [gemm_sum_cells(s) for s in summary]))
            f.write("\n\n## Cases\n\n" + md_table(GEMM_COLS, [gemm_cells(r) for r in rows]) + "\n")
            if missed:
                f.write("\n## Targets missed\n\n" + "\n".join("- " + m for m in missed) + "\n")
            if errs:
                f.write("\n## Errors\n\n" + "\n".join("- `%s`" % e.replace("`", "'") for e in errs) + "\n")
    if args.out:
        meta = lambda d: {k: v for k, v in (d or {}).items() if k != "cases"}
        with open(args.out, "w") as f:
            json.dump(dict(schema="baracuda.bench.gemm/1", device=ours.get("device"), date=ours.get("date"),
                           ours_meta=meta(ours), torch_meta=meta(torch) if torch else None, summary=summary,
                           cases=rows), f, indent=1)
            f.write("\n")
    print("\n".join(gemm_header(ours, torch)) + "\n")
    if not args.summary_only:
        print(text_table(GEMM_COLS, [gemm_cells(r) for r in rows]) + "\n")
    print(text_table(GEMM_SUM_COLS, [gemm_sum_cells(s) for s in summary]))
    if missed:
        print("\ntargets missed:\n" + "\n".join("  " + m for m in missed))
    if errs:
        print("\n%d errors%s" % (len(errs), ":" if not args.summary_only else " (first 10):"))
        print("\n".join("  " + e for e in (errs[:10] if args.summary_only else errs)))
    return 0


# ---- main ----------------------------------------------------------------------------------

FAMILY_ALIASES = {"attn": "attention", "ew": "elementwise"}


def family_of(ours):
    """The family a baracuda_bench JSON file holds (its tool names the case set)."""
    return "attention" if ours.get("bench") == "baracuda_attn_bench" else {
        "baracuda_bench": "reduce", "baracuda_rope_bench": "rope",
        "baracuda_elementwise_bench": "elementwise", "baracuda_gemm_bench": "gemm",
        "baracuda_softmax_bench": "softmax", "baracuda_norm_bench": "norm",
        "baracuda_indexing_bench": "indexing",
        "baracuda_loss_bench": "loss"}.get(ours.get("tool"), "reduce")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("ours")
    ap.add_argument("torch", nargs="?")
    ap.add_argument("--family", choices=("reduce", "attention", "attn", "rope", "elementwise", "ew", "gemm", "softmax", "norm", "indexing", "loss"),
                    help="default: read from OURS.json")
    ap.add_argument("--markdown", help="write a markdown report here")
    ap.add_argument("--out", help="write the combined JSON here")
    ap.add_argument("--summary-only", action="store_true", help="print only the per-op summary (bandwidth families, gemm)")
    args = ap.parse_args()

    ours, torch = load(args.ours), load(args.torch)
    if ours is None:
        print("compare: cannot read %s" % args.ours, file=sys.stderr)
        return 1
    family = FAMILY_ALIASES.get(args.family, args.family) or family_of(ours)
    if family == "attention":
        return compare_attention(ours, torch, args)
    if family == "gemm":
        return compare_gemm(ours, torch, args)
    return compare_bandwidth(ours, torch, args)


if __name__ == "__main__":
    sys.exit(main())
