"""33단계: 뉴턴 방법 -- 2차 미분도 자동으로

29단계의 뉴턴 방법 x <- x - f'(x) / f''(x) 에서 손으로 적었던 f''(x)를 32단계의 방법(기울기를
한 번 더 역전파)으로 바꾼다. 역전파는 mydezero의 y.backward(create_graph=True)다(30~31단계).
함수 f(x) = x^4 - 2x^2는 29단계와 같다(단계는 다른 단계를 import하지 않으므로 필요한 것을 다시 적는다).

    y = f(x)
    y.backward(create_graph=True)   # gx = f'(x), 기울기 그래프까지 기록
    gx = x.grad
    x.cleargrad()
    gx.backward()                   # x.grad = f''(x)
    x.data -= gx.data / x.grad.data

이제 f를 바꿔도 미분 식을 다시 손으로 유도할 필요가 없다. 여기서는 core_simple이 아니라 보통의
mydezero.Variable(core.py)을 쓴다(기울기가 Variable이어야 다시 미분할 수 있다).

변수가 여럿이면 2차 미분은 헤세 행렬 H(H[i][j] = d^2 f / dx_i dx_j)이고 뉴턴 방법은
x <- x - H^-1 g (g는 기울기 벡터)이다. 기울기의 성분 g_i를 하나씩 다시 역전파하면 H의 i행이 나온다.
28단계의 로젠브록 함수에 써 보면, 경사 하강법이 5만 번 걸린 길을 뉴턴 방법은 다섯 걸음에 간다.

    H = [[1200 x0^2 - 400 x1 + 2, -400 x0], [-400 x0, 200]]
        (시작점 (0, 2)에서 [[-798, 0], [0, 200]])

그림: step33_rosenbrock_newton.png -- 28단계의 등고선과 경사 하강법 길 위에 뉴턴 방법의 길.

출력에서 볼 것
* 29단계(손으로 적은 2차 미분)와 같은 x 값이 같은 순서로 나온다 (assert로 확인한다).
* 다른 함수 f(x) = exp(x) - 2x 에도 코드 수정 없이 쓸 수 있다: 최솟점 x = ln 2 = 0.693147...
  (뉴턴 방법은 f'(x) = 0 인 점을 찾는다. f''(x) < 0 인 곳에서 출발하면 최댓점 쪽으로 가거나
  발산할 수 있으니, 볼록한 곳에서 쓰는 것이 안전하다.)
* 로젠브록 함수: 자동으로 구한 헤세 행렬이 위 공식과 같고, 뉴턴 방법이 다섯 걸음 만에 (1, 1)에
  닿는다. 시작점의 H는 음의 고유값(-798)을 가져 첫 걸음은 엉뚱한 곳(x1 = 0)으로 가지만 곧 돌아온다.
"""
import numpy as np

import mydezero.functions as F
from mydezero import Variable

from _common import FAST, save_figure


def f(x):
    return x ** 4 - 2 * x ** 2  # 29단계와 같은 함수


def gx2(x):
    """f''(x)를 손으로 미분해 적은 것 (29단계, x는 ndarray). 자동으로 구한 값과 비교한다."""
    return 12 * x ** 2 - 4


def rosenbrock(x0, x1):
    return 100 * (x1 - x0 ** 2) ** 2 + (1 - x0) ** 2  # 28단계와 같은 함수


def newton(f, x0, iters, verbose=True):
    """f의 2차 미분을 자동으로 구하는 뉴턴 방법. 지나간 x들을 돌려준다."""
    x = Variable(np.array(x0))
    xs = []
    for i in range(iters):
        if verbose:
            print(f'  {i}회: x = {float(x.data):.15f}')
        xs.append(float(x.data))
        x.cleargrad()
        y = f(x)
        y.backward(create_graph=True)
        gx = x.grad
        x.cleargrad()
        gx.backward()
        x.data -= gx.data / x.grad.data
    return xs


def gradient_and_hessian(point):
    """로젠브록 함수의 기울기 g (2,)와 헤세 행렬 H (2, 2) (double backprop)."""
    x0, x1 = Variable(np.array(point[0])), Variable(np.array(point[1]))
    rosenbrock(x0, x1).backward(create_graph=True)
    g = [x0.grad, x1.grad]
    H = []
    for gi in g:  # g_i를 다시 역전파하면 (d g_i / dx0, d g_i / dx1) = H의 i행
        x0.cleargrad()
        x1.cleargrad()
        gi.backward()
        H.append([float(x0.grad.data), float(x1.grad.data)])
    return np.array([float(gi.data) for gi in g]), np.array(H)


def gradient_descent(start, lr, iters):
    """28단계의 경사 하강법 (그림의 비교용). 지나간 점들 [(x0, x1), ...]을 돌려준다.

    28단계는 core_simple(기울기가 ndarray)을 썼다. 여기의 Variable은 core.py의 것이므로 x0.grad.data다.
    """
    x0, x1 = Variable(np.array(start[0])), Variable(np.array(start[1]))
    path = [(float(x0.data), float(x1.data))]
    for _ in range(iters):
        x0.cleargrad()
        x1.cleargrad()
        rosenbrock(x0, x1).backward()
        x0.data -= lr * x0.grad.data
        x1.data -= lr * x1.grad.data
        path.append((float(x0.data), float(x1.data)))
    return path


def draw_paths(ax, paths):
    """28단계와 같은 그림: 로젠브록 함수의 등고선(로그 간격) 위에 paths = {이름: [(x0, x1), ...]}."""
    a, b = np.meshgrid(np.linspace(-2, 2, 200), np.linspace(-1, 3, 200))
    z = rosenbrock(a, b)  # ndarray를 넣으면 NumPy가 계산한다 (같은 식)
    ax.contour(a, b, z, levels=np.logspace(-1, 3.5, 12), colors='gray', linewidths=0.6)
    for (label, path), style in zip(paths.items(), ('o-', 's-')):
        # 점이 수만 개면 솎아서 표시한다: 움직임이 큰 앞쪽은 촘촘히, 뒤쪽은 드문드문 (로그 간격)
        shown = np.unique(np.geomspace(1, len(path), 80).astype(int) - 1)
        xs, ys = np.array(path)[shown].T
        ax.plot(xs, ys, style, markersize=3, label=f'{label} ({len(path) - 1}회)')
    ax.plot([1], [1], '*', color='red', markersize=12, label='최솟값 (1, 1)')
    ax.set_xlabel('$x_0$')
    ax.set_ylabel('$x_1$')
    ax.legend(loc='upper left', fontsize='small')


def newton_2d(start, iters):
    """x <- x - H^-1 g 를 iters회. 지나간 점들을 돌려준다."""
    point = np.array(start)
    path = [tuple(point)]
    for i in range(iters):
        g, H = gradient_and_hessian(point)
        point = point - np.linalg.solve(H, g)
        path.append(tuple(point))
        y = rosenbrock(point[0], point[1])
        print(f'  {i + 1}회: x0 = {point[0]:.6f}  x1 = {point[1]:.6f}  y = {y:.4e}')
    return path


if __name__ == '__main__':
    print('f(x) = x^4 - 2x^2, x0 = 2 (29단계와 같은 결과):')
    xs = newton(f, 2.0, 8)
    by_hand = [2.0]  # 29단계의 손으로 적은 f'', f'와 비교
    for _ in range(7):
        x = by_hand[-1]
        by_hand.append(x - (4 * x ** 3 - 4 * x) / gx2(x))
    np.testing.assert_allclose(xs, by_hand, rtol=1e-15)

    print('f(x) = exp(x) - 2x, x0 = 0:')
    xs = newton(lambda x: F.exp(x) - 2 * x, 0.0, 6)
    print(f'  ln 2  = {np.log(2.0):.15f}')

    g, H = gradient_and_hessian((0.0, 2.0))
    np.testing.assert_array_equal(H, [[-798.0, 0.0], [0.0, 200.0]])
    print(f'\n로젠브록 (0, 2): 기울기 {g.tolist()}, 헤세 행렬 {(H + 0.0).tolist()}')  # -0.0 -> 0.0
    print('뉴턴 방법 (헤세 행렬도 자동으로):')
    newton_path = newton_2d((0.0, 2.0), 6)
    descent_path = gradient_descent((0.0, 2.0), 0.001, 1000 if FAST else 50000)
    paths = {'경사 하강법 (lr = 0.001)': descent_path, '뉴턴 방법': newton_path}
    save_figure(lambda ax: draw_paths(ax, paths), 'step33_rosenbrock_newton.png')
