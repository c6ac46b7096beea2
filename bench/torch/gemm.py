"""Family "gemm": PyTorch eager on the cases of baracuda_bench --family gemm.

    python3 bench/torch_bench.py --family gemm [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same names, flop count, data and method as bench/cases/gemm.cpp, so
bench/compare.py can join the two JSON files by case name. bf16 and f16 each;
M x K x N: out [M, N], K summed. Outputs allocated by PyTorch (its caching
allocator: no cudaMalloc inside the timing), forward under torch.no_grad():
    mm.<dt>.MxKxN          torch.matmul(a, b), a [M, K], b [K, N] contiguous
    bmm.<dt>.64x1024^3     torch.bmm(a, b), a and b [64, 1024, 1024]
    linear_gelu_tanh.fwd   F.gelu(F.linear(x, w, b), approximate="tanh")
    linear_gelu_tanh_aux.fwd   the same eager code (eager always materialises
                           the pre-activation F.linear returns: autograd saves it)
    linear_gelu.fwd        F.gelu(F.linear(x, w, b))  (exact erf)
    linear_gelu_tanh.bwd   the aten ops autograd runs for gelu(linear(x, w, b)),
                           called directly (no graph overhead), from dy, x, w and
                           the saved pre-activation `pre`:
                             g  = aten.gelu_backward(dy, pre, approximate="tanh")
                             dx = g.mm(w)        (AddmmBackward0, mat1)
                             dw = g.t().mm(x)    (AddmmBackward0, mat2 = w.t(): the
                                                  product is formed in w's layout)
                             db = g.sum(0)       (AddmmBackward0, the broadcast bias)
  x, w, b at the MLP shapes of GPT-2 (8192x768x3072) and Llama-7B (8192x4096x11008).
    grouped_linear.fwd.<dt>.E8x16384x4096x14336   8 experts (Mixtral-like), 16384
                           tokens split by EXPERT_ROWS (cases/gemm.cpp's kExpertRows):
                           a Python loop of F.linear(x[o_e:o_e+1], w[e]) per expert
                           (w [8, N, K], no bias), the outputs left as the list
                           (no concatenation). FLOPs 2*T*N*K. Timed a second time
                           through torch._grouped_mm(x, w.transpose(1, 2), offs=)
                           where it exists and runs (fields alt_us / alt_tflops, or
                           alt_error).
    scaled_mm[_rowwise][_fast].f8e4m3.8192x8192x8192   torch._scaled_mm(a, w.t(),
                           scale_a, scale_b, out_dtype=bf16, use_fast_accum=_fast):
                           a [M, K] and w [N, K] float8_e4m3fn, per-tensor f32
                           scales (or row-wise: [M, 1] and [1, N]); its %ceil is
                           against the bf16 ceiling, as baracuda's.
The linear cases (forward and backward) are timed a second time through
torch.compile (compiled once before the timing, default mode; fields
compiled_us / compiled_tflops, or compiled_error): the aux forward compiles a
function returning (y, pre), the backward one returning (dx, dw, db).
  * each case: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; the timed runs are queued behind torch.cuda._sleep;
  * rotation among independent buffer sets until one sweep touches
    >= max(4 x L2, 256 MiB), at most 8 (the small GPT-2 shapes would otherwise
    read their inputs from L2), as baracuda's;
  * FLOPs 2*M*N*K per GEMM (times the batch), the backward 4*M*N*K (dx, dw);
  * data uniform(-1, 1), b / w uniform(-1, 1)/sqrt(K);
  * the "ceiling": torch.matmul's rate at 8192^3 in each dtype, measured when
    the family starts (meta gemm_bf16_tflops / gemm_f16_tflops).
PyTorch's own matmul settings are left at their defaults and recorded in the
metadata (allow_bf16/fp16_reduced_precision_reduction: cuBLAS may then reduce
split-K partial sums in 16 bits, which baracuda does not do).
"""
import math

from . import common

TOOL = "torch_gemm"
NOTES = ("eager (outputs from the caching allocator); backward = the aten ops autograd runs, called directly; "
         "linear cases also through torch.compile (compiled_us); FLOPs 2MNK per GEMM")
ITERS, WARMUP = 30, 5

DTYPES = ("bf16", "f16")
DTYPE_SIZE = {"bf16": 2, "f16": 2, "f8e4m3": 1}
MM_SHAPES = ((8192, 8192, 8192), (8192, 4096, 11008), (8192, 11008, 4096), (8192, 768, 3072), (8192, 3072, 768))
MLP_SHAPES = ((8192, 768, 3072), (8192, 4096, 11008))  # GPT-2, Llama-7B
LINEAR_FWD = (  # op, activation, save_aux (cases/gemm.cpp's order)
    ("linear_gelu_tanh", "gelu_tanh", False),
    ("linear_gelu_tanh_aux", "gelu_tanh", True),
    ("linear_gelu", "gelu", False),
)
MAX_SETS = 8
EXPERT_ROWS = (3216, 1088, 2752, 1504, 2368, 896, 3040, 1520)  # sum 16384, as cases/gemm.cpp's kExpertRows
GROUPED_SHAPE = (16384, 4096, 14336)  # tokens T, K, N


def shape_name(M, K, N):
    return "%dx%dx%d" % (M, K, N)


def make_case(name, op, direction, dtype, batch, M, K, N, activation="none", save_aux=False, rowwise=False,
              fast_accum=False):
    c = dict(name=name, op=op, dir=direction, dtype=dtype, batch=batch, M=M, K=K, N=N, activation=activation,
             save_aux=save_aux, rowwise=rowwise, fast_accum=fast_accum)
    groups = 1 if op == "grouped_linear" else batch  # the grouped case's batch is its expert count
    c["flops"] = (8.0 if op.startswith("mlp") else 4.0 if direction == "bwd" else 2.0) * groups * M * N * K
    return c


def all_cases():
    """The fields of baracuda's JSON rows, in cases/gemm.cpp's order."""
    out = []
    for dt in DTYPES:
        for M, K, N in MM_SHAPES:
            out.append(make_case("mm.%s.%s" % (dt, shape_name(M, K, N)), "mm", "fwd", dt, 1, M, K, N))
        out.append(make_case("bmm.%s.64x1024^3" % dt, "bmm", "fwd", dt, 64, 1024, 1024, 1024))
        for M, K, N in MLP_SHAPES:
            for op, act, aux in LINEAR_FWD:
                out.append(make_case("%s.fwd.%s.%s" % (op, dt, shape_name(M, K, N)), op, "fwd", dt, 1, M, K, N, act, aux))
            out.append(make_case("linear_gelu_tanh.bwd.%s.%s" % (dt, shape_name(M, K, N)), "linear_gelu_tanh", "bwd", dt,
                                 1, M, K, N, "gelu_tanh", False))  # save_aux as baracuda's backward descriptor
            out.append(make_case("mlp_gelu_tanh.bwd.%s.%s" % (dt, shape_name(M, K, N)), "mlp_gelu_tanh", "bwd", dt,
                                 1, M, K, N, "gelu_tanh", False))
        T, K, N = GROUPED_SHAPE
        out.append(make_case("grouped_linear.fwd.%s.E%dx%s" % (dt, len(EXPERT_ROWS), shape_name(T, K, N)),
                             "grouped_linear", "fwd", dt, len(EXPERT_ROWS), T, K, N))
    for rowwise in (False, True):
        for fast in (False, True):
            op = "scaled_mm" + ("_rowwise" if rowwise else "") + ("_fast" if fast else "")
            out.append(make_case("%s.f8e4m3.%s" % (op, shape_name(8192, 8192, 8192)), op, "fwd", "f8e4m3", 1, 8192, 8192,
                                 8192, rowwise=rowwise, fast_accum=fast))
    return out


def bytes_per_set(c):
    """Bytes one run touches (every operand read, every output written), as
    cases/gemm.cpp counts them for the rotation."""
    B, M, K, N = c["batch"], c["M"], c["K"], c["N"]
    mk, kn, mn = B * M * K, B * K * N, B * M * N
    if c["op"].startswith("scaled_mm"):
        return mk + kn + 2 * mn  # fp8 a, b; bf16 out
    if c["op"] in ("mm", "bmm"):
        n = mk + kn + mn
    elif c["op"].startswith("mlp"):
        n = 3 * mk + 3 * mn + 4 * kn + N + K  # dy, x, dx; h, pre, dpre; w1, w2, dw1, dw2; db1, db2
    elif c["op"] == "grouped_linear":
        n = M * K + B * K * N + M * N  # x, w, y
    elif c["dir"] == "fwd":
        n = mk + kn + N + mn * (2 if c["save_aux"] else 1)
    else:
        n = 2 * mn + 2 * mk + 2 * kn + N  # dy, pre; x, dx; w, dw; db
    return n * DTYPE_SIZE[c["dtype"]]


def torch_dtype(torch, name):
    return {"bf16": torch.bfloat16, "f16": torch.float16}[name]


def approximate(c):
    return "tanh" if c["activation"] == "gelu_tanh" else "none"


def make_fn(torch, c, compiled):
    """The PyTorch code of a case, on the operands make_set builds."""
    F = torch.nn.functional
    aten = torch.ops.aten
    appr = approximate(c)
    if c["op"] == "mm":
        return torch.matmul
    if c["op"].startswith("scaled_mm"):
        fast = c["fast_accum"]

        def scaled_mm(a, w, sa, sb):
            return torch._scaled_mm(a, w.t(), sa, sb, out_dtype=torch.bfloat16, use_fast_accum=fast)
        return scaled_mm
    if c["op"] == "bmm":
        return torch.bmm
    if c["op"].startswith("mlp"):
        # The aten ops autograd runs for fc2(gelu_tanh(fc1(x))) (both nn.Linear):
        # fc2's AddmmBackward0, GeluBackward0, fc1's AddmmBackward0.
        def mlp_bwd(dy, x, h, pre, w1, w2):
            dh = dy.mm(w2)
            dw2, db2 = dy.t().mm(h), dy.sum(0)
            g = aten.gelu_backward(dh, pre, approximate=appr)
            return g.mm(w1), g.t().mm(x), g.sum(0), dw2, db2
        return mlp_bwd
    if c["op"] == "grouped_linear":
        bounds = expert_bounds()

        def experts_loop(x, w, offs):
            return [F.linear(x[lo:hi], w[e]) for e, (lo, hi) in enumerate(bounds)]
        return experts_loop
    if c["dir"] == "bwd":
        def linear_gelu_bwd(dy, x, w, pre):
            g = aten.gelu_backward(dy, pre, approximate=appr)  # GeluBackward0
            return g.mm(w), g.t().mm(x), g.sum(0)               # AddmmBackward0: dx, dw, db
        return linear_gelu_bwd
    if c["save_aux"] and compiled:
        def linear_gelu_aux(x, w, b):
            pre = F.linear(x, w, b)
            return F.gelu(pre, approximate=appr), pre
        return linear_gelu_aux
    return lambda x, w, b: F.gelu(F.linear(x, w, b), approximate=appr)


def make_set(torch, c):
    """One buffer set: the operands of make_fn's function, uniform(-scale, scale)."""
    B, M, K, N = c["batch"], c["M"], c["K"], c["N"]
    ws = 1.0 / math.sqrt(max(K, 1))
    if c["op"].startswith("scaled_mm"):  # a, w (fp8 e4m3), scale_a, scale_b (f32)
        def fp8(shape):
            return torch.empty(shape, dtype=torch.bfloat16, device="cuda").uniform_(-4, 4).to(torch.float8_e4m3fn)
        sa_shape, sb_shape = ((M, 1), (1, N)) if c["rowwise"] else ((), ())
        return [fp8((M, K)), fp8((N, K)),
                torch.empty(sa_shape, dtype=torch.float32, device="cuda").uniform_(0.5 / 16, 1.0 / 16),
                torch.empty(sb_shape, dtype=torch.float32, device="cuda").uniform_(0.5 * ws / 4, ws / 4)]
    dt = torch_dtype(torch, c["dtype"])

    def uniform(shape, scale=1.0):
        return torch.empty(shape, dtype=dt, device="cuda").uniform_(-scale, scale)

    if c["op"] == "mm":
        return [uniform((M, K)), uniform((K, N), ws)]
    if c["op"] == "bmm":
        return [uniform((B, M, K)), uniform((B, K, N), ws)]
    if c["op"].startswith("mlp"):  # dy, x, h, pre, w1 [N, K], w2 [K, N]
        return [uniform((M, K)), uniform((M, K)), uniform((M, N)), uniform((M, N)), uniform((N, K), ws),
                uniform((K, N), 1.0 / math.sqrt(max(N, 1)))]
    if c["op"] == "grouped_linear":  # x, w, the int32 end offsets torch._grouped_mm takes
        ends = [hi for _, hi in expert_bounds()]
        return [uniform((M, K)), uniform((B, N, K), ws), torch.tensor(ends, dtype=torch.int32, device="cuda")]
    if c["dir"] == "bwd":
        return [uniform((M, N)), uniform((M, K)), uniform((N, K), ws), uniform((M, N))]  # dy, x, w, pre
    return [uniform((M, K)), uniform((N, K), ws), uniform((N,))]  # x, w, b


def expert_bounds():
    """[(first row, end row)] of every expert."""
    out, lo = [], 0
    for rows in EXPERT_ROWS:
        out.append((lo, lo + rows))
        lo += rows
    return out


def grouped_mm_case(torch, c, meta, args):
    """The grouped case through torch._grouped_mm (one kernel for every expert, sm_90 bf16): alt_us /
    alt_tflops, or alt_error where it does not exist or refuses the case."""
    try:
        gm = getattr(torch, "_grouped_mm")
        x, w, offs = make_set(torch, c)
        wt = w.transpose(1, 2)  # [E, K, N]: the weights as they are stored, read transposed

        def launch(i):
            with torch.no_grad():
                gm(x, wt, offs=offs)

        launch(0)
        us = common.time_median_ms(torch, launch, args.warmup, args.iters) * 1e3
        return dict(alt="torch._grouped_mm", alt_us=us, alt_tflops=c["flops"] / (us * 1e-6) / 1e12)
    except Exception as e:
        return dict(alt="torch._grouped_mm", alt_error="%s: %s" % (type(e).__name__, " ".join(str(e).split())[:300]))


def prepare_case(torch, c, rotate_bytes, compiled=False):
    """(sets, launch(i) timing run i)."""
    fn = make_fn(torch, c, compiled)
    if compiled:
        fn = torch.compile(fn, dynamic=False)
    nsets = max(1, min(MAX_SETS, -(-rotate_bytes // bytes_per_set(c))))
    sets = [make_set(torch, c) for _ in range(nsets)]

    def launch(i):
        with torch.no_grad():
            fn(*sets[i % nsets])

    return nsets, launch


def rotate_bytes(meta):
    return max(4 * meta["l2_bytes"], 256 << 20)


def matmul_ceiling(torch, dtype):
    """torch.matmul's TFLOP/s at 8192^3 (uniform(-1, 1) data)."""
    n = 8192
    dt = torch_dtype(torch, dtype)
    a = torch.empty((n, n), dtype=dt, device="cuda").uniform_(-1, 1)
    b = torch.empty((n, n), dtype=dt, device="cuda").uniform_(-1, 1) / math.sqrt(n)
    ms = common.time_median_ms(torch, lambda i: torch.matmul(a, b), 3, 10)
    return 2.0 * n ** 3 / (ms * 1e-3) / 1e12


def start(torch, meta):
    m = torch.backends.cuda.matmul
    meta["allow_bf16_reduced_precision_reduction"] = bool(getattr(m, "allow_bf16_reduced_precision_reduction", False))
    meta["allow_fp16_reduced_precision_reduction"] = bool(getattr(m, "allow_fp16_reduced_precision_reduction", False))
    meta["blas_library"] = str(getattr(torch.backends.cuda, "preferred_blas_library", lambda: "?")())
    for dt in DTYPES:
        meta["gemm_%s_tflops" % dt] = matmul_ceiling(torch, dt)
    torch.cuda.empty_cache()
    print("device: %s, torch %s (CUDA %s); torch.matmul 8192^3 (the ceiling): bf16 %.1f, f16 %.1f TFLOP/s; "
          "%d iters, median\n" % (meta["device"], meta["torch"], meta["cuda"], meta["gemm_bf16_tflops"],
                                  meta["gemm_f16_tflops"], meta["iters"]))
    print("%-46s %10s %9s %7s" % ("case", "time_us", "TFLOP/s", "%ceil"))


def compiled_case(torch, c, meta, args):
    """The case again through torch.compile: compiled_us / compiled_tflops, or compiled_error."""
    try:
        _, launch = prepare_case(torch, c, rotate_bytes(meta), compiled=True)
        launch(0)  # compiles, outside the timing
        us = common.time_median_ms(torch, launch, args.warmup, args.iters) * 1e3
        return dict(compiled_us=us, compiled_tflops=c["flops"] / (us * 1e-6) / 1e12)
    except Exception as e:  # no Triton, no compiler...: eager still counts
        return dict(compiled_error="%s: %s" % (type(e).__name__, " ".join(str(e).split())[:300]))


def run_case(torch, c, meta, args):
    nsets, launch = prepare_case(torch, c, rotate_bytes(meta))
    us = common.time_median_ms(torch, launch, args.warmup, args.iters) * 1e3
    tflops = c["flops"] / (us * 1e-6) / 1e12
    ceiling = meta.get("gemm_%s_tflops" % ("bf16" if c["dtype"] == "f8e4m3" else c["dtype"])) or 0
    r = dict(time_us=us, tflops=tflops, frac_ceiling=tflops / ceiling if ceiling else 0, sets=nsets)
    del launch
    torch.cuda.empty_cache()
    if c["op"].startswith("linear") or c["op"].startswith("mlp"):
        r.update(compiled_case(torch, c, meta, args))
    if c["op"] == "grouped_linear":
        r.update(grouped_mm_case(torch, c, meta, args))
        torch.cuda.empty_cache()
    return r


def row(r):
    if not r["ok"]:
        return "%-46s  ERROR %s" % (r["name"], r["error"])
    line = "%-46s %10.1f %9.1f %6.1f%%" % (r["name"], r["time_us"], r["tflops"], 100 * r["frac_ceiling"])
    if r.get("compiled_us"):
        line += "   compiled %.1f us, %.1f TFLOP/s" % (r["compiled_us"], r["compiled_tflops"])
    elif r.get("compiled_error"):
        line += "   compiled: ERROR %s" % r["compiled_error"]
    if r.get("alt_us"):
        line += "   %s %.1f us, %.1f TFLOP/s" % (r["alt"], r["alt_us"], r["alt_tflops"])
    elif r.get("alt_error"):
        line += "   %s: ERROR %s" % (r["alt"], r["alt_error"])
    return line
