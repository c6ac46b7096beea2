"""The C++ fast paths of the functional layer (python/src/fast.cpp): the
calls they take, the ones they hand back to the general path, and their plan
cache's correctness when shapes, dtypes, strides, options and operand kinds
change between calls."""
import numpy as np
import pytest

import baracuda as bc
from baracuda import _C
from conftest import HAVE_TORCH, np_of

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")


def close(a, b, rtol=1e-6, atol=1e-6):
    np.testing.assert_allclose(np_of(a) if not isinstance(a, np.ndarray) else a, b, rtol=rtol, atol=atol)


def test_fast_paths_taken_for_numpy_arrays_and_scalars(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    ba = bc.add(a, 0.0)
    assert _C._fast_binary("add", a, a, None, None, None) is not None
    assert _C._fast_binary("add", ba, 2, None, None, None) is not None
    assert _C._fast_binary("mul", 1.5, ba, None, None, None) is not None
    assert _C._fast_unary("exp", a, None, None, None) is not None
    assert _C._fast_reduce("sum", a, None, False, 1, None, None) is not None
    assert _C._fast_softmax(a, -1, False, 1.0, None, None) is not None


def test_fast_paths_hand_back_what_they_do_not_take(rng):
    a = rng.standard_normal(4).astype(np.float32)
    # NumPy scalars, two scalars, None, a non-tensor, an unknown op, a dim that is not an int / tuple / list,
    # a huge Python int: the general path takes them (and reports their errors).
    assert _C._fast_binary("add", a, np.float32(2), None, None, None) is None
    assert _C._fast_binary("add", 1, 2, None, None, None) is None
    assert _C._fast_binary("add", a, None, None, None, None) is None
    assert _C._fast_binary("add", a, "x", None, None, None) is None
    assert _C._fast_binary("no_such_op", a, a, None, None, None) is None
    assert _C._fast_binary("add", a, 2 ** 80, None, None, None) is None
    assert _C._fast_reduce("sum", a, np.int64(0), False, 1, None, None) is None
    assert _C._fast_softmax(a, 0.5, False, 1.0, None, None) is None
    # ... and the functional layer still answers them as before
    close(bc.add(a, np.float32(2)), a + np.float32(2))
    close(bc.sum(a, dim=np.int64(0)), a.sum(0), rtol=1e-5)
    with pytest.raises(TypeError):
        bc.add(1, 2)
    with pytest.raises(TypeError):
        bc.add(a, None)


def test_binary_cache_follows_shapes_dtypes_strides_and_scalars(rng):
    bc.clear_plan_cache()
    assert bc.plan_cache_size() == 0
    a = rng.standard_normal((4, 6)).astype(np.float32)
    b = rng.standard_normal((4, 6)).astype(np.float32)
    close(bc.add(a, b), a + b)
    n1 = bc.plan_cache_size()
    assert n1 == 1
    close(bc.add(a, b), a + b)  # a hit
    assert bc.plan_cache_size() == n1
    # strides are not part of the key: a transposed / sliced view of the same shape reuses the plan
    at = np.ascontiguousarray(a.T).T  # Fortran-ordered, same shape
    close(bc.add(at, b), a + b)
    big = rng.standard_normal((8, 12)).astype(np.float32)
    close(bc.add(big[::2, 1::2], b), big[::2, 1::2] + b)
    assert bc.plan_cache_size() == n1
    # another shape (broadcast), another dtype, a scalar of each kind, alpha: new plans, right results
    close(bc.add(a, b[:1]), a + b[:1])
    close(bc.add(a.astype(np.float64), b.astype(np.float64)), a.astype(np.float64) + b, rtol=1e-12)
    ai = rng.integers(-5, 5, (4, 6)).astype(np.int32)
    close(bc.add(ai, 3), ai + 3)
    y = bc.add(ai, 0.5)
    assert y.dtype == "float32"  # int tensor + float scalar: float32 (torch's promotion)
    close(y, ai + np.float32(0.5))
    close(bc.add(ai, True), ai + 1)
    close(bc.sub(a, b, alpha=2), a - 2 * b, rtol=1e-5)
    close(bc.sub(a, b, alpha=3), a - 3 * b, rtol=1e-5)  # alpha is in the key: not the alpha=2 plan
    close(bc.sub(a, b), a - b)
    close(bc.mul(2.0, a), 2 * a)
    close(bc.mul(a, 2.0), 2 * a)
    assert bc.plan_cache_size() > n1
    bc.clear_plan_cache()
    assert bc.plan_cache_size() == 0
    close(bc.add(a, b), a + b)


def test_binary_out_and_errors(rng):
    a = rng.standard_normal((3, 5)).astype(np.float32)
    out = np.empty_like(a)
    r = bc.add(a, a, out=out)
    assert r is out
    close(out, 2 * a)
    ro = np.empty_like(a)
    ro.setflags(write=False)
    with pytest.raises(bc.InvalidProblemError, match="read-only"):
        bc.add(a, a, out=ro)
    with pytest.raises(bc.Error, match="^BinaryPlan"):
        bc.add(a, a, out=np.empty((3, 4), np.float32))
    with pytest.raises(bc.Error):
        bc.add(a, rng.standard_normal((4, 5)).astype(np.float32))  # shapes do not broadcast
    with pytest.raises(bc.Error, match="stream"):
        bc.add(a, a, stream=bc.Stream.cuda(0, 0))


def test_unary_cache_follows_out_dtype_and_shape(rng):
    x = rng.uniform(0.5, 2, (5, 3)).astype(np.float32)
    close(bc.exp(x), np.exp(x), rtol=1e-6)
    close(bc.log(x), np.log(x), rtol=1e-6)
    y = bc.to(x, "float64")
    assert y.dtype == "float64"
    y = bc.to(x, "float16")  # same input, another out_dtype: another plan
    assert y.dtype == "float16"
    close(y, x.astype(np.float16).astype(np.float32), rtol=1e-3)
    close(bc.exp(x[:, :2]), np.exp(x[:, :2]), rtol=1e-6)
    close(bc.exp(x.T), np.exp(x.T), rtol=1e-6)
    assert bc.exp(np.empty((0, 3), np.float32)).shape == (0, 3)
    out = np.empty_like(x)
    assert bc.sqrt(x, out=out) is out
    close(out, np.sqrt(x), rtol=1e-6)
    close(bc.gelu(x, approximate="tanh"), np_of(bc.gelu(x, "tanh")))


def test_reduce_cache_follows_axes_keepdim_and_correction(rng):
    x = rng.standard_normal((4, 5, 6)).astype(np.float64)
    close(bc.sum(x), x.sum(), rtol=1e-12)
    close(bc.sum(x, 0), x.sum(0), rtol=1e-12)
    close(bc.sum(x, 1), x.sum(1), rtol=1e-12)  # same shape, other axes
    close(bc.sum(x, -1), x.sum(-1), rtol=1e-12)
    close(bc.sum(x, (0, 2)), x.sum((0, 2)), rtol=1e-12)
    close(bc.sum(x, [2, 0]), x.sum((0, 2)), rtol=1e-12)
    assert bc.sum(x, 1, keepdim=True).shape == (4, 1, 6)
    assert bc.sum(x, 1).shape == (4, 6)
    close(bc.var(x, 1), x.var(1, ddof=1), rtol=1e-12)
    close(bc.var(x, 1, correction=0), x.var(1), rtol=1e-12)  # correction is in the key
    close(bc.amax(x), x.max())
    close(bc.mean(x[:, ::2, 1:]), x[:, ::2, 1:].mean(), rtol=1e-12)
    xi = rng.integers(0, 4, (3, 4)).astype(np.int32)
    s = bc.sum(xi, 1)
    assert s.dtype == "int64"
    close(s, xi.sum(1))
    y = bc.sum(x, 1, dtype="float32")  # dtype= converts first (the unary fast path), then reduces
    assert y.dtype == "float32"
    close(y, x.sum(1), rtol=1e-5)
    out = np.empty((4, 6), np.float64)
    assert bc.sum(x, 1, out=out) is out
    close(out, x.sum(1), rtol=1e-12)
    assert bc.sum(np.empty((0, 3), np.float32), 0).shape == (3,)
    with pytest.raises(bc.Error, match="^ReducePlan"):
        bc.sum(x, 5)


def test_softmax_cache_follows_dim_log_and_scale(rng):
    x = rng.standard_normal((3, 4, 5)).astype(np.float64)

    def ref(x, dim, scale=1.0, log=False):
        z = scale * x
        e = np.exp(z - z.max(dim, keepdims=True))
        p = e / e.sum(dim, keepdims=True)
        return np.log(p) if log else p

    close(bc.softmax(x, -1), ref(x, -1), rtol=1e-12)
    close(bc.softmax(x, 1), ref(x, 1), rtol=1e-12)
    close(bc.softmax(x, 1, scale=0.5), ref(x, 1, 0.5), rtol=1e-12)
    close(bc.log_softmax(x, 1, scale=0.5), ref(x, 1, 0.5, True), rtol=1e-12)
    close(bc.softmax(x.astype(np.float32), 0), ref(x, 0), rtol=1e-5)
    close(bc.softmax(x.transpose(2, 0, 1), -1), ref(x.transpose(2, 0, 1), -1), rtol=1e-12)
    out = np.empty_like(x)
    assert bc.softmax(x, out=out) is out
    close(out, ref(x, -1), rtol=1e-12)


@needs_torch
def test_torch_cpu_metadata_path(rng):
    import torch
    t = torch.from_numpy(rng.standard_normal((6, 8)).astype(np.float32))
    u = torch.from_numpy(rng.standard_normal((6, 8)).astype(np.float32))
    assert _C._fast_binary("add", t, u, None, None, None) is not None
    close(bc.add(t, u), (t + u).numpy())
    # views: storage offset, transposed, strided slice, broadcast (stride 0), 0-d, zero-size
    close(bc.add(t[2:], u[2:]), (t[2:] + u[2:]).numpy())
    close(bc.add(t.T, u.T), (t.T + u.T).numpy())
    close(bc.mul(t[:, ::3], 2), (t[:, ::3] * 2).numpy())
    close(bc.add(t[:1].expand(6, 8), u), (t[:1].expand(6, 8) + u).numpy())
    close(bc.add(t, torch.tensor(2.5)), (t + 2.5).numpy())
    assert bc.add(t[:0], u[:0]).shape == (0, 8)
    # dtypes torch names: bf16, bool, int64
    tb = t.to(torch.bfloat16)
    y = torch.from_dlpack(bc.add(tb, tb))
    assert y.dtype == torch.bfloat16 and torch.equal(y, tb + tb)
    m = t > 0
    assert torch.equal(torch.from_dlpack(bc.logical_not(m) if hasattr(bc, "logical_not") else bc.to(m, "int32")),
                       m.to(torch.int32))
    ti = torch.arange(12).reshape(3, 4)
    assert torch.equal(torch.from_dlpack(bc.sum(ti, 1)), ti.sum(1))
    # out= a torch tensor: written in place, returned as is
    o = torch.empty(6, 8)
    assert bc.add(t, u, out=o) is o
    assert torch.allclose(o, t + u)
    o2 = torch.empty(6, 8)
    assert bc.softmax(t, 1, out=o2) is o2
    assert torch.allclose(o2, torch.softmax(t, 1), atol=1e-6)
    close(bc.sum(t, (0, 1)), t.sum().numpy(), rtol=1e-5)
    close(bc.exp(t), t.exp().numpy(), rtol=1e-6)
    # zero-copy: the output aliases torch memory
    assert o.data_ptr() == bc.add(t, u, out=o).data_ptr()


@needs_torch
def test_torch_tensors_the_fast_path_hands_to_dlpack(rng):
    import torch
    t = torch.randn(4, 5)
    # requires grad: torch's own __dlpack__ refuses it (as before): RuntimeError
    # up to torch 2.5, BufferError in newer releases
    with pytest.raises((RuntimeError, BufferError)):
        bc.add(t.requires_grad_(True), 1.0)
    t = t.detach()
    # a subclass (nn.Parameter without grad), complex dtypes, a mix with NumPy: still right
    p = torch.nn.Parameter(t.clone(), requires_grad=False)
    close(bc.add(p, t), (t + t).numpy())
    c = torch.randn(3, dtype=torch.complex64)
    with pytest.raises(bc.UnsupportedError, match="^BinaryPlan"):  # imported through DLPack; the plan refuses c64
        bc.add(c, c)
    close(bc.add(t, t.numpy()), (2 * t).numpy())


def test_numpy_buffer_path_dtypes_and_odd_layouts(rng):
    for dt in (np.float16, np.float32, np.float64, np.int8, np.uint8, np.int16, np.int32, np.int64):
        x = (rng.standard_normal((3, 4)) * 4).astype(dt)
        close(bc.neg(x), np.negative(x).astype(np.float64), rtol=1e-3)  # integers wrap, as NumPy / torch
        assert bc.neg(x).dtype == np.dtype(dt).name
    m = rng.standard_normal(5) > 0
    close(bc.to(m, "int32"), m.astype(np.int32))
    ro = rng.standard_normal(4).astype(np.float32)
    ro.setflags(write=False)
    close(bc.add(ro, 1.0), ro + 1)  # a read-only input is fine
    # big-endian, strides that are not whole elements, negative strides: the DLPack path reports them
    be = np.arange(4, dtype=">f4")
    with pytest.raises(Exception):
        bc.add(be, 1.0)
    rec = np.zeros(4, dtype=[("a", "<f4"), ("b", "u1")])["a"]
    with pytest.raises(Exception):
        bc.add(rec, 1.0)
    with pytest.raises(bc.UnsupportedError, match="negative strides"):
        bc.add(np.arange(4, dtype=np.float32)[::-1], 1.0)
    one = np.arange(1, dtype=np.float32)[::-1]  # a negative stride on an extent of 1 is never used
    close(bc.add(one, 1.0), one + 1)
    close(bc.add(np.array(3, np.float32), 1.0), np.float32(4))  # 0-d


def _cuda_ok():
    if not HAVE_TORCH:
        return False
    import torch
    return torch.cuda.is_available() and bc.WITH_CUDA and bc.cuda_available()


needs_cuda = pytest.mark.skipif(not _cuda_ok(), reason="needs a GPU, torch with CUDA and baracuda built with CUDA")


@needs_cuda
def test_cuda_fast_paths_and_cache_across_devices():
    import torch
    x = torch.randn(64, 33, device="cuda")
    assert _C._fast_binary("add", x, x, None, None, None) is not None  # torch CUDA tensors: the metadata path
    for dev in ("cuda", "cpu", "cuda"):  # the same problem on two devices: two plans, each right
        t = x.to(dev)
        torch.testing.assert_close(torch.from_dlpack(bc.add(t, 1.5)), t + 1.5)
        torch.testing.assert_close(torch.from_dlpack(bc.sum(t, 1)), t.sum(1), rtol=1e-5, atol=1e-5)
        torch.testing.assert_close(torch.from_dlpack(bc.softmax(t, -1)), torch.softmax(t, -1), rtol=1e-5, atol=1e-6)
        torch.testing.assert_close(torch.from_dlpack(bc.exp(t)), t.exp())
    # views and out= on CUDA
    torch.testing.assert_close(torch.from_dlpack(bc.mul(x.T, x.T)), x.T * x.T)
    torch.testing.assert_close(torch.from_dlpack(bc.add(x[1:, 2:], 1)), x[1:, 2:] + 1)
    o = torch.empty_like(x)
    assert bc.add(x, x, out=o) is o
    torch.testing.assert_close(o, 2 * x)
    with pytest.raises(bc.InvalidProblemError, match="different devices"):
        bc.add(x, x.cpu())


@needs_cuda
def test_cuda_fast_path_streams():
    import torch
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    with torch.cuda.stream(s1):
        x = torch.randn(1 << 22, device="cuda")
        y = bc.add(x, 1.0)  # torch's current stream
        assert y.stream.handle == s1.cuda_stream
    with torch.cuda.stream(s1):
        big = torch.randn(1 << 24, device="cuda")
        for _ in range(20):  # keep s1 busy, then hand the tensor to a call on s2: not torch's current
            big = big * 1.0001  # stream, so the import goes through __dlpack__(stream=s2), which orders s2 after s1
        z = bc.add(big, 1.0, stream=s2)
    assert z.stream.handle == s2.cuda_stream
    s2.synchronize()
    ref = big + 1.0
    torch.cuda.synchronize()
    torch.testing.assert_close(torch.from_dlpack(z), ref)
    o = torch.empty_like(x)
    with torch.cuda.stream(s2):  # out= a torch tensor, written on s2
        bc.mul(x, 2.0, out=o, stream=s2)
    torch.cuda.synchronize()
    torch.testing.assert_close(o, 2 * x)


def test_threads_and_cache_clears(rng):
    """Calls run without the GIL; another thread emptying the cache meanwhile
    must not pull a plan from under a running call."""
    import threading
    xs = [rng.standard_normal((k, 300)).astype(np.float32) for k in range(1, 9)]
    errors = []

    def work():
        try:
            for i in range(300):
                x = xs[i % len(xs)]
                np.testing.assert_allclose(np_of(bc.add(x, x)), 2 * x, rtol=1e-6)
                np.testing.assert_allclose(np_of(bc.sum(x, 1)), x.sum(1), rtol=1e-4, atol=1e-4)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    def clear():
        for _ in range(300):
            bc.clear_plan_cache()

    ts = [threading.Thread(target=work) for _ in range(3)] + [threading.Thread(target=clear)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors[0]


def test_plan_layer_and_prepare_use_the_fast_imports(rng):
    from baracuda import plans as P
    x = rng.standard_normal((4, 6)).astype(np.float32)
    plan = P.ReducePlan.select(P.ReduceDescriptor(kind="sum", dtype="float32", shape=(6, 4), axes=(1,)))
    y = np.empty(6, np.float32)
    plan.run(x=x.T, y=y)  # a transposed NumPy view through the buffer protocol
    close(y, x.T.sum(1), rtol=1e-5)
    ro = np.empty(6, np.float32)
    ro.setflags(write=False)
    with pytest.raises(bc.InvalidProblemError, match="^ReducePlan.run: y: the tensor is read-only"):
        plan.run(x=x.T, y=ro)
    s, (v, none) = _C.prepare((x[1:], None))
    assert none is None and v.shape == (3, 6) and v.data_ptr == x[1:].__array_interface__["data"][0]
    if HAVE_TORCH:
        import torch
        t = torch.from_numpy(x)
        yt = torch.empty(6)
        plan.run(x=t.T, y=yt)
        assert torch.allclose(yt, t.T.sum(1), atol=1e-5)
        s, (v,) = _C.prepare((t[1:, 2:],))
        assert v.data_ptr == t[1:, 2:].data_ptr() and v.strides == (6, 1)
        with pytest.raises(TypeError):
            _C.prepare((t, "x"))


@needs_torch
def test_torch_lazy_bits_take_the_dlpack_path():
    import torch
    z = torch.randn(3, dtype=torch.complex64)
    v = z.conj().imag  # a float32 view with torch's negative bit set
    assert v.is_neg()
    # the fast read leaves it to torch's __dlpack__ (whatever torch exports for it), same as before
    assert np.array_equal(np_of(bc.add(v, 0.0)), np_of(bc.add(torch.from_dlpack(v.__dlpack__()), 0.0)))
    f8 = torch.zeros(2, dtype=torch.float8_e4m3fn)
    with pytest.raises(Exception):  # torch 2.5's __dlpack__ refuses float8 on every path
        bc.add(f8, f8)


def _ln_ref(x, k, w=None, b=None, eps=1e-5, rms=False):
    axes = tuple(range(x.ndim - k, x.ndim))
    if rms:
        y = x / np.sqrt((x * x).mean(axes, keepdims=True) + eps)
    else:
        mu = x.mean(axes, keepdims=True)
        y = (x - mu) / np.sqrt(((x - mu) ** 2).mean(axes, keepdims=True) + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


def test_norm_fast_path_and_cache(rng):
    x = rng.standard_normal((3, 4, 8))
    w = rng.standard_normal(8)
    b = rng.standard_normal(8)
    w2 = rng.standard_normal((4, 8))
    assert _C._fast_norm("layer_norm", x, 8, w, b, 1e-5, False, None, None) is not None
    close(bc.layer_norm(x, 8, w, b), _ln_ref(x, 1, w, b), rtol=1e-10)
    close(bc.layer_norm(x, (8,), w), _ln_ref(x, 1, w), rtol=1e-10)  # no bias: another plan
    close(bc.layer_norm(x, [8]), _ln_ref(x, 1), rtol=1e-10)
    close(bc.layer_norm(x, (4, 8), w2), _ln_ref(x, 2, w2), rtol=1e-10)  # k = 2
    close(bc.layer_norm(x, 8, w, b, eps=0.5), _ln_ref(x, 1, w, b, eps=0.5), rtol=1e-10)  # eps in the key
    close(bc.rms_norm(x, 8, w), _ln_ref(x, 1, w, eps=2.220446049250313e-16, rms=True), rtol=1e-10)  # finfo eps
    close(bc.rms_norm(x, 8, w, eps=0.25), _ln_ref(x, 1, w, eps=0.25, rms=True), rtol=1e-10)
    xf = x.astype(np.float32)
    close(bc.rms_norm(xf, 8), _ln_ref(x, 1, eps=1.1920928955078125e-07, rms=True), rtol=1e-5, atol=1e-5)
    y, mean, rstd = bc.layer_norm(x, 8, w, b, return_stats=True)
    assert mean.shape == rstd.shape and mean.dtype == "float64"
    close(mean, x.mean(-1).reshape(np_of(mean).shape), rtol=1e-10)
    y, rstd = bc.rms_norm(xf, 8, return_stats=True)
    assert rstd.dtype == "float32"
    out = np.empty_like(x)
    assert bc.layer_norm(x, 8, w, b, out=out) is out
    close(out, _ln_ref(x, 1, w, b), rtol=1e-10)
    close(bc.layer_norm(x[:, ::2], 8, w, b), _ln_ref(x[:, ::2], 1, w, b), rtol=1e-10)
    # handed back: a bad normalized_shape (the general path's message), an int eps, NumPy ints
    assert _C._fast_norm("layer_norm", x, (5,), w, b, 1e-5, False, None, None) is None
    with pytest.raises(bc.InvalidProblemError, match="suffix"):
        bc.layer_norm(x, 5)
    close(bc.layer_norm(x, np.int64(8), w, b, eps=1), _ln_ref(x, 1, w, b, eps=1.0), rtol=1e-10)
    with pytest.raises(bc.Error, match="^NormPlan"):
        bc.layer_norm(x, 8, rng.standard_normal(7))


def test_matmul_linear_fast_paths_and_cache(rng):
    a = rng.standard_normal((3, 5))
    b = rng.standard_normal((5, 4))
    assert _C._fast_matmul(a, b, None, None) is not None
    close(bc.matmul(a, b), a @ b, rtol=1e-12)
    close(bc.matmul(a.T.copy().T, b), a @ b, rtol=1e-12)
    close(bc.matmul(a, b[:, 0]), a @ b[:, 0], rtol=1e-12)  # 1-D b: another plan
    bb = rng.standard_normal((2, 5, 4))
    close(bc.matmul(a, bb), a @ bb, rtol=1e-12)  # batch broadcasting
    close(bc.matmul(a.astype(np.float32), b.astype(np.float32)), a @ b, rtol=1e-5)
    out = np.empty((3, 4))
    assert bc.matmul(a, b, out=out) is out
    close(out, a @ b, rtol=1e-12)
    assert _C._fast_matmul(a, b.astype(np.float32), None, None) is None  # dtypes differ: the Python message
    with pytest.raises(bc.InvalidProblemError, match="dtypes differ"):
        bc.matmul(a, b.astype(np.float32))

    x = rng.standard_normal((2, 3, 5))
    w = rng.standard_normal((4, 5))
    bias = rng.standard_normal(4)
    ref = x @ w.T + bias
    close(bc.linear(x, w, bias), ref, rtol=1e-12)
    close(bc.linear(x, w), x @ w.T, rtol=1e-12)  # no bias: another plan
    close(bc.linear(x, w, bias, activation="relu"), np.maximum(ref, 0), rtol=1e-12)
    y, aux = bc.linear(x, w, bias, activation="gelu_tanh", return_aux=True)
    close(aux, ref, rtol=1e-12)
    g = 0.5 * ref * (1 + np.tanh(np.sqrt(2 / np.pi) * (ref + 0.044715 * ref ** 3)))
    close(y, g, rtol=1e-10, atol=1e-12)
    close(bc.linear(x[:, :2], w, bias), x[:, :2] @ w.T + bias, rtol=1e-12)
    with pytest.raises(bc.InvalidProblemError, match="weight must be 2-D"):
        bc.linear(x, w[None], bias)
    with pytest.raises(ValueError):
        bc.linear(x, w, activation="tanh")
