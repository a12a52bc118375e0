"""03단계: 함수 연결

Function의 출력은 Variable이므로 그대로 다음 함수의 입력이 된다. 여기서는 Exp(y=e^x)를
추가하고 Square -> Exp -> Square를 이어 y = (e^(x^2))^2 를 만든다. 작은 함수를 여러 개
이어 붙여 복잡한 함수를 만드는 것, 이것이 계산 그래프의 출발점이다.

Variable, Function, Square는 02단계와 같다. 새로 쓰는 것은 Exp와 square_exp_square다.

출력에서 볼 것
* x=0.5일 때 중간값 a=x^2, b=e^a와 최종값 y.
* x=2이면 y=(e^4)^2=e^8 이다. 직접 계산한 np.exp(8.0)과 같다.
"""
import numpy as np


class Variable:
    """NumPy 배열 하나를 담는 상자."""

    def __init__(self, data):
        self.data = data


class Function:
    """모든 함수의 기반 클래스. 하위 클래스는 forward만 구현하면 된다."""

    def __call__(self, input):
        x = input.data
        y = self.forward(x)
        output = Variable(y)
        return output

    def forward(self, x):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')


class Square(Function):
    def forward(self, x):
        return x ** 2


class Exp(Function):
    def forward(self, x):
        return np.exp(x)


def square_exp_square(x):
    """Square -> Exp -> Square 를 이은 합성 함수. 04~06단계에서 계속 쓴다."""
    A, B, C = Square(), Exp(), Square()
    return C(B(A(x)))


if __name__ == '__main__':
    A = Square()
    B = Exp()
    C = Square()

    x = Variable(np.array(0.5))
    a = A(x)
    b = B(a)
    y = C(b)
    print('x=0.5: a=x^2 =', a.data, ' b=e^a =', b.data, ' y=b^2 =', y.data)

    y2 = square_exp_square(Variable(np.array(2.0)))
    print('x=2.0: y =', y2.data, ' np.exp(8.0) =', np.exp(8.0))
