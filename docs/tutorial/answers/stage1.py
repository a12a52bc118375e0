"""제1고지(01~10단계) 연습 문제의 정답. docs/tutorial/stage1.md에 접혀서 보인다.

문제마다 스텁(``python steps/check.py stage1.N --stub``)이 요구하는 이름을 정의한다.
확인 코드는 steps/exercises/stage1.py 한 곳에 있고, 학습자의 답과 이 파일이 같은
확인을 지난다(tests/test_exercises.py). 학습자가 만든 steps/의 코드를 그대로 쓴다.
"""
import numpy as np

from step09 import Function, exp, square

# --- 문제 1 -------------------------------------------------------------------
# 테일러 전개: 전진 차분 = f' + f''h/2 + f'''h^2/6 = 3 + 3h + h^2 (오차 0.0301),
# 중앙 차분 = f' + f'''h^2/6 = 3 + h^2 (오차 0.0001). h에 비례 / h^2에 비례.
h = 0.01
forward_error = 3 * h + h ** 2
central_error = h ** 2


# --- 문제 2 -------------------------------------------------------------------
def f(x):
    return exp(square(exp(x)))


def dydx(x):
    """u = e^x, v = u^2 = e^{2x}, y = e^v이면 dy/dx = e^v * 2u * u = 2 e^{2x}
    exp(e^{2x}). x = 0.5이면 2e * e^e = 82.387111349..."""
    return 2 * np.exp(2 * x) * np.exp(np.exp(2 * x))


# --- 문제 3 -------------------------------------------------------------------
class Cube(Function):
    """y = x^3. dy/dx = 3x^2이므로 backward는 3 x^2 * gy."""

    def forward(self, x):
        return x ** 3

    def backward(self, gy):
        x = self.input.data
        return 3 * x ** 2 * gy


def cube(x):
    return Cube()(x)


# --- 문제 4 -------------------------------------------------------------------
# y = x^(2^1020), x = 1이면 dy/dx = 2^1020. 연쇄 법칙으로는 층마다의 국소 미분
# 2a = 2 (a = 1)가 1020번 곱해진다. float64로 정확히 나타낼 수 있는 2의
# 거듭제곱이다.
x_grad = 2.0 ** 1020
