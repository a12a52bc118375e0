"""The define-by-run engine: Config, Variable, Parameter, Function and backprop.

Read top to bottom:

1. ``Config`` and the context managers that switch it (``no_grad``, ...).
2. ``Variable``: an ndarray in a box, plus the link to the ``Function`` that
   created it (``creator``) and its ``grad`` after backprop.
3. ``Function``: ``__call__`` runs ``forward`` on raw arrays and, when
   backprop is enabled, records ``inputs`` (strong refs) and ``outputs``
   (weak refs, so the graph holds no reference cycle and frees itself by
   reference counting).
4. ``backprop``: the reverse pass, one iterative loop over a heap of functions
   ordered by ``generation`` (no recursion, so a million-node chain works).
5. At the very end, the one late import: the operations behind Variable's
   operators and methods (``x + y``, ``x.sum()``, ...) live in
   ``dezero_kr.operators``, which needs this module's classes first.

Supporting detail lives next door and imports nothing from here:
``dezero_kr.hooks`` (gradient hooks, and the observers through which forward
mode and anomaly detection watch every operation) and ``dezero_kr.errors``
(the error messages).  Each speed trick is explained where it is, with what
it saves on the ``bench/core_ops.py`` workload (an interleaved A/B against the
code without it); docs/how_it_works.md tells the same story in Korean.
"""
import contextlib
import gc
import heapq
import itertools
import threading
import warnings
import weakref

import numpy as np

from dezero_kr import cuda
from dezero_kr import hooks as _hooks
from dezero_kr.errors import (GRAD_CYCLE, ConfigError, cannot_copy, describe,  # noqa: F401
                              forward_error, hook_name, not_an_array, reused_function,
                              unknown_switch, wrong_gradient_count)
from dezero_kr.hooks import _observers, _variable_hooks, add_hook, observing, retain  # noqa: F401

_describe, _hook_name = describe, hook_name  # the names autograd and the tests know

if cuda.cupy is not None:
    array_types = (np.ndarray, cuda.cupy.ndarray)
else:
    array_types = (np.ndarray,)


# =============================================================================
# Config
# =============================================================================
class _Modes(threading.local):
    """The switches of the current thread (``Config`` is the one instance).

    ``enable_backprop``: record the graph (False inside ``no_grad``).
    ``train``: training behaviour of dropout / batch norm (False inside ``test_mode``).

    Each thread has its own values and a new thread starts from the defaults
    (both True), as PyTorch's grad mode: ``no_grad`` in one thread never stops
    another thread from recording.  DeZero code keeps working unchanged:
    ``Config.enable_backprop`` reads, and ``Config.enable_backprop = False``
    (the book's step 18) sets, the current thread's switch.  Any other name
    raises ``ConfigError`` (a typo would otherwise leave the real switch on).
    An instance of a ``threading.local`` subclass rather than a class with
    properties: backward rules read ``Config.enable_backprop`` once per
    operation, and a property would cost several times a thread-local read.
    """
    switches = ('enable_backprop', 'train')

    def __init__(self):  # runs once in every thread that touches Config
        self.enable_backprop = True
        self.train = True

    def __setattr__(self, name, value):
        if name not in _Modes.switches:
            raise unknown_switch('Config', name, _Modes.switches)
        if name == 'enable_backprop':
            _set_enable_backprop(self, value)
        else:
            threading.local.__setattr__(self, name, value)

    def __repr__(self):
        return (f'Config(enable_backprop={self.enable_backprop}, train={self.train}) '
                f'(this thread)')


# Speed trick: Function.__call__ tests this global count (threads with enable_backprop off)
# before the thread-local switch: saves ~50 ns per op, 5 % of core_ops forward (measured).
# It reaches the thread-local switch only when the count is non-zero: a thread that turned
# its switch off has counted itself before, so a zero proves the current thread records.
# A thread is counted by the token its Config holds while the switch is off, so a thread
# that ends with the switch off is uncounted when its thread-locals are freed.
_backprop_off = 0
_backprop_off_lock = threading.RLock()  # RLock: a token may be freed while it is held
_set_local = threading.local.__setattr__


def _count_off(delta):
    global _backprop_off
    with _backprop_off_lock:  # += on a global is not atomic across threads
        _backprop_off += delta


class _OffToken:
    """Held by a thread's Config while its enable_backprop is off (see _backprop_off)."""
    __slots__ = ()

    def __init__(self):
        _count_off(1)

    def __del__(self):
        try:
            _count_off(-1)
        except Exception:  # interpreter shutdown: the module globals may be gone
            pass


def _set_enable_backprop(modes, value):
    token = modes.__dict__.get('_off_token')
    if not value:
        if token is None:
            _set_local(modes, '_off_token', _OffToken())  # counted before the switch is off
        _set_local(modes, 'enable_backprop', value)
    else:
        _set_local(modes, 'enable_backprop', value)
        if token is not None:
            del token
            _set_local(modes, '_off_token', None)  # the token's __del__ uncounts this thread


Config = _Modes()


@contextlib.contextmanager
def using_config(name, value):
    """Set ``Config.<name>`` to ``value`` inside the block; restore it after, even on error.

    Acts on the current thread only (see ``Config``).  ``name`` must be one of
    ``'enable_backprop'``, ``'train'``; anything else raises ``ConfigError``
    (an AttributeError, as DeZero, and a ValueError) listing them.
    """
    if name not in _Modes.switches:
        raise unknown_switch('using_config', name, _Modes.switches)
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    """Context manager: build no graph in this thread (nothing is recorded for backprop)."""
    return using_config('enable_backprop', False)


def test_mode():
    """Context manager: inference behaviour for dropout and batch norm in this thread."""
    return using_config('train', False)


# =============================================================================
# Variable / Parameter / Constant
# =============================================================================
def as_array(x, array_module=np):
    """Turn a NumPy scalar (what 0-d operations return) into a 0-d array, an ``np.matrix``
    into a plain ndarray (see ``_plain_array``); anything else as is."""
    if x.__class__ is np.ndarray:  # the common case first: np.isscalar costs ~15 times this test
        return x
    if np.isscalar(x):
        return array_module.array(x)
    if isinstance(x, np.ndarray):
        return _plain_array(x)
    return x


def _plain_array(data):
    """``data`` for a Variable: an ``np.matrix`` becomes a plain ndarray view.

    ``np.matrix`` redefines ``*`` as the matrix product (and keeps every result
    2-D); its values are plain, so the view is exact and every operation gets
    NumPy's elementwise meaning.  Other subclasses keep their class: they keep
    NumPy's operators (``np.memmap``), and ``static_graph`` marks a traced step's
    arrays with one.  A masked array is refused (TypeError): the values under
    its mask would take part in gradients that ignore the mask.  Anything that
    is not an array is a TypeError (``errors.not_an_array``).
    """
    if not isinstance(data, array_types):
        raise not_an_array(data)
    if isinstance(data, np.ma.MaskedArray):
        raise TypeError('Variable data must not be a numpy.ma.MaskedArray: its mask would be '
                        'honoured by some operations and ignored by others (and by every '
                        'gradient); pass data.filled(value), or a plain array and the mask to '
                        'F.where / F.masked_fill')
    if isinstance(data, np.matrix):
        return np.asarray(data)
    return data  # a plain-operator subclass, or a cupy.ndarray


def as_variable(obj):
    """Return ``obj`` if it is a Variable, else ``Variable(obj)`` (TypeError unless an array)."""
    if isinstance(obj, Variable):
        return obj
    return Variable(obj)


# Names are rare (leaves and parameters): a side table, not a slot (see Variable).
_variable_names = weakref.WeakKeyDictionary()


class Variable:
    """A box around an ndarray that remembers how it was computed.

    ``data``: the array (``numpy.ndarray``; ``cupy.ndarray`` on GPU; None for
    a not-yet-initialised parameter).  ``grad``: a Variable of the same shape
    after ``backward()``, else None.  ``creator``: the Function that made it
    (None for a leaf).  ``generation``: ``creator.generation + 1``, the
    topological depth that orders the reverse pass.

    ``Variable(data, name=None)`` raises TypeError unless ``data`` is an
    ndarray or None (a number or a list says how to wrap it).  An ndarray
    ``np.matrix`` is kept as a plain ndarray view (its ``*`` would be a matrix
    product); a masked array is a TypeError (see ``_plain_array``).
    """
    # Four slots keep a Variable at 64 bytes: ``name`` (rarely set) lives in a
    # side table and ``generation`` is derived from ``creator``.
    __slots__ = ('data', 'grad', 'creator', '__weakref__')
    requires_grad = True      # a class attribute: Constant says False
    __array_priority__ = 200  # ndarray (op) Variable dispatches to Variable's reflected operator
    __array_ufunc__ = None    # NumPy ufuncs refuse Variables instead of making object arrays

    def __init__(self, data, name=None):
        """Box ``data`` (ndarray or None) as a leaf named ``name``; TypeError for anything else."""
        if data.__class__ is not np.ndarray and data is not None:
            data = _plain_array(data)
        self.data = data
        self.grad = None
        self.creator = None
        if name is not None:
            _variable_names[self] = name

    @property
    def name(self):
        """The label shown in graphs and messages (a str, or None); settable."""
        return _variable_names.get(self)

    @name.setter
    def name(self, value):
        if value is None:
            _variable_names.pop(self, None)
        else:
            _variable_names[self] = value

    # --- copy, deepcopy, pickle: the default protocol copies the slots only,
    # and ``name`` lives in the side table; these carry it over.  Hooks and
    # retain_grad() flags are per-object and are not copied.
    def __copy__(self):
        """Shallow copy: same ``data`` array, ``grad`` and ``creator`` objects, same name."""
        new = object.__new__(type(self))
        new.data, new.creator = self.data, self.creator
        _grad_slot.__set__(new, _grad_slot.__get__(self))  # the slot: core_simple wraps .grad
        new.name = self.name
        return new

    def __reduce_ex__(self, protocol):
        """deepcopy and pickle: ``(type, data, grad, name)`` of a leaf; a non-leaf is refused.

        The graph behind a computed Variable holds weak references to its
        outputs, which can be neither copied nor pickled (TypeError); copy a
        leaf (``y.detach()`` keeps the data and name) instead.  A gradient
        that carries a graph (``create_graph=True``) is copied as its values.
        """
        if self.creator is not None:
            raise cannot_copy(self)
        grad = _grad_slot.__get__(self)
        if grad is not None and grad.creator is not None:
            grad = Variable(grad.data)
        return object.__new__, (type(self),), (self.data, grad, self.name)

    def __setstate__(self, state):
        self.data, grad, self.name = state
        _grad_slot.__set__(self, grad)
        self.creator = None

    @property
    def generation(self):
        """Topological depth: 0 for a leaf, else ``creator.generation + 1``."""
        creator = self.creator
        return 0 if creator is None else creator.generation + 1

    # --- array-like properties: those of ``data`` ---------------------------
    @property
    def shape(self):
        """``data.shape``, the tuple of dimensions."""
        return self.data.shape

    @property
    def ndim(self):
        """``data.ndim``, the number of dimensions."""
        return self.data.ndim

    @property
    def size(self):
        """``data.size``, the number of elements."""
        return self.data.size

    @property
    def dtype(self):
        """``data.dtype``; the operations keep it (float32 in, float32 out)."""
        return self.data.dtype

    @property
    def T(self):
        """The transpose (all axes reversed), a recorded operation: ``transpose(self)``."""
        return transpose(self)

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        if self.data is None:
            return 'variable(None)'
        body = str(self.data).replace('\n', '\n' + ' ' * 9)
        return f'variable({body})'

    # --- graph bookkeeping -------------------------------------------------
    def set_creator(self, func):
        """Make ``func`` this Variable's creator; ``generation`` becomes ``func.generation + 1``."""
        self.creator = func

    def unchain(self):
        """Cut the link to the creator: this Variable becomes a leaf."""
        self.creator = None

    def cleargrad(self):
        """Forget the gradient (``grad = None``); leaf gradients accumulate until this is called."""
        self.grad = None
        if _hooks._observed:  # static_graph records it (one global test per parameter and step)
            _hooks.notify(_observers.list, 'on_cleargrad', self)

    def unchain_backward(self):
        """Cut every creator link upstream of this Variable (truncated BPTT).

        Iterative: each Variable is unchained once, so shared subgraphs are
        visited once and a chain of any length works.
        """
        if self.creator is None:
            return
        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            for x in f.inputs:
                if x.creator is not None:
                    funcs.append(x.creator)
                    x.unchain()

    def detach(self):
        """A Constant sharing this one's data: no graph behind it, no gradient into it."""
        return Constant(self.data, name=self.name)

    # --- gradient hooks (PyTorch-style; stored in dezero_kr.hooks) ------------
    def register_hook(self, hook):
        """Call ``hook(grad)`` when this Variable's gradient of a backward pass is complete.

        The hook may return a Variable/ndarray to replace the gradient (which
        then flows on; it must have this Variable's shape), or None to keep it.
        Returns a handle with ``.remove()``.  TypeError if ``hook`` is not callable.
        """
        return add_hook(self, hook)

    def retain_grad(self):
        """Keep this non-leaf Variable's gradient in ``.grad`` after backward."""
        retain(self)

    @property
    def retains_grad(self):
        """True after ``retain_grad()``: backward keeps this Variable's gradient."""
        hooks = _variable_hooks.get(self)
        return hooks is not None and hooks.retain

    # --- backprop ------------------------------------------------------------
    def backward(self, retain_grad=False, create_graph=False):
        """Accumulate d(self)/d(leaf) into every reachable leaf's ``.grad``.

        The seed is ``self.grad`` if set (same shape as ``self.data``), else
        ones.  Leaf gradients accumulate across calls until ``cleargrad()``;
        other gradients are dropped unless ``retain_grad`` (this call) or
        ``retain_grad()`` (per Variable).  With ``create_graph=True`` the
        backward computation is recorded too (higher-order derivatives).
        ValueError if ``self.data`` is None; a seed of the wrong shape or
        type raises ValueError / TypeError.
        """
        if self.data is None:
            raise ValueError(f'backward: {self!r} has no data')
        seed = self.grad
        if seed is None:
            seed = Variable(cuda.get_array_module(self.data).ones_like(self.data))
        else:
            seed = _check_grad(seed, self, 'backward: the seed gradient (y.grad)')
        if self.creator is None:  # a leaf: dy/dy is the seed itself
            self.grad = seed
            return
        self.grad = None  # the seed is taken; a retained root gets it back from backprop
        backprop({self: seed}, retain_grad=retain_grad, create_graph=create_graph)

    # --- methods that build graph operations (dezero_kr.operators) -----------
    def reshape(self, *shape):
        """``reshape(self, shape)``; ``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` both work."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return reshape(self, shape)

    def transpose(self, *axes):
        """``transpose(self, axes)``: no axes reverses them; ``x.transpose(1, 0, 2)`` or a tuple."""
        if len(axes) == 0:
            axes = None
        elif len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):
            axes = axes[0]
        return transpose(self, axes)

    def sum(self, axis=None, keepdims=False):
        """``sum(self, axis, keepdims)``: dL/dx = gy broadcast back to ``x``'s shape."""
        return sum(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        """``max(self, axis, keepdims)``: the gradient flows to the (first) maximum."""
        return max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        """``min(self, axis, keepdims)``: the gradient flows to the (first) minimum."""
        return min(self, axis, keepdims)

    def matmul(self, other):
        """``self @ other``: (..., n, k) @ (..., k, m) -> (..., n, m)."""
        return matmul(self, other)

    dot = matmul
    matmaul = matmul  # the Korean edition's spelling, kept so its code runs

    def to_cpu(self):
        """Move ``data`` to a NumPy array in place (nothing to do if it is one)."""
        if self.data is not None:
            self.data = cuda.as_numpy(self.data)

    def to_gpu(self):
        """Move ``data`` to a CuPy array in place; RuntimeError without CuPy."""
        if self.data is not None:
            self.data = cuda.as_cupy(self.data)

    # --- operators (dezero_kr.operators) ---------------------------------------
    def __add__(self, other):
        return add(self, other)

    __radd__ = __add__  # x + y == y + x: the same call either way

    def __mul__(self, other):
        return mul(self, other)

    __rmul__ = __mul__

    def __neg__(self):
        return neg(self)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return rsub(self, other)

    def __truediv__(self, other):
        return div(self, other)

    def __rtruediv__(self, other):
        return rdiv(self, other)

    def __pow__(self, other):
        return pow(self, other)

    def __rpow__(self, other):
        return rpow(self, other)

    __matmul__ = matmul

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __getitem__(self, slices):
        return get_item(self, slices)


# The slot that stores a Variable's gradient Variable (core_simple's Variable wraps ``grad``
# in a property that speaks ndarrays, so the engine reads and writes the slot itself).
_grad_slot = Variable.grad


class Parameter(Variable):
    """A Variable that a ``Layer`` registers as trainable."""
    __slots__ = ()


class Constant(Variable):
    """A leaf that needs no gradient (``requires_grad`` is False).

    ``Function.__call__`` wraps raw arrays passed as inputs in a Constant, as
    PyTorch treats data tensors: the caller holds no Variable whose ``.grad``
    could be read, so backward may skip that gradient (``Linear`` and the
    convolutions then skip the input's gradient matmul) and never stores one.
    """
    __slots__ = ()
    requires_grad = False


def _check_grad(g, var, what):
    """Return ``g`` as a Variable shaped like ``var``, or raise a clear error.

    ``g`` may be a Variable, an array or a number (a 0-d gradient); anything
    else (a string, None inside a list, an object array) is a TypeError that
    starts with ``what``, naming where the gradient came from.
    """
    if not isinstance(g, Variable):
        if isinstance(g, array_types):
            g = Variable(g)
        elif isinstance(g, (bool, int, float, complex, np.generic)):
            g = Variable(as_array(g))
        else:
            raise TypeError(f'{what} must be a Variable, an ndarray or a number, '
                            f'got {type(g).__name__} {g!r:.60}')
    if g.data is None or g.data.dtype.kind not in 'biufc':
        got = 'no data' if g.data is None else f'dtype {g.data.dtype}'
        raise TypeError(f'{what} must hold numbers, got {got}')
    if g.data.shape != var.data.shape:
        raise ValueError(f'{what} has shape {g.data.shape}, but the variable has shape '
                         f'{var.data.shape}; a gradient must have the shape of its variable')
    return g


def setup_variable():
    """Kept for DeZero compatibility: the operators are defined on Variable itself."""


# =============================================================================
# Function
# =============================================================================
class _OutputRef(weakref.ref):
    """The weak reference to a single-output Function's output.

    It also behaves as the 1-tuple ``(self,)``: ``f.outputs[0]()``,
    ``len(f.outputs)`` and ``for r in f.outputs`` work as for the tuple of
    weak references a multi-output Function stores.
    """
    # Speed trick: no 1-tuple allocated per node of the graph: saves 48 of 440 bytes per node
    # (core_ops --memory: 392 B/node), and one object less for the garbage collector to track.
    __slots__ = ()

    def __getitem__(self, index):
        if index in (0, -1):
            return self
        raise IndexError('a single-output function has only outputs[0]')

    def __len__(self):
        return 1

    def __iter__(self):
        yield self


class Function:
    """One operation of the graph.  Subclasses write ``forward``, ``backward`` and ``jvp``.

    After a call with backprop enabled: ``inputs`` (tuple of Variables),
    ``outputs`` (weak references, see ``_OutputRef``), ``generation`` (max
    input generation).  Hyper-parameters go to ``__init__`` (``Sum(axis, keepdims)``).

    An instance is one node of the graph: call it once (``Exp()(x)``).  A
    second recorded call overwrites what the first one saved; backprop then
    raises a RuntimeError saying so, and inside ``detect_anomaly()`` the
    second call itself raises (checking every call outside it would cost
    the hot path a failed slot lookup per operation).

    ``backward_reads_values``: False for an op whose backward uses only
    shapes and constants, never the values of its inputs or outputs (add,
    reshape, sum, ...): ``detect_anomaly()`` then checks only their shapes
    when it looks for arrays changed in place between forward and backward.
    """
    __slots__ = ('inputs', 'outputs', 'generation', 'output_specs')
    backward_reads_values = True

    def __call__(self, *inputs):
        """Run ``forward`` on the inputs' arrays; return the output Variable(s).

        Inputs are Variables or arrays (an array becomes a ``Constant``;
        anything else is a TypeError).  An error in ``forward`` is raised
        again with the Function's name and the input shapes.  Records the
        node (``inputs``, ``outputs``, ``generation``) if backprop is enabled.
        """
        # The hot path of the library (~1 µs per op on core_ops): no helper call on the
        # common path (a Python call costs ~50 ns); everything rare is a helper.
        generation = 0  # this node's depth: the largest generation among its inputs
        for x in inputs:
            if not isinstance(x, Variable):
                inputs = _wrap_inputs(self, inputs)  # a Constant leaf: no depth to add
                continue
            c = x.creator
            if c is not None and c.generation >= generation:
                generation = c.generation + 1
        try:
            # Speed trick: the one- and two-input calls unrolled: the list and the *-call
            # of the general case cost ~230 ns per op, 22 % of core_ops forward (measured).
            n_in = len(inputs)
            if n_in == 1:
                ys = self.forward(inputs[0].data)
            elif n_in == 2:
                ys = self.forward(inputs[0].data, inputs[1].data)
            else:
                ys = self.forward(*[x.data for x in inputs])
        except (ValueError, TypeError, IndexError, AttributeError) as e:
            raise forward_error(self, inputs, e) from e
        if ys.__class__ is tuple or _hooks._observed:  # see dezero_kr.hooks
            return _record_outputs(self, inputs, ys, generation)

        # Speed trick: the output Variable is built without __init__ (no type check of what
        # forward made, no name, creator set once): ~55 ns, 5 % of core_ops forward (measured).
        y = _new_object(Variable)
        y.data = ys if ys.__class__ is np.ndarray else as_array(ys)
        y.grad = None
        if _backprop_off == 0 or Config.enable_backprop:  # see _backprop_off
            self.generation = generation
            y.creator = self
            self.inputs = inputs
            self.outputs = _OutputRef(y)
        else:
            y.creator = None
        return y

    def forward(self, *xs):
        """The operation on raw arrays: one array per input in, an array (or a tuple of
        arrays, one per output) out.  Keep the dtype: float32 in, float32 out."""
        raise NotImplementedError(f'{type(self).__name__}.forward is not implemented')

    def backward(self, *gys):
        """The vector-Jacobian product: one gradient Variable per output in (dL/dy), one
        per input out (dL/dx, of that input's shape, or None for "no gradient").

        Write it with differentiable operations on Variables (or with
        ``operators.operands`` / ``as_grad``), so ``create_graph=True`` can
        record it.  Read saved values from ``self.inputs`` and ``self.outputs[i]()``.
        """
        raise NotImplementedError(f'{type(self).__name__}.backward is not implemented')

    def jvp(self, *tangents):
        """Forward mode (``dezero_kr.autograd.jvp``): one tangent per input in (None = zero),
        one per output out, dy = J dx, written with the same operations."""
        raise NotImplementedError(f'{type(self).__name__}.jvp (forward mode) is not implemented')


_new_object = object.__new__


def _wrap_inputs(f, inputs):
    """Raw arrays passed to a Function become Constant leaves; anything else is a TypeError."""
    try:
        return tuple([x if isinstance(x, Variable) else Constant(x) for x in inputs])
    except TypeError as e:
        raise TypeError(f'{type(f).__name__}: {e}') from None


def _record_outputs(f, inputs, ys, generation):
    """``Function.__call__`` for the rare cases: several outputs, or observers to notify.

    Returns a list of Variables for several outputs, the Variable for one.
    """
    single = ys.__class__ is not tuple
    outputs = [Variable(as_array(y)) for y in ((ys,) if single else ys)]
    if _backprop_off == 0 or Config.enable_backprop:
        f.generation = generation
        for y in outputs:
            y.creator = f
        f.inputs = inputs
        if single:
            f.outputs = _OutputRef(outputs[0])
        else:
            f.outputs = tuple([weakref.ref(y) for y in outputs])
            # An output the caller dropped still needs a zero gradient in backward.
            f.output_specs = tuple([(y.data.shape, y.data.dtype) for y in outputs])
    if _hooks._observed:
        for observer in list(_observers.list):
            observer.on_forward(f, inputs, outputs)
    return outputs[0] if single or len(outputs) == 1 else outputs


# =============================================================================
# Backprop: the reverse pass
# =============================================================================
class _Pass:
    """The options of one backprop pass, and the ids of the arrays it must not hand out twice."""
    __slots__ = ('retain_grad', 'capture', 'create_graph', 'hooks_on', 'observers', 'shared')

    def __init__(self, grads, retain_grad, capture, create_graph):
        self.retain_grad, self.capture, self.create_graph = retain_grad, capture, create_graph
        self.hooks_on = len(_variable_hooks) > 0  # one look per pass (see dezero_kr.hooks)
        self.observers = _observers.list if _hooks._observed else ()
        # Arrays the caller holds (seeds) or that stay reachable as a retained or hooked
        # gradient: a leaf that would get one of them gets a copy (see _store_leaf_grads).
        self.shared = {id(getattr(g, 'data', g)) for g in grads.values()}


def backprop(grads, retain_grad=False, create_graph=False, capture=None):
    """Run reverse mode from the seeds in ``grads`` (dict Variable -> gradient Variable).

    Functions are popped from a heap keyed by ``(-generation, insertion
    counter)``: a function runs only after every function that consumes its
    outputs has run, so each output's gradient is complete when it is read.
    Gradients live in the ``grads`` dict while the pass runs; an entry is
    dropped when its creator runs (intermediate grads are not kept unless
    retained), and what is left at the end belongs to leaves.

    ``capture=None`` (``Variable.backward``): leaf gradients are accumulated
    into ``.grad`` (see ``_store_leaf_grads``).  ``capture`` a dict:
    gradients of the Variables it names are stored in it, and no ``.grad``
    is touched (``autograd.grad``).  Runs with ``Config.enable_backprop =
    create_graph`` in this thread only.  A ``backward`` that returns the
    wrong number of gradients is a ValueError, one of the wrong shape or type
    a ValueError / TypeError naming the Function and the input; a Function
    instance recorded twice is a RuntimeError.
    """
    run = _Pass(grads, retain_grad, capture, create_graph)
    if run.observers:  # static_graph records where a pass starts and ends
        _hooks.notify(run.observers, 'on_pass_begin', grads, retain_grad, create_graph, capture)
    # Speed trick: the common pass (no hooks, nothing retained, captured or observed) reads
    # a single output's gradient inline: ~220 ns per node, 7 % of core_ops backward (measured).
    plain = not (run.hooks_on or retain_grad or capture is not None or run.observers)
    heap, seen, tie = [], set(), itertools.count()
    for v in grads:
        f = v.creator
        if f is not None and f not in seen:
            seen.add(f)
            heapq.heappush(heap, (-f.generation, next(tie), f))

    # Config is switched by hand rather than with using_config(): the context manager
    # costs more than the rest of a small model's pass.  The finally clause restores it.
    old_enable_backprop = Config.enable_backprop
    _set_enable_backprop(Config, create_graph)
    try:
        # The loop is the one long function of the engine, on purpose: it runs once per node,
        # and each helper call would cost ~50 ns of a ~3 µs step.  Per function f:
        while heap:
            # 1. Pop the deepest function; take its outputs' (complete) gradients.
            f = heapq.heappop(heap)[2]
            outputs = f.outputs
            if plain and outputs.__class__ is _OutputRef:
                gys = None
                gy = grads.pop(outputs(), None)
                if gy is None:
                    raise reused_function(f)
                gxs = f.backward(gy)
            else:
                gys = _output_grads(f, grads, run)
                gxs = f.backward(*gys)
            # 2. One gradient per input, checked.
            if gxs.__class__ is not tuple:
                gxs = (gxs,)
            inputs = f.inputs
            if len(gxs) != len(inputs):
                raise wrong_gradient_count(f, len(gxs))
            if gys is not None and run.observers:  # plain passes exclude observers
                _notify_backward(run.observers, f, gys, gxs)
            # 3. Add each into its input's running total; queue the input's creator once.
            for x, gx in zip(inputs, gxs):
                if gx is None:
                    continue
                if gx.__class__ is not Variable or gx.data.shape != x.data.shape:
                    gx = _check_grad(gx, x, f'{type(f).__name__}.backward: the gradient for its '
                                            f'input #{inputs.index(x)}')
                g = grads.get(x)
                if g is None:
                    grads[x] = gx
                elif create_graph:
                    grads[x] = g + gx
                else:
                    grads[x] = Variable(as_array(g.data + gx.data))
                # The seen set (hashed by identity) pushes each function once, however
                # many of its outputs are used: a diamond graph runs each node once.
                c = x.creator
                if c is not None and c not in seen:
                    seen.add(c)
                    heapq.heappush(heap, (-c.generation, next(tie), c))
        # 4. What is left are leaves (their creators, if any, were never reached).
        cycle = _store_leaf_grads(grads, seen, run)
    finally:
        _set_enable_backprop(Config, old_enable_backprop)
        if run.observers:
            _hooks.notify(run.observers, 'on_pass_end')
    if cycle and not _grad_cycle_warned:
        _warn_grad_cycle(run)


# Threads: state shared between threads is read, updated and written back under this one
# lock, as PyTorch's AccumulateGrad: a leaf's .grad (here) and BatchNorm's running statistics.
# Cost: one uncontended acquire per leaf per backward pass (well under 1 us), nothing per op.
# An RLock: under create_graph the sum is itself an operation, whose observers run inside.
state_lock = threading.RLock()

_grad_cycle_warned = False


def _warn_grad_cycle(run):
    """Warn once that a leaf's ``.grad`` holds a graph, where that cycle is never freed or when asked.

    Python's cycle collector frees ``leaf -> .grad -> graph -> leaf``: measured with
    ``tools/grad_cycle_memory.py``, a loop that leaves one such cycle per iteration
    peaks at about 0.5 MiB over 10,000 iterations with ``gc`` on (freed in bursts),
    and holds 63 MiB with ``gc`` off.  So the warning is shown only while ``gc`` is
    disabled, where each cycle stays until ``cleargrad()``, or inside
    ``detect_anomaly()`` (an observer with ``reports_grad_cycles``).
    """
    global _grad_cycle_warned
    if gc.isenabled() and not any(getattr(o, 'reports_grad_cycles', False) for o in run.observers):
        return
    _grad_cycle_warned = True
    warnings.warn(GRAD_CYCLE, UserWarning, stacklevel=4)  # points at the y.backward() line


def _notify_backward(observers, f, gys, gxs):
    for observer in list(observers):  # a copy: an observer may unregister itself
        observer.on_backward(f, gys, gxs)


def _output_grads(f, grads, run):
    """Pop the complete gradients of ``f``'s outputs from ``grads`` (the non-plain path)."""
    outputs = f.outputs
    if outputs.__class__ is _OutputRef:
        y = outputs()
        gy = grads.pop(y, None)
        if gy is None:
            raise reused_function(f)
        return (_arrived(y, gy, run),)
    gys = []
    for ref, (shape, dtype) in zip(outputs, f.output_specs):
        y = ref()
        gy = grads.pop(y, None) if y is not None else None
        if gy is None:  # an output nobody used: its gradient is zero
            xp = cuda.get_array_module(f.inputs[0].data) if f.inputs else np
            gy = Variable(xp.zeros(shape, dtype))
        else:
            gy = _arrived(y, gy, run)
        gys.append(gy)
    return gys


def _arrived(y, gy, run):
    """``y``'s gradient ``gy`` is complete: run its hooks, keep it where asked, return it.

    It goes to ``y.grad`` with ``retain_grad`` or ``y.retain_grad()`` (never
    while capturing: ``autograd.grad`` touches no ``.grad``), to ``capture`` if
    named.  An array kept or returned by a hook is added to ``run.shared``: a
    leaf it flows into unchanged gets a copy.
    """
    retain_grad, capture = run.retain_grad, run.capture
    hooks = _variable_hooks.get(y) if run.hooks_on else None
    if hooks is not None:
        gy = hooks.apply(y, gy, _check_grad, run.observers)
        retain_grad = retain_grad or (hooks.retain and capture is None)
        run.shared.add(id(gy.data))
    if retain_grad:
        with state_lock:
            y.grad = gy if y.grad is None else y.grad + gy
        run.shared.add(id(gy.data))
    if capture is not None and y in capture:
        capture[y] = gy
    return gy


def _store_leaf_grads(grads, seen, run):
    """Hand the leaves their gradients (``.grad``, or ``run.capture``); True if one has a graph.

    A gradient stored into a leaf's empty ``.grad`` is an array of its own,
    writable, shared with no other leaf, seed or retained gradient, so
    ``p.grad.data *= 0.5`` is safe.  It is copied only when it is not yet:
    a view (``sum``'s broadcast, a reshape), an array another leaf or a
    retained gradient got too (tracked by ``id``), or a read-only array.
    Fresh results of a rule (matmul, sum_to, ...) are stored as they are.
    """
    # Speed trick: copy only what is shared (ids in ``stored`` / ``run.shared``), not every
    # gradient: copying all four of bench mlp's would add ~0.43 ms to a 6.7 ms step (6 %).
    stored = set()
    cycle = False
    capture = run.capture
    for x, g in grads.items():
        c = x.creator
        if c is not None and c in seen:  # its creator ran but did not take it
            raise reused_function(c)
        if not x.requires_grad or capture is not None and x not in capture:
            continue
        hooks = _variable_hooks.get(x) if run.hooks_on else None
        if hooks is not None:  # one look-up: another thread may remove the entry meanwhile
            g = hooks.apply(x, g, _check_grad, run.observers)
        if capture is not None:
            capture[x] = g
            continue
        with state_lock:  # read, add and write back as one step: threads may share x
            old = _grad_slot.__get__(x)
            if old is None:
                data = g.data
                if (data.base is not None or id(data) in stored or id(data) in run.shared
                        or not getattr(data.flags, 'writeable', True)):
                    g = _Copy()(g) if run.create_graph else Variable(data.copy())
                stored.add(id(g.data))
            else:
                g = old + g if run.create_graph else Variable(as_array(old.data + g.data))
            _grad_slot.__set__(x, g)
        cycle = cycle or g.creator is not None
    return cycle


class _Copy(Function):
    """y = a copy of x; dL/dx = gy.  Gives a leaf its own gradient array under create_graph."""
    __slots__ = ()
    backward_reads_values = False

    def forward(self, x):
        return x.copy()

    def backward(self, gy):
        return gy

    def jvp(self, dx):
        return dx


# =============================================================================
# Variable's operators
# =============================================================================
# The one late import of the package: the operations of operators.py are
# Functions, so they need Variable and Function from above, and Variable's
# methods (x + y, x.sum(), ...) need them back.  Importing them here, after
# both classes exist, closes that loop without patching operators onto the
# class.  The names are also DeZero's ``dezero.core`` exports.
from dezero_kr.operators import (  # noqa: E402,F401
    Add, AddConstant, BroadcastTo, Div, DivConstant, GetItem, GetItemGrad, MatMul, Max, Min, Mul,
    MulConstant, Neg, Pow, PowVariable, RDivConstant, RPow, RSubConstant, Reshape, Sub, SubConstant,
    Sum, SumTo, Transpose, add, broadcast_to, div, get_item, matmul, max, min, mul, neg, pow, rdiv,
    reshape, rpow, rsub, sub, sum, sum_to, transpose)
