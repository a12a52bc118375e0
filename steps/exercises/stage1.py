"""제1고지(01~10단계) 연습 문제의 확인: docs/tutorial/stage1.md의 "연습 문제".

답 파일은 steps/의 단계 모듈(step09 ...)을 import해서 쓴다. check.py가 steps/를
sys.path에 넣는다.
"""
import numpy as np

from . import central_diff, exercise

STUB_DIFF = '''
"""제1고지 문제 1: 수치 미분의 오차를 테일러 전개로 예측한다.

f(x) = x^3, x = 1, h = 0.01. 전진 차분 (f(x+h) - f(x)) / h와
중앙 차분 (f(x+h) - f(x-h)) / (2h)에서 참값 f'(1) = 3을 뺀 오차.
"""

forward_error = ...   # 전진 차분 - 3
central_error = ...   # 중앙 차분 - 3
'''


@exercise(1, '수치 미분의 오차 예측', STUB_DIFF)
def check_diff(t):
    x, h = 1.0, 0.01
    forward = ((x + h) ** 3 - x ** 3) / h
    central = ((x + h) ** 3 - (x - h) ** 3) / (2 * h)
    t.close('forward_error (전진 차분 - 3)', t.get('forward_error'), forward - 3, rtol=1e-6)
    t.close('central_error (중앙 차분 - 3)', t.get('central_error'), central - 3, rtol=1e-6)


STUB_CHAIN = '''
"""제1고지 문제 2: y = exp(square(exp(x)))를 09단계의 함수로 미분한다."""
import numpy as np

from step09 import exp, square


def f(x):
    """x: step09.Variable -> y = exp(square(exp(x)))"""
    raise NotImplementedError


def dydx(x):
    """연쇄 법칙으로 손으로 구한 dy/dx (x는 float, NumPy로 계산)."""
    raise NotImplementedError
'''


def _exact_chain(x):
    return 2 * np.exp(2 * x) * np.exp(np.exp(2 * x))


@exercise(2, '연쇄 법칙: exp(square(exp(x)))', STUB_CHAIN)
def check_chain(t):
    import step09
    f, dydx = t.get('f'), t.get('dydx')
    for value in (0.5, -0.3, 0.1):
        x = step09.Variable(np.array(value))
        with t.part(f'f(x)의 순전파와 역전파 (x = {value})'):
            y = f(x)
            y.backward()
        t.close(f'y (x = {value})', y.data, np.exp(np.exp(value) ** 2), rtol=1e-14)
        t.close(f'x.grad (x = {value}, 닫힌 식과 비교)', x.grad, _exact_chain(value),
                rtol=1e-12)
        with t.part(f'dydx({value})'):
            got = dydx(value)
        t.close(f'dydx({value}) (손으로 구한 식)', got, _exact_chain(value), rtol=1e-12)


STUB_CUBE = '''
"""제1고지 문제 3: y = x^3을 계산하는 Cube 함수 (09단계의 Function을 상속)."""
import numpy as np

from step09 import Function


class Cube(Function):
    def forward(self, x):
        raise NotImplementedError

    def backward(self, gy):
        """입력은 self.input.data로 꺼낸다."""
        raise NotImplementedError


def cube(x):
    return Cube()(x)
'''


@exercise(3, 'Cube 함수', STUB_CUBE)
def check_cube(t):
    import step09
    cube = t.get('cube')
    for value in (-1.5, 0.3, 2.0):
        x = step09.Variable(np.array(value))
        with t.part(f'cube(x)의 순전파와 역전파 (x = {value})'):
            y = cube(x)
            y.backward()
        t.close(f'cube(x)의 값 (x = {value})', y.data, value ** 3, rtol=1e-15)
        t.close(f'x.grad = 3x^2 (x = {value})', x.grad, 3 * value ** 2, rtol=1e-15)
        num = central_diff(lambda a: cube(step09.Variable(a)).data, np.array(value))
        t.close(f'x.grad (x = {value}, 중앙 차분과 비교)', x.grad, num, rtol=1e-7)
    x = step09.Variable(np.array(0.2))
    with t.part('cube(exp(x))의 역전파'):
        y = cube(step09.exp(x))
        y.backward()
    t.close('cube(exp(x))의 x.grad = 3 e^{3x} (x = 0.2)', x.grad, 3 * np.exp(0.6),
            rtol=1e-14)
    # cube가 마지막이 아니면 gy가 1이 아니다: gy를 곱하지 않은 backward는 여기서 틀린다.
    x = step09.Variable(np.array(0.5))
    with t.part('exp(cube(x))의 역전파'):
        y = step09.exp(cube(x))
        y.backward()
    t.close('exp(cube(x))의 x.grad = e^{x^3} 3x^2 (x = 0.5, gy를 곱했는가)', x.grad,
            np.exp(0.125) * 0.75, rtol=1e-14)


STUB_DEEP = '''
"""제1고지 문제 4: x = 1에 Square를 1020번 이은 그래프를 08단계(반복문)로 역전파하면?"""

x_grad = ...   # x.grad (정확한 수)
'''


@exercise(4, 'Square 1020번', STUB_DEEP)
def check_deep(t):
    import step08
    x = step08.Variable(np.array(1.0))
    y = x
    for _ in range(1020):
        y = step08.Square()(y)
    y.grad = np.array(1.0)  # 08단계에는 아직 시작 기울기를 자동으로 넣는 코드가 없다
    y.backward()
    t.equal('x_grad (08단계의 역전파와 비교)', t.get('x_grad'), float(x.grad))
