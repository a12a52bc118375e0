"""08단계: 재귀를 반복문으로

07단계의 재귀 backward는 그래프가 깊어지면 파이썬 호출이 그만큼 쌓여 실패한다. 해야 할 일은
"아직 처리하지 않은 함수 목록"을 들고 하나씩 꺼내 처리하는 것뿐이므로 반복문으로 충분하다.
이 튜토리얼의 프레임워크는 이 단계부터 끝까지 반복문으로 역전파한다.

바뀌는 것은 Variable.backward 하나다. Function, Square, Exp, deep_backward는 07단계와 같다.

출력에서 볼 것
* 같은 예제에서 x.grad = 3.297442541400256 (07단계와 같다)
* 07단계에서 실패한 깊이 1020 그래프도 통과한다: x.grad = 2**1020
"""
import numpy as np


class Variable:
    def __init__(self, data):
        self.data = data
        self.grad = None
        self.creator = None

    def set_creator(self, func):
        self.creator = func

    def backward(self):
        funcs = [self.creator]  # 처리할 함수 목록
        while funcs:
            f = funcs.pop()
            x, y = f.input, f.output
            x.grad = f.backward(y.grad)
            if x.creator is not None:
                funcs.append(x.creator)  # 재귀 호출 대신 목록에 넣어 둔다


class Function:
    def __call__(self, input):
        x = input.data
        y = self.forward(x)
        output = Variable(y)
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


def deep_backward(Variable, depth):
    """x=1에 Square를 depth번 이은 그래프를 역전파해 x.grad(= 2**depth)를
    돌려준다. Variable: 입력 x를 만들 클래스."""
    x = Variable(np.array(1.0))
    y = x
    for _ in range(depth):
        y = Square()(y)
    y.grad = np.array(1.0)
    y.backward()
    return x.grad


if __name__ == '__main__':
    A, B, C = Square(), Exp(), Square()
    x = Variable(np.array(0.5))
    y = C(B(A(x)))
    y.grad = np.array(1.0)
    y.backward()
    print('x=0.5: x.grad =', x.grad)
    print('y의 클래스가 이 단계의 Variable인가:', type(y) is Variable)

    print('깊이 1020: x.grad =', deep_backward(Variable, 1020),
          ' 2**1020 =', float(2 ** 1020))
