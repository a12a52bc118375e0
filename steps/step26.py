"""26단계: 계산 그래프 시각화 (2) -- 변수에서 DOT 텍스트를 자동으로

25단계에서는 DOT을 손으로 적었다. 변수는 creator로, 함수는 inputs/outputs로 서로를 가리키므로
출력 변수 하나에서 거꾸로 따라가면 그래프 전체를 DOT으로 옮길 수 있다. 이 단계에서 그 함수
get_dot_graph를 mydezero/utils.py에 직접 쓰고(새 파일), 기준 패키지의 것과 같은 그래프를 적는지 확인한다.

    dot_var(v)    변수 노드 한 줄:  3 [label="x0: () float64", color=orange, style=filled]
    dot_func(f)   함수 노드 한 줄과, 입력 -> 함수, 함수 -> 출력 화살표

따라가는 방법은 역전파와 같다: 출력의 creator에서 시작해 함수를 꺼내고, 그 입력의 creator를
목록에 넣는다. 다른 점은 순서가 상관없다는 것(그림은 배치를 Graphviz가 정한다)과, 한 번 적은
함수/변수를 다시 적지 않도록 기억해 두는 것이다. 노드 번호는 처음 만난 순서로 1, 2, 3, ...을
매긴다(id(v)를 그대로 쓰면 실행할 때마다 텍스트가 달라진다).

    from mydezero.utils import get_dot_graph, plot_dot_graph
    text = get_dot_graph(y, verbose=True)            # DOT 텍스트 (문자열)
    # 그림 파일 (+ 같은 이름의 y.dot, dot 프로그램 필요)
    plot_dot_graph(y, verbose=True, to_file='y.png')

verbose=True이면 변수 라벨에 "이름: shape dtype"이 붙는다. 같은 변수가 두 번 쓰여도 노드 줄은 하나이고
화살표만 두 개다. DeZero는 같은 번호(id)의 노드 줄을 만날 때마다 다시 적었다(DeZero 이슈 #49):
Graphviz는 같은 번호를 한 노드로 그리므로 그림은 같고, 중복되는 것은 DOT 텍스트뿐이다.
2 * x 처럼 파이썬 수와 계산하면 mydezero에서는 2도 변수 노드가 된다(기준 패키지 dezero_kr는 상수를
함수 안에 담아 MulConstant 상자 하나로 그린다). 그래서 라벨을 맞춰 보는 것은 상수가 없는 식으로 한다.

출력에서 볼 것
* 작은 식 y = x0 * x1 + exp(x0)에 대해 get_dot_graph가 적은 DOT 텍스트: x0은 노드 하나,
  화살표 두 개(Mul, Exp로)
* mydezero와 기준 패키지의 get_dot_graph가 같은 노드 라벨과 같은 화살표(라벨 쌍)를 적는다.
* 24단계 goldstein 함수의 그래프 크기. 그림은 step26_goldstein.svg(.dot)로 저장한다.
"""
import re
from collections import Counter

import numpy as np

import dezero_kr
import dezero_kr.functions as RF
from dezero_kr.utils import get_dot_graph as reference_dot_graph
from mydezero.core_simple import Variable, exp
from mydezero.utils import get_dot_graph

from _common import graph_size, save_graph


def goldstein(x, y):
    """24단계의 Goldstein-Price 함수 (그래프가 큰 예)."""
    a = 1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x ** 2 - 14 * y + 6 * x * y
                                + 3 * y ** 2)
    b = 30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x ** 2 + 48 * y
                                     - 36 * x * y + 27 * y ** 2)
    return a * b


def structure(dot_text):
    """DOT 텍스트의 노드 라벨들과 화살표의 (라벨, 라벨) 쌍들을 센다.

    노드 번호와 줄 순서는 무시한다: 같은 그래프면 같은 결과.
    """
    labels = dict(re.findall(r'^(\d+) \[label="([^"]*)"', dot_text, re.M))
    edges = re.findall(r'^(\d+) -> (\d+)$', dot_text, re.M)
    arrows = Counter((labels[a], labels[b]) for a, b in edges)
    return Counter(labels.values()), arrows


def small_example(variable, exp):
    """y = x0 * x1 + exp(x0) (variable, exp: 어느 패키지의 것이든)."""
    x0 = variable(np.array(1.0), name='x0')
    x1 = variable(np.array(2.0), name='x1')
    y = x0 * x1 + exp(x0)
    y.name = 'y'
    return y


def same_as_reference(verbose):
    """mydezero의 DOT과 dezero_kr.utils.get_dot_graph의 DOT이 같은 그래프인지 확인한다."""
    mine = structure(get_dot_graph(small_example(Variable, exp), verbose))
    ref_y = small_example(dezero_kr.Variable, RF.exp)
    ref = structure(reference_dot_graph(ref_y, verbose=verbose))
    assert mine == ref, (mine, ref)
    return sum(mine[0].values()), sum(mine[1].values())


if __name__ == '__main__':
    y = small_example(Variable, exp)
    print('y = x0 * x1 + exp(x0): mydezero.utils.get_dot_graph의 DOT 텍스트')
    print(get_dot_graph(y, verbose=True))
    n_nodes, n_edges = same_as_reference(verbose=True)
    print(f'노드 {n_nodes}개, 화살표 {n_edges}개: dezero_kr의 get_dot_graph와 '
          f'라벨과 화살표가 같다')

    x = Variable(np.array(1.0), name='x')
    yy = Variable(np.array(1.0), name='y')  # goldstein(x, y)의 두 번째 입력
    z = goldstein(x, yy)
    z.name = 'z'
    n_funcs, n_vars = graph_size(z)
    labels, arrows = structure(get_dot_graph(z, verbose=False))
    n_nodes, n_edges = sum(labels.values()), sum(arrows.values())
    print(f'\ngoldstein(x, y): 함수 {n_funcs}개, 변수 {n_vars}개 (상수 포함), '
          f'노드 {n_nodes}개, 화살표 {n_edges}개')
    print('  노드 = 함수 + 변수: 같은 변수가 여러 번 쓰여도 노드는 하나')
    save_graph(z, 'step26_goldstein.svg', verbose=False)
