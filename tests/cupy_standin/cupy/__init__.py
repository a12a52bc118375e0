"""A strict, NumPy-backed stand-in for CuPy -- for tests only, never installed.

``tests/gpu_suite`` puts this folder first on ``sys.path`` so that ``import cupy``
finds it; ``dezero_kr.cuda`` then sees one "device" and takes every GPU branch.
The device array wraps a NumPy array and is *stricter* than CuPy where a slip
would only show on a real GPU:

* ``np.asarray(dev)`` and every NumPy function or ufunc called on a device
  array raise ``TypeError`` (CuPy refuses implicit conversion to NumPy; it
  dispatches some NumPy calls to itself, but code that relies on that breaks
  on older CuPy and hides a host round trip, so the stand-in refuses them all);
* arithmetic that mixes a device array with a host ``numpy.ndarray`` raises
  ``TypeError`` (as ``cupy.add(dev, host)`` does); Python and NumPy scalars
  are fine;
* ufuncs have no ``.at`` (use ``cupyx.scatter_add``);
* reductions return 0-d device arrays, not scalars, as CuPy's do;
* every device -> host transfer (``.get()``, ``asnumpy``, ``float()``,
  ``bool()``, ``.item()``, ``.tolist()``) and host -> device transfer
  (``asarray``/``array`` of host data) is counted in ``transfers``.

What it does not model: streams, memory pools, kernels, and CuPy's own
numerical differences (the arithmetic is NumPy's, so results equal the CPU
run exactly).
"""
import numpy as _np

import types as _types

from . import cuda, lib, linalg, random  # noqa: F401  (CuPy's submodules)

STANDIN = True  # lets a test tell the stand-in from real CuPy

transfers = {'to_host': 0, 'to_device': 0}


def reset_transfers():
    """Zero the transfer counters (a test calls this before the code it counts)."""
    transfers['to_host'] = transfers['to_device'] = 0


def _to_host():
    transfers['to_host'] += 1


_MIXED = ('Unsupported type {}: the cupy stand-in refuses a host numpy.ndarray mixed '
          'with device arrays (move it with cupy.asarray, or get() the device array)')


def _unwrap(obj):
    """Device arrays -> their NumPy array; host ndarrays refused; containers walked."""
    if type(obj) is ndarray:
        return obj._a
    if isinstance(obj, _np.ndarray):
        raise TypeError(_MIXED.format(type(obj)))
    if isinstance(obj, (list, tuple)):
        return type(obj)(_unwrap(o) for o in obj)
    return obj


def _unwrap_index(key):
    """Indices may be device arrays, host integer/bool arrays (CuPy copies them over), or
    the usual ints/slices."""
    if type(key) is ndarray:
        return key._a
    if isinstance(key, _np.ndarray):
        transfers['to_device'] += 1
        return key
    if isinstance(key, tuple):
        return tuple(_unwrap_index(k) for k in key)
    if isinstance(key, list):
        return [_unwrap_index(k) for k in key]
    return key


def _wrap(obj):
    """NumPy results -> device arrays (scalars from reductions become 0-d arrays)."""
    if isinstance(obj, _np.ndarray):
        return ndarray(obj)
    if isinstance(obj, _np.generic):
        return ndarray(_np.asarray(obj))
    if isinstance(obj, tuple):
        return tuple(_wrap(o) for o in obj)
    if isinstance(obj, list):
        return [_wrap(o) for o in obj]
    return obj


def _call(fn, args, kwargs):
    args = [_unwrap(a) for a in args]
    kwargs = {k: _unwrap(v) for k, v in kwargs.items()}
    return _wrap(fn(*args, **kwargs))


_IMPLICIT = ('Implicit conversion to a NumPy array is not allowed. Please use `.get()` '
             'to construct a NumPy array explicitly. (cupy stand-in)')


class ndarray:
    """A device array: a NumPy array behind a wall that NumPy cannot see through."""
    __slots__ = ('_a', '__weakref__')
    __array_ufunc__ = None  # np.exp(dev), host + dev: TypeError, as on a GPU
    __hash__ = None

    def __init__(self, array):
        self._a = array

    # --- what NumPy must not do with it ----------------------------------------------
    def __array__(self, dtype=None, copy=None):
        raise TypeError(_IMPLICIT)

    def __array_function__(self, func, types, args, kwargs):
        return NotImplemented  # NumPy then raises TypeError naming the function

    # --- transfers --------------------------------------------------------------------
    def get(self, stream=None, order='C', out=None):
        _to_host()
        return self._a.copy()

    def item(self, *args):
        _to_host()
        return self._a.item(*args)

    def tolist(self):
        _to_host()
        return self._a.tolist()

    def __float__(self):
        _to_host()
        return float(self._a)

    def __int__(self):
        _to_host()
        return int(self._a)

    def __bool__(self):
        _to_host()
        return bool(self._a)

    def __complex__(self):
        _to_host()
        return complex(self._a)

    def __index__(self):
        _to_host()
        return self._a.__index__()

    # --- plain attributes --------------------------------------------------------------
    shape = property(lambda self: self._a.shape)
    dtype = property(lambda self: self._a.dtype)
    ndim = property(lambda self: self._a.ndim)
    size = property(lambda self: self._a.size)
    itemsize = property(lambda self: self._a.itemsize)
    nbytes = property(lambda self: self._a.nbytes)
    strides = property(lambda self: self._a.strides)
    flags = property(lambda self: self._a.flags)
    T = property(lambda self: ndarray(self._a.T))
    real = property(lambda self: ndarray(self._a.real))
    imag = property(lambda self: ndarray(self._a.imag))
    device = property(lambda self: cuda.Device(0))
    data = property(lambda self: cuda.MemoryPointer(self._a.nbytes))  # CuPy's is one too

    @property
    def base(self):
        return None if self._a.base is None else ndarray(self._a.base)

    def __len__(self):
        return len(self._a)

    def __iter__(self):
        return (self[i] for i in range(len(self)))

    def __repr__(self):
        return repr(self._a)

    def __str__(self):
        return str(self._a)

    def __format__(self, spec):
        _to_host()
        return format(self._a, spec)

    def __reduce__(self):
        return (_rebuild, (self._a,))

    def __copy__(self):
        return ndarray(self._a.copy())

    def __deepcopy__(self, memo):
        return ndarray(self._a.copy())

    # --- methods: NumPy's, on device arrays only ----------------------------------------
    def __getattr__(self, name):
        if name.startswith('__'):  # __array_interface__ & co would hand NumPy the buffer
            raise AttributeError(f"cupy stand-in: ndarray has no attribute '{name}'")
        attr = getattr(self._a, name)  # AttributeError names the missing method
        if not callable(attr):
            return _wrap(attr)

        def method(*args, **kwargs):
            return _call(attr, args, kwargs)
        method.__name__ = name
        return method

    def __getitem__(self, key):
        return _wrap(self._a[_unwrap_index(key)])

    def __setitem__(self, key, value):
        self._a[_unwrap_index(key)] = _unwrap(value)


def _rebuild(a):
    return ndarray(a)


def _binary(name):
    def op(self, other):
        if isinstance(other, _np.ndarray):
            raise TypeError(_MIXED.format(type(other)))
        if not isinstance(other, (ndarray, int, float, complex, bool, _np.generic)):
            return NotImplemented
        return _wrap(getattr(self._a, name)(_unwrap(other)))
    op.__name__ = name
    return op


def _unary(name):
    def op(self):
        return _wrap(getattr(self._a, name)())
    op.__name__ = name
    return op


for _name in ('add', 'sub', 'mul', 'truediv', 'floordiv', 'mod', 'pow', 'matmul', 'and',
              'or', 'xor', 'lshift', 'rshift'):
    for _form in ('__{}__', '__r{}__', '__i{}__'):
        _dunder = _form.format(_name)
        setattr(ndarray, _dunder, _binary(_dunder))
for _dunder in ('__eq__', '__ne__', '__lt__', '__le__', '__gt__', '__ge__'):
    setattr(ndarray, _dunder, _binary(_dunder))
for _dunder in ('__neg__', '__pos__', '__abs__', '__invert__'):
    setattr(ndarray, _dunder, _unary(_dunder))


def _inplace(name):
    def op(self, other):
        if isinstance(other, _np.ndarray):
            raise TypeError(_MIXED.format(type(other)))
        getattr(self._a, name)(_unwrap(other))
        return self
    op.__name__ = name
    return op


for _name in ('add', 'sub', 'mul', 'truediv', 'floordiv', 'mod', 'pow', 'and', 'or', 'xor'):
    setattr(ndarray, f'__i{_name}__', _inplace(f'__i{_name}__'))


# --- module level: array creation and transfers ---------------------------------------
def asarray(a, dtype=None, order=None):
    """Host data -> a device array (counted); a device array is returned as is."""
    if type(a) is ndarray:
        return a if dtype is None or a.dtype == dtype else a.astype(dtype)
    transfers['to_device'] += 1
    return ndarray(_np.array(_unwrap_nested(a), dtype=dtype, order=order or 'K', copy=True))


def array(obj, dtype=None, copy=True, order='K', ndmin=0):
    if type(obj) is ndarray:
        return ndarray(_np.array(obj._a, dtype=dtype, copy=copy, order=order, ndmin=ndmin))
    transfers['to_device'] += 1
    return ndarray(_np.array(_unwrap_nested(obj), dtype=dtype, copy=True, order=order,
                             ndmin=ndmin))


def _unwrap_nested(obj):
    if type(obj) is ndarray:
        return obj._a
    if isinstance(obj, (list, tuple)):
        return [_unwrap_nested(o) for o in obj]
    return obj


def asnumpy(a, stream=None, order='C', out=None):
    """A device array -> a NumPy array (counted); host data is returned as an array."""
    if type(a) is ndarray:
        _to_host()
        return a._a.copy()
    return _np.asarray(a)


def get_array_module(*args):
    for a in args:
        if type(a) is ndarray:
            import cupy
            return cupy
    return _np


class _UFunc:
    """A device ufunc: __call__ and reduce, and no ``at`` (CuPy code uses cupyx.scatter_add)."""

    def __init__(self, uf):
        self._uf = uf
        self.__name__ = uf.__name__
        self.nin, self.nout = uf.nin, uf.nout

    def __call__(self, *args, **kwargs):
        return _call(self._uf, args, kwargs)

    def reduce(self, *args, **kwargs):
        return _call(self._uf.reduce, args, kwargs)

    def accumulate(self, *args, **kwargs):
        return _call(self._uf.accumulate, args, kwargs)

    def outer(self, *args, **kwargs):
        return _call(self._uf.outer, args, kwargs)

    def __getattr__(self, name):
        raise AttributeError(f"cupy stand-in: ufunc '{self.__name__}' has no attribute "
                             f"'{name}' (for add.at use cupyx.scatter_add)")


_NOT_IN_CUPY = {'matrix', 'asmatrix', 'ma', 'char', 'rec', 'ctypeslib', 'polynomial',
                'add_docstring'}
_cache = {}


def __getattr__(name):
    """Everything else: NumPy's function of that name, on device arrays only."""
    if name in _cache:
        return _cache[name]
    if name.startswith('__') or name in _NOT_IN_CUPY:
        raise AttributeError(f"cupy stand-in has no attribute '{name}'")
    attr = getattr(_np, name)
    if isinstance(attr, _types.ModuleType):  # NumPy's submodules would work on host arrays
        raise AttributeError(f"cupy stand-in has no submodule '{name}'")
    if isinstance(attr, _np.ufunc):
        value = _UFunc(attr)
    elif isinstance(attr, type) or not callable(attr):
        value = attr  # dtypes (cupy.float32 is numpy.float32), constants
    else:
        def value(*args, **kwargs):
            return _call(attr, args, kwargs)
        value.__name__ = name
    _cache[name] = value
    return value
