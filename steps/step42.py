"""42단계: 선형 회귀 -- 처음으로 "학습"하기

데이터 (x, y) 100개에 가장 잘 맞는 직선 y = x W + b 를 찾는다. 데이터는 y = 5 + 2x + 잡음으로
만들었으니 W ~ 2, b ~ 5.5 (잡음의 평균 0.5까지) 근처가 답이다.

    예측      y_pred = matmul(x, W) + b         x (100, 1), W (1, 1), b (1,)
    손실      L = (1/N) sum (y_pred - y)^2       평균 제곱 오차(MSE)
    갱신      W <- W - lr * dL/dW,  b <- b - lr * dL/db

지금까지 만든 부품(행렬 곱, 브로드캐스트 덧셈, sum, 거듭제곱)만으로 손실을 적을 수 있다
(mydezero/functions.py의 mean_squared_error_simple: DeZero와 같은 이름). 그러면 뺄셈, 거듭제곱,
sum, 나눗셈이 모두 그래프에 남는다. 손실을 Function 하나로 쓰면 중간 변수가 남지 않는다.
역전파 식은 직접 유도한다(diff = x0 - x1, N = len(diff)).

    L = sum(diff^2) / N          dL/dx0 = gy * 2 diff / N,   dL/dx1 = -dL/dx0

MeanSquaredError는 mydezero/functions.py에 더한다. 기준 패키지의 F.mean_squared_error, 조립판
mean_squared_error_simple, 그리고 float64 중앙 차분과 맞춰 본 뒤 학습에 쓴다.

W와 b는 Variable이고, 갱신은 W.data -= ... 처럼 data 배열만 고친다. 갱신 자체는 미분할 계산이
아니므로 그래프에 기록하지 않는다. 반복마다 cleargrad로 기울기를 비운다(누적 방지).

그림: matplotlib이 있으면 현재 폴더에 step42_fit.png(데이터와 맞춘 직선, 손실 곡선)를 저장한다.

출력에서 볼 것
* 직접 만든 MeanSquaredError가 기준 패키지 dezero_kr와 같은 값, 같은 기울기를 내고 수치 미분과 맞는다.
* 손실이 줄어드는 모습과 최종 W, b
* 같은 문제의 정확한 해(최소제곱법, np.linalg.lstsq)와 비교: 100번 반복 뒤에도 아직 조금 다르다.
  경사 하강법은 반복해서 다가가는 방법이다.
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
import mydezero.functions as F
from mydezero import Variable
from mydezero.functions import mean_squared_error

from _common import gradient_check, save_figure


def predict(x, W, b):
    return F.matmul(x, W) + b


def check_mean_squared_error():
    """MeanSquaredError == F.mean_squared_error (값, 두 입력의 기울기).
    수치 미분과도 비교한다."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((5, 2)), rng.standard_normal((5, 2))
    results = []
    functions = ((mean_squared_error, Variable),
                 (RF.mean_squared_error, dezero_kr.Variable),
                 (F.mean_squared_error_simple, Variable))
    for f, variable in functions:
        x0, x1 = variable(a), variable(b)
        y = f(x0, x1)
        y.backward()
        results.append((float(y.data), x0.grad.data, x1.grad.data))
    (y, g0, g1), (y_pkg, g0_pkg, g1_pkg), (y_naive, _, _) = results
    np.testing.assert_allclose([y, y_naive], y_pkg, rtol=1e-13)
    np.testing.assert_allclose(g0, g0_pkg, rtol=1e-13)
    np.testing.assert_allclose(g1, g1_pkg, rtol=1e-13)
    # 유도한 식 그대로
    np.testing.assert_allclose(g0, 2 * (a - b) / 5, rtol=1e-13)
    assert gradient_check(lambda v: mean_squared_error(v, b), a)
    assert gradient_check(lambda v: mean_squared_error(a, v), b)
    print(f'MeanSquaredError 확인: 값 {y:.6f} == F.mean_squared_error,'
          '\n  두 입력의 기울기도 같고 수치 미분과 일치')


if __name__ == '__main__':
    check_mean_squared_error()

    np.random.seed(0)  # 같은 데이터가 나오도록
    x = np.random.rand(100, 1)
    y = 5 + 2 * x + np.random.rand(100, 1)

    W = Variable(np.zeros((1, 1)), name='W')
    b = Variable(np.zeros(1), name='b')
    lr, iters = 0.1, 100
    losses = []
    for i in range(iters):
        y_pred = predict(x, W, b)
        loss = mean_squared_error(y_pred, y)
        losses.append(float(loss.data))
        if i % 10 == 0 or i == iters - 1:  # 이번 손실과, 그 손실을 낸 W, b
            print(f'{i:3d}회: loss = {losses[-1]:.6f}  '
                  f'W = {W.data[0, 0]:.6f}  b = {b.data[0]:.6f}')
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

    def draw(axes):
        fit, curve = axes
        line = np.array([[0.0], [1.0]])
        fit.scatter(x[:, 0], y[:, 0], s=8, label='data')
        fit.plot(line[:, 0], predict(line, W, b).data[:, 0], 'r', label='y = xW + b')
        fit.set_xlabel('x')
        fit.legend(loc='upper left')
        curve.plot(losses)
        curve.set_yscale('log')
        curve.set_xlabel('iteration')
        curve.set_ylabel('loss (log scale)')
    save_figure(draw, 'step42_fit.png', ncols=2)
