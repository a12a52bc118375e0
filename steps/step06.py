"""06단계: 수동 역전파

05단계의 곱셈을 프레임워크에 옮긴다. 바뀌는 것은 세 가지다.

* Variable에 기울기를 담을 grad 칸이 생긴다.
* Function은 __call__ 때 입력을 기억한다. 국소 미분을 계산할 때 순전파 입력값이 필요하기 때문이다.
* Square, Exp에 backward(gy)가 생긴다. gy는 출력 쪽에서 넘어온 미분, 돌려주는 값은 입력 쪽 미분이다.

아직 backward를 부르는 순서는 사람이 정한다(C -> B -> A). 07단계에서 이것을 자동으로 만든다.
square_exp_square와 numerical_diff는 04단계와 같다.

출력에서 볼 것
* x=0.5: 손으로 C, B, A의 backward를 차례로 불러 얻은 x.grad = 3.297442541400256
  와 수치 미분의 차이(1e-7 정도)
* x=2: x.grad = 23847.663896333823
"""
import numpy as np


class Variable:
    def __init__(self, data):
        self.data = data
        self.grad = None  # 역전파를 하기 전에는 아직 모른다


class Function:
    def __call__(self, input):
        x = input.data
        y = self.forward(x)
        output = Variable(y)
        self.input = input  # backward에서 국소 미분을 계산하려고 기억해 둔다
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


def square_exp_square(x):
    """Square -> Exp -> Square 를 이은 합성 함수."""
    A, B, C = Square(), Exp(), Square()
    return C(B(A(x)))


def numerical_diff(f, x, eps=1e-4):
    """중앙 차분으로 f'(x)를 근사한다(04단계)."""
    x0 = Variable(np.asarray(x.data - eps))
    x1 = Variable(np.asarray(x.data + eps))
    y0 = f(x0)
    y1 = f(x1)
    return (y1.data - y0.data) / (2 * eps)


def manual_backprop(x_value):
    A, B, C = Square(), Exp(), Square()
    x = Variable(np.array(x_value))
    a = A(x)
    b = B(a)
    y = C(b)
    # 출력에서 거꾸로: 각 함수의 backward를 사람이 순서대로 부른다
    y.grad = np.array(1.0)
    b.grad = C.backward(y.grad)
    a.grad = B.backward(b.grad)
    x.grad = A.backward(a.grad)
    return x, y


if __name__ == '__main__':
    x, y = manual_backprop(0.5)
    num = numerical_diff(square_exp_square, x)
    print('x=0.5: y =', y.data)
    print('  역전파 x.grad =', x.grad)
    print('  수치 미분     =', num)
    print('  차이          =', abs(x.grad - num))

    x, y = manual_backprop(2.0)
    print('x=2.0: y =', y.data, ' 역전파 x.grad =', x.grad)
