"""27단계: 테일러 급수로 sin 미분하기

sin을 x=0 근처에서 다항식으로 펼친 것이 매클로린 급수(x=0에서의 테일러 급수)다.

    sin(x) = x - x^3/3! + x^5/5! - ... = sum_{i>=0} (-1)^i x^(2i+1) / (2i+1)!

my_sin은 이 합을 항의 크기가 threshold보다 작아질 때까지 더한다. 덧셈/곱셈/거듭제곱만 쓴
평범한 파이썬 반복문이지만, 매 항이 계산 그래프에 기록되므로 y.backward()가 미분
cos(x)를 근사한다. 반복문, if 문도 그대로 미분된다는 것이 define-by-run의 장점이다.
threshold를 작게 하면 항이 늘어 정확해지고 그래프도 커진다.

그림: 현재 폴더에 step27_my_sin_1e-4.svg (+ .dot)를 저장한다. 항 하나가 "Pow -> Mul -> Add"
한 덩어리로 반복되는 것이 보인다(계수 c는 상수 변수 노드로 Mul에 들어간다). threshold=1e-150의 그래프는 DOT 텍스트만
(step27_my_sin_1e-150.dot) 쓴다: x 하나에서 화살표 47개가 나가는 그래프는 배치 계산이 오래
걸려(dot으로 수 초) `dot -Tsvg step27_my_sin_1e-150.dot -o big.svg` 로 직접 그려 보기를 권한다.
step27_taylor.png는 항을 1, 2, 3, 4개 더한 다항식이 sin에 다가가는 모습이다(matplotlib이 있으면).

출력에서 볼 것
* x = pi/4 에서 F.sin(기준 패키지 dezero_kr의 정확한 sin)과 mydezero로 계산한 my_sin의 값/미분 비교:
  sin(pi/4) = cos(pi/4) = 0.7071067811865...
* threshold가 작아질수록 쓰인 항 수, 그래프 크기(함수/변수 개수), 오차
"""
import math

import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지: 정확한 sin과 비교한다
from mydezero.core_simple import Variable

from _common import graph_size, save_figure, save_graph


def my_sin(x, threshold=1e-4):
    """sin(x)의 매클로린 급수를 |항| < threshold 가 될 때까지 더한다.

    (y, 쓴 항 수)를 돌려준다.
    """
    y = 0
    for i in range(100000):
        c = (-1) ** i / math.factorial(2 * i + 1)
        t = c * x ** (2 * i + 1)
        y = y + t
        if abs(t.data) < threshold:
            return y, i + 1
    return y, i + 1


def partial_sums(xs, n_terms):
    """xs(ndarray)에서 매클로린 급수의 앞 1, 2, ..., n_terms개 항의 합들 (그림용, NumPy로)."""
    total, sums = np.zeros_like(xs), []
    for i in range(n_terms):
        total = total + (-1) ** i * xs ** (2 * i + 1) / math.factorial(2 * i + 1)
        sums.append(total)
    return sums


def draw_taylor(ax):
    xs = np.linspace(-2 * np.pi, 2 * np.pi, 200)
    ax.plot(xs, np.sin(xs), color='black', linewidth=2, label='sin(x)')
    for i, ys in enumerate(partial_sums(xs, 4), 1):
        ax.plot(xs, ys, linestyle='--', label=f'항 {i}개')
    ax.set_ylim(-2, 2)
    ax.set_xlabel('x')
    ax.set_title('매클로린 급수: 항을 더할수록 sin에 가까워진다')
    ax.legend(loc='lower left', fontsize='small')


if __name__ == '__main__':
    x = dezero_kr.Variable(np.array(np.pi / 4), name='x')
    y = RF.sin(x)
    y.backward()
    exact_y, exact_gx = float(y.data), float(x.grad.data)
    print(f'F.sin: y = {exact_y:.15f}, dy/dx = {exact_gx:.15f}')

    for threshold in (1e-1, 1e-4, 1e-150):
        x = Variable(np.array(np.pi / 4), name='x')
        y, n_terms = my_sin(x, threshold)
        y.name = 'y'
        y.backward()
        n_funcs, n_vars = graph_size(y)
        print(f'my_sin(threshold={threshold:g}): 항 {n_terms}개, '
              f'함수 {n_funcs}개, 변수 {n_vars}개')
        print(f'  y = {float(y.data):.15f} (오차 {abs(float(y.data) - exact_y):.1e}), '
              f'dy/dx = {float(x.grad):.15f} '
              f'(오차 {abs(float(x.grad) - exact_gx):.1e})')
        if threshold == 1e-4:
            save_graph(y, 'step27_my_sin_1e-4.svg', verbose=False)
        elif threshold == 1e-150:
            save_graph(y, 'step27_my_sin_1e-150.dot', verbose=False)  # .dot이면 텍스트만 쓴다
    save_figure(draw_taylor, 'step27_taylor.png')
