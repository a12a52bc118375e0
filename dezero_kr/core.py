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
``dezero_kr.modes`` (``Config`` and the modes of each thread),
``dezero_kr.hooks`` (gradient hooks, and ``Observer``: the one extension
point through which tools watch every operation; the engine names none of
them) and ``dezero_kr.errors`` (the error messages).  The reverse pass is
``dezero_kr.reverse_pass``, imported at the end like the operators.  Each speed trick is explained where it is, with what
it saves on the ``bench/core_ops.py`` workload (an interleaved A/B against the
code without it); docs/how_it_works.md tells the same story in Korean.
"""
import weakref
from operator import attrgetter

import numpy as np

from dezero_kr import cuda
from dezero_kr.errors import (GRAD_CYCLE, ConfigError, cannot_copy, describe,  # noqa: F401
                              forward_error, hook_name, not_an_array, reused_function,
                              unknown_switch, wrong_gradient_count)
from dezero_kr import hooks as _hooks, modes as _modes
from dezero_kr.hooks import add_hook, observing, retain, variable_hooks  # noqa: F401
from dezero_kr.modes import (Config, no_grad, set_enable_backprop, state_lock, test_mode,  # noqa: F401
                             using_config)


if cuda.cupy is not None:
    array_types = (np.ndarray, cuda.cupy.ndarray)
else:
    array_types = (np.ndarray,)


# =============================================================================
# Variable / Parameter / Constant
# =============================================================================
def as_array(x, array_module=np):
    """Turn a NumPy scalar (what 0-d operations return) into a 0-d array, an ``np.matrix``
    into a plain ndarray (see ``plain_array``); anything else as is."""
    if x.__class__ is np.ndarray:  # the common case first: np.isscalar costs ~15 times this test
        return x
    if np.isscalar(x):
        return array_module.array(x)
    if isinstance(x, np.ndarray):
        return plain_array(x)
    return x


def plain_array(data):
    """``data`` for a Variable: an ``np.matrix`` becomes a plain ndarray view.

    ``np.matrix`` redefines ``*`` as the matrix product (and keeps every result
    2-D); its values are plain, so the view is exact and every operation gets
    NumPy's elementwise meaning.  Other subclasses keep their class: they keep
    NumPy's operators (``np.memmap``), and a tool may mark arrays with one (the
    Define-and-Run tracer marks a traced step's arrays so).  A masked array is refused (TypeError): the values under
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
    product); a masked array is a TypeError (see ``plain_array``).
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
            data = plain_array(data)
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
        grad_slot.__set__(new, grad_slot.__get__(self))  # the slot: core_simple wraps .grad
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
        grad = grad_slot.__get__(self)
        if grad is not None and grad.creator is not None:
            grad = Variable(grad.data)
        return object.__new__, (type(self),), (self.data, grad, self.name)

    def __setstate__(self, state):
        self.data, grad, self.name = state
        grad_slot.__set__(self, grad)
        self.creator = None

    @property
    def generation(self):
        """Topological depth: 0 for a leaf, else ``creator.generation + 1``."""
        creator = self.creator
        return 0 if creator is None else creator.generation + 1

    # --- array-like properties: those of ``data`` (read in C by attrgetter) -----
    shape = property(attrgetter('data.shape'), doc='``data.shape``, the tuple of dimensions.')
    ndim = property(attrgetter('data.ndim'), doc='``data.ndim``, the number of dimensions.')
    size = property(attrgetter('data.size'), doc='``data.size``, the number of elements.')
    dtype = property(attrgetter('data.dtype'),
                     doc='``data.dtype``; the operations keep it (float32 in, float32 out).')

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
        if _hooks.observed:  # an observer may record it (one global test per parameter and step)
            for observer in list(_hooks.observers()):
                observer.on_cleargrad(self)

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
        hooks = variable_hooks.get(self)
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
            seed = check_grad(seed, self, 'backward: the seed gradient (y.grad)')
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
grad_slot = Variable.grad


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


def check_grad(g, var, what):
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
class OutputRef(weakref.ref):
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
    ``outputs`` (weak references, see ``OutputRef``), ``generation`` (max
    input generation).  Hyper-parameters go to ``__init__`` (``Sum(axis, keepdims)``).

    An instance is one node of the graph: call it once (``Exp()(x)``).  A
    second recorded call overwrites what the first one saved; backprop then
    raises a RuntimeError saying so.  An observer may catch the second call
    itself (``Observer.on_forward``); checking every call here would cost the
    hot path a failed slot lookup per operation.

    ``backward_reads_values``: False for an op whose backward uses only
    shapes and constants, never the values of its inputs or outputs (add,
    reshape, sum, ...): a tool that looks for arrays changed in place between
    forward and backward (an ``Observer``) need then check only their shapes.
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
        if ys.__class__ is tuple or _hooks.observed:  # see dezero_kr.hooks
            return _record_outputs(self, inputs, ys, generation)

        # Speed trick: the output Variable is built without __init__ (no type check of what
        # forward made, no name, creator set once): ~55 ns, 5 % of core_ops forward (measured).
        y = _new_object(Variable)
        y.data = ys if ys.__class__ is np.ndarray else as_array(ys)
        y.grad = None
        if _modes.backprop_off == 0 or Config.enable_backprop:  # see modes.backprop_off
            self.generation = generation
            y.creator = self
            self.inputs = inputs
            self.outputs = OutputRef(y)
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

    # Optional, not defined here: ``backward_arrays(self, *gys)``, the rule of ``backward``
    # on plain arrays (one gradient array per output in, one per input out, summed to that
    # input's shape, or None; called with backprop off).  A tool that replays a backward
    # pass with no Variables uses it, but only where the class that defines ``backward``
    # defines it too; otherwise it calls ``backward``.

    def jvp(self, *tangents):
        """Forward mode (the Jacobian-vector product): one tangent per input in (None = zero),
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
    if _modes.backprop_off == 0 or Config.enable_backprop:
        f.generation = generation
        for y in outputs:
            y.creator = f
        f.inputs = inputs
        if single:
            f.outputs = OutputRef(outputs[0])
        else:
            f.outputs = tuple([weakref.ref(y) for y in outputs])
            # An output the caller dropped still needs a zero gradient in backward.
            f.output_specs = tuple([(y.data.shape, y.data.dtype) for y in outputs])
    if _hooks.observed:
        for observer in list(_hooks.observers()):
            observer.on_forward(f, inputs, outputs)
    return outputs[0] if single or len(outputs) == 1 else outputs


# =============================================================================
# Variable's operators
# =============================================================================
# The one late import of the package: the operations of operators.py are
# Functions, so they need Variable and Function from above, and Variable's
# methods (x + y, x.sum(), ...) need them back.  Importing them here, after
# both classes exist, closes that loop without patching operators onto the
# class.  The names are also DeZero's ``dezero.core`` exports.
from dezero_kr.operators import (  # noqa: E402,F401
    Add, AddConstant, BroadcastTo, Div, DivConstant, Mul, MulConstant, Neg, Pow, PowVariable,
    RDivConstant, RPow, RSubConstant, Sub, SubConstant, SumTo, add, broadcast_to, div, mul, neg,
    pow, rdiv, rpow, rsub, sub, sum_to)
from dezero_kr.operators_shape import (  # noqa: E402,F401
    GetItem, GetItemGrad, MatMul, Max, Min, Reshape, Sum, Transpose, get_item, matmul, max, min,
    reshape, sum, transpose)
from dezero_kr.reverse_pass import backprop  # noqa: E402  (the reverse pass needs the classes above)
