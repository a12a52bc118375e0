"""14단계: 같은 변수를 반복해서 사용

y = x + x 의 dy/dx는 2다. 그런데 13단계의 receive_grad는 미분을 덮어쓰므로 두 경로 중 한쪽의
기여만 남아 1이 나온다. 같은 변수가 여러 곳에서 쓰이면 각 경로에서 온 미분을 더해야 한다
(다변수 연쇄 법칙). 바뀌는 것은 두 가지다.

* receive_grad: 처음이면 그대로 넣고, 이미 있으면 더한다.
  x.grad += gx 처럼 제자리(in-place) 덧셈을 쓰지 않는 이유: Add.backward는 받은 gy 배열을
  두 입력에 그대로 넘기므로, 제자리로 더하면 출력 y.grad 배열까지 함께 바뀐다(아래 출력 참고).
* cleargrad(): 미분이 누적되므로, 같은 변수로 다른 계산을 다시 미분하기 전에 비워야 한다.

나머지(as_array, Function, Square, Exp, Add, Mul)는 13단계와 같다.

출력에서 볼 것
* 13단계 방식은 x + x 의 미분을 1로, 이 단계는 2로 계산한다. x + x + x 는 3.
* cleargrad 없이 두 번째 계산을 미분하면 이전 미분(2)이 남아 더해진다.
* 제자리 덧셈으로 구현하면 y.grad가 1에서 2로 오염된다.
"""
import numpy as np


def as_array(x):
    """NumPy 스칼라(np.float64 등)나 파이썬 수를 0차원 배열로 바꾼다."""
    if np.isscalar(x):
        return np.array(x)
    return x


class Variable:
    def __init__(self, data):
        if data is not None and not isinstance(data, np.ndarray):
            name = type(data).__name__
            raise TypeError(f'{name}은(는) 지원하지 않습니다. '
                            'np.ndarray를 넣으세요.')
        self.data = data
        self.grad = None
        self.creator = None

    def set_creator(self, func):
        self.creator = func

    def backward(self):
        if self.grad is None:
            self.grad = np.ones_like(self.data)
        for f in self._creators():
            self._backprop_through(f)

    def _creators(self):
        """이 변수에 이르는 함수들을 하나씩 내준다. 아직 순서를 따지지 않는다.
        """
        funcs = [] if self.creator is None else [self.creator]
        while funcs:
            f = funcs.pop()
            yield f
            funcs.extend(x.creator for x in f.inputs if x.creator is not None)

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


class OverwritingVariable(Variable):
    """비교용: 13단계처럼 미분을 덮어쓰는 변수."""

    def receive_grad(self, gx):
        self.grad = gx


class _InPlaceVariable(Variable):
    """비교용: 제자리 덧셈으로 누적하면 어떻게 되는지 보여 주는 잘못된 구현."""

    def receive_grad(self, gx):
        if self.grad is None:
            self.grad = gx
        else:
            self.grad += gx


if __name__ == '__main__':
    for cls, label in [(OverwritingVariable, '13단계(덮어쓰기)'),
                       (Variable, '14단계(누적)')]:
        x = cls(np.array(3.0))
        y = add(x, x)
        y.backward()
        print(f'{label}: y = x + x = {y.data}, dy/dx = {x.grad}')

    x = Variable(np.array(3.0))
    y = add(add(x, x), x)
    y.backward()
    print('y = x + x + x: dy/dx =', x.grad)

    x = Variable(np.array(3.0))
    add(x, x).backward()
    print('\n첫 번째 계산 x + x 뒤 x.grad =', x.grad)
    add(add(x, x), x).backward()
    print('cleargrad 없이 x + x + x 를 미분하면 x.grad =', x.grad, '(2가 남아 있다)')
    x.cleargrad()
    add(add(x, x), x).backward()
    print('cleargrad 뒤 다시 미분하면 x.grad =', x.grad)

    for cls, label in [(Variable, '새 배열 덧셈'), (_InPlaceVariable, '제자리 덧셈')]:
        x = cls(np.array(3.0))
        y = add(x, x)
        y.backward()
        print(f'{label}: dy/dx = {x.grad}, y.grad = {y.grad}')
