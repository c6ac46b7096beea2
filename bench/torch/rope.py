"""Family "rope": PyTorch's eager RoPE on the cases of baracuda_bench --family rope.

    python3 bench/torch_bench.py --family rope [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

RoPE written the usual eager way (Hugging Face's apply_rotary_pos_emb):
    q_embed = q * cos + rotate_half(q) * sin,   rotate_half(x) = cat(-x2, x1)
with cos / sin [B, 1, S, D] in the input dtype, built once from position_ids
[B, S] OUTSIDE the timed region (HF builds them once per model forward), so
"rope" and "rope_cache" run the same PyTorch code (baracuda computes cos/sin in
the kernel for "rope" and reads an f32 [S, D/2] table for "rope_cache").
"rope_interleaved": pairs (2i, 2i+1), cos / sin [B, 1, S, D/2]:
    stack((x1 cos - x2 sin, x1 sin + x2 cos), -1).flatten(-2), x1 = x[..., 0::2].
Same names, byte counting and method as bench/cases/rope.cpp, so
bench/compare.py can join the two JSON files by case name:
  * each case: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; the timed runs are queued behind torch.cuda._sleep;
  * rotation among independent buffer sets touching >= max(4 x L2, 256 MiB);
  * forward under torch.no_grad(); backward = torch.autograd.grad((q_out, k_out),
    (q, k), (dy_q, dy_k), retain_graph=True) on a graph built once per set;
  * bytes counted as baracuda's: q, k read + two outputs written + positions
    (+ the f32 cos/sin table for rope_cache), whatever PyTorch itself moves.
"""
from . import common

TOOL = "torch_rope"
NOTES = "eager HF-style RoPE; cos/sin built outside the timing; bytes counted as baracuda's"
ITERS, WARMUP = 30, 5

OPS = ["rope", "rope_cache", "rope_interleaved"]
SHAPE = (4, 32, 4096, 128)  # B, H (= Hk), S, D
DTYPES = ["bf16"]
DTYPE_SIZE = {"f32": 4, "bf16": 2, "f16": 2}
THETA = 10000.0


def case_name(op, direction, dtype, shape):
    return "%s.%s.%s.%s" % (op, direction, dtype, "x".join(map(str, shape)))


def all_cases():
    # Same order as cases/rope.cpp.
    out = []
    for op in OPS:
        for direction in ("fwd", "bwd"):
            for dtype in DTYPES:
                out.append(dict(name=case_name(op, direction, dtype, SHAPE), op=op, dir=direction, dtype=dtype,
                                shape=list(SHAPE), axes=[]))
    return out


def counted_bytes(c):
    B, H, S, D = c["shape"]
    t = B * H * S * D * DTYPE_SIZE[c["dtype"]]
    extra = B * S * 8  # positions, int64
    if c["op"] == "rope_cache":
        extra += 2 * S * (D // 2) * 4
    return 4 * t + extra


def rotate_half(torch, x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def make_fn(torch, op):
    if op == "rope_interleaved":
        def one(x, cos, sin):
            x1, x2 = x[..., 0::2], x[..., 1::2]
            return torch.stack((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1).flatten(-2)
    else:
        def one(x, cos, sin):
            return x * cos + rotate_half(torch, x) * sin
    return lambda q, k, cos, sin: (one(q, cos, sin), one(k, cos, sin))


def cos_sin(torch, op, shape, dt):
    """cos / sin as Hugging Face builds them from position_ids (outside the timing)."""
    B, _, S, D = shape
    inv_freq = 1.0 / (THETA ** (torch.arange(0, D, 2, dtype=torch.int64, device="cuda").float() / D))
    position_ids = torch.arange(S, device="cuda").expand(B, S)
    freqs = position_ids[:, :, None].float() * inv_freq[None, None, :]  # [B, S, D/2]
    emb = freqs if op == "rope_interleaved" else torch.cat((freqs, freqs), dim=-1)
    return emb.cos().to(dt)[:, None], emb.sin().to(dt)[:, None]  # [B, 1, S, D or D/2]


def prepare_case(torch, c, rotate_bytes):
    """The case's buffers: (bytes counted, sets, launch(i) timing run i)."""
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[c["dtype"]]
    fn = make_fn(torch, c["op"])
    cos, sin = cos_sin(torch, c["op"], c["shape"], dt)
    counted = counted_bytes(c)
    nsets = max(1, min(16, -(-rotate_bytes // counted)))

    def rand():
        return torch.empty(c["shape"], dtype=dt, device="cuda").uniform_(-1.0, 1.0)

    if c["dir"] == "fwd":
        qs = [(rand(), rand()) for _ in range(nsets)]

        def launch(i):
            q, k = qs[i % nsets]
            with torch.no_grad():
                fn(q, k, cos, sin)
    else:
        ins = [(rand().requires_grad_(), rand().requires_grad_()) for _ in range(nsets)]
        outs = [fn(q, k, cos, sin) for q, k in ins]
        dys = [(rand(), rand()) for _ in range(nsets)]

        def launch(i):
            j = i % nsets
            torch.autograd.grad(outs[j], ins[j], dys[j], retain_graph=True)

    return counted, nsets, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    return common.bandwidth_case(torch, prepare_case, c, meta, args)
