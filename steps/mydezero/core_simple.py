#@ file step 23
"""mydezero의 첫 코어: 01~22단계에서 만든 것을 한 파일로 모았다 (23단계).

Variable은 값(data)과 기울기(grad)를 담는 상자, Function은 순전파(forward)와
역전파(backward)를 가진 연산이다. 여기서 기울기는 그냥 ndarray다 (30단계의
core.py에서 Variable이 된다). 역전파는 재귀 없이 함수 목록(funcs)을
세대(generation) 순으로 정렬해 가장 나중에 만들어진 함수부터 처리한다 (책과
같은 방식: 목록 + sort).
"""
import contextlib
import weakref

import numpy as np


class Config:
    """전역 설정. enable_backprop이 False이면 역전파용 연결을 기록하지 않는다.
    """
    enable_backprop = True


@contextlib.contextmanager
def using_config(name, value):
    """with 블록 안에서만 Config.<name>을 value로 바꾼다."""
    old_value = getattr(Config, name)
    setattr(Config, name, value)
    try:
        yield
    finally:
        setattr(Config, name, old_value)


def no_grad():
    """역전파가 필요 없는 계산(평가, 추론)에서 그래프를 만들지 않는다."""
    return using_config('enable_backprop', False)


class Variable:
    """ndarray 하나를 담는 상자. 연산자(+, *, -, /, **)로 계산 그래프를 만든다.
    """
    # ndarray + Variable 에서 Variable.__radd__가 불리게
    __array_priority__ = 200

    def __init__(self, data, name=None):
        if data is not None and not isinstance(data, np.ndarray):
            raise TypeError(f'{type(data)} is not supported')
        self.data = data
        self.name = name
        self.grad = None
        self.creator = None
        self.generation = 0

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
        p = str(self.data).replace('\n', '\n' + ' ' * 9)
        return 'variable(' + p + ')'

    # 연산자: 함수는 아래에 정의되어 있고, 부를 때 찾는다
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

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1

    def cleargrad(self):
        self.grad = None

    def backward(self, retain_grad=False):
        """이 변수에서 거꾸로 기울기를 전한다. grad는 ndarray로 입력 변수에
        쌓인다."""
        if self.grad is None:
            self.grad = np.ones_like(self.data)

        funcs = []
        seen_set = set()

        def add_func(f):
            if f not in seen_set:
                funcs.append(f)
                seen_set.add(f)
                # 세대가 큰 함수가 맨 뒤로
                funcs.sort(key=lambda x: x.generation)

        add_func(self.creator)
        while funcs:
            f = funcs.pop()
            # outputs는 약한 참조
            gys = [output().grad for output in f.outputs]
            gxs = f.backward(*gys)
            if not isinstance(gxs, tuple):
                gxs = (gxs,)

            for x, gx in zip(f.inputs, gxs):
                # 0차원 배열끼리 계산하면 NumPy 수(np.float64)가 나온다:
                # 기울기는 늘 ndarray로
                if x.grad is None:
                    x.grad = as_array(gx)
                else:
                    # += 는 같은 배열을 고쳐 버린다 (14단계)
                    x.grad = as_array(x.grad + gx)

                if x.creator is not None:
                    add_func(x.creator)

            if not retain_grad:
                for y in f.outputs:
                    y().grad = None  # 중간 변수의 기울기는 버린다 (18단계)


def as_variable(obj):
    """Variable이면 그대로, 아니면 Variable로 감싼다."""
    if isinstance(obj, Variable):
        return obj
    return Variable(obj)


def as_array(x):
    """0차원 연산 결과가 np.float64 같은 스칼라로 나오면 ndarray로 바꾼다."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Function:
    """입력 Variable을 받아 출력 Variable을 만든다. forward/backward는 하위
    클래스가 정한다."""

    def __call__(self, *inputs):
        inputs = [as_variable(as_array(x)) for x in inputs]
        xs = [x.data for x in inputs]
        ys = self.forward(*xs)
        if not isinstance(ys, tuple):
            ys = (ys,)
        outputs = [Variable(as_array(y)) for y in ys]

        if Config.enable_backprop:
            self.generation = max([x.generation for x in inputs])
            for output in outputs:
                output.set_creator(self)
            self.inputs = inputs
            # 순환 참조를 끊는다
            self.outputs = [weakref.ref(output) for output in outputs]

        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, *xs):
        raise NotImplementedError()

    def backward(self, *gys):
        raise NotImplementedError()


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
        return gy, gy


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
        return gy / x1, gy * (-x0 / x1 ** 2)


class Pow(Function):
    """x ** c (c는 미분하지 않는 상수)."""

    def __init__(self, c):
        self.c = c

    def forward(self, x):
        return x ** self.c

    def backward(self, gy):
        x = self.inputs[0].data
        return self.c * x ** (self.c - 1) * gy


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
    return Sub()(x1, x0)  # 2.0 - x: x0이 Variable(x), x1이 2.0


def div(x0, x1):
    return Div()(x0, x1)


def rdiv(x0, x1):
    return Div()(x1, x0)


def pow(x, c):
    return Pow(c)(x)
