"""63단계: 손으로 푼 역전파 예제를 dezero_kr로 검산하기

역전파를 손으로 계산하는 고전적인 예제들이 있다(docs/references.md의 Rumelhart et al. 1986,
Karpathy의 micrograd). 그 숫자들을 dezero_kr로 다시 계산해 backward()가 같은 숫자를 내는지
본다. 각 예제가 역전파의 규칙 하나씩을 보여 준다.

1. 공유한 값의 기울기는 더한다: u = x y, L = u u + u (x=2, y=3).
   u는 세 곳(곱셈의 두 피연산자, 마지막 덧셈)에 쓰이므로 dL/du = 6 + 6 + 1 = 13, dL/dx = 13 y = 39,
   dL/dy = 13 x = 26. 한 경로의 기여로 덮어쓰면 이 값이 사라진다. 시작 기울기를 2로 주면 모두 두 배.
2. Affine(선형 변환) Y = X W + b: X (1, 2), W (2, 3), b (3,). L = sum(Y)이면 G = dL/dY = 1이고
   dW = X^T G = [[1,1,1],[2,2,2]], db = G의 배치 합 = [1,1,1], dX = G W^T = [[0.9, 1.2]].
   X를 Variable이 아닌 ndarray로 넘기면 상수(데이터)로 보고 dX를 계산하지도 저장하지도 않는다.
3. ReLU는 forward에서 x <= 0 이던 자리의 기울기를 0으로: 입력 [0.8, -0.5, 1.2], 위쪽 기울기
   [0.3, 0.7, 0.1] -> [0.3, 0, 0.1].
4. 작은 2층 신경망 (x = [1, 0.5, -0.3], 정답 클래스 1): 손실 0.787192, dz2 = p - onehot = [0.544879,
   -0.544879], dW1 = outer(x, dz1). 중앙 차분으로 dW1을 검산한다.
5. 기울기 폭주와 소실: 두 좌표에 1.5, 0.5를 곱하는 대각 행렬 층 a와 0.5, 1.5를 곱하는 층 b.
   출력 기울기 [1, 0]을 a만 10개 거슬러 보내면 1.5^10 = 57.665039062, a와 b를 번갈아 10개면
   0.75^5 = 0.237304688. 층마다의 최대 확대율(최대 특이값) 곱 1.5^10은 두 경우에 같다: 상한이
   같아도 실제 기울기는 방향에 따라 크게 다르다.

출력에서 볼 것: 위의 숫자들이 그대로 나온다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.utils import numerical_grad


def shared_value():
    x, y = Variable(np.array(2.0)), Variable(np.array(3.0))
    u = x * y
    loss = u * u + u
    u.retain_grad()  # 중간 변수 u의 기울기도 남긴다
    loss.backward()
    print(f'u = {float(u.data):.1f}, L = {float(loss.data):.1f}')
    du, dx, dy = (float(v.grad.data) for v in (u, x, y))
    print(f'dL/du = {du:.1f}, dL/dx = {dx:.1f}, dL/dy = {dy:.1f}')

    def objective(a, b):
        p = a * b
        return p * p + p
    nx = numerical_grad(lambda v: objective(v, 3.0), np.array(2.0))
    ny = numerical_grad(lambda v: objective(2.0, v), np.array(3.0))
    print(f'중앙 차분: dL/dx = {float(nx):.6f}, dL/dy = {float(ny):.6f}')

    x.cleargrad()
    y.cleargrad()
    loss.grad = Variable(np.array(2.0))  # 씨앗 기울기(seed)를 2로
    loss.backward()
    print(f'씨앗 기울기 = 2: dL/dx = {float(x.grad.data):.1f}, '
          f'dL/dy = {float(y.grad.data):.1f}')


def affine():
    X = Variable(np.array([[1.0, 2.0]]))
    W = Variable(np.array([[0.3, 0.5, 0.1], [0.2, 0.4, 0.6]]))
    b = Variable(np.array([0.1, 0.0, -0.1]))
    Y = F.linear(X, W, b)
    F.sum(Y).backward()
    print('Y  =', np.round(Y.data, 6).tolist())
    print('dW =', np.round(W.grad.data, 6).tolist())
    print('db =', np.round(b.grad.data, 6).tolist(),
          ' dX =', np.round(X.grad.data, 6).tolist())
    W.cleargrad()
    F.sum(F.linear(X.data, W, b)).backward()  # X를 ndarray(데이터)로 넘기면
    print('X를 ndarray로 넘기면: dW =', np.round(W.grad.data, 6).tolist(),
          '(같다)')
    print('  X에는 기울기를 두지 않는다')


def relu_mask():
    x = Variable(np.array([0.8, -0.5, 1.2]))
    y = F.relu(x)
    y.grad = Variable(np.array([0.3, 0.7, 0.1]))
    y.backward()
    print('relu([0.8, -0.5, 1.2]) =', y.data.tolist())
    print('위쪽 기울기 [0.3, 0.7, 0.1] -> x.grad =', x.grad.data.tolist())


def two_layer_network():
    x = np.array([[1.0, 0.5, -0.3]])
    t = np.array([1])
    W1 = Variable(np.array([[0.2, 0.4], [0.3, -0.1], [0.1, 0.5]]), name='W1')
    b1 = Variable(np.array([0.1, -0.1]), name='b1')
    W2 = Variable(np.array([[0.3, -0.2], [0.1, 0.4]]), name='W2')
    b2 = Variable(np.array([0.0, 0.0]), name='b2')

    def loss_of(W1_data):
        z1 = F.linear(x, W1_data, b1)
        a1 = F.relu(z1)
        z2 = F.linear(a1, W2, b2)
        return z1, a1, z2, F.softmax_cross_entropy(z2, t)

    z1, a1, z2, loss = loss_of(W1)
    for v in (z1, a1, z2):
        v.retain_grad()
    loss.backward()
    p = F.softmax(z2).data
    print('z1 =', np.round(z1.data, 6).tolist(), ' a1 =', np.round(a1.data, 6).tolist(),
          ' z2 =', np.round(z2.data, 6).tolist())
    print('p  =', np.round(p, 6).tolist(), f' loss = {float(loss.data):.6f}')
    print('dz2 =', np.round(z2.grad.data, 6).tolist())
    print('da1 =', np.round(a1.grad.data, 6).tolist(),
          ' dz1 =', np.round(z1.grad.data, 6).tolist())
    print('dW1 =', np.round(W1.grad.data, 6).tolist())
    numeric = numerical_grad(lambda w: loss_of(w)[3], W1.data, eps=1e-5)
    close = bool(np.abs(numeric - W1.grad.data).max() < 1e-8)
    print(f'중앙 차분과 dW1의 최대 차이 < 1e-8: {close}')


def diagonal_layers():
    a, b = np.diag([1.5, 0.5]), np.diag([0.5, 1.5])
    for name, layers in (('a 10개 (같은 방향을 계속 키운다)', [a] * 10),
                         ('a, b 번갈아 10개', [a, b] * 5)):
        x = Variable(np.zeros((1, 2)))
        h = x
        for D in layers:
            h = h @ D  # 행벡터 표기: h_l = h_{l-1} D_l
        h.grad = Variable(np.array([[1.0, 0.0]]))  # 출력 쪽 기울기
        h.backward()
        g = x.grad.data[0]
        # 층별 최대 특이값의 곱
        bound = np.prod([np.linalg.norm(D, 2) for D in layers])
        print(f'{name}:')
        print(f'  입력 쪽 기울기 {np.round(g, 9).tolist()}, 노름 {np.linalg.norm(g):.9f}, '
              f'상한 {bound:.9f}')


if __name__ == '__main__':
    print('1. 공유한 값의 기울기 누적')
    shared_value()
    print('\n2. Affine')
    affine()
    print('\n3. ReLU 마스크')
    relu_mask()
    print('\n4. 2층 신경망')
    two_layer_network()
    print('\n5. 기울기 폭주와 소실 (대각 행렬 층 10개)')
    diagonal_layers()
