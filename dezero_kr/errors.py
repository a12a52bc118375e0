"""The core's error messages and its one warning, written in one place.

Each builder returns the exception and the caller raises it, so a traceback
ends in the engine code that found the problem.  A message names the function
and the value or shape involved: a learner should be able to fix the call from
the message alone, without opening the engine.

This module imports nothing from the package: ``dezero_kr.core`` imports it.
"""
import numpy as np


class ConfigError(AttributeError, ValueError):
    """An unknown ``Config`` switch: an AttributeError (what DeZero raised) and a ValueError."""


def unknown_switch(where, name, switches):
    """``ConfigError`` for a switch name that is not one of ``switches``."""
    return ConfigError(f'{where}: unknown switch {name!r}; the switches are '
                       f'{", ".join(repr(s) for s in switches)}')


def not_an_array(data):
    """``TypeError`` for ``Variable(data)`` when ``data`` is not an array or None."""
    kind = type(data)
    hint = ''
    if isinstance(data, (bool, int, float, complex, np.generic)):
        hint = f'; wrap it first: Variable(np.array({data!r}))'
    elif isinstance(data, (list, tuple)):
        hint = '; convert it first: Variable(np.array(...))'
    return TypeError(f'Variable data must be a numpy.ndarray (or cupy.ndarray) or None, '
                     f'got {kind.__module__}.{kind.__qualname__}{hint}')


def describe(var):
    """A Variable in a few words: ``Parameter 'W' (shape (2, 3))``, ``a Variable of shape (2,)``."""
    name = var.name
    kind = type(var).__name__
    if var.data is None:
        return f'{kind} {name!r}' if name is not None else f'a {kind}'
    shape = var.data.shape
    return f'{kind} {name!r} (shape {shape})' if name is not None else f'a {kind} of shape {shape}'


def hook_name(fn):
    """A gradient hook in a few words: its qualified name, or the start of its repr."""
    name = getattr(fn, '__qualname__', None)
    return repr(name) if isinstance(name, str) else repr(fn)[:60]


def cannot_copy(var):
    """``TypeError`` for deepcopy or pickle of a Variable that has a creator."""
    shape = None if var.data is None else var.data.shape
    return TypeError(f'cannot deepcopy or pickle a Variable computed by '
                     f'{type(var.creator).__name__} (name {var.name!r}, shape {shape}): only '
                     f'leaves can be copied; use .detach() or .unchain() first')


def forward_error(f, inputs, e):
    """The error to raise when ``f.forward`` raised ``e``: the same type, with the input shapes.

    An input without data (a Parameter its layer has not initialised yet) is
    named instead, as a ValueError: that is the usual cause.
    """
    name = type(f).__name__
    for i, x in enumerate(inputs):
        if x.data is None:
            return ValueError(f'{name}: input #{i} is {describe(x)} with no data (None); give it '
                              f'an array first (a layer sets its parameters at its first call)')
    shapes = ', '.join(str(x.data.shape) for x in inputs)
    msg = f'{name}.forward failed for input shapes [{shapes}]: {e}'
    try:
        return type(e)(msg)
    except Exception:  # an exception type whose constructor wants other arguments
        return ValueError(msg)


def wrong_gradient_count(f, n_grads):
    """``ValueError`` for a ``backward`` that returned ``n_grads`` gradients, not one per input."""
    return ValueError(f'{type(f).__name__}.backward returned {n_grads} gradients '
                      f'for {len(f.inputs)} inputs')


def reused_function(f):
    """``RuntimeError`` for a Function instance recorded twice (its first output lost its grad)."""
    name = type(f).__name__
    return RuntimeError(f'{name}: this Function instance was called more than once while the '
                        f'graph was recorded, so its inputs and outputs were overwritten by the '
                        f'later call and the earlier output\'s gradient cannot be computed. '
                        f'Create a new instance for every call ({name}()(x), not f = {name}(); '
                        f'f(a); f(b)).')


# What backprop warns, once per process, when create_graph leaves a graph in a leaf's .grad
# while the cycle collector is off (the cycle is then never freed) or inside detect_anomaly().
GRAD_CYCLE = ('backward(create_graph=True) stored a gradient that has a graph in a leaf\'s '
              '.grad: leaf -> .grad -> graph -> leaf is a reference cycle, which only '
              'Python\'s garbage collector frees (shown because gc is disabled, so it is '
              'never freed, or because detect_anomaly() is on). '
              'Call x.cleargrad() on each leaf when you are done with its gradient, or use '
              'dezero_kr.autograd.grad(y, x, create_graph=True), which returns the '
              'gradients and stores none.  (Shown once.)')
