"""The reverse pass: ``backprop``, one iterative loop over a heap of Functions.

Functions are popped from a heap keyed by ``(-generation, insertion
counter)``: a Function runs only after every Function that consumes its
outputs has run, so each output's gradient is complete when it is read.  No
recursion: a million-node chain works.  The pass chooses its loop once:

* ``_plain_loop``: no hooks, nothing retained or captured, no observer: a
  single output's gradient is read inline (speed trick: ~220 ns per node, 7 %
  of core_ops backward, measured).
* ``_observed_loop``: everything else; each output's gradient "arrives"
  (``_arrived``: hooks, ``retain_grad``, ``capture``) and every observer sees
  each step.

Both add the input gradients the same way (``_add_input_grads``; the plain
loop writes it out, see its docstring).  What is left at the
end belongs to leaves (``store_leaf_grads``).  This module is imported by the
last lines of ``core`` (``Variable.backward`` calls ``backprop``), after the
classes it needs exist.
"""
import gc
import heapq
import itertools
import warnings

import numpy as np

from dezero_kr import cuda, hooks as _hooks
from dezero_kr.hooks import observers, variable_hooks
from dezero_kr.core import Function, OutputRef, Variable, as_array, check_grad, grad_slot
from dezero_kr.errors import GRAD_CYCLE, reused_function, wrong_gradient_count
from dezero_kr.modes import Config, set_enable_backprop, state_lock


class ReversePass:
    """The options of one backprop pass, and the ids of the arrays it must not hand out twice.

    ``plain``: nothing but ``.grad`` of leaves is asked for and nobody watches
    (no hook, retained or captured gradient, observer): the pass may take the
    fast loop.
    """
    __slots__ = ('retain_grad', 'capture', 'create_graph', 'hooks_on', 'observers', 'shared')

    def __init__(self, grads, retain_grad, capture, create_graph):
        self.retain_grad, self.capture, self.create_graph = retain_grad, capture, create_graph
        self.hooks_on = len(variable_hooks) > 0  # one look per pass (see dezero_kr.hooks)
        self.observers = list(observers()) if _hooks.observed else ()
        # Arrays the caller holds (seeds) or that stay reachable as a retained or hooked
        # gradient: a leaf that would get one of them gets a copy (see store_leaf_grads).
        self.shared = {id(getattr(g, 'data', g)) for g in grads.values()}

    @property
    def plain(self):
        """True when the pass may run ``_plain_loop`` (see the class docstring)."""
        return not (self.hooks_on or self.retain_grad or self.capture is not None or self.observers)


def backprop(grads, retain_grad=False, create_graph=False, capture=None):
    """Run reverse mode from the seeds in ``grads`` (dict Variable -> gradient Variable).

    Functions are popped from a heap keyed by ``(-generation, insertion
    counter)``: a function runs only after every function that consumes its
    outputs has run, so each output's gradient is complete when it is read.
    Gradients live in the ``grads`` dict while the pass runs; an entry is
    dropped when its creator runs (intermediate grads are not kept unless
    retained), and what is left at the end belongs to leaves.

    ``capture=None`` (``Variable.backward``): leaf gradients are accumulated
    into ``.grad`` (see ``store_leaf_grads``).  ``capture`` a dict:
    gradients of the Variables it names are stored in it, and no ``.grad``
    is touched (what a functional ``grad`` needs).  Runs with ``Config.enable_backprop =
    create_graph`` in this thread only.  A ``backward`` that returns the
    wrong number of gradients is a ValueError, one of the wrong shape or type
    a ValueError / TypeError naming the Function and the input; a Function
    instance recorded twice is a RuntimeError.
    """
    run = ReversePass(grads, retain_grad, capture, create_graph)
    for observer in run.observers:
        observer.on_pass_begin(grads, retain_grad, create_graph, capture)
    heap, seen, tie = [], {None}, itertools.count()  # None "seen": a leaf queues no creator
    for v in grads:
        f = v.creator
        if f not in seen:
            seen.add(f)
            heapq.heappush(heap, (-f.generation, next(tie), f))
    # Config is switched by hand rather than with using_config(): the context manager
    # costs more than the rest of a small model's pass.  The finally clause restores it.
    old_enable_backprop = Config.enable_backprop
    set_enable_backprop(Config, create_graph)
    try:
        if run.plain:
            _plain_loop(heap, seen, tie, grads, run)
        else:
            _observed_loop(heap, seen, tie, grads, run)
        cycle = store_leaf_grads(grads, seen, run)
    finally:
        set_enable_backprop(Config, old_enable_backprop)
        for observer in run.observers:
            observer.on_pass_end()
    if cycle and not _grad_cycle_warned:
        _warn_grad_cycle(run)


def _plain_loop(heap, seen, tie, grads, run):
    """The reverse pass that nobody watches: per Function, its outputs' gradients in, its
    inputs' gradients added.

    Speed trick: what ``_add_input_grads`` does is written out here, as one loop with no
    helper call on a single-output node: the call cost ~5 % of core_ops backward (2.75-2.79 ->
    2.89 us/op, two alternating rounds against the loop written out, which measured 2.73-2.77).
    """
    create_graph = run.create_graph
    while heap:
        f = heapq.heappop(heap)[2]
        outputs = f.outputs
        if outputs.__class__ is OutputRef:
            gy = grads.pop(outputs(), None)
            if gy is None:
                raise reused_function(f)
            gxs = f.backward(gy)
        else:
            gxs = f.backward(*_output_grads(f, grads, run))
        gxs = gxs if gxs.__class__ is tuple else (gxs,)
        inputs = f.inputs
        if len(gxs) != len(inputs):
            raise wrong_gradient_count(f, len(gxs))
        for x, gx in zip(inputs, gxs):
            if gx is None:
                continue
            if gx.__class__ is not Variable or gx.data.shape != x.data.shape:
                gx = _checked(f, gx, x)
            g = grads.get(x)
            grads[x] = gx if g is None else (g + gx if create_graph else Variable(as_array(g.data + gx.data)))
            c = x.creator
            if c not in seen:  # pushed once however many of its outputs are used
                seen.add(c)
                heapq.heappush(heap, (-c.generation, next(tie), c))


def _observed_loop(heap, seen, tie, grads, run):
    """The reverse pass with hooks, retained or captured gradients, or observers: every
    output's gradient arrives (``_arrived``) and every observer sees each step."""
    observers = run.observers
    while heap:
        f = heapq.heappop(heap)[2]
        gys = _output_grads(f, grads, run)
        gxs = _add_input_grads(f, f.backward(*gys), grads, heap, seen, tie, run.create_graph)
        for observer in observers:
            observer.on_backward(f, gys, gxs)


def _checked(f, gx, x):
    """``gx`` as the gradient Variable of ``f``'s input ``x``, or the error naming both."""
    return check_grad(gx, x, f'{type(f).__name__}.backward: the gradient for its '
                             f'input #{f.inputs.index(x)}')


def _add_input_grads(f, gxs, grads, heap, seen, tie, create_graph):
    """Check ``f``'s input gradients ``gxs`` (one per input), add each into its input's running
    total in ``grads`` and queue the input's creator once; return them as a tuple."""
    gxs = gxs if gxs.__class__ is tuple else (gxs,)
    inputs = f.inputs
    if len(gxs) != len(inputs):
        raise wrong_gradient_count(f, len(gxs))
    for x, gx in zip(inputs, gxs):
        if gx is None:
            continue
        if gx.__class__ is not Variable or gx.data.shape != x.data.shape:
            gx = _checked(f, gx, x)
        g = grads.get(x)
        grads[x] = gx if g is None else (g + gx if create_graph else Variable(as_array(g.data + gx.data)))
        # The seen set (hashed by identity) pushes each function once, however many of its
        # outputs are used: a diamond graph runs each node once.
        c = x.creator
        if c not in seen:
            seen.add(c)
            heapq.heappush(heap, (-c.generation, next(tie), c))
    return gxs


_grad_cycle_warned = False


def _warn_grad_cycle(run):
    """Warn once that a leaf's ``.grad`` holds a graph, where that cycle is never freed or when asked.

    Python's cycle collector frees ``leaf -> .grad -> graph -> leaf``: measured with
    ``tools/grad_cycle_memory.py``, a loop that leaves one such cycle per iteration
    peaks at about 0.5 MiB over 10,000 iterations with ``gc`` on (freed in bursts),
    and holds 63 MiB with ``gc`` off.  So the warning is shown only while ``gc`` is
    disabled, where each cycle stays until ``cleargrad()``, or inside
    an observer with ``reports_grad_cycles``.
    """
    global _grad_cycle_warned
    if gc.isenabled() and not any(o.reports_grad_cycles for o in run.observers):
        return
    _grad_cycle_warned = True
    warnings.warn(GRAD_CYCLE, UserWarning, stacklevel=4)  # points at the y.backward() line


def _output_grads(f, grads, run):
    """Pop the complete gradients of ``f``'s outputs from ``grads`` (the non-plain path)."""
    outputs = f.outputs
    if outputs.__class__ is OutputRef:
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
    while capturing: a capturing pass touches no ``.grad``), to ``capture`` if
    named.  An array kept or returned by a hook is added to ``run.shared``: a
    leaf it flows into unchanged gets a copy.
    """
    retain_grad, capture = run.retain_grad, run.capture
    hooks = variable_hooks.get(y) if run.hooks_on else None
    if hooks is not None:
        gy = hooks.apply(y, gy, check_grad, run.observers)
        retain_grad = retain_grad or (hooks.retain and capture is None)
        run.shared.add(id(gy.data))
    if retain_grad:
        with state_lock:
            y.grad = gy if y.grad is None else y.grad + gy
        run.shared.add(id(gy.data))
    if capture is not None and y in capture:
        capture[y] = gy
    return gy


def store_leaf_grads(grads, seen, run):
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
        hooks = variable_hooks.get(x) if run.hooks_on else None
        if hooks is not None:  # one look-up: another thread may remove the entry meanwhile
            g = hooks.apply(x, g, check_grad, run.observers)
        if capture is not None:
            capture[x] = g
            continue
        with state_lock:  # read, add and write back as one step: threads may share x
            old = grad_slot.__get__(x)
            if old is None:
                data = g.data
                if (data.base is not None or id(data) in stored or id(data) in run.shared
                        or not getattr(data.flags, 'writeable', True)):
                    g = _Copy()(g) if run.create_graph else Variable(data.copy())
                stored.add(id(g.data))
            else:
                g = old + g if run.create_graph else Variable(as_array(old.data + g.data))
            grad_slot.__set__(x, g)
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
