"""22단계: 연산자 오버로드 (3) -- 나머지 연산자

남은 사칙연산과 거듭제곱을 넣으면 01단계의 상자가 작은 자동 미분 프레임워크가 된다.

    연산       파이썬 메서드              순전파      역전파 (gy: 출력 쪽 미분)
    -x         __neg__                    -x          -gy
    x0 - x1    __sub__, __rsub__          x0 - x1     gy, -gy
    x0 / x1    __truediv__, __rtruediv__  x0 / x1     gy / x1, -gy * x0 / x1^2
    x ** c     __pow__                    x^c         c * x^(c-1) * gy   (c는 상수)

뺄셈과 나눗셈은 교환 법칙이 성립하지 않으므로 2.0 - x 에서 불리는 __rsub__(x, 2.0)는
피연산자 순서를 바꿔 sub(2.0, x)를 계산해야 한다. Function은 21단계 그대로이고 Variable과
새 연산들만 더한다. 정답지로 쓰는 numerical_diff는 04단계와 같다.

이 파일 하나가 01~22단계에서 만든 프레임워크 전부다(NumPy와 표준 라이브러리만 쓴다).

출력에서 볼 것
* x=2일 때 각 식의 값과 역전파 미분, 그리고 수치 미분(04단계)과의 비교
* 05~08단계의 예제를 연산자로: y = exp(x ** 2) ** 2, x=0.5 -> 3.2974425414...,
  x=2 -> 23847.6638963...
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
    # ndarray(우선순위 0)가 왼쪽에 있어도 NumPy가 양보해 Variable.__radd__ 등이
    # 불리게 한다
    __array_priority__ = 200

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

    # 연산자: x + 1 은 x.__add__(1), 1 + x 는 x.__radd__(1)로 불린다.
    # 덧셈과 곱셈은 교환 법칙이 성립하므로 오른쪽 버전도 add(x, 1)이다.
    # 뺄셈과 나눗셈은 성립하지 않으므로 rsub, rdiv가 순서를 바꾼다.
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(self, other)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(self, other)

    def __neg__(self):
        return neg(self)

    def __sub__(self, other):
        return sub(self, other)

    def __rsub__(self, other):
        return rsub(self, other)

    def __truediv__(self, other):
        return div(self, other)

    def __rtruediv__(self, other):
        return rdiv(self, other)

    def __pow__(self, c):
        return pow(self, c)


def as_variable(obj):
    """obj가 Variable이면 그대로, 아니면(파이썬 수, ndarray) Variable로
    감싼다."""
    if isinstance(obj, Variable):
        return obj
    return Variable(as_array(obj))


class Function:
    def __call__(self, *inputs):
        inputs = [as_variable(x) for x in inputs]
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


class Neg(Function):
    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Sub(Function):
    def forward(self, x0, x1):
        return x0 - x1

    def backward(self, gy):
        return gy, -gy


class Div(Function):
    def forward(self, x0, x1):
        return x0 / x1

    def backward(self, gy):
        x0, x1 = self.inputs[0].data, self.inputs[1].data
        return gy / x1, -gy * x0 / x1 ** 2


class Pow(Function):
    def __init__(self, c):
        self.c = c  # 지수는 미분 대상이 아닌 상수로 함수 객체에 담아 둔다

    def forward(self, x):
        return x ** self.c

    def backward(self, gy):
        x = self.inputs[0].data
        return self.c * x ** (self.c - 1) * gy


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


def add(x0, x1):
    return Add()(x0, x1)


def mul(x0, x1):
    return Mul()(x0, x1)


def neg(x):
    return Neg()(x)


def sub(x0, x1):
    return Sub()(x0, x1)


def rsub(x0, x1):
    return Sub()(x1, x0)  # x0이 Variable(self), x1이 왼쪽에 있던 값


def div(x0, x1):
    return Div()(x0, x1)


def rdiv(x0, x1):
    return Div()(x1, x0)


def pow(x, c):
    return Pow(c)(x)


def numerical_diff(f, x, eps=1e-4):
    """중앙 차분으로 f'(x)를 근사한다(04단계). 역전파 결과를 확인하는 정답지."""
    x0 = Variable(np.asarray(x.data - eps))
    x1 = Variable(np.asarray(x.data + eps))
    y0 = f(x0)
    y1 = f(x1)
    return (y1.data - y0.data) / (2 * eps)


if __name__ == '__main__':
    cases = [('-x', lambda x: -x),
             ('x - 1.0', lambda x: x - 1.0),
             ('1.0 - x', lambda x: 1.0 - x),
             ('x / 4.0', lambda x: x / 4.0),
             ('3.0 / x', lambda x: 3.0 / x),
             ('x ** 3', lambda x: x ** 3),
             ('(x - 1) / (x ** 2 + 1)', lambda x: (x - 1) / (x ** 2 + 1))]
    print('x = 2.0')
    for label, f in cases:
        x = Variable(np.array(2.0))
        y = f(x)
        y.backward()
        num = float(numerical_diff(f, x))
        print(f'  {label:<24} 값 {float(y.data):<8.4f} 역전파 {float(x.grad):<10.6f} '
              f'수치 미분 {num:.6f}')

    for v in (0.5, 2.0):
        x = Variable(np.array(v))
        y = exp(x ** 2) ** 2
        y.backward()
        print(f'y = exp(x ** 2) ** 2, x={v}: y = {y.data}, dy/dx = {x.grad}')
