"""41단계: 행렬 곱 -- MatMul을 직접 만든다 (mydezero/functions.py)

y = x W (x: (N, D), W: (D, H), y: (N, H))의 역전파는 다음 두 식이다.

    dL/dx = dL/dy W^T      (N, H) x (H, D) = (N, D)   <- x와 같은 모양
    dL/dW = x^T dL/dy      (D, N) x (N, H) = (D, H)   <- W와 같은 모양

원소로 적으면 y[n, h] = sum_d x[n, d] W[d, h] 이고, W[d, h]는 y의 h열 전체(N개 원소)에 쓰였으므로
그 기여를 n에 대해 더한다: dL/dW[d, h] = sum_n x[n, d] dL/dy[n, h]. 기울기의 모양이 변수의 모양과
같아야 한다는 규칙(37단계)만 기억하면 어느 쪽을 전치해 어느 쪽에 곱할지 맞출 수 있다.

MatMul.backward도 Variable 연산으로 적는다: 자기 자신 matmul과 38단계의 transpose(W.T). mydezero의
matmul은 DeZero처럼 2차원 행렬끼리만 다룬다(3차원 이상에서는 transpose가 모든 축을 뒤집어 버린다).
기준 패키지 dezero_kr의 F.matmul(x, W), x @ W는 배치 행렬 곱 (B, N, D) @ (D, H)도 다룬다.
Variable에는 x.matmul(W), x.dot(W), x @ W가 생긴다.

출력에서 볼 것
* x (2, 3), W (3, 4)일 때 y, x.grad, W.grad의 모양
* 역전파 결과가 위 공식을 NumPy로 직접 계산한 값과 같다 (assert).
* 작은 정수 예: x = [[1, 2]], W = [[3], [4]]이면 y = 11, x.grad = W^T = [[3, 4]], W.grad = x^T
  = [[1], [2]]
* mydezero의 matmul이 기준 패키지 dezero_kr와 같은 값·기울기를 내고 중앙 차분과 맞는다.
* 배치 행렬 곱 (dezero_kr): (5, 2, 3) @ (3, 4) -> (5, 2, 4)에서 W.grad는 배치 축까지 더한 (3, 4)
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
from mydezero import Variable
from mydezero.functions import matmul

from _common import report, report_header


if __name__ == '__main__':
    rng = np.random.default_rng(0)
    x = Variable(rng.standard_normal((2, 3)), name='x')
    W = Variable(rng.standard_normal((3, 4)), name='W')
    y = matmul(x, W)
    gy = rng.standard_normal((2, 4))  # 출력 쪽 기울기 (손실에서 흘러온 값이라고 생각한다)
    y.grad = Variable(gy)
    y.backward()
    print(f'x {x.shape} @ W {W.shape} -> y {y.shape};  '
          f'x.grad {x.grad.shape}, W.grad {W.grad.shape}')
    np.testing.assert_allclose(x.grad.data, gy @ W.data.T, rtol=1e-14)
    np.testing.assert_allclose(W.grad.data, x.data.T @ gy, rtol=1e-14)
    print('x.grad == gy @ W.T, W.grad == x.T @ gy (NumPy로 계산한 공식과 같다)')

    x = Variable(np.array([[1.0, 2.0]]))
    W = Variable(np.array([[3.0], [4.0]]))
    y = matmul(x, W)
    y.backward()
    print(f'\nx = {x.data.tolist()}, W = {W.data.tolist()}: y = {y.data.tolist()}')
    print(f'  x.grad = {x.grad.data.tolist()} (= W^T),  '
          f'W.grad = {W.grad.data.tolist()} (= x^T)')

    report_header('dezero_kr와 비교')
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    report('matmul', matmul, RF.matmul, a, b)
    report('matmul (4, 1) @ (1, 5)', matmul, lambda p, q: p @ q,
           rng.standard_normal((4, 1)), rng.standard_normal((1, 5)))

    xb = dezero_kr.Variable(rng.standard_normal((5, 2, 3)))
    W = dezero_kr.Variable(b)
    y = xb @ W  # 배치 행렬 곱은 기준 패키지 dezero_kr로 (mydezero는 2차원만)
    y.backward()
    print(f'\n배치 행렬 곱 (dezero_kr): {xb.shape} @ {W.shape} -> {y.shape};  '
          f'W.grad {W.grad.shape}')
    total = np.zeros((3, 4))
    for i in range(5):  # W는 다섯 배치 모두에 쓰였다: 배치마다의 x^T @ gy를 더한다
        total += xb.data[i].T @ np.ones((2, 4))
    print('W.grad == 배치마다의 x.T @ 1 을 더한 값:', np.allclose(W.grad.data, total))
