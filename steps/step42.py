"""42단계: 선형 회귀 -- 처음으로 "학습"하기

데이터 (x, y) 100개에 가장 잘 맞는 직선 y = x W + b 를 찾는다. 데이터는 y = 5 + 2x + 잡음으로
만들었으니 W ~ 2, b ~ 5.5 (잡음의 평균 0.5까지) 근처가 답이다.

    예측      y_pred = matmul(x, W) + b         x (100, 1), W (1, 1), b (1,)
    손실      L = (1/N) sum (y_pred - y)^2       평균 제곱 오차(MSE)
    갱신      W <- W - lr * dL/dW,  b <- b - lr * dL/db

지금까지 만든 부품(행렬 곱, 브로드캐스트 덧셈, sum, 거듭제곱)만으로 손실이 적히고, 기울기는
역전파가 구한다. (dezero_kr.functions에는 같은 일을 하는 F.mean_squared_error도 있다. 여기서는 식이
보이도록 직접 적는다.)

W와 b는 Variable이고, 갱신은 W.data -= ... 처럼 data 배열만 고친다. 갱신 자체는 미분할 계산이
아니므로 그래프에 기록하지 않는다. 반복마다 cleargrad로 기울기를 비운다(누적 방지).

출력에서 볼 것
* 손실이 줄어드는 모습과 최종 W, b
* 같은 문제의 정확한 해(최소제곱법, np.linalg.lstsq)와 비교: 100번 반복 뒤에도 아직 조금 다르다.
  경사하강법은 반복해서 다가가는 방법이다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable


def predict(x, W, b):
    return F.matmul(x, W) + b


def mean_squared_error(y_pred, y):
    diff = y_pred - y
    return F.sum(diff ** 2) / len(diff)


if __name__ == '__main__':
    np.random.seed(0)  # 같은 데이터가 나오도록
    x = np.random.rand(100, 1)
    y = 5 + 2 * x + np.random.rand(100, 1)

    W = Variable(np.zeros((1, 1)), name='W')
    b = Variable(np.zeros(1), name='b')
    lr, iters = 0.1, 100
    for i in range(iters):
        y_pred = predict(x, W, b)
        loss = mean_squared_error(y_pred, y)
        if i % 10 == 0 or i == iters - 1:  # 이번 손실과, 그 손실을 낸 W, b
            print(f'{i:3d}회: loss = {float(loss.data):.6f}  W = {W.data[0, 0]:.6f}  b = {b.data[0]:.6f}')
        W.cleargrad()
        b.cleargrad()
        loss.backward()
        W.data -= lr * W.grad.data
        b.data -= lr * b.grad.data

    # 정확한 해: [x, 1] @ [W, b] = y 의 최소제곱해
    A = np.hstack([x, np.ones_like(x)])
    (W_best, b_best), *_ = np.linalg.lstsq(A, y[:, 0], rcond=None)
    best_loss = np.mean((A @ np.array([W_best, b_best]) - y[:, 0]) ** 2)
    print(f'최소제곱 해: loss = {best_loss:.6f}  W = {W_best:.6f}  b = {b_best:.6f}')
