"""Family "attention_paged": the PyTorch baseline for baracuda_bench --family attention_paged.

    python3 bench/torch_bench.py --family attention_paged [--json PATH] [--filter SUBSTR] [--iters N] [--warmup N] [--list]

PyTorch has no paged KV cache, so the baseline is what a dense cache costs:
F.scaled_dot_product_attention(q [B, Hq, Lq, D], k / v [B, Hkv, ctx, D],
enable_gqa=True) on contiguous DENSE K / V (the same bytes without a block
table). Lq = 1: no mask. Lq = 4: bottom-right causal (query i sees keys
0 .. ctx - Lq + i), passed as torch.nn.attention.bias.causal_lower_right when
this PyTorch has it, else as a boolean mask [Lq, ctx].
Same names and byte counting as bench/cases/attention_paged.cpp (the K and V
bytes read: B * ctx * Hkv * D * 2 * 2), so bench/compare.py joins the files:
  * each case: warm-up, then `iters` runs each between its own pair of CUDA
    events, median; timed runs queued behind torch.cuda._sleep;
  * one buffer set (K + V are 1 GiB, far beyond L2); under torch.no_grad().
"""
from . import common

TOOL = "torch_attention_paged"
NOTES = "SDPA (enable_gqa) on the equivalent dense KV; bytes = K + V read"
ITERS, WARMUP = 30, 5

# (B, ctx, Hq, Hkv, D, page, Lq), the order of cases/attention_paged.cpp
SHAPES = [(64, 4096, 32, 8, 128, 16, 1), (64, 4096, 32, 8, 128, 16, 4),
          (8, 32768, 32, 8, 128, 16, 1), (8, 32768, 32, 8, 128, 16, 4)]
DTYPE_SIZE = {"f32": 4, "bf16": 2, "f16": 2}


def case_name(s, dtype):
    B, ctx, Hq, Hkv, D, P, Lq = s
    return "paged.q%d.%s.%s.p%d" % (Lq, dtype, "x".join(map(str, (B, ctx, Hq, Hkv, D))), P)


def all_cases():
    out = []
    for s in SHAPES:
        out.append(dict(name=case_name(s, "bf16"), op="paged", dir="fwd", dtype="bf16", shape=list(s[:5]), axes=[],
                        page=s[5], q_len=s[6]))
    return out


def counted_bytes(c):
    B, ctx, _, Hkv, D = c["shape"]
    return 2 * B * ctx * Hkv * D * DTYPE_SIZE[c["dtype"]]


def prepare_case(torch, c, rotate_bytes):
    import torch.nn.functional as F
    dt = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}[c["dtype"]]
    B, ctx, Hq, Hkv, D = c["shape"]
    Lq = c["q_len"]
    q = torch.empty((B, Hq, Lq, D), dtype=dt, device="cuda").uniform_(-1.0, 1.0)
    k = torch.empty((B, Hkv, ctx, D), dtype=dt, device="cuda").uniform_(-1.0, 1.0)
    v = torch.empty((B, Hkv, ctx, D), dtype=dt, device="cuda").uniform_(-1.0, 1.0)
    mask = None
    if Lq > 1:
        try:
            from torch.nn.attention.bias import causal_lower_right
            mask = causal_lower_right(Lq, ctx)
        except ImportError:
            i = torch.arange(Lq, device="cuda")[:, None]
            j = torch.arange(ctx, device="cuda")[None, :]
            mask = j <= (ctx - Lq + i)

    def launch(i):
        with torch.no_grad():
            F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)

    return counted_bytes(c), 1, launch


start = common.bandwidth_start
row = common.bandwidth_row


def run_case(torch, c, meta, args):
    return common.bandwidth_case(torch, prepare_case, c, meta, args)
