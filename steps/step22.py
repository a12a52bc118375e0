"""22단계: 연산자 오버로드 (3) -- 나머지 연산자

남은 사칙연산과 거듭제곱을 넣으면 01단계의 상자가 작은 자동 미분 프레임워크가 된다.

    연산       파이썬 메서드              순전파      역전파 (gy: 출력 쪽 미분)
    -x         __neg__                    -x          -gy
    x0 - x1    __sub__, __rsub__          x0 - x1     gy, -gy
    x0 / x1    __truediv__, __rtruediv__  x0 / x1     gy / x1, -gy * x0 / x1^2
    x ** c     __pow__                    x^c         c * x^(c-1) * gy   (c는 상수)

뺄셈과 나눗셈은 교환 법칙이 성립하지 않으므로 2.0 - x 에서 불리는 __rsub__(x, 2.0)는
피연산자 순서를 바꿔 sub(2.0, x)를 계산해야 한다. Function은 21단계 그대로이고 Variable과
새 연산들만 더한다.

출력에서 볼 것
* x=2일 때 각 식의 값과 역전파 미분, 그리고 수치 미분(04단계)과의 비교
* 05~08단계의 예제를 연산자로: y = exp(x ** 2) ** 2, x=0.5 -> 3.2974425414..., x=2 -> 23847.6638963...
"""
import numpy as np

import step21
from step04 import numerical_diff
from step21 import Config, Function, FunctionHeap, as_array, exp, no_grad, using_config  # noqa: F401


class Neg(Function):
    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Sub(Function):
    def forward(self, x0, x1):
        return x0 - x1

    def backward(self, gy):
        return gy, -gy


class Div(Function):
    def forward(self, x0, x1):
        return x0 / x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy / x1, -gy * x0 / x1 ** 2


class Pow(Function):
    def __init__(self, c):
        self.c = c  # 지수는 미분 대상이 아닌 상수로 함수 객체에 담아 둔다

    def forward(self, x):
        return x ** self.c

    def backward(self, gy):
        x = self.inputs[0].data
        return self.c * x ** (self.c - 1) * gy


def neg(x):
    return Neg()(x)


def sub(x0, x1):
    return Sub()(x0, x1)


def rsub(x0, x1):
    return Sub()(x1, x0)  # x0이 Variable(self), x1이 왼쪽에 있던 값


def div(x0, x1):
    return Div()(x0, x1)


def rdiv(x0, x1):
    return Div()(x1, x0)


def pow(x, c):
    return Pow(c)(x)


class Variable(step21.Variable):
    __neg__ = neg
    __sub__ = sub
    __rsub__ = rsub
    __truediv__ = div
    __rtruediv__ = rdiv
    __pow__ = pow


def as_variable(obj):
    """21단계와 같되 이 단계의 Variable로 감싼다."""
    return step21.as_variable(obj, Variable)


if __name__ == '__main__':
    cases = [('-x', lambda x: -x),
             ('x - 1.0', lambda x: x - 1.0),
             ('1.0 - x', lambda x: 1.0 - x),
             ('x / 4.0', lambda x: x / 4.0),
             ('3.0 / x', lambda x: 3.0 / x),
             ('x ** 3', lambda x: x ** 3),
             ('(x - 1) / (x ** 2 + 1)', lambda x: (x - 1) / (x ** 2 + 1))]
    print('x = 2.0')
    for label, f in cases:
        x = Variable(np.array(2.0))
        y = f(x)
        y.backward()
        print(f'  {label:<24} 값 {float(y.data):<8.4f} 역전파 {float(x.grad):<10.6f} '
              f'수치 미분 {float(numerical_diff(f, x)):.6f}')

    for v in (0.5, 2.0):
        x = Variable(np.array(v))
        y = exp(x ** 2) ** 2
        y.backward()
        print(f'y = exp(x ** 2) ** 2, x={v}: y = {y.data}, dy/dx = {x.grad}')
