"""Answers to the stage 4 exercises (steps 42-51), shown hidden on docs/tutorial/stage4.md.

Each ``exercise_N()`` takes no argument and asserts its own result; tests/test_exercises.py
runs them all.
"""
import math

import numpy as np

import dezero_kr.functions as F
from dezero_kr import DataLoader, Function, Variable
from dezero_kr.models import MLP
from dezero_kr.utils import gradient_check


def exercise_1():
    """Tanh as a Function: y = tanh(x), dy/dx = 1 - y^2.

    y is the forward output, which backward reuses.
    """

    class Tanh(Function):
        def forward(self, x):
            return np.tanh(x)

        def backward(self, gy):
            y = self.outputs[0]()  # 순전파의 출력을 다시 쓴다
            return gy * (1 - y * y)

    def tanh(x):
        return Tanh()(x)

    x = np.linspace(-3, 3, 13)
    mine, package = Variable(x), Variable(x)
    y, y_pkg = tanh(mine), F.tanh(package)
    y.backward()
    y_pkg.backward()
    np.testing.assert_allclose(y.data, y_pkg.data, rtol=1e-15)
    np.testing.assert_allclose(mine.grad.data, package.grad.data, rtol=1e-12)
    assert mine.grad.data[6] == 1.0  # x = 0: tanh'(0) = 1
    x_check = np.random.default_rng(0).standard_normal((3, 4))
    assert gradient_check(tanh, x_check)


def exercise_2():
    """count_params of 2 -> 10 -> 20 -> 3:
    2*10+10 + 10*20+20 + 20*3+3 = 313 numbers after the first forward;
    before it only the biases exist (10 + 20 + 3 = 33): W is created lazily.
    """

    def count_params(layer):
        return sum(p.data.size for p in layer.params() if p.data is not None)

    np.random.seed(0)
    model = MLP((10, 20, 3))
    assert count_params(model) == 10 + 20 + 3 == 33
    model(np.zeros((1, 2)))
    assert count_params(model) == 2 * 10 + 10 + 10 * 20 + 20 + 20 * 3 + 3 == 313


def exercise_3():
    """1,000 samples in batches of 64: ceil(1000 / 64) = 16 batches.

    The last holds 1000 - 15 * 64 = 40 samples; every sample appears
    exactly once per epoch.
    """
    data = [(np.array([i], dtype=np.float32), i) for i in range(1000)]
    np.random.seed(0)
    loader = DataLoader(data, batch_size=64)
    sizes, seen = [], []
    for x, t in loader:
        sizes.append(len(t))
        seen.extend(t.tolist())
    assert len(sizes) == math.ceil(1000 / 64) == 16
    assert sizes[:-1] == [64] * 15 and sizes[-1] == 1000 - 15 * 64 == 40
    assert sorted(seen) == list(range(1000))


def exercise_4():
    """x = (ln 1, ln 2, ln 5), t = 2:  p = (1/8, 2/8, 5/8),
    L = -ln(5/8) = ln 1.6 = 0.470004,
    dL/dx = p - onehot(t) = (0.125, 0.25, -0.375).
    """
    x = Variable(np.log(np.array([[1.0, 2.0, 5.0]])))
    loss = F.softmax_cross_entropy(x, np.array([2]))
    loss.backward()
    np.testing.assert_allclose(float(loss.data), math.log(1.6), rtol=1e-14)
    assert round(float(loss.data), 6) == 0.470004
    np.testing.assert_allclose(x.grad.data, [[0.125, 0.25, -0.375]],
                               rtol=1e-14, atol=1e-16)
