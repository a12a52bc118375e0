"""21단계: 연산자 오버로드 (2) -- ndarray, 파이썬 수와 함께 쓰기

x * 2.0, 3.0 + x, np.array(1.0) + x 처럼 Variable과 다른 값을 섞어 계산할 수 있게 한다.

* as_variable(obj): Variable이면 그대로, 아니면(파이썬 수, ndarray) Variable로 감싼다.
  Function.__call__이 입력마다 이것을 불러 주므로 연산 클래스들은 늘 Variable만 받는다.
* __radd__, __rmul__: 3.0 * x 에서 왼쪽 피연산자 float은 Variable과 곱하는 법을 모르므로
  파이썬이 x.__rmul__(3.0)을 부른다. 덧셈과 곱셈은 교환 법칙이 성립하므로 add, mul을 그대로 쓴다.
* __array_priority__: 왼쪽이 ndarray이면 NumPy가 먼저 나서서 Variable을 원소마다 넣을 객체(object)로 보고
  원소마다 계산한 object 배열을 만들어 버린다. 우선순위를 ndarray(0)보다 크게 주면 NumPy가
  양보하고 Variable.__radd__가 불린다.

바뀌는 것은 Variable(우선순위와 __radd__, __rmul__), as_variable, Function.__call__의 첫 줄이다.
나머지는 20단계와 같다.

출력에서 볼 것
* y = 3.0 * x + 1.0 (x=2): y=7, dy/dx=3
* np.array([1, 2]) + Variable([10, 20]): 우선순위가 있으면 Variable, 없으면 object ndarray
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
    def __add__(self, other):
        return add(self, other)

    def __radd__(self, other):
        return add(self, other)

    def __mul__(self, other):
        return mul(self, other)

    def __rmul__(self, other):
        return mul(self, other)


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
    y = 3.0 * x + 1.0
    y.backward()
    print('y = 3.0 * x + 1.0 =', y, ' dy/dx =', x.grad)
    print('x + np.array(3.0) =', x + np.array(3.0), ' x * 4 =', x * 4)

    class NoPriority(Variable):
        __array_priority__ = 0  # 비교용: ndarray와 같은 우선순위

    a = np.array([1.0, 2.0])
    for cls in (Variable, NoPriority):
        r = a + cls(np.array([10.0, 20.0]))
        if isinstance(r, np.ndarray):
            detail = f'dtype={r.dtype}, 원소 {len(r)}개'
        else:
            detail = str(r)
        print(f'np.array([1, 2]) + {cls.__name__}([10, 20]) -> '
              f'{type(r).__name__}: {detail}')
