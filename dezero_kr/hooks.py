"""Two ways to watch the engine: gradient hooks and observers.

Gradient hooks (``Variable.register_hook``, ``retain_grad``) act on one
Variable's gradient in a backward pass.  They are rare, so they live in a
side table, ``_variable_hooks`` (Variable -> ``VariableHooks``, weak keys),
not in a slot on every Variable: a slot costs 8 bytes on each of millions of
nodes.
Removing a Variable's last hook (with no retain flag) deletes its entry, so
the table is empty while nobody uses hooks, and ``backprop`` checks that once
per pass (``len(_variable_hooks) > 0``, a local of that pass, never a
process-wide flag: one thread adding or dropping a hook can never make another
thread's pass skip one) instead of looking up every node.
Threads: the table is changed only under ``_table_lock`` (``add_hook``,
``retain``, ``HookHandle.remove``), so a look-up and the change it decides
(enter a new entry, delete an emptied one) are one step; backprop only reads
it, one ``get`` per Variable.

Observers (``observing``) see every Function call and every backward step
of the current thread: forward-mode AD (``autograd.jvp``), ``detect_anomaly``
and the backprop viewer are built on them.

This module does not import ``dezero_kr.core`` (core imports it): the one
thing it needs from the engine, the check of a gradient a hook returns, is
passed in by the caller.
"""
import contextlib
import functools
import itertools
import threading
import weakref

from dezero_kr.errors import hook_name

_variable_hooks = weakref.WeakKeyDictionary()
_hook_keys = itertools.count()  # unique for the process: a stale handle never hits a new hook
# Held for each change of the table, as core.state_lock for a leaf's .grad: without it two
# threads adding the first hook of one Variable each entered a VariableHooks of their own, and
# a hook added while another thread removed the last one went into an entry being deleted
# (issue 34: 1-4 hooks lost in 2,000 rounds).  Registration is rare: its cost does not matter.
_table_lock = threading.Lock()


def _entry(var):
    """``var``'s ``VariableHooks``, entered in the table if new (call with ``_table_lock`` held)."""
    hooks = _variable_hooks.get(var)
    if hooks is None:
        hooks = _variable_hooks[var] = VariableHooks()
    return hooks


def add_hook(var, fn):
    """Register ``fn`` on ``var``; return its ``HookHandle``.  TypeError if not callable
    (then the table is left as it was)."""
    if not callable(fn):
        raise TypeError(f'register_hook: the hook must be callable (hook(grad) -> new grad '
                        f'or None), got {type(fn).__name__} {fn!r:.60}')
    with _table_lock:
        key = next(_hook_keys)
        _entry(var).fns[key] = fn
    return HookHandle(var, key)


def retain(var):
    """Set ``var``'s retain flag: backward keeps its gradient in ``.grad``."""
    with _table_lock:
        _entry(var).retain = True


class VariableHooks:
    """One Variable's hooks (``fns``: key -> callable, in order added) and its retain flag."""
    __slots__ = ('fns', 'retain')

    def __init__(self):
        self.fns = {}
        self.retain = False

    def apply(self, var, grad, check_grad, observers):
        """Run the hooks on ``var``'s complete gradient ``grad``; return the final gradient.

        A hook returning None keeps the gradient; anything else replaces it,
        after ``check_grad(new, var, what)`` (the core's check: a Variable of
        ``var``'s shape, or a clear error naming the hook).  Each observer
        with an ``on_hook(var, hook, grad)`` method (``detect_anomaly``) sees
        every replacement.
        """
        for fn in list(self.fns.values()):  # a hook may remove itself
            new = fn(grad)
            if new is None:
                continue
            grad = check_grad(new, var, f'a hook on {var.name or "a Variable"!r} '
                                        f'(the hook {hook_name(fn)})')
            for observer in list(observers):
                on_hook = getattr(observer, 'on_hook', None)  # optional for observers
                if on_hook is not None:
                    on_hook(var, fn, grad)
        return grad


class HookHandle:
    """What ``register_hook`` returns: ``handle.remove()`` unregisters the hook.

    It holds its Variable weakly (a handle never keeps a graph alive);
    removing twice, or after the Variable is gone, does nothing.
    """
    __slots__ = ('_var', '_key')

    def __init__(self, var, key):
        self._var, self._key = weakref.ref(var), key

    def remove(self):
        """Unregister the hook; the Variable's table entry goes when nothing is left in it."""
        var = self._var()
        if var is None:
            return
        with _table_lock:
            hooks = _variable_hooks.get(var)
            if hooks is not None:
                hooks.fns.pop(self._key, None)
                if not hooks.fns and not hooks.retain:  # nothing left: backprop may skip the table
                    del _variable_hooks[var]


# =============================================================================
# Observers
# =============================================================================
# One list per thread: jvp() in one thread never sees another thread's operations.
# Speed trick, as core._backprop_off: Function.__call__ tests ``_observed``, the count of
# observers in all threads, not the thread-local list (~50 ns per op less, as measured for
# _backprop_off).  A thread's own registrations are always counted, so a zero proves its list
# is empty.  Core reads it as ``hooks._observed``: a module attribute, as it changes at run
# time (~5 ns more than a global of core, measured: within the noise of core_ops).
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
    """Register ``observer`` in the current thread for the duration of the block.

    The engine calls ``observer.on_forward(f, inputs, outputs)`` after every
    Function call, ``observer.on_backward(f, gys, gxs)`` after every backward
    step and, if the observer has it, ``observer.on_hook(var, hook, grad)``
    for a gradient a hook returned.  Yields ``observer``.
    """
    observers = _observers.list
    _count_observer(1)
    observers.append(observer)
    try:
        yield observer
    finally:
        observers.remove(observer)
        _count_observer(-1)


def notify(observers, name, *args):
    """Call ``observer.<name>(*args)`` on each observer that has that method (all are optional)."""
    for observer in list(observers):
        method = getattr(observer, name, None)
        if method is not None:
            method(*args)


def host_operation(fn):
    """Decorator for an operation on raw arrays outside the graph (``Optimizer.update``, gradient
    clipping): an observer with ``on_host_call(wrapper, args, kwargs)`` and
    ``on_host_return(result)`` sees the call as one unit (``static_graph`` records
    it to run it again, instead of recording what happens inside it).

    ``on_host_call`` may return a replacement ``(args, kwargs)`` (a generator
    argument made a list, so the call can be repeated); ``on_host_return`` gets
    the call's result (None if it raised) and returns what the caller gets
    (``static_graph`` marks a returned norm as a value of the step).  Without
    observers the wrapper costs one test of a module global.
    """
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if not _observed:
            return fn(*args, **kwargs)
        observers = [o for o in _observers.list if hasattr(o, 'on_host_call')]
        for observer in observers:
            replaced = observer.on_host_call(wrapper, args, kwargs)
            if replaced is not None:
                args, kwargs = replaced
        try:
            result = fn(*args, **kwargs)
        except BaseException:
            for observer in reversed(observers):
                observer.on_host_return(None)
            raise
        for observer in reversed(observers):
            result = observer.on_host_return(result)
        return result
    return wrapper
