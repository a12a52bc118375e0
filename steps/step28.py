"""28단계: 함수 최적화 -- 로젠브록 함수를 경사 하강법으로

    rosenbrock(x0, x1) = 100 (x1 - x0^2)^2 + (1 - x0)^2     최솟값 0, 위치 (1, 1)

바나나 모양의 좁고 휜 골짜기 바닥에 최솟값이 있어서 경사 하강법이 느리게 수렴하는 것으로 유명한
함수다. 기울기는 가장 가파르게 올라가는 방향이므로, 그 반대로 조금씩(학습률 lr) 움직인다.

    x <- x - lr * dy/dx

여기서는 책처럼 mydezero.core_simple(23단계)을 쓴다: x.grad가 Variable이 아니라 NumPy
ndarray라서 `x0.data -= lr * x0.grad` 처럼 배열끼리 바로 계산할 수 있다. 반복마다 기울기를 지워야
한다(cleargrad). 지우지 않으면 backward가 기울기를 이전 값에 더한다(누적).

반복 횟수: DEZERO_KR_FAST=1(테스트)이면 1,000회로 골짜기 안쪽까지만 간다. 그냥 실행하면 책처럼
50,000회로 (1, 1)에 도착한다 (2코어 컴퓨터에서 약 10초).

그림: step28_rosenbrock_gd.png -- 등고선 위에 경사 하강법이 지나간 길. 처음 몇 걸음은 가파른 벽을
따라 골짜기로 뚝 떨어지고, 그다음에는 골짜기 바닥을 따라 (1, 1)까지 아주 천천히 기어간다.
(matplotlib이 있으면 그린다. 33단계는 같은 그림에 뉴턴 방법의 길을 겹친다.)

출력에서 볼 것
* 시작점 (0, 2)에서의 기울기 (-2, 400): x1 방향이 훨씬 가파르다.
* 반복이 진행되며 (x0, x1)이 (1, 1)로 다가가고 y가 0으로 줄어드는 모습. 초반에는 빠르고
  골짜기에 들어간 뒤에는 매우 느리다.
"""
import numpy as np

from mydezero.core_simple import Variable

from _common import FAST, save_figure


def rosenbrock(x0, x1):
    return 100 * (x1 - x0 ** 2) ** 2 + (1 - x0) ** 2


def gradient_descent(start, lr, iters, report_every=None):
    """start에서 경사 하강법을 iters회 돈다.

    지나간 점들 [(x0, x1), ...]을 돌려준다.
    """
    x0, x1 = Variable(np.array(start[0])), Variable(np.array(start[1]))
    path = []
    for i in range(iters + 1):
        path.append((float(x0.data), float(x1.data)))
        x0.cleargrad()
        x1.cleargrad()
        y = rosenbrock(x0, x1)
        if report_every and i % report_every == 0:
            a, b = float(x0.data), float(x1.data)
            y_now = float(y.data)
            print(f'  {i:6d}회: x0 = {a:.6f}  x1 = {b:.6f}  y = {y_now:.4e}')
        if i == iters:
            break
        y.backward()
        x0.data -= lr * x0.grad
        x1.data -= lr * x1.grad
    return path


def draw_paths(ax, paths):
    """로젠브록 함수의 등고선(로그 간격) 위에 paths = {이름: [(x0, x1), ...]}를 그린다."""
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


if __name__ == '__main__':
    x0 = Variable(np.array(0.0))
    x1 = Variable(np.array(2.0))
    y = rosenbrock(x0, x1)
    y.backward()
    print(f'시작점 (0, 2): y = {float(y.data)}, 기울기 = ({x0.grad}, {x1.grad}), '
          f'기울기의 타입 = {type(x0.grad).__name__}')

    lr = 0.001
    iters = 1000 if FAST else 50000
    print(f'\n경사 하강법: lr = {lr}, 반복 {iters}회')
    path = gradient_descent((0.0, 2.0), lr, iters, report_every=iters // 10)
    save_figure(lambda ax: draw_paths(ax, {'경사 하강법': path}),
                'step28_rosenbrock_gd.png')
