"""31단계: 고차 미분 (이론 2) -- backward(create_graph=True)는 역전파 계산을 기록한다

30단계에서 본 것처럼 역전파도 Function 호출로 이루어진다. y.backward(create_graph=True)로 부르면
엔진이 그 호출들을 기록 모드에서 실행하므로, 역전파가 끝난 뒤 x.grad 뒤에 "기울기를 계산한
그래프"가 달려 있다. 기본값 create_graph=False는 기록하지 않는다: 학습에는 1차 미분만 필요하고
기록하지 않으면 메모리와 시간이 든다.

예제: y = x^3 (x = 2).  dy/dx = 3x^2 = 12.
Pow(3).backward는 `3 * x ** 2 * gy`를 계산하므로, 기울기 그래프에는 Pow(지수 2), MulConstant(3배),
Mul(gy 곱하기)이 생긴다. 이 그래프의 입력에는 x가 있다: 그래서 x.grad를 x로 다시 미분할 수 있다.

출력에서 볼 것
* create_graph=False: x.grad 뒤의 그래프 = 함수 0개 (x.grad 자신이 값 12.0인 잎)
* create_graph=True:  같은 값 12, 뒤에 함수 3개 [Pow, MulConstant, Mul]. 잎은 x와 1.0이다.
  1.0은 역전파의 시작값 dy/dy = 1 (gy)이다.
* 식이 커지면 기울기 그래프도 커진다: 순전파 그래프와 크기를 비교한다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable

from _common import graph_size


def function_names(v):
    """v를 만든 그래프의 함수 이름들(입력 쪽부터, 세대 순)과 잎 변수들(이름, 없으면 값)."""
    funcs, leaves, stack, seen = {}, [], [v], set()
    while stack:
        u = stack.pop()
        if id(u) in seen:
            continue
        seen.add(id(u))
        if u.creator is None:
            leaves.append(u.name or str(u.data))  # 이름 없는 잎은 값으로 보인다
        elif id(u.creator) not in funcs:
            funcs[id(u.creator)] = u.creator
            stack.extend(u.creator.inputs)
    ordered = sorted(funcs.values(), key=lambda f: f.generation)
    return [type(f).__name__ for f in ordered], sorted(leaves)


if __name__ == '__main__':
    for create_graph in (False, True):
        x = Variable(np.array(2.0), name='x')
        y = x ** 3
        y.backward(create_graph=create_graph)
        names, leaves = function_names(x.grad)
        print(f'create_graph={create_graph}: x.grad = {float(x.grad.data)}, '
              f'기울기 그래프의 함수 {names}, 잎 {leaves}')

    print('\n식이 커지면 기울기 그래프도 커진다 (create_graph=True, 함수/변수 개수):')
    for label, f in [('x ** 3', lambda x: x ** 3),
                     ('sin(x) * x', lambda x: F.sin(x) * x),
                     ('tanh(tanh(tanh(x)))', lambda x: F.tanh(F.tanh(F.tanh(x))))]:
        x = Variable(np.array(0.5), name='x')
        y = f(x)
        y.backward(create_graph=True)
        print(f'  {label:<20} 순전파 {graph_size(y)}  기울기 {graph_size(x.grad)}')
