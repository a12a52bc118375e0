"""Traced arrays: an ndarray subclass that makes the step's value reads visible while tracing.

During a trace every array of the step (arguments, parameters, results) is a
``Traced`` view; ``bool``, ``float``, ``item()``, ``hash()`` ... on one from
code outside ``dezero_kr`` report a value read to the active recorder
(``current_trace.recorder``, this thread's), as do NumPy calls whose result
shape depends on the values.  ``untraced`` and ``untraced_result`` turn them
back into plain arrays when the trace ends.
"""
import sys
import threading

import numpy as np

from dezero_kr.core import Variable
from dezero_kr.frames import is_internal
from dezero_kr.define_and_run.shared import MISSING


# =============================================================================
# Traced arrays: value reads become visible while tracing
# =============================================================================
current_trace = threading.local()  # .recorder: the active Recorder of this thread, or absent


def _user_frame(depth):
    """The frame ``depth`` levels above the caller if it is user code (not dezero_kr's or
    NumPy's) and this thread is tracing; else None."""
    if getattr(current_trace, 'recorder', None) is None:
        return None
    frame = sys._getframe(depth + 1)
    return None if is_internal(frame.f_code.co_filename) else frame


def _flag(frame, what, why='Python control flow or a number that depends on the data: a replay '
                            'would keep the traced value'):
    current_trace.recorder.fail(f'{what} of a value computed by the step at {frame.f_code.co_filename}:'
                           f'{frame.f_lineno} ({why})')


def _value_read(arr, what):
    """A ``Traced`` array's value reaches Python: flag it if user code (not dezero_kr) did it."""
    frame = _user_frame(2)
    if frame is not None:  # (the engine's own checks, label ranges and rules' special cases, run
        _flag(frame, what)  # again at replay)


def _reading(method, what):
    """``method`` of ndarray with the read of the value flagged first (``_value_read``)."""
    def read(self, *args):
        _value_read(self, what)
        return method(self, *args)
    read.__name__ = method.__name__
    return read


_SHAPE_FROM_VALUES = 'its shape depends on the data: a replay would keep the traced shape'


def _value_shaped(func, args, kwargs):
    """What makes ``func(*args, **kwargs)``'s result shape depend on a traced array's values
    (``np.unique``, ``np.nonzero``, ...), or None."""
    name = getattr(func, '__name__', '')
    if name in ('unique', 'unique_all', 'unique_counts', 'unique_inverse', 'unique_values', 'nonzero',
                'flatnonzero', 'argwhere', 'extract', 'compress', 'bincount', 'trim_zeros', 'setdiff1d',
                'intersect1d', 'union1d', 'setxor1d'):
        return f'np.{name}()'
    if name == 'where' and len(args) + len(kwargs) == 1:
        return 'np.where(condition)'
    if name in ('delete', 'insert', 'repeat') and any(isinstance(a, Traced) for a in args[1:2]):
        return f'np.{name}() at positions from the data'
    if name.startswith('histogram') and isinstance(kwargs.get('bins', args[1] if len(args) > 1 else 0), str):
        return f'np.{name}() with bins chosen from the data'
    return None


# Functions of the arguments' shapes and dtypes only: their Python results are not value reads.
_SHAPE_ONLY = frozenset(getattr(np, n) for n in (
    'shape', 'ndim', 'size', 'isscalar', 'iscomplexobj', 'isrealobj', 'result_type', 'can_cast',
    'may_share_memory', 'shares_memory', 'isfortran') if hasattr(np, n))


def rebuilt(cls, items):
    """A list, tuple or named tuple of class ``cls`` holding ``items``."""
    return cls(*items) if hasattr(cls, '_fields') else cls(items)


def _traced_result(out):
    """What user code gets from NumPy while tracing: arrays and NumPy scalars as ``Traced``
    (NumPy drops the subclass in ``np.nonzero``, ``t[0]``, ``argmax``, ``np.dot`` of vectors...),
    so a value computed from the step's data stays recognisable."""
    if isinstance(out, np.ndarray):
        return out if isinstance(out, Traced) else out.view(Traced)
    if isinstance(out, np.generic):
        out = np.asarray(out).view(Traced)
        out._scalar = True  # returned from the step as the NumPy scalar it was
        return out
    if isinstance(out, tuple):
        return rebuilt(type(out), [_traced_result(o) for o in out])
    if isinstance(out, list):
        return [_traced_result(o) for o in out]
    return out


class Traced(np.ndarray):
    """An ndarray that reports when user code turns its values into Python values.

    Used only while tracing; NumPy keeps the subclass through ufuncs and most
    functions, and what user code gets back from the others (a NumPy scalar, an
    index array) is made ``Traced`` too, so an array computed from the step's
    data (by an operation or by host code) is recognisable.  Results whose
    shape depends on the data (``np.unique``, boolean-mask indexing) are
    reported where they are made.  Arithmetic is ndarray's: the same numbers.
    """

    def __array_function__(self, func, types, args, kwargs):
        out = super().__array_function__(func, types, args, kwargs)
        frame = _user_frame(1)
        if frame is None:
            return out
        what = _value_shaped(func, args, kwargs)
        if what is not None:
            _flag(frame, what, _SHAPE_FROM_VALUES)
        elif isinstance(out, (bool, int, float, complex)) and func not in _SHAPE_ONLY:
            _flag(frame, f'np.{getattr(func, "__name__", "function")}()')  # np.array_equal, ...
        return _traced_result(out)

    def __getitem__(self, key):
        out = np.ndarray.__getitem__(self, key)
        frame = _user_frame(1)
        if frame is None:
            return out
        if any(isinstance(k, np.ndarray) and k.dtype == bool and k.ndim
               for k in (key if isinstance(key, tuple) else (key,))):
            _flag(frame, 'boolean-mask indexing', _SHAPE_FROM_VALUES)
        return _traced_result(out)  # an element: a 0-d Traced, not a NumPy scalar

    def __iter__(self):
        if self.ndim == 1 and _user_frame(1) is not None:
            return (self[i, ...] for i in range(self.shape[0]))  # elements as 0-d Traced
        return np.ndarray.__iter__(self)

    def __hash__(self):  # a 0-d value as a dict key or in a set: a value read
        _value_read(self, 'hash()')
        if self.ndim:
            raise TypeError(f"unhashable type: 'numpy.ndarray' (shape {self.shape})")
        return hash(np.ndarray.item(self))

    def _from_method(self, name, out, *args):
        frame = _user_frame(2)
        if frame is None:
            return out
        if name == 'nonzero' or (name in ('compress', 'repeat')
                                 and any(isinstance(a, Traced) for a in args)):
            _flag(frame, f'.{name}()', _SHAPE_FROM_VALUES)
        return _traced_result(out)

    def argmax(self, *args, **kwargs):
        return self._from_method('argmax', np.ndarray.argmax(self, *args, **kwargs))

    def argmin(self, *args, **kwargs):
        return self._from_method('argmin', np.ndarray.argmin(self, *args, **kwargs))

    def nonzero(self):
        return self._from_method('nonzero', np.ndarray.nonzero(self))

    def dot(self, *args, **kwargs):
        return self._from_method('dot', np.ndarray.dot(self, *args, **kwargs))

    def searchsorted(self, *args, **kwargs):
        return self._from_method('searchsorted', np.ndarray.searchsorted(self, *args, **kwargs))

    def compress(self, condition, *args, **kwargs):
        return self._from_method('compress', np.ndarray.compress(self, condition, *args, **kwargs),
                                 condition, self)

    def repeat(self, repeats, *args, **kwargs):
        return self._from_method('repeat', np.ndarray.repeat(self, repeats, *args, **kwargs), repeats)

    # The ways a value leaves as a Python object: each is flagged, then does what NumPy does.
    __bool__ = _reading(np.ndarray.__bool__, 'bool()')
    __float__ = _reading(np.ndarray.__float__, 'float()')
    __int__ = _reading(np.ndarray.__int__, 'int()')
    __index__ = _reading(np.ndarray.__index__, 'an index')
    item = _reading(np.ndarray.item, '.item()')
    tolist = _reading(np.ndarray.tolist, '.tolist()')

    # A reshape or a cast of an argument may copy (a non-contiguous batch): remembered, so the
    # replay can make the same call on the new argument (``t.reshape(-1)`` in GPT.loss).
    def reshape(self, *shape, **kwargs):
        out = np.ndarray.reshape(self, *shape, **kwargs)
        if isinstance(out, Traced):
            out._from = (self, 'reshape', shape, kwargs)
        return out

    def astype(self, *args, **kwargs):
        out = np.ndarray.astype(self, *args, **kwargs)
        if isinstance(out, Traced) and out is not self:
            out._from = (self, 'astype', args, kwargs)
        return out


def traced_base(a):
    """The ``Traced`` array that ``a`` is a plain whole view of (``np.asarray`` of a traced
    argument, made by code that wants a plain array), else ``a``: bound like its base."""
    base = getattr(a, 'base', None)
    if a.__class__ is np.ndarray and isinstance(base, Traced) and a.shape == base.shape \
            and a.strides == base.strides and a.dtype == base.dtype \
            and a.__array_interface__['data'][0] == base.__array_interface__['data'][0]:
        return base
    return a


def untraced(a):
    """``a`` as a plain ndarray (a view of a ``Traced`` one); anything else unchanged."""
    return a.view(np.ndarray) if isinstance(a, Traced) else a


def host_traced(value):
    """A host operation's result as the step sees it while tracing: numbers and arrays as
    ``Traced`` (that remember the value: the trace returns it), in their lists and tuples."""
    if isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
        traced = np.asarray(value).view(Traced)
        traced._host_value = value
        return traced
    if value.__class__ in (list, tuple):
        return value.__class__(host_traced(v) for v in value)
    return value


def host_leaves(value, path=()):
    """``[(traced value, index path)]`` of a ``host_traced`` result."""
    if isinstance(value, Traced):
        return [(value, path)]
    if value.__class__ in (list, tuple):
        return [leaf for i, v in enumerate(value) for leaf in host_leaves(v, path + (i,))]
    return []


def untraced_result(value):
    """The step's result as eager returns it: its Variables' arrays plain again, a
    ``Traced`` array plain (a NumPy scalar where it was one, a host operation's result as
    that returned it), inside tuples, lists and dicts."""
    if isinstance(value, Variable):
        if isinstance(value.data, Traced):
            value.data = untraced(value.data)
        return value
    if isinstance(value, Traced):
        host = getattr(value, '_host_value', MISSING)  # a host operation's result, as it was
        if host is not MISSING:
            return host
        return untraced(value)[()] if getattr(value, '_scalar', False) else untraced(value)
    if isinstance(value, (tuple, list)):
        return rebuilt(type(value), [untraced_result(v) for v in value])
    if isinstance(value, dict):
        return {k: untraced_result(v) for k, v in value.items()}
    return value
