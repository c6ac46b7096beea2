"""unary_backward / binary_backward (UnaryBackwardPlan / BinaryBackwardPlan) on
the CPU against torch autograd (f64), with broadcast operands and scalars."""
import numpy as np
import pytest

import baracuda as bc
from conftest import HAVE_TORCH, np_of

pytestmark = pytest.mark.skipif(not HAVE_TORCH, reason="torch not importable")

UNARY = ["gelu", "silu", "tanh", "sigmoid", "exp", "relu", "abs", "sqrt", "log", "neg", "rsqrt"]
BINARY = ["add", "sub", "mul", "div", "pow", "maximum", "minimum", "atan2", "remainder", "fmod", "copysign", "hypot",
          "logaddexp", "xlogy"]


def _torch_fn(torch, op):
    return getattr(torch.nn.functional, op, None) or getattr(torch, op)


@pytest.mark.parametrize("op", UNARY)
def test_unary_backward_matches_torch(op, rng):
    import torch
    x = rng.standard_normal((3, 5))
    if op in ("sqrt", "log", "rsqrt"):
        x = np.abs(x) + 0.1
    x[0, 0] = 0.0 if op in ("relu", "abs") else x[0, 0]  # torch's kink value
    dy = rng.standard_normal((3, 5))
    t = torch.tensor(x, requires_grad=True)
    y = _torch_fn(torch, op)(t)
    y.backward(torch.tensor(dy))
    np.testing.assert_allclose(np_of(bc.unary_backward(op, dy, x)), t.grad.numpy(), rtol=1e-12, atol=1e-12)
    if op in ("sigmoid", "tanh", "exp", "sqrt", "relu"):
        g = bc.unary_backward(op, dy, output=y.detach().numpy())
        np.testing.assert_allclose(np_of(g), t.grad.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("op", BINARY)
def test_binary_backward_matches_torch_with_broadcast(op, rng):
    import torch
    a = rng.standard_normal((3, 4))
    b = rng.standard_normal((1, 4)) + 2
    if op in ("pow", "xlogy"):
        a = np.abs(a) + 0.1
    dy = rng.standard_normal((3, 4))
    A, B = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    _torch_fn(torch, op)(A, B).backward(torch.tensor(dy))
    da, db = bc.binary_backward(op, dy, a, b)
    np.testing.assert_allclose(np_of(da), A.grad.numpy(), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(np_of(db), B.grad.numpy(), rtol=1e-12, atol=1e-12)  # summed to [1, 4]
    da_only, none = bc.binary_backward(op, dy, a, b, output_mask=(True, False))
    assert none is None
    np.testing.assert_allclose(np_of(da_only), A.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_binary_backward_scalars_and_alpha(rng):
    a = rng.standard_normal((2, 3))
    dy = rng.standard_normal((2, 3))
    da, db = bc.binary_backward("mul", dy, a, 3.0)
    assert db is None
    np.testing.assert_allclose(np_of(da), 3 * dy)
    b = rng.standard_normal((3,))
    da, db = bc.binary_backward("sub", dy, a, b, alpha=2.0)
    np.testing.assert_allclose(np_of(da), dy)
    np.testing.assert_allclose(np_of(db), -2 * dy.sum(0))


def test_elementwise_backward_errors(rng):
    x = rng.standard_normal((2, 2))
    with pytest.raises(TypeError):
        bc.unary_backward("gelu", x)  # neither input nor output
    with pytest.raises(bc.InvalidProblemError, match="UnaryBackwardPlan"):
        bc.unary_backward("gelu", x, output=x)  # gelu's gradient needs x
    with pytest.raises(bc.UnsupportedError, match="BinaryBackwardPlan"):
        bc.binary_backward("eq", x, x, x)  # comparisons have no gradient
