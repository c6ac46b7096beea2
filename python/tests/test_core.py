"""The module's core: Array, DLPack in both directions, streams, errors."""
import gc
import sys

import numpy as np
import pytest

import baracuda as bc
from conftest import HAVE_TORCH, np_of

needs_torch = pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")


def test_import_does_not_import_torch():
    import subprocess
    code = "import sys, baracuda; sys.exit(1 if 'torch' in sys.modules else 0)"
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_version():
    assert bc.__version__.count(".") == 2


def test_empty_and_properties():
    a = bc.empty((2, 3), "float32")
    assert a.shape == (2, 3) and a.strides == (3, 1) and a.dtype == "float32"
    assert a.device == "cpu" and a.ndim == 2 and a.size == 6 and a.nbytes == 24 and a.itemsize == 4
    assert a.data_ptr % 64 == 0
    assert a.__dlpack_device__() == (1, 0)
    assert "Array" in repr(a)
    assert bc.empty((0, 4)).size == 0


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "int8", "uint8", "int16", "int32", "int64",
                                   "bool", "complex64", "complex128"])
def test_dlpack_roundtrip_numpy(dtype):
    complex_ = dtype.startswith("complex")  # FactoryPlan does not fill complex dtypes
    x = bc.empty((3, 2), dtype) if complex_ else bc.full((3, 2), 1, dtype)
    y = np.from_dlpack(x)
    assert y.dtype == np.dtype(dtype) and y.shape == (3, 2)
    assert complex_ or (y == 1).all()
    # zero-copy: NumPy's array shares baracuda's memory
    assert y.__array_interface__["data"][0] == x.data_ptr


def test_dlpack_versioned_and_legacy_capsules():
    x = bc.full((4,), 2.0)
    assert "dltensor_versioned" in repr(x.__dlpack__(max_version=(1, 0)))
    assert '"dltensor"' in repr(x.__dlpack__())
    with pytest.raises(BufferError):
        x.__dlpack__(copy=True)
    with pytest.raises(BufferError):
        x.__dlpack__(dl_device=(2, 0))
    with pytest.raises(BufferError):
        x.__dlpack__(stream=5)


def test_array_outlives_python_reference():
    x = bc.full((1000,), 3.0)
    y = np.from_dlpack(x)
    del x
    gc.collect()
    assert (y == 3.0).all()  # the capsule keeps the storage


def test_input_numpy_zero_copy_and_noncontiguous(rng):
    x = rng.standard_normal((4, 6)).astype(np.float32)
    np.testing.assert_allclose(np_of(bc.sum(x.T, dim=1)), x.T.sum(1), rtol=1e-5)
    np.testing.assert_allclose(np_of(bc.sum(x[:, ::2], dim=0)), x[:, ::2].sum(0), rtol=1e-5)


def test_negative_strides_rejected():
    x = np.arange(5, dtype=np.float32)[::-1]
    with pytest.raises((bc.UnsupportedError, BufferError)):
        bc.sum(x)


def test_unsupported_dtype():
    x = np.zeros(3, dtype=np.uint16)
    with pytest.raises(bc.UnsupportedError):
        bc.sum(x)


def test_non_dlpack_and_none():
    with pytest.raises(TypeError):
        bc.sum([1.0, 2.0])
    with pytest.raises(TypeError):
        bc.sum(None)
    with pytest.raises(TypeError):
        bc.add(None, np.ones(2, np.float32))
    with pytest.raises(TypeError):
        bc.add(1, 2)


def test_errors_carry_code_and_message():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(bc.InvalidProblemError) as e:
        bc.sum(x, dim=4)
    assert e.value.code == "InvalidProblem"
    assert str(e.value).startswith("ReducePlan:")
    assert isinstance(e.value, ValueError) and isinstance(e.value, bc.Error)
    with pytest.raises(bc.InvalidProblemError):  # shapes do not broadcast
        bc.add(np.ones(3, np.float32), np.ones(4, np.float32))
    with pytest.raises(bc.UnsupportedError):  # gelu of an integer tensor
        bc.gelu(np.ones(3, np.int32))


def test_read_only_output_refused():
    x = np.ones(3, np.float32)
    out = np.zeros(3, np.float32)
    out.setflags(write=False)
    with pytest.raises(bc.InvalidProblemError, match="read-only"):
        bc.exp(x, out=out)


def test_out_wrong_shape_and_dtype():
    x = np.ones((2, 3), np.float32)
    with pytest.raises(bc.Error):
        bc.exp(x, out=np.zeros((3, 2), np.float32))
    with pytest.raises(bc.Error):
        bc.sum(x, dim=1, out=np.zeros(2, np.float64))


def test_stream_arguments():
    assert bc.Stream.cpu().is_cpu
    s = bc.Stream.from_py("cpu")
    assert s == bc.Stream.cpu()
    x = np.ones(3, np.float32)
    bc.exp(x, stream="cpu")
    bc.exp(x, stream=bc.Stream.cpu())
    with pytest.raises(bc.InvalidProblemError):
        bc.exp(x, stream=bc.Stream.cuda(0, 0))  # CUDA stream for CPU tensors
    with pytest.raises(TypeError):
        bc.exp(x, stream=object())


def test_mixed_devices_message():
    # both CPU here: mixed devices cannot be built without a GPU; the rule is in test_cuda.py
    assert bc.add(np.ones(2, np.float32), np.ones(2, np.float32)).shape == (2,)


@needs_torch
def test_torch_zero_copy_both_ways():
    import torch
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    y = bc.mul(t, 2.0)
    ty = torch.from_dlpack(y)
    assert ty.data_ptr() == y.data_ptr
    assert torch.equal(ty, t * 2)
    # torch as out=
    o = torch.empty(2, 3)
    r = bc.add(t, t, out=o)
    assert r is o and torch.equal(o, t + t)
    # bool and bfloat16 through DLPack
    b = bc.full((2,), True, "bool")
    assert torch.from_dlpack(b).dtype == torch.bool
    h = bc.to(t, "bfloat16")
    assert torch.from_dlpack(h).dtype == torch.bfloat16
    assert torch.equal(torch.from_dlpack(h), t.to(torch.bfloat16))


@needs_torch
def test_torch_dtype_objects_accepted():
    import torch
    t = torch.ones(3, dtype=torch.float32)
    assert bc.to(t, torch.float64).dtype == "float64"
    assert bc.sum(t, dtype=torch.float64).dtype == "float64"


def test_plan_layer_reduce():
    P = bc.plans
    d = P.ReduceDescriptor(kind="mean", dtype="float32", shape=(4, 5), axes=(1,), keepdim=True)
    assert d.kind == P.ReduceKind.Mean and d.shape == (4, 5)
    plan = P.ReducePlan.select(d)
    assert plan.output_shape == (4, 1) and plan.output_dtype == "float32"
    assert plan.workspace_size == 0
    sku = plan.sku
    assert sku["backend"] == "cpu-reference" and sku["op"] == "reduce.mean"
    x = np.arange(20, dtype=np.float32).reshape(4, 5)
    y = np.zeros((4, 1), np.float32)
    plan.run(x=x, y=y)
    np.testing.assert_allclose(y, x.mean(1, keepdims=True))
    with pytest.raises(TypeError):
        P.ReduceDescriptor(knd="sum")
    with pytest.raises(TypeError, match="unknown argument"):
        plan.run(x=x, z=y)
    with pytest.raises(bc.InvalidProblemError):
        P.ReduceDescriptor(kind="median")
    with pytest.raises(bc.Error):  # y missing
        plan.run(x=x)
    # an explicit workspace (any tensor) is accepted
    plan.run(x=x, y=y, workspace=np.zeros(16, np.uint8))


def test_plan_preference_and_strict_workspace():
    P = bc.plans
    pref = P.PlanPreference(strict_workspace=True)
    plan = P.ReducePlan.select(P.ReduceDescriptor(shape=(8,)), preference=pref)
    assert plan.workspace_size >= 256
    x = np.ones(8, np.float32)
    y = np.zeros((), np.float32)
    plan.run(x=x, y=y)  # workspace allocated for the call
    assert y == 8
    with pytest.raises(bc.WorkspaceTooSmallError):
        plan.run(x=x, y=y, workspace=np.zeros(4, np.uint8))


def test_plan_cache():
    bc.clear_plan_cache()
    x = np.ones((3, 4), np.float32)
    bc.sum(x, dim=0)
    bc.sum(x, dim=0)
    assert bc.plan_cache_size() == 1
    bc.sum(x, dim=1)
    assert bc.plan_cache_size() == 2


def test_jax_cpu_if_available():
    jax = pytest.importorskip("jax")
    x = jax.numpy.arange(6, dtype=jax.numpy.float32)
    if x.devices().pop().platform != "cpu":
        pytest.skip("JAX's default device is not the CPU")
    np.testing.assert_allclose(np_of(bc.mul(x, 2.0)), np.arange(6) * 2)
    y = jax.dlpack.from_dlpack(bc.full((3,), 1.5))
    np.testing.assert_allclose(np.asarray(y), [1.5, 1.5, 1.5])


def test_array_numpy_conveniences():
    a = bc.full((2, 2), 1.5, "float64")
    assert np.asarray(a).sum() == 6.0
    assert a.numpy().__array_interface__["data"][0] == a.data_ptr
    assert a.tolist() == [[1.5, 1.5], [1.5, 1.5]]
    assert len(a) == 2


def test_bad_inputs_raise_never_crash():
    x = np.ones((2, 3), np.float32)
    cases = [
        lambda: bc.sum(x, dim="a"),
        lambda: bc.softmax(x, dim=1.5),
        lambda: bc.sum(np.ones((1,) * 9, np.float32)),  # rank 9
        lambda: bc.empty((-1, 2)),
        lambda: bc.empty((2,), "float128"),
        lambda: bc.full((2,), "x"),
        lambda: bc.plans.ReducePlan.select(None),
        lambda: bc.plans.ReducePlan.select(bc.plans.ReduceDescriptor(shape=(2, 3)), stream=3.5),
        lambda: bc.plans.ReduceDescriptor(shape="ab"),
        lambda: bc.plans.ReduceDescriptor(keepdim="yes"),
        lambda: bc.plans.ReduceDescriptor(dtype=None),
        lambda: bc.plans.ReducePlan().run(x=x),
        lambda: bc.layer_norm(x, ()),
        lambda: bc.layer_norm(x, (3,), weight=np.ones(4, np.float32)),
        lambda: bc.linear(x, np.ones(3, np.float32)),
        lambda: bc.cross_entropy(x, np.ones(2, np.float32)),
        lambda: bc.matmul(x, None),
        lambda: bc.add(x, "s"),
        lambda: bc.add(x, np.ones((2, 3), np.float64), out=np.zeros((2, 3), np.int8)),
        lambda: bc.Stream.from_py("tpu"),
        lambda: x.__class__ and bc.exp(x, out=x.T),  # output overlapping the input in another layout
    ]
    for i, f in enumerate(cases):
        with pytest.raises((bc.Error, TypeError, ValueError)):
            f()
            pytest.fail(f"case {i} did not raise")


def test_plan_can_implement_and_sku_for():
    P = bc.plans
    plan = P.SoftmaxPlan.select(P.SoftmaxDescriptor(dtype="float64", shape=(3, 4)))
    x = np.ones((3, 4))
    y = np.zeros((3, 4))
    assert plan.can_implement(x=x, y=y) is True
    with pytest.raises(bc.InvalidProblemError):
        plan.can_implement(x=x, y=np.zeros((4, 3)))
    sku = plan.sku_for(x=x, y=y)
    assert sku["op"].startswith("softmax") and sku["backend"] == "cpu-reference"
    assert (y == 0).all()  # nothing ran
