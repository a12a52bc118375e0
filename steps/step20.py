"""20단계: 연산자 오버로드 (1)

add(mul(a, b), c) 대신 a * b + c 라고 쓰고 싶다. 파이썬은 a * b를 a.__mul__(b)로, a + b를
a.__add__(b)로 바꿔 부르므로 Variable에 이 두 메서드를 정의하면 된다. 계산은 13단계부터 있던
Mul, Add가 그대로 한다. Variable만 바뀐다(나머지는 19단계와 같다).

출력에서 볼 것
* y = a * b + c (a=3, b=2, c=1): y=7, dy/da=2, dy/db=3, dy/dc=1
* 제2고지의 대표 예제를 식 그대로: u = x * y, L = u * u + u (x=2, y=3)
  L=42, dL/du=13 (= 2u + 1), dL/dx=39, dL/dy=26. u의 미분을 보려고 retain_grad=True로 역전파한다.
"""
import contextlib
import heapq
import itertools
import weakref

import numpy as np


class Config:
    enable_backprop = True  # False이면 계산 그래프를 만들지 않는다


@contextlib.contextmanager
def using_config(name, value):
    # 없는 설정 이름이면 여기서 AttributeError
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    return using_config('enable_backprop', False)


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
    def __init__(self, data, name=None):
        if data is not None and not isinstance(data, np.ndarray):
            kind = type(data).__name__
            raise TypeError(f'{kind}은(는) 지원하지 않습니다. '
                            'np.ndarray를 넣으세요.')
        self.data = data
        self.name = name
        self.grad = None
        self.creator = None
        self.generation = 0  # 잎 변수는 0세대

    @property
    def shape(self):
        return self.data.shape

    @property
    def ndim(self):
        return self.data.ndim

    @property
    def size(self):
        return self.data.size

    @property
    def dtype(self):
        return self.data.dtype

    def __len__(self):
        return len(self.data)

    def __repr__(self):
        if self.data is None:
            return 'variable(None)'
        body = str(self.data).replace('\n', '\n' + ' ' * len('variable('))
        return f'variable({body})'

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1

    def backward(self, retain_grad=False):
        if self.grad is None:
            self.grad = np.ones_like(self.data)
        for f in self._creators():
            self._backprop_through(f)
            if not retain_grad:
                for y in self._outputs(f):
                    # 세대순이므로 f의 출력 미분은 더 쓰이지 않는다
                    y.grad = None

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

    # 연산자: a * b 는 a.__mul__(b), a + b 는 a.__add__(b)로 불린다
    def __add__(self, other):
        return add(self, other)

    def __mul__(self, other):
        return mul(self, other)


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
        """순전파 결과를 계산 그래프에 잇는다. 역전파를 안 할 때는 잇지
        않는다."""
        if not Config.enable_backprop:
            return
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


if __name__ == '__main__':
    a = Variable(np.array(3.0), name='a')
    b = Variable(np.array(2.0), name='b')
    c = Variable(np.array(1.0), name='c')
    y = a * b + c
    y.backward()
    print('y = a * b + c =', y)
    print('dy/da =', a.grad, ' dy/db =', b.grad, ' dy/dc =', c.grad)

    x = Variable(np.array(2.0), name='x')
    y = Variable(np.array(3.0), name='y')
    u = x * y
    L = u * u + u
    L.backward(retain_grad=True)
    print('\nu = x * y, L = u * u + u (x=2, y=3)')
    print('L =', L.data, ' u =', u.data)
    print('dL/du =', u.grad, ' dL/dx =', x.grad, ' dL/dy =', y.grad)
