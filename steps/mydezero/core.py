#@ file step 30
"""mydezero의 코어 (30단계부터; core_simple.py를 이어받았다).

core_simple과 다른 점: 기울기(grad)가 ndarray가 아니라 Variable이고, 각
Function의 backward도 Variable 연산으로 적는다. 그래서 역전파가 한 계산도 계산
그래프로 남길 수 있고(create_graph=True), 그 그래프를 다시 역전파하면 2차, 3차
미분이 나온다. 역전파는 core_simple과 같이 함수 목록(funcs)을 세대 순으로
sort해서 꺼낸다.
"""
import contextlib
import weakref

import numpy as np

import mydezero


# =============================================================================
# Config
# =============================================================================
class Config:
    """전역 설정. enable_backprop: 그래프를 기록하는가."""
    enable_backprop = True
#@ step 54
    train = True  # 학습 중인가 (dropout 등이 본다). test_mode() 안에서 False
#@ end


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
    """역전파가 필요 없는 계산에서 그래프를 만들지 않는다."""
    return using_config('enable_backprop', False)


#@ step 54
def test_mode():
    """평가할 때: Config.train을 False로 (dropout을 끈다)."""
    return using_config('train', False)


#@ end
# =============================================================================
# Variable / Function
# =============================================================================
#@ step 30-51
array_types = (np.ndarray,)
#@ end
#@ step 52
try:
    import cupy
    array_types = (np.ndarray, cupy.ndarray)
except ImportError:
    array_types = (np.ndarray,)
#@ end


class Variable:
    """ndarray 하나를 담는 상자. grad도 Variable이다."""
    __array_priority__ = 200

    def __init__(self, data, name=None):
        if data is not None and not isinstance(data, array_types):
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
#@ step 38

    def reshape(self, *shape):
        """x.reshape(2, 3) 또는 x.reshape((2, 3))."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = shape[0]
        return mydezero.functions.reshape(self, shape)

    def transpose(self, *axes):
        """x.transpose(), x.transpose(1, 0) 또는 x.transpose((1, 0))."""
        if len(axes) == 0:
            axes = None
        elif len(axes) == 1:
            if isinstance(axes[0], (tuple, list)) or axes[0] is None:
                axes = axes[0]
        return mydezero.functions.transpose(self, axes)

    @property
    def T(self):
        return mydezero.functions.transpose(self)
#@ end
#@ step 39

    def sum(self, axis=None, keepdims=False):
        return mydezero.functions.sum(self, axis, keepdims)
#@ end
#@ step 41

    def matmul(self, W):
        return mydezero.functions.matmul(self, W)

    def dot(self, W):
        return mydezero.functions.matmul(self, W)

    def __matmul__(self, W):  # x @ W (DeZero에는 없다)
        return mydezero.functions.matmul(self, W)
#@ end
#@ step 58

    def max(self, axis=None, keepdims=False):
        return mydezero.functions.max(self, axis, keepdims)

    def min(self, axis=None, keepdims=False):
        return mydezero.functions.min(self, axis, keepdims)
#@ end
#@ step 47

    def __getitem__(self, slices):
        return mydezero.functions.get_item(self, slices)
#@ end
#@ step 52

    def to_cpu(self):
        if self.data is not None:
            self.data = mydezero.cuda.as_numpy(self.data)

    def to_gpu(self):
        if self.data is not None:
            self.data = mydezero.cuda.as_cupy(self.data)
#@ end

    def set_creator(self, func):
        self.creator = func
        self.generation = func.generation + 1
#@ step 59

    def unchain(self):
        """creator와의 연결을 끊는다: 이 변수는 잎이 된다."""
        self.creator = None

    def unchain_backward(self):
        """이 변수에서 거슬러 올라가며 모든 연결을 끊는다 (Truncated BPTT)."""
        if self.creator is not None:
            funcs = [self.creator]
            while funcs:
                f = funcs.pop()
                for x in f.inputs:
                    if x.creator is not None:
                        funcs.append(x.creator)
                        x.unchain()
#@ end

    def cleargrad(self):
        self.grad = None

    def backward(self, retain_grad=False, create_graph=False):
        """역전파. create_graph=True이면 backward의 계산도 그래프로 남긴다
        (고차 미분)."""
        if self.grad is None:
#@ step 30-51
            xp = np  # 배열 모듈 (52단계에서 cupy도 고르게 된다)
#@ end
#@ step 52
            xp = mydezero.cuda.get_array_module(self.data)
#@ end
            self.grad = Variable(xp.ones_like(self.data))

        funcs = []
        seen_set = set()

        def add_func(f):
            if f not in seen_set:
                funcs.append(f)
                seen_set.add(f)
                funcs.sort(key=lambda x: x.generation)

        add_func(self.creator)
        while funcs:
            f = funcs.pop()
            gys = [output().grad for output in f.outputs]

            with using_config('enable_backprop', create_graph):
                gxs = f.backward(*gys)
                if not isinstance(gxs, tuple):
                    gxs = (gxs,)

                for x, gx in zip(f.inputs, gxs):
                    if x.grad is None:
                        x.grad = gx
                    else:
                        # 이 덧셈도 create_graph이면 기록된다
                        x.grad = x.grad + gx

                    if x.creator is not None:
                        add_func(x.creator)

            if not retain_grad:
                for y in f.outputs:
                    y().grad = None
#@ step 44


class Parameter(Variable):
    """학습할 매개변수. Variable과 같지만 Layer가 이 타입을 보고 모은다."""
    pass
#@ end


def as_variable(obj):
    if isinstance(obj, Variable):
        return obj
    return Variable(obj)


#@ step 30-51
def as_array(x):
    if np.isscalar(x):
        return np.array(x)
    return x
#@ end
#@ step 52
def as_array(x, array_module=np):
    """스칼라를 array_module(numpy 또는 cupy)의 0차원 배열로."""
    if np.isscalar(x):
        return array_module.array(x)
    return x
#@ end


class Function:
    def __call__(self, *inputs):
        inputs = [as_variable(x) for x in inputs]

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
            self.outputs = [weakref.ref(output) for output in outputs]

        return outputs if len(outputs) > 1 else outputs[0]

    def forward(self, *xs):
        raise NotImplementedError()

    def backward(self, *gys):
        raise NotImplementedError()


# =============================================================================
# 사칙연산: backward도 Variable 연산이다
# =============================================================================
class Add(Function):
    def forward(self, x0, x1):
#@ step 40
        self.x0_shape, self.x1_shape = x0.shape, x1.shape
#@ end
        y = x0 + x1
        return y

    def backward(self, gy):
        gx0, gx1 = gy, gy
#@ step 40
        # 순전파에서 브로드캐스트가 일어났다
        if self.x0_shape != self.x1_shape:
            gx0 = mydezero.functions.sum_to(gx0, self.x0_shape)
            gx1 = mydezero.functions.sum_to(gx1, self.x1_shape)
#@ end
        return gx0, gx1


class Mul(Function):
    def forward(self, x0, x1):
        y = x0 * x1
        return y

    def backward(self, gy):
        x0, x1 = self.inputs
        gx0 = gy * x1
        gx1 = gy * x0
#@ step 40
        if x0.shape != x1.shape:
            gx0 = mydezero.functions.sum_to(gx0, x0.shape)
            gx1 = mydezero.functions.sum_to(gx1, x1.shape)
#@ end
        return gx0, gx1


class Neg(Function):
    def forward(self, x):
        return -x

    def backward(self, gy):
        return -gy


class Sub(Function):
    def forward(self, x0, x1):
#@ step 40
        self.x0_shape, self.x1_shape = x0.shape, x1.shape
#@ end
        y = x0 - x1
        return y

    def backward(self, gy):
        gx0 = gy
        gx1 = -gy
#@ step 40
        if self.x0_shape != self.x1_shape:
            gx0 = mydezero.functions.sum_to(gx0, self.x0_shape)
            gx1 = mydezero.functions.sum_to(gx1, self.x1_shape)
#@ end
        return gx0, gx1


class Div(Function):
    def forward(self, x0, x1):
        y = x0 / x1
        return y

    def backward(self, gy):
        x0, x1 = self.inputs
        gx0 = gy / x1
        gx1 = gy * (-x0 / x1 ** 2)
#@ step 40
        if x0.shape != x1.shape:
            gx0 = mydezero.functions.sum_to(gx0, x0.shape)
            gx1 = mydezero.functions.sum_to(gx1, x1.shape)
#@ end
        return gx0, gx1


class Pow(Function):
    def __init__(self, c):
        self.c = c

    def forward(self, x):
        y = x ** self.c
        return y

    def backward(self, gy):
        x, = self.inputs
        c = self.c
        gx = c * x ** (c - 1) * gy
        return gx


#@ step 30-51
def add(x0, x1):
    x1 = as_array(x1)
    return Add()(x0, x1)


def mul(x0, x1):
    x1 = as_array(x1)
    return Mul()(x0, x1)


def sub(x0, x1):
    x1 = as_array(x1)
    return Sub()(x0, x1)


def rsub(x0, x1):
    x1 = as_array(x1)
    return Sub()(x1, x0)


def div(x0, x1):
    x1 = as_array(x1)
    return Div()(x0, x1)


def rdiv(x0, x1):
    x1 = as_array(x1)
    return Div()(x1, x0)
#@ end
#@ step 52
# 52단계: 파이썬 수를 x0과 같은 곳(numpy 또는 cupy)의 배열로 만든다
def add(x0, x1):
    x1 = as_array(x1, mydezero.cuda.get_array_module(x0.data))
    return Add()(x0, x1)


def mul(x0, x1):
    x1 = as_array(x1, mydezero.cuda.get_array_module(x0.data))
    return Mul()(x0, x1)


def sub(x0, x1):
    x1 = as_array(x1, mydezero.cuda.get_array_module(x0.data))
    return Sub()(x0, x1)


def rsub(x0, x1):
    x1 = as_array(x1, mydezero.cuda.get_array_module(x0.data))
    return Sub()(x1, x0)


def div(x0, x1):
    x1 = as_array(x1, mydezero.cuda.get_array_module(x0.data))
    return Div()(x0, x1)


def rdiv(x0, x1):
    x1 = as_array(x1, mydezero.cuda.get_array_module(x0.data))
    return Div()(x1, x0)
#@ end


def neg(x):
    return Neg()(x)


def pow(x, c):
    return Pow(c)(x)
