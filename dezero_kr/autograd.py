"""Gradient tools beyond DeZero: functional reverse mode, forward mode, Jacobians,
anomaly detection and a gradient checker.

==================  ===========================================================
``grad``            d(outputs)/d(inputs) as a tuple; no ``.grad`` is touched
                    (the contract of PyTorch's ``torch.autograd.grad``)
``vjp``             ``(f(x), v^T J)``: one reverse pass
``jvp``             ``(f(x), J t)``: one forward pass that carries tangents
``jacobian``        the full J: n JVPs (forward, n = inputs) or m VJPs (reverse)
``hessian``         forward-over-reverse: the JVPs of the gradient function
``detect_anomaly``  raise ``AnomalyError`` at the first op that makes NaN/inf
``gradcheck``       compare the analytic Jacobian with central differences
==================  ===========================================================

Forward mode needs nothing from the Functions but their ``jvp`` rule: while a
``jvp`` call runs, a ``_ForwardLevel`` observes every Function call
(``core.observing``) and, when an input has a tangent, pushes the tangents of
the inputs through the op's rule to get the tangents of its outputs.  Tangents
live in a weak-key dict of the level, so the Variables stay as they are.
"""
import contextlib
import os
import sys
import threading
import traceback
import weakref
import zlib

import numpy as np

from dezero_kr import core, cuda
from dezero_kr.core import (Config, Constant, Function, Variable, array_types, backprop, no_grad,
                            observing, using_config)

__all__ = ['grad', 'vjp', 'jvp', 'jacobian', 'hessian', 'detect_anomaly', 'AnomalyError',
           'gradcheck', 'GradcheckError']


def _as_tuple(obj):
    return tuple(obj) if isinstance(obj, (tuple, list)) else (obj,)


def _as_primal(p, what, index, differentiable=True):
    """A primal input as a Variable: arrays are wrapped; so is a Constant when the
    caller needs a gradient for it (``differentiable``)."""
    if isinstance(p, Variable):
        if p.data is None:
            raise ValueError(f'{what}: primal #{index} has no data')
        if differentiable and not p.requires_grad:
            return Variable(p.data, name=p.name)
        return p
    if isinstance(p, array_types):
        return Variable(p)
    raise TypeError(f'{what}: primal #{index} must be a Variable or an ndarray, '
                    f'got {type(p).__name__}')


def _outputs_of(ys, what):
    outs = _as_tuple(ys)
    for i, y in enumerate(outs):
        if not isinstance(y, Variable):
            raise TypeError(f'{what}: f must return a Variable or a tuple of Variables; '
                            f'output #{i} is a {type(y).__name__}')
    return outs


def _constant_like(x, value=None):
    """A Constant in ``x``'s dtype and array module: ``value``, or zeros of ``x``'s shape."""
    xp = cuda.get_array_module(x.data)
    if value is None:
        return Constant(xp.zeros(x.data.shape, dtype=x.data.dtype))
    return Constant(xp.asarray(value, dtype=x.data.dtype))


# =============================================================================
# Reverse mode: grad and vjp
# =============================================================================
def grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None,
         allow_unused=False, materialize_grads=False):
    """Return ``sum_k d(outputs[k] . grad_outputs[k]) / d inputs[i]`` for each input, as a tuple.

    No ``.grad`` attribute is read or written (leaves keep what they had), as
    ``torch.autograd.grad``.  ``grad_outputs`` (one array/Variable per output,
    shaped like it) may be omitted only for outputs with one element (seed 1).
    An input the outputs do not depend on raises an error, unless
    ``allow_unused`` (its entry is None) or ``materialize_grads`` (zeros).
    ``create_graph=True`` records the gradient computation (higher order).
    ``retain_graph`` is accepted for compatibility: this engine never frees a
    graph during backward, so a graph can always be differentiated again.
    """
    outputs = _as_tuple(outputs)
    inputs = _as_tuple(inputs)
    if not inputs:
        raise ValueError('grad: inputs is empty')
    for i, x in enumerate(inputs):
        if not isinstance(x, Variable) or x.data is None:
            raise TypeError(f'grad: input #{i} must be a Variable with data, got {x!r:.60}')
        if not x.requires_grad:
            raise ValueError(f'grad: input #{i} is a {type(x).__name__} (requires_grad is False), '
                             f'so no gradient flows into it; make it a Variable')
    seeds = _seeds(outputs, grad_outputs)
    capture = dict.fromkeys(inputs)
    backprop(seeds, create_graph=create_graph, capture=capture)
    result = []
    for i, x in enumerate(inputs):
        g = capture[x]
        if g is None:
            if materialize_grads:
                g = Variable(cuda.get_array_module(x.data).zeros_like(x.data))
            elif not allow_unused:
                raise RuntimeError(f'grad: input #{i} (shape {x.shape}) was not used to compute '
                                   f'the outputs, so it has no gradient; pass allow_unused=True '
                                   f'(None for it) or materialize_grads=True (zeros)')
        result.append(g)
    return tuple(result)


def _seeds(outputs, grad_outputs):
    """The dict output -> seed gradient for ``backprop``, checked against the outputs' shapes."""
    if not outputs:
        raise ValueError('grad: outputs is empty')
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    else:
        grad_outputs = _as_tuple(grad_outputs)
        if len(grad_outputs) != len(outputs):
            raise ValueError(f'grad: got {len(grad_outputs)} grad_outputs for {len(outputs)} outputs')
    seeds = {}
    for k, (y, g) in enumerate(zip(outputs, grad_outputs)):
        if not isinstance(y, Variable) or y.data is None:
            raise TypeError(f'grad: output #{k} must be a Variable with data, got {y!r:.60}')
        if g is None:
            if y.data.size != 1:
                raise RuntimeError(f'grad: output #{k} has shape {y.shape}; a gradient can be '
                                   f'implied (1) only for a one-element output, so pass '
                                   f'grad_outputs (one array of shape {y.shape} per output)')
            g = Variable(cuda.get_array_module(y.data).ones_like(y.data))
        else:
            if not isinstance(g, Variable):
                g = Variable(_constant_like(y, g).data)  # a seed in the output's dtype
            if g.data.shape != y.data.shape:
                raise ValueError(f'grad: grad_outputs[{k}] has shape {g.data.shape}, '
                                 f'but output #{k} has shape {y.data.shape}')
        seeds[y] = g if y not in seeds else seeds[y] + g
    return seeds


def vjp(f, *primals, v=None, create_graph=False):
    """Return ``(f(*primals), v^T J)``: the vector-Jacobian product by one reverse pass.

    ``v`` is one array per output of ``f`` (may be None for a one-element
    output).  The second item is a Variable for one primal, a tuple for several;
    a primal the outputs do not depend on gets zeros.
    """
    xs = tuple(_as_primal(p, 'vjp', i) for i, p in enumerate(primals))
    if not xs:
        raise ValueError('vjp: give at least one primal')
    with using_config('enable_backprop', True):  # a reverse pass needs the graph, even in no_grad
        ys = f(*xs)
    gs = grad(_outputs_of(ys, 'vjp'), xs, grad_outputs=v, create_graph=create_graph,
              materialize_grads=True)
    return ys, gs[0] if len(xs) == 1 else gs


# =============================================================================
# Forward mode: jvp
# =============================================================================
# The active forward-mode levels of each thread, outermost first (``jvp`` inside
# ``jvp``).  Per thread, like the observers they are registered as: a jvp in
# one thread never sees another thread's operations.
class _ThreadLevels(threading.local):
    def __init__(self):
        self.list = []


_thread_levels = _ThreadLevels()


class _ForwardLevel:
    """One forward-mode pass: the tangent of each Variable computed while it is active."""
    __slots__ = ('tangents', 'paused')

    def __init__(self):
        self.tangents = weakref.WeakKeyDictionary()
        self.paused = 0

    def on_forward(self, f, inputs, outputs):
        if self.paused:
            return
        get = self.tangents.get
        tangents = [get(x) for x in inputs]
        for t in tangents:
            if t is not None:
                break
        else:
            return  # no input carries a tangent: all output tangents are zero
        out_tangents = self._run_rule(f, inputs, outputs, tangents)
        if out_tangents.__class__ is not tuple:
            out_tangents = (out_tangents,)
        if len(out_tangents) != len(outputs):
            raise ValueError(f'{type(f).__name__}.jvp returned {len(out_tangents)} tangents '
                             f'for {len(outputs)} outputs')
        for i, (y, t) in enumerate(zip(outputs, out_tangents)):
            if t is None:
                continue
            if not isinstance(t, Variable):
                t = Constant(cuda.get_array_module(t).asarray(t))
            if t.data.shape != y.data.shape:
                raise ValueError(f'{type(f).__name__}.jvp: the tangent of output #{i} has shape '
                                 f'{t.data.shape}, but the output has shape {y.data.shape}')
            self.tangents[y] = t

    def _run_rule(self, f, inputs, outputs, tangents):
        # The rule's own ops must be invisible to this level and to the inner
        # ones (else a level would differentiate its own tangent arithmetic:
        # perturbation confusion).  Outer levels do see them: that is how an
        # outer jvp differentiates an inner jvp's result.
        levels = _thread_levels.list
        silenced = levels[levels.index(self):]
        for level in silenced:
            level.paused += 1
        unrecorded = not Config.enable_backprop  # f did not store inputs/outputs: lend them
        if unrecorded:
            f.inputs = inputs
            f.outputs = tuple([weakref.ref(y) for y in outputs])
        try:
            if levels[0] is self:
                return f.jvp(*tangents)
            # An outer level differentiates this rule: rules that use raw arrays
            # when nothing is recorded must build their local derivatives as ops.
            with using_config('enable_backprop', True):
                return f.jvp(*tangents)
        finally:
            for level in silenced:
                level.paused -= 1
            if unrecorded:
                del f.inputs, f.outputs

    def on_backward(self, f, gys, gxs):
        # The ops of a backward rule are observed through on_forward, but only a
        # rule that records (create_graph=True) builds all of its local
        # derivatives as ops; otherwise some are raw arrays and tangents would be wrong.
        if self.paused or Config.enable_backprop:
            return
        get = self.tangents.get
        if any(get(v) is not None for v in f.inputs) or any(get(g) is not None for g in gys):
            raise RuntimeError(f'jvp: the backward of {type(f).__name__} ran inside jvp without '
                               f'create_graph=True; forward-over-reverse (a jvp of a gradient) '
                               f'needs grad(..., create_graph=True) or backward(create_graph=True)')

    def on_hook(self, var, hook, grad):
        pass  # a hook's result is an ordinary gradient; forward mode has nothing to do


def jvp(f, primals, tangents):
    """Return ``(f(*primals), J @ tangents)`` by forward mode (one pass, no reverse sweep).

    ``primals`` and ``tangents`` are sequences of the same length (a single
    array/Variable is accepted for each); each tangent has its primal's shape.
    The second item is one tangent Variable per output of ``f`` (a tuple when
    ``f`` returns a tuple).  Nested calls are exact: an inner ``jvp`` is
    differentiated by an outer one, each level with its own tangents.
    """
    primals, tangents = _as_tuple(primals), _as_tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f'jvp: got {len(primals)} primals but {len(tangents)} tangents')
    xs = tuple(_as_primal(p, 'jvp', i, differentiable=False) for i, p in enumerate(primals))
    level = _ForwardLevel()
    for i, (x, t) in enumerate(zip(xs, tangents)):
        if any(x is other for other in xs[:i]):
            raise ValueError(f'jvp: primal #{i} is the same Variable as an earlier primal; '
                             f'pass it once (with the sum of the tangents)')
        level.tangents[x] = _as_tangent(t, x, i)
    levels = _thread_levels.list
    levels.append(level)
    try:
        with observing(level):
            ys = f(*xs)
    finally:
        levels.remove(level)
    outs = _outputs_of(ys, 'jvp')
    out_tangents = tuple(_tangent_or_zeros(level, y) for y in outs)
    return ys, out_tangents if isinstance(ys, (tuple, list)) else out_tangents[0]


def _tangent_or_zeros(level, y):
    t = level.tangents.get(y)
    return _constant_like(y) if t is None else t


def _as_tangent(t, x, index):
    if not isinstance(t, Variable):
        t = _constant_like(x, t)
    if t.data.shape != x.data.shape:
        raise ValueError(f'jvp: tangent #{index} has shape {t.data.shape}, but its primal has '
                         f'shape {x.data.shape}')
    return t


# =============================================================================
# Jacobian and Hessian
# =============================================================================
def jacobian(f, x, mode='auto'):
    """The Jacobian of ``f`` at ``x``: an array of shape ``f(x).shape + x.shape``.

    ``mode='forward'`` builds it column by column with ``x.size`` JVPs,
    ``'reverse'`` row by row with ``f(x).size`` VJPs on one graph; ``'auto'``
    picks forward when ``x`` has fewer elements than ``f(x)``.
    """
    if mode not in ('auto', 'forward', 'reverse'):
        raise ValueError(f"jacobian: mode must be 'auto', 'forward' or 'reverse', got {mode!r}")
    x = _as_primal(x, 'jacobian', 0)
    if mode == 'forward':
        return _forward_jacobian(f, x)
    with using_config('enable_backprop', True):
        y = _single_output(f(x), 'jacobian')
    if mode == 'auto' and x.data.size < y.data.size:
        return _forward_jacobian(f, x)
    return _reverse_jacobians(y, [x])[0].reshape(y.shape + x.shape)


def _single_output(y, what):
    if not isinstance(y, Variable):
        raise TypeError(f'{what}: f must return one Variable, got {type(y).__name__}')
    return y


def _forward_jacobian(f, x):
    xp = cuda.get_array_module(x.data)
    columns, y = [], None
    for i in range(x.data.size):
        e = xp.zeros(x.data.size, dtype=x.data.dtype)
        e[i] = 1
        y, t = jvp(f, (x,), (e.reshape(x.shape),))
        y = _single_output(y, 'jacobian')
        columns.append(t.data.reshape(-1))
    if y is None:  # x has no elements
        y = _single_output(f(x), 'jacobian')
        return xp.zeros(y.shape + x.shape, dtype=y.data.dtype)
    return xp.stack(columns, axis=-1).reshape(y.shape + x.shape)


def _reverse_jacobians(y, xs):
    """``[J_i]`` with ``J_i`` of shape ``(y.size, x_i.size)``: one reverse pass per element of y."""
    xp = cuda.get_array_module(y.data)
    rows = [[] for _ in xs]
    for j in range(y.data.size):
        seed = xp.zeros(y.data.size, dtype=y.data.dtype)
        seed[j] = 1
        gs = grad(y, xs, grad_outputs=seed.reshape(y.shape), materialize_grads=True)
        for row, g in zip(rows, gs):
            row.append(g.data.reshape(-1))
    return [xp.stack(r) if r else xp.zeros((0, x.data.size), dtype=y.data.dtype)
            for r, x in zip(rows, xs)]


def hessian(f, x):
    """The Hessian of a scalar ``f`` at ``x`` (shape ``x.shape + x.shape``), forward-over-reverse.

    Column i is the JVP, along ``e_i``, of ``x -> grad(f(x), x, create_graph=True)``:
    ``x.size`` forward passes through the forward and the backward computation.
    """
    x = _as_primal(x, 'hessian', 0)

    def gradient(x):
        with using_config('enable_backprop', True):  # no_grad around hessian must not zero it
            y = _single_output(f(x), 'hessian')
        if y.data.size != 1:
            raise ValueError(f'hessian: f must return one element, got shape {y.shape}')
        return grad(y, x, create_graph=True, materialize_grads=True)[0]

    return jacobian(gradient, x, mode='forward')


# =============================================================================
# Anomaly detection
# =============================================================================
class AnomalyError(RuntimeError):
    """Raised inside ``detect_anomaly()`` by the first op whose forward or backward makes NaN/inf."""


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep


def _user_frames(limit=3):
    """The ``limit`` innermost frames outside dezero_kr (outermost first), lines read lazily."""
    frames = []
    frame = sys._getframe(2)
    while frame is not None and len(frames) < limit:
        if not frame.f_code.co_filename.startswith(_PACKAGE_DIR):
            frames.append((frame, frame.f_lineno))
        frame = frame.f_back
    frames.reverse()
    return traceback.StackSummary.extract(frames, lookup_lines=False)


def _finite(a):
    if a.dtype.kind not in 'fc':
        return True
    return bool(cuda.get_array_module(a).isfinite(a).all())


def _bad_values(a):
    xp = cuda.get_array_module(a)
    kinds = [name for name, test in (('nan', xp.isnan), ('inf', xp.isinf)) if bool(test(a).any())]
    return ' and '.join(kinds)


def _shapes(vs):
    return '[' + ', '.join(str(v.data.shape) for v in vs) + ']'


# Where each op was created, recorded only under detect_anomaly().  Keyed weakly
# by the op's first output Variable (a Function has no weakref slot, and a slot
# on every Function would cost every graph 16 bytes per node), so an entry goes
# away with its graph.
_creation_sites = weakref.WeakKeyDictionary()


def _where(f, first_output=None):
    if first_output is None:
        outputs = getattr(f, 'outputs', None)
        first_output = outputs[0]() if outputs else None
    summary = _creation_sites.get(first_output) if first_output is not None else None
    if summary is None:
        return (f'{type(f).__name__} was created outside detect_anomaly(), so where is not '
                f'recorded.')
    return f'{type(f).__name__} was created at (most recent call last):\n' + ''.join(summary.format())


def _enclosing_rule():
    """The Function whose ``backward``/``jvp`` is running, with that method's name, or (None, None).

    The ops a backward rule runs are Functions too; a NaN they make is the
    rule's NaN, so the report names the rule's Function, not the helper op.
    """
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_name in ('backward', 'jvp'):
            owner = frame.f_locals.get('self')
            if isinstance(owner, Function):
                return owner, frame.f_code.co_name
        frame = frame.f_back
    return None, None


# What each recorded op saved for its backward, under detect_anomaly(): for every
# input and output Variable its array object and a CRC-32 of its bytes (or only
# the shape, for ops whose backward reads no values).  Keyed weakly by the op's
# first output, like _creation_sites.  The arrays are held, not the Variables,
# so an entry never keeps its own key alive.
_saved_fingerprints = weakref.WeakKeyDictionary()


def _fingerprint(a):
    if a is None:
        return None, None
    if a.dtype.kind not in 'biufc':
        return a, None  # object/str arrays: identity only
    return a, zlib.crc32(np.ascontiguousarray(cuda.as_numpy(a)))


def _changed(var_data, print_):
    """How ``var_data`` differs from its fingerprint ``print_``, or None if it does not."""
    saved, crc = print_
    if var_data is not saved:
        return 'its .data was replaced by another array'
    if crc is not None and _fingerprint(saved)[1] != crc:
        return 'its values were changed in place'
    return None


class _AnomalyDetector:
    __slots__ = ('check_nan', 'recorded')

    def __init__(self, check_nan):
        self.check_nan = check_nan
        # id(Function) -> weak ref to its first output, to catch a second call of
        # one instance (Functions have no weakref slot, so the output stands in).
        self.recorded = {}

    def on_forward(self, f, inputs, outputs):
        first = outputs[0]
        _creation_sites[first] = _user_frames()
        if Config.enable_backprop:  # recorded: a backward may run later
            self._check_reuse(f, first)
            values = getattr(f, 'backward_reads_values', True)
            _saved_fingerprints[first] = (
                tuple(_fingerprint(x.data) if values else x.data.shape for x in inputs),
                tuple(_fingerprint(y.data) for y in outputs) if values else None)
        if not self.check_nan:
            return
        for i, y in enumerate(outputs):
            if not _finite(y.data):
                raise AnomalyError(_forward_report(f, inputs, outputs, i))

    def _check_reuse(self, f, first):
        key = id(f)
        ref = self.recorded.get(key)
        earlier = ref() if ref is not None else None
        if earlier is not None and earlier is not first and earlier.creator is f:
            raise AnomalyError(f'detect_anomaly: this {type(f).__name__} instance was called a '
                               f'second time while the graph was recorded; the second call '
                               f'overwrote the inputs and outputs the first call\'s backward '
                               f'needs. Create a new instance per call ({type(f).__name__}()(x)).'
                               f'\n' + _where(f, earlier))
        recorded = self.recorded

        def forget(r, key=key):
            if recorded.get(key) is r:
                del recorded[key]

        recorded[key] = weakref.ref(first, forget)

    def on_backward(self, f, gys, gxs):
        self._check_saved(f)
        if not self.check_nan:
            return
        for i, gx in enumerate(gxs):
            if gx is not None:
                data = gx.data if isinstance(gx, Variable) else gx
                if not _finite(data):
                    raise AnomalyError(_backward_report(f, gys, i, data))

    def on_hook(self, var, hook, grad):
        if self.check_nan and not _finite(grad.data):
            raise AnomalyError(f'detect_anomaly: the hook {core._hook_name(hook)} on '
                               f'{core._describe(var)} returned a gradient with '
                               f'{_bad_values(grad.data)}.')

    def _check_saved(self, f):
        first = f.outputs[0]()
        saved = _saved_fingerprints.get(first) if first is not None else None
        if saved is None:  # created outside detect_anomaly(): nothing to compare
            return
        ins, outs = saved
        for i, (x, print_) in enumerate(zip(f.inputs, ins)):
            if outs is None:  # backward reads only shapes
                how = None if x.data is not None and x.data.shape == print_ else \
                    'its shape was changed'
            else:
                how = _changed(x.data, print_)
            if how is not None:
                raise AnomalyError(_inplace_report(f, f'input #{i}', x, how))
        for i, (ref, print_) in enumerate(zip(f.outputs, outs or ())):
            y = ref()
            how = None if y is None else _changed(y.data, print_)
            if how is not None:
                raise AnomalyError(_inplace_report(f, f'output #{i}', y, how))


def _inplace_report(f, which, var, how):
    name = type(f).__name__
    return (f'detect_anomaly: {which} of {name} ({core._describe(var)}) was modified after the '
            f'forward pass that saved it ({how}), so {name}.backward would compute the gradient '
            f'at the new values: a wrong gradient. This is PyTorch\'s "a variable needed for '
            f'gradient computation has been modified by an inplace operation". Backward reads the '
            f'Variables\' .data when it runs, so change (or replace) an array only after '
            f'backward(), or run the forward pass again after changing it.\n'
            + _where(f))


def _forward_report(f, inputs, outputs, i):
    y = outputs[i]
    bad = _bad_values(y.data)
    owner, rule = _enclosing_rule()
    if owner is not None:
        head = (f'detect_anomaly: {type(owner).__name__}.{rule} produced {bad} (in its '
                f'{type(f).__name__} step, output shape {y.shape}); {type(owner).__name__} had '
                f'input shapes {_shapes(owner.inputs)}.')
        return head + '\n' + _where(owner)
    head = (f'detect_anomaly: {type(f).__name__}.forward produced {bad} in output #{i} '
            f'(shape {y.shape}) from input shapes {_shapes(inputs)}.')
    if not all(_finite(x.data) for x in inputs):
        head += ' Its inputs already held NaN/inf: they came from outside the recorded ops.'
    return head + '\n' + _where(f, outputs[0])


def _backward_report(f, gys, i, data):
    head = (f'detect_anomaly: {type(f).__name__}.backward produced {_bad_values(data)} in the '
            f'gradient of input #{i} (input shapes {_shapes(f.inputs)}).')
    if not all(_finite(g.data) for g in gys):
        head += ' The gradient arriving at its output was already non-finite.'
    return head + '\n' + _where(f)


@contextlib.contextmanager
def detect_anomaly(check_nan=True):
    """Context manager: record where each op is created and, with ``check_nan``, raise
    ``AnomalyError`` at the first op whose forward output or backward gradient holds NaN/inf.

    The error names the Function, its input shapes and the user's lines that
    created it (frames inside dezero_kr skipped).  A NaN made
    inside a backward rule is reported as that rule's.  Slow (every op is
    checked): for debugging only.  Outside the block nothing is recorded.
    """
    with observing(_AnomalyDetector(check_nan)):
        yield


# =============================================================================
# Gradient check
# =============================================================================
class GradcheckError(RuntimeError):
    """Raised by ``gradcheck`` when analytic and numerical Jacobians differ."""


def gradcheck(f, inputs, eps=1e-6, atol=1e-5, rtol=1e-3, raise_exception=True):
    """Compare the Jacobians of ``f(*inputs)`` from backprop with central differences.

    Every float array/Variable input is checked on a float64 copy (Constants,
    integer arrays and scalars pass through unchecked).  An entry fails when
    ``|analytic - numeric| > atol + rtol * |numeric|``; the report gives, per
    input, the largest absolute and relative error
    (``|g1 - g2| / max(|g1|, |g2|, eps)``) and the first failing entries.
    Returns True; on failure raises ``GradcheckError`` (or prints the report and
    returns False when ``raise_exception=False``).
    """
    args = list(_as_tuple(inputs))
    checked = []
    for i, a in enumerate(args):
        data = a.data if isinstance(a, Variable) else a
        if isinstance(a, Constant) or not hasattr(data, 'dtype') or data.dtype.kind != 'f':
            continue
        args[i] = Variable(np.array(cuda.as_numpy(data), dtype=np.float64))
        checked.append(i)
    if not checked:
        raise ValueError('gradcheck: no input to check (give float arrays or Variables)')
    xs = [args[i] for i in checked]
    outputs = _outputs_of(f(*args), 'gradcheck')
    analytic = [_reverse_jacobians(y, xs) for y in outputs]
    numeric = _numerical_jacobians(f, args, xs, outputs, eps)
    lines = []
    for n, (i, x) in enumerate(zip(checked, xs)):
        for k, y in enumerate(outputs):
            lines += _compare(cuda.as_numpy(analytic[k][n]), numeric[k][n], i, x, k, y,
                              eps, atol, rtol)
    if not lines:
        return True
    report = '\n'.join(['gradcheck failed: the analytic Jacobian differs from central '
                        f'differences (eps={eps}, atol={atol}, rtol={rtol})'] + lines)
    if raise_exception:
        raise GradcheckError(report)
    print(report)
    return False


def _numerical_jacobians(f, args, xs, outputs, eps):
    """``[[J_ki]]`` for output k, input i, shape ``(y_k.size, x_i.size)``, by central differences."""
    jac = [[np.zeros((y.data.size, x.data.size)) for x in xs] for y in outputs]

    def evaluate():
        ys = _outputs_of(f(*args), 'gradcheck')
        return [np.asarray(cuda.as_numpy(y.data), dtype=np.float64).reshape(-1) for y in ys]

    with no_grad():
        for n, x in enumerate(xs):
            flat = x.data.reshape(-1)  # a view: x.data is our own contiguous copy
            for c in range(flat.size):
                old = flat[c]
                try:
                    flat[c] = old + eps
                    plus = evaluate()
                    flat[c] = old - eps
                    minus = evaluate()
                finally:
                    flat[c] = old
                for k in range(len(outputs)):
                    jac[k][n][:, c] = (plus[k] - minus[k]) / (2 * eps)
    return jac


def _compare(a, num, i, x, k, y, eps, atol, rtol, shown=5):
    abs_err = np.abs(a - num)
    bad = np.argwhere(abs_err > atol + rtol * np.abs(num))
    if len(bad) == 0:
        return []
    rel_err = abs_err / np.maximum(np.maximum(np.abs(a), np.abs(num)), eps)
    lines = [f'  input #{i} (shape {x.shape}) -> output #{k} (shape {y.shape}): max abs error '
             f'{abs_err.max():.3e}, max rel error {rel_err.max():.3e}, {len(bad)} of '
             f'{abs_err.size} entries fail']
    for r, c in bad[:shown]:
        out_idx = [int(i) for i in np.unravel_index(r, y.shape)]
        in_idx = [int(i) for i in np.unravel_index(c, x.shape)]
        lines.append(f'    d out{out_idx} / d in{in_idx}: analytic={a[r, c]:.6g} '
                     f'numeric={num[r, c]:.6g}')
    return lines
