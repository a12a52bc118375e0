"""35단계: 고차 미분의 계산 그래프 -- tanh의 n차 미분을 그림으로

tanh(x) = (e^x - e^-x) / (e^x + e^-x) 는 미분이 다시 tanh로 적힌다: t = tanh(x)이면
tanh' = 1 - t^2. 그래서 n차 미분은 t의 다항식 P_n(t)이고, 다음 규칙으로 정답을 만들 수 있다.

    P_0(t) = t,   P_{n+1}(t) = P_n'(t) * (1 - t^2)
        (연쇄 법칙: d/dx P(t) = P'(t) * dt/dx)

이 단계에서 mydezero/functions.py에 더하는 Tanh의 backward는 입력 x가 아니라 출력 y를 쓴다: gy * (1
- y * y). 출력은 약한 참조(17단계)로 들고 있으므로 self.outputs[0]()으로 꺼낸다. 이것도 Variable
연산이라 몇 번이든 다시 미분된다.

자동 미분으로 n차 미분을 구하면 그 계산 그래프가 n이 늘 때마다 약 2.5~3배씩 커진다. n차 미분의
그래프를 보려면(DeZero issue #37) 매번 y.backward(create_graph=True)를 부르고 y = x.grad로
바꿔 가며 n번 반복한 뒤 마지막 x.grad를 그리면 된다. 앞 차수의 그래프는 다음 차수 그래프의
일부로 남는다(그 위에 기울기 계산이 덧붙는다).

그림: 현재 폴더에 step35_tanh_grad4.svg (+ .dot)를 저장한다 (4차 미분, 함수 51개). 다른 차수를 보려면
`python step35.py 5` 처럼 차수를 준다. 6차 이상은 노드가 수백 개라 Graphviz 배치에 수십 초가
걸리니 svg가 낫고, 8차는 노드가 5천 개를 넘는다. step35_tanh_derivatives.png는 tanh와 그 1~3차
미분의 곡선이다(matplotlib이 있으면).

출력에서 볼 것
* 차수마다 그래프 크기(함수/변수 개수)가 빠르게 커지는 것
* x = 1에서 자동 미분 값과 다항식 P_n(tanh(1)) 값이 같다는 것
* mydezero의 Tanh로 구한 8차까지의 값과 함수 개수가 기준 패키지 dezero_kr와 같다는 것 (변수 개수는
  다르다: mydezero는 1 - y * y의 1 같은 파이썬 수도 변수 노드로 둔다)
"""
import sys

import numpy as np
from numpy.polynomial import polynomial as P

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
import mydezero.functions as F
from mydezero import Variable

from _common import graph_size, save_figure, save_graph


def nth_derivatives(tanh, variable, x0, n):
    """tanh의 1~n차 미분을 x0에서: [(값, 함수 개수, 변수 개수), ...].
    tanh, variable: 쓸 함수와 Variable 클래스 (mydezero 또는 기준 패키지의 것)."""
    x = variable(np.array(x0))
    y = tanh(x)
    found = []
    for _ in range(n):
        x.cleargrad()
        y.backward(create_graph=True)
        y = x.grad
        found.append((float(y.data),) + graph_size(y))
    x.cleargrad()
    return found


def draw_tanh(ax):
    xs = np.linspace(-4, 4, 200)
    x = Variable(xs)
    y = F.tanh(x)
    ax.plot(xs, y.data, linewidth=2, label='tanh(x)')
    for order in range(1, 4):
        x.cleargrad()
        y.backward(create_graph=True)
        y = x.grad
        ax.plot(xs, y.data, label=f'{order}차 미분')
    ax.set_xlabel('x')
    ax.legend(loc='lower right', fontsize='small')


def tanh_derivative_polys(n):
    """[P_0, ..., P_n]: t의 다항식 계수(낮은 차수부터)."""
    polys = [np.array([0.0, 1.0])]  # P_0(t) = t
    one_minus_t2 = np.array([1.0, 0.0, -1.0])
    for _ in range(n):
        polys.append(P.polymul(P.polyder(polys[-1]), one_minus_t2))
    return polys


if __name__ == '__main__':
    order_to_draw = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    max_order = max(8, order_to_draw)
    polys = tanh_derivative_polys(max_order)
    t1 = np.tanh(1.0)

    x = Variable(np.array(1.0), name='x')
    y = F.tanh(x)
    print(' n  함수 개수  변수 개수   자동 미분 값      다항식 P_n(tanh 1)')
    for n in range(1, max_order + 1):
        x.cleargrad()
        y.backward(create_graph=True)
        y = x.grad  # n차 미분: 그 뒤에 n차까지의 계산 전체가 달려 있다
        n_funcs, n_vars = graph_size(y)
        exact = P.polyval(t1, polys[n])
        print(f'{n:2d}  {n_funcs:8d}  {n_vars:8d}  {float(y.data):16.9f}  '
              f'{exact:16.9f}')
        if n == order_to_draw:
            y.name = f'{n}차 미분'
            save_graph(y, f'step35_tanh_grad{n}.svg', verbose=False)

    mine = nth_derivatives(F.tanh, Variable, 1.0, 8)
    ref = nth_derivatives(RF.tanh, dezero_kr.Variable, 1.0, 8)
    assert [m[1] for m in mine] == [r[1] for r in ref], (mine, ref)  # 함수 개수
    np.testing.assert_allclose([m[0] for m in mine], [r[0] for r in ref], rtol=1e-13)
    print('직접 만든 Tanh: 8차까지 값과 함수 개수가 dezero_kr와 같다')
    save_figure(draw_tanh, 'step35_tanh_derivatives.png')
