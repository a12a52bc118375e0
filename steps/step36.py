"""36단계: 고차 미분의 쓰임 -- 기울기가 들어간 식을 다시 미분하기 (double backprop)

create_graph=True로 얻은 기울기는 그 자체가 계산 그래프가 달린 Variable이므로, 다른 식의
재료로 쓸 수 있다. 그 식을 역전파하면 "기울기를 포함한 식"의 기울기를 얻는다. 이것이 double
backpropagation이고, 2차 미분을 구하는 것보다 쓰임이 넓다.

1. 기울기가 들어간 식: y = x^2, gx = dy/dx = 2x, z = gx^3 + y -> dz/dx = 24x^2 + 2x (x=2에서 100)
2. 헤세 행렬-벡터 곱(Hessian-vector product): 헤세 행렬 H 전체를 만들지 않고 Hv만 구한다.
   Hv = d/dx (grad f(x) . v) 이므로 기울기와 v의 내적을 한 번 더 역전파하면 된다.
   뉴턴 방법의 변형(켤레 기울기법으로 Hd = -g 풀기)이나 곡률 분석에 쓰인다.
3. 기울기 벌점(gradient penalty): 손실에 ||df/dx||^2 을 넣어 입력에 대한 민감도를 줄인다
   (WGAN-GP, 입력 기울기 정규화). 매개변수 w로 이 항을 미분하려면 "x에 대한 기울기"를 w로
   다시 미분해야 한다.

출력에서 볼 것
* 1: dz/dx = 100
* 2: f(x0, x1) = x0^2 x1 + x1^3, x = (1, 2), v = (1, -1): 손으로 구한 H = [[4, 2], [2, 12]]로
  계산한
  Hv = [2, -10]과 double backprop 결과가 같다.
* 3: f = tanh(w x), 벌점 p(w) = (df/dx)^2 의 dp/dw를 double backprop과 중앙 차분으로 비교
"""
import numpy as np

import mydezero.functions as F
from mydezero import Variable


def gradient_in_expression():
    x = Variable(np.array(2.0), name='x')
    y = x ** 2
    y.backward(create_graph=True)
    gx = x.grad
    x.cleargrad()
    z = gx ** 3 + y
    z.backward()
    return float(x.grad.data)


def hessian_vector_product(f, point, v):
    """f(x0, x1)의 헤세 행렬 H와 상수 벡터 v의 곱 Hv를 double backprop으로."""
    x0, x1 = Variable(np.array(point[0])), Variable(np.array(point[1]))
    y = f(x0, x1)
    y.backward(create_graph=True)
    g0, g1 = x0.grad, x1.grad
    x0.cleargrad()
    x1.cleargrad()
    (g0 * v[0] + g1 * v[1]).backward()  # d/dx (g . v) = H v   (v는 상수)
    return np.array([float(x0.grad.data), float(x1.grad.data)])


def penalty(w, x):
    """p(w) = (df/dx)^2, f = tanh(w x).

    df/dx는 그래프를 남긴 역전파로 구한다.
    """
    y = F.tanh(w * x)
    y.backward(create_graph=True)
    gx = x.grad
    return gx ** 2


if __name__ == '__main__':
    print('1. z = (dy/dx)^3 + y, y = x^2, x = 2:  dz/dx =', gradient_in_expression())

    def f(x0, x1):
        return x0 ** 2 * x1 + x1 ** 3

    x0, v = np.array([1.0, 2.0]), np.array([1.0, -1.0])
    H = np.array([[2 * x0[1], 2 * x0[0]], [2 * x0[0], 6 * x0[1]]])  # 손으로 구한 헤세 행렬
    print('2. 헤세 행렬-벡터 곱: double backprop Hv =', hessian_vector_product(f, x0, v))
    print('   손으로 구한 H @ v =', H @ v)

    w = Variable(np.array(1.5), name='w')
    x = Variable(np.array(0.5), name='x')
    p = penalty(w, x)
    w.cleargrad()  # 첫 backward가 w에도 df/dw를 남겼다: 지우고 벌점만 미분한다
    p.backward()

    def p_numpy(w_value, x_value=0.5):  # 같은 p를 식으로: (w (1 - tanh(w x)^2))^2
        return (w_value * (1 - np.tanh(w_value * x_value) ** 2)) ** 2

    h = 1e-6
    numeric = (p_numpy(1.5 + h) - p_numpy(1.5 - h)) / (2 * h)
    print(f'3. 기울기 벌점 p(w) = (df/dx)^2 = {float(p.data):.6f}')
    print(f'   dp/dw: double backprop {float(w.grad.data):.6f}, 중앙 차분 {numeric:.6f}')
