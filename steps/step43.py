"""43단계: 신경망 -- 선형 변환 두 개 사이에 비선형 함수 하나

42단계의 직선으로는 y = sin(2 pi x) 같은 곡선을 맞출 수 없다. 선형 변환(행렬 곱 + 편향)을 두 번
하고 그 사이에 비선형 활성화 함수(시그모이드)를 넣으면 곡선도 근사할 수 있다.

    h = sigmoid(x W1 + b1)      x (100, 1) -> h (100, 10)      은닉층 10개 뉴런
    y = h W2 + b2               h (100, 10) -> y (100, 1)
    sigmoid(z) = 1 / (1 + exp(-z))

F.linear(x, W, b)는 matmul(x, W) + b를 한 번에 계산한다(중간 결과를 남기지 않아 메모리가 준다).
시그모이드는 exp와 나눗셈으로 직접 적는다. 가중치는 작은 난수, 편향은 0으로 시작한다. 가중치를
모두 0으로 두면 은닉 뉴런 10개가 같은 값을 내고 같은 기울기를 받아 끝까지 똑같이 움직인다
(대칭성). 난수로 그 대칭을 깬다.

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 7,000회(약 2초), 그냥 실행하면 책과 같은 10,000회
(2코어 컴퓨터에서 약 3초). 5,000회 전에 멈추면 아직 직선에 가까운 답이라 곡선을 덜 맞춘다.

출력에서 볼 것
* 손실이 처음에는 거의 줄지 않다가(평평한 구간) 어느 순간 빠르게 줄어드는 모습
* 학습 뒤 x = 0, 0.25, 0.5, 0.75, 1에서의 예측과 잡음 없는 정답 sin(2 pi x) + 0.5(잡음 평균)
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable

from _common import FAST


def sigmoid(x):
    return 1 / (1 + F.exp(-x))


def predict(x, W1, b1, W2, b2):
    h = sigmoid(F.linear(x, W1, b1))
    return F.linear(h, W2, b2)


def mean_squared_error(y_pred, y):
    diff = y_pred - y
    return F.sum(diff ** 2) / len(diff)


if __name__ == '__main__':
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
    for i in range(iters):
        loss = mean_squared_error(predict(x, *params), y)
        if i % (iters // 10) == 0 or i == iters - 1:
            print(f'{i:5d}회: loss = {float(loss.data):.6f}')
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
