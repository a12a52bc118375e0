"""``cupy.linalg`` of the stand-in: NumPy's, on device arrays only."""
import numpy as _np


def __getattr__(name):
    from cupy import _call
    fn = getattr(_np.linalg, name)

    def call(*args, **kwargs):
        return _call(fn, args, kwargs)
    return call
