"""09단계: 함수를 더 편리하게

동작은 08단계와 같고 쓰기 편하게 다듬는다.

* square(x), exp(x): 매번 Square()(x)처럼 객체를 만들지 않고 함수처럼 부른다.
* y.backward()만 부르면 된다: y.grad가 비어 있으면 np.ones_like(y.data)로 채운다(dy/dy = 1).
* Variable은 np.ndarray만 받는다. 1.0 같은 파이썬 수를 넣으면 TypeError로 바로 알려 준다.
* as_array: 0차원 배열끼리 계산하면 NumPy는 배열이 아니라 np.float64 스칼라를 돌려준다.
  Function은 결과를 as_array로 다시 배열로 만든 뒤 상자에 담는다.

출력에서 볼 것
* y = square(exp(square(x))) 한 줄, y.backward() 한 줄로 x.grad = 3.297442541400256
* Variable(1.0)의 TypeError 메시지, 0차원 배열 계산 결과의 타입(np.float64)과 as_array 뒤의 타입
"""
import numpy as np


def as_array(x):
    """NumPy 스칼라(np.float64 등)나 파이썬 수를 0차원 배열로 바꾼다. 배열은
    그대로 둔다."""
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
            self.grad = np.ones_like(self.data)  # 출력 자신에 대한 미분은 1

        funcs = [self.creator]
        while funcs:
            f = funcs.pop()
            x, y = f.input, f.output
            x.grad = f.backward(y.grad)
            if x.creator is not None:
                funcs.append(x.creator)


class Function:
    def __call__(self, input):
        x = input.data
        y = self.forward(x)
        output = Variable(as_array(y))
        output.set_creator(self)
        self.input = input
        self.output = output
        return output

    def forward(self, x):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')

    def backward(self, gy):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.backward를 구현해야 합니다')


class Square(Function):
    def forward(self, x):
        return x ** 2

    def backward(self, gy):
        x = self.input.data
        return 2 * x * gy


class Exp(Function):
    def forward(self, x):
        return np.exp(x)

    def backward(self, gy):
        x = self.input.data
        return np.exp(x) * gy


def square(x):
    return Square()(x)


def exp(x):
    return Exp()(x)


if __name__ == '__main__':
    x = Variable(np.array(0.5))
    y = square(exp(square(x)))
    y.backward()
    print('y =', y.data, ' x.grad =', x.grad)

    try:
        Variable(1.0)
    except TypeError as e:
        print('TypeError:', e)

    z = np.array(1.0) ** 2
    print('np.array(1.0) ** 2 의 타입:', type(z).__name__,
          ' -> as_array 뒤:', type(as_array(z)).__name__)
    print('Variable(None)도 허용한다 (값을 나중에 넣을 때):', Variable(None).data)
