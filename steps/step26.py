"""26단계: 계산 그래프 시각화 (2) -- 변수에서 DOT 텍스트를 자동으로

25단계에서는 DOT을 손으로 적었다. 변수는 creator로, 함수는 inputs/outputs로 서로를 가리키므로
출력 변수 하나에서 거꾸로 따라가면 그래프 전체를 DOT으로 옮길 수 있다. 이 단계에서 그 함수
my_get_dot_graph를 직접 쓰고, 패키지의 것과 같은 그래프를 적는지 확인한다.

    dot_var(v)    변수 노드 한 줄:  3 [label="x0: () float64", color=orange, style=filled]
    dot_func(f)   함수 노드 한 줄과, 입력 -> 함수, 함수 -> 출력 화살표

따라가는 방법은 역전파와 같다: 출력의 creator에서 시작해 함수를 꺼내고, 그 입력의 creator를
목록에 넣는다. 다른 점은 순서가 상관없다는 것(그림은 배치를 Graphviz가 정한다)과, 한 번 적은
함수/변수를 다시 적지 않도록 기억해 두는 것이다. 노드 번호는 처음 만난 순서로 1, 2, 3, ...을
매긴다(id(v)를 그대로 쓰면 실행할 때마다 텍스트가 달라진다).

패키지의 같은 함수 (DeZero와 같은 자리, 정의는 dezero_kr.graph):

    from dezero_kr.utils import get_dot_graph, plot_dot_graph
    text = get_dot_graph(y, verbose=True)            # DOT 텍스트 (문자열)
    plot_dot_graph(y, verbose=True, to_file='y.png')  # 그림 파일 (+ 같은 이름의 y.dot)

verbose=True이면 변수 라벨에 "이름: shape dtype"이 붙는다. 같은 변수가 두 번 쓰여도 노드는 하나이고
화살표만 두 개다(DeZero는 노드를 중복해서 그렸다: ODL3#49). 2 * x 처럼 파이썬 수와 계산하면
상수는 변수 노드가 아니라 함수 안에 담긴다(MulConstant, AddConstant, RSubConstant 상자).

출력에서 볼 것
* 작은 식 y = x0 * x1 + sin(x0)에 대해 직접 만든 함수가 적은 DOT 텍스트: x0은 노드 하나,
  화살표 두 개(Mul, Sin으로)
* 직접 만든 것과 패키지의 get_dot_graph가 같은 노드 라벨과 같은 화살표(라벨 쌍)를 적는다.
* 24단계 goldstein 함수의 그래프 크기. 그림은 step26_goldstein.svg(.dot)로 저장한다.
"""
import re
from collections import Counter

import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.utils import get_dot_graph

from _common import graph_size, save_graph
from step24 import goldstein


def my_get_dot_graph(output, verbose=True):
    """output을 만든 계산 그래프를 DOT 텍스트로. 노드 번호는 처음 만난 순서."""
    numbers = {}  # id(변수나 함수) -> 노드 번호

    def node(obj):
        return numbers.setdefault(id(obj), len(numbers) + 1)

    def dot_var(v):
        label = v.name or ''
        if verbose:
            label = (label + ': ' if label else '') + f'{v.shape} {v.dtype}'
        return f'{node(v)} [label="{label}", color=orange, style=filled]\n'

    def dot_func(f):
        text = (f'{node(f)} [label="{type(f).__name__}", color=lightblue, '
                'style=filled, shape=box]\n')
        for x in f.inputs:
            text += f'{node(x)} -> {node(f)}\n'
        for ref in f.outputs:  # outputs는 약한 참조: ref()가 변수다
            text += f'{node(f)} -> {node(ref())}\n'
        return text

    text, written = dot_var(output), {id(output)}
    todo, seen = [], set()
    if output.creator is not None:
        todo.append(output.creator)
        seen.add(output.creator)
    while todo:
        f = todo.pop()
        text += dot_func(f)
        for x in f.inputs:
            if id(x) not in written:
                text += dot_var(x)
                written.add(id(x))
            if x.creator is not None and x.creator not in seen:
                todo.append(x.creator)
                seen.add(x.creator)
    return 'digraph g {\n' + text + '}'


def structure(dot_text):
    """DOT 텍스트의 노드 라벨들과 화살표의 (라벨, 라벨) 쌍들을 센다.

    노드 번호와 줄 순서는 무시한다: 같은 그래프면 같은 결과.
    """
    labels = dict(re.findall(r'^(\d+) \[label="([^"]*)"', dot_text, re.M))
    edges = re.findall(r'^(\d+) -> (\d+)$', dot_text, re.M)
    arrows = Counter((labels[a], labels[b]) for a, b in edges)
    return Counter(labels.values()), arrows


def same_as_package(output, verbose):
    """직접 만든 DOT과 dezero_kr.utils.get_dot_graph의 DOT이 같은 그래프인지 확인한다."""
    mine = structure(my_get_dot_graph(output, verbose))
    package = structure(get_dot_graph(output, verbose=verbose))
    assert mine == package, (mine, package)
    return sum(mine[0].values()), sum(mine[1].values())


if __name__ == '__main__':
    x0 = Variable(np.array(1.0), name='x0')
    x1 = Variable(np.array(2.0), name='x1')
    y = x0 * x1 + F.sin(x0)
    y.name = 'y'
    print('y = x0 * x1 + sin(x0): 직접 만든 my_get_dot_graph의 DOT 텍스트')
    print(my_get_dot_graph(y, verbose=True))
    n_nodes, n_edges = same_as_package(y, verbose=True)
    print(f'노드 {n_nodes}개, 화살표 {n_edges}개: dezero_kr의 get_dot_graph와 '
          f'라벨과 화살표가 같다')

    x = Variable(np.array(1.0), name='x')
    yy = Variable(np.array(1.0), name='y')  # goldstein(x, y)의 두 번째 입력
    z = goldstein(x, yy)
    z.name = 'z'
    n_funcs, n_vars = graph_size(z)
    n_nodes, n_edges = same_as_package(z, verbose=False)
    print(f'\ngoldstein(x, y): 함수 {n_funcs}개, 변수 {n_vars}개, '
          f'노드 {n_nodes}개, 화살표 {n_edges}개')
    print('  직접 만든 것과 패키지의 DOT이 같은 그래프를 적는다')
    save_graph(z, 'step26_goldstein.svg', verbose=False)
