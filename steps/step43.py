"""43단계: 신경망 -- 선형 변환 두 개 사이에 비선형 함수 하나

42단계의 직선으로는 y = sin(2 pi x) 같은 곡선을 맞출 수 없다. 선형 변환(행렬 곱 + 편향)을 두 번
하고 그 사이에 비선형 활성화 함수(시그모이드)를 넣으면 곡선도 근사할 수 있다.

    h = sigmoid(x W1 + b1)      x (100, 1) -> h (100, 10)      은닉층 10개 뉴런
    y = h W2 + b2               h (100, 10) -> y (100, 1)
    sigmoid(z) = 1 / (1 + exp(-z))

이번에는 두 부품을 Function으로 직접 만든다 (mydezero/functions.py).

    Linear   y = x W + b       dL/dx = gy W^T,  dL/dW = x^T gy,
                               dL/db = gy를 b의 모양으로 sum_to
    Sigmoid  y = 1/(1+e^-x)    dL/dx = gy y (1 - y)     (y는 순전파의 출력을 다시 쓴다)
             순전파는 같은 값인 tanh(x/2)/2 + 1/2로 계산한다: x가 큰 음수여도 exp가 넘치지 않는다.

Linear를 함수 하나로 만들면 중간 결과 x W를 그래프에 남기지 않아 메모리가 준다. 둘 다
dezero_kr의 F.linear, F.sigmoid와 값과 기울기를 맞춰 보고(float64 중앙 차분으로도) 학습에 쓴다.

가중치는 작은 난수, 편향은 0으로 시작한다. 가중치를
모두 0으로 두면 은닉 뉴런 10개가 같은 값을 내고 같은 기울기를 받아 끝까지 똑같이 움직인다
(대칭성). 난수로 그 대칭을 깬다.

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 7,000회(약 2초), 그냥 실행하면 책과 같은 10,000회
(2코어 컴퓨터에서 약 3초). 5,000회 전에 멈추면 아직 직선에 가까운 답이라 곡선을 덜 맞춘다.

그림: matplotlib이 있으면 현재 폴더에 step43_fit.png(데이터와 예측 곡선, 손실 곡선)를 저장한다.

출력에서 볼 것
* 직접 만든 Linear, Sigmoid가 기준 패키지 dezero_kr와 같은 값과 기울기를 낸다.
* 손실이 처음에는 거의 줄지 않다가(평평한 구간) 어느 순간 빠르게 줄어드는 모습
* 학습 뒤 x = 0, 0.25, 0.5, 0.75, 1에서의 예측과 잡음 없는 정답 sin(2 pi x) + 0.5(잡음 평균)
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
from mydezero import Variable
from mydezero.functions import linear, mean_squared_error, sigmoid

from _common import FAST, gradient_check, save_figure


def predict(x, W1, b1, W2, b2):
    h = sigmoid(linear(x, W1, b1))
    return linear(h, W2, b2)


def check_against_package():
    """linear, sigmoid == F.linear, F.sigmoid: 값과 모든 입력의 기울기, 그리고 수치 미분."""
    rng = np.random.default_rng(0)
    arrays = (rng.standard_normal((4, 3)), rng.standard_normal((3, 2)),
              rng.standard_normal(2))
    grads = []
    for f, variable in ((linear, Variable), (RF.linear, dezero_kr.Variable)):
        x, W, b = (variable(a) for a in arrays)
        y = f(x, W, b)
        (y * y).sum().backward()  # 스칼라로 만들어 모든 기울기를 한 번에
        grads.append([y.data, x.grad.data, W.grad.data, b.grad.data])
    for mine, package in zip(*grads):
        np.testing.assert_allclose(mine, package, rtol=1e-14)
    x, W, b = arrays
    assert gradient_check(lambda v: linear(v, W, b), x)
    assert gradient_check(lambda v: linear(x, v, b), W)
    assert gradient_check(lambda v: linear(x, W, v), b)

    z = np.linspace(-6, 6, 13)
    values = []
    for f, variable in ((sigmoid, Variable), (RF.sigmoid, dezero_kr.Variable)):
        v = variable(z)
        y = f(v)
        y.backward()
        values.append((y.data, v.grad.data))
    np.testing.assert_allclose(values[0][0], values[1][0], rtol=1e-14)
    np.testing.assert_allclose(values[0][1], values[1][1], rtol=1e-12)
    assert values[0][1][6] == 0.25  # 시그모이드의 기울기는 x = 0에서 가장 크다: 1/4
    assert gradient_check(sigmoid, z)
    print('Linear, Sigmoid 확인: F.linear, F.sigmoid와 값과 기울기가 같고 수치 미분과 일치')


if __name__ == '__main__':
    check_against_package()
    np.random.seed(0)
    x = np.random.rand(100, 1)
    y = np.sin(2 * np.pi * x) + np.random.rand(100, 1)

    I, H, O = 1, 10, 1
    W1 = Variable(0.01 * np.random.randn(I, H), name='W1')
    b1 = Variable(np.zeros(H), name='b1')
    W2 = Variable(0.01 * np.random.randn(H, O), name='W2')
    b2 = Variable(np.zeros(O), name='b2')
    params = [W1, b1, W2, b2]

    lr = 0.2
    iters = 7000 if FAST else 10000
    losses = []
    for i in range(iters):
        loss = mean_squared_error(predict(x, *params), y)
        losses.append(float(loss.data))
        if i % (iters // 10) == 0 or i == iters - 1:
            print(f'{i:5d}회: loss = {losses[-1]:.6f}')
        for p in params:
            p.cleargrad()
        loss.backward()
        for p in params:
            p.data -= lr * p.grad.data

    xs = np.array([[0.0], [0.25], [0.5], [0.75], [1.0]])
    y_pred = predict(xs, *params)
    print('\n   x    예측     sin(2 pi x) + 0.5')
    for xi, yi in zip(xs[:, 0], y_pred.data[:, 0]):
        print(f'{xi:5.2f}  {yi:8.4f}  {np.sin(2 * np.pi * xi) + 0.5:8.4f}')

    def draw(axes):
        fit, curve = axes
        grid = np.linspace(0, 1, 100).reshape(100, 1)
        fit.scatter(x[:, 0], y[:, 0], s=8, label='data')
        fit.plot(grid[:, 0], predict(grid, *params).data[:, 0], 'r', label='predict')
        fit.set_xlabel('x')
        fit.legend(loc='upper right')
        curve.plot(losses)
        curve.set_xlabel('iteration')
        curve.set_ylabel('loss')
    save_figure(draw, 'step43_fit.png', ncols=2)
