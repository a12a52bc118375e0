"""The define-by-run core: Config, Variable, Parameter, Function and backprop.

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

Every ``backward`` is written with differentiable operations on Variables, so
``backward(create_graph=True)`` records the gradient computation itself and
higher-order derivatives come for free.  When nothing is recorded (a plain
``backward()``), the hot rules run the very same formula on the raw arrays
(``operands`` / ``as_grad``), which skips a Function object per operation.
Every ``jvp`` (forward mode, see
``dezero_kr.autograd``) receives one tangent per input (``None`` = zero) and
returns one tangent per output, written with the same operations.
"""
import builtins
import contextlib
import heapq
import itertools
import threading
import warnings
import weakref

import numpy as np

from dezero_kr import cuda

_builtin_max = builtins.max  # this module defines its own max/min/sum/pow ops
_new_object = object.__new__

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
    (the book's step 18) sets, the current thread's switch.  An instance of a
    ``threading.local`` subclass rather than a class with properties: backward
    rules read ``Config.enable_backprop`` once per operation, and a property
    would cost several times a thread-local attribute.  ``Function.__call__``
    reads a global count first (``_backprop_off``), as cheap as the class
    attribute DeZero reads.
    """
    switches = ('enable_backprop', 'train')

    def __init__(self):  # runs once in every thread that touches Config
        self.enable_backprop = True
        self.train = True

    def __setattr__(self, name, value):
        # A typo (Config.enable_backprob = False) would otherwise add a new,
        # unused attribute and leave the real switch on: a silent wrong mode.
        if name not in _Modes.switches:
            raise _unknown_switch('Config', name)
        if name == 'enable_backprop':
            _set_enable_backprop(self, value)
        else:
            threading.local.__setattr__(self, name, value)

    def __repr__(self):
        return (f'Config(enable_backprop={self.enable_backprop}, train={self.train}) '
                f'(this thread)')


class ConfigError(AttributeError, ValueError):
    """An unknown ``Config`` switch: an AttributeError (what DeZero raised) and a ValueError."""


def _unknown_switch(where, name):
    return ConfigError(f'{where}: unknown switch {name!r}; the switches are '
                       f'{", ".join(repr(s) for s in _Modes.switches)}')


# How many threads have enable_backprop off right now.  Function.__call__ reads
# this global first and reaches the (slower) thread-local switch only when it
# is non-zero: a thread that turned its switch off has counted itself before,
# so a zero proves the current thread records.  A thread is counted by the
# token its Config holds while the switch is off, so a thread that ends with
# the switch off (Config.enable_backprop = False, never restored) is uncounted
# when its thread-locals are freed.
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
        raise _unknown_switch('using_config', name)
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


# Objects notified of every Function call and every backward step (forward-mode
# AD, anomaly detection), one list per thread: detect_anomaly() or jvp() in one
# thread never sees another thread's operations.  ``_observed`` counts the
# observers registered in all threads together, so that the hot path, which
# must stay as cheap as a global read while nobody observes, tests that one
# integer and reaches the thread's list only when it is non-zero.  A thread's
# own registrations are always counted, so a zero proves its list is empty.
# Only the context managers in dezero_kr.autograd add and remove entries.
class _Observers(threading.local):
    def __init__(self):
        self.list = []


_observers = _Observers()
_observed = 0
_observed_lock = threading.Lock()


def _count_observer(delta):
    global _observed
    with _observed_lock:  # += on a global is not atomic across threads
        _observed += delta


@contextlib.contextmanager
def observing(observer):
    """Register ``observer`` (``on_forward(f, inputs, outputs)``,
    ``on_backward(f, gys, gxs)`` and, optionally, ``on_hook(var, hook, grad)``
    for a gradient a hook returned) for the duration of the block, in the
    current thread."""
    observers = _observers.list
    _count_observer(1)
    observers.append(observer)
    try:
        yield observer
    finally:
        observers.remove(observer)
        _count_observer(-1)


def _current_observers():
    """The current thread's observers (a list; empty while none is registered)."""
    return _observers.list if _observed else ()


# =============================================================================
# Variable / Parameter
# =============================================================================
def as_array(x, array_module=np):
    """Turn a NumPy scalar (what 0-d operations return) into a 0-d array."""
    if np.isscalar(x):
        return array_module.array(x)
    return x


def as_variable(obj):
    """Return ``obj`` if it is a Variable, else ``Variable(obj)`` (ndarray only)."""
    if isinstance(obj, Variable):
        return obj
    return Variable(obj)


def _type_error(data):
    kind = type(data)
    hint = ''
    if isinstance(data, (bool, int, float, complex, np.generic)):
        hint = f'; wrap it first: Variable(np.array({data!r}))'
    elif isinstance(data, (list, tuple)):
        hint = '; convert it first: Variable(np.array(...))'
    return TypeError(f'Variable data must be a numpy.ndarray (or cupy.ndarray) or None, '
                     f'got {kind.__module__}.{kind.__qualname__}{hint}')


# Names are rare too (leaves and parameters): a side table, not a slot.
_variable_names = weakref.WeakKeyDictionary()

# Hooks and retain-grad flags are rare, so they live in this side table instead
# of a slot on every Variable (a slot costs 8 bytes on each of millions of nodes).
# Each backprop checks once whether the table is empty (removing the last hook
# deletes the entry): while no Variable has a hook or a retain flag, backprop
# does not even look the table up.  The check is a local of that backprop, not
# a process-wide flag, so one thread registering or dropping a hook can never
# make another thread's backprop skip a hook.
_variable_hooks = weakref.WeakKeyDictionary()


def _hooks_of(var):
    hooks = _variable_hooks.get(var)
    if hooks is None:
        hooks = _variable_hooks[var] = _VariableHooks()
    return hooks


class Variable:
    """A box around an ndarray that remembers how it was computed.

    ``data``: the array (``numpy.ndarray``; ``cupy.ndarray`` on GPU; None for
    a not-yet-initialised parameter).  ``grad``: a Variable of the same shape
    after ``backward()``, else None.  ``creator``: the Function that made it
    (None for a leaf).  ``generation``: ``creator.generation + 1``, the
    topological depth that orders the reverse pass.
    """
    # Four slots keep a Variable at 64 bytes: ``name`` (rarely set) lives in a
    # side table and ``generation`` is derived from ``creator``.
    __slots__ = ('data', 'grad', 'creator', '__weakref__')
    requires_grad = True      # a class attribute: Constant says False
    __array_priority__ = 200  # ndarray (op) Variable dispatches to Variable's reflected operator
    __array_ufunc__ = None    # NumPy ufuncs refuse Variables instead of making object arrays

    def __init__(self, data, name=None):
        if data is not None and not isinstance(data, array_types):
            raise _type_error(data)
        self.data = data
        self.grad = None
        self.creator = None
        if name is not None:
            _variable_names[self] = name

    @property
    def name(self):
        return _variable_names.get(self)

    @name.setter
    def name(self, value):
        if value is None:
            _variable_names.pop(self, None)
        else:
            _variable_names[self] = value

    # --- copy, deepcopy, pickle ------------------------------------------------
    # The default protocol copies the slots only, and ``name`` lives in the side
    # table, so it would be lost; these carry it over (no slot is added).
    # Hooks and retain_grad() flags are per-object and are not copied.
    def __copy__(self):
        """Shallow copy: same ``data`` array, ``grad`` and ``creator`` objects, same name."""
        new = object.__new__(type(self))
        new.data = self.data
        Variable.grad.__set__(new, Variable.grad.__get__(self))  # the slot (core_simple wraps it)
        new.creator = self.creator
        name = _variable_names.get(self)
        if name is not None:
            _variable_names[new] = name
        return new

    def __reduce_ex__(self, protocol):
        """deepcopy and pickle: ``(type, data, grad, name)`` of a leaf; a non-leaf is refused.

        The graph behind a computed Variable holds weak references to its
        outputs, which can be neither copied nor pickled; copy a leaf
        (``y.detach()`` keeps the data and name) instead.  A gradient that
        carries a graph (``backward(create_graph=True)``) is copied as its
        values, so a model stays copyable after double backprop.
        """
        if self.creator is not None:
            raise TypeError(f'cannot deepcopy or pickle a Variable computed by '
                            f'{type(self.creator).__name__} (name {self.name!r}, shape '
                            f'{None if self.data is None else self.data.shape}): only leaves can '
                            f'be copied; use .detach() or .unchain() first')
        grad = Variable.grad.__get__(self)
        if grad is not None and grad.creator is not None:
            grad = Variable(grad.data)
        state = (self.data, grad, _variable_names.get(self))
        return object.__new__, (type(self),), state

    def __setstate__(self, state):
        data, grad, name = state
        self.data = data
        Variable.grad.__set__(self, grad)
        self.creator = None
        if name is not None:
            _variable_names[self] = name

    @property
    def generation(self):
        """Topological depth: 0 for a leaf, else ``creator.generation + 1``."""
        creator = self.creator
        return 0 if creator is None else creator.generation + 1

    # --- array-like properties ---------------------------------------------
    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    @property
    def T(self):
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
        self.creator = func  # generation follows: func.generation + 1

    def unchain(self):
        """Cut the link to the creator: this Variable becomes a leaf."""
        self.creator = None

    def cleargrad(self):
        self.grad = None

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

    # --- gradient hooks (PyTorch-style) --------------------------------------
    def register_hook(self, hook):
        """Call ``hook(grad)`` when this Variable's gradient of a backward pass is complete.

        The hook may return a Variable/ndarray to replace the gradient (which
        then flows on), or None to keep it.  Returns a handle with ``.remove()``.
        """
        return _hooks_of(self).add(hook, self)

    def retain_grad(self):
        """Keep this non-leaf Variable's gradient in ``.grad`` after backward."""
        _hooks_of(self).retain = True

    @property
    def retains_grad(self):
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
        """
        if self.data is None:
            raise ValueError(f'backward: {self!r} has no data')
        seed = self.grad
        if seed is None:
            xp = cuda.get_array_module(self.data)
            seed = Variable(xp.ones_like(self.data))
        else:
            seed = _check_grad(seed, self, 'backward: the seed gradient (y.grad)')
        if self.creator is None:  # a leaf: dy/dy is the seed itself
            self.grad = seed
            return
        self.grad = None  # the seed is taken; a retained root gets it back from backprop
        backprop({self: seed}, retain_grad=retain_grad, create_graph=create_graph)

    # --- methods that build graph operations --------------------------------
    def reshape(self, *shape):
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return reshape(self, shape)

    def transpose(self, *axes):
        if len(axes) == 0:
            axes = None
        elif len(axes) == 1 and (isinstance(axes[0], (tuple, list)) or axes[0] is None):
            axes = axes[0]
        return transpose(self, axes)

    def sum(self, axis=None, keepdims=False):
        return sum(self, axis, keepdims)

    def max(self, axis=None, keepdims=False):
        return max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return min(self, axis, keepdims)

    def matmul(self, other):
        return matmul(self, other)

    dot = matmul
    matmaul = matmul  # the Korean edition's spelling, kept so its code runs

    def to_cpu(self):
        if self.data is not None:
            self.data = cuda.as_numpy(self.data)

    def to_gpu(self):
        if self.data is not None:
            self.data = cuda.as_cupy(self.data)

    # --- operators -------------------------------------------------------------
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(self, other)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(self, other)

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

    def __matmul__(self, other):
        return matmul(self, other)

    def __rmatmul__(self, other):
        return matmul(other, self)

    def __getitem__(self, slices):
        return get_item(self, slices)


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


_hook_keys = itertools.count()


class _VariableHooks:
    """The hooks and the retain-grad flag of one Variable."""
    __slots__ = ('fns', 'retain')

    def __init__(self):
        self.fns = {}
        self.retain = False

    def add(self, fn, var):
        if not callable(fn):
            if not self.fns and not self.retain:  # keep the table empty for backprop
                del _variable_hooks[var]
            raise TypeError(f'register_hook: the hook must be callable (hook(grad) -> new grad '
                            f'or None), got {type(fn).__name__} {fn!r:.60}')
        key = next(_hook_keys)  # unique for the process: a stale handle never hits a new hook
        self.fns[key] = fn
        return _HookHandle(var, key)

    def apply(self, var, grad):
        """Run the hooks on ``grad``; return it, or the replacement a hook returned."""
        for fn in list(self.fns.values()):
            new = fn(grad)
            if new is not None:
                what = f'a hook on {var.name or "a Variable"!r} (the hook {_hook_name(fn)})'
                grad = _check_grad(new, var, what)
                if _observed:  # detect_anomaly checks what a hook returns
                    for observer in list(_observers.list):
                        on_hook = getattr(observer, 'on_hook', None)  # optional for observers
                        if on_hook is not None:
                            on_hook(var, fn, grad)
        return grad


def _hook_name(fn):
    name = getattr(fn, '__qualname__', None)
    return repr(name) if isinstance(name, str) else repr(fn)[:60]


def _describe(var):
    name = var.name
    kind = type(var).__name__
    if var.data is None:
        return f'{kind} {name!r}' if name is not None else f'a {kind}'
    shape = var.data.shape
    return f'{kind} {name!r} (shape {shape})' if name is not None else f'a {kind} of shape {shape}'


class _HookHandle:
    __slots__ = ('_var', '_key')

    def __init__(self, var, key):
        self._var, self._key = weakref.ref(var), key

    def remove(self):
        var = self._var()
        hooks = _variable_hooks.get(var) if var is not None else None
        if hooks is not None:
            hooks.fns.pop(self._key, None)
            if not hooks.fns and not hooks.retain:  # nothing left: backprop may skip the table
                del _variable_hooks[var]


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
    weak references a multi-output Function stores, without allocating that
    tuple for every node of the graph (memory, and less work for the GC).
    """
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
    """One operation of the graph.  Subclasses write ``forward`` (raw arrays
    in, array or tuple of arrays out), ``backward`` (one gradient Variable per
    output in, one per input out, ``None`` for "no gradient") and ``jvp``.

    After a call with backprop enabled: ``inputs`` (tuple of Variables),
    ``outputs`` (tuple of weak references), ``generation`` (max input
    generation).  Hyper-parameters go to ``__init__`` (``Sum(axis, keepdims)``).

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
        # The hot path of the whole library: unrolled for the common one- and
        # two-input, one-output cases; everything rare is in a helper.
        for x in inputs:
            if not isinstance(x, Variable):
                inputs = _wrap_inputs(self, inputs)
                break
        n_in = len(inputs)
        try:
            if n_in == 1:
                ys = self.forward(inputs[0].data)
            elif n_in == 2:
                ys = self.forward(inputs[0].data, inputs[1].data)
            else:
                ys = self.forward(*[x.data for x in inputs])
        except (ValueError, TypeError, IndexError, AttributeError) as e:
            raise _forward_error(self, inputs, e) from e
        if ys.__class__ is tuple:
            return _record_outputs(self, inputs, ys)

        # Build the output Variable in place (its __init__ would re-check the
        # type and set creator/generation twice).
        y = _new_object(Variable)
        y.data = ys if ys.__class__ is np.ndarray else as_array(ys)
        y.grad = None
        if _backprop_off == 0 or Config.enable_backprop:  # see _backprop_off
            # generation = max over inputs of (0 for a leaf, creator.generation + 1)
            c = inputs[0].creator
            generation = 0 if c is None else c.generation + 1
            if n_in > 1:
                for x in inputs[1:]:
                    c = x.creator
                    if c is not None and c.generation >= generation:
                        generation = c.generation + 1
            self.generation = generation
            y.creator = self
            self.inputs = inputs
            self.outputs = _OutputRef(y)
        else:
            y.creator = None
        if _observed:
            _notify_forward(self, inputs, [y])
        return y

    def forward(self, *xs):
        raise NotImplementedError(f'{type(self).__name__}.forward is not implemented')

    def backward(self, *gys):
        raise NotImplementedError(f'{type(self).__name__}.backward is not implemented')

    def jvp(self, *tangents):
        raise NotImplementedError(f'{type(self).__name__}.jvp (forward mode) is not implemented')


def _wrap_inputs(f, inputs):
    """Raw arrays passed to a Function become Constant leaves; anything else is a TypeError."""
    try:
        return tuple([x if isinstance(x, Variable) else Constant(x) for x in inputs])
    except TypeError as e:
        raise TypeError(f'{type(f).__name__}: {e}') from None


def _record_outputs(f, inputs, ys):
    """The general case of ``Function.__call__``: several outputs (returned as a list)."""
    outputs = [Variable(y if y.__class__ is np.ndarray else as_array(y)) for y in ys]
    if _backprop_off == 0 or Config.enable_backprop:
        f.generation = _builtin_max([x.generation for x in inputs]) if inputs else 0
        for y in outputs:
            y.creator = f
        f.inputs = inputs
        f.outputs = tuple([weakref.ref(y) for y in outputs])
        # An output the caller dropped still needs a zero gradient in backward.
        f.output_specs = tuple([(y.data.shape, y.data.dtype) for y in outputs])
    if _observed:
        _notify_forward(f, inputs, outputs)
    return outputs if len(outputs) > 1 else outputs[0]


def _notify_forward(f, inputs, outputs):
    for observer in list(_observers.list):
        observer.on_forward(f, inputs, outputs)


def _forward_error(f, inputs, e):
    name = type(f).__name__
    for i, x in enumerate(inputs):
        if x.data is None:  # e.g. a Parameter its layer has not initialised yet
            return ValueError(f'{name}: input #{i} is {_describe(x)} with no data (None); give it '
                              f'an array first (a layer sets its parameters at its first call)')
    shapes = ', '.join(str(x.data.shape) for x in inputs)
    msg = f'{name}.forward failed for input shapes [{shapes}]: {e}'
    try:
        return type(e)(msg)
    except Exception:  # an exception type whose constructor wants other arguments
        return ValueError(msg)


# =============================================================================
# Backprop: the reverse pass
# =============================================================================
def backprop(grads, retain_grad=False, create_graph=False, capture=None):
    """Run reverse mode from the seeds in ``grads`` (dict Variable -> gradient).

    Functions are popped from a heap keyed by ``(-generation, insertion
    counter)``: a function runs only after every function that consumes its
    outputs has run, so each output's gradient is complete when it is read.
    Gradients live in the ``grads`` dict while the pass runs; an entry is
    dropped when its creator runs (intermediate grads are not kept unless
    retained), and what is left at the end belongs to leaves.

    ``capture=None`` (``Variable.backward``): leaf gradients are accumulated
    into ``.grad``.  ``capture`` a dict: gradients of the Variables it names
    are stored in it, and no ``.grad`` is touched (``autograd.grad``).

    A gradient stored into a leaf's empty ``.grad`` is an array of its own,
    writable, shared with no other leaf, seed or retained gradient, so
    ``p.grad.data *= 0.5`` is safe.  It is copied only when it is not yet:
    a view (``sum``'s broadcast, a reshape), an array another leaf or a
    retained gradient got too, or a read-only array.  Fresh results of a
    rule (matmul, sum_to, ...) are stored as they are.

    Runs with ``Config.enable_backprop = create_graph`` in this thread only.
    """
    hooks_on = len(_variable_hooks) > 0  # one look per pass (see _variable_hooks)
    observers = _current_observers()
    # The common case (no hooks, nothing retained or captured) reads each
    # output's gradient inline; everything else goes through _output_grads.
    plain = not (hooks_on or retain_grad or capture is not None or observers)
    heap = []
    seen = set()
    tie = itertools.count()
    # Arrays the caller holds (seeds) or that stay reachable as a retained or
    # hooked gradient: a leaf that would get one of them gets a copy.
    shared = {id(getattr(g, 'data', g)) for g in grads.values()}
    for v in grads:
        f = v.creator
        if f is not None and f not in seen:
            seen.add(f)
            heapq.heappush(heap, (-f.generation, next(tie), f))

    # Config is switched by hand rather than with using_config(): this runs on
    # every backward call and the context manager costs more than the rest of a
    # small model's pass.  The finally clause restores it all the same.  The
    # switch is this thread's (see Config), so other threads keep recording.
    old_enable_backprop = Config.enable_backprop
    _set_enable_backprop(Config, create_graph)
    try:
        while heap:
            f = heapq.heappop(heap)[2]
            outputs = f.outputs
            if plain and outputs.__class__ is _OutputRef:
                gys = None
                gy = grads.pop(outputs(), None)
                if gy is None:
                    raise _reused_function_error(f)
                gxs = f.backward(gy)
            else:
                gys = _output_grads(f, grads, retain_grad, capture, hooks_on, shared)
                gxs = f.backward(*gys)
            if gxs.__class__ is not tuple:
                gxs = (gxs,)
            inputs = f.inputs
            if len(gxs) != len(inputs):
                raise ValueError(f'{type(f).__name__}.backward returned {len(gxs)} gradients '
                                 f'for {len(inputs)} inputs')
            if gys is not None and observers:  # plain passes exclude observers
                for observer in list(observers):
                    observer.on_backward(f, gys, gxs)
            for x, gx in zip(inputs, gxs):
                if gx is None:
                    continue
                if gx.__class__ is not Variable or gx.data.shape != x.data.shape:
                    gx = _check_grad(gx, x, f'{type(f).__name__}.backward: the gradient for its '
                                            f'input #{inputs.index(x)}')
                g = grads.get(x)
                if g is None:
                    grads[x] = gx
                elif create_graph:  # _sum_grads inlined: the mode is known here
                    grads[x] = g + gx
                else:
                    grads[x] = Variable(as_array(g.data + gx.data))
                c = x.creator
                if c is not None and c not in seen:
                    seen.add(c)
                    heapq.heappush(heap, (-c.generation, next(tie), c))

        # What is left are leaves (their creators, if any, were never reached).
        stored = set()
        cycle = False
        for x, g in grads.items():
            c = x.creator
            if c is not None and c in seen:  # its creator ran but did not take it
                raise _reused_function_error(c)
            if not x.requires_grad or capture is not None and x not in capture:
                continue
            if hooks_on and x in _variable_hooks:
                g = _variable_hooks[x].apply(x, g)
            if capture is not None:
                capture[x] = g
                continue
            old = _grad_slot.__get__(x)  # the slot itself: core_simple's Variable wraps .grad
            if old is None:
                data = g.data
                if (data.base is not None or id(data) in stored or id(data) in shared
                        or not getattr(data.flags, 'writeable', True)):
                    g = _Copy()(g) if create_graph else Variable(data.copy())
                stored.add(id(g.data))
            else:
                g = _sum_grads(old, g)
            _grad_slot.__set__(x, g)
            cycle = cycle or g.creator is not None
    finally:
        _set_enable_backprop(Config, old_enable_backprop)
    if cycle:
        _warn_grad_cycle()


# The slot that stores a Variable's gradient (a subclass may wrap ``grad``).
_grad_slot = Variable.grad
_grad_cycle_warned = False


def _warn_grad_cycle():
    """Warn once per process, as PyTorch does, about the cycle create_graph makes."""
    global _grad_cycle_warned
    if _grad_cycle_warned:
        return
    _grad_cycle_warned = True
    warnings.warn('backward(create_graph=True) stored a gradient that has a graph in a leaf\'s '
                  '.grad: leaf -> .grad -> graph -> leaf is a reference cycle, so that memory '
                  'is freed only by the garbage collector (and never with gc disabled). '
                  'Call x.cleargrad() on each leaf when you are done with its gradient, or use '
                  'dezero_kr.autograd.grad(y, x, create_graph=True), which returns the '
                  'gradients and stores none.  (Shown once.)', UserWarning, stacklevel=4)


def _reused_function_error(f):
    name = type(f).__name__
    return RuntimeError(f'{name}: this Function instance was called more than once while the '
                        f'graph was recorded, so its inputs and outputs were overwritten by the '
                        f'later call and the earlier output\'s gradient cannot be computed. '
                        f'Create a new instance for every call ({name}()(x), not f = {name}(); '
                        f'f(a); f(b)).')


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


def _output_grads(f, grads, retain_grad, capture, hooks_on, shared):
    """Pop the complete gradients of ``f``'s outputs from ``grads``."""
    outputs = f.outputs
    if outputs.__class__ is _OutputRef:
        y = outputs()
        gy = grads.pop(y, None)
        if gy is None:
            raise _reused_function_error(f)
        if hooks_on or retain_grad or capture is not None:
            gy = _arrived(y, gy, retain_grad, capture, hooks_on, shared)
        return (gy,)
    gys = []
    for ref, (shape, dtype) in zip(outputs, f.output_specs):
        y = ref()
        gy = grads.pop(y, None) if y is not None else None
        if gy is None:  # an output nobody used: its gradient is zero
            xp = cuda.get_array_module(f.inputs[0].data) if f.inputs else np
            gy = Variable(xp.zeros(shape, dtype))
        else:
            gy = _arrived(y, gy, retain_grad, capture, hooks_on, shared)
        gys.append(gy)
    return gys


def _arrived(y, gy, retain_grad, capture, hooks_on, shared):
    """``y``'s gradient ``gy`` is complete: run its hooks, keep it where asked, return it.

    It goes to ``y.grad`` with ``retain_grad`` or ``y.retain_grad()`` (never
    while capturing: ``autograd.grad`` touches no ``.grad``), to ``capture`` if
    named.  An array kept or returned by a hook is added to ``shared``: a leaf
    it flows into unchanged gets a copy.
    """
    hooks = _variable_hooks.get(y) if hooks_on else None
    if hooks is not None:
        gy = hooks.apply(y, gy)
        retain_grad = retain_grad or (hooks.retain and capture is None)
        shared.add(id(gy.data))
    if retain_grad:
        y.grad = gy if y.grad is None else y.grad + gy
        shared.add(id(gy.data))
    if capture is not None and y in capture:
        capture[y] = gy
    return gy


def _sum_grads(a, b):
    """``a + b`` for two gradient Variables; plain arrays unless a graph is recorded."""
    if Config.enable_backprop:
        return a + b
    return Variable(as_array(a.data + b.data))


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
