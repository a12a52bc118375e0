"""The device the GPU suite runs on: the CuPy stand-in or real CuPy (see conftest.py).

Imported first by conftest.py, before anything imports dezero_kr: with
``DEZERO_KR_GPU_SUITE=standin`` it puts ``tests/cupy_standin`` first on ``sys.path``.
"""
import os
import sys
from pathlib import Path

import numpy as np

BACKEND = os.environ.get('DEZERO_KR_GPU_SUITE', 'standin')
if BACKEND not in ('standin', 'cupy'):
    raise SystemExit(f"DEZERO_KR_GPU_SUITE must be 'standin' or 'cupy', not {BACKEND!r}")
if BACKEND == 'standin':
    if 'dezero_kr' in sys.modules or 'cupy' in sys.modules:
        raise SystemExit('the GPU suite must run in a fresh process (dezero_kr already imported)')
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'cupy_standin'))

import cupy  # noqa: E402

from dezero_kr import Variable, cuda  # noqa: E402

STANDIN = getattr(cupy, 'STANDIN', False)
if BACKEND == 'standin' and not STANDIN:
    raise SystemExit(f'expected the stand-in, imported {cupy.__file__}')
if BACKEND == 'cupy' and STANDIN:
    raise SystemExit('DEZERO_KR_GPU_SUITE=cupy imported the stand-in, not CuPy')
if not cuda.gpu_enable:
    raise SystemExit('dezero_kr.cuda.gpu_enable is False: no usable device')

# Real CuPy computes with its own kernels: equal to NumPy up to rounding, not bit for bit.
RTOL, ATOL = (0.0, 0.0) if STANDIN else (1e-10, 1e-12)


def assert_same(device_value, host_value, what=''):
    """A device array (or Variable) equals the CPU run's array: exactly on the stand-in."""
    d = device_value.data if isinstance(device_value, Variable) else device_value
    h = host_value.data if isinstance(host_value, Variable) else host_value
    assert isinstance(d, cupy.ndarray), f'{what}: expected a device array, got {type(d)}'
    assert isinstance(h, np.ndarray), f'{what}: expected a host array, got {type(h)}'
    got = cupy.asnumpy(d)
    assert got.dtype == h.dtype, f'{what}: dtype {got.dtype} != {h.dtype}'
    np.testing.assert_allclose(got, h, rtol=RTOL, atol=ATOL, err_msg=what)
