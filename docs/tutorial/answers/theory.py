"""더 깊이(theory.md) 연습 문제의 정답. docs/tutorial/theory.md에 접혀서 보인다.

문제마다 스텁(``python steps/check.py theory.N --stub``)이 요구하는 이름을 정의한다.
확인 코드는 steps/exercises/theory.py 한 곳에 있다(tests/test_exercises.py).
"""
import numpy as np


# --- 문제 1 -------------------------------------------------------------------
def lecun_std(n):
    """Var(z) = n Var(W) E[h^2]에서 E[h^2] = Var(z)이면 n Var(W) = 1: Var(W) =
    1/n."""
    return np.sqrt(1 / n)


def he_std(n):
    """ReLU는 음수 절반을 0으로 만들어 E[h^2] = Var(z)/2: n Var(W) / 2 = 1,
    Var(W) = 2/n."""
    return np.sqrt(2 / n)


def glorot_std(n_in, n_out):
    """순전파는 n_in Var(W) = 1, 역전파(W의 전치를 곱한다)는 n_out Var(W) = 1을
    원한다. 둘을 다 맞출 수는 없으니 가운데: Var(W) = 2 / (n_in + n_out)."""
    return np.sqrt(2 / (n_in + n_out))


# z가 0에 대해 대칭이므로 E[relu(z)^2] = E[z^2; z > 0] = E[z^2] / 2 = 1/2.
relu_second_moment = 0.5


# --- 문제 2 -------------------------------------------------------------------
def sigmoid_slope(z):
    """s = 1 / (1 + e^-z)이면 ds/dz = e^-z / (1 + e^-z)^2 = s (1 - s). z = 0에서
    최대 1/4."""
    s = 1 / (1 + np.exp(-z))
    return s * (1 - s)


def chain_grad(zs, ws):
    """연쇄 법칙: dh_(k+1)/dh_k = sigmoid'(z_k) w_k, 층마다 곱한다."""
    return float(np.prod([w * sigmoid_slope(z) for z, w in zip(zs, ws)]))


# w = 1이면 층마다 sigmoid'(z_k) <= 1/4이고, 모든 z_k = 0일 때 같아진다:
# 0.25^10.
best_ten_layers = 0.25 ** 10


# --- 문제 3 -------------------------------------------------------------------
def residual_grad(x0, a, n):
    """블록마다 1 + a (1 - tanh(h)^2)를 곱한다. 순전파를 따라가며 h_k를 구해야
    한다.

    a가 작으면 인수가 1 근처라 곱이 무너지지 않는다(잔차 연결이 기울기를 나르는
    이유)."""
    h, grad = x0, 1.0
    for _ in range(n):
        grad *= 1 + a * (1 - np.tanh(h) ** 2)
        h = h + a * np.tanh(h)
    return grad


# x = 0에서 블록의 미분은 1 + a: a = -1이면 0 (F(x) = -tanh(x)는 0 근처에서 -x와
# 같다).
cancel_a = -1.0


# --- 문제 4 -------------------------------------------------------------------
def build_topo(root):
    """깊이 우선 후위 순회: 자식을 모두 목록에 넣은 뒤에 자신을 넣는다.

    visited가 없으면 두 곳에서 쓰인 노드(위 예의 a)가 두 번 들어가고, 역전파에서
    기울기가 두 번 전해진다. 재귀라서 아주 깊은 그래프(파이썬의 재귀 한도, 약
    1000) 에서는 멈춘다: dezero_kr는 그래서 세대(generation)와 반복문을 쓴다."""
    topo, visited = [], set()

    def visit(v):
        if id(v) not in visited:
            visited.add(id(v))
            for child in v.children:
                visit(child)
            topo.append(v)

    visit(root)
    return topo
