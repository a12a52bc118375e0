"""41단계: 행렬 곱 matmul

y = x W (x: (N, D), W: (D, H), y: (N, H))의 역전파는 다음 두 식이다.

    dL/dx = dL/dy W^T      (N, H) x (H, D) = (N, D)   <- x와 같은 모양
    dL/dW = x^T dL/dy      (D, N) x (N, H) = (D, H)   <- W와 같은 모양

원소로 적으면 y[n, h] = sum_d x[n, d] W[d, h] 이고, W[d, h]는 y의 h열 전체(N개 원소)에 쓰였으므로
그 기여를 n에 대해 더한다: dL/dW[d, h] = sum_n x[n, d] dL/dy[n, h]. 기울기의 모양이 변수의 모양과
같아야 한다는 규칙(37단계)만 기억하면 어느 쪽을 전치해 어느 쪽에 곱할지 맞출 수 있다.

dezero_kr에서는 F.matmul(x, W), x.matmul(W), x @ W 가 모두 같다.

출력에서 볼 것
* x (2, 3), W (3, 4)일 때 y, x.grad, W.grad의 모양
* 역전파 결과와 위 공식을 NumPy로 직접 계산한 값이 같고, 수치 미분과도 같다.
* 배치 행렬 곱: (5, 2, 3) @ (3, 4) -> (5, 2, 4)에서 W.grad는 배치 축까지 더한 (3, 4)
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.utils import gradient_check


if __name__ == '__main__':
    rng = np.random.default_rng(0)
    x = Variable(rng.standard_normal((2, 3)), name='x')
    W = Variable(rng.standard_normal((3, 4)), name='W')
    y = F.matmul(x, W)
    gy = rng.standard_normal((2, 4))  # 출력 쪽 기울기 (손실에서 흘러온 값이라고 생각한다)
    y.grad = Variable(gy)
    y.backward()
    print(f'x {x.shape} @ W {W.shape} -> y {y.shape};  x.grad {x.grad.shape}, W.grad {W.grad.shape}')
    print('x.grad == gy @ W.T :', np.allclose(x.grad.data, gy @ W.data.T))
    print('W.grad == x.T @ gy :', np.allclose(W.grad.data, x.data.T @ gy))
    print('x @ W 와 x.matmul(W)도 같은 값:', np.array_equal((x @ W).data, y.data),
          np.array_equal(x.matmul(W).data, y.data))

    # 수치 미분과 비교: x 쪽과 W 쪽
    print('gradient_check (x 쪽):', gradient_check(lambda v: F.matmul(v, W.data), x.data))
    print('gradient_check (W 쪽):', gradient_check(lambda v: F.matmul(x.data, v), W.data))

    xb = Variable(rng.standard_normal((5, 2, 3)))
    W.cleargrad()
    y = xb @ W
    y.backward()
    print(f'\n배치 행렬 곱: {xb.shape} @ {W.shape} -> {y.shape};  W.grad {W.grad.shape}')
    print('W.grad == 배치마다의 x.T @ 1 을 더한 값:',
          np.allclose(W.grad.data, sum(xb.data[i].T @ np.ones((2, 4)) for i in range(5))))
