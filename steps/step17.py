"""17단계: 메모리 관리와 순환 참조

16단계까지는 함수가 출력을 outputs에 담아 두고, 출력은 creator로 그 함수를 가리킨다. 서로가 서로를
가리키는 순환 참조다. 파이썬은 참조 카운트가 0이 되는 순간 메모리를 돌려주는데, 순환 참조는
카운트가 0이 되지 않아 가끔 도는 가비지 컬렉터(gc)가 찾아낼 때까지 메모리에 남는다. 신경망에서는
중간 결과가 큰 배열이라 이것이 곧 메모리 문제다.

해결: 함수는 출력을 약한 참조(weakref)로만 가리킨다. 약한 참조는 참조 카운트를 올리지 않으므로,
사용자가 출력을 놓으면 그 자리에서 해제된다. 쓸 때는 ref()로 꺼낸다.

* Function.link: outputs를 weakref.ref 리스트로 바꾼다.
* Variable._outputs(f): 역전파 때 약한 참조에서 출력 변수를 꺼낸다(13단계에서 이 메서드로 빼 둔 이유).

나머지는 16단계와 같다. 비교용 StrongSquare는 16단계처럼 출력을 강하게 가리키는 Square다.

출력에서 볼 것
* gc를 끈 상태에서 출력 y를 del 했을 때: 16단계 방식은 순환 참조 때문에 살아 있고, 17단계는
  바로 사라진다.
* 반복해서 그래프를 만들 때 메모리에 남는 출력의 수 (16단계 10개, 17단계 0개)
* 역전파 결과는 그대로다(39, 26).
"""
import gc
import heapq
import itertools
import weakref

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
        """f가 만든 출력 변수들. f는 약한 참조만 들고 있으므로 ref()로
        꺼낸다."""
        return [ref() for ref in f.outputs]

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
        # 출력은 약하게만 가리킨다: 출력 -> creator -> outputs 의 순환이 끊긴다
        self.outputs = [weakref.ref(output) for output in outputs]

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


class StrongSquare(Square):
    """비교용: 16단계처럼 출력을 강하게 가리키는 Square. 함수와 출력이 서로를
    가리키는 순환 참조가 생긴다."""

    def link(self, inputs, outputs):
        super().link(inputs, outputs)
        self.outputs = outputs


def strong_square(x):
    return StrongSquare()(x)


def build_and_drop(square_fn, repeat=10):
    """큰 배열로 그래프를 repeat번 만들고 버린다. 만든 출력들의 약한 참조를
    돌려준다."""
    refs = []
    for _ in range(repeat):
        y = square_fn(square_fn(square_fn(Variable(np.ones(100_000)))))
        refs.append(weakref.ref(y))
    return refs


def alive(refs):
    return sum(r() is not None for r in refs)


if __name__ == '__main__':
    # 가비지 컬렉터가 끼어들지 않게 해서 참조 카운트만의 동작을 본다
    gc.disable()
    for label, square_fn in [('16단계(강한 참조)', strong_square),
                             ('17단계(약한 참조)', square)]:
        y = square_fn(Variable(np.array(2.0)))
        ref = weakref.ref(y)
        del y
        print(f'{label}: del y 뒤에도 y가 살아 있나? {ref() is not None}')
        refs = build_and_drop(square_fn)
        print(f'  큰 그래프(원소 10만 개) 10번 만들고 버린 뒤 남은 출력 수: '
              f'{alive(refs)}')
    refs = build_and_drop(strong_square)
    gc.collect()
    print('16단계 방식도 gc.collect()가 돌면 정리된다. 남은 출력 수:', alive(refs))
    gc.enable()

    x = Variable(np.array(2.0))
    y = Variable(np.array(3.0))
    u = mul(x, y)
    L = add(mul(u, u), u)
    L.backward()
    print('약한 참조로도 역전파: L =', L.data, ' dL/dx =', x.grad, ' dL/dy =', y.grad)
