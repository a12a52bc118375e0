"""26단계: 계산 그래프 시각화 (2) -- 변수에서 DOT 텍스트를 자동으로

25단계에서는 DOT을 손으로 적었다. 변수는 creator로, 함수는 inputs/outputs로 서로를 가리키므로
출력 변수 하나에서 거꾸로 따라가면 그래프 전체를 DOT으로 옮길 수 있다.

    from dezero_kr.utils import get_dot_graph, plot_dot_graph   # DeZero와 같은 자리 (정의는 dezero_kr.graph)
    text = get_dot_graph(y, verbose=True)            # DOT 텍스트 (문자열)
    plot_dot_graph(y, verbose=True, to_file='y.png')  # 그림 파일 (+ 같은 이름의 y.dot)
verbose=True이면 변수 라벨에 "이름: shape dtype"이 붙는다. 노드 번호는 출력에서부터 너비 우선으로
1, 2, 3, ... 매겨지므로 같은 그래프는 언제나 같은 텍스트가 된다. 같은 변수가 두 번 쓰여도 노드는
하나이고 화살표만 두 개다(DeZero는 노드를 중복해서 그렸다: ODL3#49).
2 * x 처럼 파이썬 수와 계산하면 상수는 변수 노드가 아니라 함수 안에 담긴다(MulConstant,
AddConstant, RSubConstant 상자). 그래서 그림에 입력 노드가 x, y 둘만 보인다.

출력에서 볼 것
* 작은 식 y = x0 * x1 + sin(x0)의 DOT 텍스트: x0은 노드 하나, 화살표 두 개(Mul, Sin으로)
* 24단계 goldstein 함수의 그래프 크기와 DOT 텍스트의 앞부분. 그림은 goldstein.png(.dot)로 저장한다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable
from dezero_kr.utils import get_dot_graph

from _common import graph_size, save_graph
from step24 import goldstein


if __name__ == '__main__':
    x0 = Variable(np.array(1.0), name='x0')
    x1 = Variable(np.array(2.0), name='x1')
    y = x0 * x1 + F.sin(x0)
    y.name = 'y'
    print('y = x0 * x1 + sin(x0) 의 DOT 텍스트:')
    print(get_dot_graph(y, verbose=True))

    x = Variable(np.array(1.0), name='x')
    yy = Variable(np.array(1.0), name='y')  # goldstein(x, y)의 두 번째 입력
    z = goldstein(x, yy)
    z.name = 'z'
    n_funcs, n_vars = graph_size(z)
    text = get_dot_graph(z, verbose=False)
    lines = text.splitlines()
    print(f'goldstein(x, y): 함수 {n_funcs}개, 변수 {n_vars}개, DOT {len(lines)}줄, '
          f'화살표 {sum("->" in line for line in lines)}개')
    print('DOT 텍스트의 앞 8줄:')
    print('\n'.join(lines[:8]))
    save_graph(z, 'goldstein.png', verbose=False)
