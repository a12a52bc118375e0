"""29단계: 뉴턴 방법 -- 2차 미분을 손으로 적어서

경사 하강법은 기울기만 보고 "얼마나" 갈지는 학습률 lr에 맡긴다. 뉴턴 방법은 현재 점 근처를
2차 함수(테일러 급수 2차 항까지)로 근사하고 그 포물선의 꼭짓점으로 바로 뛴다.

    f(x) ~ f(a) + f'(a)(x - a) + f''(a)(x - a)^2 / 2   ->  꼭짓점: x = a - f'(a) / f''(a)

즉 lr 자리에 1 / f''(a)가 들어간 경사 하강법이다. 예제 함수와 그 미분:

    f(x) = x^4 - 2x^2,   f'(x) = 4x^3 - 4x,   f''(x) = 12x^2 - 4     (최솟값 x = 1, -1)

1차 미분은 역전파로 구하지만, 2차 미분은 아직 자동으로 구할 수 없어서 gx2 함수로 손으로 적는다.
(33단계에서 이것도 자동으로 구한다.) 28단계처럼 core_simple(기울기가 ndarray)을 쓴다.

그림: step29_newton_vs_gd.png -- 반복마다 1까지의 거리 |x - 1|(로그 눈금). 경사 하강법은 거의
직선(매번 같은 비율로 줄어드는 1차 수렴), 뉴턴 방법은 아래로 꺾여 떨어진다(2차 수렴).

출력에서 볼 것
* 뉴턴 방법: x=2에서 출발해 일곱 번 갱신하면 소수 열다섯째 자리까지 1이 된다
  (2차 수렴: 1에 가까워진 뒤에는 맞는 자릿수가 매번 약 두 배로 는다).
* 같은 출발점에서 경사 하강법(lr=0.01)은 |x - 1| < 1e-10이 되기까지 훨씬 많이 반복한다.
"""
import numpy as np

from mydezero.core_simple import Variable

from _common import save_figure


def f(x):
    return x ** 4 - 2 * x ** 2


def gx2(x):
    """f''(x)를 손으로 미분해 적은 것 (x는 ndarray)."""
    return 12 * x ** 2 - 4


def newton(x0, iters):
    """뉴턴 방법을 iters회. 지나간 x들을 출력하고 리스트로 돌려준다."""
    x = Variable(np.array(x0))
    xs = []
    for i in range(iters):
        print(f'  {i}회: x = {float(x.data):.15f}')
        xs.append(float(x.data))
        x.cleargrad()
        y = f(x)
        y.backward()
        x.data -= x.grad / gx2(x.data)
    return xs


def gradient_descent(x0, lr, tol=1e-10, max_iters=100000):
    """|x - 1| < tol 이 될 때까지 경사 하강법. 지나간 x들을 돌려준다 (반복 횟수 = 길이 - 1)."""
    x = Variable(np.array(x0))
    xs = [float(x.data)]
    while abs(xs[-1] - 1.0) >= tol and len(xs) <= max_iters:
        x.cleargrad()
        y = f(x)
        y.backward()
        x.data -= lr * x.grad
        xs.append(float(x.data))
    return xs


def draw_distances(ax, runs):
    """runs = {이름: [x0, x1, ...]}의 |x - 1|을 반복 횟수에 대해 로그 눈금으로 그린다."""
    for (label, xs), style in zip(runs.items(), ('o-', '.-')):
        distance = np.maximum(np.abs(np.array(xs) - 1.0), 1e-16)  # 0은 로그 눈금에 못 그린다
        ax.semilogy(distance, style, markersize=4, label=f'{label} ({len(xs) - 1}회)')
    ax.set_xlabel('반복 횟수')
    ax.set_ylabel('|x - 1|')
    ax.set_title('f(x) = x⁴ - 2x², x = 2에서 출발')  # $...$ 안팎을 섞으면 한글이 깨진다
    ax.legend(loc='upper right', fontsize='small')


if __name__ == '__main__':
    print('뉴턴 방법 (x0 = 2):')
    newton_xs = newton(2.0, 8)
    descent_xs = gradient_descent(2.0, lr=0.01)
    print('경사 하강법 (x0 = 2, lr = 0.01): |x - 1| < 1e-10 까지',
          len(descent_xs) - 1, '회')
    runs = {'뉴턴 방법': newton_xs, '경사 하강법 (lr = 0.01)': descent_xs}
    save_figure(lambda ax: draw_distances(ax, runs), 'step29_newton_vs_gd.png')
