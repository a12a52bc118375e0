"""31단계: 고차 미분 (이론 2) -- 역전파 엔진의 create_graph를 읽는다

30단계에서 backward를 Variable 연산으로 적었다. 그 연산이 그래프로 남을지는 역전파 엔진이 정한다.
그 엔진이 30단계에서 생긴 mydezero/core.py의 Variable.backward(retain_grad, create_graph)다(읽어 볼 곳).
23단계 core_simple.py의 역전파 반복문(책의 add_func + 정렬: 16~22단계의 힙 대신, 23단계에서 설명)과
같고, 달라진 곳은 두 군데다.

    gxs = f.backward(*gys)             # 예전: 늘 기록하지 않았다 (ndarray 계산)
    with using_config('enable_backprop', create_graph):
        gxs = f.backward(*gys)         # 지금: create_graph=True이면 backward 안의 연산도 기록
        x.grad = x.grad + gx           # 기울기 누적(더하기)도 같은 이유로 이 안에서

그리고 기울기는 처음부터 Variable이다(시작값 Variable(np.ones_like(y.data))). 기본값
create_graph=False는 기록하지 않는다: 학습에는 1차 미분만 필요하고 기록하면 메모리와 시간이 든다.
중간 변수의 기울기는 쓰고 나면 지운다(18단계의 retain_grad=False). 남겨 두면 32단계에서 기울기를
다시 역전파할 때 이전 값이 더해진다.

예제: y = x^3 (x = 2).  dy/dx = 3x^2 = 12.
Pow(3).backward는 `3 * x ** 2 * gy`를 계산하므로, 기울기 그래프에는 Pow(지수 2), Mul(3배: 상수 3도
변수 노드), Mul(gy 곱하기)이 생긴다. 이 그래프의 입력에는 x가 있다: 그래서 x.grad를 x로 다시 미분할 수 있다.

출력에서 볼 것
* create_graph=False: x.grad 뒤의 그래프 = 함수 0개 (x.grad 자신이 값 12.0인 잎)
* create_graph=True:  같은 값 12, 뒤에 함수 3개 [Pow, Mul, Mul]. 잎은 x, 1.0, 3이다.
  1.0은 역전파의 시작값 dy/dy = 1 (gy)이다.
* 식이 커지면 기울기 그래프도 커진다: 순전파 그래프와 크기를 비교한다.
* mydezero와 기준 패키지 dezero_kr의 y.backward(create_graph=True)가 같은 기울기와 같은 수의 함수로
  된 기울기 그래프를 만든다(dezero_kr는 파이썬 수 상수를 변수 노드로 두지 않아 변수 수는 다르다).
"""
import numpy as np

import dezero_kr
import dezero_kr.functions as RF  # 기준 패키지
from mydezero import Variable
import mydezero.functions as F

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


def grad_and_graph(f, x0, variable):
    """f(x)를 y.backward(create_graph=True)로 역전파: (x.grad 값, 기울기 그래프 크기).
    variable: Variable 클래스 (mydezero 또는 기준 패키지의 것)."""
    x = variable(np.array(x0), name='x')
    y = f(x)
    y.backward(create_graph=True)
    return float(x.grad.data), graph_size(x.grad)


if __name__ == '__main__':
    for create_graph in (False, True):
        x = Variable(np.array(2.0), name='x')
        y = x ** 3
        y.backward(create_graph=create_graph)
        names, leaves = function_names(x.grad)
        print(f'create_graph={create_graph}: x.grad = {float(x.grad.data)}')
        print(f'  기울기 그래프의 함수 {names}, 잎 {leaves}')

    print('\n식이 커지면 기울기 그래프도 커진다 (create_graph=True, 함수/변수 개수):')
    cases = [('x ** 3', lambda x, F: x ** 3),
             ('sin(x) * x', lambda x, F: F.sin(x) * x),
             ('sin(sin(sin(x)))', lambda x, F: F.sin(F.sin(F.sin(x))))]
    for label, f in cases:
        x = Variable(np.array(0.5), name='x')
        y = f(x, F)
        y.backward(create_graph=True)
        print(f'  {label:<20} 순전파 {graph_size(y)}  기울기 {graph_size(x.grad)}')

    print('\ndezero_kr의 y.backward(create_graph=True)와 비교 (x = 0.5):')
    for label, f in cases:
        mine = grad_and_graph(lambda x: f(x, F), 0.5, Variable)
        ref = grad_and_graph(lambda x: f(x, RF), 0.5, dezero_kr.Variable)
        assert mine[1][0] == ref[1][0], (label, mine, ref)  # 함수 개수
        np.testing.assert_allclose(mine[0], ref[0], rtol=1e-15)
        print(f'  {label:<20} x.grad = {mine[0]:.12f}, 기울기 그래프의 함수 {mine[1][0]}개: 같다')
