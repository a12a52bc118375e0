"""제3고지(25~36단계) 연습 문제의 정답. docs/tutorial/stage3.md에 접혀서 보인다.

문제마다 스텁(``python steps/check.py stage3.N --stub``)이 요구하는 이름을 정의한다.
확인 코드는 steps/exercises/stage3.py 한 곳에 있고, 학습자의 답과 이 파일이 같은
확인을 지난다. 23단계부터처럼 직접 만든 패키지 mydezero(steps/mydezero/)를 쓴다.
"""
import numpy as np

import mydezero.functions as F
from mydezero import Function, Variable


# --- 문제 1 -------------------------------------------------------------------
class Cos(Function):
    """y = cos(x). dy/dx = -sin(x).

    backward를 Variable 연산(F.sin과 곱셈)으로 적어 다시 미분할 수 있게 한다.
    np.sin으로 적으면 1차 미분은 맞지만 2차 미분의 그래프가 끊긴다.
    """

    def forward(self, x):
        return np.cos(x)

    def backward(self, gy):
        x, = self.inputs
        return gy * -F.sin(x)


def cos(x):
    return Cos()(x)


# --- 문제 2 -------------------------------------------------------------------
def nth_derivative(f, x, n):
    """매번 기울기의 계산도 그래프로 남기고(create_graph=True), 그 기울기를 다시
    역전파한다. x.cleargrad()를 빼면 새 미분이 이전 미분에 더해진다."""
    y = f(x)
    for _ in range(n):
        x.cleargrad()
        y.backward(create_graph=True)
        y = x.grad
    return y


def tanh_third(x):
    """t''' = d/dx[-2t(1 - t^2)] = -2t'(1 - t^2) - 2t(-2t t') = (1 - t^2)(6t^2 -
    2)."""
    th = np.tanh(x)
    return (1 - th ** 2) * (6 * th ** 2 - 2)


# --- 문제 3 -------------------------------------------------------------------
def newton(f, x0, steps):
    """f'과 f''을 double backprop으로 구해 x <- x - f'/f''."""
    x, found = Variable(np.array(x0)), []
    for _ in range(steps):
        x.cleargrad()
        f(x).backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        x.data = x.data - gx.data / x.grad.data
        found.append(float(x.data))
    return found


# f'(x) = x^2 - 2, f''(x) = 2x이므로 x <- x - (x^2 - 2) / (2x): sqrt(2)를 구하는
# 바빌로니아 법. 1 -> 3/2 -> 17/12 -> 577/408 = 1.41421568... (sqrt(2) =
# 1.41421356...)
by_hand = [3 / 2, 17 / 12, 577 / 408]


# --- 문제 4 -------------------------------------------------------------------
def hessian(f, x, y):
    """기울기 성분 하나(x.grad 또는 y.grad)를 역전파하면 헤세 행렬의 한 행."""
    z = f(x, y)
    z.backward(create_graph=True)
    H = []
    for g in (x.grad, y.grad):
        x.cleargrad()
        y.cleargrad()
        g.backward()
        H.append([float(x.grad.data), float(y.grad.data)])
    return H


# 2차식이라 2차 미분이 상수다: 어느 점에서 구해도 같다.
matyas_hessian = [[0.52, -0.48], [-0.48, 0.52]]
