"""NumPy / CuPy switch.  CuPy is optional: without it everything runs on NumPy.

``gpu_enable`` is True only when CuPy imports *and* a CUDA device is usable, so
code may branch on it safely.  This module imports nothing from dezero_kr, so
every other module may import it.
"""
import numpy as np

try:
    import cupy as cp
    cupy = cp
    try:
        gpu_enable = cp.cuda.runtime.getDeviceCount() > 0
    except Exception:  # CuPy installed but no driver / no device
        gpu_enable = False
except ImportError:
    cp = cupy = None
    gpu_enable = False

_CUPY_MISSING = ('CuPy is not available (not installed, or no usable CUDA device). '
                 'Install it with `pip install cupy-cuda12x` (matching your CUDA) '
                 'or keep working on the CPU with NumPy.')


def _unwrap(x):
    # A Variable carries its array in `.data`; ndarray's own `.data` is a
    # memoryview, so test for arrays first.
    if isinstance(x, (np.ndarray, np.generic)):
        return x
    if cp is not None and isinstance(x, cp.ndarray):
        return x
    return getattr(x, 'data', x)


def get_array_module(x):
    """Return ``numpy`` or ``cupy`` for an array or Variable ``x``."""
    if not gpu_enable:
        return np
    return cp.get_array_module(_unwrap(x))


def as_numpy(x):
    """Return ``x`` (array, Variable or scalar) as a ``numpy.ndarray``."""
    x = _unwrap(x)
    if np.isscalar(x):
        return np.array(x)
    if isinstance(x, np.ndarray):
        return x
    return cp.asnumpy(x)


def as_cupy(x):
    """Return ``x`` as a ``cupy.ndarray``; raises RuntimeError without CuPy."""
    if not gpu_enable:
        raise RuntimeError(_CUPY_MISSING)
    return cp.asarray(_unwrap(x))


def require_gpu(what):
    """Raise a clear error naming ``what`` when no GPU is usable."""
    if not gpu_enable:
        raise RuntimeError(f'{what} needs a GPU. {_CUPY_MISSING}')
