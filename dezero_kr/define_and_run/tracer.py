"""Define-and-Run: trace a step once, replay it as straight-line code (``static_graph``).

``dezero_kr.static_graph(fn)`` (or ``@static_graph``) returns a callable with
``fn``'s signature.  The first call with a new *signature* runs ``fn`` eagerly
(Define-by-Run) while recording, in order, every operation it makes:

* each forward ``Function`` call (the Function object, its input and output
  Variables),
* each backward pass (its root, and the order in which the engine ran the
  nodes' ``backward``),
* ``cleargrad()`` of a Variable (``model.cleargrads()``),
* each *host operation* (``Optimizer.update``, ``DataParallel.update``, the
  gradient clipping functions of ``dezero_kr.grad_clip``), recorded as one call
  to be made again (see ``dezero_kr.hooks.host_operation``).

From the recording it generates Python source (``.code``): one line per
operation, calling the very ``forward``/``backward`` methods of (copies of)
the recorded Function objects on the arrays (no rule is written out again: a
kernel changed in its class is the one the replay runs); so the replay does
the same NumPy calls in the same order as eager and the
numbers are the same bit for bit.  The gradient accumulation of ``core.backprop`` is written out (in
the engine's order), the leaf gradients are stored by the core's own
``_store_leaf_grads``, and the host calls are made again.  Later calls with the
same signature run that code: no graph is built, no heap is walked.  A call
frees its arrays when it returns, as an eager step (``keep_buffers=True``
keeps them until the next call replaces each one: its buffers).

What the signature and the guards cover (otherwise the step is traced again):
argument shapes, dtypes, strides and types (Python scalars by value, bit for
bit: ``-0.0`` is not ``0.0``; other objects by identity); ``Config``
(``enable_backprop``, ``train``); each parameter the step uses (array type,
shape, dtype: ``to_gpu``, a lazily created or re-shaped parameter); the state
Variables of the step's layers (an RNN's ``h``: None or a Variable of a
shape); the plain Python values (numbers, strings, flags, None) the step can
read outside its arguments, and the objects there by identity (an optimizer
or model bound to the name again, a layer's new sublayer or parameter, a
constant array ``layer.scale`` replaced).  "Outside its arguments": closure
cells, the globals its code names, default arguments, a ``functools.partial``'s
arguments, a callable object's ``self``, what a ``functools.wraps`` decorator
or a ``static_graph`` wraps, and the same in the user's functions and methods
called from there (three calls deep) and in the user's layers' ``forward``;
one level inside what is found there (the attributes and keys the code names:
of objects, classes, user modules, dict and object arguments; the class
attributes an instance reads; the items of a list of up to 64); the layers'
attributes.  A loss weight annealed between calls retraces; one that changes
at every call, more than ``max_cache`` traces in a row with no replay
between, runs the step eagerly with a warning naming it.  Plans are cached per
signature, at most ``max_cache`` of them (least recently used dropped);
``.stats`` counts traces, replays, eager calls and evictions.

Values are read fresh at every replay: parameters through the Parameter
objects (``load_weights`` replaces ``.data``: the replay reads the new array),
the layers' state Variables from their attributes (and written back, as the
layer does), arrays captured by the step (by identity), and what host
operations return (``clip_grad_norm``'s norm: an output of the replay; a
Python branch on it is a value read, below).

The traps, detected while tracing (the step then runs eagerly for that
signature, with one ``StaticGraphWarning`` naming the line, or ``strict=True``
raises ``StaticGraphError`` once the trace is undone: see ``_Undo``):

* values used by Python: during the trace every array of the step (arguments,
  parameters, results) is a ``_Traced`` ndarray; ``bool``, ``float``, ``int``,
  ``item()``, ``tolist()``, ``hash()`` on one from code outside ``dezero_kr`` is
  a branch or a number that a replay could not recompute.  What NumPy hands
  back to that code (an element ``t[0]``, ``argmax``, ``np.nonzero``,
  ``np.dot`` of vectors, iteration) is made ``_Traced`` too, a Python result of
  a NumPy function (``np.array_equal``) is a value read, and a result whose
  shape depends on the values (``len(t[t > 0])``, ``np.unique``,
  ``np.bincount``) is reported where it is made;
* the step changing a plain Python value outside its arguments (a counter on
  a layer), a parameter outside operations and host operations (weight decay
  by hand after ``opt.update()``), or an argument (``x *= 2``): a replay would
  not.  Parameters and arguments are compared with copies taken at the start
  of the trace and after each host operation;
* an array computed from the step's values outside an operation (host NumPy
  code) that reaches an operation as a constant;
* random numbers drawn outside an operation (the global NumPy RNG moved
  between two operations, or Python's ``random`` module during the step).  A
  trace that created lazily initialised parameters (whose draws are not
  replayed, and could hide others) is confirmed by tracing the next call.
  Operations that draw (``dropout``) are replayed by calling their
  ``forward``, which draws fresh numbers: the same draws as eager under the
  same seed;
* a Variable computed by the step and kept with its graph (not unchained), a
  hook or ``retain_grad`` on an intermediate, ``create_graph``, ``autograd.grad``;
* GPU (CuPy) arrays among the arguments or parameters: only NumPy arrays are
  traced and replayed (found before the trace: the step is not traced at all).

A replay returns new leaf Variables around fresh arrays (nothing aliases a
later replay).  If a replay raises, the batch norm running statistics and the
layers' state are restored; parameters and optimizer state are untouched, as
the optimizer has not run yet, unless the error comes from inside the update
itself (then as eager: what ran has run).  Gradients are left as eager leaves
them (keeping the old ones would hold a second set of gradients in memory).
A static step holds a lock while it replays or traces; other threads keep
using the model eagerly (the recording observes only its own thread).
"""
import builtins
import collections
import copy
import ctypes
import dis
import functools
import inspect
import keyword
import os
import random
import sys
import sysconfig
import threading
import unicodedata
import warnings
import weakref

import numpy as np

from dezero_kr import core, cuda, modes, reverse_pass
from dezero_kr import hooks as _hooks
from dezero_kr.core import Config, Parameter, Variable, as_array
from dezero_kr.frames import is_internal, user_line
from dezero_kr.graph.dot import render_dot
from dezero_kr.layers import Layer



class StaticGraphError(RuntimeError):
    """A step that cannot be replayed (``strict=True``), or a bad use of ``static_graph``."""


class StaticGraphWarning(UserWarning):
    """A step that runs eagerly because a replay could not be trusted (the message says why)."""


class _Unreplayable(Exception):
    """Raised inside the recorder/planner: the reason a step cannot be replayed."""


# =============================================================================
# Traced arrays: value reads become visible while tracing
# =============================================================================
_tracing = threading.local()  # .recorder: the active _Recorder of this thread, or absent


def _user_frame(depth):
    """The frame ``depth`` levels above the caller if it is user code (not dezero_kr's or
    NumPy's) and this thread is tracing; else None."""
    if getattr(_tracing, 'recorder', None) is None:
        return None
    frame = sys._getframe(depth + 1)
    return None if is_internal(frame.f_code.co_filename) else frame


def _flag(frame, what, why='Python control flow or a number that depends on the data: a replay '
                            'would keep the traced value'):
    _tracing.recorder.fail(f'{what} of a value computed by the step at {frame.f_code.co_filename}:'
                           f'{frame.f_lineno} ({why})')


def _value_read(arr, what):
    """A ``_Traced`` array's value reaches Python: flag it if user code (not dezero_kr) did it."""
    frame = _user_frame(2)
    if frame is not None:  # (the engine's own checks, label ranges and rules' special cases, run
        _flag(frame, what)  # again at replay)


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
    if name in ('delete', 'insert', 'repeat') and any(isinstance(a, _Traced) for a in args[1:2]):
        return f'np.{name}() at positions from the data'
    if name.startswith('histogram') and isinstance(kwargs.get('bins', args[1] if len(args) > 1 else 0), str):
        return f'np.{name}() with bins chosen from the data'
    return None


# Functions of the arguments' shapes and dtypes only: their Python results are not value reads.
_SHAPE_ONLY = frozenset(getattr(np, n) for n in (
    'shape', 'ndim', 'size', 'isscalar', 'iscomplexobj', 'isrealobj', 'result_type', 'can_cast',
    'may_share_memory', 'shares_memory', 'isfortran') if hasattr(np, n))


def _rebuilt(cls, items):
    """A list, tuple or named tuple of class ``cls`` holding ``items``."""
    return cls(*items) if hasattr(cls, '_fields') else cls(items)


def _traced_result(out):
    """What user code gets from NumPy while tracing: arrays and NumPy scalars as ``_Traced``
    (NumPy drops the subclass in ``np.nonzero``, ``t[0]``, ``argmax``, ``np.dot`` of vectors...),
    so a value computed from the step's data stays recognisable."""
    if isinstance(out, np.ndarray):
        return out if isinstance(out, _Traced) else out.view(_Traced)
    if isinstance(out, np.generic):
        out = np.asarray(out).view(_Traced)
        out._scalar = True  # returned from the step as the NumPy scalar it was
        return out
    if isinstance(out, tuple):
        return _rebuilt(type(out), [_traced_result(o) for o in out])
    if isinstance(out, list):
        return [_traced_result(o) for o in out]
    return out


class _Traced(np.ndarray):
    """An ndarray that reports when user code turns its values into Python values.

    Used only while tracing; NumPy keeps the subclass through ufuncs and most
    functions, and what user code gets back from the others (a NumPy scalar, an
    index array) is made ``_Traced`` too, so an array computed from the step's
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
        return _traced_result(out)  # an element: a 0-d _Traced, not a NumPy scalar

    def __iter__(self):
        if self.ndim == 1 and _user_frame(1) is not None:
            return (self[i, ...] for i in range(self.shape[0]))  # elements as 0-d _Traced
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
                                 and any(isinstance(a, _Traced) for a in args)):
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

    def __bool__(self):
        _value_read(self, 'bool()')
        return np.ndarray.__bool__(self)

    def __float__(self):
        _value_read(self, 'float()')
        return np.ndarray.__float__(self)

    def __int__(self):
        _value_read(self, 'int()')
        return np.ndarray.__int__(self)

    def __index__(self):
        _value_read(self, 'an index')
        return np.ndarray.__index__(self)

    def item(self, *args):
        _value_read(self, '.item()')
        return np.ndarray.item(self, *args)

    def tolist(self):
        _value_read(self, '.tolist()')
        return np.ndarray.tolist(self)

    # A reshape or a cast of an argument may copy (a non-contiguous batch): remembered, so the
    # replay can make the same call on the new argument (``t.reshape(-1)`` in GPT.loss).
    def reshape(self, *shape, **kwargs):
        out = np.ndarray.reshape(self, *shape, **kwargs)
        if isinstance(out, _Traced):
            out._from = (self, 'reshape', shape, kwargs)
        return out

    def astype(self, *args, **kwargs):
        out = np.ndarray.astype(self, *args, **kwargs)
        if isinstance(out, _Traced) and out is not self:
            out._from = (self, 'astype', args, kwargs)
        return out


def _traced_base(a):
    """The ``_Traced`` array that ``a`` is a plain whole view of (``np.asarray`` of a traced
    argument, made by code that wants a plain array), else ``a``: bound like its base."""
    base = getattr(a, 'base', None)
    if a.__class__ is np.ndarray and isinstance(base, _Traced) and a.shape == base.shape \
            and a.strides == base.strides and a.dtype == base.dtype \
            and a.__array_interface__['data'][0] == base.__array_interface__['data'][0]:
        return base
    return a


def _plain(a):
    """``a`` as a plain ndarray (a view of a ``_Traced`` one); anything else unchanged."""
    return a.view(np.ndarray) if isinstance(a, _Traced) else a


# =============================================================================
# Recording
# =============================================================================
class _Node:
    """One recorded forward operation: the Function, its input and output Variables."""
    __slots__ = ('f', 'inputs', 'outputs', 'line', 'draws')

    def __init__(self, f, inputs, outputs):
        self.f, self.inputs, self.outputs = f, tuple(inputs), tuple(outputs)
        self.line = None
        self.draws = False


class _Pass:
    """One recorded backward pass: its seeds and the nodes' backward calls in the engine's order."""

    def __init__(self, seeds):
        self.seeds = seeds        # [(root Variable, seed Variable)]
        self.steps = []           # [(f, gys, gxs)]


def _rng_state():
    return np.random.get_state()


def _same_rng(a, b):
    return a[2] == b[2] and a[3] == b[3] and np.array_equal(a[1], b[1])


_MT_STATE_BYTES = 624 * 4 + 4  # MT19937's key words and position: the whole state, in C


def _rng_fingerprint():
    """The bytes of the global RNG's state, read in place (``get_state`` copies it into a tuple of
    Python objects: ~50x slower, and tracing looks at it once per operation)."""
    bitgen = np.random.mtrand._rand._bit_generator
    return ctypes.string_at(bitgen.ctypes.state_address, _MT_STATE_BYTES)


class _Recorder(_hooks.Observer):
    """The observer that records a step (thread-local: other threads are not seen)."""

    def __init__(self):
        self.events = []          # ('node', _Node) | ('pass', _Pass) | ('clear', Variable) | ('host', ...)
        self.nodes = {}           # id(Function) -> _Node
        self.outputs = {}         # id(Variable) -> Variable made by a recorded node
        self.reason = None
        self.host_depth = 0
        self.pass_ = None
        self.rng = _rng_state()
        self.rng_fingerprint = _rng_fingerprint()
        self.py_random = random.getstate()  # Python's own generator: no operation draws from it
        self.lazy_seen = False  # a parameter initialised during the trace (its draws hide others')

    def fail(self, reason):
        if self.reason is None:
            self.reason = reason

    # --- engine callbacks (dezero_kr.hooks) ---------------------------------
    def on_forward(self, f, inputs, outputs):
        if self.host_depth or self.pass_ is not None:
            return  # inside a host call or a backward rule: replayed as a whole
        node = _Node(f, inputs, outputs)
        node.line = user_line(2)
        self._check_rng(node)
        self.events.append(('node', node))
        self.nodes[id(f)] = node
        for y in outputs:
            self.outputs[id(y)] = y
            if y.data.__class__ is np.ndarray:  # np.asarray inside forward drops the subclass
                y.data = y.data.view(_Traced)

    def sync_rng(self):
        """Draws inside a backward pass or a host call are replayed with it: start from here."""
        fingerprint = _rng_fingerprint()
        if fingerprint != self.rng_fingerprint:
            self.rng, self.rng_fingerprint = _rng_state(), fingerprint

    def lazy_init(self):
        """True if a parameter got its first array since the last look (a layer's lazy init draws)."""
        done = {i for i in self.lazy if self.params[i].data is not None}
        self.lazy -= done
        self.lazy_seen = self.lazy_seen or bool(done)
        return bool(done)

    def _check_rng(self, node):
        """The global RNG moved since the last operation: did this one draw, or host code?"""
        fingerprint = _rng_fingerprint()
        if fingerprint == self.rng_fingerprint:
            return
        state = _rng_state()  # self.rng is the full state of the last fingerprint: still valid
        self.rng_fingerprint = fingerprint
        if self.lazy_init():  # Linear's weights drawn on the first call: not replayed, as eager
            self.rng = state
            return
        # Run the operation again from the old RNG state on a copy: if it draws exactly the
        # numbers that moved the RNG, the draws are its own (replayed by calling forward).
        probe = copy.copy(node.f)
        for name in _slot_names(type(probe)):
            value = getattr(probe, name, None)
            if isinstance(value, np.ndarray):
                setattr(probe, name, value.copy())  # batch norm's running stats change in place
        np.random.set_state(self.rng)
        try:
            probe.forward(*[x.data for x in node.inputs])
            own = _same_rng(_rng_state(), state)
        except Exception:
            own = False
        np.random.set_state(state)
        self.rng = state
        if own:
            node.draws = True
        else:
            self.fail(f'random numbers were drawn outside an operation before the '
                      f'{type(node.f).__name__} called at {user_line(2)} (a replay would reuse '
                      f'them); draw them inside a Function, or pass them as an argument')

    def on_backward(self, f, gys, gxs):
        if self.pass_ is not None and not self.host_depth:
            self.pass_.steps.append((f, gys, gxs))

    def on_pass_begin(self, grads, retain_grad, create_graph, capture):
        if self.host_depth:
            return
        if create_graph or capture is not None or retain_grad:
            what = ('create_graph=True' if create_graph else 'autograd.grad' if capture is not None
                    else 'retain_grad=True')
            self.fail(f'a backward pass with {what} at {user_line(2)} (only first-order '
                      f'backward into .grad is replayed)')
        if self.pass_ is not None:
            self.fail('a backward pass started inside another one')
        self.pass_ = _Pass(list(grads.items()))
        self.events.append(('pass', self.pass_))

    def on_pass_end(self):
        if not self.host_depth:
            self.pass_ = None
            self.sync_rng()

    def on_cleargrad(self, var):
        if not self.host_depth and self.pass_ is None:
            self.events.append(('clear', var))

    def on_host_call(self, fn, args, kwargs):
        self.host_depth += 1
        if self.host_depth > 1:
            return None
        # Iterators (model.params()) are made lists: the replay makes the same call again.
        args = tuple(list(a) if _is_iterator(a) else a for a in args)
        kwargs = {k: list(v) if _is_iterator(v) else v for k, v in kwargs.items()}
        self.host_result = []  # filled on return: the call's result, as the step got it
        self.events.append(('host', fn, args, kwargs, self.host_result))
        self.before_host()
        return args, kwargs

    def on_host_return(self, result):
        """The step gets a host operation's numbers (a gradient norm) as ``_Traced`` values:
        a branch on one is a value read, and returning one makes it an output of the replay."""
        self.host_depth -= 1
        if self.host_depth:
            return result
        self.after_host()
        self.sync_rng()
        result = _host_traced(result)
        self.host_result.append(result)
        return result

    # Set by the tracer: plain arrays for the host call, traced ones again after it.
    def before_host(self):
        pass

    def after_host(self):
        pass


def _host_traced(value):
    """A host operation's result as the step sees it while tracing: numbers and arrays as
    ``_Traced`` (that remember the value: the trace returns it), in their lists and tuples."""
    if isinstance(value, (bool, int, float, complex, np.generic, np.ndarray)):
        traced = np.asarray(value).view(_Traced)
        traced._host_value = value
        return traced
    if value.__class__ in (list, tuple):
        return value.__class__(_host_traced(v) for v in value)
    return value


def _host_leaves(value, path=()):
    """``[(traced value, index path)]`` of a ``_host_traced`` result."""
    if isinstance(value, _Traced):
        return [(value, path)]
    if value.__class__ in (list, tuple):
        return [leaf for i, v in enumerate(value) for leaf in _host_leaves(v, path + (i,))]
    return []


def _is_iterator(a):
    return hasattr(a, '__next__') and hasattr(a, '__iter__')


_slot_cache = {}


def _slot_names(cls):
    """Every ``__slots__`` name of a Function class and its bases (no __weakref__/__dict__)."""
    names = _slot_cache.get(cls)
    if names is None:
        names = []
        for klass in cls.__mro__:
            slots = klass.__dict__.get('__slots__', ())
            if isinstance(slots, str):
                slots = (slots,)
            names += [s for s in slots if s not in ('__weakref__', '__dict__') and s not in names]
        _slot_cache[cls] = names = tuple(names)
    return names


def _copy_function(f):
    """``copy.copy(f)``: a Function with slots only is copied slot by slot (``copy.copy``
    goes through ``__reduce_ex__``: about 4x slower, and a trace copies every operation)."""
    cls = type(f)
    if hasattr(f, '__dict__') or cls.__reduce_ex__ is not object.__reduce_ex__:
        return copy.copy(f)
    g = cls.__new__(cls)
    for name in _slot_names(cls):
        value = getattr(f, name, _MISSING)
        if value is not _MISSING:
            setattr(g, name, value)
    return g


_init_cache = {}


def _init_names(cls):
    """The parameter names of ``cls.__init__``: attributes set before ``forward`` runs."""
    names = _init_cache.get(cls)
    if names is None:
        try:
            names = frozenset(inspect.signature(cls.__init__).parameters) - {'self'}
        except (TypeError, ValueError):
            names = frozenset()
        _init_cache[cls] = names
    return names


def _arrays_in(value):
    """The ndarrays in an attribute value (an array, or a tuple/list of indices)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, np.ndarray)]
    return []


# =============================================================================
# State the step reads outside its arguments: layers reachable from fn
# =============================================================================
def _reachable(fn, args, kwargs):
    """The objects the step can reach: its arguments, what its functions name (closure cells,
    globals, defaults, ``self``, a partial's arguments: ``_names_of_functions``), and one level
    inside other objects there (a class holding model and optimizer)."""
    roots = list(args) + list(kwargs.values()) + [v for v, _ in _names_of_functions(fn, (), args, kwargs)[1]]
    for obj in list(roots):
        if not isinstance(obj, (Layer, list, tuple, dict, type)) and hasattr(obj, '__dict__') \
                and not inspect.ismodule(obj) and not inspect.isroutine(obj):
            roots += list(vars(obj).values())
    return roots


def _optimizers_of(fn, args, kwargs):
    """The optimizers the step can reach (``_reachable``), each once."""
    return list({id(o): o for o in _reachable(fn, args, kwargs)
                 if not isinstance(o, type) and hasattr(o, 'update_one')}.values())


def _layers_of(fn, args, kwargs):
    """The Layers the step can reach (``_reachable``; an optimizer's target), and their sublayers."""
    layers, seen, stack = [], set(), _reachable(fn, args, kwargs)
    while stack:
        obj = stack.pop()
        if isinstance(obj, (list, tuple)):
            stack += list(obj)
            continue
        target = getattr(obj, 'target', None)  # an optimizer: its model
        if not isinstance(obj, Layer) and isinstance(target, Layer):
            obj = target
        if isinstance(obj, Layer) and id(obj) not in seen:
            seen.add(id(obj))
            layers.append(obj)
            stack += [v for v in obj.__dict__.values() if isinstance(v, (Layer, list, tuple))]
    return layers


def _entry_functions(fn, found, tops):
    """The Python functions that calling ``fn`` runs first: through bound methods,
    ``functools.partial``, a callable object's ``__call__``, ``__wrapped__`` (a
    ``functools.wraps`` decorator) and ``static_graph``.  The objects bound on the way
    (``self``, a partial's arguments) go to ``tops``, a partial's keywords to ``found``."""
    funcs, stack, seen = [], [fn], set()
    while stack:
        f = stack.pop()
        if id(f) not in seen:
            seen.add(id(f))
            if inspect.isfunction(f):
                funcs.append(f)
            stack += _called_by(f, found, tops)
    return funcs


def _called_by(f, found, tops):
    """What calling ``f`` calls (see ``_entry_functions``)."""
    if isinstance(f, StaticGraph):
        return [f.fn]
    if isinstance(f, functools.partial):
        tops += [(a, f'the argument {i} of a partial') for i, a in enumerate(f.args)]
        found += [(f.keywords, k, 'item', f'the partial keyword {k!r}', 'all') for k in f.keywords]
        tops += [(v, k) for k, v in f.keywords.items()]
        return [f.func]
    if inspect.ismethod(f):
        tops.append((f.__self__, 'self'))
        return [f.__func__]
    if inspect.isfunction(f):
        return [f.__wrapped__] if getattr(f, '__wrapped__', None) is not None else []
    call = getattr(type(f), '__call__', None)  # an object with __call__ (a Layer: forward)
    if isinstance(f, type) or inspect.isroutine(f) or not inspect.isfunction(call):
        return []
    tops.append((f, 'self'))
    return [] if is_internal(call.__code__.co_filename) else [call]


def _defaults(func, found):
    """``[(value, name)]`` of a function's default arguments (``def step(x, m=model)``); the
    keyword-only ones are guarded as entries of their dict (``found``)."""
    code, defaults = func.__code__, func.__defaults__ or ()
    here = list(zip(defaults, code.co_varnames[code.co_argcount - len(defaults):code.co_argcount]))
    kw = func.__kwdefaults__ or {}
    found += [(kw, k, 'item', f'the default {k!r}', 'all') for k in kw]
    return here + [(v, k) for k, v in kw.items()]


def _state_slots(layers):
    """``{(layer, name): value}`` for the layers' attributes holding a non-Parameter Variable or None."""
    slots = {}
    for layer in layers:
        for name, v in list(layer.__dict__.items()):
            if name in ('inputs', 'outputs') or name.startswith('_'):
                continue
            if v is None or (isinstance(v, Variable) and not isinstance(v, Parameter)):
                slots[(layer, name)] = v
    return slots


# Python values outside the arguments (a loss weight annealed between calls, a flag, a
# temperature on a layer) enter the trace as constants: the guard compares them at each call.
_PLAIN = (bool, int, float, complex, str, bytes, type(None), np.generic)


def _plain_value(v):
    return isinstance(v, _PLAIN) or (v.__class__ is tuple and len(v) <= 8
                                     and all(isinstance(x, _PLAIN) for x in v))


def _skipped_holder(obj):
    """Objects whose attributes are not the step's inputs: functions, the modules and classes
    of libraries (NumPy's, dezero_kr's, the standard library's), and optimizers (their update
    runs again at every replay and reads its own state fresh)."""
    return inspect.isroutine(obj) or _library(obj) or hasattr(obj, 'update_one')


_LIBRARY_DIRS = tuple({os.path.abspath(p) for p in [os.path.dirname(os.__file__)] + [
    sysconfig.get_paths()[k] for k in ('stdlib', 'platstdlib', 'purelib', 'platlib')]})


def _library(obj):
    """A module or class of a library (not the user's): a built-in one, NumPy's, dezero_kr's,
    the standard library's or an installed package's; False for other objects (a notebook's
    ``__main__`` and a module made at run time are the user's)."""
    if isinstance(obj, type):
        obj = sys.modules.get(obj.__module__)
        if obj is None:
            return True
    elif not inspect.ismodule(obj):
        return False
    path = getattr(obj, '__file__', None)
    if path is None:
        return obj.__name__ in sys.builtin_module_names
    return is_internal(path) or os.path.abspath(path).startswith(_LIBRARY_DIRS)


def _inside(obj, name, names):
    """The sources one level inside ``obj`` that code naming ``names`` (attributes, string and
    int constants) can read: a dict's entries, a list's items (up to 64), an object's, a
    class's or a module's attributes, and the class attributes an instance reads."""
    if isinstance(obj, dict):
        return [(obj, k, 'item', f'{name}[{k!r}]', 'all') for k in list(obj) if k in names]
    if obj.__class__ is list:
        return [(obj, None, 'list', name, 'all')] if len(obj) <= _LIST_ITEMS else []
    if isinstance(obj, Layer) or _skipped_holder(obj) or not hasattr(obj, '__dict__'):
        return []
    own = vars(obj)
    found = [(obj, k, 'attr', f'{name}.{k}', 'all') for k in list(own) if k in names]
    if isinstance(obj, type) or inspect.ismodule(obj):
        return found
    shadowed = []  # self.beta of a class attribute: the class's, and the instance's own (missing)
    for klass in type(obj).__mro__:
        if not _library(klass):
            keys = [k for k in list(vars(klass)) if k in names and k not in own and _plain_value(vars(klass)[k])]
            found += [(klass, k, 'attr', f'{klass.__name__}.{k}', 'all') for k in keys]
            shadowed += [(obj, k, 'attr', f'{name}.{k}', 'all') for k in keys]
    return found + shadowed


_LIST_ITEMS = 64  # a longer list the step names is not guarded (its items: a data set)


def _methods(obj, names):
    """The user's functions ``obj.<name>`` for ``names`` (a method, a module's function)."""
    if _skipped_holder(obj) or not hasattr(obj, '__dict__'):
        return []
    owners = [obj] if inspect.ismodule(obj) else obj.__mro__ if isinstance(obj, type) else type(obj).__mro__
    funcs = []
    for owner in owners:
        if owner is not object and not _library(owner):
            d = vars(owner)
            funcs += [getattr(d[n], '__func__', d[n]) for n in names & d.keys()]
    return [f for f in funcs if inspect.isfunction(f)]


def _value_sources(fn, layers, args=(), kwargs=None):
    """``[(holder, key, kind, description, objects)]``: where the step reads values outside its
    arguments: closure cells and the globals loaded by its code, by the user's functions found
    there (three calls deep) and by its user-defined layers' ``forward``; ``self``; the
    attributes and dict entries one level inside what is found there that the code names; the
    layers' attributes.  ``kind``: 'item' (a dict entry), 'attr', 'cell'.  ``objects``: 'all'
    (an object there is guarded by identity: a model or optimizer bound to the name again) or
    'structure' (only sublayers and parameters: a layer's other objects are its state)."""
    found, tops, attrs, consts = _names_of_functions(fn, layers, args, kwargs)
    for obj, name in tops:  # one level in: the entries and attributes that code names
        found += _inside(obj, name, attrs | consts)
    paths = _param_paths(layers)
    for layer in layers:
        own = [paths[id(v)] for v in vars(layer).values() if isinstance(v, Parameter) and id(v) in paths]
        name = own[0].rpartition('/')[0] if own and '/' in own[0] else type(layer).__name__
        found += [(layer, k, 'attr', f'{name}.{k}', 'structure') for k in list(vars(layer))
                  if k not in ('inputs', 'outputs')]
    return found


def _names_of_functions(fn, layers, args=(), kwargs=None):
    """The globals (as loaded by name) and closure cells of ``fn``, of the user's functions found
    there (three calls deep), of the user's layers' ``forward`` and of the methods of the
    objects found there and of the arguments that this code names (``trainer.loss``): (sources,
    [(value, name)], the attribute names and the string and int constants their code uses)."""
    found, tops, attrs, consts, seen = [], [], set(), set(), set()
    funcs = [(f, 0) for f in _entry_functions(fn, found, tops)]
    funcs += [(type(layer).forward, 1) for layer in layers]
    names = _arg_names(fn, args, kwargs or {})
    tops += [(v, names.get(path, f'the argument {path[1]!r}')) for path, v in _argument_objects(args, kwargs)]
    for _ in range(3):  # then the methods of what was found, named by any of that code
        _walk_functions(funcs, found, tops, attrs, consts, seen)
        objects = {id(obj): obj for obj, _ in tops}.values()
        funcs = [(f, 1) for obj in objects for f in _methods(obj, attrs) if id(f) not in seen]
        if not funcs:
            break
    return found, tops, attrs, consts


def _walk_functions(funcs, found, tops, attrs, consts, seen):
    """``_names_of_functions``' walk from ``funcs`` ([(function, depth)]), into its lists."""
    while funcs:
        func, depth = funcs.pop()
        code = getattr(func, '__code__', None)
        if code is None or id(func) in seen or (depth and is_internal(code.co_filename)):
            continue
        seen.add(id(func))
        names, more_attrs, more_consts = _code_facts(code)
        attrs |= more_attrs
        consts |= more_consts
        glb = getattr(func, '__globals__', {})
        here = [(glb[n], n) for n in sorted(names) if n in glb]
        found += [(glb, n, 'item', f'the global {n!r}', 'all') for _, n in here]
        for name, cell in zip(code.co_freevars, getattr(func, '__closure__', None) or ()):
            found.append((cell, name, 'cell', f'the closure variable {name!r}', 'all'))
            value = _read_value(cell, name, 'cell')
            if value is not _MISSING:
                here.append((value, name))
        here += _defaults(func, found)
        tops += here
        if depth < 3:  # the user's functions found there, what they call first, their methods
            funcs += [(f, depth + 1) for obj, _ in here if callable(obj) and not isinstance(obj, (type, Layer))
                      for f in _entry_functions(obj, found, tops)]
            funcs += [(f, depth + 1) for obj, _ in here for f in _methods(obj, more_attrs)]


def _argument_objects(args, kwargs):
    """``[(path, object)]``: the arguments the signature keys by identity (a dict or a config
    object: what the step reads inside them is guarded as the values outside the arguments)."""
    items = [(('args', i), a) for i, a in enumerate(args)] + [(('kwargs', k), v) for k, v in (kwargs or {}).items()]
    return [(path, v) for path, v in items if not isinstance(v, (np.ndarray, Variable, tuple, list) + _PLAIN)]


_facts = {}  # code object -> _code_facts (read once: dis is ~100 us a function)


def _code_facts(code):
    """(global names it loads, attribute names, string constants) of ``code`` and the code of
    the functions defined in it."""
    facts = _facts.get(code)
    if facts is None:
        names, attrs, consts, stack = set(), set(), set(), [code]
        while stack:
            c = stack.pop()
            for ins in dis.get_instructions(c):
                if ins.opname in ('LOAD_GLOBAL', 'LOAD_NAME'):
                    names.add(ins.argval)
                elif ins.opname in ('LOAD_ATTR', 'LOAD_METHOD'):
                    attrs.add(ins.argval)
            consts.update(k for k in c.co_consts if isinstance(k, (str, int)) and not isinstance(k, bool))
            stack += [k for k in c.co_consts if inspect.iscode(k)]
        facts = _facts[code] = (names, attrs, consts)
    return facts


def _read_value(holder, key, kind):
    try:
        if kind == 'item':
            return holder.get(key, _MISSING)
        if kind == 'cell':
            return holder.cell_contents
        if kind == 'list':
            return tuple(holder)
        return holder.__dict__.get(key, _MISSING)
    except ValueError:  # an empty cell
        return _MISSING


def _same_value(a, b):
    """Equal plain values: of one class, and bit for bit for floats (``-0.0`` is not ``0.0``:
    ``x * -0.0`` has other signs; NaN is NaN)."""
    return a is b or (a.__class__ is b.__class__ and _exact(a) == _exact(b))


def _exact(v):
    """A float's bits (``float.hex``: the sign of zero, NaN equal to NaN), a complex's, a
    tuple's items so; anything else as it is."""
    if isinstance(v, float):
        return v.hex()
    if isinstance(v, complex):
        return (v.real.hex(), v.imag.hex())
    if isinstance(v, (np.floating, np.complexfloating)):
        return v.tobytes()
    if v.__class__ is tuple:
        return tuple(_exact(x) for x in v)
    return v


def _same_items(items, traced):
    """A list's items are those of the trace: the same objects, or equal plain values."""
    return len(items) == len(traced) and all(
        a is b or (a.__class__ is b.__class__ and _plain_value(a) and a == b) for a, b in zip(items, traced))


def _value_guards(sources, before):
    """The guard entries ``(holder, key, kind, value, description, by_value)``, read after the
    trace: plain values compared by value, objects by identity (see ``_value_sources``).
    Raises _Unreplayable if the step itself changed one (a replay would not: a counter kept on
    a layer, a global the step assigns).  ``before``: the values read before the trace (one set
    from None during it is a lazy initialisation)."""
    guards = []
    for (holder, key, kind, what, objects), old in zip(sources, before):
        new = _read_value(holder, key, kind)
        by_value = _plain_value(new) or new is _MISSING
        if not by_value and (objects == 'structure' and not isinstance(new, (Layer, Parameter))):
            continue
        changed = not _holds(kind, old, new, by_value and _plain_value(old))
        if old is not _MISSING and old is not None and changed:
            change = 'its items' if kind == 'list' else f'{old!r} -> {new!r}' if by_value else 'another object'
            raise _Unreplayable(f'the step changes {what} ({change}), outside its arguments: a '
                                f'replay would not')
        guards.append((holder, key, kind, new, what, by_value))
    return guards


def _changed_value(plan):
    """The description of a value guard of ``plan`` that no longer holds, or None."""
    for holder, key, kind, value, what, by_value in getattr(plan, 'value_guards', ()):
        if not _holds(kind, _read_value(holder, key, kind), value, by_value):
            return f'{what} ({value!r} when traced)' if by_value or kind == 'list' else f'{what} (another object)'
    return None


def _holds(kind, v, value, by_value):
    """A value read now (``v``) is the traced one: the same object, an equal plain value, a
    list of the same items."""
    if kind == 'list':
        return _same_items(v, value)
    return v is value or (by_value and _same_value(v, value))


def _param_paths(layers):
    """``{id(Parameter): 'path'}`` for naming parameters in the generated code."""
    paths = {}
    for i, layer in enumerate(layers):
        for path, p in layer.named_params():
            paths.setdefault(id(p), path)
    return paths


# =============================================================================
# The signature of a call
# =============================================================================
def _describe(value, keep):
    """A hashable description of one argument; objects described by identity go to ``keep``."""
    if isinstance(value, np.ndarray):
        return ('array', type(value), value.shape, value.dtype.str, value.strides)
    if isinstance(value, Variable):
        d = value.data
        if d is None:
            return ('variable', type(value), None)
        return ('variable', type(value), type(d), d.shape, d.dtype.str, d.strides)
    if value is None or isinstance(value, (bool, int, float, complex, str, bytes)):
        return ('value', type(value), _exact(value))  # -0.0 and 0.0: two signatures
    if cuda.cp is not None and isinstance(value, cuda.cp.ndarray):  # a GPU array (runs eagerly)
        return ('array', type(value), value.shape, value.dtype.str, value.strides)
    if isinstance(value, (tuple, list)):
        return (type(value).__name__,) + tuple(_describe(v, keep) for v in value)
    keep.append(value)
    return ('object', id(value))


# =============================================================================
# The static step
# =============================================================================
class StaticGraph:
    """What ``static_graph(fn)`` returns: call it as ``fn``; ``.code``, ``.plot()``, ``.stats``.

    ``max_cache``: how many traced plans (one per signature and state) are kept.
    ``strict``: raise ``StaticGraphError`` instead of running eagerly with a warning.
    ``keep_buffers``: keep a call's arrays until the next call replaces each of them
    (the allocator then hands the same memory back: faster for large activations, as
    ``bench cnn`` shows, at the cost of one step's activations held between calls);
    by default a call frees its arrays when it returns, as an eager step does.
    """

    def __init__(self, fn, max_cache=8, strict=False, keep_buffers=False):
        if not callable(fn):
            raise TypeError(f'static_graph: fn must be callable, got {type(fn).__name__} {fn!r:.60}')
        if not isinstance(max_cache, int) or isinstance(max_cache, bool) or max_cache < 1:
            raise ValueError(f'static_graph: max_cache must be a positive int, got {max_cache!r}')
        self.fn = fn
        # The trace's arrays are an ndarray subclass, whose first sight by the core imports
        # numpy.ma (its masked-array check, ~30 ms once per process): done here, once, when a
        # step is made static, rather than inside the first trace.
        np.ma.MaskedArray  # noqa: B018 (the attribute access is the lazy import)
        self.max_cache = max_cache
        self.strict = strict
        self.keep_buffers = keep_buffers
        self.__name__ = getattr(fn, '__name__', 'step')
        self.__doc__ = getattr(fn, '__doc__', None)
        self.__wrapped__ = fn
        self._cache = collections.OrderedDict()  # key -> [_Plan or _Eager]
        self._retraces = collections.Counter()  # key -> traces since its last replay (guards failed)
        self._lock = threading.RLock()
        self._last = None
        self.stats = {'traces': 0, 'replays': 0, 'eager': 0, 'evictions': 0}

    def __repr__(self):
        return f'<static_graph {self.__name__}: {self.stats}>'

    def __reduce_ex__(self, protocol):
        raise TypeError(f'static_graph({self.__name__}) cannot be pickled or copied: its plans are '
                        f'bound to the live model and optimizer; pickle or copy those, and make the '
                        f'copy\'s step static with static_graph(step) again')

    @property
    def cache_size(self):
        """The number of plans kept (one per signature and state seen; at most ``max_cache``)."""
        return sum(len(v) for v in self._cache.values())

    @property
    def code(self):
        """The generated Python source of the last plan traced or replayed (a str)."""
        if self._last is None:
            raise StaticGraphError(f'{self.__name__}.code: call the step once first (it is traced '
                                   f'on its first call)')
        return self._last.source

    def plot(self, to_file='static_graph.png', **kwargs):
        """Draw the last plan (forward operations and their backward) with ``plot_dot_graph``'s renderer."""
        if self._last is None:
            raise StaticGraphError(f'{self.__name__}.plot: call the step once first')
        return render_dot(self._last.dot(), to_file=to_file, **kwargs)

    def __call__(self, *args, **kwargs):
        """``fn(*args, **kwargs)``: replayed when a plan of this signature passes its guards,
        else traced (or run eagerly where the step cannot be replayed)."""
        if getattr(_tracing, 'recorder', None) is not None or _hooks.observers():
            return self.fn(*args, **kwargs)  # inside another trace, or observed (detect_anomaly, jvp)
        keep = []
        key = _key(args, kwargs, keep)
        with self._lock:
            plans = self._cache.get(key)
            if plans is not None:
                self._cache.move_to_end(key)
                for i, plan in enumerate(plans):
                    if plan.guard(args, kwargs):
                        if plan.eager:
                            self._refuse(plan, 3, warn=False)  # (strict: raises, nothing run)
                            self.stats['eager'] += 1
                            return self.fn(*args, **kwargs)
                        if (plan.frozen or plan.lazy_initialized) and not plan.confirmed:
                            return self._confirm(key, i, plan, args, kwargs, keep)
                        self._last = plan
                        self.stats['replays'] += 1
                        if self._retraces:
                            self._retraces.pop(key, None)  # a value that changes now and then
                        return plan.run(args, kwargs)
            return self._trace(key, args, kwargs, keep)

    def _confirm(self, key, i, plan, args, kwargs, keep):
        """Trace a second call and compare the constants the first one built outside operations.

        An array made by host NumPy code from the step's data without a value
        being read (``q[np.arange(n), t] += 1`` writes labels into a new array)
        cannot be seen while tracing; it differs between calls, so a second
        trace that finds the same constants confirms the plan.  (Equal data in
        two calls would hide it: such a step is not trusted more than that.)
        """
        def check(new):
            changed = _changed_constant(plan.frozen, new.frozen)
            if changed is None:
                new.confirmed = True
                return new
            return _Eager(f'{changed} was built outside an operation from values that change '
                          f'between calls (host NumPy code): a replay would keep the first one')
        result, new = self._traced(args, kwargs, keep, check)
        self._cache[key][i] = new
        if new.eager:
            self._refuse(new, 4)
        else:
            self._last = new
        return result

    def _trace(self, key, args, kwargs, keep):
        plans = self._cache.get(key)
        if plans:  # traced before, but no plan's guards hold now
            self._retraces[key] += 1
            if self._retraces[key] > self.max_cache:  # no replay between: changes at every call
                changed = _changed_value(plans[0])
                plan = _Eager(f'it was traced again {self._retraces[key]} times in a row for one '
                              f'signature' + (f'; {changed} changed' if changed else '')
                              + ' (pass a value that changes at every call as an array argument: '
                              'arrays are data, numbers are constants of the plan)')
                plans.insert(0, plan)
                self._refuse(plan, 3)
                self.stats['eager'] += 1
                return self.fn(*args, **kwargs)
        result, plan = self._traced(args, kwargs, keep)
        if not plan.eager:
            self._last = plan
        self._cache.setdefault(key, []).insert(0, plan)
        self._cache.move_to_end(key)
        while self.cache_size > self.max_cache:
            oldest_key = next(iter(self._cache))
            plans = self._cache[oldest_key]
            plans.pop()
            if not plans:
                del self._cache[oldest_key]
            self.stats['evictions'] += 1
        if plan.eager:
            self._refuse(plan, 3)
        return result

    def _traced(self, args, kwargs, keep, check=None):
        """Trace one call: (its result, a _Plan or an _Eager); ``check`` may turn a plan into
        an _Eager.  With ``strict``, a step that cannot be replayed is undone (``_Undo``).
        A step on GPU arrays is not traced: it runs eagerly (not at all with ``strict``)."""
        tracer = _Tracer(self.fn, args, kwargs, self.keep_buffers)
        device = tracer.device_array()
        if device is not None:
            plan = _Eager(f'{device} is a GPU array: static_graph replays NumPy arrays only')
            if self.strict:
                return None, plan
            self.stats['eager'] += 1
            return self.fn(*args, **kwargs), plan
        self.stats['traces'] += 1
        undo = _Undo(tracer) if self.strict else None
        result, plan = tracer.run()
        plan.keep = keep
        if check is not None and not plan.eager:
            plan = check(plan)
        if undo is not None and plan.eager:
            undo.restore()
        return result, plan

    def _refuse(self, plan, stacklevel, warn=True):
        """A signature that cannot be replayed: with ``strict``, a StaticGraphError (nothing
        of the call is left changed: see ``_Undo``); else a warning (once) and eager calls."""
        if self.strict:
            raise StaticGraphError(f'static_graph({self.__name__}): this step cannot be replayed '
                                   f'for this signature (strict=True: not run, the model and '
                                   f'optimizer are as before the call): {plan.reason}')
        if warn:
            warnings.warn(f'static_graph({self.__name__}): this step runs eagerly (Define-by-Run) '
                          f'for this signature: {plan.reason}', StaticGraphWarning,
                          stacklevel=stacklevel + 1)


class _Undo:
    """What a trace can change, saved before it (``strict=True``): the parameters (arrays,
    gradients), the layers' and optimizers' attributes and the arrays in them (optimizer
    state, running statistics), the optimizers' hooks, NumPy's and Python's random state.
    ``restore`` puts it back when the step cannot be replayed.  (What the step does to other
    objects, a print or a file it writes, is not undone.)"""

    def __init__(self, tracer):
        self.rng, self.py_random = np.random.get_state(), random.getstate()
        self.params = [(p, p.data, p.grad, _copy_array(p.data)) for p in tracer.params.values()]
        objects = list(tracer.layers)
        for opt in _optimizers_of(tracer.fn, tracer.args, tracer.kwargs):
            objects += [opt] + [h for h in getattr(opt, 'hooks', ()) if hasattr(h, '__dict__')]
        arrays, containers = _nested([vars(obj) for obj in objects])
        self.arrays = [(a, a.copy()) for a in arrays]
        self.containers = [(c, c.copy()) for c in containers]  # the objects' dicts among them

    def restore(self):
        for c, saved in self.containers:
            c.clear()
            c.update(saved) if isinstance(c, dict) else c.extend(saved)
        for a, saved in self.arrays:
            a[...] = saved
        for p, data, grad, saved in self.params:
            if saved is not None:
                data[...] = saved
            p.data, p.grad = data, grad
        np.random.set_state(self.rng)
        random.setstate(self.py_random)


def _copy_array(a):
    return a.copy() if isinstance(a, np.ndarray) else None


def _nested(dicts, depth=3):
    """(the writeable ndarrays, the dicts and lists) in ``dicts`` and in the dicts, lists and
    tuples there, ``depth`` levels deep (an optimizer's state: ``{param: {slot: array}}``)."""
    arrays, containers, seen, stack = [], [], set(), [(d, 0) for d in dicts]
    while stack:
        v, level = stack.pop()
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, np.ndarray) and v.flags.writeable:
            arrays.append(v)
        elif level <= depth and isinstance(v, (dict, list, tuple)):
            if v.__class__ in (dict, list):
                containers.append(v)
            stack += [(w, level + 1) for w in (v.values() if isinstance(v, dict) else v)]
    return arrays, containers


def _key(args, kwargs, keep):
    """The cache key of a call: its signature (``_describe``) and the Config modes."""
    if not kwargs and all(a.__class__ is np.ndarray for a in args):  # the usual step(x, t)
        return ('arrays',) + tuple((a.shape, a.dtype.str, a.strides) for a in args) + (
            Config.enable_backprop, Config.train)
    return (_describe(args, keep), _describe(tuple(sorted(kwargs.items())), keep),
            Config.enable_backprop, Config.train)


def _changed_constant(old, new):
    """The description of the first constant that differs between two traces, or None."""
    if len(old) != len(new):
        return 'the set of constants'
    for (what, a), (_, b) in zip(old, new):
        same = a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
            a, b, equal_nan=a.dtype.kind in 'fc')
        if not same:
            return what
    return None


def static_graph(fn=None, *, max_cache=8, strict=False, keep_buffers=False):
    """Define-and-Run: ``static_graph(step)`` or ``@static_graph`` (``@static_graph(max_cache=4)``).

    Returns a ``StaticGraph`` (its options: see there): the first call per
    signature traces ``fn`` eagerly; later calls replay the generated code
    (see the module docstring for what is captured, the guards and the traps).
    """
    options = dict(max_cache=max_cache, strict=strict, keep_buffers=keep_buffers)
    if fn is None:
        return lambda f: StaticGraph(f, **options)
    return StaticGraph(fn, **options)


# =============================================================================
# Tracing
# =============================================================================
class _Tracer:
    """One traced call: ``run()`` runs ``fn`` eagerly with a recorder, the step's arrays
    ``_Traced`` for its duration (plain again after), and returns (its result, a _Plan or an
    _Eager)."""

    def __init__(self, fn, args, kwargs, keep_buffers=False):
        self.fn, self.args, self.kwargs, self.keep_buffers = fn, args, kwargs, keep_buffers
        self.layers = _layers_of(fn, args, kwargs)
        self.state_before = _state_slots(self.layers)
        self.value_sources = _value_sources(fn, self.layers, args, kwargs)
        self.values_before = [_read_value(*src[:3]) for src in self.value_sources]
        self.params = {id(p): p for layer in self.layers for p in layer.params()}
        self.originals = {}  # id(Variable) -> (Variable, its plain array): restored after the trace
        self.traced = {}     # id(an array that was a parameter's .data during the trace) -> it
        self.arg_arrays = []  # (path, traced view or None for a Variable, the user's value)
        self.rec = _Recorder()
        self.rec.lazy = {id(p) for p in self.params.values() if p.data is None}
        self.rec.params = self.params
        self.rec.before_host, self.rec.after_host = self.before_host, self.after_host

    def device_array(self):
        """The first argument or parameter of the step on a GPU (described), or None."""
        names = _arg_names(self.fn, self.args, self.kwargs)
        for path, value in [(('args', i), a) for i, a in enumerate(self.args)] + [
                (('kwargs', k), v) for k, v in self.kwargs.items()]:
            if _on_device(value):
                return f'the argument {names.get(path, path[1])!r}'
        paths = None
        for p in self.params.values():
            if _on_device(p.data):
                paths = paths or _param_paths(self.layers)
                return f'the parameter {paths.get(id(p), p.name or "")!r}'
        return None

    def taint_var(self, v):
        if isinstance(v.data, np.ndarray) and not isinstance(v.data, _Traced):
            self.originals.setdefault(id(v), (v, v.data))
            if isinstance(v, Parameter):
                self.traced[id(v.data)] = v  # the plain array: operations may keep it (batch norm)
            v.data = v.data.view(_Traced)
            if isinstance(v, Parameter):
                self.traced[id(v.data)] = v

    def taint_arg(self, value, path):
        if isinstance(value, np.ndarray) and not isinstance(value, _Traced):
            t = value.view(_Traced)
            self.arg_arrays.append((path, t, value))
            return t
        if isinstance(value, Variable) and isinstance(value.data, np.ndarray):
            self.arg_arrays.append((path, None, value))
            self.taint_var(value)
        elif isinstance(value, (tuple, list)):
            return type(value)(self.taint_arg(v, path + (i,)) for i, v in enumerate(value))
        return value

    def untaint_grads(self):
        leaves = [x for node in self.rec.nodes.values() for x in node.inputs]
        for x in leaves + list(self.params.values()):
            if x.grad is not None and isinstance(x.grad.data, _Traced):
                x.grad.data = _plain(x.grad.data)

    @staticmethod
    def restore(v, data):
        """``v.data`` plain again: its original array if it is still our view, else a plain view."""
        d = v.data
        if isinstance(d, _Traced):
            ours = d.base is (data if data.base is None else data.base) and d.shape == data.shape \
                and d.strides == data.strides
            v.data = data if ours else _plain(d)

    def before_host(self):
        """Host operations (the optimizer) see plain arrays: their state never keeps a _Traced."""
        self.check_unchanged('before a host operation (the optimizer update)')
        self.untaint_grads()
        for v, data in self.originals.values():
            if isinstance(v, Parameter):
                self.restore(v, data)

    def after_host(self):
        for p in self.params.values():
            self.originals.pop(id(p), None)
            self.taint_var(p)
        self.snapshot()

    # Parameters change only inside host operations (the optimizer), and the arguments never:
    # a change by the step's own code between them is one a replay would not make.
    def snapshot(self):
        self.param_copies = [(p, p.data.copy()) for p in self.params.values()
                             if isinstance(p.data, np.ndarray)]

    def check_unchanged(self, when):
        paths = None
        for p, copy_ in self.param_copies:
            if not _same_array(p.data, copy_) and not self.changed_by_operation(p):
                paths = paths or _param_paths(self.layers)
                self.rec.fail(f'the step changes the parameter {paths.get(id(p), p.name or "")!r} '
                              f'outside an operation {when} (p.data *= ..., p.data = ...): a replay '
                              f'would not')
        for path, t, value, copy_ in self.arg_copies:
            if not _same_array(value.data if t is None else value, copy_):
                name = _arg_names(self.fn, self.args, self.kwargs).get(path[:2], path[1])
                self.rec.fail(f'the step writes into its argument {name!r} (x *= ..., x[...] = ...): '
                              f'a replay would not')

    def changed_by_operation(self, p):
        """``p``'s array is held by a recorded operation (batch norm's running statistics,
        updated in place by its forward): replayed with it."""
        data = _plain(p.data)
        return any(isinstance(a, np.ndarray) and np.shares_memory(a, data)
                   for node in self.rec.nodes.values() for name in _slot_names(type(node.f))
                   for a in _arrays_in(getattr(node.f, name, None)))

    def run(self):
        targs = tuple(self.taint_arg(a, ('args', i)) for i, a in enumerate(self.args))
        tkwargs = {k: self.taint_arg(v, ('kwargs', k)) for k, v in self.kwargs.items()}
        for p in self.params.values():
            self.taint_var(p)
        for v in self.state_before.values():
            if v is not None:
                self.taint_var(v)
        self.snapshot()
        self.arg_copies = [(path, t, v, (v.data if t is None else v).copy())
                           for path, t, v in self.arg_arrays
                           if isinstance(v.data if t is None else v, np.ndarray)]
        _tracing.recorder = self.rec
        try:
            with _hooks.observing(self.rec):
                result = self.fn(*targs, **tkwargs)
            self.check_unchanged('after the last host operation')
            plan = self.plan(result)
        finally:
            _tracing.recorder = None
            self.untaint_grads()
            for v, data in self.originals.values():
                self.restore(v, data)
        for v in _state_slots(self.layers).values():
            if isinstance(v, Variable) and isinstance(v.data, _Traced):
                v.data = _plain(v.data)
        return _untaint_result(result), plan

    def plan(self, result):
        rec = self.rec
        if _rng_fingerprint() != rec.rng_fingerprint and not rec.lazy_init():
            rec.fail('random numbers were drawn outside an operation after the last one '
                     '(a replay would not draw them)')
        if random.getstate() != rec.py_random:
            rec.fail("random numbers were drawn from Python's random module inside the step "
                     "(a replay would not draw them)")
        try:
            return _Plan(self, result, self.keep_buffers)
        except _Unreplayable as e:
            return _Eager(str(e))


def _on_device(value):
    """A CuPy array, or a Variable, tuple or list holding one."""
    if cuda.cp is None:
        return False
    if isinstance(value, Variable):
        value = value.data
    if isinstance(value, (tuple, list)):
        return any(_on_device(v) for v in value)
    return isinstance(value, cuda.cp.ndarray)


def _same_array(a, b):
    return a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind in 'fc')


def _untaint_result(value):
    if isinstance(value, Variable):
        if isinstance(value.data, _Traced):
            value.data = _plain(value.data)
        return value
    if isinstance(value, _Traced):
        host = getattr(value, '_host_value', _MISSING)  # a host operation's result, as it was
        if host is not _MISSING:
            return host
        return _plain(value)[()] if getattr(value, '_scalar', False) else _plain(value)
    if isinstance(value, (tuple, list)):
        return _rebuilt(type(value), [_untaint_result(v) for v in value])
    if isinstance(value, dict):
        return {k: _untaint_result(v) for k, v in value.items()}
    return value


# =============================================================================
# The plan: generated straight-line code
# =============================================================================
class _Eager:
    """A signature whose step runs eagerly (``reason`` says why)."""
    eager = True

    def __init__(self, reason):
        self.reason = reason

    def guard(self, args, kwargs):
        return True


_identifiers = {}  # text -> identifier (a plan makes hundreds of names from a few hints)


def _identifier(text):
    """``text`` as a valid Python identifier, as the parser reads it: NFKC-normalised first
    (``ﬁ`` is ``fi``, ``w²`` is ``w2``: two names the parser would make one are one here, and
    ``_Names`` makes them unique), other characters ``_``, a keyword with ``_`` appended."""
    out = _identifiers.get(text)
    if out is None:
        out = ''.join(c if ('_' + c).isidentifier() else '_'
                      for c in unicodedata.normalize('NFKC', text)).strip('_') or 'v'
        out = out if out.isidentifier() else '_' + out  # a leading digit
        out = _identifiers[text] = out + '_' if keyword.iskeyword(out) else out
        if len(_identifiers) > 4096:
            _identifiers.clear()
    return out


_MISSING = object()


def _plain_name(attr):
    """An attribute name the parser reads as it is (not a keyword, unchanged by NFKC)."""
    return attr.isidentifier() and not keyword.iskeyword(attr) and unicodedata.normalize('NFKC', attr) == attr


def _attribute(obj, attr):
    """The source reading ``obj.attr`` (``getattr`` for a name the parser would change)."""
    return f'{obj}.{attr}' if _plain_name(attr) else f'getattr({obj}, {attr!r})'


def _set_attribute(obj, attr, value):
    return f'{obj}.{attr} = {value}' if _plain_name(attr) else f'setattr({obj}, {attr!r}, {value})'


class _Names:
    """Readable, unique names for the generated code, and the namespace they live in."""

    def __init__(self):
        self.ns = {'Variable': Variable, 'np': np, 'as_array': as_array, '_check_grad': core.check_grad}
        self.used = set(self.ns) | {'args', 'kwargs', 'self'} | set(dir(builtins))  # (getattr, ...)
        self.by_id = {}
        self.counters = {}  # base -> the next suffix to try (names are made in O(1), not O(n))

    def add(self, obj, hint):
        if id(obj) in self.by_id:
            return self.by_id[id(obj)]
        name = self.local(hint)
        self.ns[name] = obj
        self.by_id[id(obj)] = name
        return name

    def local(self, hint, suffixes=()):
        """A new name from ``hint``; ``suffixes``: the names ``name + suffix`` the code makes
        from it (``g_loss_seed``, the statistics' temporaries) are free and taken too."""
        base = _identifier(hint)
        name = base
        while name in self.used or any(name + s in self.used for s in suffixes):
            k = self.counters.get(base, 1)
            self.counters[base] = k + 1
            name = f'{base}_{k}'
        self.used.update([name] + [name + s for s in suffixes])
        return name


def _arg_names(fn, args, kwargs):
    """Readable names for the argument paths: the parameter names of ``fn`` where it has them."""
    try:
        sig = inspect.signature(fn)
        bound = sig.bind(*args, **kwargs)
        names = {}
        pos = 0
        for pname, value in bound.arguments.items():
            kind = sig.parameters[pname].kind
            if kind == inspect.Parameter.VAR_POSITIONAL:
                for j in range(len(value)):
                    names[('args', pos)] = f'{pname}_{j}'
                    pos += 1
            elif kind == inspect.Parameter.VAR_KEYWORD:
                for k in value:
                    names[('kwargs', k)] = k
            elif pname in kwargs:
                names[('kwargs', pname)] = pname
            else:
                names[('args', pos)] = pname
                pos += 1
        return names
    except (TypeError, ValueError):
        return {}


def _get_path(args, kwargs, path):
    value = args if path[0] == 'args' else kwargs
    for k in path[1:]:
        value = value[k]
    return value


class _Plan:
    """The replay of one traced signature: generated source, its namespace, guards and result.

    Built from a ``_Tracer`` by walking its recording once (``_emit_*``): each
    event becomes lines of the generated function, each object it needs a
    name in its namespace (``_Names``).
    """
    eager = False
    reason = None
    confirmed = False

    def __init__(self, tracer, result, keep_buffers=False):
        rec = tracer.rec
        self.keep_buffers = keep_buffers
        if rec.reason is not None:
            raise _Unreplayable(rec.reason)
        self.names = _Names()
        self.fn_name = _identifier(getattr(tracer.fn, '__name__', 'step'))  # a lambda: 'lambda_'
        self.arg_names = _arg_names(tracer.fn, tracer.args, tracer.kwargs)
        self.paths = _param_paths(tracer.layers)
        self.data_owner = dict(tracer.traced)  # id(array) -> Parameter whose .data it is
        self.data_owner.update({id(p.data): p for p in tracer.params.values() if p.data is not None})
        self.arg_arrays = tracer.arg_arrays
        self.arg_views = {id(t): path for path, t, v in tracer.arg_arrays if t is not None}
        self.arg_vars = {id(v): path for path, t, v in tracer.arg_arrays if t is None}
        self.state_ids = {id(v): key for key, v in tracer.state_before.items() if v is not None}
        self.lines = []        # the body of the generated function
        self.arg_paths = []    # [(local name, path)]: the generated function's parameters
        self.local_of_path = {}
        self.param_guards = []
        self.state_guards = []
        self.value_guards = _value_guards(tracer.value_sources, tracer.values_before)
        # The RNG moves for a lazy initialisation are not replayed, and could hide a draw by the
        # step's own code (np.random.seed in the step): the next call traces again to confirm.
        self.lazy_initialized = rec.lazy_seen
        self.inplace = []      # (function, attribute) forward changes in place: restored on error
        self.cached = []       # (function, attribute) that forward sets again at every call
        self.nodes_dot = []
        # Arrays built outside operations and kept as constants (a mask, positions, smoothed
        # labels made by NumPy): the next call traces again and compares them (see StaticGraph).
        self.frozen = []
        self.var_name = {}     # id(traced Variable) -> name of the plan's own Variable
        self.own_vars = {}     # id(traced output Variable) -> the plan's Variable
        self.state_reads = {}
        self.funcs = {}        # id(traced Function) -> the plan's copy
        self.host_values = {}  # id(a host operation's _Traced result) -> its expression
        emit = {'node': self._emit_node, 'clear': self._emit_clear, 'host': self._emit_host,
                'pass': self._emit_pass}
        for event in rec.events:
            emit[event[0]](*event[1:])
        self._emit_state(tracer.state_before, _state_slots(tracer.layers))
        self._emit_result(result)
        # A constant array kept on a layer (``layer.scale``) is guarded by identity too (the
        # other objects of a layer are its state, not guarded): another array there retraces.
        frozen = {id(a) for _, a in self.frozen}
        self.value_guards += [(h, key, k, v, what, False)
                              for h, key, k, what, objects in tracer.value_sources
                              if objects == 'structure'
                              for v in (_read_value(h, key, k),) if id(v) in frozen]
        # what guard() reads: (a dict, key, value), the dict being an object's __dict__ or the
        # globals; closure cells apart.  ~50 ns an entry (51 entries for microgpt's step)
        self.dict_checks = [(h if k == 'item' else h.__dict__, key, v, by_value)
                            for h, key, k, v, _, by_value in self.value_guards if k in ('item', 'attr')]
        self.list_checks = [(h, v) for h, _, k, v, _, _ in self.value_guards if k == 'list']
        self.cell_checks = [(h, v, by_value) for h, _, k, v, _, by_value in self.value_guards
                            if k == 'cell']
        self.source = self._source()
        paths = [path for _, path in self.arg_paths]
        self.positional = len(paths) if paths == [('args', i) for i in range(len(paths))] else None
        scope = {}
        exec(_compiled(self.source, self.fn_name), self.names.ns, scope)
        self._replay = scope[self.fn_name]
        self.keep = None

    # --- names of arguments, parameters and arrays ---------------------------------
    def _arg_local(self, path):
        if path not in self.local_of_path:
            hint = self.arg_names.get(path[:2], '_'.join(map(str, path[1:])))
            if len(path) > 2:
                hint += '_' + '_'.join(map(str, path[2:]))
            self.local_of_path[path] = self.names.local(hint)
            self.arg_paths.append((self.local_of_path[path], path))
        return self.local_of_path[path]

    def _param_name(self, p):
        if id(p) not in self.names.by_id:
            self.param_guards.append((p, type(_plain(p.data)), p.data.shape, p.data.dtype))
        return self.names.add(p, self.paths.get(id(p), p.name or 'param'))

    def _array_binding(self, a):
        """An argument's or a parameter's array as an expression, or None for a constant."""
        if id(a) in self.arg_views:
            return self._arg_local(self.arg_views[id(a)])
        origin = getattr(a, '_from', None)  # the user's own call (``t.reshape(-1)``): made again
        source = self._array_binding(origin[0]) if origin is not None else None
        if source is None:
            return self._memory_binding(a)
        _, op, op_args, op_kwargs = origin
        parts = [self._literal(v) for v in op_args] + [f'{k}={self._literal(v)}'
                                                       for k, v in op_kwargs.items()]
        return f'{source}.{op}({", ".join(parts)})'

    def _memory_binding(self, a):
        """``a`` as (a view of) an argument's memory or a parameter's array; else None."""
        bound = self._arg_memory(a)
        if bound is not None:
            return bound
        p = self.data_owner.get(id(a))
        return f'{self._param_name(p)}.data' if p is not None else None

    def _arg_memory(self, a):
        """``a`` if it is (a view of) an argument's memory, as an expression; else None."""
        for path, t, v in self.arg_arrays:
            if t is None or not np.shares_memory(a, t):
                continue
            if (a.shape == t.shape and a.strides == t.strides and a.dtype == t.dtype
                    and a.__array_interface__['data'][0] == t.__array_interface__['data'][0]):
                return self._arg_local(path)
            return self._arg_view(a, t, self._arg_local(path))
        return None

    def _input_name(self, x, node):
        """The name of an operation's input in the generated code (made on first use)."""
        if id(x) in self.var_name:
            return self.var_name[id(x)]
        if id(x) in self.arg_vars:
            name = self.var_name[id(x)] = self._arg_local(self.arg_vars[id(x)])
            return name
        if isinstance(x, Parameter):
            return self._param_name(x)
        if id(x) in self.state_ids:
            return self._state_input(x)
        data = _traced_base(x.data)
        bound = self._array_binding(data) if isinstance(data, np.ndarray) else None
        if bound is not None:
            name = self.var_name[id(x)] = self.names.add(type(x)(None), 'const')
            self.lines.append(f'{name}.data = {bound}')
            return name
        if isinstance(data, _Traced):
            where = f'{type(node.f).__name__} at {node.line}' if node else 'a backward rule'
            raise _Unreplayable(f"an array computed from the step's values outside an operation "
                                f'(host NumPy code) is an input of {where}: a replay would keep '
                                f'the traced value')
        name = self.var_name[id(x)] = self.names.add(x, (x.name or 'const'))
        if isinstance(x.data, np.ndarray) and node is not None:
            self.frozen.append((f'an input of {type(node.f).__name__} at {node.line}', x.data))
        return name

    def _state_input(self, x):
        """A layer's state Variable (an RNN's h) read fresh from the layer at every call."""
        layer, attr = self.state_ids[id(x)]
        lname = self.names.add(layer, type(layer).__name__.lower())
        name = self.var_name[id(x)] = self.names.add(Variable(None), f'{lname}_{attr}_in')
        self.state_reads[(layer, attr)] = name
        self.state_guards.append((layer, attr, type(_plain(x.data)), x.data.shape, x.data.dtype))
        self.lines.append(f'{name}.data = {_attribute(lname, attr)}.data; {name}.grad = None  # state read fresh')
        return name

    # --- one line (or a few) per recorded event ---------------------------------------
    def _emit_node(self, node):
        f = node.f
        cls = type(f).__name__
        g = self.funcs[id(f)] = _copy_function(f)  # the traced graph stays the user's
        fname = self.names.add(g, cls)
        ins = [self._input_name(x, node) for x in node.inputs]
        self._bind_attrs(node, g, fname)
        outs = []
        for k, y in enumerate(node.outputs):
            own = self.own_vars[id(y)] = Variable(None)
            outs.append(self.names.add(own, cls.lower() if len(node.outputs) == 1 else f'{cls.lower()}{k}'))
            self.var_name[id(y)] = outs[-1]
        g.inputs = tuple(self.names.ns.get(n) for n in ins)
        if any(x is None for x in g.inputs):  # arguments given as Variables: set per call
            self.lines.append(f'{fname}.inputs = ({", ".join(ins)},)')
        # no outputs are recorded under no_grad: one output is then a single one
        single = len(outs) == 1 and getattr(f, 'outputs', None).__class__ in (core.OutputRef, type(None))
        if single:
            g.outputs = core.OutputRef(self.names.ns[outs[0]])
        else:
            g.outputs = tuple(weakref.ref(self.names.ns[o]) for o in outs)
        self._forward_lines(node, g, fname, ins, outs, single)
        self.nodes_dot.append((fname, cls, ins, outs))

    def _forward_lines(self, node, g, fname, ins, outs, single):
        call = f'{fname}.forward({", ".join(f"{n}.data" for n in ins)})'
        tag = '  # draws random numbers' if node.draws else ''
        if single and node.outputs[0].data.ndim:  # an array (0-d: maybe a NumPy scalar)
            self.lines.append(f'{outs[0]}.data = {call}{tag}')
        elif single:
            self.lines.append(f'{outs[0]}.data = as_array({call}){tag}')
        else:
            tmp = self.names.local('ys')
            self.lines.append(f'{tmp} = {call}{tag}')
            self.lines += [f'{o}.data = as_array({tmp}[{k}])' for k, o in enumerate(outs)]

    def _emit_clear(self, var):
        if isinstance(var, Parameter):
            name = self._param_name(var)
        else:
            name = self.var_name.get(id(var)) or self.names.add(var, var.name or 'var')
        self.lines.append(f'{name}.grad = None')

    def _emit_host(self, fn, args, kwargs, result):
        for a in list(args) + list(kwargs.values()):
            if isinstance(a, _Traced) or isinstance(a, Variable) and isinstance(a.data, _Traced):
                raise _Unreplayable(f'{fn.__qualname__} is called with a value computed by the step')
        fn_name = self.names.add(fn, fn.__qualname__.replace('.', '_'))
        parts = [self._host_arg(a) for a in args] + [f'{k}={self._host_arg(v)}' for k, v in kwargs.items()]
        call = f'{fn_name}({", ".join(parts)})'
        leaves = _host_leaves(result[0]) if result else []
        if leaves:  # its numbers are the replay's (the step may return them)
            local = self.names.local(f'{fn_name}_result')
            call = f'{local} = {call}'
            for value, path in leaves:
                self.host_values[id(value)] = local + ''.join(f'[{i}]' for i in path)
        self.lines.append(call)

    def _emit_state(self, before_all, after_all):
        """Write back what the step left in its layers' state (an RNN's h), as the layer did."""
        for key, after in after_all.items():
            before = before_all.get(key, _MISSING)
            if after is not before:
                self._state_guard(key, before)
                self.lines.append(self._state_write(key, after))

    def _state_guard(self, key, before):
        layer, attr = key
        if before is None or before is _MISSING:
            self.state_guards.append((layer, attr, None, None, None))
        elif key not in self.state_reads:
            self.state_guards.append((layer, attr, type(_plain(before.data)), before.data.shape,
                                      before.data.dtype))

    def _state_write(self, key, after):
        layer, attr = key
        lname = self.names.add(layer, type(layer).__name__.lower())
        if after is None:
            return _set_attribute(lname, attr, 'None')
        if id(after) not in self.own_vars:
            raise _Unreplayable(f'the step sets {type(layer).__name__}.{attr} to a value it did '
                                f'not compute with an operation')
        if after.creator is not None:
            raise _Unreplayable(f'the step keeps {type(layer).__name__}.{attr} with its graph '
                                f'(call unchain_backward() in the step, as truncated BPTT '
                                f'does): a replay cannot keep a graph')
        value = f'Variable({self.var_name[id(after)]}.data)'
        return _set_attribute(lname, attr, value) + '  # state for the next call'

    def _emit_result(self, result):
        result_vars = {}  # key -> the expression of a returned array or host value
        self.result_template = self._template(result, result_vars)
        self.returns = returns = sorted(result_vars)
        out = self.names.local('out')
        self.lines.append(f'{out} = ({", ".join(result_vars[r] for r in returns)}{"," if returns else ""})')
        if not self.keep_buffers:
            # Nothing of this call is kept once it returns (the eager graph is freed too): the
            # arrays of the variables and what forward cached on the operations.
            ns = self.names.ns
            ns['_release'], ns['_cached'] = _release, tuple(self.cached)
            # freed last-made first, as the eager graph is torn down from its output
            ns['_own_vars'] = tuple(v for k, v in ns.items() if isinstance(v, Variable)
                                    and v.data is None and not isinstance(v, Parameter))[::-1]
            self.lines.append('_release(_own_vars, _cached)')
        self.lines.append(f'return {out}')

    # --- pieces of the build ------------------------------------------------------
    def _arg_view(self, a, t, local):
        if not t.flags.c_contiguous:
            raise _Unreplayable('a view of a non-contiguous argument is used by an operation')
        offset = a.__array_interface__['data'][0] - t.__array_interface__['data'][0]
        if offset % t.itemsize or a.dtype != t.dtype:
            raise _Unreplayable('an argument is viewed with another dtype by an operation')
        name = self.names.add(_view, '_view')
        return f'{name}({local}, {offset // t.itemsize}, {a.shape!r}, {a.strides!r})'

    def _bind_attrs(self, node, g, fname):
        """Attributes holding arrays: bound to an argument or parameter, recomputed, or constants."""
        f = node.f
        for attr in _slot_names(type(f)):
            if attr not in ('inputs', 'outputs', 'generation', 'output_specs'):
                value = getattr(f, attr, None)
                if _arrays_in(value):
                    self._bind_attr(node, g, fname, attr, value)

    def _bind_attr(self, node, g, fname, attr, value):
        f = node.f
        init = attr in _init_names(type(f))
        exprs = []
        for a in _arrays_in(value):
            e = self._array_binding(a)
            if e is None and isinstance(a, _Traced):
                if not init and any(isinstance(x.data, _Traced) for x in node.inputs):
                    self.cached.append((g, attr))
                    return  # set by forward from its inputs: recomputed at replay
                raise _Unreplayable(f"an array computed from the step's values outside an "
                                    f'operation is the {attr!r} of {type(f).__name__} at '
                                    f'{node.line}: a replay would keep the traced value')
            if e is None and init:
                self.frozen.append((f'the {attr!r} of {type(f).__name__} at {node.line}', a))
            exprs.append(e)
        if any(e is not None for e in exprs):
            self.lines.append(f'{fname}.{attr} = {self._attr_expr(value, exprs)}')
            if isinstance(value, np.ndarray) and exprs[0].endswith('.data'):
                self.inplace.append((g, attr))

    def _attr_expr(self, value, exprs):
        if isinstance(value, np.ndarray):
            return exprs[0]
        parts, it = [], iter(exprs)
        for v in value:
            if isinstance(v, np.ndarray):
                e = next(it)
                parts.append(e if e is not None else self.names.add(v, 'index'))
            else:
                parts.append(repr(v))
        text = ', '.join(parts) + (',' if len(parts) == 1 else '')
        return f'({text})' if isinstance(value, tuple) else f'[{text}]'

    def _literal(self, v):
        if v is None or isinstance(v, (bool, int, float, str)) or (
                isinstance(v, tuple) and all(isinstance(u, int) for u in v)):
            return repr(v)
        if isinstance(v, type) and v.__module__ == 'numpy':
            return f'np.{v.__name__}'
        if isinstance(v, np.dtype):
            return f'np.dtype({v.str!r})'
        return self.names.add(v, 'value')

    def _host_arg(self, a):
        if a is None or isinstance(a, (bool, int, float, str)):
            return repr(a)
        if isinstance(a, list) and all(isinstance(p, Parameter) for p in a):
            return self.names.add(a, 'params')
        return self.names.add(a, type(a).__name__.lower())

    def _emit_pass(self, pass_):
        """Write one backward pass out: the engine's order, its accumulation, its leaf storing.

        Gradients are held as arrays (a rule gets its ``gy`` as a Variable around
        the same array): the additions are the engine's ``g.data + gx.data``.
        Each rule is the operation's own ``backward``, called on the plan's copy.
        """
        grads = _Grads()
        seeds = [self._seed(root, seed, grads) for root, seed in pass_.seeds]
        self.lines.insert(len(self.lines) - len(seeds) * 2,
                          f'# backward pass ({len(pass_.steps)} nodes, the order the engine ran them)')
        self.lines.append('_set_backprop(False)')
        ns = self.names.ns
        ns['_set_backprop'], ns['_tuple'], ns['_store_leaf_grads'] = _set_backprop, _tuple, _store_leaf_grads
        seen = [self._backward_step(f, gxs, grads) for f, gys, gxs in pass_.steps]
        leaves = [f'{self._leaf_name(grads.owner[xid])}: Variable({g})' for xid, g in grads.name.items()]
        # the plan's own copies of the Functions: the same set at every replay (a constant)
        seen_name = self.names.add(frozenset(ns[n] for n in seen), 'seen')
        self.lines.append(f'# the leaves get their gradients as backprop stores them ({seen_name}: '
                          f'the {len(seen)} operations above, a constant)')
        self.lines.append(f'_store_leaf_grads({{{", ".join(leaves)}}}, {seen_name}, {{{", ".join(seeds)}}})')
        self.lines.append('_set_backprop(True)')

    def _seed(self, root, seed, grads):
        """``backward()``'s seed: ones like the root (any other seed is not replayed)."""
        if id(root) not in self.var_name:
            raise _Unreplayable('backward() of a Variable the step did not compute')
        sd = seed.data
        if not (isinstance(sd, np.ndarray) and sd.shape == root.data.shape and (sd == 1).all()):
            raise _Unreplayable('backward() with a seed gradient other than ones')
        rname = self.var_name[id(root)]
        gname = self.names.local(f'g_{rname}', ('_seed',))
        self.lines.append(f'{gname}_seed = Variable(np.ones_like({rname}.data))')
        self.lines.append(f'{gname} = {gname}_seed.data')
        grads.arrive(root, gname)
        grads.seeds.add(gname)
        return f'{rname}: {gname}_seed'

    def _backward_step(self, f, gxs, grads):
        """One node's backward: its rule (called, or written out) and the arrival of each gradient."""
        g = self.funcs.get(id(f))
        if g is None:
            raise _Unreplayable(f'backward reached {type(f).__name__}, an operation made before '
                                f'the step (a graph kept across calls)')
        fname = self.names.by_id[id(g)]
        gy_names, gy_exprs = self._output_grads(f, grads)
        done = [e for e in gy_names if e not in grads.seeds]
        gx = self.names.local('gx')
        self.lines.append(f'{gx} = _tuple({fname}.backward({", ".join(gy_exprs)}))')
        results = [(i, self._called_grad(f, fname, gx, i, gxi))
                   for i, gxi in enumerate(gxs) if gxi is not None]
        done.append(gx)
        for i, expr in results:
            self._arrive(f.inputs[i], expr, grads)
        if done:  # freed as the engine pops them: peak memory as eager's
            self.lines.append(f'del {", ".join(done)}')
        return fname

    def _output_grads(self, f, grads):
        """The gradients of ``f``'s outputs (popped: complete), as local names and as Variables."""
        outputs = f.outputs
        ys = [outputs()] if outputs.__class__ is core.OutputRef else [r() for r in outputs]
        if any(y is not None and _hooks.variable_hooks.get(y) is not None for y in ys):
            raise _Unreplayable('a hook or retain_grad() on an intermediate Variable')
        if outputs.__class__ is core.OutputRef:
            if ys[0] is None or not grads.has(ys[0]):
                raise _Unreplayable(f'{type(f).__name__}: a gradient the replay cannot follow')
            name = grads.pop(ys[0])
            return [name], [f'Variable({name})']
        names, exprs = [], []
        for y, (shape, dtype) in zip(ys, f.output_specs):
            if y is not None and grads.has(y):
                names.append(grads.pop(y))
                exprs.append(f'Variable({names[-1]})')
            else:  # an output nobody used: zeros, as the engine
                exprs.append(f'Variable(np.zeros({shape!r}, np.{np.dtype(dtype).name}))')
        return names, exprs

    @staticmethod
    def _called_grad(f, fname, gx, i, gxi):
        expr = f'{gx}[{i}]'
        if gxi.__class__ is not Variable or gxi.data.shape != f.inputs[i].data.shape:
            expr = f'_check_grad({expr}, {fname}.inputs[{i}], "{type(f).__name__}.backward")'
        return f'{expr}.data'

    def _arrive(self, x, expr, grads):
        """A gradient for ``x`` arrives: the first is kept, the next ones are added (as the engine)."""
        if grads.has(x):
            name = grads.name[id(x)]
            total = f'{name} + {expr}'
            if x.data.ndim == 0:  # a NumPy scalar: the engine's as_array
                total = f'as_array({total})'
            self.lines.append(f'{name} = {total}')
        else:
            xname = self.var_name.get(id(x)) or self._input_name(x, None)
            name = self.names.local(f'g_{xname}')
            self.lines.append(f'{name} = {expr}')
            grads.arrive(x, name)

    def _leaf_name(self, x):
        if id(x) in self.var_name:
            return self.var_name[id(x)]
        if isinstance(x, Parameter):
            return self._param_name(x)
        return self._input_name(x, None)

    def _template(self, value, result_vars):
        """How to rebuild the step's return value from one replay (a nested template)."""
        if isinstance(value, Variable):
            return self._variable_template(value, result_vars)
        if isinstance(value, np.ndarray):
            if id(value) in self.arg_views:
                return ('arg', self.arg_views[id(value)])
            if id(value) in self.host_values:  # a host operation's result: as it returns it
                expr = self.host_values[id(value)]
                result_vars[expr] = expr
                return ('host', expr)
            if isinstance(value, _Traced):
                raise _Unreplayable('the step returns an array computed from its values '
                                    '(return the Variable instead)')
            return ('copy', value)
        if isinstance(value, (tuple, list)):
            return (type(value), [self._template(v, result_vars) for v in value])
        if isinstance(value, dict):
            return (dict, {k: self._template(v, result_vars) for k, v in value.items()})
        if value is None or isinstance(value, (bool, int, float, complex, str)):
            return ('const', value)
        raise _Unreplayable(f'the step returns a {type(value).__name__}')

    def _variable_template(self, value, result_vars):
        if id(value) in self.own_vars:
            name = self.var_name[id(value)]
            result_vars[name] = f'{name}.data'
            return ('var', name)
        if id(value) in self.arg_vars:
            return ('arg', self.arg_vars[id(value)])
        if isinstance(value, Parameter) or not isinstance(value.data, _Traced):
            return ('const', value)
        raise _Unreplayable('the step returns a Variable computed outside an operation '
                            '(a Variable made from .data)')

    def _source(self):
        params = ', '.join(n for n, _ in self.arg_paths)
        body = '\n'.join('    ' + line for line in self.lines)
        return (f'def {self.fn_name}({params}):\n'
                f'    """Generated by dezero_kr.static_graph: the replay of one traced call."""\n'
                f'{body}\n')

    # --- running -----------------------------------------------------------------
    def values_hold(self):
        """The plain Python values the step reads outside its arguments are as traced."""
        for d, key, value, by_value in self.dict_checks:
            v = d.get(key, _MISSING)
            if v is not value and not (by_value and _same_value(v, value)):
                return False
        for cell, value, by_value in self.cell_checks:
            v = _read_value(cell, None, 'cell')
            if v is not value and not (by_value and _same_value(v, value)):
                return False
        for items, value in self.list_checks:
            if not _same_items(items, value):
                return False
        return True

    def guard(self, args, kwargs):
        if not self.values_hold():
            return False
        for p, cls, shape, dtype in self.param_guards:
            d = p.data
            if d.__class__ is not cls or d.shape != shape or d.dtype != dtype:
                return False
        for layer, attr, cls, shape, dtype in self.state_guards:
            v = getattr(layer, attr, None)
            if cls is None:
                if v is not None:
                    return False
            elif not isinstance(v, Variable) or v.data.__class__ is not cls or v.data.shape != shape \
                    or v.data.dtype != dtype:
                return False
        return True

    def run(self, args, kwargs):
        """Replay with these arguments; restore batch norm and layer state if it raises."""
        if self.positional is not None:  # the arguments in order, as they were passed
            values = args[:self.positional]
        else:
            values = [_get_path(args, kwargs, path) for _, path in self.arg_paths]
        saved_inplace = [(a, a.copy()) for a in (getattr(g, attr) for g, attr in self.inplace)
                         if isinstance(a, np.ndarray)]
        saved_state = [(layer, attr, getattr(layer, attr, None))
                       for layer, attr, *_ in self.state_guards]
        old = Config.enable_backprop
        try:
            out = self._replay(*values)
        except BaseException:  # the gradients are left as eager leaves them (not kept: memory)
            for a, copy_ in saved_inplace:
                a[...] = copy_
            for layer, attr, v in saved_state:
                setattr(layer, attr, v)
            raise
        finally:
            if Config.enable_backprop != old:
                _set_backprop(old)
        arrays = dict(zip(self.returns, out))
        return self._build(self.result_template, arrays, args, kwargs)

    def _build(self, t, arrays, args, kwargs):
        kind = t[0]
        if kind == 'var':
            return Variable(arrays[t[1]])
        if kind == 'arg':
            return _get_path(args, kwargs, t[1])
        if kind == 'host':
            return arrays[t[1]]
        if kind == 'const':
            return t[1]
        if kind == 'copy':
            return t[1].copy()
        if kind is dict:
            return {k: self._build(v, arrays, args, kwargs) for k, v in t[1].items()}
        return _rebuilt(kind, [self._build(v, arrays, args, kwargs) for v in t[1]])

    def dot(self):
        """DOT text of the plan: one box per operation, ellipses for the arrays between them."""
        lines = ['digraph g {']
        seen = set()
        for fname, cls, ins, outs in self.nodes_dot:
            lines.append(f'{fname} [label="{cls}", color=lightblue, style=filled, shape=box]')
            for v in ins + outs:
                if v not in seen:
                    seen.add(v)
                    color = ', color=orange, style=filled' if v in self.names.ns and isinstance(
                        self.names.ns[v], Parameter) else ''
                    lines.append(f'{v} [label="{v}"{color}]')
            for v in ins:
                lines.append(f'{v} -> {fname}')
            for v in outs:
                lines.append(f'{fname} -> {v}')
        lines.append('}')
        return '\n'.join(lines)


def _release(variables, cached):
    """Drop the arrays one replay made: the variables' data and what forward kept on the operations."""
    for f, attr in cached:
        setattr(f, attr, None)
    for v in variables:
        v.data = None


class _Grads:
    """The running gradients of one written-out backward pass: local names in arrival order."""

    def __init__(self):
        self.name = {}    # id(traced Variable) -> local name of its gradient array
        self.owner = {}   # id(traced Variable) -> the Variable
        self.seeds = set()

    def has(self, x):
        return id(x) in self.name

    def arrive(self, x, name):
        self.name[id(x)] = name
        self.owner[id(x)] = x

    def pop(self, y):
        self.owner.pop(id(y))
        return self.name.pop(id(y))


_code_cache = collections.OrderedDict()  # source -> code object: the confirming trace repeats it


def _compiled(source, name):
    code = _code_cache.get(source)
    if code is None:
        code = _code_cache[source] = compile(source, f'<static_graph {name}>', 'exec')
        if len(_code_cache) > 64:
            _code_cache.popitem(last=False)
    return code


def _set_backprop(value):
    modes.set_enable_backprop(Config, value)


def _tuple(gxs):
    return gxs if gxs.__class__ is tuple else (gxs,)


def _store_leaf_grads(grads, seen, seeds):
    """The engine's own leaf storing (``reverse_pass.store_leaf_grads``), as ``backprop`` calls it."""
    run = reverse_pass.ReversePass(seeds, False, None, False)
    reverse_pass.store_leaf_grads(grads, seen, run)


def _view(arg, offset, shape, strides):
    """The view of a C-contiguous argument that the traced call used (same offset and strides)."""
    return np.lib.stride_tricks.as_strided(arg.reshape(-1)[offset:], shape, strides)
