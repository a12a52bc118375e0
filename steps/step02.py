"""02단계: 변수를 만드는 함수(Function)

함수는 Variable을 받아 Variable을 돌려준다. 공통 동작(상자에서 값을 꺼내고, 계산하고,
결과를 다시 상자에 담기)은 Function.__call__에 한 번만 쓰고, 실제 계산은 하위 클래스의
forward가 맡는다. Square는 그 첫 예다.

Variable은 01단계와 같다. 이 파일만 읽어도 되도록 다시 적었다.

출력에서 볼 것
* Square()(x)의 결과도 Variable이다. 함수를 이어 붙일 수 있는 이유가 여기에 있다.
* forward를 구현하지 않은 Function을 호출하면 NotImplementedError가 난다.
"""
import numpy as np


class Variable:
    """NumPy 배열 하나를 담는 상자."""

    def __init__(self, data):
        self.data = data


class Function:
    """모든 함수의 기반 클래스. 하위 클래스는 forward만 구현하면 된다."""

    def __call__(self, input):
        x = input.data  # 상자에서 값을 꺼내
        y = self.forward(x)  # 계산하고
        output = Variable(y)  # 다시 상자에 담는다
        return output

    def forward(self, x):
        name = type(self).__name__
        raise NotImplementedError(f'{name}.forward를 구현해야 합니다')


class Square(Function):
    def forward(self, x):
        return x ** 2


if __name__ == '__main__':
    x = Variable(np.array(10))
    f = Square()
    y = f(x)
    print('y의 클래스:', type(y).__name__)
    print('y.data =', y.data)

    try:
        Function()(x)
    except NotImplementedError as e:
        print('NotImplementedError:', e)
