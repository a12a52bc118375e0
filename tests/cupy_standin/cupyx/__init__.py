"""``cupyx`` of the stand-in: ``scatter_add``, the device form of ``np.add.at``."""
import numpy as _np


def scatter_add(a, slices, value):
    from cupy import _unwrap, _unwrap_index, ndarray
    if type(a) is not ndarray:
        raise TypeError('cupyx.scatter_add needs a device array to add into')
    _np.add.at(a._a, _unwrap_index(slices), _unwrap(value))
