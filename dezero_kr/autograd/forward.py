"""Forward mode: ``jvp`` pushes tangents forward through the ops as they run.

Forward mode needs nothing from the Functions but their ``jvp`` rule: while a
``jvp`` call runs, a ``_ForwardLevel`` observes every Function call
(``core.observing``) and, when an input has a tangent, pushes the tangents of
the inputs through the op's rule to get the tangents of its outputs.  Tangents
live in a weak-key dict of the level, so the Variables stay as they are.
Nested ``jvp`` calls are levels, one per call, outermost first.
"""
import threading
import weakref

from dezero_kr import cuda
from dezero_kr.core import Config, Constant, Variable, observing, using_config
from dezero_kr.hooks import Observer
from dezero_kr.autograd.reverse import as_primal, as_tuple, constant_like, outputs_of


# The active forward-mode levels of each thread, outermost first (``jvp`` inside
# ``jvp``).  Per thread, like the observers they are registered as: a jvp in
# one thread never sees another thread's operations.
class _ThreadLevels(threading.local):
    def __init__(self):
        self.list = []


_thread_levels = _ThreadLevels()


class _ForwardLevel(Observer):
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

    For ``y = f(x_1, ..., x_n)`` the tangent of output ``y_k`` is
    ``sum_i dy_k/dx_i @ t_i``.  ``primals`` and ``tangents`` are sequences of
    the same length (a single array/Variable is accepted for each); each tangent
    has its primal's shape (an array is converted to its primal's dtype).  The second
    item is one tangent Variable per output of ``f``, of that output's shape (a
    tuple when ``f`` returns a tuple); an output that does not depend on the
    primals gets zeros.  Works inside ``no_grad()`` (no graph is needed).
    Nested calls are exact: an inner ``jvp`` is differentiated by an outer one,
    each level with its own tangents.

    Raises ValueError when the counts differ, a tangent's shape differs from
    its primal's, or one Variable is passed twice; TypeError for a primal that
    is not a Variable/ndarray or an ``f`` that does not return Variables;
    RuntimeError when a backward without ``create_graph=True`` runs on
    tangent-carrying Variables inside ``f``.
    """
    primals, tangents = as_tuple(primals), as_tuple(tangents)
    if len(primals) != len(tangents):
        raise ValueError(f'jvp: got {len(primals)} primals but {len(tangents)} tangents')
    xs = tuple(as_primal(p, 'jvp', i, differentiable=False) for i, p in enumerate(primals))
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
    outs = outputs_of(ys, 'jvp')
    out_tangents = tuple(_tangent_or_zeros(level, y) for y in outs)
    return ys, out_tangents if isinstance(ys, (tuple, list)) else out_tangents[0]


def _tangent_or_zeros(level, y):
    t = level.tangents.get(y)
    return constant_like(y) if t is None else t


def _as_tangent(t, x, index):
    if not isinstance(t, Variable):
        t = constant_like(x, t)
    if t.data.shape != x.data.shape:
        raise ValueError(f'jvp: tangent #{index} has shape {t.data.shape}, but its primal has '
                         f'shape {x.data.shape}')
    return t
