import numpy as np
import pytest

try:
    import torch  # noqa: F401
    HAVE_TORCH = True
except Exception:  # pragma: no cover - torch is optional
    HAVE_TORCH = False


@pytest.fixture
def rng():
    return np.random.default_rng(1234)


def np_of(a):
    """A baracuda output (or any DLPack tensor) as a NumPy array (zero-copy on the CPU)."""
    return np.from_dlpack(a)
