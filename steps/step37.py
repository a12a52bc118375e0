"""37단계: 텐서 다루기 -- 스칼라에서 배열로

지금까지는 주로 0차원 배열(스칼라)을 넣었다. 머신러닝에서는 벡터, 행렬, 그 이상의 다차원
배열(텐서)을 다룬다. 원소마다 계산하는 함수(sin, exp, +, * ...)는 코드 수정 없이 텐서에도
쓸 수 있다: forward는 NumPy가 원소마다 계산하고, backward도 원소마다 곱하면 된다.

규칙 하나를 기억하자: **x.grad의 모양은 x.data의 모양과 같다.** 기울기의 각 원소는 "x의 그 원소를
조금 바꿀 때 최종 출력이 얼마나 바뀌는가"이기 때문이다.

원소별 함수 y = f(x) (x, y는 원소 n개)의 야코비 행렬 dy/dx는 n x n 대각 행렬이다. 역전파는 이
행렬을 만들지 않고 "출력 쪽 기울기 * f'(x)"를 원소별로 곱한다 (벡터-야코비 곱). 큰 텐서에서도
역전파가 빠른 이유다.

출력에서 볼 것
* 2x3 행렬 x에 sin, 덧셈을 한 결과와 모양
* 합계 y = sum(sin(x) + c)를 역전파한 x.grad(= cos(x))와 c.grad(= 1)가 각각 x, c와 같은 2x3 모양
* 야코비 행렬을 직접 만들어 곱한 결과와 역전파 결과가 같다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable


if __name__ == '__main__':
    x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), name='x')
    c = Variable(np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]), name='c')

    t = F.sin(x) + c
    print('t = sin(x) + c, 모양', t.shape)
    print(t)

    y = F.sum(t)  # 모든 원소의 합: 스칼라 하나. 보통 손실 함수가 이런 스칼라다.
    y.backward(retain_grad=True)  # retain_grad: 중간 변수 t의 기울기도 남긴다
    print('\ny = sum(t) =', f'{float(y.data):.6f}')
    print(f't.grad (모양 {t.grad.shape})\n{t.grad}')
    print(f'x.grad = cos(x) (모양 {x.grad.shape})\n{x.grad}')
    print(f'c.grad (모양 {c.grad.shape})\n{c.grad}')

    # 원소별 함수의 야코비 행렬은 대각 행렬이다: 그것을 직접 만들어 곱해도 같은 답이 나온다
    J = np.diag(np.cos(x.data).ravel())           # d sin(x) / dx, 6x6
    gy = np.ones(6)                               # dy/dt (sum의 기울기)
    print('\n야코비 행렬(6x6)을 만들어 곱한 gy @ J:', np.round(gy @ J, 6))
    print('역전파가 원소별 곱으로 구한 x.grad    :', np.round(x.grad.data.ravel(), 6))
