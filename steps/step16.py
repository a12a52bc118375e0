"""16단계: 복잡한 계산 그래프 (구현)

15단계의 세대(generation)를 프레임워크에 넣는다. 세대는 순전파 때 바로 매길 수 있다.

* 함수의 세대 = 입력 변수 세대의 최댓값 (Function.link에서)
* 변수의 세대 = 자기를 만든 함수의 세대 + 1 (Variable.set_creator에서). 잎 변수는 0.
* 역전파 순서(_creators): 처리할 함수를 힙(heapq)에 넣고 세대가 큰 것부터 꺼낸다.
  - 같은 함수는 한 번만 넣는다(seen 집합).
  - 힙 원소는 (-세대, 넣은 순번, 함수). heapq는 작은 값부터 꺼내므로 세대에 -를 붙인다.
    순번은 세대가 같을 때 비교가 함수 객체까지 가지 않게 하는 값이자, 넣은 순서대로 꺼내게 하는 값이다.
  - 함수를 넣을 때마다 리스트 전체를 다시 정렬하는 방법(넣기 O(n log n))보다 힙(넣기/꺼내기 O(log n))이 싸다.

바뀌는 것은 Variable(세대와 순서)과 Function.link(세대 매기기)다. as_array와 연산들(Square,
Exp, Add, Mul)의 forward/backward는 14단계와 같다.

출력에서 볼 것
* 마름모 y = 2x^4 (x=2): 변수들의 세대, 처리 순서, dy/dx = 64 (14단계 방식은 96)
* 제2고지의 대표 예제 u = x*y, L = u*u + u (x=2, y=3): L=42, dL/du=13, dL/dx=39, dL/dy=26
"""
import heapq
import itertools

import numpy as np


def as_array(x):
    """NumPy 스칼라(np.float64 등)나 파이썬 수를 0차원 배열로 바꾼다."""
    if np.isscalar(x):
        return np.array(x)
    return x


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


class Variable:
    def __init__(self, data):
        if data is not None and not isinstance(data, np.ndarray):
            name = type(data).__name__
            raise TypeError(f'{name}은(는) 지원하지 않습니다. '
                            'np.ndarray를 넣으세요.')
        self.data = data
        self.grad = None
        self.creator = None
        self.generation = 0  # 잎 변수는 0세대

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1

    def backward(self):
        if self.grad is None:
            self.grad = np.ones_like(self.data)
        for f in self._creators():
            self._backprop_through(f)

    def _creators(self):
        """이 변수에 이르는 함수들을 세대가 큰 것부터 한 번씩 내준다."""
        funcs = FunctionHeap()
        funcs.push(self.creator)
        while funcs:
            f = funcs.pop()
            yield f
            for x in f.inputs:
                funcs.push(x.creator)

    @staticmethod
    def _backprop_through(f):
        gys = [y.grad for y in Variable._outputs(f)]
        gxs = f.backward(*gys)
        if not isinstance(gxs, tuple):
            gxs = (gxs,)
        for x, gx in zip(f.inputs, gxs):
            x.receive_grad(gx)

    @staticmethod
    def _outputs(f):
        """f가 만든 출력 변수들. 17단계에서 약한 참조로 바뀌면 여기가
        바뀐다."""
        return f.outputs

    def receive_grad(self, gx):
        # 새 배열을 만드는 덧셈이어야 다른 변수와 배열을 공유하지 않는다
        self.grad = gx if self.grad is None else self.grad + gx

    def cleargrad(self):
        self.grad = None


class Function:
    def __call__(self, *inputs):
        xs = [x.data for x in inputs]
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [Variable(as_array(y)) for y in ys]
        self.link(inputs, outputs)
        return outputs if len(outputs) > 1 else outputs[0]

    def link(self, inputs, outputs):
        """순전파 결과를 계산 그래프에 잇는다."""
        # 출력의 세대(set_creator)를 정하기 전에 매긴다
        self.generation = max(x.generation for x in inputs)
        for output in outputs:
            output.set_creator(self)
        self.inputs = inputs
        self.outputs = outputs

    def forward(self, *xs):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')

    def backward(self, *gys):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.backward를 구현해야 합니다')


class Square(Function):
    def forward(self, x):
        return x ** 2

    def backward(self, gy):
        x = self.inputs[0].data
        return 2 * x * gy


class Exp(Function):
    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.inputs[0].data
        return np.exp(x) * gy


class Add(Function):
    def forward(self, x0, x1):
        return x0 + x1

    def backward(self, gy):
        return gy, gy  # 덧셈은 미분을 그대로 양쪽에 흘려보낸다


class Mul(Function):
    def forward(self, x0, x1):
        return x0 * x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy * x1, gy * x0


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


def mul(x0, x1):
    return Mul()(x0, x1)


if __name__ == '__main__':
    x = Variable(np.array(2.0))
    a = square(x)
    b = square(a)
    c = square(a)
    y = add(b, c)
    print('마름모 y = 2x^4, x=2: y =', y.data)
    print('  변수의 세대: x', x.generation, ' a', a.generation, ' b', b.generation,
          ' c', c.generation, ' y', y.generation)
    labels = {a.creator: 'a=x^2', b.creator: 'b=a^2', c.creator: 'c=a^2',
              y.creator: 'y=b+c'}
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
