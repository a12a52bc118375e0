"""31단계: 고차 미분 (이론 2) -- 역전파 엔진을 create_graph와 함께 직접 쓴다

30단계에서 backward를 Variable 연산으로 적었다. 그 연산이 그래프로 남을지는 역전파 엔진이 정한다.
이 단계에서는 y.backward()의 학습용 버전 backward(y, create_graph)를 직접 쓴다. 16~18단계의 역전파
반복문과 같고, 달라진 곳은 두 군데다.

    gxs = f.backward(*gys)             # 예전: 늘 기록하지 않았다 (ndarray 계산)
    with using_config('enable_backprop', create_graph):
        gxs = f.backward(*gys)         # 지금: create_graph=True이면 backward 안의 연산도 기록
        x.grad = x.grad + gx           # 기울기 누적(더하기)도 같은 이유로 이 안에서

그리고 기울기는 처음부터 Variable이다(시작값 Variable(np.ones_like(y.data))). 기본값
create_graph=False는 기록하지 않는다: 학습에는 1차 미분만 필요하고 기록하면 메모리와 시간이 든다.
중간 변수의 기울기는 쓰고 나면 지운다(18단계의 retain_grad=False). 남겨 두면 32단계에서 기울기를
다시 역전파할 때 이전 값이 더해진다.

예제: y = x^3 (x = 2).  dy/dx = 3x^2 = 12.
Pow(3).backward는 `3 * x ** 2 * gy`를 계산하므로, 기울기 그래프에는 Pow(지수 2), MulConstant(3배),
Mul(gy 곱하기)이 생긴다. 이 그래프의 입력에는 x가 있다: 그래서 x.grad를 x로 다시 미분할 수 있다.

출력에서 볼 것
* create_graph=False: x.grad 뒤의 그래프 = 함수 0개 (x.grad 자신이 값 12.0인 잎)
* create_graph=True:  같은 값 12, 뒤에 함수 3개 [Pow, MulConstant, Mul]. 잎은 x와 1.0이다.
  1.0은 역전파의 시작값 dy/dy = 1 (gy)이다.
* 식이 커지면 기울기 그래프도 커진다: 순전파 그래프와 크기를 비교한다.
* 직접 쓴 backward와 dezero_kr의 y.backward가 같은 기울기와 같은 크기의 기울기 그래프를 만든다.
"""
import numpy as np

import dezero_kr.functions as F
from dezero_kr import Variable, using_config

from _common import graph_size
from step30 import sin


def backward(y, create_graph=False):
    """y.backward(create_graph)의 학습용 버전: 잎의 .grad에 dy/d(잎)을 더한다.

    기울기는 Variable이다. create_graph=True이면 각 Function의 backward
    계산도 그래프로 남아, 그 기울기를 다시 미분할 수 있다(32단계).
    중간 변수의 기울기는 쓰고 나면 지운다.
    """
    if y.grad is None:
        y.grad = Variable(np.ones_like(y.data))
    funcs, seen = [], set()

    def add_func(f):  # 세대가 큰 함수부터 꺼내도록 정렬해 둔다 (16단계)
        if f not in seen:
            seen.add(f)
            funcs.append(f)
            funcs.sort(key=lambda g: g.generation)

    if y.creator is not None:
        add_func(y.creator)
    while funcs:
        f = funcs.pop()
        outputs = [ref() for ref in f.outputs]  # outputs는 약한 참조 (17단계)
        gys = [out.grad for out in outputs]
        with using_config('enable_backprop', create_graph):
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)
            for x, gx in zip(f.inputs, gxs):
                x.grad = gx if x.grad is None else x.grad + gx
                if x.creator is not None:
                    add_func(x.creator)
        for out in outputs:
            out.grad = None  # 중간 변수의 기울기는 다 썼다 (18단계)


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


def grad_and_graph(f, x0, engine):
    """f(x)를 engine(y)으로 create_graph=True 역전파: (x.grad 값, 기울기 그래프 크기)."""
    x = Variable(np.array(x0), name='x')
    y = f(x)
    engine(y)
    return float(x.grad.data), graph_size(x.grad)


if __name__ == '__main__':
    for create_graph in (False, True):
        x = Variable(np.array(2.0), name='x')
        y = x ** 3
        backward(y, create_graph=create_graph)
        names, leaves = function_names(x.grad)
        print(f'create_graph={create_graph}: x.grad = {float(x.grad.data)}')
        print(f'  기울기 그래프의 함수 {names}, 잎 {leaves}')

    print('\n식이 커지면 기울기 그래프도 커진다 (create_graph=True, 함수/변수 개수):')
    cases = [('x ** 3', lambda x: x ** 3),
             ('sin(x) * x', lambda x: sin(x) * x),  # sin은 30단계에서 직접 만든 것
             ('tanh(tanh(tanh(x)))', lambda x: F.tanh(F.tanh(F.tanh(x))))]
    for label, f in cases:
        x = Variable(np.array(0.5), name='x')
        y = f(x)
        backward(y, create_graph=True)
        print(f'  {label:<20} 순전파 {graph_size(y)}  기울기 {graph_size(x.grad)}')

    print('\ndezero_kr의 y.backward(create_graph=True)와 비교 (x = 0.5):')
    for label, f in cases:
        mine = grad_and_graph(f, 0.5, lambda y: backward(y, create_graph=True))
        package = grad_and_graph(f, 0.5, lambda y: y.backward(create_graph=True))
        assert mine[1] == package[1], (label, mine, package)
        np.testing.assert_allclose(mine[0], package[0], rtol=1e-15)
        print(f'  {label:<20} x.grad = {mine[0]:.12f}, 기울기 그래프 {mine[1]}: 같다')
