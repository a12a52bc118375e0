"""13단계: 가변 길이 인수 (역전파)

입력이 여러 개인 함수의 역전파: 출력 쪽 미분 gys를 받아 입력 수만큼의 미분 gxs를 돌려준다.

* Add:  y = x0 + x1  ->  gx0 = gy,      gx1 = gy
* Mul:  y = x0 * x1  ->  gx0 = gy * x1, gx1 = gy * x0   (상대 입력의 값이 필요하다)
* Square, Exp: 입력은 이제 self.inputs[0]

Variable.backward는 다입력/다출력에 맞게 다시 쓰면서 세 조각으로 나눈다. 뒤 단계에서 바뀌는
곳이 이 조각들 가운데 하나로 모이므로, 단계를 넘길 때 무엇이 바뀌었는지 찾기 쉽다.

* _creators():          역전파할 함수를 하나씩 내주는 생성기 (순서는 16단계에서 고친다)
* _backprop_through(f): 함수 f 하나를 거꾸로 지나며 입력들에 미분을 전달한다
* receive_grad(gx):     변수가 미분을 받는다 (지금은 덮어쓰기. 14단계에서 고친다)

as_array와 Function.__call__, Function.link는 12단계와 같다.

출력에서 볼 것
* z = x^2 + y^2 (x=2, y=3): z=13, dz/dx=4, dz/dy=6
* w = x * y: dw/dx=3(=y), dw/dy=2(=x)
* 출력이 둘인 SumDiff로 만든 (x+y)*(x-y) = x^2-y^2: 미분 4, -6
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
        self.grad = gx


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


class SumDiff(Function):
    """출력이 둘인 함수: (a+b, a-b). 역전파는 출력 쪽 미분 두 개를 받는다."""

    def forward(self, a, b):
        return a + b, a - b

    def backward(self, g_sum, g_diff):
        return g_sum + g_diff, g_sum - g_diff


if __name__ == '__main__':
    x = Variable(np.array(2.0))
    y = Variable(np.array(3.0))
    z = add(square(x), square(y))
    z.backward()
    print('z = x^2 + y^2 =', z.data, ' dz/dx =', x.grad, ' dz/dy =', y.grad)

    x = Variable(np.array(2.0))
    y = Variable(np.array(3.0))
    w = mul(x, y)
    w.backward()
    print('w = x * y =', w.data, ' dw/dx =', x.grad, ' dw/dy =', y.grad)

    x = Variable(np.array(2.0))
    y = Variable(np.array(3.0))
    s, d = SumDiff()(x, y)
    v = mul(s, d)
    v.backward()
    print('v = (x+y)*(x-y) =', v.data, ' dv/dx =', x.grad, ' dv/dy =', y.grad)
