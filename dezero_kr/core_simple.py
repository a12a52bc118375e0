"""DeZero's ``core_simple`` (steps 23-32 of the book) as a thin layer over the one core.

Code written for it expects gradients to be plain ndarrays
(``x.data -= lr * x.grad``).  This module's ``Variable`` is the core Variable
with one difference: its ``grad`` reads and writes as an ``ndarray``.  The
engine, the operators and the functions are the core's; nothing is copied.
"""
import numpy as np

from dezero_kr import core
from dezero_kr.core import (Config, Function, as_array, no_grad, setup_variable,  # noqa: F401
                            using_config)
# DeZero's core_simple defines its own arithmetic; here they are the core's (same math, and
# they accept this module's Variables because it subclasses the core one).
from dezero_kr.core import (Add, Div, Mul, Neg, Pow, Sub, add, div, mul, neg, pow, rdiv,  # noqa: F401
                            rsub, sub)

_grad_slot = core.Variable.grad  # the slot that stores the gradient Variable


class Variable(core.Variable):
    """A core Variable whose ``grad`` is an ``ndarray`` (or None), as in DeZero's core_simple."""
    __slots__ = ()

    @property
    def grad(self):
        """The gradient as an ``ndarray`` (None before backward).

        Setting it accepts an ndarray, a number or a core Variable; the engine
        stores a Variable underneath, so backprop is the core's.
        """
        g = _grad_slot.__get__(self)
        return None if g is None else g.data

    @grad.setter
    def grad(self, value):
        if value is not None and not isinstance(value, core.Variable):
            value = core.Variable(as_array(np.asarray(value) if np.isscalar(value) else value))
        _grad_slot.__set__(self, value)


def as_variable(obj):
    """Return ``obj`` if it is a (core) Variable, else this module's ``Variable(obj)``."""
    if isinstance(obj, core.Variable):
        return obj
    return Variable(obj)
