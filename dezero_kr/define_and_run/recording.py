"""Recording: the observer that writes down, in order, what one eager call of the step does.

``Recorder`` (a ``dezero_kr.hooks.Observer``) records each forward
operation (``_Node``), each backward pass and the order the engine ran its
nodes (``_Pass``), ``cleargrad()`` and each host operation, and checks that
random numbers are drawn only by operations.  ``slot_names``,
``copy_function``, ``init_names`` and ``arrays_in`` read a Function's slots.
"""
import copy
import inspect
import random

import numpy as np

from dezero_kr import hooks as _hooks
from dezero_kr.frames import user_line
from dezero_kr.define_and_run.shared import MISSING
from dezero_kr.define_and_run.traced_arrays import Traced, host_traced
from dezero_kr.define_and_run.random_state import rng_fingerprint, rng_state, same_rng


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


class Recorder(_hooks.Observer):
    """The observer that records a step (thread-local: other threads are not seen)."""

    def __init__(self):
        self.events = []          # ('node', _Node) | ('pass', _Pass) | ('clear', Variable) | ('host', ...)
        self.nodes = {}           # id(Function) -> _Node
        self.outputs = {}         # id(Variable) -> Variable made by a recorded node
        self.reason = None
        self.host_depth = 0
        self.pass_ = None
        self.rng = rng_state()
        self.rng_fingerprint = rng_fingerprint()
        self.py_random = random.getstate()  # Python's own generator: no operation draws from it
        self.lazy_seen = False  # a parameter initialised during the trace (its draws hide others')

    def fail(self, reason):
        """Note why the step cannot be replayed (the first reason found is the one reported)."""
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
                y.data = y.data.view(Traced)

    def sync_rng(self):
        """Draws inside a backward pass or a host call are replayed with it: start from here."""
        fingerprint = rng_fingerprint()
        if fingerprint != self.rng_fingerprint:
            self.rng, self.rng_fingerprint = rng_state(), fingerprint

    def lazy_init(self):
        """True if a parameter got its first array since the last look (a layer's lazy init draws)."""
        done = {i for i in self.lazy if self.params[i].data is not None}
        self.lazy -= done
        self.lazy_seen = self.lazy_seen or bool(done)
        return bool(done)

    def _check_rng(self, node):
        """The global RNG moved since the last operation: did this one draw, or host code?"""
        fingerprint = rng_fingerprint()
        if fingerprint == self.rng_fingerprint:
            return
        state = rng_state()  # self.rng is the full state of the last fingerprint: still valid
        self.rng_fingerprint = fingerprint
        if self.lazy_init():  # Linear's weights drawn on the first call: not replayed, as eager
            self.rng = state
            return
        # Run the operation again from the old RNG state on a copy: if it draws exactly the
        # numbers that moved the RNG, the draws are its own (replayed by calling forward).
        probe = copy.copy(node.f)
        for name in slot_names(type(probe)):
            value = getattr(probe, name, None)
            if isinstance(value, np.ndarray):
                setattr(probe, name, value.copy())  # batch norm's running stats change in place
        np.random.set_state(self.rng)
        try:
            probe.forward(*[x.data for x in node.inputs])
            own = same_rng(rng_state(), state)
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
            self.after_pass()

    def on_cleargrad(self, var):
        if not self.host_depth and self.pass_ is None:
            self.events.append(('clear', var))
            self.cleared(var)

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
        """The step gets a host operation's numbers (a gradient norm) as ``Traced`` values:
        a branch on one is a value read, and returning one makes it an output of the replay."""
        self.host_depth -= 1
        if self.host_depth:
            return result
        self.after_host()
        self.sync_rng()
        result = host_traced(result)
        self.host_result.append(result)
        return result

    # Set by the tracer: plain arrays for the host call, traced ones again after it; the
    # gradients as a replay leaves them after a backward pass and a cleargrad().
    def after_pass(self):
        """Called when a backward pass ended (the tracer copies the gradients)."""

    def cleared(self, var):
        """Called on a recorded ``var.cleargrad()``."""

    def before_host(self):
        """Called before a host operation runs (the tracer makes the parameters plain)."""

    def after_host(self):
        """Called after a host operation returned (the tracer makes them traced again)."""


def _is_iterator(a):
    return hasattr(a, '__next__') and hasattr(a, '__iter__')


_slot_cache = {}


def slot_names(cls):
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


def copy_function(f):
    """``copy.copy(f)``: a Function with slots only is copied slot by slot (``copy.copy``
    goes through ``__reduce_ex__``: about 4x slower, and a trace copies every operation)."""
    cls = type(f)
    if hasattr(f, '__dict__') or cls.__reduce_ex__ is not object.__reduce_ex__:
        return copy.copy(f)
    g = cls.__new__(cls)
    for name in slot_names(cls):
        value = getattr(f, name, MISSING)
        if value is not MISSING:
            setattr(g, name, value)
    return g


_init_cache = {}


def init_names(cls):
    """The parameter names of ``cls.__init__``: attributes set before ``forward`` runs."""
    names = _init_cache.get(cls)
    if names is None:
        try:
            names = frozenset(inspect.signature(cls.__init__).parameters) - {'self'}
        except (TypeError, ValueError):
            names = frozenset()
        _init_cache[cls] = names
    return names


def arrays_in(value):
    """The ndarrays in an attribute value (an array, or a tuple/list of indices)."""
    if isinstance(value, np.ndarray):
        return [value]
    if isinstance(value, (tuple, list)):
        return [v for v in value if isinstance(v, np.ndarray)]
    return []
