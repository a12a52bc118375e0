"""30단계: 고차 미분 (이론 1) -- 역전파도 Function 호출로 계산한다

29단계에서는 2차 미분을 손으로 적어야 했다. 역전파가 하는 계산 자체를 계산 그래프로 남길 수
있다면, 그 그래프를 다시 역전파해서 2차 미분을 얻을 수 있다. 그러려면 두 가지가 필요하다.

1. 기울기(grad)가 ndarray가 아니라 Variable이어야 한다.
2. 각 Function의 backward가 ndarray 계산이 아니라 Variable 연산(= Function 호출)으로 적혀 있어야
   한다. 예를 들어 Sin.backward는 `gy * cos(x)`를 Variable로 계산한다: Cos와 Mul이 불린다.

dezero_kr의 core는 처음부터 이렇게 만들어져 있다. 이 단계는 그것을 눈으로 확인한다.
역전파 엔진은 backward들을 `using_config('enable_backprop', create_graph)` 안에서 부르므로,
보통의 y.backward()에서는 backward 안의 연산이 기록되지 않는다(그래서 빠르고 메모리도 적다).

출력에서 볼 것
* y = sin(x)에서 x.grad의 타입은 Variable이고, 보통의 backward 뒤에는 creator가 없다.
* Sin.backward를 직접 부르면(기록 모드) 결과의 creator가 Mul이고 그 입력 하나는 Cos가 만들었다:
  "gy * cos(x)" 라는 계산이 그대로 그래프로 남는다. no_grad 안에서 부르면 아무것도 남지 않는다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable, no_grad


def describe(v):
    """변수 v를 만든 함수와, 그 함수 입력들을 만든 함수의 이름."""
    f = v.creator
    if f is None:
        return 'creator 없음 (잎 변수)'
    parents = [type(x.creator).__name__ if x.creator is not None else '잎' for x in f.inputs]
    return f'creator = {type(f).__name__}, 그 입력들을 만든 것 = {parents}'


if __name__ == '__main__':
    x = Variable(np.array(np.pi / 3), name='x')
    y = F.sin(x)
    y.backward()
    print(f'y = sin(x), x = pi/3: y = {float(y.data):.6f}, x.grad = {float(x.grad.data):.6f} (= cos(pi/3))')
    print('x.grad의 타입:', type(x.grad).__name__, '|', describe(x.grad))

    # 엔진이 하는 일을 손으로: 출력 쪽 기울기 gy = 1을 넣고 Sin.backward를 부른다
    sin_function = y.creator
    gy = Variable(np.array(1.0), name='gy')
    gx = sin_function.backward(gy)  # 기본은 기록 모드(enable_backprop=True)
    print('\nSin.backward(gy)를 기록 모드에서:', f'{float(gx.data):.6f}', '|', describe(gx))
    with no_grad():
        gx = sin_function.backward(gy)
    print('Sin.backward(gy)를 no_grad 안에서:', f'{float(gx.data):.6f}', '|', describe(gx))
