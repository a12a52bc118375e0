"""16단계: 복잡한 계산 그래프 (구현)

15단계의 세대(generation)를 프레임워크에 넣는다. 세대는 순전파 때 바로 매길 수 있다.

* 함수의 세대 = 입력 변수 세대의 최댓값 (Function.link에서)
* 변수의 세대 = 자기를 만든 함수의 세대 + 1 (Variable.set_creator에서). 잎 변수는 0.
* 역전파 순서(_creators): 처리할 함수를 힙(heapq)에 넣고 세대가 큰 것부터 꺼낸다.
  - 같은 함수는 한 번만 넣는다(seen 집합).
  - 힙 원소는 (-세대, 넣은 순번, 함수). heapq는 작은 값부터 꺼내므로 세대에 -를 붙인다.
    순번은 세대가 같을 때 비교가 함수 객체까지 가지 않게 하는 값이자, 넣은 순서대로 꺼내게 하는 값이다.
  - 함수를 넣을 때마다 리스트 전체를 다시 정렬하는 방법(넣기 O(n log n))보다 힙(넣기/꺼내기 O(log n))이 싸다.

바뀌는 것은 Variable(세대와 순서)과 Function.link(세대 매기기)다. Function이 바뀌었으므로 Square 등은
계산은 그대로 두고 새 Function 위에 다시 얹는다. 07단계에서 한 줄씩 하던 이 일을 여기서부터는
rebase(클래스)와 functional(소문자 함수) 도우미로 한 번에 한다.

출력에서 볼 것
* 마름모 y = 2x^4 (x=2): 변수들의 세대, 처리 순서, dy/dx = 64 (14단계 방식은 96)
* 제2고지의 대표 예제 u = x*y, L = u*u + u (x=2, y=3): L=42, dL/du=13, dL/dx=39, dL/dy=26
"""
import heapq
import itertools

import numpy as np

import step14
from step14 import as_array  # noqa: F401 (다음 단계가 가져간다)


class FunctionHeap:
    """세대가 큰 함수부터 꺼내 주는 우선순위 큐. 같은 함수는 한 번만 들어간다.
    """

    def __init__(self):
        self._heap = []
        self._seen = set()
        self._counter = itertools.count()

    def push(self, f):
        if f is None or f in self._seen:
            return
        self._seen.add(f)
        heapq.heappush(self._heap, (-f.generation, next(self._counter), f))

    def pop(self):
        return heapq.heappop(self._heap)[-1]

    def __bool__(self):
        return bool(self._heap)


class Variable(step14.Variable):
    def __init__(self, data):
        super().__init__(data)
        self.generation = 0

    def set_creator(self, func):
        super().set_creator(func)
        self.generation = func.generation + 1

    def _creators(self):
        funcs = FunctionHeap()
        funcs.push(self.creator)
        while funcs:
            f = funcs.pop()
            yield f
            for x in f.inputs:
                funcs.push(x.creator)


class Function(step14.Function):
    def link(self, inputs, outputs):
        # 출력의 세대를 정하기 전에 매긴다
        self.generation = max(x.generation for x in inputs)
        super().link(inputs, outputs)


def rebase(Function, *ops):
    """연산 클래스들을 새 Function 위에 다시 얹는다.

    07단계의 `class Square(Function, step06.Square): pass` 를 여러 연산에 한
    번에 하는 도우미다. 새 클래스는 계산(forward/backward)은 원래 연산에서,
    호출과 그래프 연결(__call__, link)은 새 Function에서 물려받는다. Function이
    바뀌는 17, 18, 21단계도 이것을 쓴다.
    """
    def attrs(op):  # 새 클래스가 원래 연산의 설명을 그대로 보이게
        return {'__module__': Function.__module__, '__doc__': op.__doc__}

    return tuple(type(op.__name__, (Function, op), attrs(op)) for op in ops)


def functional(*ops):
    """연산 클래스마다 square(x), add(x0, x1) 처럼 부르는 소문자 함수를
    만든다(09단계의 square와 같다)."""
    def make(op):
        def f(*inputs):
            return op()(*inputs)
        f.__name__ = f.__qualname__ = op.__name__.lower()
        f.__module__ = op.__module__
        return f
    return tuple(make(op) for op in ops)


Square, Exp, Add, Mul = rebase(Function, step14.Square, step14.Exp, step14.Add, step14.Mul)
square, exp, add, mul = functional(Square, Exp, Add, Mul)


if __name__ == '__main__':
    x = Variable(np.array(2.0))
    a = square(x)
    b = square(a)
    c = square(a)
    y = add(b, c)
    print('마름모 y = 2x^4, x=2: y =', y.data)
    print('  변수의 세대: x', x.generation, ' a', a.generation, ' b', b.generation,
          ' c', c.generation, ' y', y.generation)
    labels = {a.creator: 'a=x^2', b.creator: 'b=a^2', c.creator: 'c=a^2', y.creator: 'y=b+c'}
    print('  처리 순서:', ' -> '.join(labels[f] for f in y._creators()))
    y.backward()
    print('  dy/dx =', x.grad, ' 정답 8x^3 =', 8 * 2.0 ** 3)

    x = Variable(np.array(2.0))
    y = Variable(np.array(3.0))
    u = mul(x, y)
    L = add(mul(u, u), u)
    L.backward()
    print('L = u*u + u, u = x*y (x=2, y=3): L =', L.data)
    print('  dL/du =', u.grad, ' dL/dx =', x.grad, ' dL/dy =', y.grad)
