"""37단계: 텐서 다루기 -- 스칼라에서 배열로

지금까지는 주로 0차원 배열(스칼라)을 넣었다. 머신러닝에서는 벡터, 행렬, 그 이상의 다차원
배열(텐서)을 다룬다. 원소마다 계산하는 함수(sin, exp, +, * ...)는 코드 수정 없이 텐서에도
쓸 수 있다: forward는 NumPy가 원소마다 계산하고, backward도 원소마다 곱하면 된다.

규칙 하나를 기억하자: **x.grad의 모양은 x.data의 모양과 같다.** 기울기의 각 원소는 "x의 그 원소를
조금 바꿀 때 최종 출력이 얼마나 바뀌는가"이기 때문이다.

원소별 함수 y = f(x) (x, y는 원소 n개)의 야코비 행렬 dy/dx는 n x n 대각 행렬이다. 역전파는 이
행렬을 만들지 않고 "출력 쪽 기울기 * f'(x)"를 원소별로 곱한다 (벡터-야코비 곱). 큰 텐서에서도
역전파가 빠른 이유다.

38~41단계에서는 모양을 다루는 함수(reshape, transpose, sum, broadcast_to, sum_to, matmul)를
mydezero/functions.py에 더한다. 그 함수가 맞는지는 이 단계에서 만드는 확인 도구 check_against_package로
확인한다(37~41단계가 함께 쓰므로 steps/_common.py에 있다: 단계는 다른 단계를 import하지 않는다).
합계 함수 sum은 39단계에서 생기므로 여기서는 t.backward()로 대신한다: 시작 기울기가 t와 같은 모양의
1이므로, sum(t)를 역전파한 것과 같다.

    1. 같은 입력에서 dezero_kr의 같은 함수와 순전파 값이 같다.
    2. 출력 쪽 기울기 gy에 서로 다른 무작위 값을 넣고 역전파한 입력 기울기가 dezero_kr와 같다.
       (gy를 모두 1로 주면 원소가 뒤바뀌어도 티가 나지 않는다: 38단계)
    3. 그 기울기가 중앙 차분 (f(x + h) - f(x - h)) / 2h (float64, h = 1e-6)과 맞다:
       d/dx_i sum(f(x) * gy) 를 원소마다 흔들어 구한다(04단계의 수치 미분을 텐서로).

출력에서 볼 것
* 2x3 행렬 x에 sin, 덧셈을 한 결과와 모양
* 합계 y = sum(sin(x) + c)를 역전파한 x.grad(= cos(x))와 c.grad(= 1)가 각각 x, c와 같은 2x3 모양
* 야코비 행렬을 직접 만들어 곱한 결과와 역전파 결과가 같다.
* mydezero의 sin(30단계), mul(core.py)이 텐서에서도 dezero_kr와 같고 중앙 차분과 맞다.
"""
import numpy as np

import dezero_kr.functions as RF  # 기준 패키지
import mydezero.functions as F
from mydezero import Variable
from mydezero.core import mul
from mydezero.functions import sin

from _common import report, report_header


if __name__ == '__main__':
    x = Variable(np.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]), name='x')
    c = Variable(np.array([[10.0, 20.0, 30.0], [40.0, 50.0, 60.0]]), name='c')

    t = F.sin(x) + c
    print('t = sin(x) + c, 모양', t.shape)
    print(t)

    # 손실은 보통 y = sum(t) 같은 스칼라다. sum은 39단계에서 만든다:
    # 여기서는 t에서 바로 역전파한다. 시작 기울기가 t와 같은 모양의 1이므로
    # sum(t)를 역전파한 것과 같다.
    t.backward(retain_grad=True)  # retain_grad: t의 기울기(시작값)도 남긴다
    print('\ny = sum(t) =', f'{float(np.sum(t.data)):.6f}')
    print(f't.grad (모양 {t.grad.shape})\n{t.grad}')
    print(f'x.grad = cos(x) (모양 {x.grad.shape})\n{x.grad}')
    print(f'c.grad (모양 {c.grad.shape})\n{c.grad}')

    # 원소별 함수의 야코비 행렬은 대각 행렬: 직접 만들어 곱해도 같은 답
    J = np.diag(np.cos(x.data).ravel())           # d sin(x) / dx, 6x6
    gy = np.ones(6)                               # dy/dt (sum의 기울기)
    print('\n야코비 행렬(6x6)을 만들어 곱한 gy @ J:')
    print(' ', np.round(gy @ J, 6))
    print('역전파가 원소별 곱으로 구한 x.grad:')
    print(' ', np.round(x.grad.data.ravel(), 6))

    report_header('직접 만든 함수를 텐서에서 확인')
    rng = np.random.default_rng(37)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    report('sin (30단계)', sin, RF.sin, a)
    report('mul (30단계)', mul, lambda u, v: u * v, a, b)
