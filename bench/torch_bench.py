#!/usr/bin/env python3
"""Times PyTorch on baracuda_bench's cases (same names), one family at a time.

    python3 bench/torch_bench.py [--family F]... [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

--family reduce|attention|rope|elementwise|gemm|softmax|norm|indexing|loss|random|random_sampling|optim (attn = attention, ew = elementwise),
repeatable; default: all, in that order. Each family is bench/torch/<family>.py
(its cases and the PyTorch code timed); bench/torch/common.py holds the timing,
the JSON writer and the case loop. --json writes one file per family, rewritten after every case; with several
families PATH gets the family's name (out.json -> out_reduce.json, ...), as
baracuda_bench does. bench/compare.py joins the files with baracuda_bench's.
torch is imported only to time: --list and --help work without it.
Exit status: 0 all cases ran, 3 some failed (listed in the JSON), 1 no torch or
no CUDA device, 2 a bad command line.
"""
import argparse
import importlib
import os
import sys
import types

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = ("reduce", "attention", "rope", "elementwise", "gemm", "softmax", "norm", "indexing", "loss", "random", "random_sampling", "optim", "attention_paged")
ALIASES = {"attn": "attention", "ew": "elementwise", "paged": "attention_paged"}

# bench/torch/ would shadow PyTorch itself: take bench/ off the import path and
# load bench/torch/ as the package "bench_torch".
sys.path[:] = [p for p in sys.path if os.path.abspath(p or os.curdir) != HERE]
_package = types.ModuleType("bench_torch")
_package.__path__ = [os.path.join(HERE, "torch")]
sys.modules["bench_torch"] = _package


def family_module(name):
    return importlib.import_module("bench_torch." + name)


def json_path(path, family, several):
    """PATH itself for one family, else PATH_<family>.json."""
    if not path or not several:
        return path
    return (path[:-5] if path.endswith(".json") else path) + "_" + family + ".json"


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--family", action="append", choices=FAMILIES + tuple(ALIASES), metavar="F",
                    help="reduce, attention (or attn), rope, elementwise (or ew), gemm, softmax, norm, indexing, loss, random, random_sampling, optim; repeatable (default: all)")
    ap.add_argument("--json", metavar="PATH", help="write the results here (several families: PATH_<family>.json)")
    ap.add_argument("--filter", default="", metavar="SUBSTR", help="only cases whose name contains this")
    ap.add_argument("--iters", type=int, metavar="N", help="timed runs per case (default: the family's, 30 or 20)")
    ap.add_argument("--warmup", type=int, metavar="N", help="untimed runs first (default: the family's, 5)")
    ap.add_argument("--list", action="store_true", help="print the case names and exit")
    args = ap.parse_args()
    names = [ALIASES.get(f, f) for f in args.family or FAMILIES]
    args.families = [f for i, f in enumerate(names) if f not in names[:i]]
    return args


def main():
    args = parse_args()
    families = [(name, family_module(name)) for name in args.families]
    selected = [(name, m, [c for c in m.all_cases() if args.filter in c["name"]]) for name, m in families]
    if args.list:
        for _, _, cases in selected:
            for c in cases:
                print(c["name"])
        return 0
    if not any(cases for _, _, cases in selected):
        print("no case matches --filter '%s'" % args.filter)
        return 0

    try:
        import torch  # here, so --list, --help and py_compile work without torch
    except ImportError as e:
        print("torch_bench: cannot import torch: %s" % e, file=sys.stderr)
        return 1
    if not torch.cuda.is_available():
        print("torch_bench: no CUDA device", file=sys.stderr)
        return 1
    common = family_module("common")
    failed, first = 0, True
    for name, module, cases in selected:
        if not cases:
            continue
        run = argparse.Namespace(**vars(args))
        run.iters = max(1, args.iters if args.iters is not None else module.ITERS)
        run.warmup = max(0, args.warmup if args.warmup is not None else module.WARMUP)
        print("%s== family %s: %d cases" % ("" if first else "\n", name, len(cases)))
        first = False
        failed += common.run_family(torch, module, cases, run, json_path(args.json, name, len(selected) > 1))
    return 3 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
