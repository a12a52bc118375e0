"""The GPU suite: dezero_kr's device paths, on the CuPy stand-in or on real CuPy.

Not collected by the main run (``tests/conftest.py`` ignores this folder); it runs in a
process of its own, because ``dezero_kr.cuda`` reads ``cupy`` once, at import:

    DEZERO_KR_GPU_SUITE=standin python -m pytest tests/gpu_suite -q   # CI: the stand-in
    DEZERO_KR_GPU_SUITE=cupy    python -m pytest tests/gpu_suite -q   # a machine with a GPU

``tests/test_gpu.py`` runs the first on every CI run and the second (``-m gpu``) where
CuPy sees a device.  With ``standin`` the folder ``tests/cupy_standin`` goes first on
``sys.path`` before anything imports dezero_kr, so ``import cupy`` finds the stand-in.
"""
from _device import STANDIN  # first: it chooses what `import cupy` finds  # isort: skip

import cupy  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402


@pytest.fixture
def transfers():
    """The stand-in's transfer counters, zeroed (tests that count are stand-in only)."""
    if not STANDIN:
        pytest.skip('transfer counting needs the stand-in (real CuPy does not count; not a GPU skip)')
    cupy.reset_transfers()
    return cupy.transfers


@pytest.fixture(autouse=True)
def _seeded():
    np.random.seed(0)
    cupy.random.seed(0)
