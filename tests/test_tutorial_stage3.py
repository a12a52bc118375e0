"""The learner's pieces of tutorial steps 30-41 and the check the steps rely on.

Steps 37-41 trust ``_common.check_against_package`` to say that a learner's
Function (in ``steps/mydezero``) matches dezero_kr and central differences; these
tests prove that the check fails on a wrong backward (a silent wrong gradient of
the right shape) and that the learner's engine (``mydezero``'s
``backward(create_graph=True)``) gives the right higher-order derivatives.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

import dezero_kr.functions as RF  # the reference

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / 'steps'))

import mydezero.functions as F  # noqa: E402  (the learner's)
from _common import check_against_package  # noqa: E402  (the check steps 37-41 use)
from mydezero import Function, Variable  # noqa: E402


class WrongSin(Function):
    """sin with the derivative's sign flipped: right shape, wrong values."""

    def forward(self, x):
        return np.sin(x)

    def backward(self, gy):
        x, = self.inputs
        return gy * -F.cos(x)


class SumWithoutReshape(F.Sum):
    """Sum whose backward broadcasts gy without re-inserting the summed axis."""

    def backward(self, gy):
        return F.broadcast_to(gy, self.x_shape)


def test_check_catches_wrong_derivative():
    x = np.linspace(-1.0, 1.0, 6).reshape(2, 3)
    with pytest.raises(AssertionError):
        check_against_package(lambda v: WrongSin()(v), RF.sin, x)


def test_check_catches_silent_wrong_broadcast():
    # (2, 2) summed over axis 1: gy (2,) broadcasts to (2, 2) along the wrong axis
    x = np.array([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(AssertionError):
        check_against_package(lambda v: SumWithoutReshape(axis=1, keepdims=False)(v),
                              lambda v: RF.sum(v, axis=1), x)


def test_check_accepts_learner_functions():
    x = np.arange(24.0).reshape(2, 3, 4) / 7
    assert check_against_package(lambda v: F.transpose(v, (2, 0, 1)),
                                 lambda v: RF.transpose(v, (2, 0, 1)), x) == (4, 2, 3)
    assert check_against_package(lambda v: F.sum(v, axis=(0, 2)),
                                 lambda v: RF.sum(v, axis=(0, 2)), x) == (3,)


def test_learner_engine_third_derivative_of_tanh():
    # d^3/dx^3 tanh = (1 - t^2)(6t^2 - 2), t = tanh(x)
    x = Variable(np.array(0.5))
    y = F.tanh(x)
    for _ in range(3):
        x.cleargrad()
        y.backward(create_graph=True)
        y = x.grad
    t = np.tanh(0.5)
    assert float(y.data) == pytest.approx((1 - t * t) * (6 * t * t - 2), rel=1e-14)
