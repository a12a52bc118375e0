"""18단계: 메모리 절약 모드

메모리를 아끼는 두 가지 방법을 넣는다.

1. 중간 변수의 미분 버리기 (retain_grad)
   보통 필요한 것은 잎 변수(사용자가 만든 입력, 나중의 매개변수)의 미분뿐이다. 세대순 역전파에서는
   함수 f를 처리하고 나면 f의 출력 미분은 다시 쓰이지 않으므로 그 자리에서 None으로 지운다.
   중간 미분까지 보고 싶으면 backward(retain_grad=True).

2. 역전파를 안 할 때는 그래프를 만들지 않기 (Config, using_config, no_grad)
   추론이나 평가처럼 미분이 필요 없을 때는 Function이 입력을 기억하거나 creator를 이을 필요가 없다.
   Config.enable_backprop이 False이면 Function.link가 아무것도 하지 않는다.
   using_config(name, value)는 with 블록 동안만 설정을 바꾸고, 블록 안에서 예외가 나도 finally에서
   원래 값을 되돌린다. no_grad()는 using_config('enable_backprop', False)의 줄임이다.

나머지는 17단계와 같다.

출력에서 볼 것
* 기본 backward 뒤 중간 변수 t, y의 grad는 None, 잎 x0, x1의 grad는 2.0, 1.0
* retain_grad=True이면 중간 미분(1.0)이 남는다.
* no_grad 안에서 만든 변수는 creator가 없다. with 블록 안에서 예외가 나도 설정이 True로 돌아온다.
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


def small_graph():
    x0 = Variable(np.array(1.0))
    x1 = Variable(np.array(1.0))
    t = add(x0, x1)
    y = add(x0, t)
    return x0, x1, t, y


if __name__ == '__main__':
    x0, x1, t, y = small_graph()
    y.backward()
    print('기본(retain_grad=False): y.grad =', y.grad, ' t.grad =', t.grad)
    print('                         x0.grad =', x0.grad, ' x1.grad =', x1.grad)
    x0, x1, t, y = small_graph()
    y.backward(retain_grad=True)
    print('retain_grad=True:        y.grad =', y.grad, ' t.grad =', t.grad)
    print('                         x0.grad =', x0.grad, ' x1.grad =', x1.grad)

    x = Variable(np.ones((100, 100)))
    with no_grad():
        y = square(square(x))
        print('\nno_grad 안: y.creator is None:', y.creator is None,
              ' Config.enable_backprop =', Config.enable_backprop)
    y = square(square(x))
    print('no_grad 밖: y.creator is None:', y.creator is None,
          ' Config.enable_backprop =', Config.enable_backprop)

    try:
        with no_grad():
            raise ValueError('블록 안에서 난 오류')
    except ValueError as e:
        print(f'예외({e}) 뒤 Config.enable_backprop =', Config.enable_backprop)
