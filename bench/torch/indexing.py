"""Family "indexing": PyTorch eager F.embedding and its weight gradient on the cases of baracuda_bench --family indexing.

    python3 bench/torch_bench.py --family indexing [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

Same names, byte counting and method as bench/cases/indexing.cpp, so
bench/compare.py can join the two JSON files by case name:
  * forward under no_grad: F.embedding(idx, w) with idx int64 uniform in [0, V);
  * backward: torch.autograd.grad(out, w, dout) on a graph built once per buffer
    set (retain_graph): the dense weight gradient (embedding_dense_backward);
  * bytes counted as baracuda's (what the op must move), whatever PyTorch moves;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
    warm-up, then `iters` runs each between its own pair of CUDA events, median.
  * gather.fwd.bf16.8192x50304x64: torch.gather(x [8192, 50304], 1, index [8192, 64]);
  * scatter_add.fwd.bf16.65536x4096x8192: self.scatter_add_(0, index, src) in place,
    src / index [8192, 4096], each index row one random row of self (the same
    byte counting as bench/cases/indexing.cpp).
index_select / index_add (dim 0 of a [128256, 4096] bf16 self, 8192 int64 indices):
  * torch.index_select(self, 0, idx) into a fresh output, torch.Tensor.index_add_(0, idx, src) in place on
    one shared self; bytes as baracuda's (indices + picked rows read + out written; indices + source read +
    indexed rows of self read and written).
masked ops over [8192, 4096] with a ~50 % random bool mask (torch.rand < 0.5):
  * masked_select.bf16.8192x4096: torch.masked_select(x, mask); nonzero.bool.8192x4096: torch.nonzero(mask);
    masked_scatter.bf16.8192x4096: self.masked_scatter_(mask, src) in place, src of numel 8192 x 4096;
  * bytes as baracuda's: inputs read once (x and mask / the mask / the mask and the count source elements
    used) + the result written (count elements / count x 2 int64 / count elements of self).
Advanced indexing (int64 indices uniform; bytes as bench/cases/indexing.cpp):
  * index.f32.8192x4096x4194304: x[rows, cols], x f32 [8192, 4096], rows / cols [2^22];
  * index_put_acc.f32.8192x4096x4194304: self.index_put_((rows, cols), v, accumulate=True) in place on one
    self (zeros at the start, as baracuda's);
  * index_slice.bf16.8192x4096x2048: x[:, cols], x bf16 [8192, 4096], cols [2048].
take / put_ / one_hot (int64 indices):
  * take.f32.8192x4096x4194304: torch.take(x, idx), idx [2^22] uniform in [0, N);
  * put_accumulate.f32.8192x4096x4194304: self.put_(idx, src, accumulate=True) in place on one
    shared self (zero at the start);
  * one_hot.i64.8192x32000: F.one_hot(idx, 32000) (int64 out, torch's own dtype);
  * one_hot.bf16.8192x32000: torch has no bf16 one_hot: torch.zeros(..., bf16).scatter_(1, idx[:, None], 1.0),
    the usual idiom; bytes as baracuda's (classes read, out written).
"""
from . import common

TOOL = "torch_indexing"
NOTES = ("eager F.embedding; backward = autograd.grad(out, weight, dout) on a prebuilt graph (dense gradient); "
         "torch.gather; in-place scatter_add_")
ITERS, WARMUP = 30, 5

SHAPES = [(50304, 768, 8192), (128256, 4096, 8192)]
DTYPES = ["bf16"]
DTYPE_SIZE = {"bf16": 2, "bool": 1}


def case_name(direction, dtype, shape):
    return "embedding.%s.%s.%s" % (direction, dtype, "x".join(map(str, shape)))


INDEX_SHAPES = [(128256, 4096, 8192)]


def all_cases():
    out = []
    for op in ("index_select", "index_add"):
        for dtype in DTYPES:
            for shape in INDEX_SHAPES:
                out.append(dict(name="%s.%s.%s" % (op, dtype, "x".join(map(str, shape))), op=op, dir="fwd",
                                dtype=dtype, shape=list(shape), axes=[]))
    for direction in ("fwd", "bwd"):
        for dtype in DTYPES:
            for shape in SHAPES:
                out.append(dict(name=case_name(direction, dtype, shape), op="embedding", dir=direction, dtype=dtype,
                                shape=list(shape), axes=[]))
    out.append(dict(name="gather.fwd.bf16.8192x50304x64", op="gather", dir="fwd", dtype="bf16",
                    shape=[8192, 50304, 64], axes=[]))
    out.append(dict(name="scatter_add.fwd.bf16.65536x4096x8192", op="scatter_add", dir="fwd", dtype="bf16",
                    shape=[65536, 4096, 8192], axes=[]))
    # The same torch call beside our opt-in atomic route (require_deterministic = false).
    out.append(dict(name="scatter_add_atomic.fwd.bf16.65536x4096x8192", op="scatter_add_atomic", dir="fwd",
                    dtype="bf16", shape=[65536, 4096, 8192], axes=[]))
    # The index as a broadcast view (index.expand): baracuda's "sorted.rows" path.
    out.append(dict(name="scatter_add_rows.fwd.bf16.65536x4096x8192", op="scatter_add_rows", dir="fwd",
                    dtype="bf16", shape=[65536, 4096, 8192], axes=[]))
    for name in ("masked_select.bf16.8192x4096", "nonzero.bool.8192x4096", "masked_scatter.bf16.8192x4096"):
        op = name.split(".")[0]
        out.append(dict(name=name, op=op, dir="fwd", dtype=name.split(".")[1], shape=[8192, 4096], axes=[]))
    for op, dtype, shape in ADVANCED:
        out.append(dict(name="%s.%s.%s" % (op, dtype, "x".join(map(str, shape))), op=op, dir="fwd", dtype=dtype,
                        shape=list(shape), axes=[]))
    out.append(dict(name="take.f32.8192x4096x4194304", op="take", dir="fwd", dtype="f32",
                    shape=[8192, 4096, 1 << 22], axes=[]))
    out.append(dict(name="put_accumulate.f32.8192x4096x4194304", op="put_accumulate", dir="fwd", dtype="f32",
                    shape=[8192, 4096, 1 << 22], axes=[]))
    for dtype in ("i64", "bf16"):
        out.append(dict(name="one_hot.%s.8192x32000" % dtype, op="one_hot", dir="fwd", dtype=dtype,
                        shape=[8192, 32000], axes=[]))
    return out


MASKED_OPS = ("masked_select", "nonzero", "masked_scatter")


def prepare_masked_case(torch, c, rotate_bytes):
    R, C = c["shape"]
    n = R * C
    es = 1 if c["op"] == "nonzero" else DTYPE_SIZE[c["dtype"]]
    per_set = n + (n * 16 if c["op"] == "nonzero" else 2 * n * es)
    nsets = max(1, min(16, -(-rotate_bytes // per_set)))
    sets = []
    for _ in range(nsets):
        mask = torch.rand((R, C), device="cuda") < 0.5
        if c["op"] == "nonzero":
            sets.append((mask,))
        else:
            sets.append((mask, torch.empty((R, C), dtype=torch.bfloat16, device="cuda").uniform_(-1, 1),
                         torch.empty((n,), dtype=torch.bfloat16, device="cuda").uniform_(-1, 1)))
    k = int(sets[0][0].sum().item())
    if c["op"] == "nonzero":
        counted = n + k * 16

        def launch(i):
            torch.nonzero(sets[i % nsets][0])
    elif c["op"] == "masked_select":
        counted = n * es + n + k * es

        def launch(i):
            mask, x, _ = sets[i % nsets]
            torch.masked_select(x, mask)
    else:
        counted = n + 2 * k * es

        def launch(i):
            mask, self_t, src = sets[i % nsets]
            self_t.masked_scatter_(mask, src)

    return counted, nsets, launch


ADVANCED = [("index", "f32", (8192, 4096, 1 << 22)), ("index_put_acc", "f32", (8192, 4096, 1 << 22)),
            ("index_slice", "bf16", (8192, 4096, 2048))]


def prepare_advanced(torch, c, rotate_bytes):
    dt = {"bf16": torch.bfloat16, "f32": torch.float32}[c["dtype"]]
    es = {"bf16": 2, "f32": 4}[c["dtype"]]
    M, C, n = c["shape"]
    put, slice_ = c["op"] == "index_put_acc", c["op"] == "index_slice"
    picked = M * n if slice_ else n
    n_idx = 1 if slice_ else 2
    counted = n_idx * n * 8 + (3 if put else 2) * picked * es
    per_set = n_idx * n * 8 + picked * es + (0 if put else M * C * es)
    nsets = max(1, min(16, -(-rotate_bytes // per_set)))

    def idx(size):
        return torch.randint(0, size, (n,), dtype=torch.int64, device="cuda")

    sets = []
    if put:
        self_t = torch.zeros((M, C), dtype=dt, device="cuda")
        for _ in range(nsets):
            sets.append((idx(M), idx(C), torch.empty((n,), dtype=dt, device="cuda").uniform_(-1, 1)))

        def launch(i):
            rows, cols, v = sets[i % nsets]
            self_t.index_put_((rows, cols), v, accumulate=True)
    else:
        for _ in range(nsets):
            sets.append((torch.empty((M, C), dtype=dt, device="cuda").uniform_(-1, 1), None if slice_ else idx(M),
                         idx(C)))

        def launch(i):
            x, rows, cols = sets[i % nsets]
            if slice_:
                x[:, cols]
            else:
                x[rows, cols]

    return counted, nsets, launch


def prepare_take_put_one_hot(torch, c, rotate_bytes):
    dt = {"bf16": torch.bfloat16, "f32": torch.float32, "i64": torch.int64}[c["dtype"]]
    es = {"bf16": 2, "f32": 4, "i64": 8}[c["dtype"]]
    sets = []
    if c["op"] == "one_hot":
        rows, C = c["shape"]
        counted = rows * 8 + rows * C * es
        nsets = max(1, min(16, -(-rotate_bytes // counted)))
        for _ in range(nsets):
            sets.append(torch.randint(0, C, (rows,), dtype=torch.int64, device="cuda"))

        def launch(i):
            idx = sets[i % nsets]
            if dt == torch.int64:
                torch.nn.functional.one_hot(idx, C)
            else:
                torch.zeros((rows, C), dtype=dt, device="cuda").scatter_(1, idx[:, None], 1.0)

        return counted, nsets, launch
    R, Cc, n = c["shape"]
    N = R * Cc
    put = c["op"] == "put_accumulate"
    counted = n * 8 + (3 if put else 2) * n * es
    per_set = n * 8 + n * es + (0 if put else N * es)
    nsets = max(1, min(16, -(-rotate_bytes // per_set)))
    if put:
        self_t = torch.zeros((R, Cc), dtype=dt, device="cuda")
        for _ in range(nsets):
            sets.append((torch.randint(0, N, (n,), dtype=torch.int64, device="cuda"),
                         torch.empty((n,), dtype=dt, device="cuda").uniform_(-1, 1)))

        def launch(i):
            idx, src = sets[i % nsets]
            self_t.put_(idx, src, accumulate=True)
    else:
        for _ in range(nsets):
            sets.append((torch.empty((R, Cc), dtype=dt, device="cuda").uniform_(-1, 1),
                         torch.randint(0, N, (n,), dtype=torch.int64, device="cuda")))

        def launch(i):
            x, idx = sets[i % nsets]
            torch.take(x, idx)

    return counted, nsets, launch


def prepare_gather_scatter(torch, c, rotate_bytes):
    dt = {"bf16": torch.bfloat16}[c["dtype"]]
    es = DTYPE_SIZE[c["dtype"]]
    sets = []
    if c["op"] == "gather":
        R, C, K = c["shape"]
        n = R * K
        counted = n * 8 + 2 * n * es
        per_set = R * C * es + n * 8 + n * es
        nsets = max(1, min(16, -(-rotate_bytes // per_set)))
        for _ in range(nsets):
            x = torch.empty((R, C), dtype=dt, device="cuda").uniform_(-1, 1)
            sets.append((x, torch.randint(0, C, (R, K), dtype=torch.int64, device="cuda")))

        def launch(i):
            x, idx = sets[i % nsets]
            torch.gather(x, 1, idx)
    else:
        M, C, N = c["shape"]
        n = N * C
        bcast = c["op"] == "scatter_add_rows"  # the index stays a stride-0 view
        counted = (N if bcast else n) * 8 + 3 * n * es
        per_set = (N if bcast else n) * 8 + n * es
        nsets = max(1, min(16, -(-rotate_bytes // per_set)))
        self_t = torch.empty((M, C), dtype=dt, device="cuda").uniform_(-1, 1)
        for _ in range(nsets):
            rows = torch.randint(0, M, (N, 1), dtype=torch.int64, device="cuda").expand(N, C)
            if not bcast:
                rows = rows.contiguous()
            sets.append((rows, torch.empty((N, C), dtype=dt, device="cuda").uniform_(-1, 1)))

        def launch(i):
            idx, src = sets[i % nsets]
            self_t.scatter_add_(0, idx, src)

    return counted, nsets, launch


def counted_bytes(c):
    V, D, T = c["shape"]
    if c["op"] in ("index_select", "index_add"):
        rows = T * D * DTYPE_SIZE[c["dtype"]]
        return T * 8 + (3 if c["op"] == "index_add" else 2) * rows
    es = DTYPE_SIZE[c["dtype"]]
    rows = T * D * es
    return T * 8 + rows + V * D * es if c["dir"] == "bwd" else T * 8 + 2 * rows


def prepare_index_case(torch, c, rotate_bytes):
    dt = {"bf16": torch.bfloat16}[c["dtype"]]
    S, D, T = c["shape"]
    es = DTYPE_SIZE[c["dtype"]]
    add = c["op"] == "index_add"
    counted = counted_bytes(c)
    per_set = T * 8 + T * D * es + (0 if add else S * D * es)
    nsets = max(1, min(16, -(-rotate_bytes // per_set)))

    def indices():
        return torch.randint(0, S, (T,), dtype=torch.int64, device="cuda")

    sets = []
    if add:
        self_t = torch.empty((S, D), dtype=dt, device="cuda").uniform_(-1, 1)
        for _ in range(nsets):
            sets.append((indices(), torch.empty((T, D), dtype=dt, device="cuda").uniform_(-1, 1)))

        def launch(i):
            idx, src = sets[i % nsets]
            self_t.index_add_(0, idx, src)
    else:
        for _ in range(nsets):
            sets.append((indices(), torch.empty((S, D), dtype=dt, device="cuda").uniform_(-1, 1)))

        def launch(i):
            idx, x = sets[i % nsets]
            torch.index_select(x, 0, idx)

    return counted, nsets, launch


def prepare_case(torch, c, rotate_bytes):
    if c["op"] in MASKED_OPS:
        return prepare_masked_case(torch, c, rotate_bytes)
    if c["op"] in ("index", "index_put_acc", "index_slice"):
        return prepare_advanced(torch, c, rotate_bytes)
    if c["op"] in ("index_select", "index_add"):
        return prepare_index_case(torch, c, rotate_bytes)
    if c["op"] in ("take", "put_accumulate", "one_hot"):
        return prepare_take_put_one_hot(torch, c, rotate_bytes)
    if c["op"] != "embedding":
        return prepare_gather_scatter(torch, c, rotate_bytes)
    F = torch.nn.functional
    dt = {"bf16": torch.bfloat16}[c["dtype"]]
    V, D, T = c["shape"]
    es = DTYPE_SIZE[c["dtype"]]
    bwd = c["dir"] == "bwd"
    counted = counted_bytes(c)
    per_set = T * 8 + T * D * es + (0 if bwd else V * D * es)
    nsets = max(1, min(16, -(-rotate_bytes // per_set)))

    def indices():
        return torch.randint(0, V, (T,), dtype=torch.int64, device="cuda")

    sets = []
    if bwd:
        w = torch.empty((V, D), dtype=dt, device="cuda").uniform_(-1, 1).requires_grad_()
        for _ in range(nsets):
            out = F.embedding(indices(), w)
            dout = torch.empty((T, D), dtype=dt, device="cuda").uniform_(-1, 1)
            sets.append((out, w, dout))

        def launch(i):
            out, weight, dout = sets[i % nsets]
            torch.autograd.grad(out, weight, dout, retain_graph=True)
    else:
        for _ in range(nsets):
            sets.append((indices(), torch.empty((V, D), dtype=dt, device="cuda").uniform_(-1, 1)))

        def launch(i):
            idx, weight = sets[i % nsets]
            with torch.no_grad():
                F.embedding(idx, weight)

    return counted, nsets, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    return common.bandwidth_case(torch, prepare_case, c, meta, args)
