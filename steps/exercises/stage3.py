"""제3고지(25~36단계) 연습 문제의 확인: docs/tutorial/stage3.md의 "연습 문제".

답은 학습자가 만드는 패키지 ``mydezero``(steps/mydezero/)로 쓴다. 그래서 답에 넘기는
Variable과 함수(F.tanh ...)도 mydezero의 것이고, 기대값은 닫힌 식과 중앙 차분이다.
"""
import numpy as np

import mydezero.functions as F
from mydezero import Variable

from . import central_diff, exercise

STUB_COS = '''
"""제3고지 문제 1: 30단계의 Sin처럼 backward를 Variable 연산으로 적은 Cos.

d/dx cos x = -sin x. backward를 Variable 연산(F.sin ...)으로 적어야 2차 미분이 된다.
"""
import numpy as np

import mydezero.functions as F
from mydezero import Function


class Cos(Function):
    def forward(self, x):
        raise NotImplementedError

    def backward(self, gy):
        """입력 Variable은 x, = self.inputs"""
        raise NotImplementedError


def cos(x):
    return Cos()(x)
'''


@exercise(1, 'Cos 함수와 2차 미분', STUB_COS)
def check_cos(t):
    cos = t.get('cos')
    xs = np.linspace(-3.0, 3.0, 13)
    x = Variable(xs.copy())
    with t.part('sum(cos(x))의 역전파'):
        y = cos(x)
        F.sum(y).backward()
    t.close('cos(x)의 값', y.data, np.cos(xs), rtol=1e-15)
    t.close('x.grad = -sin(x)', x.grad, -np.sin(xs), rtol=1e-14, atol=1e-16)
    num = central_diff(lambda a: F.sum(cos(Variable(a))).data, xs)
    t.close('x.grad (중앙 차분과 비교)', x.grad, num, rtol=1e-6, atol=1e-9)
    x = Variable(np.array(0.7))
    with t.part('cos의 2차 미분 (backward(create_graph=True) 뒤 gx.backward())'):
        cos(x).backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
    t.close('1차 미분 -sin(0.7)', gx.data, -np.sin(0.7), rtol=1e-15)
    t.close('2차 미분 -cos(0.7) (backward를 Variable 연산으로 적어야 나온다)', x.grad,
            -np.cos(0.7), rtol=1e-15)


STUB_NTH = '''
"""제3고지 문제 2: 자동 미분으로 n차 미분, 그리고 tanh의 3차 미분을 손으로."""
import numpy as np


def nth_derivative(f, x, n):
    """f(Variable) -> Variable의 n차 미분을 x(Variable)에서 구해 Variable로 돌려준다.
    backward(create_graph=True)를 n번 (사이에 x.cleargrad())."""
    raise NotImplementedError


def tanh_third(x):
    """손으로 구한 tanh의 3차 미분 (x는 float, NumPy로). t = tanh x이면 t' = 1 - t^2."""
    raise NotImplementedError
'''


@exercise(2, 'n차 미분과 tanh의 3차 미분', STUB_NTH)
def check_nth(t):
    nth, third = t.get('nth_derivative'), t.get('tanh_third')
    th = np.tanh(0.5)
    exact = {1: 1 - th ** 2, 2: -2 * th * (1 - th ** 2),
             3: (1 - th ** 2) * (6 * th ** 2 - 2)}
    for n, value in exact.items():
        with t.part(f'nth_derivative(F.tanh, x = 0.5, {n})'):
            got = nth(F.tanh, Variable(np.array(0.5)), n)
        t.close(f'nth_derivative(F.tanh, x = 0.5, {n}) (닫힌 식과 비교)', got, value,
                rtol=1e-13)
    with t.part('nth_derivative(F.sin, x = 1.2, 4)'):
        got = nth(F.sin, Variable(np.array(1.2)), 4)
    t.close('nth_derivative(F.sin, x = 1.2, 4) = sin(1.2)', got, np.sin(1.2),
            rtol=1e-14)
    for value in (0.5, -1.0, 2.0):
        th = np.tanh(value)
        with t.part(f'tanh_third({value})'):
            got = third(value)
        t.close(f'tanh_third({value}) (손으로 구한 식)', got,
                (1 - th ** 2) * (6 * th ** 2 - 2), rtol=1e-12)


STUB_NEWTON = '''
"""제3고지 문제 3: 33단계의 뉴턴 방법. x <- x - f'(x) / f''(x), 미분은 자동 미분으로."""


def newton(f, x0, steps):
    """f(Variable) -> Variable을 x0(float)에서 steps번: 각 단계 뒤의 x를 float 목록으로."""
    raise NotImplementedError


# f(x) = x^3 / 3 - 2x, x0 = 1에서 세 번: 손으로 구한 분수 (예: 3 / 2)
by_hand = [..., ..., ...]
'''


@exercise(3, '뉴턴 방법', STUB_NEWTON)
def check_newton(t):
    newton = t.get('newton')
    expected = [3 / 2, 17 / 12, 577 / 408]
    t.close('by_hand (손으로 구한 세 값)', t.get('by_hand'), expected, rtol=1e-12)
    with t.part('newton(x^3/3 - 2x, 1.0, 3)'):
        got = newton(lambda x: x ** 3 / 3 - 2 * x, 1.0, 3)
    t.close('newton(x^3/3 - 2x, 1.0, 3)', got, expected, rtol=1e-14)
    # (x - 2)^4: x <- x - 4(x-2)^3 / (12 (x-2)^2) = x - (x - 2) / 3
    exp4, x = [], 3.0
    for _ in range(4):
        x = x - (x - 2) / 3
        exp4.append(x)
    with t.part('newton((x - 2)^4, 3.0, 4)'):
        got = newton(lambda x: (x - 2) ** 4, 3.0, 4)
    t.close('newton((x - 2)^4, 3.0, 4)', got, exp4, rtol=1e-12)


STUB_HESSIAN = '''
"""제3고지 문제 4: double backprop으로 헤세 행렬."""


def hessian(f, x, y):
    """f(x, y) -> 스칼라 Variable. x, y는 스칼라 Variable. 2x2 목록 [[fxx, fxy], [fyx, fyy]].
    z.backward(create_graph=True) 뒤, 기울기 성분 하나를 역전파하면 헤세 행렬의 한 행."""
    raise NotImplementedError


# matyas(x, y) = 0.26 (x^2 + y^2) - 0.48 x y 의 헤세 행렬을 손으로
matyas_hessian = ...
'''


@exercise(4, '헤세 행렬', STUB_HESSIAN)
def check_hessian(t):
    hessian = t.get('hessian')
    H = [[0.52, -0.48], [-0.48, 0.52]]
    t.close('matyas_hessian (손으로 구한 값)', t.get('matyas_hessian'), H, rtol=1e-12)
    for x0, y0 in ((1.0, 2.0), (-3.0, 0.5)):
        with t.part(f'hessian(matyas, {x0}, {y0})'):
            got = hessian(lambda x, y: 0.26 * (x ** 2 + y ** 2) - 0.48 * x * y,
                          Variable(np.array(x0)), Variable(np.array(y0)))
        t.close(f'hessian(matyas, {x0}, {y0})', got, H, rtol=1e-14)
    with t.part('hessian(x^2 y + y^3, 1, 2)'):
        got = hessian(lambda x, y: x ** 2 * y + y ** 3, Variable(np.array(1.0)),
                      Variable(np.array(2.0)))
    t.close('hessian(x^2 y + y^3, 1, 2) = [[2y, 2x], [2x, 6y]]', got,
            [[4.0, 2.0], [2.0, 12.0]], rtol=1e-14)
