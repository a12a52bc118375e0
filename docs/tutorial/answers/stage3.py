"""제3고지(25~36단계) 연습 문제의 정답.

각 함수는 인수 없이 불리고, 문제가 요구한 것을 스스로 assert로 확인한다
(tests/test_exercises.py가 모두 실행한다).
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Function, Variable
from dezero_kr.utils import gradient_check


class Cos(Function):
    """y = cos(x).  dy/dx = -sin(x).

    backward를 Variable 연산으로 적어 다시 미분할 수 있게 한다.
    """

    def forward(self, x):
        return np.cos(x)

    def backward(self, gy):
        x, = self.inputs
        return gy * -F.sin(x)


def cos(x):
    return Cos()(x)


def exercise_1():
    """Cos를 만들어 gradient_check를 통과시키고, 2차 미분이 -cos(x)인지 본다."""
    xs = np.linspace(-3.0, 3.0, 13)
    assert gradient_check(cos, xs)

    x = Variable(np.array(0.7))
    y = cos(x)
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    np.testing.assert_allclose(gx.data, -np.sin(0.7), rtol=1e-15)
    np.testing.assert_allclose(x.grad.data, -np.cos(0.7), rtol=1e-15)


def exercise_2():
    """x = 0.5에서 tanh의 3차 미분을 자동 미분으로 구하고 닫힌 식과 비교한다.

    t = tanh(x)이면 t' = 1 - t^2,  t'' = -2t(1 - t^2),
    t''' = (1 - t^2)(6t^2 - 2).
    """
    x = Variable(np.array(0.5))
    y = F.tanh(x)
    for _ in range(3):
        x.cleargrad()
        y.backward(create_graph=True)
        y = x.grad
    t = np.tanh(0.5)
    exact = (1 - t ** 2) * (6 * t ** 2 - 2)
    np.testing.assert_allclose(y.data, exact, rtol=1e-14)


def exercise_3():
    """f(x) = x^3 / 3 - 2x 에 뉴턴 방법을 x = 1에서 세 번.

    f'(x) = x^2 - 2, f''(x) = 2x 이므로 x <- x - (x^2 - 2) / (2x):
    바빌로니아 제곱근 법이다. 손으로 풀면 1 -> 3/2 -> 17/12 -> 577/408
    = 1.41421568... (sqrt(2) = 1.41421356...).
    """
    x = Variable(np.array(1.0))
    found = []
    for _ in range(3):
        x.cleargrad()
        y = x ** 3 / 3 - 2 * x
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        x.data = x.data - gx.data / x.grad.data
        found.append(float(x.data))
    np.testing.assert_allclose(found, [3 / 2, 17 / 12, 577 / 408], rtol=1e-15)


def exercise_4():
    """matyas(x, y) = 0.26 (x^2 + y^2) - 0.48 x y 의 헤세 행렬을
    double backprop으로 구한다.

    2차식이므로 어느 점에서나 H = [[0.52, -0.48], [-0.48, 0.52]].
    """
    x, y = Variable(np.array(1.0)), Variable(np.array(2.0))
    z = 0.26 * (x ** 2 + y ** 2) - 0.48 * x * y
    z.backward(create_graph=True)
    H = []
    for g in (x.grad, y.grad):  # 기울기 성분 하나를 역전파 = 헤세 행렬 한 행
        x.cleargrad()
        y.cleargrad()
        g.backward()
        H.append([float(x.grad.data), float(y.grad.data)])
    np.testing.assert_allclose(H, [[0.52, -0.48], [-0.48, 0.52]], rtol=1e-15)
