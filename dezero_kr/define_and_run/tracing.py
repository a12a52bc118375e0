"""Tracing: run one call eagerly with a recorder, the step's arrays ``Traced``, and build its plan.

``Tracer.run`` makes the arguments, parameters and layer state ``Traced``
for the call, checks that the step's own code changes no parameter or
argument (copies before and after each host operation), and returns the
call's result and a ``Plan`` (or an ``Eager`` saying why not).  ``Undo``
saves what a trace can change, for ``strict=True``.
"""
import random

import numpy as np

from dezero_kr import cuda
from dezero_kr import hooks as _hooks
from dezero_kr.core import Parameter, Variable
from dezero_kr.define_and_run.shared import Unreplayable
from dezero_kr.define_and_run.traced_arrays import Traced, current_trace, untraced, untraced_result
from dezero_kr.define_and_run.random_state import rng_fingerprint
from dezero_kr.define_and_run.recording import Recorder, arrays_in, slot_names
from dezero_kr.define_and_run.guards import (
    arg_names, layers_of, optimizers_of, param_paths, read_value, state_slots, value_sources)
from dezero_kr.define_and_run.plan import Eager, Plan


class Undo:
    """What a trace can change, saved before it (``strict=True``): the parameters (arrays,
    gradients), the layers' and optimizers' attributes and the arrays in them (optimizer
    state, running statistics), the optimizers' hooks, NumPy's and Python's random state.
    ``restore`` puts it back when the step cannot be replayed.  (What the step does to other
    objects, a print or a file it writes, is not undone.)"""

    def __init__(self, tracer):
        self.rng, self.py_random = np.random.get_state(), random.getstate()
        self.params = [(p, p.data, p.grad, _copy_array(p.data)) for p in tracer.params.values()]
        objects = list(tracer.layers)
        for opt in optimizers_of(tracer.fn, tracer.args, tracer.kwargs):
            objects += [opt] + [h for h in getattr(opt, 'hooks', ()) if hasattr(h, '__dict__')]
        arrays, containers = _nested([vars(obj) for obj in objects])
        self.arrays = [(a, a.copy()) for a in arrays]
        self.containers = [(c, c.copy()) for c in containers]  # the objects' dicts among them

    def restore(self):
        """Put back what was saved: containers, arrays, parameters, both random states."""
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


# =============================================================================
# Tracing
# =============================================================================
class Tracer:
    """One traced call: ``run()`` runs ``fn`` eagerly with a recorder, the step's arrays
    ``Traced`` for its duration (plain again after), and returns (its result, a Plan or an
    Eager)."""

    def __init__(self, fn, args, kwargs, keep_buffers=False):
        self.fn, self.args, self.kwargs, self.keep_buffers = fn, args, kwargs, keep_buffers
        self.layers = layers_of(fn, args, kwargs)
        self.state_before = state_slots(self.layers)
        self.value_sources = value_sources(fn, self.layers, args, kwargs)
        self.values_before = [read_value(*src[:3]) for src in self.value_sources]
        self.params = {id(p): p for layer in self.layers for p in layer.params()}
        self.originals = {}  # id(Variable) -> (Variable, its plain array): restored after the trace
        self.traced = {}     # id(an array that was a parameter's .data during the trace) -> it
        self.arg_arrays = []  # (path, traced view or None for a Variable, the user's value)
        self.rec = Recorder()
        self.rec.lazy = {id(p) for p in self.params.values() if p.data is None}
        self.rec.params = self.params
        self.rec.before_host, self.rec.after_host = self.before_host, self.after_host
        self.rec.after_pass, self.rec.cleared = self.snapshot_grads, self.grad_cleared

    def device_array(self):
        """The first argument or parameter of the step on a GPU (described), or None."""
        names = arg_names(self.fn, self.args, self.kwargs)
        for path, value in [(('args', i), a) for i, a in enumerate(self.args)] + [
                (('kwargs', k), v) for k, v in self.kwargs.items()]:
            if _on_device(value):
                return f'the argument {names.get(path, path[1])!r}'
        paths = None
        for p in self.params.values():
            if _on_device(p.data):
                paths = paths or param_paths(self.layers)
                return f'the parameter {paths.get(id(p), p.name or "")!r}'
        return None

    def taint_var(self, v):
        """Make ``v.data`` a ``Traced`` view for the trace (its plain array kept to restore)."""
        if isinstance(v.data, np.ndarray) and not isinstance(v.data, Traced):
            self.originals.setdefault(id(v), (v, v.data))
            if isinstance(v, Parameter):
                self.traced[id(v.data)] = v  # the plain array: operations may keep it (batch norm)
            v.data = v.data.view(Traced)
            if isinstance(v, Parameter):
                self.traced[id(v.data)] = v

    def taint_arg(self, value, path):
        """An argument as the traced call gets it: arrays as ``Traced`` views (remembered with
        their ``path``), Variables traced in place, tuples and lists item by item."""
        if isinstance(value, np.ndarray) and not isinstance(value, Traced):
            t = value.view(Traced)
            self.arg_arrays.append((path, t, value))
            return t
        if isinstance(value, Variable) and isinstance(value.data, np.ndarray):
            self.arg_arrays.append((path, None, value))
            self.taint_var(value)
        elif isinstance(value, (tuple, list)):
            return type(value)(self.taint_arg(v, path + (i,)) for i, v in enumerate(value))
        return value

    def untaint_grads(self):
        """Make the gradients of the recorded inputs and of the parameters plain arrays."""
        leaves = [x for node in self.rec.nodes.values() for x in node.inputs]
        for x in leaves + list(self.params.values()):
            if x.grad is not None and isinstance(x.grad.data, Traced):
                x.grad.data = untraced(x.grad.data)

    @staticmethod
    def restore(v, data):
        """``v.data`` plain again: its original array if it is still our view, else a plain view."""
        d = v.data
        if isinstance(d, Traced):
            ours = d.base is (data if data.base is None else data.base) and d.shape == data.shape \
                and d.strides == data.strides
            v.data = data if ours else untraced(d)

    def before_host(self):
        """Host operations (the optimizer) see plain arrays: their state never keeps a Traced."""
        self.check_unchanged('before a host operation (the optimizer update)')
        self.untaint_grads()
        for v, data in self.originals.values():
            if isinstance(v, Parameter):
                self.restore(v, data)

    def after_host(self):
        """After a host operation: the parameters traced again, and copied afresh."""
        for p in self.params.values():
            self.originals.pop(id(p), None)
            self.taint_var(p)
        self.snapshot()
        self.snapshot_grads()

    # The gradients a host operation (the optimizer) reads are those the replay makes: the
    # backward passes', cleargrad()'s and the host operations' own.  The step's code changing
    # one (p.grad.data *= 0.5, p.grad = None) makes other ones, which a replay would not.
    def snapshot_grads(self):
        """Note each parameter's gradient (its Variable, its array and a copy) as it is now."""
        self.grad_copies = {}
        for p in self.params.values():
            g = p.grad
            data = None if g is None else g.data
            self.grad_copies[id(p)] = (g, data, untraced(data).copy() if isinstance(data, np.ndarray) else None)

    def grad_cleared(self, var):
        if id(var) in self.params:
            self.grad_copies[id(var)] = (None, None, None)

    def changed_grad(self, p):
        """Whether ``p``'s gradient is no longer the one noted (another Variable, another array
        in it, other numbers)."""
        var, data, copy_ = self.grad_copies.get(id(p), (None, None, None))
        g = p.grad
        if g is not var:
            return True
        if g is None or g.data is not data:
            return g is not None
        return copy_ is not None and not _same_array(untraced(g.data), copy_)

    # Parameters change only inside host operations (the optimizer), and the arguments never:
    # a change by the step's own code between them is one a replay would not make.
    def snapshot(self):
        """Copy the parameters' arrays, to see a change the step makes outside operations."""
        self.param_copies = [(p, p.data.copy()) for p in self.params.values()
                             if isinstance(p.data, np.ndarray)]

    def check_unchanged(self, when):
        """Fail the trace if a parameter (outside an operation) or an argument changed since
        the copies; ``when`` says where, in the reason."""
        paths = None
        for p, copy_ in self.param_copies:
            if not _same_array(p.data, copy_) and not self.changed_by_operation(p):
                paths = paths or param_paths(self.layers)
                self.rec.fail(f'the step changes the parameter {paths.get(id(p), p.name or "")!r} '
                              f'outside an operation {when} (p.data *= ..., p.data = ...): a replay '
                              f'would not')
        for p in self.params.values():
            if self.changed_grad(p):
                paths = paths or param_paths(self.layers)
                self.rec.fail(f'the step changes the gradient of the parameter '
                              f'{paths.get(id(p), p.name or "")!r} outside an operation {when} '
                              f'(p.grad.data *= ..., p.grad = ...): a replay would not; do it in '
                              f'an optimizer hook or a function of dezero_kr.grad_clip (replayed)')
        for path, t, value, copy_ in self.arg_copies:
            if not _same_array(value.data if t is None else value, copy_):
                name = arg_names(self.fn, self.args, self.kwargs).get(path[:2], path[1])
                self.rec.fail(f'the step writes into its argument {name!r} (x *= ..., x[...] = ...): '
                              f'a replay would not')

    def changed_by_operation(self, p):
        """``p``'s array is held by a recorded operation (batch norm's running statistics,
        updated in place by its forward): replayed with it."""
        data = untraced(p.data)
        return any(isinstance(a, np.ndarray) and np.shares_memory(a, data)
                   for node in self.rec.nodes.values() for name in slot_names(type(node.f))
                   for a in arrays_in(getattr(node.f, name, None)))

    def run(self):
        """Run the call traced: (its result, a ``Plan`` or an ``Eager``), the step's arrays
        plain again afterwards."""
        targs = tuple(self.taint_arg(a, ('args', i)) for i, a in enumerate(self.args))
        tkwargs = {k: self.taint_arg(v, ('kwargs', k)) for k, v in self.kwargs.items()}
        for p in self.params.values():
            self.taint_var(p)
        for v in self.state_before.values():
            if v is not None:
                self.taint_var(v)
        self.snapshot()
        self.snapshot_grads()
        self.arg_copies = [(path, t, v, (v.data if t is None else v).copy())
                           for path, t, v in self.arg_arrays
                           if isinstance(v.data if t is None else v, np.ndarray)]
        current_trace.recorder = self.rec
        try:
            with _hooks.observing(self.rec):
                result = self.fn(*targs, **tkwargs)
            self.check_unchanged('after the last host operation')
            plan = self.plan(result)
        finally:
            current_trace.recorder = None
            self.untaint_grads()
            for v, data in self.originals.values():
                self.restore(v, data)
        for v in state_slots(self.layers).values():
            if isinstance(v, Variable) and isinstance(v.data, Traced):
                v.data = untraced(v.data)
        return untraced_result(result), plan

    def plan(self, result):
        """The plan of the recorded call returning ``result``, or an ``Eager`` saying why not
        (random numbers drawn outside operations are checked here, last)."""
        rec = self.rec
        if rng_fingerprint() != rec.rng_fingerprint and not rec.lazy_init():
            rec.fail('random numbers were drawn outside an operation after the last one '
                     '(a replay would not draw them)')
        if random.getstate() != rec.py_random:
            rec.fail("random numbers were drawn from Python's random module inside the step "
                     "(a replay would not draw them)")
        try:
            return Plan(self, result, self.keep_buffers)
        except Unreplayable as e:
            return Eager(str(e))


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
