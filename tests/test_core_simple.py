"""core_simple: DeZero's steps 28/29 API, with ndarray gradients, over the one core."""
import math

import numpy as np

import dezero_kr
from dezero_kr import core, core_simple
from dezero_kr.core_simple import Variable, setup_variable


def test_is_a_thin_layer_over_the_core():
    assert issubclass(core_simple.Variable, core.Variable)
    assert core_simple.Function is core.Function
    assert dezero_kr.is_simple_core is False


def test_grads_are_ndarrays_rosenbrock_descent_like_step_28():
    setup_variable()
    x0, x1 = Variable(np.array(0.0)), Variable(np.array(2.0))
    for _ in range(1000):
        y = 100 * (x1 - x0 ** 2) ** 2 + (1 - x0) ** 2
        x0.cleargrad()
        x1.cleargrad()
        y.backward()
        assert isinstance(x0.grad, np.ndarray) and isinstance(x1.grad, np.ndarray)
        x0.data -= 0.001 * x0.grad
        x1.data -= 0.001 * x1.grad
    # After 1000 steps from (0, 2), plain gradient descent is still on its way to (1, 1).
    assert 0.6 < x0.data < 0.7 and 0.4 < x1.data < 0.5


def test_newton_like_step_29():
    x = Variable(np.array(2.0))
    for _ in range(10):
        y = x ** 4 - 2 * x ** 2
        x.cleargrad()
        y.backward()
        x.data -= x.grad / (12 * x.data ** 2 - 4)
    assert math.isclose(x.data, 1.0, rel_tol=1e-12)


def test_grads_accumulate_and_print_as_arrays():
    x = Variable(np.array(3.0))
    y = x * x
    y.backward()
    y.backward()
    assert x.grad == 12.0 and repr(x.grad) == 'array(12.)'
    x.grad = None
    assert x.grad is None
    x.grad = np.array(1.0)
    assert isinstance(x.grad, np.ndarray)
