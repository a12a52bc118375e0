"""제1고지(01~10단계) 연습 문제의 정답.

각 함수는 인수 없이 불리고, 문제가 요구한 것을 스스로 assert로 확인한다
(tests/test_exercises.py가 모두 실행한다). 학습자가 만든 steps/의 코드를 그대로 가져다 쓴다.
"""
import pathlib
import sys

import numpy as np

# 정답은 steps/의 단계 파일을 `import step04`처럼 가져오므로 그 폴더를 경로에
# 넣는다.
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[3] / 'steps'))

import step04  # noqa: E402  (위의 경로가 있어야 가져올 수 있다)
import step08  # noqa: E402
import step09  # noqa: E402
import step10  # noqa: E402


def exercise_1():
    """f(x) = x^3, x = 1, h = 0.01에서 두 수치 미분의 오차를 예측하고 확인한다.

    테일러 전개로 전진 차분 = f' + f''h/2 + f'''h^2/6 = 3 + 3h + h^2 (오차
    0.0301), 중앙 차분 = f' + f'''h^2/6 = 3 + h^2 (오차 0.0001). 오차의 비는 h에
    비례/h^2에 비례.
    """
    def cube(v):
        return step04.Variable(v.data ** 3)

    x, h = step04.Variable(np.array(1.0)), 0.01
    forward = step04.forward_diff(cube, x, h)
    central = step04.numerical_diff(cube, x, eps=h)
    np.testing.assert_allclose(forward - 3, 3 * h + h ** 2, rtol=1e-9)
    np.testing.assert_allclose(central - 3, h ** 2, rtol=1e-9)


def exercise_2():
    """y = exp(square(exp(x)))의 미분을 09단계 함수로 구하고 닫힌 식과 비교한다.

    u = e^x, v = u^2 = e^{2x}, y = e^v 이면 dy/dx = e^v * 2u * u = 2 e^{2x}
    exp(e^{2x}).
    """
    x = step09.Variable(np.array(0.5))
    y = step09.exp(step09.square(step09.exp(x)))
    y.backward()
    exact = 2 * np.exp(1.0) * np.exp(np.exp(1.0))  # x = 0.5: e^{2x} = e
    np.testing.assert_allclose(x.grad, exact, rtol=1e-15)
    assert abs(x.grad - 82.387111349) < 1e-9


class Cube(step09.Function):
    """y = x^3.  dy/dx = 3x^2, 그래서 backward는 3 x^2 * gy."""

    def forward(self, x):
        return x ** 3

    def backward(self, gy):
        x = self.input.data
        return 3 * x ** 2 * gy


def cube(x):
    return Cube()(x)


def exercise_3():
    """Cube를 만들어 10단계의 기울기 확인을 통과시키고, exp와 이어도 맞는지
    본다."""
    for value in (-1.5, 0.3, 2.0):
        x = step09.Variable(np.array(value))
        ok, backprop, numeric = step10.gradient_check(cube, x)
        assert ok, (value, backprop, numeric)
        np.testing.assert_allclose(backprop, 3 * value ** 2, rtol=1e-15)
    # y = (e^x)^3 = e^{3x}: dy/dx = 3 e^{3x}
    x = step09.Variable(np.array(0.2))
    y = cube(step09.exp(x))
    y.backward()
    np.testing.assert_allclose(x.grad, 3 * np.exp(0.6), rtol=1e-14)


def exercise_4():
    """x = 1에 Square를 1020번 이은 그래프: 08단계(반복문)는 x.grad = 2^1020을
    낸다.

    y = x^(2^1020)이고 x = 1이면 y = 1, dy/dx = 2^1020 x^(2^1020 - 1) = 2^1020.
    연쇄 법칙으로는 매 층의 국소 미분 2a = 2 (a = 1)가 1020번 곱해진다.
    """
    assert step08.deep_backward(step08.Variable, 1020) == 2.0 ** 1020
