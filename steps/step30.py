"""30단계: 고차 미분 (이론 1) -- backward를 Variable 연산으로 적는다

29단계에서는 2차 미분을 손으로 적어야 했다. 역전파가 하는 계산 자체를 계산 그래프로 남길 수
있다면, 그 그래프를 다시 역전파해서 2차 미분을 얻을 수 있다. 그러려면 두 가지가 필요하다.

1. 기울기(grad)가 ndarray가 아니라 Variable이어야 한다.
2. 각 Function의 backward가 ndarray 계산이 아니라 Variable 연산(= Function 호출)으로 적혀 있어야
   한다.

그래서 이 단계에서 mydezero에 새 코어 core.py가 생긴다(core_simple.py를 복사해 고친 것, 책의 32단계
core.py와 같다). 달라진 곳: 역전파의 시작값과 기울기가 Variable이고, 사칙연산 Mul/Div/Pow의 backward가
x.data가 아니라 Variable x로 계산한다. mydezero/__init__.py는 이제 core에서 이름을 가져온다.

22단계까지의 backward는 ndarray로 계산했다 (예: 09단계의 Exp, core_simple의 Mul):

    def backward(self, gy):                 # gy: ndarray
        x0, x1 = self.inputs[0].data, self.inputs[1].data   # ndarray를 꺼낸다
        return gy * x1, gy * x0             # NumPy 계산: 그래프에 아무것도 남지 않는다

이 단계에서 새 파일 mydezero/functions.py에 쓰는 Sin과 Cos는 backward를 Variable로 계산한다:

    def backward(self, gy):                 # gy: Variable
        x, = self.inputs                    # Variable 그대로
        return gy * cos(x)                  # Cos와 Mul이 불린다: 그래프로 남을 수 있다

forward는 예전처럼 ndarray를 받아 ndarray를 돌려준다. 엔진(core.py의 Variable.backward)은 backward들을
`using_config('enable_backprop', create_graph)` 안에서 부르므로, 보통의 y.backward()에서는 backward
안의 연산이 기록되지 않는다(그래서 빠르고 메모리도 적다). 기록은 y.backward(create_graph=True)가 켠다:
아래에서 Sin.backward를 기록 모드로 손으로 부르는 일을, 엔진이 그래프의 모든 함수에 해 주라는 스위치다.
2차 미분을 구하는 first_and_second가 이것을 쓴다(1차 미분 x.grad를 다시 backward). 엔진 쪽 코드는
31단계에서 읽고, 미분을 되풀이하는 방법(cleargrad가 왜 필요한가)은 32단계에서 다룬다.

출력에서 볼 것
* mydezero의 sin으로 y = sin(x)를 역전파: x.grad는 Variable이고, 보통의 backward 뒤에는 creator가
  없다.
* Sin.backward를 손으로 부르면(기록 모드) 결과의 creator가 Mul이고 그 입력 하나는 Cos가 만들었다:
  "gy * cos(x)" 라는 계산이 그대로 그래프로 남는다. no_grad 안에서 부르면 아무것도 남지 않는다.
* mydezero의 sin, cos의 값, 1차 미분, 2차 미분이 기준 패키지 dezero_kr의 F.sin, F.cos와 같고, 중앙
  차분으로 구한 기울기와도 맞다(_common.gradient_check: dezero_kr의 중앙 차분).
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
from mydezero import Variable, no_grad
from mydezero.functions import cos, sin

from _common import gradient_check


def describe(v):
    """변수 v를 만든 함수와, 그 함수 입력들을 만든 함수의 이름."""
    f = v.creator
    if f is None:
        return 'creator 없음 (잎 변수)'
    parents = [type(x.creator).__name__ if x.creator is not None else '잎'
               for x in f.inputs]
    return f'creator = {type(f).__name__}, 그 입력들을 만든 것 = {parents}'


def first_and_second(f, x0, variable=Variable):
    """f(x)의 값, 1차 미분, 2차 미분을 x0에서 구한다 (2차는 31~32단계의 방법).
    variable: Variable 클래스 (mydezero 또는 기준 패키지의 것)."""
    x = variable(np.array(x0))
    y = f(x)
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    gx.backward()
    return float(y.data), float(gx.data), float(x.grad.data)


if __name__ == '__main__':
    x = Variable(np.array(np.pi / 3), name='x')
    y = sin(x)
    y.backward()
    print(f'직접 만든 sin, x = pi/3: y = {float(y.data):.6f}, '
          f'x.grad = {float(x.grad.data):.6f} (= cos(pi/3))')
    print('x.grad의 타입:', type(x.grad).__name__, '|', describe(x.grad))

    # 엔진이 하는 일을 손으로: 출력 쪽 기울기 gy = 1을 넣고 Sin.backward를 부른다
    sin_function = y.creator
    gy = Variable(np.array(1.0), name='gy')
    gx = sin_function.backward(gy)  # 기본은 기록 모드(enable_backprop=True)
    print('\nSin.backward(gy)를 기록 모드에서:', f'{float(gx.data):.6f}')
    print('  ', describe(gx))
    with no_grad():
        gx = sin_function.backward(gy)
    print('Sin.backward(gy)를 no_grad 안에서:', f'{float(gx.data):.6f}')
    print('  ', describe(gx))

    # 패키지와 비교: 값, 1차 미분, 2차 미분이 모두 같아야 한다
    print('\ndezero_kr와 비교 (값, 1차 미분, 2차 미분):')
    for mine, package, name in [(sin, RF.sin, 'sin'), (cos, RF.cos, 'cos')]:
        for x0 in (np.pi / 3, -1.25):
            ours = first_and_second(mine, x0)
            ref = first_and_second(package, x0, dezero_kr.Variable)
            np.testing.assert_allclose(ours, ref, rtol=1e-15)
            print(f'  {name}({x0:+.4f}): '
                  f'({ours[0]:+.6f}, {ours[1]:+.6f}, {ours[2]:+.6f}) 같다')
    xs = np.linspace(-3, 3, 7)
    print('gradient_check(직접 만든 sin, cos, 점 7개):',
          gradient_check(sin, xs), gradient_check(cos, xs))
