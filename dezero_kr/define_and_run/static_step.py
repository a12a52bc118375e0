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
the same NumPy calls in the same order as eager and the numbers are the same
bit for bit. The gradient accumulation of the engine's reverse pass is written
out (in the engine's order), the leaf gradients are stored by the engine's own
``reverse_pass.store_leaf_grads``, and the host calls are made again. Later
calls with the same signature run that code: no graph is built, no heap is
walked. A call frees its arrays when it returns, as an eager step
(``keep_buffers=True`` keeps them until the next call replaces each one: its
buffers).

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
three levels inside what is found there (the attributes and keys the code
names: of objects, classes, user modules, dict and object arguments, and of
what those hold: ``cfg.sched.beta``, ``hp['sched']['beta']``; ``__slots__``;
the class attributes an instance reads; the items of a list of up to 64; what
a property's getter or a ``__getattr__`` reads); the layers' attributes (and
inside the ones the code names: ``self.cfg.beta``), and the items of their
lists of sublayers (``model.layers``).  A
loss weight annealed between calls retraces; one that changes
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
raises ``StaticGraphError`` once the trace is undone: see ``Undo``):

* values used by Python: during the trace every array of the step (arguments,
  parameters, results) is a ``Traced`` ndarray; ``bool``, ``float``, ``int``,
  ``item()``, ``tolist()``, ``hash()`` on one from code outside ``dezero_kr`` is
  a branch or a number that a replay could not recompute.  What NumPy hands
  back to that code (an element ``t[0]``, ``argmax``, ``np.nonzero``,
  ``np.dot`` of vectors, iteration) is made ``Traced`` too, a Python result of
  a NumPy function (``np.array_equal``) is a value read, and a result whose
  shape depends on the values (``len(t[t > 0])``, ``np.unique``,
  ``np.bincount``) is reported where it is made;
* the step changing a plain Python value outside its arguments (a counter on
  a layer), a parameter outside operations and host operations (weight decay
  by hand after ``opt.update()``), a parameter's gradient (``p.grad.data *=
  0.5`` or ``p.grad = None`` between ``backward()`` and the update), or an
  argument (``x *= 2``): a replay would not.  Parameters and arguments are
  compared with copies taken at the start of the trace and after each host
  operation, gradients with copies taken after each backward pass too;
* an array computed from the step's values outside an operation (host NumPy
  code) that reaches an operation as a constant;
* an iterator or generator the step reads (``next(it)`` gives another value at
  each call; a replay would not call it);
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
import collections
import threading
import warnings

import numpy as np

from dezero_kr import hooks as _hooks
from dezero_kr.graph.dot import render_dot
from dezero_kr.define_and_run.shared import StaticGraphError, StaticGraphWarning, StepWrapper
from dezero_kr.define_and_run.traced_arrays import current_trace
from dezero_kr.define_and_run.guards import call_key, changed_value
from dezero_kr.define_and_run.plan import Eager
from dezero_kr.define_and_run.tracing import Tracer, Undo


# =============================================================================
# The static step
# =============================================================================
class StaticGraph(StepWrapper):
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
        self._cache = collections.OrderedDict()  # key -> [Plan or Eager]
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
        if getattr(current_trace, 'recorder', None) is not None or _hooks.observers():
            return self.fn(*args, **kwargs)  # inside another trace, or observed (detect_anomaly, jvp)
        keep = []
        key = call_key(args, kwargs, keep)
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
            return Eager(f'{changed} was built outside an operation from values that change '
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
                changed = changed_value(plans[0])
                plan = Eager(f'it was traced again {self._retraces[key]} times in a row for one '
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
        """Trace one call: (its result, a Plan or an Eager); ``check`` may turn a plan into
        an Eager.  With ``strict``, a step that cannot be replayed is undone (``Undo``).
        A step on GPU arrays is not traced: it runs eagerly (not at all with ``strict``)."""
        tracer = Tracer(self.fn, args, kwargs, self.keep_buffers)
        device = tracer.device_array()
        if device is not None:
            plan = Eager(f'{device} is a GPU array: static_graph replays NumPy arrays only')
            if self.strict:
                return None, plan
            self.stats['eager'] += 1
            return self.fn(*args, **kwargs), plan
        self.stats['traces'] += 1
        undo = Undo(tracer) if self.strict else None
        result, plan = tracer.run()
        plan.keep = keep
        if check is not None and not plan.eager:
            plan = check(plan)
        if undo is not None and plan.eager:
            undo.restore()
        return result, plan

    def _refuse(self, plan, stacklevel, warn=True):
        """A signature that cannot be replayed: with ``strict``, a StaticGraphError (nothing
        of the call is left changed: see ``Undo``); else a warning (once) and eager calls."""
        if self.strict:
            raise StaticGraphError(f'static_graph({self.__name__}): this step cannot be replayed '
                                   f'for this signature (strict=True: not run, the model and '
                                   f'optimizer are as before the call): {plan.reason}')
        if warn:
            warnings.warn(f'static_graph({self.__name__}): this step runs eagerly (Define-by-Run) '
                          f'for this signature: {plan.reason}', StaticGraphWarning,
                          stacklevel=stacklevel + 1)


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
