"""06단계: 수동 역전파

05단계의 곱셈을 프레임워크에 옮긴다. 바뀌는 것은 세 가지다.

* Variable에 미분값을 담을 grad 칸이 생긴다.
* Function은 __call__ 때 입력을 기억한다. 국소 미분을 계산할 때 순전파 입력값이 필요하기 때문이다.
* Square, Exp에 backward(gy)가 생긴다. gy는 출력 쪽에서 넘어온 미분, 돌려주는 값은 입력 쪽 미분이다.

아직 backward를 부르는 순서는 사람이 정한다(C -> B -> A). 07단계에서 이것을 자동으로 만든다.

출력에서 볼 것
* x=0.5: 손으로 C, B, A의 backward를 차례로 불러 얻은 x.grad = 3.297442541400256
  와 수치 미분의 차이(1e-7 정도)
* x=2: x.grad = 23847.663896333823
"""
import numpy as np

import step01
import step02
import step03
from step03 import square_exp_square
from step04 import numerical_diff


class Variable(step01.Variable):
    def __init__(self, data):
        super().__init__(data)
        self.grad = None  # 역전파를 하기 전에는 아직 모른다


class Function(step02.Function):
    def __call__(self, input):
        self.input = input  # backward에서 국소 미분을 계산하려고 기억해 둔다
        return super().__call__(input)

    def backward(self, gy):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.backward를 구현해야 합니다')


# 순전파 계산식(forward)은 02/03단계의 것을 그대로 물려받고, 입력을 기억하는 이
# 단계의 Function을 앞에 둔다. 새로 쓰는 것은 backward뿐이다.
class Square(Function, step02.Square):
    def backward(self, gy):
        x = self.input.data
        return 2 * x * gy


class Exp(Function, step03.Exp):
    def backward(self, gy):
        x = self.input.data
        return np.exp(x) * gy


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
